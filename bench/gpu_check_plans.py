"""The plans bench/gpu_check.py measures against, made HERE by reclaunch's planner.

The GPU machine the check runs on (one H200, torch CUDA, 16 cores, 128 GiB, no TorchRec, maybe
no pydantic, no internet) cannot plan, so the plans travel: `bench/gpu_check.sh --prepare`
writes bench/prepared/gpu_check_plans.json (git-ignored: made fresh by the planner of the
commit that runs, and naming that commit; copy it to the GPU machine with the tree, naming the
folder where the copy skips ignored files). gpu_check.py reads only this JSON: it never
imports reclaunch. Afterwards, `--calibration-rows OUT/gpu_check.jsonl` turns the run's
measured rows into calibration.yaml rows, but for the ddp engine's (STACK_OF_ENGINE).

Like with like: each entry is the plan of exactly what its run trains. One GPU (the lent
machine: a 1-GPU slice of the catalog's p5en.48xlarge, 16 vCPUs and 128 GiB as lent), the ddp
engine (model.sharding: data, every table replicated, as that engine runs them), the same
tables, dims, pooling, batch and precision, through the trainer environment the planner renders
(manifests.env.job_env), and the plan's per-step terms beside it. The planner has no stack of its
own for the ddp engine: it plans the reference trainer's (`torchrec`: eager, fused embedding
kernels, TorchRec's per-step host work, which the ddp engine does not do).

    python bench/gpu_check_plans.py [--smoke] OUT.json
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = "examples/trainer/train.py"
# Criteo 1TB cardinalities and the MLPerf DLRM-DCNv2 multi-hot sizes (spec/models.py), capped:
# the ddp engine keeps every table with a dense gradient and optimizer state on the one GPU.
CAP, SMOKE_CAP = 2_000_000, 500
GPU_MACHINE = {"instance_like": "p5en.48xlarge", "region": "us-east-1", "gpus": 1, "vcpus": 16, "ram_gib": 128.0}
MODELS = ("deepfm", "dcnv2", "dlrm", "din")
# (stage, models, batch, precisions): what the check runs, in the order it runs it.
STAGES = (("build", MODELS, 1024, ("bf16",)), ("checkpoint", ("deepfm",), 1024, ("bf16",)),
          ("precision", ("dlrm",), 8192, ("fp32", "tf32", "bf16")), ("throughput", MODELS, 8192, ("bf16",)))
# Rows per table: the full cap where the numbers are the point (throughput); small elsewhere, so
# the runs before it start fast (tables are built on the host) and precision sees the dense math.
STAGE_CAP = {"build": 100_000, "checkpoint": 100_000, "precision": 100_000, "throughput": CAP}
# The smoke runs every check, each on fewer cases (a CPU in the suite): every model still builds.
SMOKE_STAGES = (STAGES[0], STAGES[1], ("precision", ("dlrm",), 128, ("fp32", "bf16")),
                ("throughput", ("deepfm",), 128, ("bf16",)))
SMOKE_BATCH = {"build": 64, "checkpoint": 64}


def tables(model: str, cap: int) -> list[dict]:
    from reclaunch.spec.models import CRITEO_1TB_HOTS, CRITEO_1TB_ROWS

    if model == "din":
        return [{"name": "user_id", "rows": min(cap, 2_000_000)}, {"name": "shop_id", "rows": min(cap, 500_000)},
                {"name": "item_id", "rows": min(cap, 1_000_000), "pooling_factor": 50}]
    hots = CRITEO_1TB_HOTS if model == "dcnv2" else (1,) * len(CRITEO_1TB_ROWS)
    return [{"name": f"cat_{i}", "rows": min(int(r), cap), "pooling_factor": h}
            for i, (r, h) in enumerate(zip(CRITEO_1TB_ROWS, hots))]


def spec_doc(model: str, batch: int, precision: str, cap: int, smoke: bool) -> dict:
    m = {"preset": model, "sharding": "data", "tables": tables(model, cap)}
    if smoke:   # the preset's shape, small enough for a CPU in the suite
        m.update(embedding_dim=8, mlp=[16, 8], **({"bottom_mlp": [16]} if model in ("dlrm", "dcnv2") else {}),
                 **({"cross_low_rank": 4} if model == "dcnv2" else {}),
                 **({"attention_mlp": [8]} if model == "din" else {}))
    if model == "din":
        m["history_length"] = 8 if smoke else 50
    return {"name": f"gpucheck-{model}", "cloud": "aws", "region": GPU_MACHINE["region"],
            "instance_type": GPU_MACHINE["instance_like"], "nodes": 1, "gpus_per_node": 8,
            "job": {"image": "local/reclaunch-trainer:check", "command": ["python", TRAIN], "batch_size": batch,
                    "precision": precision, "optimizer": "adagrad", "dataset": {"samples": 1e8, "epochs": 1}},
            "model": m}


def one_gpu_offer(catalog):
    """The lent machine as a catalog offer: the p5en row (H200, its host) cut to one GPU."""
    from reclaunch.catalog import offers

    row = next(o for o in offers(catalog, cloud="aws", instance_type=GPU_MACHINE["instance_like"])
               if o.region == GPU_MACHINE["region"])
    return dataclasses.replace(row, gpu_count=1, vcpus=GPU_MACHINE["vcpus"], ram_gib=GPU_MACHINE["ram_gib"])


def plan_entry(stage: str, model: str, batch: int, precision: str, cap: int, smoke: bool, catalog, offer) -> dict:
    import yaml

    from reclaunch.manifests.env import job_env
    from reclaunch.planner import make_plan
    from reclaunch.planner.perf import Hardware, input_ceiling, step_overhead_seconds
    from reclaunch.spec import parse_spec

    spec = parse_spec(yaml.safe_dump(spec_doc(model, batch, precision, cap, smoke)), f"gpucheck-{model}.yaml")
    # The catalog sells H200s 8 to a node (so the spec validates as 8); the check trains on one.
    spec.gpus_per_node = 1
    plan = make_plan(spec, catalog, offer=offer, nodes=1)
    st, mem = plan.step, plan.memory
    ceiling = input_ceiling(spec, Hardware(hbm_gbs=1.0, peak_tflops=1.0, utilisation=1.0, intra_gbs=1.0,
                                           inter_gbs=1.0, host_vcpus=offer.vcpus), 1)
    env = {k: v for k, v in job_env(plan).items()
           if k.startswith("RECLAUNCH_") and k not in ("RECLAUNCH_CLUSTER", "RECLAUNCH_STEPS")}
    gib = 2.0 ** 30
    return {
        "id": f"{stage}-{model}-b{batch}-{precision}", "stage": stage, "model": model, "batch": batch,
        "precision": precision, "env": env,
        "plan": {
            "samples_per_s": plan.throughput_samples_per_second, "world_size": plan.world_size,
            "dataloader_workers": plan.dataloader_workers, "fits": mem.fits, "parallelism": mem.parallelism,
            "tables": len(spec.model.tables), "embedding_dim": spec.model.embedding_dim,
            # per step, ms: the trainer's four parts map onto these (gpu_check.py TERMS)
            "step_ms": {"total": st.total_seconds * 1e3, "embedding": st.embedding_seconds * 1e3,
                        "dense": st.dense_compute_seconds * 1e3,
                        "overhead": step_overhead_seconds("cuda") * 1e3,
                        "exposed_comm": st.exposed_comm_seconds * 1e3,
                        "input_floor": batch / ceiling * 1e3 if ceiling else None},
            "memory_gib": {"embedding": mem.embedding_bytes / gib, "dense": mem.dense_bytes / gib,
                           "gradient": mem.gradient_bytes / gib, "optimizer": mem.optimizer_bytes / gib,
                           "activation": mem.activation_bytes / gib, "reserve": mem.reserve_bytes / gib,
                           "total": mem.total_bytes_per_gpu / gib},
            "warnings": list(plan.warnings)}}


def make(smoke: bool) -> dict:
    from reclaunch.catalog import load_catalog

    catalog = load_catalog()
    offer = one_gpu_offer(catalog)
    runs = [plan_entry(stage, model, SMOKE_BATCH.get(stage, batch) if smoke else batch, prec,
                       SMOKE_CAP if smoke else STAGE_CAP[stage], smoke, catalog, offer)
            for stage, models, batch, precs in (SMOKE_STAGES if smoke else STAGES)
            for model in models for prec in precs]
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"version": 1, "smoke": smoke, "made_by": "bench/gpu_check_plans.py", "commit": commit,
            "made_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": {**GPU_MACHINE, "gpu": offer.gpu, "gpu_memory_gib": offer.gpu_memory_gib},
            "runs": runs}


# The planner stack (spec/stacks.py) whose figures a run of each trainer engine measures. The
# ddp engine (plain PyTorch, one fused EmbeddingBag, no TorchRec pipeline) has none: its rows
# stay out of calibration, where they would pass for the torchrec stack's.
STACK_OF_ENGINE = {"torchrec": "torchrec"}


def calibration_rows(jsonl: Path, plans: dict) -> list[str]:
    """What a GPU run adds to planner/data/calibration.yaml: one row per measured throughput run
    whose checks passed, the model as it ran (its tables from the plan it carried), under its
    own source, so bench_calibration.py's leave-one-source-out keeps it apart until reviewed."""
    rows = [json.loads(line) for line in Path(jsonl).read_text().splitlines() if line.strip()]
    kept_out = [r["id"] for r in rows if r["kind"] == "throughput" and r.get("engine", "ddp") not in STACK_OF_ENGINE]
    start = next(r for r in rows if r["kind"] == "start")
    failed = {r.get("id") for r in rows if r["kind"] == "check" and not r["ok"] and not r["planted"]}
    by_id = {e["id"]: e for e in plans["runs"]}
    out = []
    for r in rows:
        if r["kind"] != "throughput" or r["id"] in failed or r["device"] != "cuda" or r["id"] in kept_out:
            continue
        entry = by_id[r["id"]]
        env = entry["env"]
        tables = [{"rows": t["rows"], "pooling_factor": t["pooling_factor"]}
                  for t in json.loads(env["RECLAUNCH_SHARDING"])["tables"]]
        model = {"preset": entry["model"], "embedding_dim": int(env["RECLAUNCH_EMBEDDING_DIM"]), "sharding": "data",
                 "tables": tables}
        day = start["t"][:10]
        row = {"id": f"reclaunch-gpucheck-{entry['model']}-{entry['precision']}-{day}",
               "source": f"reclaunch bench/gpu_check.py {day} on {start['device']} (torch {start['torch']}, plans "
                         f"{str(plans.get('commit'))[:8]})",
               "stack": f"reclaunch {r['engine']} engine", "family": entry["model"], "gpu": plans["machine"]["gpu"],
               "instance_like": GPU_MACHINE["instance_like"], "nodes": 1, "gpus_per_node": 1,
               "batch_per_gpu": entry["batch"], "precision": entry["precision"],
               "job_stack": STACK_OF_ENGINE[r["engine"]], "optimizer": env["RECLAUNCH_OPTIMIZER"], "model": model,
               "split": "holdout",     # a new source: scored, never fitted, until a person reviews it
               "published": round(r["measured_samples_per_s"], 1),
               "note": f"measured, {r['windows']} windows, spread {r['spread']:.1%}; loader alone "
                       f"{r['loader_only_samples_per_s'] or 0:.0f}/s; host {GPU_MACHINE['vcpus']} vCPUs"}
        out.append("- " + json.dumps(row))   # JSON is YAML flow style
    return out + [f"# kept out of calibration: {i} (engine=ddp: the planner has no ddp stack; its plan "
                  "is the torchrec stack's, a comparison only)" for i in kept_out]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", help="where to write the plans (JSON)")
    ap.add_argument("--smoke", action="store_true", help="the tiny plans of `gpu_check.sh --cpu-smoke`")
    ap.add_argument("--calibration-rows", metavar="JSONL", help="print calibration.yaml rows from a GPU run's "
                    "gpu_check.jsonl (with the plans it carried: OUT)")
    a = ap.parse_args(argv)
    if a.calibration_rows:
        print("\n".join(calibration_rows(Path(a.calibration_rows),
                                         json.loads(Path(a.out or "bench/prepared/gpu_check_plans.json").read_text()))))
        return 0
    if not a.out:
        ap.error("where to write the plans: OUT")
    doc = make(a.smoke)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(doc['runs'])} plans to {a.out} (commit {doc['commit']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
