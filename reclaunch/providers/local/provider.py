"""cloud: local — the same job on this machine: N simulated nodes, one torchrun agent each.

`up` writes DIR/launch.json ($RECLAUNCH_HOME/local/<name>/) and starts a detached supervisor
(reclaunch.providers.local.supervisor) that owns the processes, so the cluster outlives the
CLI. Everything else (`status`, `logs`, `down`, `preempt`) reads DIR/state.json and the
per-node logs, or drops a request in DIR/control/ for the supervisor to carry out.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from reclaunch import host
from reclaunch.errors import MissingExtraError, ProviderError, UsageError
from reclaunch.providers import JobStatus, UpOptions
from reclaunch.providers.local import proc as lp
from reclaunch.providers.local.dryrun import entrypoint

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# More simulated GPUs than this per core only thrash: gloo timeouts, not a rehearsal.
PROCS_PER_CORE = 4


class LocalProvider:
    name = "local"

    # ------------------------------------------------------------ Provider protocol
    def describe(self, plan: "Plan") -> tuple[list[list[str]], dict[str, str]]:
        """`up --dry-run`: (one torchrun command per node, the job's environment)."""
        from reclaunch.providers.local.dryrun import describe

        return describe(plan)

    def check_ready(self, plan: "Plan | None" = None) -> None:
        if importlib.util.find_spec("torch") is None:
            raise MissingExtraError("torch", "local")
        if not Path("/proc/self/environ").exists():
            raise ProviderError("cloud: local needs Linux (/proc) to track its processes")
        if plan is not None:   # each simulated GPU is a training process on these cores
            procs, cores = plan.max_nodes * plan.gpus_per_node, host.cpu_count()
            if procs > PROCS_PER_CORE * cores:
                raise UsageError(f"{plan.spec.where('nodes')}: nodes: cloud: local would run "
                                 f"{procs} training processes on {cores} CPU core(s); at most "
                                 f"{PROCS_PER_CORE * cores} ({PROCS_PER_CORE} per core) here")

    def up(self, plan: "Plan", options: UpOptions | None = None, *, cwd: str | None = None,
           port: int | None = None, console: Any = None, join_timeout: int = 300,
           last_call_timeout: int = 10, timeout: float | None = None) -> JobStatus:
        """Start the cluster detached; unless options.detach, follow it live to the end.

        Local knobs (keywords of this target only): cwd (where job.command runs; default the
        spec file's repo root), port (preferred rendezvous port; a taken one falls back to a
        free one), console (rich Console), join_timeout, last_call_timeout (seconds), timeout
        (watch limit, seconds). options.force/preflight: nothing to force or preflight here.
        """
        o = options or UpOptions()
        if o.backend:
            raise UsageError("--backend is where a cloud stack keeps its Pulumi state; "
                             "cloud: local keeps none")
        from reclaunch.manifests.env import job_env

        self.check_ready(plan)
        spec = plan.spec
        if o.watch:  # the same plan a cloud `up` shows before it spends anything
            from reclaunch.ui.console import console as new_console
            from reclaunch.ui.plan import render_plan

            out = console or new_console()
            out.print(render_plan(plan, width=min(110, out.width)), markup=False, highlight=False)
        root = lp.cluster_dir(spec.name)
        old = lp.read_json(root / "state.json")
        if old and lp.supervisor_alive(old):
            raise ProviderError(
                f"local cluster {spec.name!r} is already up (state {old.get('state')}, "
                f"supervisor pid {old['supervisor_pid']})",
                hint=f"follow it with `reclaunch status {spec.name}` / `reclaunch logs {spec.name} -f`, "
                     f"or stop it with `reclaunch down {spec.name}`")
        end = time.monotonic() + (5.0 if old and old.get("torn_down") else 0.0)
        while lp.run_pids(spec.name) and time.monotonic() < end:
            time.sleep(0.1)   # a torn-down supervisor on its way out
        if lp.run_pids(spec.name):
            raise ProviderError(f"processes of a previous {spec.name!r} run are still alive",
                                hint=f"`reclaunch down {spec.name}` stops them")
        from reclaunch.providers.local import rerun
        if (done := rerun.finished_before(root, old, fresh=o.fresh)) is not None:
            return done   # a second `up` after success: say so instead of training 0 steps
        from reclaunch.manifests.secrets import secret_refs
        from reclaunch.providers.local.secrets import resolve
        secrets = resolve(secret_refs(plan))   # {secret, key}: a 0600 file or $NAME; before any change
        for stale in ("state.json", "result.json", "supervisor.log"):
            (root / stale).unlink(missing_ok=True)
        shutil.rmtree(root / "nodes", ignore_errors=True)
        shutil.rmtree(root / "control", ignore_errors=True)
        umask = os.umask(0o077)   # the run dir, its data and checkpoints: owner-only (home.py)
        try:
            root.mkdir(parents=True, exist_ok=True)
            root.chmod(0o700)
            env = {**job_env(plan, local_root=root), **secrets}
            from reclaunch.providers.local import bucket
            if (store := bucket.facts(spec)) is None:
                env["CHECKPOINT_DIR"] = _checkpoint_dir(spec, root, env["CHECKPOINT_DIR"])
                Path(env["CHECKPOINT_DIR"]).mkdir(parents=True, exist_ok=True)
            else:   # s3://: the bucket at AWS_ENDPOINT_URL (bucket.py); down reads launch.json
                store["note"] = bucket.ensure(spec.name, store, root)
                print(f"{spec.name}: checkpoints: {store['note']}", file=sys.stderr)
            if spec.storage.kind == "hostpath":
                (root / "data").mkdir(exist_ok=True)
        finally:
            os.umask(umask)
        env.setdefault("RECLAUNCH_RESULT", str(root / "result.json"))
        env.setdefault("PYTHONUNBUFFERED", "1")
        if "OMP_NUM_THREADS" not in os.environ:  # N simulated nodes share these cores
            env.setdefault("OMP_NUM_THREADS", str(max(1, host.cpu_count() // plan.world_size)))
        if Path("/sys/class/net/lo").exists() and "GLOO_SOCKET_IFNAME" not in os.environ:
            env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        where = Path(cwd or _repo_root(o.spec_path or getattr(spec, "_source", None)))
        if (pack := getattr(plan.context, "workdir", None)) is not None:
            # job.workdir: unpacked into the run's own directory, where the command runs, as
            # a pod's init container unpacks it before the training container starts
            from reclaunch.runtime.workdir import unpack
            shutil.rmtree(root / "workdir", ignore_errors=True)
            unpack(pack.path, root / "workdir", pack.digest)
            where = root / "workdir"
        launch = {
            "name": spec.name, "run_id": uuid.uuid4().hex[:8], "cwd": str(where),
            "nodes": plan.nodes, "min_nodes": plan.min_nodes, "max_nodes": plan.max_nodes,
            "nproc": plan.gpus_per_node, "max_restarts": spec.job.max_restarts,
            "entry": entrypoint(spec.job.command, spec.job.args), "env": env,
            "image": spec.job.image, "teardown": spec.teardown.when,
            "keep_on_failure": spec.teardown.keep_on_failure,
            "idle_minutes": spec.teardown.idle_minutes, "port": port,
            "join_timeout": int(join_timeout), "last_call_timeout": int(last_call_timeout),
            "spot": plan.spot, "created_at": time.time(),
            # what the run's measurement record is filed under (runtime/measurements.py)
            "measurement_key": _measurement_key(plan),
            "bucket": store,
        }
        lp.write_json(root / "launch.json", launch)
        _journal(plan, o.spec_path)
        fd = os.open(root / "supervisor.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with open(fd, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "reclaunch.providers.local.supervisor", str(root)],
                cwd=str(where), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, lp.MARKER: lp.run_marker(spec.name, launch["run_id"]),
                     "PYTHONPATH": _pythonpath()})
        deadline = time.monotonic() + 120
        while True:
            state = lp.read_json(root / "state.json")
            if state and state.get("state") != "Created" or state and state.get("state") in lp.TERMINAL:
                break
            if proc.poll() is not None:
                tail = [str(ln) for _, ln in lp.Tail([root / "supervisor.log"], tail_bytes=8192).read()][-5:]
                raise ProviderError(f"local supervisor exited ({proc.returncode}): " + " | ".join(tail))
            if time.monotonic() > deadline:
                raise ProviderError("local supervisor did not start within 120 s",
                                    hint=f"see {root / 'supervisor.log'}")
            time.sleep(0.1)
        if o.on_started:
            o.on_started()   # the name's lock: `down` may come from another terminal now
        if o.detach:
            return self.status(spec.name)
        from reclaunch.providers.local.watch import watch as follow

        return follow(self, spec.name, console=console, timeout=timeout)

    def status(self, name: str) -> JobStatus:
        from reclaunch.providers.local import view
        st = view.status(name)
        if st is None:
            raise UsageError(f"no local cluster named {name!r}" + _known_hint(name))
        return st

    def list(self) -> list[JobStatus]:
        """Every local cluster under $RECLAUNCH_HOME (for `reclaunch status` with no NAME)."""
        base = lp.home()
        names = sorted(p.name for p in base.iterdir() if (p / "state.json").exists()) if base.is_dir() else []
        return [self.status(n) for n in names]

    def recent_logs(self, name: str, rank: int | None = None,
                    max_bytes: int = 2**20) -> Iterator[str]:
        """The newest `max_bytes` of each node's log (what `status` measures from): cheap and
        bounded however long the run or its lines."""
        return self.logs(name, rank=rank, tail_bytes=max_bytes)

    def logs(self, name: str, rank: int | None = None, follow: bool = False,
             poll: float = 0.5, tail_bytes: int | None = None) -> Iterator[str]:
        """Lines of every node's log, worker lines as `[rankR]: ...`, agent lines as `[node-K] ...`.
        With rank, only that rank's lines. With follow, keeps going until the supervisor is gone."""
        root = self._root(name)
        if rank is not None:  # a rank that can never exist would print nothing, forever with -f
            from reclaunch.providers.local.view import launch_world
            world = launch_world(root)
            if not 0 <= rank < world:
                raise UsageError(f"{name}: no rank {rank} (ranks 0..{world - 1})")
        paths = sorted((root / "nodes").glob("node-*.log"))
        tail = lp.Tail(paths, tail_bytes=tail_bytes)
        while True:
            for path in sorted((root / "nodes").glob("node-*.log")):
                tail.add(path)
            for path, line in tail.drain():   # bounded reads: a big file comes in parts
                r, _ = lp.split_rank(line)
                if rank is not None and r != rank:
                    continue
                yield line if r is not None else f"[{path.stem}] {line}"
            if not follow:
                return
            state = lp.read_json(root / "state.json") or {}
            if not lp.supervisor_alive(state):
                for path, line in tail.drain():
                    r, _ = lp.split_rank(line)
                    if rank is None or r == rank:
                        yield line if r is not None else f"[{path.stem}] {line}"
                return
            time.sleep(poll)

    def all_logs(self, name: str) -> Iterator[str]:
        """Every rank's lines as they stand now (what `diagnose` reads)."""
        return self.logs(name)

    def down(self, name: str, *, keep_storage: bool = False, yes: bool = False,
             backend: str | None = None, grace: float = 15.0) -> None:
        """Stop every process of the cluster (verified by /proc), free its port, remove its
        state, logs and checkpoints (keep_storage keeps data/ and the checkpoints).
        Deleting needs --yes or a yes on a terminal, as on clouds (teardown.py)."""
        from reclaunch.providers.local import teardown
        teardown.down(self._root(name), name, keep_storage=keep_storage, grace=grace, yes=yes)

    # ------------------------------------------------------------ spot drill
    def preempt(self, name: str, node: int, *, notice: float = 10.0, replace_after: float = 5.0,
                wait: bool = True, timeout: float = 120.0) -> dict[str, Any]:
        """Reclaim node `node` as a spot market would, signalled as the kubelet stops a pod:
        SIGTERM to the node's torchrun agent only (it relays it to its workers), `notice`
        seconds of grace, SIGKILL to all that is left of the node, and a replacement node
        `replace_after` seconds later that rejoins the rendezvous. With wait, returns once the
        node is gone (the record)."""
        root = self._root(name)
        state = lp.read_json(root / "state.json") or {}
        if not lp.supervisor_alive(state) or state.get("state") in lp.TERMINAL:
            raise UsageError(f"local cluster {name!r} is not running (state {state.get('state')})")
        nodes = state.get("nodes", [])
        if not 0 <= node < len(nodes):
            raise UsageError(f"--node {node}: cluster {name!r} has nodes 0..{len(nodes) - 1}")
        if not (0 <= notice < float("inf") and 0 <= replace_after < float("inf")):  # and not nan
            raise UsageError("--notice and the replacement delay must be >= 0 seconds (and finite)")
        rid = uuid.uuid4().hex[:8]
        lp.write_json(root / "control" / f"preempt-{time.time_ns()}-{rid}.json",
                      {"id": rid, "node": node, "notice": notice, "replace_after": replace_after})
        deadline = time.monotonic() + (timeout if wait else 10.0)
        while time.monotonic() < deadline:
            state = lp.read_json(root / "state.json") or {}
            rec = next((r for r in state.get("preemptions", []) if r["id"] == rid), None)
            if rec and rec["status"] == "rejected":
                raise UsageError(f"cannot preempt node {node}: {rec.get('reason')}")
            if rec and (not wait or rec["status"] not in ("noticed",)):
                return rec
            if not lp.supervisor_alive(state):
                break
            time.sleep(0.1)
        raise ProviderError(f"the supervisor of {name!r} did not carry out the preemption")

    # ------------------------------------------------------------ exec, port-forward (shell.py)
    def exec(self, name: str, command: list[str], *, rank: int = 0, interactive: bool = False) -> int:
        from reclaunch.providers.local import shell
        return shell.run(name, command, rank=rank, interactive=interactive)

    def port_forward(self, name: str, port: int, **kw: Any) -> str | None:
        from reclaunch.providers.local import shell
        return shell.forward(name, port, **kw)

    # ------------------------------------------------------------ name claims (claims.py)
    def holds(self, name: str) -> tuple[str, None, str] | None:
        """A local cluster of this name exists until `down` removes its directory."""
        root = lp.cluster_dir(name)
        if (root / "state.json").exists() or (root / "launch.json").exists():
            return ("local", None, f"a local cluster (state in {root})")
        return None

    def names(self) -> list[str]:
        import re

        from reclaunch.clouds import CLUSTER_NAME
        base = lp.home()   # only names a cluster can have: a stray "../x" or "[/b]" dir is none
        return sorted(p.name for p in base.iterdir()
                      if re.fullmatch(CLUSTER_NAME, p.name) and self.holds(p.name))

    def interrupted_hint(self, name: str, path: str) -> str:
        return (f"a local cluster runs on without `up`: `reclaunch status {name}` shows it, "
                f"`reclaunch logs {name} -f` follows it (a second `up` answers 'already up'), "
                f"`reclaunch down {name}` stops it")

    # ------------------------------------------------------------ helpers
    def _root(self, name: str) -> Path:
        root = lp.cluster_dir(name)
        if not (root / "state.json").exists() and not (root / "launch.json").exists():
            raise UsageError(f"no local cluster named {name!r}" + _known_hint(name))
        return root


def _journal(plan: "Plan", spec_path: str | None) -> None:
    """Record the cluster where `reclaunch status/logs/down` look up its cloud."""
    try:
        from reclaunch.runtime.budget import plan_extra
        from reclaunch.runtime.journal import ClusterRecord, Journal
    except ImportError:  # pragma: no cover
        return
    spec = plan.spec
    # plan_extra: the figures `up` printed (this host's calibration, measured runs), which
    # status and diagnose compare the run with (runtime/observe.py printed_for).
    Journal(spec.name).save_record(ClusterRecord(
        name=spec.name, cloud="local", nodes=plan.nodes, spot=plan.spot,
        teardown_when=spec.teardown.when,
        spec_path=str(Path(spec_path).resolve()) if spec_path else None,
        spec_text=_spec_text(spec), extra=plan_extra(plan)))


def _measurement_key(plan: "Plan") -> dict[str, Any] | None:
    try:
        from reclaunch.planner.measured import key_for, sharding_of
        from reclaunch.runtime.calibrate import host_id

        return key_for(plan.spec, cloud=plan.cloud, instance=None, gpus_per_node=plan.gpus_per_node,
                       nodes=plan.nodes, sharding=sharding_of(plan.sharding), host_id=host_id())
    except Exception:  # pragma: no cover - a run without a key records nothing, and runs
        return None


def _spec_text(spec) -> str | None:
    """The spec as YAML, so `diagnose` re-plans exactly what ran (the file may change or
    not exist: tests and callers build specs in memory). It round-trips through parse_spec."""
    try:
        import yaml

        return yaml.safe_dump(spec.model_dump(mode="json", exclude_none=True), sort_keys=False)
    except Exception:  # pragma: no cover - a record without it still works, minus the plan
        return None


def _checkpoint_dir(spec: Any, root: Path, ckpt: str) -> str:
    """A checkpoint path under storage.mount_path names the cluster's volume, not this host's
    directory: with no volume here (storage: none, e.g. the default /data/ckpt) it lives in the
    run's own directory, never in the host's /data. Other absolute paths are the user's."""
    mount = spec.storage.mount_path.rstrip("/") or "/"
    path = Path(ckpt)
    if path.is_relative_to(root) or not (str(path) == mount or str(path).startswith(mount + "/")):
        return ckpt
    return str(root / os.path.relpath(path, mount))


def _known_hint(name: str = "") -> str:
    base = lp.home()
    names = sorted(p.name for p in base.iterdir() if p.is_dir() and p.name != name
                   and LocalProvider().holds(p.name)) if base.is_dir() else []
    return f"; known: {', '.join(names)}" if names else " (none exist under " + str(base) + ")"


def _repo_root(source: str | None) -> Path:
    """The spec file's repository root (so examples/trainer/train.py resolves), else cwd."""
    if not source or not Path(source).exists():
        return Path.cwd()
    d = Path(source).resolve().parent
    for cand in (d, *d.parents):
        if (cand / ".git").exists() or (cand / "pyproject.toml").exists():
            return cand
    return Path.cwd()


def _pythonpath() -> str:
    here = str(Path(__file__).resolve().parents[2])  # so the supervisor imports this reclaunch
    prev = os.environ.get("PYTHONPATH")
    return f"{here}{os.pathsep}{prev}" if prev else here


def provider() -> LocalProvider:
    return LocalProvider()
