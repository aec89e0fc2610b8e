"""Data-parallel vs table-wise embeddings on the local 2-node shape: predicted and measured samples/s.

    .venv/bin/python bench/bench_sharding.py [--spec examples/local-deepfm.yaml] [--steps 120]

For each sharding, the reference trainer (TorchRec engine) runs under torchrun with 2 gloo
processes on this machine -- the shape of `cloud: local`'s 2 simulated nodes x 1 process --
on the spec's tables, model, batch and optimizer, with RECLAUNCH_SHARDING set to that sharding
(table-wise: round-robin over the ranks). Measured = mean global samples/s of the trainer's
RECLAUNCH_METRICS lines after the first (warm-up) interval. Predicted = `reclaunch plan --json`
(throughput_samples_per_second) for the same spec with `model.sharding` pinned to it; when the
planner cannot give one, only the measurement is printed, and the line says so.
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


def predicted(doc: dict, mode: str) -> tuple[float | None, str]:
    pinned = {**doc, "model": {**doc["model"], "sharding": MODES[mode]}}
    plan = plan_json(pinned)
    if not plan or not plan.get("throughput_samples_per_second"):
        return None, "no prediction (reclaunch plan --json gave none for this sharding)"
    got = sorted(set(((plan.get("memory") or {}).get("sharding") or {}).values()))
    return float(plan["throughput_samples_per_second"]), f"plan sharding={','.join(got) or '?'}"


def sharding_env(doc: dict, mode: str, world: int) -> str:
    dim = doc["model"].get("embedding_dim", 16)
    tables = [{"name": t["name"], "rows": int(str(t["rows"]).replace("_", "")), "dim": t.get("dim") or dim,
               "feature": t["name"], "pooling_factor": 1.0, "sequence": False, "sharding_type": mode,
               "compute_kernel": "dense" if mode == "data_parallel" else "fused",
               "ranks": [] if mode == "data_parallel" else [i % world]}
              for i, t in enumerate(doc["model"]["tables"])]
    return json.dumps({"version": 1, "world_size": world, "engine": "torchrec", "tables": tables})


def measure(doc: dict, mode: str, steps: int, log_every: int, world: int) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    job, model = doc["job"], doc["model"]
    args = ["--model", model.get("preset", "deepfm"), "--batch-size", str(job.get("batch_size", 256)),
            "--optimizer", job.get("optimizer", "adam"), "--embedding-dim", str(model.get("embedding_dim", 16)),
            "--mlp", ",".join(map(str, model.get("mlp", [64, 32]))), "--steps", str(steps),
            "--log-every", str(log_every), "--dataset", "synthetic"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECLAUNCH_", "TORCHELASTIC_"))}
    env.update(RECLAUNCH_SHARDING=sharding_env(doc, mode, world), OMP_NUM_THREADS="1")
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
    choice = sorted(set(((chosen or {}).get("memory") or {}).get("sharding", {}).values())) if chosen else []
    print(f"bench spec={os.path.relpath(args.spec, ROOT)} world={world} (gloo, this CPU) "
          f"tables={[t['name'] for t in doc['model']['tables']]} steps={args.steps} "
          f"plan_choice={','.join(choice) or 'unknown'}")
    results = {}
    for mode in MODES:
        pred, note = predicted(doc, mode)
        got = measure(doc, mode, args.steps, args.log_every, world)
        results[mode] = got
        print(f"{mode:<14} measured_samples_per_s={got['samples_per_s']:.1f} step_ms={got['step_ms']:.1f} "
              f"(fwd_bwd {got['fwd_bwd_ms']:.1f}, comm {got['comm_ms']:.1f}, opt {got['opt_ms']:.1f}) "
              f"predicted_samples_per_s={'%.1f' % pred if pred else 'n/a'} [{note}]")
    tw, dp = results["table_wise"]["samples_per_s"], results["data_parallel"]["samples_per_s"]
    print(f"speedup table_wise/data_parallel measured={tw / dp:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
