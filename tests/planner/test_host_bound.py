"""TorchRec's host work is structure, not one constant (planner review 2026-12-03, defect 1).

The old fit put 12.3 ms of fixed "host work per step" under every TorchRec step, more than its
own source's whole step (torchrec_dlrm README @045094c5: 284,615 samples/s at 256 per GPU on
8 x A100 = 7.2 ms including the loader), so an 8 x H100 planned exactly as slow as an
8 x A100-40GB. Now the fixed part is bounded by that whole step, the loader's cost is per sample
and only on the step when the trainer has no loader workers, and a host-bound plan says so."""

from __future__ import annotations

import pytest

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.planner.constants import constants
from reclaunch.planner.fit import FREE
from reclaunch.spec import Spec

CAT = bundled_catalog()


def _plan(instance: str, **job):
    return make_plan(Spec.model_validate({
        "name": "t", "cloud": "aws", "region": "us-east-1", "nodes": 1, "gpus_per_node": 8,
        "instance_type": instance, "model": {"preset": "dlrm"},
        "job": {"image": "x", "command": ["x"], "batch_size": 8192, "dataset": {"samples": 4.2e9}, **job}}), CAT)


def test_the_fixed_host_work_is_bounded_by_the_published_whole_step():
    bound = dict(((p, hi) for p, _, hi in FREE))[("step_overhead_seconds", "torchrec")]
    assert bound <= 7.2e-3
    assert constants()["perf"]["step_overhead_seconds"]["torchrec"] <= bound


@pytest.mark.parametrize("workers", [None, 0])
def test_an_h100_node_never_plans_slower_than_an_a100_node(workers):
    job = {} if workers is None else {"num_workers": workers}
    a100, h100 = _plan("p4d.24xlarge", **job), _plan("p5.48xlarge", **job)
    assert h100.throughput_samples_per_second >= a100.throughput_samples_per_second
    if workers is None:
        assert h100.throughput_samples_per_second > a100.throughput_samples_per_second


def test_the_loader_cost_is_per_sample_and_leaves_the_step_with_workers():
    small, big = _plan("p4d.24xlarge", num_workers=0, batch_size=1024), _plan("p4d.24xlarge", num_workers=0)
    grew = big.step.host_seconds - small.step.host_seconds
    with_workers = _plan("p4d.24xlarge")
    assert grew > 0 and with_workers.step.host_seconds < big.step.host_seconds - 0.9 * grew


def test_a_host_bound_plan_says_what_sets_it_and_how_sure():
    p = _plan("p5.48xlarge", num_workers=0)
    w = next(w for w in p.warnings if w.startswith("host-bound"))
    assert "batches built on the training thread" in w and "torchrec per-step work" in w
    assert "fitted on one source" in w and "num_workers" in w
