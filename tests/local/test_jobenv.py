from __future__ import annotations



from reclaunch.manifests.env import job_env
from reclaunch.providers.local.provider import entrypoint
from reclaunch.spec import load_spec


def test_example_env_matches_the_trainer_contract(tmp_path, helpers):
    plan = helpers.local_plan(load_spec(helpers.REPO / "examples" / "local-deepfm.yaml"))
    env = job_env(plan, local_root=tmp_path)
    assert env["RECLAUNCH_MODEL"] == "deepfm"
    assert env["RECLAUNCH_BATCH_SIZE"] == "256"
    assert env["RECLAUNCH_TABLE_ROWS"] == "100000,50000,1000"
    assert env["RECLAUNCH_MLP"] == "64,32"
    assert env["RECLAUNCH_EMBEDDING_DIM"] == "16"
    assert env["RECLAUNCH_STEPS"] == "300"                 # 153600 samples / (256 x 2)
    assert env["CHECKPOINT_DIR"] == str(tmp_path / "ckpt")
    assert env["CHECKPOINT_EVERY_MINUTES"] == "0.5"
    assert env["DATA_DIR"] == str(tmp_path / "data")
    assert env["RECLAUNCH_CLUSTER"] == "local-deepfm"
    assert all(isinstance(v, str) for v in env.values())


def test_cluster_paths_and_user_env_wins(helpers):
    spec = helpers.make_spec("envs", env={"RECLAUNCH_BATCH_SIZE": "7", "NCCL_DEBUG": "INFO"})
    plan = helpers.local_plan(spec)
    plan.nccl_env = {"NCCL_DEBUG": "WARN", "NCCL_IB_DISABLE": "1"}
    env = job_env(plan)
    assert env["RECLAUNCH_BATCH_SIZE"] == "7" and env["NCCL_DEBUG"] == "INFO"
    assert env["NCCL_IB_DISABLE"] == "1"
    assert env["CHECKPOINT_DIR"] == "/data/ckpt" and env["DATA_DIR"] == "/data"


def test_entrypoint(helpers):
    import sys

    assert entrypoint(["python", "examples/trainer/train.py"], ["--steps", "3"]) == \
        ["examples/trainer/train.py", "--steps", "3"]
    assert entrypoint(["python", "-m", "pkg.train"], []) == ["--module", "pkg.train"]
    assert entrypoint(["python", "-c", "pass"], []) == ["--no-python", sys.executable, "-c", "pass"]
    assert entrypoint(["/bin/sh", "-c", "exit 1"], []) == ["--no-python", "/bin/sh", "-c", "exit 1"]
