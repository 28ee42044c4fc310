"""Splitting a (…, T, D) matrix into heads and merging them back: reshapes, no arithmetic.

Seed 000: Q = X·W_Q is T×D; its columns are grouped by head, so the same numbers seen as
T×H×Dh (Dh = D/H) *are* the heads. No extra matrix multiplication is involved.
"""

from __future__ import annotations

from ._backend import namespace, shape_str

__all__ = ["split_heads", "merge_heads"]


def split_heads(x, n_heads: int):
    """(…, T, D) → (…, H, T, D/H): columns h·Dh … (h+1)·Dh − 1 become head h.

    Raises ValueError when D is not divisible by n_heads.
    """
    xp = namespace(x=x)
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    if x.ndim < 2:
        raise ValueError(f"x must have shape (…, T, D), got {shape_str(x.shape)}")
    *lead, t, d = x.shape
    if d % n_heads:
        raise ValueError(f"x has width D={d} (shape {shape_str(x.shape)}), which does not split into "
                         f"n_heads={n_heads} equal heads (D % H = {d % n_heads})")
    per_head = xp.reshape(x, (*lead, t, n_heads, d // n_heads))  # (…, T, H, Dh)
    return xp.moveaxis(per_head, -2, -3)                          # (…, H, T, Dh)


def merge_heads(x):
    """(…, H, T, Dh) → (…, T, H·Dh): the exact inverse of `split_heads` (concatenation of heads)."""
    xp = namespace(x=x)
    if x.ndim < 3:
        raise ValueError(f"x must have shape (…, H, T, Dh), got {shape_str(x.shape)}")
    *lead, h, t, dh = x.shape
    per_token = xp.moveaxis(x, -3, -2)                  # (…, T, H, Dh)
    return xp.reshape(per_token, (*lead, t, h * dh))   # (…, T, H·Dh)
