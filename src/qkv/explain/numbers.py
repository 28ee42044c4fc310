"""How numbers are written: rounded half away from zero, as a person rounds (same rule as by-hand)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from ..examples.byhand import round_half_up

__all__ = ["fmt", "fmt_small", "round_half_up"]


def fmt(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals (0.125 → "0.13" at 2). A nonzero value that would show as
    zero is written in scientific notation ("1.0e-43"), so "tiny" and "zero" stay distinguishable."""
    x = float(value)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "-∞" if x < 0 else "∞"
    if x != 0 and abs(x) < 0.5 * 10.0 ** -digits:
        return f"{x:.1e}"
    if abs(x) >= 1e15:
        return f"{x:.{max(digits, 1)}e}"
    text = str(Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    return text[1:] if text.startswith("-") and set(text[1:]) <= set("0.") else text


def fmt_small(value: float) -> str:
    """A difference: "0" when exactly zero, else two significant digits in scientific notation."""
    x = float(value)
    return "0" if x == 0 else f"{x:.1e}"
