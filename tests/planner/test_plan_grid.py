"""`plan`'s text without rich (ui/grid.py, issue 25: start-up time): the shapes rich drew
(HEAVY_HEAD box, centred title and caption, right-aligned numbers, the key/value block), every
value kept when a table is narrowed, and text from a cluster printed as inert text."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.spec import load_spec
from reclaunch.ui import grid
from reclaunch.ui.plan import render_plan

ROOT = Path(__file__).resolve().parents[2]
P4D = ROOT / "examples/aws-deepfm-p4d.yaml"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_boxed_draws_rich_heavy_head_box_with_title_and_caption():
    lines = grid.boxed([("name", "left"), ("rows", "right")], [["a", "1,000"], ["bb", "7"]],
                       width=80, title="tables", caption="2 of 9 shown")
    assert lines == [
        "     tables",
        "┏━━━━━━┳━━━━━━━┓",
        "┃ name ┃  rows ┃",
        "┡━━━━━━╇━━━━━━━┩",
        "│ a    │ 1,000 │",
        "│ bb   │     7 │",
        "└──────┴───────┘",
        "  2 of 9 shown",
    ]


def test_a_table_wider_than_the_width_stacks_columns_and_keeps_every_character():
    name = "Standard_NC24ads_A100_v4"
    rows = [["1", f"azure {name}", "westus3"], ["2", "aws g6.12xlarge", "eu-south-2"]]
    cols = [("#", "right"), ("instance", "left"), ("region", "left")]
    # 45 columns: the instance wraps at its space, every name whole on its line
    lines = grid.boxed(cols, rows, width=45)
    assert max(map(len, lines)) <= 45 and len({len(line) for line in lines}) == 1
    assert any(f"│ {name}" in line for line in lines)
    # 30: too narrow for three columns of whole words: stacked (issue 42), still whole
    lines = grid.boxed(cols, rows, width=30)
    assert max(map(len, lines)) <= 30 and len({len(line) for line in lines}) == 1
    cells = [line.strip("│ ") for line in lines if line.startswith("│")]
    assert name in cells and "westus3" in cells and "eu-south-2" in cells
    # 20: one word longer than any column can be: folded, never cut
    lines = grid.boxed(cols, rows, width=20)
    assert max(map(len, lines)) <= 20
    cells = [c.strip() for line in lines if line.startswith("│") for c in line.split("│")[1:2]]
    assert name in "".join(cells)
    assert "…" not in "".join(lines)


def test_control_characters_are_shown_as_escapes_and_the_box_stays_square():
    lines = grid.boxed([("node", "left")], [["gpu-0\x1b[2J\u202e"]], width=40)
    assert "\x1b" not in "".join(lines) and "│ gpu-0\\x1b[2J\\u202e │" in lines
    assert len({len(line) for line in lines}) == 1


def test_pairs_indent_continuation_lines_under_the_value():
    value = "one two three four five six seven eight nine ten eleven twelve"
    lines = grid.pairs([("cluster", "4 x p4d"), ("startup long", value)], width=40, title="plan: x")
    assert lines[0].strip() == "plan: x"
    assert lines[1] == " cluster       4 x p4d"
    assert lines[2].startswith(" startup long  one two") and len(lines) > 3
    assert all(line.startswith(" " * 15) and len(line) <= 40 for line in lines[3:])
    assert " ".join(line.strip() for line in lines[2:]).replace("startup long  ", "") == value


def test_items_hang_under_their_text_and_never_split_at_a_hyphen():
    lines = grid.items(["alpha beta gamma delta [P10-P90 1 - 2] epsilon"], mark="!", width=24,
                       title="warnings")
    assert lines[0].strip() == "warnings"
    assert lines[1].startswith(" ! alpha") and all(x.startswith("   ") for x in lines[2:])
    assert "[P10-P90" in "\n".join(lines)
    assert grid.wrap("P10-P90 P10-P90", 10) == ["P10-P90", "P10-P90"]


def test_bold_only_when_asked_and_bold_ok_follows_tty_and_no_color(monkeypatch):
    plain = grid.pairs([("fits", "yes")], width=40)
    styled = grid.pairs([("fits", "yes")], width=40, bold=True)
    assert ANSI.search(styled[0]) and not ANSI.search(plain[0])
    assert ANSI.sub("", styled[0]) == plain[0]
    monkeypatch.setattr("sys.stdout", SimpleNamespace(isatty=lambda: True))
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert grid.bold_ok()
    monkeypatch.setenv("NO_COLOR", "1")
    assert not grid.bold_ok()
    monkeypatch.setattr("sys.stdout", SimpleNamespace(isatty=lambda: False))
    monkeypatch.delenv("NO_COLOR")
    assert not grid.bold_ok()


@pytest.fixture(scope="module")
def p4d():
    return make_plan(load_spec(P4D), bundled_catalog())


def test_the_plan_text_keeps_its_labels_values_and_order(p4d):
    text = render_plan(p4d)
    head = text[:text.index("┏")].splitlines()[1:-1]    # up to the first table's title
    labels = [line.split("  ")[0].strip() for line in head if not line.startswith("  ")]
    assert labels == ["cluster", "fabric", "stack", "parallelism", "fits", "throughput", "duration",
                      "startup", "cost on-demand", "cost spot", "line items", "prices", "P10-P90 covers"]
    order = ["memory per GPU (GiB)", "step time (ms)", "sharding per table (TorchRec)",
             "predicted per rank (embedding part of the step)"] + ["warnings"] * bool(p4d.warnings)
    at = [text.index(t) for t in order]
    assert at == sorted(at)
    assert f"of {p4d.world_size} ranks shown (`plan --json` lists all)" in text
    assert "[P10-P90 " in text and "\\[" not in text and "…" not in text
    assert all(len(line) <= 110 for line in text.splitlines())
    assert text.endswith("\n") and not any(line != line.rstrip() for line in text.splitlines())
    assert all(f"- {why}"[:40] in " ".join(text.split()) for why in p4d.sharding.explanation)


def test_text_from_the_cluster_prints_inert(p4d):
    p4d = copy.copy(p4d)
    p4d.offer = SimpleNamespace(node_names=("gpu-0",), source="[bold]gpu-0[/bold] \x1b[31mred\x1b]0;t\x07")
    p4d.warnings = [*p4d.warnings, "[red]not markup[/red]"]
    text = render_plan(p4d)
    assert "\x1b" not in text and "\x07" not in text
    assert "[bold]gpu-0[/bold] \\x1b[31mred\\x1b]0;t\\x07" in text
    assert "! [red]not markup[/red]" in text and "\\[" not in text


def test_the_plan_verb_prints_plain_text_and_the_needs_list():
    from reclaunch.cli import cli

    res = CliRunner().invoke(cli, ["plan", str(P4D)])
    assert res.exit_code == 0, res.output
    title = "plan: criteo-deepfm"     # centred over the 110 columns the text is laid out in
    assert res.output.startswith(" " * ((110 - len(title)) // 2) + title + "\n")
    assert "┡━" in res.output and not ANSI.search(res.output)      # not a terminal: no bold
    assert "\n\nwhat needs a person first" in res.output
