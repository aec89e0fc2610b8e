"""Spot reclaims per instance family (issue 38): each AWS instance whose Spot Instance Advisor
bucket is known gets its own rate, the P50 at the bucket's middle and the P90 at its top, so a
long spot job's P90 is not its P50 and p5 is not priced like g6e."""

from __future__ import annotations

from planner_helpers import make_spec

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import cost as costmod
from reclaunch.planner import make_plan

CAT = bundled_catalog()


def test_the_rate_follows_the_instance_familys_bucket():
    s = make_spec(spot={"enabled": True})
    p5 = costmod.reclaim_rates(s, "aws", "p5.48xlarge")
    g6e = costmod.reclaim_rates(s, "aws", "g6e.4xlarge")
    other = costmod.reclaim_rates(s, "aws", "p4de.24xlarge")
    assert p5[0] < other[0] < g6e[0] and p5[0] < p5[1] and g6e[0] < g6e[1]
    assert "p5.48xlarge's bucket 0%-5%" in p5[2] and "aws's default bucket" in other[2]
    stated = make_spec(spot={"enabled": True, "reclaim_rate_per_node_hour": 0.01})
    assert costmod.reclaim_rates(stated, "aws", "p5.48xlarge") == (0.01, 0.01, "spec.spot.reclaim_rate_per_node_hour")


def test_a_long_spot_job_has_a_p90_above_its_p50():
    s = make_spec(nodes=8, spot={"enabled": True}, job={"dataset": {"samples": 2e14}})
    c = make_plan(s, CAT).cost
    assert c.expected_reclaims >= 1
    assert c.spot_p90_usd > c.spot_p50_usd
    assert make_plan(s, CAT).constants["reclaim_rate_source"].startswith("prices.md")
