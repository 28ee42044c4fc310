"""The "by hand" mode: every intermediate rounded to the digits shown, as with a calculator.

`ByHand` is a recorder (see `qkv.attention`): the core hands it each intermediate, it records the
rounded value under ``by hand/<name>`` and returns it, and the core computes the next step from
the rounded numbers. Nothing here re-does attention; the same functions run on rounded inputs.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Callable

import numpy as np

from .._backend import is_torch, to_numpy

__all__ = ["round_half_up", "digits_for", "ByHand", "DEFAULT_DIGITS", "BY_HAND", "DRIFT"]

DEFAULT_DIGITS = 4
BY_HAND = "by hand"   # prefix of the by-hand steps in a trace
DRIFT = "drift"       # prefix of the by-hand − exact steps


def _round_one(x: float, digits: int) -> float:
    if not np.isfinite(x) or abs(x) >= 1e15:
        return x
    # repr() is the shortest decimal that reads back as x: the number a person sees and rounds.
    return float(Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)) + 0.0


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


class ByHand:
    """A recorder that rounds each intermediate, records it under ``by hand/…`` and hands it back."""

    def __init__(self, trace, digits: Callable[[str], int], prefix: str = BY_HAND):
        self.trace, self.digits, self.prefix = trace, digits, prefix

    def round(self, name: str, value: Any) -> np.ndarray:
        return round_half_up(to_numpy(value), self.digits(name))

    def __call__(self, name: str, value: Any, *, formula: str = "", note: str = "", **meta: Any):
        array = to_numpy(value)
        if array.dtype.kind != "f" or name.rsplit("/", 1)[-1] == "mask":
            self.trace(f"{self.prefix}/{name}", value, formula=formula, note=note, **meta)
            return None
        rounded = self.round(name, array)
        self.trace(f"{self.prefix}/{name}", rounded, formula=formula, note=note, **meta)
        if is_torch(value):
            import torch

            return torch.as_tensor(rounded, dtype=value.dtype, device=value.device)
        return rounded.astype(array.dtype, copy=False)


def record_drift(trace) -> None:
    """Record ``drift/<name>`` = by hand − exact for every by-hand step that has an exact twin."""
    prefix = BY_HAND + "/"
    for step in list(trace.steps):
        if not step.name.startswith(prefix) or step.value.dtype.kind != "f":
            continue
        name = step.name[len(prefix):]
        exact = trace.get(name)
        if exact is None or exact.shape != step.shape or name.rsplit("/", 1)[-1] == "mask":
            continue
        finite = np.isfinite(exact.value) & np.isfinite(step.value)
        diff = np.where(finite, step.value - exact.value, 0.0)
        trace(f"{DRIFT}/{name}", diff, formula="by hand − exact",
              max_abs=float(np.max(np.abs(diff))) if diff.size else 0.0)
