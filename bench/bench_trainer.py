"""Fused EmbeddingBag vs one EmbeddingBag per table: training samples/s on CPU.

    .venv/bin/python bench/bench_trainer.py [--model deepfm] [--batch-size 512] [--iters 60]

Same model, same weights, same batches; only the embedding layout differs: one fused
EmbeddingBag weight (on CPU looked up by index_select/index_add: same values and gradients,
see model.FusedEmbeddingBag) vs one nn.EmbeddingBag per table. Each timed
iteration is forward + backward + optimizer step. Rounds alternate fused/per-table so
load from other processes hits both alike; the best round of each is reported.
Exit status 1 when the fused layout is not faster (use as a regression check).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "trainer"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import data  # noqa: E402
from model import build_model  # noqa: E402
from optim import build_optimizer  # noqa: E402


def make(fused: bool, args):
    torch.manual_seed(0)
    model = build_model(args.model, args.table_rows, args.embedding_dim, args.mlp, fused=fused)
    return model, build_optimizer(args.optimizer, model)


def run_round(model, opt, batches) -> float:
    t0 = time.perf_counter()
    for dense, sparse, labels in batches:
        loss = F.binary_cross_entropy_with_logits(model(dense, sparse), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="deepfm", choices=["deepfm", "dcnv2"])
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--embedding-dim", type=int, default=16)
    p.add_argument("--mlp", default="64,32")
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--table-rows", default=",".join(map(str, data.DEFAULT_TABLE_ROWS)))
    p.add_argument("--iters", type=int, default=40, help="timed steps per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (default 1: stable on a shared CPU; 0 leaves torch's default)")
    args = p.parse_args(argv)
    args.mlp = [int(x) for x in args.mlp.split(",")]
    args.table_rows = [int(x) for x in args.table_rows.split(",")]
    if args.threads:
        torch.set_num_threads(args.threads)

    src = data.SyntheticCriteo(args.table_rows, args.batch_size, seed=0)
    batches = [tuple(torch.from_numpy(a) for a in src.batch(k)) for k in range(args.iters)]
    variants = {"fused": make(True, args), "per_table": make(False, args)}
    for model, opt in variants.values():
        run_round(model, opt, batches[:5])  # warm-up: allocator, optimizer state
    best = {name: float("inf") for name in variants}
    for _ in range(args.rounds):
        for name, (model, opt) in variants.items():
            best[name] = min(best[name], run_round(model, opt, batches))

    rate = {name: args.iters * args.batch_size / t for name, t in best.items()}
    print(f"bench model={args.model} batch={args.batch_size} tables={len(args.table_rows)} "
          f"dim={args.embedding_dim} optimizer={args.optimizer} threads={torch.get_num_threads()} "
          f"torch={torch.__version__}")
    for name in variants:
        print(f"{name:<10} samples_per_s={rate[name]:.1f} step_ms={best[name] / args.iters * 1e3:.2f}")
    speedup = rate["fused"] / rate["per_table"]
    print(f"speedup fused/per_table={speedup:.2f}x")
    return 0 if speedup > 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
