"""Data-parallel vs table-wise embeddings on the local 2-node shape: predicted and measured samples/s.

    .venv/bin/python bench/bench_sharding.py [--spec examples/local-deepfm.yaml] [--steps 120]

For each sharding, the reference trainer (TorchRec engine) runs under torchrun with 2 gloo
processes on this machine -- the shape of `cloud: local`'s 2 simulated nodes x 1 process --
on the spec's tables, model, batch and optimizer, with RECLAUNCH_SHARDING set to the per-table
plan of `reclaunch plan --json` for the spec pinned to that sharding (what the job env would pass;
round-robin only if the plan carries none). Measured = mean global samples/s of the trainer's
RECLAUNCH_METRICS lines after the first (warm-up) interval. Predicted = `reclaunch plan --json`
(throughput_samples_per_second) for the same spec with `model.sharding` pinned to it; when the
planner cannot give one, only the measurement is printed, and the line says so. The last lines
give the plan's choice's speed-up over the other sharding, predicted and measured, and the load
average (the machine is shared: measured CPU rates move with it).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "examples", "trainer", "train.py")
PREFIX = "RECLAUNCH_METRICS "
MODES = {"data_parallel": "data", "table_wise": "table_wise"}   # trainer sharding -> spec model.sharding


def plan_json(doc: dict) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{doc['name']}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)
        p = subprocess.run([sys.executable, "-m", "reclaunch", "plan", path, "--json"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")})
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return None


def plan_choice(plan: dict | None) -> list[str]:
    """The sharding types the plan chose, from its per-table plan (`sharding.tables`)."""
    tables = ((plan or {}).get("sharding") or {}).get("tables") or []
    return sorted({t["sharding_type"] for t in tables})


def predicted(doc: dict, mode: str) -> tuple[float | None, dict | None, str]:
    """(predicted samples/s, the pinned plan's RECLAUNCH_SHARDING value or None, note)."""
    pinned = {**doc, "model": {**doc["model"], "sharding": MODES[mode]}}
    plan = plan_json(pinned)
    if not plan or not plan.get("throughput_samples_per_second"):
        return None, None, "no prediction (reclaunch plan --json gave none for this sharding)"
    sh = plan.get("sharding") or {}
    env = None
    if sh.get("tables"):
        # what the job env passes the trainer (RECLAUNCH_SHARDING): the plan's own placement
        keep = ("name", "rows", "dim", "pooling_factor", "feature", "sequence", "sharding_type",
                "compute_kernel", "ranks")
        env = {"version": 1, "world_size": sh.get("world_size"), "engine": sh.get("engine", "torchrec"),
               "tables": [{k: t[k] for k in keep if k in t} for t in sh["tables"]]}
    return (float(plan["throughput_samples_per_second"]), env,
            f"plan sharding={','.join(plan_choice(plan)) or '?'} step_ms={1e3 * plan['step']['total_seconds']:.2f}"
            if isinstance(plan.get("step"), dict) and "total_seconds" in plan["step"]
            else f"plan sharding={','.join(plan_choice(plan)) or '?'}")


def sharding_env(doc: dict, mode: str, world: int) -> str:
    """Fallback when the pinned plan carries no per-table plan: every table `mode`, round-robin."""
    dim = doc["model"].get("embedding_dim", 16)
    tables = [{"name": t["name"], "rows": int(str(t["rows"]).replace("_", "")), "dim": t.get("dim") or dim,
               "feature": t["name"], "pooling_factor": 1.0, "sequence": False, "sharding_type": mode,
               "compute_kernel": "dense" if mode == "data_parallel" else "fused",
               "ranks": [] if mode == "data_parallel" else [i % world]}
              for i, t in enumerate(doc["model"]["tables"])]
    return json.dumps({"version": 1, "world_size": world, "engine": "torchrec", "tables": tables})


def measure(doc: dict, mode: str, steps: int, log_every: int, world: int,
            plan_env: dict | None = None) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    job, model = doc["job"], doc["model"]
    args = ["--model", model.get("preset", "deepfm"), "--batch-size", str(job.get("batch_size", 256)),
            "--optimizer", job.get("optimizer", "adam"), "--embedding-dim", str(model.get("embedding_dim", 16)),
            "--mlp", ",".join(map(str, model.get("mlp", [64, 32]))), "--steps", str(steps),
            "--log-every", str(log_every), "--dataset", "synthetic"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECLAUNCH_", "TORCHELASTIC_"))}
    env.update(RECLAUNCH_SHARDING=json.dumps(plan_env, separators=(",", ":")) if plan_env
               else sharding_env(doc, mode, world), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={world}",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", TRAIN, *args]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{mode}: trainer failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    lines = [json.loads(x.split(PREFIX, 1)[1]) for x in p.stdout.splitlines() if PREFIX in x]
    rank0 = [m for m in lines if m["rank"] == 0 and not m.get("final")][1:]   # drop the warm-up interval
    if not rank0:
        raise SystemExit(f"{mode}: no metrics after warm-up; raise --steps")

    def mean(key):
        return sum(m[key] for m in rank0) / len(rank0)
    return {"samples_per_s": mean("global_samples_per_s"), "step_ms": 1e3 * mean("step_s"),
            "comm_ms": 1e3 * mean("comm_s"), "fwd_bwd_ms": 1e3 * mean("fwd_bwd_s"),
            "opt_ms": 1e3 * mean("optimizer_s")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--spec", default=os.path.join(ROOT, "examples", "local-deepfm.yaml"))
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--log-every", type=int, default=30)
    args = p.parse_args(argv)
    with open(args.spec) as f:
        doc = yaml.safe_load(f)
    world = int(doc.get("nodes", 2)) * int(doc.get("gpus_per_node", 1))
    chosen = plan_json(doc)
    choice = plan_choice(chosen)
    print(f"bench spec={os.path.relpath(args.spec, ROOT)} world={world} (gloo, this CPU) "
          f"tables={[t['name'] for t in doc['model']['tables']]} steps={args.steps} "
          f"plan_choice={','.join(choice) or 'unknown'} loadavg={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results, preds = {}, {}
    for mode in MODES:
        pred, plan_env, note = predicted(doc, mode)
        got = measure(doc, mode, args.steps, args.log_every, world, plan_env)
        results[mode], preds[mode] = got, pred
        print(f"{mode:<14} predicted_samples_per_s={'%.1f' % pred if pred else 'n/a'} "
              f"measured_samples_per_s={got['samples_per_s']:.1f} step_ms={got['step_ms']:.1f} "
              f"(fwd_bwd {got['fwd_bwd_ms']:.1f}, comm {got['comm_ms']:.1f}, opt {got['opt_ms']:.1f}) "
              f"measured/predicted={got['samples_per_s'] / pred if pred else float('nan'):.3f} [{note}]")
    # the plan's choice against the other sharding: predicted and measured speed-up
    pick = choice[0] if len(choice) == 1 and choice[0] in MODES else None
    if pick is None:
        print(f"plan choice {choice or 'unknown'} is not one of {list(MODES)}: no speed-up to report")
    else:
        other = next(m for m in MODES if m != pick)
        meas = results[pick]["samples_per_s"] / results[other]["samples_per_s"]
        pred = preds[pick] / preds[other] if preds[pick] and preds[other] else None
        print(f"speedup of the plan's choice {pick} over {other}: "
              f"predicted={'%.2fx' % pred if pred else 'n/a'} measured={meas:.2f}x")
    print(f"loadavg after={' '.join(f'{x:.2f}' for x in os.getloadavg())} cores={os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
