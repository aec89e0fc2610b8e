"""The host facts a plan reads (reclaunch/host.py): pinnable, validated, and the only source.

Issue 20: a golden plan once held this machine's RAM to the byte, so CI on a machine with a few
hundred kB less failed. Every test now plans on the host pinned in tests/conftest.py; these
tests prove that the real machine's RAM, cores and date no longer reach a plan.
"""

from __future__ import annotations

import datetime as dt
import os

import pytest

from reclaunch import host
from reclaunch.errors import UsageError
from reclaunch.planner import make_plan
from reclaunch.spec import load_spec
from tests.conftest import EXAMPLES, PINNED_HOST

LOCAL = str(EXAMPLES / "local-deepfm.yaml")


def test_the_pins_are_read():
    assert host.ram_bytes() == 16 * 2**30
    assert host.cpu_count() == 2
    assert host.today() == dt.date.fromisoformat(PINNED_HOST["RECLAUNCH_TODAY"])


def test_another_machine_plans_the_same(monkeypatch):
    """A machine with other RAM and cores and a clock a year ahead: same local plan."""
    before = make_plan(load_spec(LOCAL)).to_json()
    real_sysconf = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda name: 1234567 if name == "SC_PHYS_PAGES" else real_sysconf(name))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)

    class Later(dt.date):
        @classmethod
        def today(cls):
            return dt.date(2030, 1, 1)
    monkeypatch.setattr(dt, "date", Later)
    assert make_plan(load_spec(LOCAL)).to_json() == before


def test_unpinned_reads_the_machine(monkeypatch):
    for var in PINNED_HOST:
        monkeypatch.delenv(var)
    assert host.ram_bytes() == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert host.cpu_count() >= 1
    assert host.today() == dt.date.today()


def test_unpinned_ram_changes_the_local_plan(monkeypatch):
    # The check above is not vacuous: the local plan does follow the host's memory.
    small = make_plan(load_spec(LOCAL)).memory.capacity_bytes_per_gpu
    monkeypatch.setenv(host.MEMORY_VAR, "32GiB")
    assert make_plan(load_spec(LOCAL)).memory.capacity_bytes_per_gpu == 2 * small


@pytest.mark.parametrize("var,value", [(host.MEMORY_VAR, "lots"), (host.MEMORY_VAR, "0GiB"),
                                       (host.MEMORY_VAR, "1e999"), (host.CPUS_VAR, "0"),
                                       (host.CPUS_VAR, "two"), (host.CPUS_VAR, "9" * 40),
                                       (host.TODAY_VAR, "2026-13-01"), (host.TODAY_VAR, "soon")])
def test_a_bad_pin_is_one_clear_line(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(UsageError, match=var) as exc:
        {host.MEMORY_VAR: host.ram_bytes, host.CPUS_VAR: host.cpu_count, host.TODAY_VAR: host.today}[var]()
    assert exc.value.exit_code == 2


def test_staleness_is_judged_against_the_pinned_day(monkeypatch):
    from dataclasses import replace

    from reclaunch.catalog import bundled_catalog

    o = replace(bundled_catalog().offers[0], price_as_of=dt.date(2026, 11, 1))
    assert not o.is_stale()
    monkeypatch.setenv(host.TODAY_VAR, "2027-12-01")     # the clock a year ahead
    assert o.is_stale()
