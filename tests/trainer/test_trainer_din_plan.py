"""DIN under the planner's own RECLAUNCH_SHARDING, two behaviour-sequence tables.

Regression: the planner gives small sequence tables data_parallel (TorchRec's dense kernel), and
fbgemm's CPU dense TBE pools every lookup, so the EmbeddingCollection came back one row per
bag and construct_jagged_tensors failed ("split_with_sizes expects split_sizes to sum ...").
The fallback sharding (no RECLAUNCH_SHARDING) never hit it; these tests run the real plan.
"""
import json
import re
import subprocess

import pytest
from tests.needs import need_module

import sharding
from trainer_helpers import clean_env, run_single, torchrun_cmd

need_module("torchrec", "local")

SPEC = """\
name: din-tiny
cloud: local
nodes: 2
gpus_per_node: 1
storage: {{kind: hostpath}}
job:
  command: [python, examples/trainer/train.py]
  args: [--model, din]
  batch_size: 32
  precision: fp32
  optimizer: adagrad
  dataset: {{samples: 3200, epochs: 1}}
model:
  preset: din
  embedding_dim: 8
  sharding: {pin}
  tables:
    - {{name: user_id, rows: 50}}
    - {{name: item_id, rows: 200, pooling_factor: 6}}
    - {{name: category_id, rows: 30, pooling_factor: 6}}
  mlp: [16, 8]
"""


def planned_env(tmp_path, pin: str) -> dict[str, str]:
    """The job env reclaunch itself renders for the tiny DIN spec (planner -> job_env)."""
    from reclaunch.manifests.env import job_env
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    path = tmp_path / "din.yaml"
    path.write_text(SPEC.format(pin=pin))
    env = {k: v for k, v in job_env(make_plan(load_spec(str(path)))).items()
           if k.startswith("RECLAUNCH_") and k != "RECLAUNCH_STEPS"}
    doc = json.loads(env["RECLAUNCH_SHARDING"])
    seq = [t for t in doc["tables"] if t["sequence"]]
    assert [t["name"] for t in seq] == ["item_id", "category_id"], doc
    env.update(RECLAUNCH_STEPS="4", RECLAUNCH_LOG_EVERY="2", CHECKPOINT_DIR=str(tmp_path / "ckpt"))
    return env


def _done(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("done steps=4 ")]


@pytest.mark.timeout(240)
def test_din_single_process_runs_the_planners_auto_plan(tmp_path):
    env = planned_env(tmp_path, "auto")
    doc = json.loads(env["RECLAUNCH_SHARDING"])
    # the case that broke: the planner replicates the small sequence tables (dense kernel)
    assert {(t["sharding_type"], t["compute_kernel"]) for t in doc["tables"] if t["sequence"]} == {
        ("data_parallel", "dense")}, doc
    r = run_single("--model", "din", timeout=200, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert len(_done(out)) == 1, out[-3000:]
    assert "sharding=RECLAUNCH_SHARDING" in out
    assert re.search(r"item_id:table_wise\[0\].*category_id:table_wise\[0\]", out), out[-3000:]
    assert "sequence table item_id: data_parallel/dense -> table_wise[0]/fused on CPU" in out


@pytest.mark.timeout(300)
def test_din_two_ranks_gloo_table_wise_by_the_plan(tmp_path):
    env = planned_env(tmp_path, "table_wise")
    doc = json.loads(env["RECLAUNCH_SHARDING"])
    assert {t["name"]: (t["sharding_type"], t["ranks"]) for t in doc["tables"]} == {
        "user_id": ("table_wise", [0]), "item_id": ("table_wise", [0]), "category_id": ("table_wise", [1])}, doc
    r = subprocess.run(torchrun_cmd(2, "--model", "din"), env=clean_env(**env), capture_output=True,
                       text=True, timeout=280)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert len(_done(out)) == 1, out[-3000:]
    assert "item_id:table_wise[0] category_id:table_wise[1]" in out
    assert "world_size=2" in out and "on CPU (fbgemm" not in out     # executed as planned, no change


def _plan(kind, kernel, ranks, dim=8):
    return sharding.Plan([sharding.Table("u", 10, 8, "u", "table_wise", "fused", [1]),
                          sharding.Table("h", 20, dim, "h", kind, kernel, ranks, 6.0, True),
                          sharding.Table("c", 20, dim, "c", kind, kernel, ranks, 6.0, True)], 2, "RECLAUNCH_SHARDING")


@pytest.mark.timeout(30)
def test_cpu_sequence_tables_go_fused_and_cuda_keeps_the_plan():
    plan = _plan("data_parallel", "dense", [])
    cpu = sharding.for_cpu_sequences(plan, "cpu", fused_ok=True)
    assert [(t.sharding_type, t.compute_kernel, t.ranks) for t in cpu.tables] == [
        ("table_wise", "fused", [1]), ("table_wise", "fused", [0]), ("table_wise", "fused", [1])]
    assert len(cpu.notes) == 2 and plan.tables[1].sharding_type == "data_parallel"
    assert sharding.for_cpu_sequences(plan, "cuda", fused_ok=False) is plan
    tw = sharding.for_cpu_sequences(_plan("table_wise", "dense", [1]), "cpu", fused_ok=True)
    assert [(t.compute_kernel, t.ranks) for t in tw.sequences] == [("fused", [1]), ("fused", [1])]
    fused = _plan("table_wise", "fused", [0])
    assert sharding.for_cpu_sequences(fused, "cpu", fused_ok=False).notes == []
    with pytest.raises(sharding.PlanError, match="optimizer sgd, adagrad or rowwise_adagrad"):
        sharding.for_cpu_sequences(plan, "cpu", fused_ok=False)
    with pytest.raises(sharding.PlanError, match="divisible by 4"):
        sharding.for_cpu_sequences(_plan("data_parallel", "dense", [], dim=6), "cpu", fused_ok=True)
