"""Catalog load: the bundled rows, and a user overlay of every row (what a full `catalog
refresh` leaves), read the way `validate` and `plan` read them, next to the general path
(csv.DictReader + parse_offer per row) the fast reader must equal.

    python bench/bench_catalog_load.py [N]     # median in-process CPU ms of N runs (default 15)

Prints numbers; asserts nothing (tests/catalog/test_reader.py holds the equality).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reclaunch import catalog  # noqa: E402
from reclaunch.catalog import overlay  # noqa: E402
from reclaunch.catalog.reader import read_offers  # noqa: E402


def cpu_ms(fn, n: int) -> float:
    runs = []
    for _ in range(n):
        t = time.process_time()
        fn()
        runs.append((time.process_time() - t) * 1000)
    return statistics.median(runs)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    text = catalog._bundled_text("instances.csv")
    with tempfile.TemporaryDirectory() as tmp:
        over = Path(tmp) / "instances.csv"
        bundled = catalog.bundled_catalog()
        catalog.write_rows(over, [dataclasses.replace(o, origin="overlay") for o in bundled.offers])
        gpus = set(bundled.gpus)

        def bundled_load():
            catalog._bundled.cache_clear()
            catalog.load_catalog(overlay=False)

        cases = {
            "bundled rows: read_offers": lambda: read_offers(text),
            "bundled rows: DictReader + parse_offer": lambda: [catalog.parse_offer(r) for r in catalog._read_rows(text)],
            "load_catalog(), no overlay": bundled_load,
            "overlay of every row: catalog.read_overlay": lambda: catalog.read_overlay(over),
            "overlay of every row: dict per row": lambda: overlay.read_overlay(over, catalog.parse_offer, gpus),
            "load_catalog() with that overlay": lambda: catalog.load_catalog(overlay_dir=Path(tmp)),
        }
        print(f"{len(bundled.offers)} bundled rows; median in-process CPU of {n} runs")
        with contextlib.redirect_stderr(io.StringIO()):   # rows without a price warn once
            for name, fn in cases.items():
                print(f"  {cpu_ms(fn, n):7.2f} ms  {name}")


if __name__ == "__main__":
    main()
