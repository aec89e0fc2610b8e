"""What `plan` of a cloud spec leaves unimported (issue 25: start-up time): modules it needs only
in cases these examples are not. A guard on the import set, not a timed test; the numbers are in
bench/bench_plan_phases.py and bench/bench_startup.py."""

from __future__ import annotations

import pytest

from tests.planner.test_plan_imports import _hits, loaded

# calibration: cloud: local with a host calibration; bucket_cost: a checkpoint path in a bucket;
# records: measurement records on disk; fabric.pods: rendering pods; stacks.common (via
# stacks.<cloud>.pools): node pools, which the "needs a person" list never reads; difflib: the
# wording of a refused --region. (json cannot be checked here: this harness imports it.)
LAZY = ("reclaunch.planner.calibration", "reclaunch.planner.bucket_cost", "reclaunch.planner.records",
        "reclaunch.fabric.pods", "stacks.common", "stacks.aws.pools", "difflib")


@pytest.mark.parametrize("example", ["aws-deepfm-p4d.yaml", "azure-din-nd96amsr.yaml",
                                     "gcp-dcnv2-a3mega.yaml"])
def test_plan_of_a_cloud_spec_skips_what_it_does_not_use(example):
    lazy = [m.replace("stacks.aws", "stacks." + example.split("-")[0]) for m in LAZY]
    assert not _hits(loaded("plan", f"examples/{example}"), lazy)


def test_the_lazy_modules_load_where_they_are_used():
    bucket = loaded("plan", "--json", "examples/aws-spot-bucket.yaml")
    assert "reclaunch.planner.bucket_cost" in bucket and "reclaunch.planner.calibration" not in bucket


def test_the_re_exported_names_are_the_moved_ones():
    from reclaunch import fabric
    from reclaunch.fabric import pods
    from reclaunch.planner import measured, records

    for name in ("Measurement", "RecordError", "from_dict", "VERSION", "PARTS", "KEY_FIELDS"):
        assert getattr(measured, name) is getattr(records, name)
    assert fabric.pod_requirements is pods.pod_requirements
    assert fabric.PodRequirements is pods.PodRequirements
    from stacks import common, fabric_facts
    from stacks.gcp import accelerators, pools

    assert common.fabric_facts is fabric_facts.fabric_facts and pools.accelerator is accelerators.accelerator
