"""How numbers are written: rounded half away from zero, as a person rounds (the by-hand mode uses the
same rule), and how many decimals each step shows."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import numpy as np

__all__ = ["fmt", "fmt_small", "fmt_decimal", "shown_decimal", "round_half_up", "digits_for", "DEFAULT_DIGITS"]

DEFAULT_DIGITS = 4


def _round_one(x: float, digits: int) -> float:
    if not np.isfinite(x) or abs(x) >= 1e15:
        return x
    return float(_as_written(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)) + 0.0


def _as_written(x: float) -> Decimal:
    """The decimal a person would have: x to 12 significant digits. Binary arithmetic leaves noise in
    the 16th digit (0.3819·(−0.75) + 0.45·1.125 + 0.1682·(−0.875) is 0.07264999999999999 in float64,
    0.07265 on paper); rounding that noise away first makes halves round as they do on paper."""
    return Decimal(f"{x:.12g}")


def round_half_up(values: Any, digits: int) -> np.ndarray:
    """Round each number to ``digits`` decimals, halves away from zero (0.125 → 0.13), as on paper.

    Non-finite values (−∞ in a mask) are kept. Returns a float64 array of the same shape.
    """
    array = np.array(values, dtype=np.float64)
    flat = array.reshape(-1)
    for i, x in enumerate(flat):
        flat[i] = _round_one(float(x), digits)
    return flat.reshape(array.shape)


def digits_for(name: str, digits: int | dict | None, default: int = DEFAULT_DIGITS) -> int:
    """The decimals shown for step ``name``: one number for all steps, or a per-step table.

    Scoped names use their last part ("head 1/weights" → "weights"); "q_heads" uses "q".
    """
    if isinstance(digits, int) and not isinstance(digits, bool):
        return digits
    table = digits or {}
    base = name.rsplit("/", 1)[-1]
    for key in (name, base, base.removesuffix("_heads")):
        if key in table:
            return int(table[key])
    return default


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
    text = str(_as_written(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    return text[1:] if text.startswith("-") and set(text[1:]) <= set("0.") else text


def fmt_typeset(value: float, digits: int) -> str:
    """`fmt` with a true minus (−, U+2212), as the figures, the pages and their matrix views write a number
    ("−0.18", "1.0e−43", "−∞"); the terminal and Markdown keep `fmt`'s "-", which a reader copies into Python."""
    return fmt(value, digits).replace("-", "\u2212")


def fmt_small(value: float) -> str:
    """A difference: "0" when exactly zero, else two significant digits in scientific notation."""
    x = float(value)
    return "0" if x == 0 else f"{x:.1e}"


def fmt_decimal(value: Decimal, digits: int) -> str:
    """An exact Decimal written as `fmt` writes a float: ``digits`` decimals, halves away from zero."""
    if not value.is_finite():
        return fmt(float(value), digits)
    with localcontext() as context:          # room for every digit left of the point and `digits` right of it
        context.prec = max(28, value.adjusted() + digits + 2)
        text = str(value.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    return text[1:] if text.startswith("-") and set(text[1:]) <= set("0.") else text


def shown_decimal(value: float, digits: int) -> Decimal | None:
    """The number a reader sees for ``value`` at ``digits`` decimals, as an exact Decimal (None: ±∞, NaN)."""
    text = fmt(value, digits)
    try:
        return Decimal(text)
    except ArithmeticError:
        return None
