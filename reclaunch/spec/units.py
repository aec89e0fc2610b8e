"""Counts and sizes as people write them: 1e6, 1_000_000, 4.2e9, "80GB", "100TiB"."""

from __future__ import annotations

import math
import re

# A pattern, not a compiled object: `re` compiles (and caches) it on the first size given as
# text, so a spec without one never pays for it (issue 25: start-up time).
_SIZE = r"^\s*([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*([KMGTPE]?)(i?)(B?)\s*$"
MAX_SIZE = 2**70   # 1 ZiB: past any storage; keeps every size a float-safe number
_POW = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}

COUNT_JSON_SCHEMA = {
    "anyOf": [
        {"type": "integer"},
        {"type": "number"},
        {"type": "string", "pattern": r"^\s*[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?\s*$"},
    ]
}
def parse_count(value: object) -> int:
    """An integral count. Floats and strings in e-notation are fine if they are whole."""
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        num = value
    elif isinstance(value, str):
        text = value.strip().replace("_", "")
        if not text:
            raise ValueError("expected a number, got an empty string")
        try:
            num = int(text) if text.isdigit() else float(text)
        except ValueError:
            raise ValueError(f"expected a number like 1000000, 1e6 or 1_000_000, got {value!r}") from None
        if isinstance(num, int):
            return num
    else:
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if not math.isfinite(num):
        raise ValueError(f"expected a finite number, got {value!r}")
    if num != int(num):
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(num)


def parse_size(value: object) -> int:
    """Bytes. "80GB" is decimal (8e10), "80GiB" binary; a bare number is bytes (the planner's
    own data files; a spec's sizes go through parse_spec_size)."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 100GiB, got a boolean")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"expected a non-negative size, got {value!r}")
        if value > MAX_SIZE:
            raise ValueError(f"size {str(value)[:20]}... is too large")
        return int(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a size such as 100GiB, got {type(value).__name__}")
    m = re.match(_SIZE, value, re.I)
    if not m:
        raise ValueError(f"expected a size such as 80GB, 1.2TiB or 500Gi, got {value!r}")
    num, prefix, binary, _ = m.groups()
    base = 1024 if binary else 1000
    result = float(num) * base ** _POW[prefix.upper()]
    if not math.isfinite(result) or result > MAX_SIZE:
        raise ValueError(f"size {value!r} is too large")
    return int(result)


# Every size in a spec (storage.size, job.image_size, job.workdir_max) reads a bare number as
# GiB: storage.size always did (what the stacks created for it), and one rule for all of them
# means `image_size: 12000` can no longer be 12 kB beside a `size: 1200` of 1.2 TiB. Said here,
# in the fields' descriptions and the schema, and in the plan's storage line.
SIZE_JSON_SCHEMA = {
    "anyOf": [
        {"type": "number", "exclusiveMinimum": 0, "description": "GiB"},
        {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]*)?\s*([KMGTPEkmgtpe]i?)?[Bb]?\s*$",
         "examples": ["1.2TiB", "2400GiB", "100TiB"]},
    ]
}


def parse_spec_size(value: object) -> int:
    """Bytes for a size in a spec: "1.2TiB", "500GB"; a bare number (1200, "1200") is GiB."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 1.2TiB (a bare number is GiB), got a boolean")
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]+(\.[0-9]*)?\s*", value):
        value = float(value)
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"expected a non-negative size, got {value!r}")
        if value > MAX_SIZE / 2**30:
            raise ValueError(f"size {str(value)[:20]}... GiB is too large")
        return int(value * 2**30)
    return parse_size(value)


# A sanity bound, not a registry's rule: images of recsys trainers are tens of GB at most.
MAX_IMAGE_BYTES = 2**40


def image_size(v: int) -> int:
    """job.image_size: a bare number is GiB; one meant as MB or bytes lands far past any image."""
    if v > MAX_IMAGE_BYTES:
        raise ValueError(f"{human_bytes(v)} is larger than any container image (at most "
                         f"{human_bytes(MAX_IMAGE_BYTES)} here); a bare number is GiB: write "
                         "the unit, e.g. 12GB or 12000MB")
    return v


def human_bytes(n: float) -> str:
    """Binary units, three significant figures: 255852544 -> '244 MiB'."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover
