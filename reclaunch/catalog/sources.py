"""Where the catalog generators read other projects' files from (issue 23 item 7).

The SkyPilot catalog extracts the generators read are copies of another project's files, so
they are not package data: they live beside the clone, in `../shared/reference/catalog-sources/`
(CI runs with a copy of shared/ next to the checkout). RECLAUNCH_CATALOG_SOURCES moves that
folder (a worktree whose parent has no shared/). Only the generators and the data tests that
re-derive rows read them; nothing on the CLI path does.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "RECLAUNCH_CATALOG_SOURCES"
# reclaunch/catalog/sources.py -> the repository root is three levels up.
DEFAULT_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "catalog-sources"


def sources_dir() -> Path:
    return Path(os.environ[ENV]) if os.environ.get(ENV) else DEFAULT_DIR


def source_path(name: str) -> Path:
    """The path of one extract in the sources folder (it may not exist: callers say so)."""
    return sources_dir() / name


# The extracts each generator reads by default are its own (SOURCES in providers/<cloud>/
# catalog_rows.py), all in this folder. Each is the named rows of one file of another project
# at one commit; the *_sizes files add the rows of the 1-, 2- and 4-GPU and B200 types (issue
# 27) from the same commit as the file before them, so the date that commit's prices are known
# by holds for them too.


def defaults(names: tuple[str, ...]) -> list[Path]:
    return [source_path(n) for n in names]


def read_csv_rows(paths) -> list[dict[str, str]] | None:
    """The rows of every file, in order; None (after one line naming the missing file) when a
    file is absent, so a generator exits 2 instead of writing a catalog from half its sources."""
    import csv
    import sys

    rows: list[dict[str, str]] = []
    for p in paths:
        p = Path(p)
        if not p.is_file():
            print(f"{p}: no such source file (the extracts live in ../shared/reference/"
                  f"catalog-sources/ beside the clone; set {ENV} to move them)", file=sys.stderr)
            return None
        with p.open(newline="") as fh:
            rows.extend(csv.DictReader(fh))
    return rows
