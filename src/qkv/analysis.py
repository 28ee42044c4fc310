"""What people compute from attention weights: rollout and per-head summaries.

Everything here reads attention weights shaped (L, H, T, T) — layer, head, query row, key column;
each row sums to 1 (or is all zero where a mask left the query no key) — as every qkv model returns
them from ``model.attention_weights(text)``. Nothing here computes attention.

- `rollout`: attention rollout (Abnar & Zuidema, 2020) with the residual identity term.
- `head_scores`: per-head summaries — entropy, attention on the first token (the "sink"),
  previous-token and self (diagonal) scores, and, given the token ids, duplicate-token and induction
  scores measured as TransformerLens's head detectors do ("mul" measure: the share of a head's
  attention that falls where the detection pattern is 1).
- `repeated_random_ids`: the probe those detectors run on — a random token sequence repeated twice.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rollout", "head_scores", "detection_pattern", "repeated_random_ids", "SCORES", "PATTERNS"]

PATTERNS = ("previous_token", "duplicate_token", "induction")
SCORES = ("entropy", "first_token", "previous_token", "self", "duplicate_token", "induction")
"""The keys of `head_scores`, in display order (the last two only when token ids are given)."""


def _check_weights(weights) -> np.ndarray:
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be (L, H, T, T) with square rows × keys, got shape {weights.shape}")
    if weights.shape[-1] == 0:
        raise ValueError("weights must hold at least one token (T ≥ 1), got T = 0")
    if not np.all(np.isfinite(weights)) or weights.min() < 0:
        raise ValueError("weights must be finite and non-negative (attention weights, rows summing to 1 or 0)")
    return weights


def rollout(weights, *, residual: bool = True, heads: str = "mean") -> np.ndarray:
    """Attention rollout: how much each output position draws on each input token through every layer.

    weights (L, H, T, T) → (L, T, T): entry [l, i, j] is how much position i after layer l draws on
    input token j. Per layer the heads are fused (``heads="mean"``, or ``"max"``, ``"min"``) into
    A_l (T, T); with ``residual=True`` the skip connection is added as the identity,
    Â_l = (A_l + I) / 2, and each row renormalised to sum to 1 (a row no key could see keeps only
    the identity). Then R_0 = Â_0 and R_l = Â_l · R_(l−1) (row vectors: a query row of layer l mixes
    the rows of layer l − 1). ``residual=False`` multiplies the raw attention, which the paper
    shows mixes too fast; it is there to compare.
    """
    weights = _check_weights(weights)
    fuse = {"mean": np.mean, "max": np.max, "min": np.min}.get(heads)
    if fuse is None:
        raise ValueError(f"heads must be 'mean', 'max' or 'min', got {heads!r}")
    fused = fuse(weights, axis=1)                                        # (L, T, T)
    if residual:
        fused = fused + np.eye(fused.shape[-1])
        fused = fused / fused.sum(axis=-1, keepdims=True)                # every row now holds its 1 on the diagonal
    layers = [fused[0]]
    for layer in fused[1:]:
        layers.append(layer @ layers[-1])
    return np.stack(layers)


def detection_pattern(name: str, ids=None, *, size: int | None = None) -> np.ndarray:
    """The (T, T) 0/1 pattern a head of kind ``name`` would attend to (lower triangular).

    - ``previous_token``: query i attends to key i − 1 (needs only ``size`` or ``ids``).
    - ``duplicate_token``: query i attends to every earlier key j < i holding the same token id.
    - ``induction``: query i attends to every key j ≤ i whose previous token equals token i (the
      token that came right after an earlier copy of the current one).
    """
    if name not in PATTERNS:
        raise ValueError(f"unknown pattern {name!r}; known: {', '.join(PATTERNS)}")
    if ids is not None:
        ids = np.asarray(ids)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"ids must be a 1-D array of integer token ids, got shape {ids.shape} and dtype {ids.dtype}")
        size = ids.shape[0]
    elif name != "previous_token":
        raise ValueError(f"the {name} pattern needs the token ids")
    if size is None:
        raise ValueError("give ids or size")
    if name == "previous_token":
        return np.eye(size, k=-1)
    same = ids[:, None] == ids[None, :]                                  # (T, T): token i equals token j
    duplicate = np.tril(same, k=-1)
    if name == "duplicate_token":
        return duplicate.astype(np.float64)
    induction = np.zeros((size, size))
    induction[:, 1:] = same[:, :-1]                                      # key j's previous token equals token i
    return np.tril(induction)


def head_scores(weights, ids=None) -> dict[str, np.ndarray]:
    """Per-head summaries of weights (L, H, T, T) → {score name: (L, H) array}.

    - ``entropy``: mean over query rows of −Σ_j p_ij ln p_ij, in nats (0: one key takes all; ln T:
      uniform over T keys). Rows with no weight (fully masked) are left out of the mean.
    - ``first_token``: mean weight on key 0 (the [CLS] / BOS "attention sink").
    - ``previous_token``: mean weight on key i − 1 (rows i ≥ 1).
    - ``self``: mean weight on the diagonal (key i for query i).
    - with ``ids`` (T,), also ``duplicate_token`` and ``induction``: the share of attention that falls
      on the detection pattern, Σ(A ⊙ P) / Σ A over the whole head (TransformerLens's "mul" score;
      a perfect head scores 1 only where every row has somewhere to look).
    """
    weights = _check_weights(weights)
    size = weights.shape[-1]
    row_mass = weights.sum(axis=-1)                                      # (L, H, T): 1, or 0 where masked
    live = row_mass > 0
    plogp = np.where(weights > 0, weights * np.log(np.where(weights > 0, weights, 1.0)), 0.0)
    entropy_rows = -plogp.sum(axis=-1)
    scores = {
        "entropy": _mean_over(entropy_rows, live),
        "first_token": _mean_over(weights[..., 0], live),
        "previous_token": (_mean_over(np.diagonal(weights, offset=-1, axis1=-2, axis2=-1), live[..., 1:])
                           if size > 1 else np.zeros(weights.shape[:2])),
        "self": _mean_over(np.diagonal(weights, axis1=-2, axis2=-1), live),
    }
    if ids is not None:
        if np.asarray(ids).shape != (size,):
            raise ValueError(f"ids must be ({size},) to match weights (L, H, {size}, {size}), got shape {np.shape(ids)}")
        total = weights.sum(axis=(-2, -1))
        for name in ("duplicate_token", "induction"):
            pattern = detection_pattern(name, ids)
            hits = (weights * pattern).sum(axis=(-2, -1))
            scores[name] = np.divide(hits, total, out=np.zeros_like(hits), where=total > 0)
    return scores


def _mean_over(values: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Mean over the last axis of (L, H, T) values, counting only live rows; 0 where none is live."""
    count = live.sum(axis=-1)
    total = np.where(live, values, 0.0).sum(axis=-1)
    return np.divide(total, count, out=np.zeros_like(total), where=count > 0)


def repeated_random_ids(length: int, vocab_size: int, *, seed: int = 0, prefix=(), avoid=()) -> np.ndarray:
    """``prefix`` + r + r: a random sequence r of ``length`` token ids drawn without repeats from
    [0, vocab_size) minus ``avoid`` (special tokens), then repeated — the probe on which duplicate-token
    heads (second copy → first) and induction heads (second copy → the token after the first) show.
    """
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ValueError(f"length must be a positive integer, got {length!r}")
    allowed = np.setdiff1d(np.arange(vocab_size), np.asarray(list(avoid), dtype=np.int64))
    if allowed.size < length:
        raise ValueError(f"length {length} needs that many distinct ids, but only {allowed.size} are allowed")
    sequence = np.random.default_rng(seed).choice(allowed, size=length, replace=False)
    return np.concatenate([np.asarray(list(prefix), dtype=np.int64), sequence, sequence]).astype(np.int64)
