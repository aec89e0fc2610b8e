"""A spot job's pods tolerate exactly the spot taints of their own cloud's managed pools (its
facts' spot_tolerations), never another cloud's (issue 37: AWS pods carried the AKS and GKE
ones)."""

from __future__ import annotations

import pytest
import yaml

from reclaunch import clouds
from reclaunch.manifests.job import GPU_TOLERATION, render
from reclaunch.planner import make_plan
from reclaunch.spec import parse_spec
from tests.conftest import EXAMPLES

FIRST_EXAMPLE = {}
for _p in sorted(EXAMPLES.glob("*.yaml")):
    FIRST_EXAMPLE.setdefault((yaml.safe_load(_p.read_text()) or {}).get("cloud"), _p)
SPOT_CLOUDS = [c for c in clouds.names() if c in FIRST_EXAMPLE and clouds.get(c).kind != "own"]


def _tolerations(objs) -> list[list[dict]]:
    job = next(o for o in objs if o["kind"] == "PyTorchJob")
    return [spec["template"]["spec"].get("tolerations", [])
            for spec in job["spec"]["pytorchReplicaSpecs"].values()]


def test_every_cloud_with_a_stack_is_covered():
    import stacks

    with_stack = {c for c in clouds.names() if stacks.package_name(c)}
    assert with_stack and with_stack <= set(SPOT_CLOUDS)


@pytest.mark.parametrize("cloud", SPOT_CLOUDS)
def test_spot_pods_tolerate_only_their_own_clouds_spot_taints(cloud):
    path = FIRST_EXAMPLE[cloud]
    doc = yaml.safe_load(path.read_text())
    doc["spot"] = {"enabled": True}
    plan = make_plan(parse_spec(yaml.safe_dump(doc), path.name))
    assert plan.spot
    own = [dict(t) for t in clouds.get(cloud).spot_tolerations]
    for tols in _tolerations(render(plan)):
        assert [t for t in tols if t != GPU_TOLERATION] == own
