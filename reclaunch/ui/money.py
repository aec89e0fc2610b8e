"""Money as a person reads it: one function every view uses, so no table prints "$0.00" for a
cost that is real but small, or "0 USD" for one that rounds away.

    usd(0.0)     -> "$0"        nothing to pay (cloud: local)
    usd(0.004)   -> "<$0.01"    real, under a cent
    usd(3.456)   -> "$3.46"     cents under $10
    usd(1234.5)  -> "$1,235"    whole dollars from $10
    usd(None)    -> "no price"
"""

from __future__ import annotations

import math


def usd(value: float | None, *, missing: str = "no price", per: str = "") -> str:
    """`per`: a unit suffix such as "/h" (kept after the figure: "$3.46/h")."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing
    v = float(value)
    sign, v = ("-", -v) if v < 0 else ("", v)
    if v == 0:
        text = "$0"
    elif v < 0.01:
        text = "<$0.01"
    elif v < 10:
        text = f"${v:,.2f}"
    else:
        text = f"${v:,.0f}"
    return sign + text + per
