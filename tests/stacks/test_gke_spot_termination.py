"""Launch review 3: GKE gives a Spot node's pods 15 s unless the pool extends its termination;
our spot pools do, to the 105 s the gcp facts' reclaim notice (and so the pods' grace) counts on."""

from __future__ import annotations

import pytest

from tests.render.test_spot_grace import plan_for


@pytest.mark.timeout(300)
def test_gke_spot_pools_extend_the_termination_the_notice_counts_on():
    """120 s in all (one of the values GKE takes: 0, 30, 120), 15 of them for system pods; the
    on-demand pool is left alone (GKE takes the fields on Spot and preemptible pools only)."""
    from reclaunch.providers import preview_plan

    res = preview_plan(plan_for("gcp", True))
    pools = {r["name"]: r["inputs"]["nodeConfig"] for r in res
             if r["type"] == "gcp:container/nodePool:NodePool"}
    spot = [cfg for cfg in pools.values() if cfg.get("spot")]
    assert spot and all(cfg["kubeletConfig"] == {"shutdownGracePeriodSeconds": 120,
                                                 "shutdownGracePeriodCriticalPodsSeconds": 15}
                        for cfg in spot), pools
    assert all(not cfg.get("kubeletConfig") for cfg in pools.values() if not cfg.get("spot"))
