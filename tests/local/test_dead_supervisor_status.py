"""Issue 41 item 13: after `kill -9` of the supervisor, `status` says what each node's process
really is: a dead one is no longer "Running" with a dead pid; one still alive is named, with
how to stop it."""

from __future__ import annotations

import json
import subprocess
import sys

from reclaunch.providers.local import ident, view
from reclaunch.providers.local import proc as lp


def test_nodes_of_a_killed_supervisor_show_what_their_processes_are(home):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_id = ident.identity(dead.pid)
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        root = lp.cluster_dir("killed")
        root.mkdir(parents=True)
        state = {"name": "killed", "run_id": "r1", "state": "Running", "message": "",
                 "supervisor_pid": dead.pid, "supervisor_id": dead_id or "x:1",
                 "started_at": 1.0e9, "port": 29500,
                 "procs": {str(dead.pid): dead_id or "x:1", str(alive.pid): ident.identity(alive.pid)},
                 "nodes": [{"index": 0, "state": "running", "pid": dead.pid, "incarnation": 0},
                           {"index": 1, "state": "running", "pid": alive.pid, "incarnation": 0}]}
        (root / "state.json").write_text(json.dumps(state))
        st = view.status("killed")
        assert st.state == "Failed" and "supervisor died" in st.message
        pods = {p["rank"]: p for p in st.pods}
        assert pods[0]["phase"] == "Failed" and pods[0]["pid"] is None
        assert pods[1]["phase"] == "Running" and pods[1]["pid"] == alive.pid
        assert f"pids {alive.pid}" in st.message and "reclaunch down killed" in st.message
        assert not any(n["ready"] for n in st.nodes)
    finally:
        alive.kill()
        alive.wait()
