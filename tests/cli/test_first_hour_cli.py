"""Issue 25: output a new user can act on (help texts, make demo, money)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_no_help_text_cites_files_the_user_does_not_have() -> None:
    from click.testing import CliRunner

    from reclaunch.cli import cli

    def walk(group, path):
        for name, cmd in getattr(group, "commands", {}).items():
            yield [*path, name]
            yield from walk(cmd, [*path, name])

    for args in [[], *walk(cli, [])]:
        out = CliRunner().invoke(cli, [*args, "--help"]).output
        assert "design.md" not in out and "CONTRACTS.md" not in out, args


def test_make_demo_ends_with_the_next_command() -> None:
    text = (ROOT / "Makefile").read_text()
    demo = text[text.index("\ndemo:"):].split("\n\n")[0]
    assert "source $(VENV)/bin/activate" in demo and "$(BIN)/reclaunch" in demo
    assert demo.strip().splitlines()[-1].startswith("\t@echo")


@pytest.mark.parametrize("value, text", [(0.0, "$0"), (0.004, "<$0.01"), (3.456, "$3.46"),
                                         (9.99, "$9.99"), (10.2, "$10"), (1234.5, "$1,234"),
                                         (None, "no price")])
def test_money_is_never_zero_for_a_real_cost(value, text) -> None:
    from reclaunch.ui.money import usd

    assert usd(value) == text


def test_plan_line_items_never_print_zero_for_a_real_cost() -> None:
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec
    from reclaunch.ui.plan import render_plan

    text = render_plan(make_plan(load_spec(ROOT / "examples/aws-deepfm-p4d.yaml"), load_catalog()))
    assert "$0.00" not in text and "0 USD" not in text
