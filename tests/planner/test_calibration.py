"""Predictions vs published results (reclaunch/planner/data/calibration.yaml).

The rows of held-out sources (`split: holdout`, the first set; `split: review`, the planner
review's independent rows) are never fitted (bench/bench_calibration.py fits the others). Issue
38 asks that at least 70% of them are predicted within 1.5x, none beyond 2x and that the plan's
own P10-P90 range holds at least 80% of them; bench_calibration.py prints where each set stands.
The test holds the recorded result of each set (planner.yaml perf.fit.holdout, .review), so a
change that loses ground fails here. Every fit row must be within its tolerance (2x unless the
row says why not). Run with -s for the ratios.
"""

import math

import pytest

from planner_published import predict, rows, source_of
from reclaunch.planner.published import HELD_OUT_SETS, fit_rows, held_out_rows
from reclaunch.catalog import bundled_catalog
from reclaunch.planner import uncertainty
from reclaunch.planner.constants import constants

ROWS = rows()
FIT = fit_rows()
HELD = held_out_rows()
TOLERANCE = 2.0


@pytest.fixture(scope="module")
def plans():
    cat = bundled_catalog()
    return {r.id: predict(r, cat) for r in ROWS}


@pytest.mark.parametrize("row", FIT, ids=[r.id for r in FIT])
def test_fit_row_within_tolerance(row, plans):
    ratio = plans[row.id][1]
    print(f"{row.id}: published {row.published / 1e6:.2f}M, ratio {ratio:.2f}")
    tol = float(row.raw.get("tolerance", TOLERANCE))
    assert tol == TOLERANCE or row.raw.get("note"), f"{row.id}: a wider tolerance says why (note)"
    assert 1 / tol <= ratio <= tol


@pytest.mark.parametrize("split", sorted(HELD_OUT_SETS))
def test_held_out_sources_hold_their_ground(plans, split):
    rs = held_out_rows(split)
    ratios = [plans[r.id][1] for r in rs]
    within = sum(1 for x in ratios if 1 / 1.5 <= x <= 1.5)
    beyond = [r.id for r, x in zip(rs, ratios) if not 0.5 <= x <= 2.0]
    inside = 0
    for r in rs:
        lo, hi = plans[r.id][0].throughput_range
        inside += lo <= r.published <= hi
    print(f"held out, {split}: {within}/{len(rs)} within 1.5x, beyond 2x: {beyond}, "
          f"in the plan's range: {inside}/{len(rs)}")
    rec = constants()["perf"]["fit"][split]
    assert rec["rows"] == len(rs)
    assert within >= rec["within_1_5x"] and inside >= rec["in_range"] and len(beyond) <= rec["beyond_2x"]
    if split == "holdout":
        assert all(r.startswith("de-") for r in beyond), beyond   # the one source still beyond 2x


def test_the_set_spans_what_issue_38_asks():
    assert len(FIT) + len(HELD) >= 60 and len(ROWS) - len(FIT) - len(HELD) <= 2 and len({source_of(r) for r in ROWS}) >= 10
    assert sum(r.gpus >= 16 for r in ROWS) >= 10 and sum(r.gpus <= 4 for r in ROWS) >= 10
    fit_src, held_src = {source_of(r) for r in FIT}, {source_of(r) for r in HELD}
    assert len(held_src) >= 3 and not fit_src & held_src      # held out by source, never fitted
    assert sum(r.gpus >= 16 for r in HELD) >= 3 and sum(r.gpus <= 4 for r in HELD) >= 3
    assert len({r.family for r in ROWS}) >= 4
    assert {"A100", "H100", "H200", "B200"} <= {r.gpu.split("-")[0] for r in ROWS}
    for r in ROWS:
        assert r.source and r.raw["precision"] in ("fp32", "tf32", "fp16", "bf16")
        assert r.raw["model"]["embedding_dtype"] in ("fp32", "fp16", "bf16", "int8")
        assert r.raw["job_stack"] and r.split in ("fit", *HELD_OUT_SETS)


def test_rows_are_distinct():
    keys = [(r.source, r.raw["nodes"], r.raw["gpus_per_node"], r.raw["batch_per_gpu"],
             r.raw["precision"], r.raw["job_stack"], r.raw.get("execution"), r.gpu, r.published,
             str(r.raw["model"])) for r in ROWS]
    assert len(set(keys)) == len(keys)
    assert len({r.id for r in ROWS}) == len(ROWS)


def test_fit_record_and_range():
    f = constants()["perf"]["fit"]
    assert f["rows"] == len(FIT) and str(f["date"])
    assert sum(f[s]["rows"] for s in HELD_OUT_SETS) == len(HELD)
    lo, hi = uncertainty.ratios()
    assert 0 < lo < f["ratio_p50"] < hi
    p10, p90 = uncertainty.throughput_range(1e6)
    assert p10 < 1e6 < p90 and math.isclose(p10 * hi, 1e6) and math.isclose(p90 * lo, 1e6)


def test_one_gpu_and_four_gpu_rows_plan_cleanly(plans):
    by = {r.id: r for r in ROWS}
    for rid in ("dle-pt-dlrm-1-tf32", "mlperf40-dell-1x4-h100"):
        plan, _ = plans[rid]
        assert plan.world_size == by[rid].gpus and plan.throughput_range is not None
