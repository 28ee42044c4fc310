"""The "by hand" mode: every intermediate rounded to the digits shown, as with a calculator.

`ByHand` is a recorder (see `qkv.attention`): the core hands it each intermediate, it records the
rounded value under ``by hand/<name>`` and returns it, and the core computes the next step from
the rounded numbers. Nothing here re-does attention; the same functions run on rounded inputs.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._backend import is_torch, to_numpy
from ..explain.numbers import DEFAULT_DIGITS, digits_for, round_half_up
from ..trace import BY_HAND, DRIFT

__all__ = ["round_half_up", "digits_for", "ByHand", "DEFAULT_DIGITS", "BY_HAND", "DRIFT"]



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
