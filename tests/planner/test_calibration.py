"""Predictions vs the published throughput table (reference/recsys.md): within 2x today.
Run with -s to see the ratios (to tighten the constants later)."""

import pytest

from planner_published import PUBLISHED, predict

TOLERANCE = 2.0


@pytest.mark.parametrize("row", PUBLISHED, ids=[r[0] for r in PUBLISHED])
def test_within_factor_of_published(row):
    plan, ratio = predict(row)
    print(f"{row[0]}: predicted {plan.throughput_samples_per_second / 1e6:.2f}M, "
          f"published {row[1] / 1e6:.2f}M, ratio {ratio:.2f}")
    assert 1 / TOLERANCE <= ratio <= TOLERANCE


def test_dlrm_8x_a100_80gb_headline():
    plan, ratio = predict(PUBLISHED[1])
    assert plan.gpu == "A100-80GB" and plan.world_size == 8
    assert 0.5 <= ratio <= 2.0     # 16.5M samples/s published
