"""bench/gpu_check.sh's body: the reference trainer on one GPU, measured vs planned.

Per model (DeepFM, DCNv2, DLRM, DIN) at two batch sizes on `--engine ddp` (plain torch, no
TorchRec: runs on a bare CUDA image), precision steps (fp32 / tf32 / bf16 / fp16), checkpoint and
resume, SIGTERM -> checkpoint -> exit 143 -> resume, and the TorchRec engine where torchrec imports.
Each run's trainer environment is what reclaunch renders for a matching spec (manifests.env.job_env),
so the run trains the tables the plan sized. The spec is 1 x p5en.48xlarge (8 x H200-141GB, the
H200 instance in the catalog); the catalog has no 1-GPU H200 machine, so the prediction per GPU is
the 8-GPU plan's samples/s / 8 (the plan's comm terms for 8 GPUs are in it: a small bias down).
Without reclaunch's core deps the trainer gets the same tables from flags and the predicted
column says why it is empty.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "trainer" / "train.py"
CRITEO_ROWS = (40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10, 2209,
               11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36)
CRITEO_HOTS = (3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1)


def tables(model: str, cap: int) -> list[dict]:
    """Criteo 1TB tables capped at `cap` rows (replicated on one GPU by the ddp engine, with a dense
    gradient per table: the full 97 GiB preset would not fit twice), DIN's own set."""
    if model == "din":
        return [{"name": "user_id", "rows": min(cap, 2_000_000)}, {"name": "shop_id", "rows": min(cap, 500_000)},
                {"name": "item_id", "rows": min(cap, 1_000_000), "pooling_factor": 50}]
    hots = CRITEO_HOTS if model == "dcnv2" else (1,) * 26
    return [{"name": f"cat_{i}", "rows": min(r, cap), "pooling_factor": h}
            for i, (r, h) in enumerate(zip(CRITEO_ROWS, hots))]


def spec(model: str, batch: int, precision: str, cap: int, dim: int | None) -> dict:
    m = {"preset": model, "tables": tables(model, cap)}
    if dim:
        m["embedding_dim"] = dim
    if model == "din":
        m["history_length"] = 50
    return {"name": f"gpucheck-{model}", "cloud": "aws", "region": "us-east-1", "instance_type": "p5en.48xlarge",
            "nodes": 1, "gpus_per_node": 8,
            "job": {"image": "local/reclaunch-trainer:check", "command": ["python", str(TRAIN)],
                    "batch_size": batch, "precision": precision, "optimizer": "adagrad",
                    "dataset": {"samples": 1e8, "epochs": 1}},
            "model": m}


def plan_env(doc: dict, tmp: Path) -> tuple[float | None, dict, str]:
    """-> (predicted samples/s per GPU, trainer env, note). Needs reclaunch's core deps."""
    try:
        import yaml
        from reclaunch.manifests.env import job_env
        from reclaunch.planner import make_plan
        from reclaunch.spec import load_spec
    except ImportError as exc:
        return None, {}, f"no prediction: reclaunch's core deps are not importable here ({exc.name})"
    path = tmp / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    try:
        plan = make_plan(load_spec(path))
    except Exception as exc:  # a spec the planner refuses: say so, keep measuring
        return None, {}, f"no prediction: plan failed: {type(exc).__name__}: {str(exc)[:160]}"
    env = {k: v for k, v in job_env(plan).items() if k.startswith("RECLAUNCH_")}
    per_gpu = plan.throughput_samples_per_second / max(1, plan.world_size)
    return per_gpu, env, f"plan of 1 x {plan.instance_type} / {plan.world_size}"


def metrics_of(out: str) -> list[dict]:
    return [json.loads(line.split("RECLAUNCH_METRICS ", 1)[1]) for line in out.splitlines()
            if "RECLAUNCH_METRICS " in line]


def run_trainer(args: list[str], env: dict, timeout: float, sigterm_after_step: int | None = None):
    """-> (exit code, stdout+stderr, seconds)."""
    full = {**os.environ, **env, "PYTHONUNBUFFERED": "1"}
    t0 = time.monotonic()
    if sigterm_after_step is None:
        p = subprocess.run([sys.executable, str(TRAIN), *args], env=full, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t0
    p = subprocess.Popen([sys.executable, str(TRAIN), *args], env=full, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    lines = []
    sent = False
    for line in p.stdout:
        lines.append(line)
        if not sent and line.startswith("step=") and int(line.split()[0][5:]) >= sigterm_after_step:
            p.send_signal(signal.SIGTERM)
            sent = True
        if time.monotonic() - t0 > timeout:
            p.kill()
            break
    return p.wait(), "".join(lines), time.monotonic() - t0


class Report:
    def __init__(self):
        self.rows, self.checks, self.lines = [], [], []

    def say(self, text: str) -> None:
        print(text, flush=True)
        self.lines.append(text)

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append({"check": name, "ok": ok, "detail": detail})
        self.say(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")


def measured(out: str) -> tuple[float | None, dict]:
    """Steady-state samples/s: the logging windows after the first (warm-up), and their parts."""
    ms = [m for m in metrics_of(out) if not m.get("final") and m.get("rank") == 0]
    steady = ms[1:] or ms
    if not steady:
        return None, {}
    rate = sum(m["samples_per_s"] for m in steady) / len(steady)
    parts = {k: round(sum(m[k] for m in steady) / len(steady) * 1e3, 3)
             for k in ("step_s", "data_wait_s", "fwd_bwd_s", "optimizer_s", "comm_s")}
    return rate, parts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny tables and steps on CPU (tests the script)")
    ap.add_argument("--steps", type=int, default=None, help="steps per throughput run (default 120; smoke 6)")
    ap.add_argument("--batches", default=None, help="two per-GPU batch sizes (default 2048,16384; smoke 64,128)")
    ap.add_argument("--models", default="deepfm,dcnv2,dlrm,din")
    ap.add_argument("--workers", type=int, default=None, help="DataLoader workers (default 6; smoke 0)")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: throughput, precision, checkpoint")
    a = ap.parse_args(argv)
    import torch

    smoke = a.cpu_smoke
    cuda = torch.cuda.is_available() and not smoke
    rep = Report()
    if not cuda and not smoke:
        rep.say("error: no CUDA device (torch.cuda.is_available() is False); --cpu-smoke runs the CPU path")
        return 2
    steps = a.steps or (6 if smoke else 120)
    log_every = max(2, steps // 6)
    batches = [int(x) for x in (a.batches or ("64,128" if smoke else "2048,16384")).split(",")]
    workers = a.workers if a.workers is not None else (0 if smoke else 6)
    cap, dim = (500, 8) if smoke else (2_000_000, None)
    device = torch.cuda.get_device_name(0) if cuda else "cpu"
    try:
        import torchrec  # noqa: F401
        have_torchrec = True
    except Exception:
        have_torchrec = False
    rep.say(f"gpu_check {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} device={device} torch={torch.__version__} "
            f"cuda={torch.version.cuda} torchrec={'yes' if have_torchrec else 'no'} smoke={smoke}")
    smoke_env = {"CUDA_VISIBLE_DEVICES": ""} if smoke else {}
    base = ["--steps", str(steps), "--log-every", str(log_every), "--num-workers", str(workers),
            "--checkpoint-every-minutes", "0"]
    tmp = Path(tempfile.mkdtemp(prefix="gpu_check."))
    models = a.models.split(",")
    engines = ["ddp"] + (["torchrec"] if have_torchrec else [])

    def one(model, batch, precision, engine, extra=(), env_extra=None, **kw):
        doc = spec(model, batch, precision, cap, dim)
        pred, env, note = plan_env(doc, tmp)
        if not env:   # no reclaunch: the same tables from flags
            ts = doc["model"]["tables"]
            env = {"RECLAUNCH_MODEL": model, "RECLAUNCH_BATCH_SIZE": str(batch), "RECLAUNCH_PRECISION": precision,
                   "RECLAUNCH_OPTIMIZER": "adagrad", "RECLAUNCH_TABLE_ROWS": ",".join(str(t["rows"]) for t in ts),
                   "RECLAUNCH_POOLING": ",".join(str(t.get("pooling_factor", 1)) for t in ts),
                   "RECLAUNCH_HISTORY_LENGTH": "50" if model == "din" else "0"}
            if dim:
                env["RECLAUNCH_EMBEDDING_DIM"] = str(dim)
        env = {**env, **smoke_env, **(env_extra or {})}
        code, out, secs = run_trainer([*base, "--engine", engine, *extra], env, 600 if cuda else 300, **kw)
        return code, out, secs, pred, note

    rep.say("\n== throughput: measured vs planned (samples/s per GPU) ==")
    rep.say(f"{'engine':8} {'model':7} {'batch':>6} {'prec':5} {'measured':>11} {'planned':>11} {'ratio':>6}  "
            f"step/data/fwdbwd/opt/comm ms  basis")
    for engine in engines if "throughput" not in a.skip else []:
        for model in models:
            for batch in (batches if engine == "ddp" else batches[:1]):
                code, out, secs, pred, note = one(model, batch, "bf16", engine)
                rate, parts = measured(out)
                ok = code == 0 and rate is not None
                ratio = f"{rate / pred:.2f}" if ok and pred else "-"
                rep.rows.append({"engine": engine, "model": model, "batch": batch, "precision": "bf16",
                                 "measured_samples_per_s": rate, "predicted_samples_per_s": pred, "basis": note,
                                 "parts_ms": parts, "exit": code, "device": device, "seconds": round(secs, 1)})
                pm = "/".join(str(parts.get(k, "-")) for k in ("step_s", "data_wait_s", "fwd_bwd_s", "optimizer_s",
                                                               "comm_s"))
                rep.say(f"{engine:8} {model:7} {batch:>6} bf16  {rate or 0:>11.0f} {pred or 0:>11.0f} {ratio:>6}  "
                        f"{pm}  {note}")
                if not ok:
                    rep.say("   trainer failed: " + " | ".join(out.strip().splitlines()[-3:]))

    rep.say("\n== precision steps (dlrm, ddp) ==")
    for prec in ("fp32", "tf32", "bf16", "fp16") if "precision" not in a.skip else ():
        code, out, secs, _, _ = one("dlrm", batches[0], prec, "ddp")
        rate, _ = measured(out)
        desc = next((line for line in out.splitlines() if line.startswith("info engine=")), "")
        rep.check(f"precision {prec}", code == 0 and f"precision={prec}" in desc,
                  f"exit={code} samples/s={rate or 0:.0f} {desc.split('(ddp engine: every table replicated)')[-1].strip()}")
    if have_torchrec and cuda:   # the refusal is CUDA's (CPU trains fp32 anyway)
        code, out, _, _, _ = one("dlrm", batches[0], "fp16", "torchrec")
        rep.check("torchrec refuses fp16", code != 0 and "fused embedding update" in out, f"exit={code}")

    for engine in engines if "checkpoint" not in a.skip else []:
        rep.say(f"\n== checkpoint, resume, SIGTERM ({engine}) ==")
        ck = tmp / f"ckpt-{engine}"
        ck_args = ["--checkpoint-dir", str(ck), "--checkpoint-every-steps", str(log_every)]
        code, out, _, _, _ = one("deepfm", batches[0], "bf16", engine, extra=ck_args)
        saved = [line for line in out.splitlines() if line.startswith("info checkpoint ")]
        rep.check(f"{engine} periodic checkpoints", code == 0 and len(saved) >= 2, f"exit={code} saves={len(saved)}")
        more = ["--steps", str(steps + 2 * log_every)]
        code, out, _, _, _ = one("deepfm", batches[0], "bf16", engine, extra=[*ck_args, *more])
        rep.check(f"{engine} resume", code == 0 and f"resumed_from_step={steps}" in out, f"exit={code}")
        ck2 = tmp / f"sigterm-{engine}"
        long = ["--steps", "100000", "--checkpoint-dir", str(ck2)]
        code, out, secs, _, _ = one("deepfm", batches[0], "bf16", engine, extra=long, sigterm_after_step=log_every)
        stopped = next((line for line in out.splitlines() if line.startswith("info sigterm step=")), "")
        rep.check(f"{engine} SIGTERM saves and exits 143", code == 143 and bool(stopped), f"exit={code} {stopped}")
        if stopped:
            at = stopped.split()[2].split("=")[1]
            code, out, _, _, _ = one("deepfm", batches[0], "bf16", engine,
                                     extra=["--steps", str(int(at) + log_every), "--checkpoint-dir", str(ck2)])
            rep.check(f"{engine} resume after SIGTERM", code == 0 and f"resumed_from_step={at}" in out, f"exit={code}")

    failed = [c for c in rep.checks if not c["ok"]] + [r for r in rep.rows if r["exit"] != 0]
    rep.say(f"\nsummary: {len(rep.rows)} throughput runs, {len(rep.checks)} checks, {len(failed)} failed")
    out_dir = os.environ.get("OUT")
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        Path(out_dir, "gpu_check.json").write_text(json.dumps({"rows": rep.rows, "checks": rep.checks}, indent=1))
        Path(out_dir, "gpu_check.txt").write_text("\n".join(rep.lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
