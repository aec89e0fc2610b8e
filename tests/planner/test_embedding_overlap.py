"""job.embedding_overlap: a stack that runs the embedding lookups and their all-to-all beside
the dense compute (HugeCTR's intra/inter-iteration overlap) is costed by the longer path, not
the sum; the sharding search rates its plans the same way."""

from __future__ import annotations

import pytest
from planner_helpers import make_spec
from pydantic import ValidationError

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.planner.perf import embedding_path


def test_embedding_path_sums_or_takes_the_longer():
    assert embedding_path(1.0, 0.5, 2.0, "input") == (3.5, 0.5)
    assert embedding_path(1.0, 0.5, 2.0, "full") == (2.0, 0.0)        # hidden behind dense
    assert embedding_path(2.0, 1.0, 2.5, "full") == pytest.approx((3.0, 0.5))   # half shows
    assert embedding_path(3.0, 1.0, 2.0, "full") == pytest.approx((4.0, 1.0))   # all of it shows


def test_a_full_overlap_plan_is_the_longer_path_plus_the_rest():
    cat = bundled_catalog()
    # a captured step (cuda-graph): the GPU's path, not the host issuing it, sets the pace
    spec = make_spec(nodes=2, model={"preset": "dlrm"}, job={"batch_size": 8192, "stack": "cuda-graph"})
    base = make_plan(spec, cat)
    full = make_plan(make_spec(nodes=2, model={"preset": "dlrm"},
                               job={"batch_size": 8192, "stack": "cuda-graph",
                                    "embedding_overlap": "full"}), cat)
    assert base.spec.job.embedding_overlap == "input"
    assert full.throughput_model_samples_per_second > base.throughput_model_samples_per_second
    s = full.step
    exposed_ar = s.exposed_comm_seconds - embedding_path(
        s.embedding_seconds, s.alltoall_seconds, s.dense_compute_seconds, "full")[1]
    device = (max(s.embedding_seconds + s.alltoall_seconds, s.dense_compute_seconds) + exposed_ar)
    assert s.total_seconds == pytest.approx(max(device, s.host_seconds))
    assert full.to_json()["constants"]["embedding_overlap"] == "full"
    # a one-GPU job has no all-to-all, but its lookups still run beside the dense layers
    # (a captured step: the GPU, not the host issuing the step, sets the pace)
    one = dict(nodes=1, gpus_per_node=1, instance_type="p5.4xlarge")
    a = make_plan(make_spec(**one, job={"batch_size": 65536, "stack": "cuda-graph"}), cat)
    b = make_plan(make_spec(**one, job={"batch_size": 65536, "stack": "cuda-graph",
                                        "embedding_overlap": "full"}), cat)
    assert b.step.total_seconds < a.step.total_seconds


def test_an_unknown_overlap_is_refused():
    with pytest.raises(ValidationError, match="embedding_overlap"):
        make_spec(job={"embedding_overlap": "sometimes"})


def test_the_plan_text_says_the_step_parts_overlap():
    from reclaunch.ui.plan import render_plan

    cat = bundled_catalog()
    full = make_plan(make_spec(job={"embedding_overlap": "full"}), cat)
    assert "embedding_overlap: full" in render_plan(full, width=200)
    assert "embedding_overlap: full" not in render_plan(make_plan(make_spec(), cat), width=200)


def test_full_overlap_with_the_reference_trainer_is_flagged():
    cat = bundled_catalog()
    ref = make_plan(make_spec(job={"embedding_overlap": "full",
                                   "command": ["python", "examples/trainer/train.py"]}), cat)
    assert any("embedding_overlap" in w and "reference trainer" in w for w in ref.warnings)
    own = make_plan(make_spec(job={"embedding_overlap": "full", "command": ["python", "/app/hugectr_train.py"]}), cat)
    assert not any("embedding_overlap" in w for w in own.warnings)
