"""Issue 26: one metrics line a job prints cannot crash `status` or `diagnose`: lines, JSON
depth and numbers are bounded, a bad line is skipped and counted, never fatal."""

from __future__ import annotations

import io
import json

import pytest

from reclaunch.runtime.metrics import MAX_LINE, measure, parse_line, parse_lines

GOOD = {"v": 1, "rank": 0, "world_size": 2, "step": 120, "time": 1764480000.0,
        "interval_steps": 20, "samples_per_s": 4567.8, "step_s": 0.056, "loss": 0.61}


def line(**over) -> str:
    return "RECLAUNCH_METRICS " + json.dumps({**GOOD, **over})


HOSTILE = [
    "RECLAUNCH_METRICS " + json.dumps(GOOD).replace('"step": 120', '"step": ' + "9" * 400),
    "RECLAUNCH_METRICS " + json.dumps(GOOD).replace('"step": 120', '"step": ' + "9" * 5000),
    "RECLAUNCH_METRICS " + json.dumps(GOOD).replace('"world_size": 2', '"world_size": 1' + "0" * 400),
    "RECLAUNCH_METRICS " + "[" * 100_000,
    "RECLAUNCH_METRICS " + '{"a":' * 50_000,
    line(samples_per_s=-1e9), line(rank=10**300), line(step=-1), line(step_s=1e300),
    line(peak_mem_bytes=10**400), line(world_size=0), line(interval_steps="20"),
    line(samples_per_s=10**400), line(loss=10**400),
    line(mem_kind="x" * 10) + " " * MAX_LINE,
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_metrics_line_is_rejected_not_raised(text):
    assert parse_line(text) is None
    samples, _, bad = parse_lines([line(), text, line(step=140)])
    assert bad == 1 and [s.step for s in samples] == [120, 140]
    m = measure([line(), text, line(step=140)])
    assert m.malformed == 1 and m.step == 140 and m.world_size == 2


def test_strings_are_bounded_and_good_lines_unchanged():
    s = parse_line(line(nccl_transport="[/bogus]" * 100))
    assert s is not None and len(s.nccl_transport) == 64
    assert parse_line(line()).samples_per_s == 4567.8


def test_diagnose_tables_show_markup_and_escapes_as_text():
    from rich.console import Console

    from reclaunch.ui.diagnose import renderables

    evil = "[/bogus] [link=http://x]y[/link] \x1b]0;t\x07"
    d = {"name": "n", "step": 1, "world_size": 2, "finished": False,
         "rows": [{"what": evil, "planned": 10**400, "measured": 1.0, "unit": "bytes", "note": evil}],
         "ranks": [{"rank": 0, "last_step": 1, "step_s": None, "data_wait_s": None,
                    "fwd_bwd_s": None, "optimizer_s": None, "comm_s": None,
                    "peak_mem_bytes": None, "transport": evil}] * 2,
         "findings": [{"severity": "warning", "title": evil, "what": evil, "fix": evil,
                       "expected": evil, "sources": [evil], "as_of": "2026"}],
         "notes": [evil]}
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=300)
    for r in renderables(d):
        con.print(r)
    out = buf.getvalue()
    assert "\x1b]0;" not in out and "\x1b]8;" not in out and "[/bogus]" in out


def test_measured_brief_never_raises_on_hostile_logs(monkeypatch):
    from reclaunch.runtime import observe

    class P:
        def logs(self, name, rank=None, follow=False):
            return iter([*HOSTILE, line(samples_per_s=1e12)])

    monkeypatch.setattr(observe, "plan_for", lambda name: None)
    brief = observe.measured_brief("x", P())
    assert brief is not None and brief["samples_per_s"] is not None

    class Broken:
        def logs(self, name, rank=None, follow=False):
            raise ArithmeticError("boom")
    assert observe.measured_brief("x", Broken()) is None
