"""`reclaunch calibrate`: measure this host for `cloud: local` plans.

Runs the reference trainer (examples/trainer/train.py: the same TorchRec kernels, gloo and
process layout as a `cloud: local` job, launched by torchrun with the job env `up` gives it)
for a few dozen steps at REFERENCE_BATCHES, and caches the measured step times with the host's
identity (CPU model, cores, RAM, torch version) in $RECLAUNCH_HOME/calibration/host.json.
`plan` of a local spec fits its two host constants to them (planner/calibration.py); a cache
made on another host (or another torch) is ignored and the plan says so.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from reclaunch import clouds, host   # host: RAM and cores as the planner reads them (pinnable there)
from reclaunch.errors import ProviderError, ReclaunchError
from reclaunch.planner.calibration import HostCalibration, Point

VERSION = 1
# The reference job: the shape of `cloud: local`'s main job (examples/local-deepfm.yaml:
# 2 simulated nodes x 1 process, DeepFM, 3 tables, dim 16), at two batch sizes so the fit
# tells the fixed per-step cost from the per-sample work.
REFERENCE_BATCHES = (128, 1024)
REFERENCE_STEPS = 60
# Each batch runs this many times, interleaved (128, 1024, 128, 1024, ...), and the median step
# is kept: on a shared machine one run can land in a burst of other work (two back-to-back demos
# on a loaded 2-core VM differed 1.34x, 2026-12-01), and interleaving keeps a slow spell from
# falling on one batch size only, which would skew the fixed-vs-per-sample split of the fit.
REFERENCE_REPEATS = 3
LOG_EVERY = 10
RUN_TIMEOUT_S = 600


def reference_doc(batch: int, steps: int = REFERENCE_STEPS) -> dict[str, Any]:
    return {
        "name": f"calibrate-b{batch}", "cloud": clouds.here().name, "nodes": 2, "gpus_per_node": 1,
        "storage": {"kind": "none"},
        "job": {"command": ["python", "examples/trainer/train.py"],
                "args": ["--log-every", str(LOG_EVERY)],
                "batch_size": batch, "precision": "fp32", "optimizer": "adam",
                "dataset": {"samples": steps * batch * 2, "epochs": 1}},
        "model": {"preset": "deepfm", "embedding_dim": 16, "mlp": [64, 32],
                  "tables": [{"name": "user_id", "rows": 100_000}, {"name": "item_id", "rows": 50_000},
                             {"name": "category", "rows": 1_000}]},
        "teardown": {"when": "on_completion"},
    }


# ------------------------------------------------------------------ host identity

def identity() -> dict[str, Any]:
    """What makes this host's figures its own. Read without importing torch."""
    from importlib import metadata

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        torch_v = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_v = None
    return {"cpu_model": cpu, "cores": host.cpu_count(), "ram_gib": round(host.ram_bytes() / (1 << 30)),
            "torch": torch_v, "machine": platform.machine(), "system": platform.system()}


def host_id(ident: dict[str, Any] | None = None) -> str:
    ident = identity() if ident is None else ident
    text = json.dumps(ident, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# ------------------------------------------------------------------ the cache

def cache_path() -> Path:
    from reclaunch.home import root

    return root() / "calibration" / "host.json"


# What a host.json written by `calibrate` can hold; anything outside is damage or a forgery, and
# means "uncalibrated", never a plan of "duration nan h" or a 300-digit rate. A reference step of
# the tiny reference job takes milliseconds on any CPU (tens of microseconds would be 1000x the
# fastest one measured); one of an hour is a stalled run.
MAX_CACHE_BYTES = 1 << 20
MAX_POINTS = 16
STEP_S = (1e-4, 3600.0)
MAX_FIRST_STEP_S = 86_400.0


def _seconds(v: Any, lo: float, hi: float) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi


def from_doc(doc: Any) -> HostCalibration:
    """host.json -> HostCalibration; ValueError naming the field that is wrong."""
    from reclaunch.planner.calibration import reference_spec
    from reclaunch.planner.records import MAX_SAMPLES_PER_S, when_of

    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise ValueError(f"version: expected {VERSION}")
    pts = doc.get("points")
    if not isinstance(pts, list) or not 1 <= len(pts) <= MAX_POINTS:
        raise ValueError(f"points: expected a list of 1 to {MAX_POINTS}")
    points = []
    for i, p in enumerate(pts):
        if not isinstance(p, dict) or not isinstance(p.get("spec_doc"), dict):
            raise ValueError(f"points[{i}].spec_doc: expected a cluster.yaml document")
        try:
            if not reference_spec(p["spec_doc"]).runs_here:
                raise ValueError("not a cloud: local job")
        except Exception as exc:   # noqa: BLE001 - SpecError, a YAML dump of odd values
            raise ValueError(f"points[{i}].spec_doc: {str(exc).splitlines()[0][:200]}") from None
        s = p.get("step_s")
        if not _seconds(s, *STEP_S):
            raise ValueError(f"points[{i}].step_s: expected seconds from {STEP_S[0]:g} to {STEP_S[1]:g}")
        rate = p.get("samples_per_s")
        if rate is not None and not _seconds(rate, 1e-9, MAX_SAMPLES_PER_S):
            raise ValueError(f"points[{i}].samples_per_s: expected null or samples/s up to {MAX_SAMPLES_PER_S:g}")
        points.append(Point(spec_doc=p["spec_doc"], step_s=float(s),
                            samples_per_s=None if rate is None else float(rate)))
    first = doc.get("first_step_s")
    if first is not None and not _seconds(first, 0.0, MAX_FIRST_STEP_S):
        raise ValueError(f"first_step_s: expected seconds from 0 to {MAX_FIRST_STEP_S:g}, or null")
    for k in ("host_id", "measured_at"):
        if not isinstance(doc.get(k), str) or len(doc[k]) > 64:
            raise ValueError(f"{k}: expected a string")
    when = when_of(doc["measured_at"])
    if when is None or when > host.latest_plausible():
        raise ValueError("measured_at: expected an ISO 8601 time, not in the future")
    ident = doc.get("identity")
    if not isinstance(ident, dict) or len(ident) > 32 or len(json.dumps(ident)) > 4096:
        raise ValueError("identity: expected an object")
    return HostCalibration(host_id=doc["host_id"], identity=ident,
                           measured_at=doc["measured_at"], points=tuple(points),
                           first_step_s=float(first) if first is not None else None,
                           trainer=str(doc.get("trainer", ""))[:4096])


def to_doc(cal: HostCalibration) -> dict[str, Any]:
    return {"version": VERSION, "host_id": cal.host_id, "identity": cal.identity,
            "measured_at": cal.measured_at, "first_step_s": cal.first_step_s,
            "trainer": cal.trainer,
            "points": [{"spec_doc": p.spec_doc, "step_s": p.step_s, "samples_per_s": p.samples_per_s}
                       for p in cal.points]}


def load_for_this_host(path: Path | None = None) -> tuple[HostCalibration | None, str | None]:
    """(the cached calibration, None) when it was made on this host, else (None, why not)."""
    from reclaunch.home import DamagedState, read_state_file

    path = path or cache_path()
    try:   # bounded and non-blocking: a FIFO or a link to /dev/zero is damage, not a hang
        data = read_state_file(path, MAX_CACHE_BYTES)
        if data is None:
            return None, "uncalibrated (no host calibration yet)"
        cal = from_doc(json.loads(data))
    except DamagedState as exc:
        return None, f"uncalibrated ({exc.message})"
    except (ValueError, RecursionError) as exc:
        return None, f"uncalibrated ({path} is unreadable: {str(exc)[:300]})"
    ident = identity()
    if cal.host_id != host_id(ident):
        changed = [k for k in ident if cal.identity.get(k) != ident[k]]
        return None, (f"uncalibrated (the host changed since {cal.measured_at[:10]}: "
                      f"{', '.join(changed) or 'identity'})")
    return cal, None


def save(cal: HostCalibration, path: Path | None = None) -> Path:
    from reclaunch.home import private_dir

    path = path or private_dir("calibration") / "host.json"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        json.dump(to_doc(cal), fh, indent=1)
    os.replace(tmp, path)
    return path


# ------------------------------------------------------------------ running it

def trainer_path() -> Path:
    """The reference trainer: examples/trainer/train.py of a checkout, else the copy an
    installed wheel carries as reclaunch._trainer (pyproject package-dir)."""
    checkout = Path(__file__).resolve().parents[2] / "examples" / "trainer" / "train.py"
    if checkout.is_file():
        return checkout
    try:
        from importlib import resources

        packaged = Path(str(resources.files("reclaunch._trainer").joinpath("train.py")))
        if packaged.is_file():
            return packaged
    except ModuleNotFoundError:
        pass
    return checkout


def run_reference(doc: dict[str, Any], trainer: Path, *, timeout: float = RUN_TIMEOUT_S) -> dict[str, Any]:
    """One reference run under torchrun with the env `up` would give it -> {step_s,
    samples_per_s, first_step_s}."""
    from reclaunch.manifests.env import job_env
    from reclaunch.planner import make_plan
    from reclaunch.planner.calibration import reference_spec
    from reclaunch.runtime.metrics import measure

    plan = make_plan(reference_spec(doc))
    with tempfile.TemporaryDirectory(prefix="reclaunch-calibrate-") as tmp:
        env = {**os.environ, **job_env(plan, local_root=tmp)}
        env.pop("CHECKPOINT_DIR", None)       # no checkpoints: they are not the step
        env.setdefault("OMP_NUM_THREADS", str(max(1, host.cpu_count() // plan.world_size)))
        if Path("/sys/class/net/lo").exists():
            env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        env["PYTHONUNBUFFERED"] = "1"
        entry = [str(trainer), *doc["job"]["args"]]
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
               f"--nproc-per-node={plan.world_size}", *entry]
        t0 = time.monotonic()
        lines: list[str] = []
        first = None
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, errors="replace")
        try:
            for line in proc.stdout:          # the trainer prints `info engine=` right before step 1
                lines.append(line.rstrip("\n"))
                if first is None and "info engine=" in line:
                    first = time.monotonic() - t0
                if time.monotonic() - t0 > timeout:
                    raise ProviderError(f"calibration run {doc['name']} took over {timeout:.0f} s")
            code = proc.wait(timeout=max(1.0, timeout - (time.monotonic() - t0)))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if code != 0:
        tail = " | ".join(ln for ln in lines[-4:] if ln.strip())
        raise ProviderError(f"calibration run {doc['name']} failed (exit {code}): {tail}",
                            hint="`reclaunch up examples/local-deepfm.yaml` needs the same trainer; "
                                 "pip install 'reclaunch[local]'")
    m = measure(lines, window_size=max(1, REFERENCE_STEPS // LOG_EVERY))
    if m is None or not m.step_s:
        raise ProviderError(f"calibration run {doc['name']} printed no RECLAUNCH_METRICS lines")
    return {"step_s": m.step_s, "samples_per_s": m.samples_per_s, "first_step_s": first}


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def calibrate(*, trainer: Path | None = None, batches=REFERENCE_BATCHES,
              runner: Callable[[dict, Path], dict] | None = None, repeats: int = REFERENCE_REPEATS,
              say: Callable[[str], None] = lambda s: None) -> HostCalibration:
    """Run the reference runs (each batch `repeats` times, interleaved; the median kept) and
    cache the result (the runner is injectable for tests)."""
    import importlib.util

    from reclaunch.errors import MissingExtraError

    # Absolute: the runs start in a temporary directory, where a relative path names nothing.
    trainer = (trainer or trainer_path()).resolve()
    if runner is None:
        if importlib.util.find_spec("torch") is None:
            raise MissingExtraError("torch", clouds.here().pip_extra)
        if not trainer.is_file():
            raise ReclaunchError(f"the reference trainer is not at {trainer}",
                                 hint="run from a reclaunch checkout, or pass --trainer PATH")
    run = runner or run_reference
    ident = identity()
    runs: dict[int, list[dict]] = {b: [] for b in batches}
    firsts: list[float] = []
    for rep in range(max(1, repeats)):
        for b in batches:
            doc = reference_doc(b)
            say(f"  reference run {rep + 1}/{max(1, repeats)}: DeepFM, 2 processes x batch {b}, "
                f"{REFERENCE_STEPS} steps ...")
            got = run(doc, trainer)
            say(f"    step {got['step_s'] * 1e3:.1f} ms, {got.get('samples_per_s') or 0:,.0f} samples/s"
                + (f", first step after {got['first_step_s']:.1f} s" if got.get("first_step_s") else ""))
            runs[b].append(got)
            if got.get("first_step_s") is not None:
                firsts.append(float(got["first_step_s"]))
    points = []
    for b in batches:
        steps = [float(g["step_s"]) for g in runs[b]]
        rates = [float(g["samples_per_s"]) for g in runs[b] if g.get("samples_per_s")]
        if len(steps) > 1:
            say(f"  batch {b}: median step {_median(steps) * 1e3:.1f} ms of {len(steps)} runs "
                f"({min(steps) * 1e3:.1f}-{max(steps) * 1e3:.1f} ms)")
        points.append(Point(spec_doc=reference_doc(b), step_s=_median(steps),
                            samples_per_s=_median(rates) if rates else None))
    cal = HostCalibration(host_id=host_id(ident), identity=ident,
                          measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          points=tuple(points), first_step_s=min(firsts) if firsts else None,
                          trainer=str(trainer))
    save(cal)
    return cal
