"""The skip rules of tests/needs.py hold: pending inputs really are pending."""

from __future__ import annotations

from reclaunch.catalog import sources
from tests.needs import PENDING_INPUTS


def test_pending_inputs_are_still_missing():
    """Once a requested extract is placed beside the clone, its tests must run: take its name
    out of PENDING_INPUTS (this fails until then, so no check stays skipped by accident)."""
    placed = sorted(n for n in PENDING_INPUTS if sources.source_path(n).exists()
                    and sources.sources_dir() == sources.DEFAULT_DIR)
    assert not placed, f"placed in {sources.DEFAULT_DIR}; remove from tests/needs.py PENDING_INPUTS: {placed}"


def test_every_pending_input_is_one_the_generators_read():
    import importlib

    from reclaunch import clouds

    read: set[str] = set()
    for f in clouds.all_facts():   # each cloud's generator names the extracts it reads
        try:
            gen = importlib.import_module(f"{f.provider.rpartition('.')[0]}.catalog_rows")
        except ModuleNotFoundError:
            continue
        read |= set(gen.SOURCES) | ({gen.PRICES} if hasattr(gen, "PRICES") else set())
    assert read
    assert PENDING_INPUTS <= read, PENDING_INPUTS - read
