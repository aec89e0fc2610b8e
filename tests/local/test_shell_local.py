"""Issue 42: `reclaunch exec` and `reclaunch port-forward` on cloud: local, for real: a command
runs in the rank's own environment, its exit code comes back; a port rank 0 listens on is
reachable, forwarded to another local port; a rank that does not listen is named."""

from __future__ import annotations

import socket
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from waiting import wait_for  # noqa: E402

JOB = ("import http.server, os, threading, time\n"
       "if os.environ['RANK'] == '0':\n"
       "    class H(http.server.BaseHTTPRequestHandler):\n"
       "        def do_GET(self):\n"
       "            self.send_response(200); self.end_headers(); self.wfile.write(b'dashboard of rank 0')\n"
       "        def log_message(self, *a): pass\n"
       "    srv = http.server.HTTPServer(('127.0.0.1', int(os.environ['DASH_PORT'])), H)\n"
       "    threading.Thread(target=srv.serve_forever, daemon=True).start()\n"
       "print('ready', flush=True)\n"
       "time.sleep(90)\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(240)
def test_exec_and_port_forward_on_a_running_local_job(home, provider, helpers, tmp_path):
    from reclaunch.errors import UsageError
    from reclaunch.providers.local import shell

    port = _free_port()
    spec = helpers.make_spec("shell", command=["python", "-c", JOB], args=[], nodes=2,
                             min_nodes=2, max_nodes=2, env={"DASH_PORT": str(port)})
    from reclaunch.providers.options import UpOptions
    st = provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
    assert st.state in ("Created", "Running"), st.message
    try:
        wait_for(lambda: sum("ready" in ln for ln in provider.logs("shell")) >= 2, 120, "both ranks")
        out = tmp_path / "seen.txt"
        probe = ("import os, sys; open(sys.argv[1], 'w').write(' '.join([os.environ['RANK'], "
                 "os.environ['WORLD_SIZE'], os.environ['DASH_PORT'], os.getcwd()])); sys.exit(7)")
        for rank in (0, 1):
            code = provider.exec("shell", [sys.executable, "-c", probe, str(out)], rank=rank)
            assert code == 7                                     # the command's own exit code
            assert out.read_text() == f"{rank} 2 {port} {helpers.REPO}"
        with pytest.raises(UsageError, match="rank 5 is out of range: the job's ranks are 0..1"):
            provider.exec("shell", ["true"], rank=5)
        # port-forward: the same port is reachable already; another one is relayed
        said = provider.port_forward("shell", port)
        assert f"listens on 127.0.0.1:{port} on this machine already" in said
        bound, stop = [], threading.Event()
        t = threading.Thread(target=provider.port_forward, args=("shell", port),
                             kwargs={"local_port": 0, "ready": bound.append, "stop": stop,
                                     "connections": 1}, daemon=True)
        t.start()
        wait_for(lambda: bound, 30, "the local listener")
        with urllib.request.urlopen(f"http://127.0.0.1:{bound[0]}/", timeout=20) as resp:
            assert resp.read() == b"dashboard of rank 0"
        t.join(timeout=30)
        assert not t.is_alive()
        with pytest.raises(UsageError, match=f"rank 1 does not listen on port {port}"):
            shell.forward("shell", port, rank=1)
    finally:
        provider.down("shell", yes=True)
    with pytest.raises(UsageError, match="not running"):
        provider.exec("shell", ["true"])
