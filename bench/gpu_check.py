"""bench/gpu_check.sh's body: the reference trainer on one GPU, measured beside the plan of
exactly what it runs (issue 39). Reads the plans bench/gpu_check_plans.py made (never imports
reclaunch: the GPU machine cannot plan) and runs, within one global deadline:

  1. build       every model, a few steps (fails fast on a model that does not start);
  2. checkpoint  SIGTERM to torchrun (as the kubelet sends it) with DataLoader workers: the
                 trainer saves (time, size) and exits; a rerun resumes from that step;
  3. precision   fp32 / tf32 / bf16: the state the forward really ran under (autocast, logits
                 dtype, TF32), finite losses, bf16 not slower than fp32;
  4. throughput  every model: each measured step part beside its planned term, the loader
                 alone (its ceiling), peak memory beside planned memory, the spread over
                 logging windows, the GPU clocks.

Measured parts -> planned terms (TERMS): data_wait ~ input floor (batch / the plan's loader
ceiling); fwd_bwd + optimizer ~ embedding + dense + per-step overhead (the replicated tables'
update is in the plan's embedding term and in the trainer's optimizer part, so the two are
compared together; each is printed alone too); comm ~ exposed communication (none on one GPU).
Every row goes to $OUT/gpu_check.jsonl as it is produced. With planted failures (--plant; on in --cpu-smoke) each
check also runs once against a fault it must catch, and the check passes only if it does.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_check_proc import Deadline, Rows, Run, clocks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "trainer" / "train.py"
PLANS = ROOT / "bench" / "prepared" / "gpu_check_plans.json"
# The engine every run uses (the GPU machine has no TorchRec). Its rows are tagged with it: the
# plans beside them are the TorchRec stack's (the planner has no ddp stack), so they are read as
# a comparison, never fed to calibration as that stack's figures (gpu_check_plans.calibration_rows).
ENGINE = "ddp"
PARTS = ("data_wait_s", "fwd_bwd_s", "optimizer_s", "comm_s")     # the trainer's, per step
TERMS = {"data_wait_s": ("data_wait_s",), "compute_s": ("fwd_bwd_s", "optimizer_s"), "comm_s": ("comm_s",)}
PLANNED = {"data_wait_s": ("input_floor",), "compute_s": ("embedding", "dense", "overhead"),
           "comm_s": ("exposed_comm",)}
# What the first forward must report (trainer: `info precision_state`), per device and precision.
STATE = {("cuda", "fp32"): "autocast=off logits_dtype=float32 matmul_tf32=false",
         ("cuda", "tf32"): "autocast=off logits_dtype=float32 matmul_tf32=true",
         ("cuda", "bf16"): "autocast=bfloat16 logits_dtype=bfloat16 matmul_tf32=true",
         ("cpu", None): "autocast=off logits_dtype=float32"}


def kv(line: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in line.split() if "=" in p)


def metrics(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith("RECLAUNCH_METRICS "):
            try:
                out.append(json.loads(line.split(" ", 1)[1]))
            except ValueError:
                pass
    return [m for m in out if m.get("rank") == 0 and not m.get("final")]


def first(text: str, prefix: str) -> str | None:
    return next((line for line in text.splitlines() if line.startswith(prefix)), None)


def finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


class Check:
    def __init__(self, a, plans: dict, rows: Rows, deadline: Deadline, tmp: Path, cuda: bool):
        self.a, self.rows, self.deadline, self.tmp, self.cuda = a, rows, deadline, tmp, cuda
        self.by_stage: dict[str, list[dict]] = {}
        for entry in plans["runs"]:
            self.by_stage.setdefault(entry["stage"], []).append(entry)
        self.device = "cuda" if cuda else "cpu"
        self.n = 0

    # ---------------------------------------------------------------- plumbing
    def check(self, stage: str, name: str, ok: bool, detail: str, planted: bool = False, **data) -> bool:
        good = ok != planted           # a planted fault must be caught
        self.rows.add({"kind": "check", "stage": stage, "check": name, "ok": ok, "planted": planted,
                       "as_expected": good, "detail": detail, **data})
        tag = ("PASS" if ok else "FAIL") + (" (planted: caught)" if planted and not ok else
                                             " (planted: NOT caught)" if planted else "")
        print(f"{tag:26} {stage:10} {name}: {detail}", flush=True)
        return ok

    def trainer(self, entry: dict, steps: int, extra=(), env_extra=None, torchrun=False, on_line=None,
                cap: float = 240.0):
        """Run the trainer as the plan says; None (and a `skipped` row) when the deadline is near."""
        floor = 15.0 if self.cuda else 5.0
        timeout = self.deadline.budget(cap, floor)
        if timeout is None:
            self.rows.add({"kind": "skipped", "id": entry["id"], "reason": "deadline",
                           "left_s": round(self.deadline.left(), 1)})
            print(f"{'SKIP':26} {entry['stage']:10} {entry['id']}: the deadline is near", flush=True)
            return None, None
        self.n += 1
        result = self.tmp / f"result-{self.n}.json"
        env = {**os.environ, **entry["env"], "PYTHONUNBUFFERED": "1", **(env_extra or {})}
        if not self.cuda:
            env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", RECLAUNCH_NUM_WORKERS="0")
        log_every = max(1, steps // 6)
        args = ["--engine", ENGINE, "--steps", str(steps), "--log-every", str(log_every),
                "--checkpoint-every-minutes", "0", "--result", str(result), *extra]
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1",
                    "--monitor-interval=0.2"] if torchrun else [sys.executable]
        run = Run([*launcher, str(TRAIN), *args], env, self.tmp / f"run-{self.n}.log", ROOT)
        got = run.watch(timeout, on_line)
        try:
            got["result"] = json.loads(result.read_text())
        except (OSError, ValueError):
            got["result"] = None
        return got, run

    # ---------------------------------------------------------------- 1. build
    def build(self) -> None:
        steps = 10
        for entry in self.by_stage.get("build", []):
            got, run = self.trainer(entry, steps, cap=180)
            if got is not None:
                self._built(entry, got, run, steps)
        if self.a.plant and self.by_stage.get("build"):
            entry = self.by_stage["build"][0]
            got, run = self.trainer(entry, steps, env_extra={"RECLAUNCH_FAULT": "nan_loss:2"}, cap=180)
            if got is not None:
                self._built(entry, got, run, steps, planted=True)

    def _built(self, entry, got, run, steps, planted=False) -> None:
        done = kv(first(run.text, "done ") or "")
        loss = float(done.get("final_loss", "nan")) if done.get("final_loss") not in (None, "None") else math.nan
        ok = got["exit"] == 0 and done.get("steps") == str(steps) and finite(loss)
        self.check("build", entry["model"], ok, f"exit={got['exit']} steps={done.get('steps')} final_loss={loss:.4g} "
                   f"in {got['seconds']}s" + (" (timed out)" if got["timed_out"] else ""), planted,
                   id=entry["id"], seconds=got["seconds"], tail=None if ok else run.lines[-6:])

    # ---------------------------------------------------------------- 2. checkpoint / SIGTERM
    def checkpoint(self) -> None:
        for entry in self.by_stage.get("checkpoint", [])[:1]:
            self._sigterm(entry, planted=False)
            if self.a.plant:
                self._sigterm(entry, planted=True)

    def _sigterm(self, entry: dict, planted: bool) -> None:
        """SIGTERM to torchrun (the container's PID 1 in a pod) once training runs, with
        DataLoader workers; planted: torchrun kills the trainer 1 s later, before its 4 s save."""
        ck = self.tmp / f"ckpt-{'planted' if planted else 'sigterm'}"
        sent = []

        def on_line(line, run):
            if not sent and line.startswith("step=") and int(kv(line).get("step", 0)) >= 4:
                os.kill(run.proc.pid, signal.SIGTERM)
                sent.append(time.monotonic())
        fault = {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "1", "RECLAUNCH_FAULT": "slow_save:4"} if planted else {}
        got, run = self.trainer(entry, 100000, ["--checkpoint-dir", str(ck), "--num-workers", "2", "--log-every", "2"],
                                env_extra=fault, torchrun=True, on_line=on_line, cap=240)
        if got is None:
            return
        stop = kv(first(run.text, "info sigterm step=") or "")
        step = int(stop["step"]) if stop.get("step", "").isdigit() else None
        saved = kv(first(run.text, f"info checkpoint step={step} ") or "") if step else {}
        on_disk = step is not None and (ck / f"ckpt-{step:010d}.pt").exists()
        ok = bool(sent) and step is not None and on_disk and "killed by signal" not in run.text
        self.check("checkpoint", "SIGTERM to torchrun saves, workers=2", ok,
                   f"signalled={bool(sent)} stopped_at={step} saved={on_disk} save_s={saved.get('seconds')} "
                   f"bytes={saved.get('bytes')} exit={got['exit']}", planted, id=entry["id"],
                   save_seconds=float(saved["seconds"]) if "seconds" in saved else None,
                   save_bytes=int(saved["bytes"]) if "bytes" in saved else None,
                   tail=None if ok else run.lines[-8:])
        if planted or not ok:
            return
        got, run = self.trainer(entry, step + 4, ["--checkpoint-dir", str(ck)], cap=180)
        if got is not None:
            self.check("checkpoint", "resume from the SIGTERM checkpoint",
                       got["exit"] == 0 and f"resumed_from_step={step}" in run.text,
                       f"exit={got['exit']} resumed={f'resumed_from_step={step}' in run.text}", id=entry["id"])

    # ---------------------------------------------------------------- 3. precision
    def precision(self) -> None:
        steps = 40 if self.cuda else 8
        rates = {}
        for entry in self.by_stage.get("precision", []):
            got, run = self.trainer(entry, steps, cap=150)
            if got is not None:
                rates[entry["precision"]] = self._precise(entry, got, run)
        tolerance = 0.95 if self.cuda else 0.5      # CPU: both run fp32; only noise differs
        planted_rate = None
        if self.a.plant and "bf16" in rates:
            entry = next(e for e in self.by_stage["precision"] if e["precision"] == "bf16")
            got, run = self.trainer(entry, steps, env_extra={"RECLAUNCH_FAULT": "slow_data:0.3,nan_loss:3"}, cap=150)
            if got is not None:
                planted_rate = self._precise(entry, got, run, planted=True)
        for rate, planted in ((rates.get("bf16"), False), (planted_rate, True)):
            if rate is not None and rates.get("fp32"):
                self.check("precision", "bf16 not slower than fp32", rate >= tolerance * rates["fp32"],
                           f"bf16 {rate:.0f}/s vs fp32 {rates['fp32']:.0f}/s (tolerance {tolerance})", planted)

    def _precise(self, entry, got, run, planted=False) -> float | None:
        state = (first(run.text, "info precision_state ") or "").replace("info precision_state ", "")
        want = STATE.get((self.device, entry["precision"] if self.cuda else None), "")
        if planted and not self.cuda:     # CPU runs fp32 whatever is asked: plant the CUDA expectation
            want = STATE[("cuda", "bf16")]
        self.check("precision", f"{entry['precision']}: the forward's state", state.startswith(want) and bool(want),
                   f"saw '{state}' want '{want}'", planted, id=entry["id"])
        ms = metrics(run.text)
        losses = [m.get("loss") for m in ms]
        self.check("precision", f"{entry['precision']}: finite loss",
                   got["exit"] == 0 and bool(losses) and all(finite(x) for x in losses),
                   f"exit={got['exit']} losses={[round(x, 4) if finite(x) else x for x in losses]}", planted,
                   id=entry["id"])
        steady = ms[1:] or ms
        return statistics.mean(m["samples_per_s"] for m in steady) if steady else None

    # ---------------------------------------------------------------- 4. throughput
    def throughput(self) -> None:
        steps = 60 if self.cuda else 12
        for entry in self.by_stage.get("throughput", []):
            got, run = self.trainer(entry, steps, cap=150)
            if got is not None:
                self._measure(entry, got, run)
        if self.a.plant and self.by_stage.get("throughput"):
            entry = self.by_stage["throughput"][0]      # the trainer runs another batch than planned
            got, run = self.trainer(entry, steps, ["--batch-size", str(entry["batch"] * 2)], cap=150)
            if got is not None:
                self._measure(entry, got, run, planted=True)

    def _measure(self, entry, got, run, planted=False) -> None:
        res, plan = got.get("result") or {}, entry["plan"]
        same = {"model": entry["model"], "engine": ENGINE, "world_size": plan["world_size"],
                "global_batch": entry["batch"]}
        differ = {k: (res.get(k), v) for k, v in same.items() if res.get(k) != v}
        self.check("throughput", f"{entry['model']}: runs what was planned", got["exit"] == 0 and not differ,
                   f"exit={got['exit']} differs={differ or 'nothing'}", planted, id=entry["id"])
        steady = metrics(run.text)[1:]
        if planted or len(steady) < 2:
            if not planted:
                self.check("throughput", f"{entry['model']}: steady windows", False, f"{len(steady)} after warm-up",
                           id=entry["id"])
            return
        rates = [m["samples_per_s"] for m in steady]
        parts = {k: statistics.mean(m[k] for m in steady) * 1e3 for k in ("step_s", *PARTS)}   # means add up
        adds = sum(parts[k] for k in PARTS)
        self.check("throughput", f"{entry['model']}: parts add up to the step", abs(adds - parts["step_s"])
                   <= 0.15 * parts["step_s"] + 0.5, f"{adds:.2f} ms of {parts['step_s']:.2f} ms", id=entry["id"])
        measured = {"step_s": parts["step_s"], **{k: sum(parts[p] for p in ps) for k, ps in TERMS.items()}}
        planned = {"step_s": plan["step_ms"]["total"],
                   **{k: sum(plan["step_ms"].get(t) or 0.0 for t in ts) for k, ts in PLANNED.items()}}
        loader = self._loader(entry)
        peak = max((m.get("peak_mem_bytes") or 0) for m in steady) / 2 ** 30
        mean = statistics.mean(rates)
        row = self.rows.add({
            "kind": "throughput", "id": entry["id"], "engine": ENGINE, "planned_stack": "torchrec",
            "model": entry["model"], "batch": entry["batch"],
            "precision": entry["precision"], "device": self.device, "measured_samples_per_s": mean,
            "planned_samples_per_s": plan["samples_per_s"], "ratio": mean / plan["samples_per_s"],
            "windows": len(rates), "spread": (max(rates) - min(rates)) / statistics.median(rates),
            "min_median_max": [min(rates), statistics.median(rates), max(rates)],
            "measured_ms": measured, "planned_ms": planned, "measured_parts_ms": parts,
            "planned_terms_ms": plan["step_ms"], "loader_only_samples_per_s": loader,
            "peak_mem_gib": peak, "planned_mem_gib": plan["memory_gib"], "clocks": clocks() if self.cuda else None,
            "workers": int(entry["env"].get("RECLAUNCH_NUM_WORKERS", 0)) if self.cuda else 0})
        print(f"{'':26} {'':10} {entry['id']}: {mean:,.0f}/s measured, {plan['samples_per_s']:,.0f}/s planned "
              f"(x{row['ratio']:.2f}); loader alone {loader or 0:,.0f}/s; spread {row['spread']:.1%} over "
              f"{len(rates)} windows; peak {peak:.1f} GiB vs planned {plan['memory_gib']['total']:.1f} GiB", flush=True)
        for k in measured:
            print(f"{'':40}{k:12} measured {measured[k]:9.3f} ms   planned {planned[k]:9.3f} ms", flush=True)
        print(f"{'':40}{'parts':12} " + " ".join(f"{k}={v:.3f}" for k, v in parts.items() if k != "step_s")
              + " | plan " + " ".join(f"{k}={v:.3f}" for k, v in plan["step_ms"].items() if v is not None),
              flush=True)

    def _loader(self, entry) -> float | None:
        """The loader alone, as the run had it (same source, transform, workers): its ceiling."""
        timeout = self.deadline.budget(60.0, 5.0)
        if timeout is None:
            return None
        spec = self.tmp / f"loader-{entry['id']}.json"
        spec.write_text(json.dumps(entry))
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **({} if self.cuda else {"CUDA_VISIBLE_DEVICES": ""})}
        run = Run([sys.executable, __file__, "--loader-only", str(spec), *(["--cpu-smoke"] if not self.cuda else [])],
                  env, self.tmp / f"loader-{entry['id']}.log", ROOT)
        run.watch(timeout)
        doc = first(run.text, "{")
        return json.loads(doc)["samples_per_s"] if doc else None


def loader_only(path: str, smoke: bool) -> int:
    """In a child of the check: batches/s of the run's DataLoader with nothing consuming them."""
    sys.path.insert(0, str(ROOT / "examples" / "trainer"))
    import torch

    import data
    import sharding

    entry = json.loads(Path(path).read_text())
    plan = sharding.parse(entry["env"]["RECLAUNCH_SHARDING"])
    pooling = [max(1, int(round(t.pooling_factor))) for t in plan.pooled]
    seqs = [(t.rows, max(1, int(round(t.pooling_factor)))) for t in plan.sequences]
    source = data.make_source("synthetic", None, [t.rows for t in plan.pooled], entry["batch"], 1234, 0, 1,
                              sequences=seqs)
    transform = data.MultiHot([t.rows for t in plan.pooled], pooling) if any(p > 1 for p in pooling) else None
    workers = 0 if smoke else int(entry["env"].get("RECLAUNCH_NUM_WORKERS", 0))
    it = iter(data.loader(source, 0, workers, pin_memory=torch.cuda.is_available(), transform=transform))
    n = 6 if smoke else 40
    for _ in range(max(2, workers)):
        next(it)
    t0 = time.perf_counter()
    for _ in range(n):
        next(it)
    print(json.dumps({"samples_per_s": n * entry["batch"] / (time.perf_counter() - t0), "workers": workers}))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plans", default=str(PLANS), help="JSON from bench/gpu_check_plans.py (gpu_check.sh --prepare)")
    ap.add_argument("--cpu-smoke", action="store_true", help="the same checks on CPU, tiny (what the suite runs)")
    ap.add_argument("--deadline-seconds", type=float, default=None, help="the whole check's budget (default 420)")
    ap.add_argument("--plant", action=argparse.BooleanOptionalAction, default=None,
                    help="also run each check against a fault it must catch (default: on with --cpu-smoke)")
    ap.add_argument("--stages", default="build,checkpoint,precision,throughput")
    ap.add_argument("--loader-only", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.loader_only:
        return loader_only(a.loader_only, a.cpu_smoke)
    a.plant = a.cpu_smoke if a.plant is None else a.plant
    try:
        plans = json.loads(Path(a.plans).read_text())
    except (OSError, ValueError) as exc:
        print(f"error: no plans at {a.plans} ({type(exc).__name__}): run `bench/gpu_check.sh --prepare` where "
              "reclaunch is installed and carry bench/prepared/ to this machine", file=sys.stderr)
        return 2
    if bool(plans.get("smoke")) != a.cpu_smoke:
        print(f"error: {a.plans} holds the {'smoke' if plans.get('smoke') else 'GPU'} plans; this is a "
              f"{'smoke' if a.cpu_smoke else 'GPU'} run", file=sys.stderr)
        return 2
    deadline = Deadline(a.deadline_seconds or 420.0)
    # Ours and the runs' temporary files all go with this folder (TMPDIR for the runs). Short:
    # DataLoader workers hand tensors over Unix sockets made in TMPDIR, whose paths end at 107 bytes.
    base = tempfile.gettempdir()
    tmp = Path(tempfile.mkdtemp(prefix="gpu_check.", dir=base if len(base) <= 40 else "/tmp"))
    os.environ["TMPDIR"] = str(tmp)
    try:
        return _check(a, plans, deadline, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _check(a, plans: dict, deadline: Deadline, tmp: Path) -> int:
    import torch

    cuda = torch.cuda.is_available() and not a.cpu_smoke
    if not cuda and not a.cpu_smoke:
        print("error: no CUDA device (torch.cuda.is_available() is False); --cpu-smoke runs the CPU path",
              file=sys.stderr)
        return 2
    out = Path(os.environ.get("OUT") or ROOT / "bench" / "out")
    rows = Rows(out / "gpu_check.jsonl")
    rows.add({"kind": "start", "device": torch.cuda.get_device_name(0) if cuda else "cpu",
              "torch": torch.__version__, "cuda": torch.version.cuda, "smoke": a.cpu_smoke, "plant": a.plant,
              "deadline_s": round(deadline.left(), 1), "plans_commit": plans.get("commit"),
              "plans_made_at": plans.get("made_at"), "machine": plans.get("machine"),
              "clocks": clocks() if cuda else None})
    check = Check(a, plans, rows, deadline, tmp, cuda)
    for stage in a.stages.split(","):
        getattr(check, stage.strip())()
    checks = [r for r in rows.rows if r["kind"] == "check"]
    bad = [r for r in checks if not r["as_expected"]]
    skipped = [r for r in rows.rows if r["kind"] == "skipped"]
    rows.add({"kind": "summary", "checks": len(checks), "not_as_expected": len(bad), "skipped": len(skipped),
              "throughput_rows": sum(r["kind"] == "throughput" for r in rows.rows),
              "elapsed_s": round((a.deadline_seconds or 420.0) - deadline.left(), 1)})
    print(f"summary: {len(checks)} checks, {len(bad)} not as expected, {len(skipped)} runs skipped "
          f"(deadline); rows in {rows.path}", flush=True)
    return 1 if bad or skipped else 0


if __name__ == "__main__":
    sys.exit(main())
