"""The detached process behind a `cloud: local` cluster: `python -m reclaunch.providers.local.supervisor DIR`.

It plays the cloud's part: hosts the c10d rendezvous store (so any node, rank 0's included,
can be reclaimed without taking the rendezvous down), starts one torchrun agent per simulated
node, carries out spot-reclaim drills (notice, grace, kill, replacement after a delay), keeps
state.json current, and applies the teardown policy when the job ends. Everything it needs is
in DIR/launch.json, written by `LocalProvider.up`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from reclaunch.providers.local import ident, measure, proc as lp, repeat
from reclaunch.providers.local.disk import (become_subreaper as _become_subreaper, no_space,
                                            recorded_procs, say as _say, tighten)

TICK = 0.2


class Supervisor:
    def __init__(self, root: Path):
        self.root = root
        self.launch: dict[str, Any] = lp.read_json(root / "launch.json") or {}
        self.name = self.launch["name"]
        self.run_id = self.launch["run_id"]
        self.stopping = False
        self.procs: dict[int, subprocess.Popen] = {}   # pid -> agent (kept so Popen never reaps)
        self.agent_node: dict[int, int] = {}          # pid -> node index
        self.nodes: list[dict[str, Any]] = []
        self.preemptions: list[dict[str, Any]] = []
        self.tail = lp.Tail()
        self.node_lines: dict[int, list[str]] = {}
        self.progress: dict[str, Any] = {"step": 0, "loss": None, "samples_per_s": None,
                                         "steps": None, "losses": [], "checkpoints": [],
                                         "resumed_from": [], "sigterms": [], "done": None}
        self.state = "Created"
        self.message = ""
        self.failure: dict[str, Any] | None = None
        self.pending_failure: float | None = None
        self.started_at = time.time()
        self.finished_at: float | None = None
        self.restarting_since: float | None = None
        self.repeat = repeat.RepeatWatch.of(self.launch)   # a failure twice, or on every rank: stop
        self.store = None
        self.port: int | None = None
        self._last_write = 0.0
        self.disk_full: str | None = None
        self._procs: dict[str, str] = {}   # state.json["procs"]: what `down` stops by identity
        self._procs_at = -1e9
        from reclaunch.providers.local.ident import identity
        self.ident = identity(os.getpid())   # pid + start time: what `down` checks before a signal
        # The CLI started us with this run's marker (proc.run_marker): our processes carry it.
        self.marker = os.environ.get(lp.MARKER) or lp.run_marker(self.name, self.run_id)

    # ------------------------------------------------------------ setup
    def open_store(self) -> None:
        from datetime import timedelta

        from torch.distributed import TCPStore

        want = int(self.launch.get("port") or 0)
        for port in ([want] if want else []) + [0]:
            try:
                self.store = TCPStore("127.0.0.1", port, is_master=True, multi_tenant=True,
                                      wait_for_workers=False, timeout=timedelta(seconds=60))
                self.port = self.store.port
                if want and port == 0:
                    self.message = f"port {want} is in use; rendezvous on port {self.port} instead"
                return
            except Exception as exc:  # port taken (race or user's choice): take any free one
                last = exc
        raise RuntimeError(f"cannot open the rendezvous store on 127.0.0.1: {last}")

    def agent_cmd(self, node: int) -> list[str]:
        L = self.launch
        conf = ",".join(f"{k}={v}" for k, v in {
            "is_host": 0, "join_timeout": L["join_timeout"], "last_call_timeout": L["last_call_timeout"],
            "close_timeout": 10, "keep_alive_interval": 1, "keep_alive_max_attempt": 5}.items())
        return [sys.executable, "-m", "torch.distributed.run",
                f"--nnodes={L['min_nodes']}:{L['max_nodes']}", f"--nproc-per-node={L['nproc']}",
                "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{self.port}",
                f"--rdzv-id={self.name}", f"--rdzv-conf={conf}", f"--max-restarts={L['max_restarts']}",
                "--local-addr=127.0.0.1", "--monitor-interval=0.5",
                f"--log-dir={self.root / 'nodes' / f'node-{node}' / 'torchelastic'}", "--tee=3",
                *L["entry"]]

    def start_node(self, node: int) -> None:
        info = self.nodes[node]
        info["incarnation"] = info.get("incarnation", -1) + 1
        env = dict(os.environ)
        env.update(self.launch["env"])
        env[lp.MARKER] = self.marker
        env[lp.NODE_MARKER] = f"{self.name}:{self.run_id}:{node}:{info['incarnation']}"
        env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = lp.RANK_PREFIX
        # torch caches the bootstrap store address per agent across rounds, so a replacement
        # node joining a later round waits forever for it; per-round addresses avoid that.
        env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
        log_path = lp.node_log(self.root, node)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a") as log:
            if info["incarnation"]:
                log.write(f"--- reclaunch: node {node} replaced (incarnation {info['incarnation']}) ---\n")
                log.flush()
            proc = subprocess.Popen(self.agent_cmd(node), cwd=self.launch["cwd"], env=env,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs[proc.pid] = proc
        self.agent_node[proc.pid] = node
        info.update(pid=proc.pid, state="running", exit_code=None, started_at=time.time())
        self.tail.add(log_path)

    # ------------------------------------------------------------ events
    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            node = self.agent_node.pop(pid, None)
            self.procs.pop(pid, None)
            if node is None:
                continue  # an orphaned worker we adopted as subreaper
            code = os.waitstatus_to_exitcode(status)
            info = self.nodes[node]
            info["exit_code"] = code
            if info["state"] in ("reclaiming", "replacing"):
                continue  # the drill killed it; the replacement comes on schedule
            info["state"] = "exited"
            if code == 0:
                if self.state not in lp.TERMINAL:
                    self.finish("Succeeded", "")
            elif not self.stopping and self.pending_failure is None and self.state not in lp.TERMINAL:
                self.pending_failure = time.monotonic()
                self.failure = {"node": node, "exit_code": code}

    def node_marker(self, node: int) -> str:
        return f"{self.name}:{self.run_id}:{node}:{self.nodes[node]['incarnation']}"

    def control(self) -> None:
        for req_path in sorted((self.root / "control").glob("preempt-*.json")):
            req = lp.read_json(req_path)
            req_path.unlink(missing_ok=True)
            try:   # written by `preempt`, but a damaged request must not stop the cluster
                node = int(req["node"])
                rec = {"id": str(req["id"])[:40], "node": node, "notice": float(req["notice"]),
                       "replace_after": float(req["replace_after"]), "requested_at": time.time()}
            except (TypeError, KeyError, ValueError, OverflowError):
                continue
            if self.state in lp.TERMINAL or not 0 <= node < len(self.nodes) or \
                    self.nodes[node]["state"] != "running":
                rec.update(status="rejected", reason=f"node {node} is not running")
            else:   # as the kubelet stops a pod (kubernetes.io/docs/concepts/workloads/pods/pod-termination):
                if (agent := self.nodes[node].get("pid")) in self.procs and lp.pid_alive(agent):
                    os.kill(agent, signal.SIGTERM)   # TERM to the node's torchrun (our child) only
                rec.update(status="noticed", step_at_notice=self.progress["step"],
                           deadline=time.monotonic() + rec["notice"])
                self.nodes[node]["state"] = "reclaiming"
                self.nodes[node]["reclaims"] = self.nodes[node].get("reclaims", 0) + 1
                self.restarting_since = time.time()
                self.repeat.reclaimed()
            self.preemptions.append(rec)
            self.write(force=True)

    def advance_drills(self) -> None:
        now = time.monotonic()
        for rec in self.preemptions:
            node = rec["node"]
            if rec["status"] == "noticed":
                alive = ident.with_identities(lp.marked_pids(lp.NODE_MARKER, self.node_marker(node)))
                if now >= rec["deadline"] or not alive:   # KILL after the grace: all the node ran
                    ident.signal_verified(alive, signal.SIGKILL)
                    rec.update(status="killed", killed_at=time.time(), graceful=not alive,
                               replace_at=now + rec["replace_after"])
                    self.nodes[node]["state"] = "replacing"
                    self.write(force=True)
            elif rec["status"] == "killed" and now >= rec["replace_at"]:
                if self.state in lp.TERMINAL:
                    rec["status"] = "cancelled"
                    continue
                if lp.marked_pids(lp.NODE_MARKER, self.node_marker(node)):
                    continue  # not all gone yet: never two incarnations of one node
                self.start_node(node)
                rec.update(status="replaced", replaced_at=time.time())
                self.write(force=True)

    def read_logs(self) -> None:
        for path, line in self.tail.read():
            self.on_line(path, line)

    def on_line(self, path: Path, line: str) -> None:
        """One log line; never raises, whatever the job printed (hostile output must not
        take the supervisor, and the rendezvous store with it, down): a rank-0 line that
        means to be progress but does not parse is skipped and counted (progress.bad_lines)."""
        try:
            node = int(path.stem.split("-")[1])
            buf = self.node_lines.setdefault(node, [])
            buf.append(line[:lp.MAX_PARSED])
            del buf[:-400]
            self.repeat.feed(node, line)
            rank, text = lp.split_rank(line)
            if rank != 0:
                return
            ev = lp.parse_line(text)
            if ev:
                self.on_event(ev)
            elif lp.looks_like_progress(text):
                self.progress["bad_lines"] = self.progress.get("bad_lines", 0) + 1
        except Exception:   # noqa: BLE001 - a bug here must cost one line, not the cluster
            self.progress["bad_lines"] = self.progress.get("bad_lines", 0) + 1

    def on_event(self, ev: dict[str, Any]) -> None:
        from reclaunch.providers.local.progress import apply
        kind = apply(self.progress, ev)
        if kind == "checkpoint":   # the trainer writes 0644: owner-only, like all our state
            tighten(self.root)
        if kind == "step" and self.restarting_since and not any(
                r["status"] in ("noticed", "killed") for r in self.preemptions):
            self.restarting_since = None

    # ------------------------------------------------------------ state
    def job_state(self) -> str:
        if self.state in lp.TERMINAL:
            return self.state
        if any(n["state"] == "running" for n in self.nodes) or any(
                r["status"] in ("noticed", "killed") for r in self.preemptions):
            return "Restarting" if self.restarting_since else "Running"
        return "Created"

    def write(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < 1.0:
            return
        self._last_write = now
        self.state = self.job_state()
        if now - self._procs_at >= 5.0:   # a /proc scan: every few seconds, not every write
            self._procs, self._procs_at = recorded_procs(), now
        self.save_state({
            "name": self.name, "run_id": self.run_id, "supervisor_pid": os.getpid(),
            "supervisor_id": self.ident, "procs": self._procs,
            "port": self.port, "state": self.state, "message": self.message,
            "failure": self.failure, "nodes": self.nodes, "preemptions": self.preemptions,
            "progress": self.progress, "started_at": self.started_at,
            "finished_at": self.finished_at, "teardown": self.launch["teardown"],
            "torn_down": False, "root": str(self.root), "updated_at": time.time(),
            **({"disk": self.disk_full} if self.disk_full else {})})

    def save_state(self, obj: dict[str, Any]) -> bool:
        """state.json, or on a full disk one line in supervisor.log (if even that fits) and
        on with the job: the cluster must not die of it, and `status` then says what."""
        import errno
        try:
            lp.write_json(self.root / "state.json", obj)
            return True
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            first = self.disk_full is None
            self.disk_full = no_space(self.root)
            if first:
                _say(f"reclaunch supervisor: {self.disk_full}; state.json not updated; "
                     f"kept: logs and checkpoints so far in {self.root}")
            return False

    def finish(self, state: str, message: str) -> None:
        self.state, self.finished_at = state, time.time()
        if message:
            self.message = message

    def check_failure(self) -> None:
        if self.pending_failure is None or self.state in lp.TERMINAL:
            return
        if time.monotonic() - self.pending_failure < 3.0:
            return  # a node that loses the race with a finishing peer is not a failure
        self.read_logs()
        node = self.failure["node"]
        lines = self.node_lines.get(node, [])
        rank = lp.failing_rank(lines)
        self.failure.update(rank=rank, last_lines=lp.last_lines(lines, rank))
        who = f"rank {rank}" if rank is not None else f"node {node}"
        self.finish("Failed", f"{who} failed (node {node} agent exit {self.failure['exit_code']})")

    def stop_nodes(self, grace: float = 10.0) -> None:
        for info in self.nodes:
            if info["state"] in ("running", "reclaiming", "replacing"):
                info["state"] = "stopped"
        # The run marker finds the agents and workers; descendants of this subreaper also find
        # what a job daemonized with a clean environment (setsid + env -i): nothing outlives us.
        from reclaunch.providers.local.ident import descendants
        for _ in range(3):
            left = lp.kill_marked(lp.MARKER, self.marker, grace,
                                  exclude=[os.getpid()], also=descendants(os.getpid()))
            self.reap()
            if not left and not descendants(os.getpid()):
                break
            grace = 1.0

    # ------------------------------------------------------------ main loop
    def run(self) -> int:
        _become_subreaper()
        os.umask(0o077)   # logs, checkpoints and whatever the job writes: owner-only, like ~/.reclaunch
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        (self.root / "control").mkdir(parents=True, exist_ok=True)
        try:
            self.open_store()
        except RuntimeError as exc:
            self.finish("Failed", str(exc))
            self.write(force=True)
            return 1
        self.nodes = [{"index": k, "state": "pending", "reclaims": 0} for k in range(self.launch["nodes"])]
        self.write(force=True)
        for k in range(self.launch["nodes"]):
            self.start_node(k)
        self.write(force=True)
        while not self.stopping and self.state not in lp.TERMINAL:
            time.sleep(TICK)
            self.reap()
            self.control()
            self.advance_drills()
            self.read_logs()
            self.check_failure()
            repeat.stop_if_repeated(self)   # the same failure twice: stop (repeat.py)
            if self.state not in lp.TERMINAL and not any(
                    n["state"] in ("running", "reclaiming", "replacing") for n in self.nodes) \
                    and self.pending_failure is None:
                self.finish("Failed", "every node exited without finishing the job")
            self.write()
        if self.stopping:
            self.finish("Stopped", "stopped by `reclaunch down`")
        # A finished job: let the other agents leave on their own, then make sure.
        deadline = time.monotonic() + (20.0 if self.state == "Succeeded" else 3.0)
        while time.monotonic() < deadline and any(lp.pid_alive(p) for p in list(self.procs)):
            time.sleep(TICK)
            self.reap()
        self.read_logs()
        self.stop_nodes()
        measure.record(self.root, self.launch, self.name,   # for the next `plan`
                       reclaims=sum(1 for r in self.preemptions if r.get("status") != "rejected"))
        tighten(self.root)   # checkpoints and result.json written since: 0600 / 0700
        self.write(force=True)
        when = self.launch["teardown"]
        # The same teardown policy as every target (runtime/policy.py): keep_on_failure included;
        # a failed job under on_success is kept until the idle guard below.
        from reclaunch.runtime.policy import after_job
        action = after_job(self.state, when=when,
                           keep_on_failure=bool(self.launch.get("keep_on_failure", False)))
        keep = not self.stopping and (action is None or action[0] == "keep")
        if keep:  # the "cluster" stays up (port held) until `reclaunch down`
            self.message = (self.message + "; " if self.message else "") + \
                f"kept up (teardown: {when}); `reclaunch down {self.name}` removes it"
            self.write(force=True)
            # teardown.idle_minutes, as on clouds: a cluster kept for debugging with no job
            # running goes after that long; `never` means never.
            idle_s = None if when == "never" else float(self.launch.get("idle_minutes", 30)) * 60
            kept_at = time.monotonic()
            while not self.stopping:
                if idle_s is not None and time.monotonic() - kept_at >= idle_s:
                    self.message += (f"; torn down after {idle_s / 60:g} idle minute(s) "
                                     "(teardown.idle_minutes)")
                    self.write(force=True)
                    break
                time.sleep(0.5)
        self.store = None  # frees the port
        state = lp.read_json(self.root / "state.json") or {}
        state.update(torn_down=True, supervisor_pid=None, supervisor_id=None, updated_at=time.time())
        self.save_state(state)
        return 0

    def _on_signal(self, signum, frame) -> None:
        self.stopping = True




def main(argv: list[str] | None = None) -> int:
    import errno

    argv = sys.argv[1:] if argv is None else argv
    try:
        return Supervisor(Path(argv[0])).run()
    except OSError as exc:   # never die with nothing logged: say what and what was kept
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            _say(f"reclaunch supervisor: {no_space(Path(argv[0]))}; stopped; kept: the logs and "
                 f"checkpoints written so far in {argv[0]}")
        else:
            _say(f"reclaunch supervisor: {exc.strerror or exc}: {exc.filename or argv[0]}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
