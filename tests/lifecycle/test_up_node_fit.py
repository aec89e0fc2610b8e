"""Issue 37: `up` refuses a pod that may not fit the modelled node before anything is created,
naming the resource and the numbers (the same check render, up --dry-run and preview run)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from reclaunch.errors import PlanError
from reclaunch.runtime import lifecycle


def test_a_pod_above_the_modelled_node_is_refused_before_anything(world, plan, monkeypatch):
    from reclaunch.manifests import job

    share = job.REQUEST_SHARE
    monkeypatch.setattr(job, "REQUEST_SHARE", Fraction(11, 10))
    asked = []
    with pytest.raises(PlanError, match=r"refusing to start: not every pod can be scheduled: "
                       r"criteo-deepfm/worker \(training\): gpu-spot: cpu: requests \d+, the "
                       r"node has [\d.]+ allocatable") as exc:
        lifecycle.up(plan, world.env(confirm=lambda q: asked.append(q) or True))
    assert exc.value.exit_code == 1
    assert not world.cloud.created and not asked and not world.kube.objects
    monkeypatch.setattr(job, "REQUEST_SHARE", share)   # the share we ship: the same up goes through
    assert lifecycle.up(plan, world.env(), yes=True).state == "Running"
