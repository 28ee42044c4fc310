"""The float64 reference for one query block walked over key blocks (flash_rows, tile_block), shared by
tests/test_fused.py and tests/test_tile.py."""

from __future__ import annotations

import numpy as np


def flash_reference(q, k, v, blocks, masks):
    """float64: softmax over the keys the blocks visit (masks, causal limits, bands' starts) of q·kᵀ,
    then ·v; also the row max m and Σ exp(s − m) (0 and −inf for rows that see nothing)."""
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    rows, tk = q.shape[0], k.shape[0]
    allowed = np.zeros((rows, tk), bool)
    for (j0, j1, flags, limit, start), blocked_ in zip(blocks, masks or [None] * len(blocks)):
        keep = np.ones((rows, j1 - j0), bool)
        if blocked_ is not None:
            keep &= ~blocked_
        if flags & 1:
            keep &= np.arange(j1 - j0)[None, :] < limit + np.arange(rows)[:, None]
        if flags & 2:
            keep &= np.arange(j1 - j0)[None, :] >= start + np.arange(rows)[:, None]
        allowed[:, j0:j1] = keep
    scores = np.where(allowed, q64 @ k64.T, -np.inf)
    top = scores.max(axis=1, keepdims=True)
    weights = np.exp(scores - np.where(np.isfinite(top), top, 0))
    total = weights.sum(axis=1, keepdims=True)
    out = np.where(total > 0, weights @ v64 / np.where(total > 0, total, 1), 0)
    return out, top[:, 0], total[:, 0], np.abs(np.where(allowed, scores, 0)).max()
