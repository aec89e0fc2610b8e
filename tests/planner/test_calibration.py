"""Predictions vs published results (reclaunch/planner/data/calibration.yaml).

Every row must be within its tolerance (2x: none beyond, issue 21) and the set must keep the
share within 25% it reached when the constants were fitted (planner.yaml perf.fit). Run with
-s for the ratios; bench/bench_calibration.py prints the table and the leave-one-source-out error.
"""

import math

import pytest

from planner_published import predict, rows, source_of
from reclaunch.catalog import bundled_catalog
from reclaunch.planner import uncertainty
from reclaunch.planner.constants import constants

ROWS = rows()
TOLERANCE = 2.0
# The share of rows within 25% at the last fit (bench/bench_calibration.py); a model change
# that loses ground fails here. The issue's target is 80%: see README "What the numbers stand on".
MIN_WITHIN_25 = 0.8


@pytest.fixture(scope="module")
def ratios():
    cat = bundled_catalog()
    return {r.id: predict(r, cat)[1] for r in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_row_within_tolerance(row, ratios):
    ratio = ratios[row.id]
    print(f"{row.id}: published {row.published / 1e6:.2f}M, ratio {ratio:.2f}")
    tol = float(row.raw.get("tolerance", TOLERANCE))
    assert 1 / tol <= ratio <= tol


def test_share_within_25_percent(ratios):
    within = sum(1 for x in ratios.values() if 0.8 <= x <= 1.25)
    assert within / len(ratios) >= MIN_WITHIN_25, f"{within}/{len(ratios)} within 25%"


def test_the_set_spans_what_issue_21_asks():
    assert len(ROWS) >= 25
    assert len({r.family for r in ROWS}) >= 4
    assert len({r.gpu.split("-")[0] for r in ROWS}) >= 3
    gpus = {r.gpus for r in ROWS}
    assert min(gpus) == 1 and max(gpus) >= 128 and 4 in gpus
    assert len({source_of(r) for r in ROWS}) >= 5
    for r in ROWS:
        assert r.source and r.raw["precision"] in ("fp32", "tf32", "fp16", "bf16")
        assert r.raw["model"]["embedding_dtype"] in ("fp32", "fp16", "bf16", "int8")


def test_rows_are_distinct():
    keys = [(r.source, r.raw["nodes"], r.raw["gpus_per_node"], r.raw["batch_per_gpu"],
             r.raw["precision"], r.raw["execution"], r.gpu, r.published) for r in ROWS]
    assert len(set(keys)) == len(keys)
    assert len({r.id for r in ROWS}) == len(ROWS)


def test_fit_record_and_range():
    f = constants()["perf"]["fit"]
    assert f["rows"] == len(ROWS) and str(f["date"])
    lo, hi = uncertainty.ratios()
    assert 0 < lo < f["ratio_p50"] < hi
    p10, p90 = uncertainty.throughput_range(1e6)
    assert p10 < 1e6 < p90 and math.isclose(p10 * hi, 1e6) and math.isclose(p90 * lo, 1e6)


def test_one_gpu_and_four_gpu_rows_plan_cleanly(ratios):
    by = {r.id: r for r in ROWS}
    cat = bundled_catalog()
    for rid in ("dle-pt-dlrm-1-tf32", "mlperf40-dell-1x4-h100"):
        plan, _ = predict(by[rid], cat)
        assert plan.world_size == by[rid].gpus and plan.throughput_range is not None
