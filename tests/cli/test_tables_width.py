"""Issue 42: `catalog`, `status` and `plan` readable at 80 columns, tested at 80 and 120: no
line past the width, every instance, region and cluster name whole on one line (a narrow
table stacks columns instead of cutting `p5.48xlar` or wrapping `local-deepfm` over 3 lines),
and `--wide` shows every column."""

from __future__ import annotations

import io
import re

import pytest
from click.testing import CliRunner

from reclaunch.cli import cli
from reclaunch.runtime.states import JobStatus
from tests.conftest import EXAMPLES

ANSI = re.compile(r"\x1b\[[0-9;]*m")
WIDTHS = (80, 120)


def _run(width: int, *args: str) -> str:
    res = CliRunner().invoke(cli, list(args), env={"COLUMNS": str(width)})
    assert res.exit_code == 0, res.output
    return ANSI.sub("", res.output)


def _fits(text: str, width: int) -> list[str]:
    lines = text.splitlines()
    assert lines and max(len(line) for line in lines) <= width, \
        [line for line in lines if len(line) > width][:3]
    assert "…" not in text
    return lines


def _whole(lines: list[str], names: set[str]) -> None:
    """Each name on one line, whole: one cell's text, or a word of it (not folded or cut)."""
    cells = {c.strip() for line in lines for c in re.split(r"[│┃]", line)}
    words = {w for c in cells for w in c.split()}
    missing = sorted(n for n in names if n not in cells and n not in words)
    assert not missing, missing[:5]


@pytest.mark.parametrize("width", WIDTHS)
def test_catalog_keeps_every_instance_and_region_whole(width: int) -> None:
    from reclaunch.catalog import load_catalog
    from reclaunch.ui.catalog import select_offers

    rows = select_offers(load_catalog(), gpu="H100")
    lines = _fits(_run(width, "catalog", "--gpu", "H100"), width)
    _whole(lines, {o.instance_type for o in rows} | {o.region for o in rows})
    wide = _run(width, "catalog", "--gpu", "H100", "--wide")
    for col in ("fabric", "spot range", "AZs"):       # --wide drops nothing
        assert col in wide


@pytest.mark.parametrize("width", WIDTHS)
def test_status_keeps_names_whole_and_the_message_wraps(width: int) -> None:
    from rich.console import Console

    from reclaunch.ui.status import status_table

    rows = [JobStatus(name="local-deepfm", cloud="local", state="Running",
                      message="2 nodes running; checkpoints in /home/someone/.reclaunch/local/"
                              "local-deepfm/ckpt every 0.5 min",
                      nodes=[{"capacity_type": "spot"}] * 2, elapsed_seconds=95.0, spend_usd=0.0,
                      details={"measured": {"samples_per_s": 18234.0, "planned_samples_per_s": 19200.0,
                                            "projected_usd": 0.0, "planned_usd": 0.0}}),
            JobStatus(name="criteo-deepfm-ap-northeast-1", cloud="aws", state="Succeeded",
                      nodes=[{"capacity_type": "on-demand"}] * 4, elapsed_seconds=7300.0,
                      spend_usd=123.4)]
    buf = io.StringIO()
    Console(file=buf, width=width).print(status_table(rows, width=width))
    lines = _fits(buf.getvalue(), width)
    _whole(lines, {"local-deepfm", "criteo-deepfm-ap-northeast-1", "Running", "Succeeded",
                   "18,234 (plan 19,200)"} if width >= 120 else
           {"local-deepfm", "criteo-deepfm-ap-northeast-1", "Running", "Succeeded"})
    wide = io.StringIO()
    Console(file=wide, width=1000).print(status_table(rows, width=None))
    assert max(len(line) for line in wide.getvalue().splitlines()) > width   # one line a row


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("example", ["aws-deepfm-p4d.yaml", "local-deepfm.yaml",
                                     "azure-din-nd96amsr.yaml"])
def test_plan_fits_the_terminal(width: int, example: str) -> None:
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    plan = make_plan(load_spec(EXAMPLES / example))
    lines = _fits(_run(width, "plan", str(EXAMPLES / example)), width)
    _whole(lines, {t.name for t in plan.spec.model.tables})
    assert any(line.strip() == f"plan: {plan.name}" for line in lines)


def test_stack_merges_preferred_pairs_first_and_never_prose() -> None:
    from reclaunch.ui.grid import stack

    cols = [("instance", "left"), ("region", "left"), ("price", "right"), ("message", "left")]
    rows = [["Standard_ND96isr_H100_v5", "northamerica-northeast1", "98.32", "a long message " * 4]]
    got, cells = stack(cols, rows, 60, prose=("message",))
    assert [h for h, _ in got] == ["instance\nregion", "price", "message"]
    assert cells[0][0] == "Standard_ND96isr_H100_v5\nnorthamerica-northeast1"
    same, _ = stack(cols, rows, 200, prose=("message",))
    assert same == cols
