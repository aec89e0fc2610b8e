"""`reclaunch status NAME` for cloud: local, from what the supervisor left in DIR.

Every file here was written by us, but may since have been damaged (a hand edit, a full
disk, a crash, a hostile job): each is read bounded and validated (proc.read_json_why,
proc.state_problem), and a bad one makes *this* cluster say which file and why, never
raises into `status` of the others.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from reclaunch.errors import ProviderError
from reclaunch.providers.local import proc as lp
from reclaunch.runtime.states import JobStatus

_LAUNCH_INTS = ("nodes", "min_nodes", "max_nodes", "nproc")


def unreadable(name: str, root: Path, path: Path, why: str) -> JobStatus:
    return JobStatus(name=name, cloud="local", state="Unknown",
                     message=f"unreadable state ({path}): {why}",
                     details={"root": str(root), "unreadable": str(path)})


def launch_world(root: Path) -> int:
    """Ranks the run can have (max_nodes x nproc), from a validated launch.json."""
    path = root / "launch.json"
    launch, why = lp.read_json_why(path)
    if launch is None:
        raise ProviderError(f"{path} is damaged: {why or 'missing'}")
    vals = {}
    for key in ("max_nodes", "nodes", "nproc"):
        v = launch.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100_000:
            raise ProviderError(f"{path} is damaged: {key} is {str(v)[:40]!r}, not a count")
        vals[key] = v
    return max(vals["max_nodes"], vals["nodes"]) * vals["nproc"]


# Node states whose process the supervisor was keeping (supervisor.py); after it dies they
# say only what was true when it last wrote state.json.
_LIVE = ("running", "reclaiming", "replacing")


def _still_ours(name: str, state: dict, pid: int) -> bool:
    """The node's process is alive and still the one the supervisor started: by the identity
    it recorded (pid + start time), else by the run's marker in its environment."""
    from reclaunch.providers.local import ident

    procs = state.get("procs") if isinstance(state.get("procs"), dict) else {}
    who = procs.get(str(pid))
    if isinstance(who, str):
        return ident.alive_as(pid, who)
    return 0 < pid < 2**22 and lp.pid_alive(pid) and ident.environ_has(
        pid, f"{lp.MARKER}={lp.run_marker(name, str(state.get('run_id')))}")


def _num(v: Any) -> float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def status(name: str) -> JobStatus | None:
    """The cluster's JobStatus, or None when DIR holds neither state.json nor launch.json."""
    root = lp.cluster_dir(name)
    path = root / "state.json"
    state, why = lp.read_json_why(path)
    if state is None and why is None:   # no state.json
        launch, lwhy = lp.read_json_why(root / "launch.json")
        if launch is None and lwhy is None:
            return None
        if launch is not None and lp.run_pids(name, str(launch.get("run_id") or "")[:40] or None):
            return JobStatus(name=name, cloud="local", state="Created",
                             message="the local supervisor is starting",
                             details={"root": str(root), "supervisor_alive": True})
        # `up` wrote launch.json, the supervisor never wrote its state (killed at start, a
        # full disk): the cluster exists, and says so instead of "no cluster named NAME".
        return JobStatus(name=name, cloud="local", state="Failed",
                         message="the local supervisor never wrote its state (killed at start, "
                                 f"or a full disk); see {root / 'supervisor.log'}",
                         details={"root": str(root), "supervisor_alive": False})
    why = why or lp.state_problem(state)
    if why:   # one damaged file: this cluster says so, `status` of the others goes on
        return unreadable(name, root, path, why)
    job_state = state["state"]
    alive = lp.supervisor_alive(state)
    if job_state not in lp.TERMINAL and not alive:
        job_state, state["message"] = "Failed", "the local supervisor died; see supervisor.log"
        if disk := _disk_note(root):
            state["message"] += f"; {disk}"
    failure = state.get("failure") or {}
    message = state.get("message", "")
    lines = failure.get("last_lines")
    if job_state == "Failed" and isinstance(lines, list):
        message += "\n" + "\n".join(f"  {str(ln)[:lp.MAX_PARSED]}" for ln in lines[-15:])
    launch = lp.read_json(root / "launch.json") or {}
    spot = launch.get("spot") is True
    nodes, pods, orphans = [], [], []
    for n in state.get("nodes", []):
        inc = n.get("incarnation", 0)
        phase, pid = n["state"][:40].capitalize(), _num(n.get("pid"))
        if not alive and n["state"] in _LIVE:   # nobody kept this up to date: look at the process
            if pid is not None and _still_ours(name, state, int(pid)):
                orphans.append(int(pid))
            else:
                phase, pid = "Failed", None
        nodes.append({"name": f"{name}-node-{n['index']}", "capacity_type": "spot" if spot else "on-demand",
                      "ready": n["state"] == "running" and alive})
        pods.append({"name": f"{name}-node-{n['index']}", "rank": n["index"], "phase": phase,
                     "restarts": inc if isinstance(inc, int) else 0, "pid": pid,
                     "exit_code": _num(n.get("exit_code"))})
    if orphans:
        message += (f"; {len(orphans)} of its node processes still run without it (pids "
                    f"{', '.join(map(str, orphans))}): `reclaunch down {name}` stops them")
    started = state.get("started_at")
    end = state.get("finished_at") or time.time()
    elapsed = (end - started) if started else None
    return JobStatus(
        name=name, cloud="local", state=job_state, message=message.strip(), nodes=nodes, pods=pods,
        started_at=started, elapsed_seconds=elapsed if elapsed is None or elapsed >= 0 else None,
        spend_usd=0.0,
        details={"root": str(root), "port": state.get("port"), "progress": state.get("progress") or {},
                 "failure": failure, "preemptions": state.get("preemptions", []),
                 "supervisor_alive": alive, "torn_down": state.get("torn_down") is True,
                 "result": lp.read_json(root / "result.json")})


def _disk_note(root: Path) -> str | None:
    """What supervisor.log says about a full disk, in one line, if it says so."""
    from reclaunch.home import DamagedState, read_state_file

    try:
        data = read_state_file(root / "supervisor.log", 2**20) or b""
    except DamagedState:
        return None
    for line in reversed(data.decode("utf-8", "replace").splitlines()):
        if "no space left on" in line:
            return line.strip()[:300]
    return None
