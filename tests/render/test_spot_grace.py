"""Launch review 3: a spot pod's grace is what its cloud really leaves a reclaimed pod (the
cloud's facts: AWS 120 s, GKE 105 s on our spot pools, AKS 30 s), not AWS's 2 minutes on every
cloud, so torchrun stops the workers while the node still exists; where that is short, `plan`
says only the periodic checkpoints protect the work; GKE's spot pools get the extended
termination the notice counts on."""

from __future__ import annotations

import pytest
import yaml

from reclaunch import clouds
from reclaunch.manifests.job import GRACE_SECONDS, render
from reclaunch.planner import make_plan
from reclaunch.spec import parse_spec
from tests.conftest import EXAMPLES

FILES = {"aws": "aws-deepfm-p4d.yaml", "gcp": "gcp-dcnv2-a3mega.yaml",
         "azure": "azure-din-nd96amsr.yaml"}


def plan_for(cloud: str, spot: bool):
    path = EXAMPLES / FILES[cloud]
    doc = yaml.safe_load(path.read_text())
    doc["spot"] = {"enabled": spot}
    if spot and doc.get("storage", {}).get("kind") in (None, "none"):
        doc["storage"] = {"kind": "bucket"}
        doc["job"]["checkpoint"]["path"] = {"aws": "s3://b/ck", "gcp": "gs://b/ck",
                                            "azure": "az://b/ck"}[cloud]
    return make_plan(parse_spec(yaml.safe_dump(doc), path.name))


def grace(plan) -> tuple[int, int]:
    job = next(o for o in render(plan) if o["kind"] == "PyTorchJob")
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        pod = spec["template"]["spec"]
        env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
        return pod["terminationGracePeriodSeconds"], int(env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"])
    raise AssertionError("no replica")


@pytest.mark.parametrize("cloud,seconds", [("aws", 120), ("gcp", 105), ("azure", 30)])
def test_a_spot_pods_grace_is_its_clouds_notice(cloud, seconds):
    assert clouds.get(cloud).planner["reclaim_notice_seconds"] == seconds
    assert grace(plan_for(cloud, True)) == (seconds, seconds - 5)
    assert grace(plan_for(cloud, False)) == (GRACE_SECONDS, GRACE_SECONDS - 5)


@pytest.mark.parametrize("cloud,short", [("aws", False), ("gcp", False), ("azure", True)])
def test_plan_says_when_only_periodic_checkpoints_protect(cloud, short):
    plan = plan_for(cloud, True)
    said = [w for w in plan.warnings if "only the periodic checkpoints" in w]
    assert bool(said) == short, plan.warnings
    if short:
        assert "30 s from SIGTERM to SIGKILL" in said[0]
    assert not [w for w in plan_for(cloud, False).warnings if "only the periodic" in w]
