"""What people compute from attention weights: rollout and per-head summaries.

Everything here reads attention weights shaped (L, H, T, T) — layer, head, query row, key column;
each row sums to 1 (or is all zero where a mask left the query no key) — as every qkv model returns
them from ``model.attention_weights(text)``. Nothing here computes attention.

- `rollout`: attention rollout (Abnar & Zuidema, 2020) with the residual identity term.
- `head_scores`: per-head summaries — entropy, attention on the first token (the "sink"), self
  (diagonal), and the head detectors: previous-token and, given the token ids, duplicate-token and
  induction scores as TransformerLens's `detect_head` computes them ("mul" measure: the share of a
  head's whole attention, all T rows, that falls where the detection pattern is 1); plus qkv's own
  ``previous_token_rows``, the mean weight on key i − 1 over the T − 1 rows that have one.
- `detect_head`: TransformerLens's `detect_head` on weights already computed — its three patterns
  under its names, or any (T, T) pattern; its ``exclude_bos``, ``exclude_current_token`` and
  ``error_measure="abs"`` options.
- `repeated_random_ids`: the probe those detectors run on — a random token sequence repeated twice.
- `score_terms`, `score_products`: a recorded head's scores as sums of per-dimension products q_i·k_i (the
  neuron view), read from a Trace's q and k (after RoPE where recorded).

The two previous-token scores differ only in the denominator: TransformerLens divides the weight on
key i − 1 by the head's whole attention (T for T softmax rows, row 0 included though it has no
previous token), qkv's ``previous_token_rows`` by the T − 1 rows that have one. A perfect
previous-token head scores (T − 1)/T in the first and 1 in the second.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rollout", "head_scores", "detect_head", "detection_pattern", "repeated_random_ids", "score_terms", "score_products", "SCORES", "PATTERNS",
           "HEAD_NAMES"]

PATTERNS = ("previous_token", "duplicate_token", "induction")
HEAD_NAMES = ("previous_token_head", "duplicate_token_head", "induction_head")
"""TransformerLens's names for the three patterns (`transformer_lens.head_detector.HeadName`)."""
SCORES = ("entropy", "first_token", "previous_token", "previous_token_rows", "self", "duplicate_token", "induction")
"""The keys of `head_scores`, in display order (the last two only when token ids are given).
previous_token, duplicate_token, induction: TransformerLens's definitions; previous_token_rows: qkv's."""


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
    - ``previous_token``: TransformerLens's previous-token score, `detect_head` with its
      "previous_token_head" pattern: Σ_i A[i, i − 1] / Σ A (÷ T for T softmax rows).
    - ``previous_token_rows``: qkv's own — the mean weight on key i − 1 over the rows i ≥ 1 (÷ T − 1
      rows; 0 when T = 1).
    - ``self``: mean weight on the diagonal (key i for query i).
    - with ``ids`` (T,), also ``duplicate_token`` and ``induction``: TransformerLens's scores
      (`detect_head` with "duplicate_token_head" / "induction_head"): the share of the head's
      attention that falls on the pattern, Σ(A ⊙ P) / Σ A; a perfect head scores 1 only where every
      row has somewhere to look.
    A head with no weight at all (every row masked) scores 0 in each share (TransformerLens: 0/0).
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
        "previous_token": detect_head(weights, "previous_token_head"),
        "previous_token_rows": (_mean_over(np.diagonal(weights, offset=-1, axis1=-2, axis2=-1), live[..., 1:])
                                if size > 1 else np.zeros(weights.shape[:2])),
        "self": _mean_over(np.diagonal(weights, axis1=-2, axis2=-1), live),
    }
    if ids is not None:
        if np.asarray(ids).shape != (size,):
            raise ValueError(f"ids must be ({size},) to match weights (L, H, {size}, {size}), got shape {np.shape(ids)}")
        scores["duplicate_token"] = detect_head(weights, "duplicate_token_head", ids)
        scores["induction"] = detect_head(weights, "induction_head", ids)
    return scores


def detect_head(weights, detection_pattern, ids=None, *, exclude_bos: bool = False,
                exclude_current_token: bool = False, error_measure: str = "mul") -> np.ndarray:
    """TransformerLens's `detect_head` on attention weights (L, H, T, T) already computed → (L, H) float64.

    detection_pattern: one of TransformerLens's names ``HEAD_NAMES`` (or qkv's ``PATTERNS``, the same
    patterns), built by `detection_pattern` from ``ids`` (T,) (the previous-token pattern needs
    none), or a (T, T) array of the pattern itself.

    - ``error_measure="mul"`` (TransformerLens's default): per head, A' = A with column 0 set to 0
      (``exclude_bos``) and the diagonal set to 0 (``exclude_current_token``); the score is
      Σ(A' ⊙ P) / Σ A' — the share of the (remaining) attention on the pattern. 0 for a head with no
      attention left (TransformerLens divides 0 by 0).
    - ``error_measure="abs"``: 1 − round(Σ|A − P| / T, 3) with the same exclusions applied to |A − P|
      (TransformerLens: 1 − round(mean(|A − P|)·T, 3)); 1 is a perfect match, −1 a perfect mismatch.
      Only for causal heads (TransformerLens asserts |A − P| is lower triangular): ValueError otherwise.

    TransformerLens runs this on its model's own attention for a token sequence (`model.to_tokens`
    prepends BOS); given the same weights and ids, the numbers are the same (a test compares them
    with scores TransformerLens 4.3.0 computed).
    """
    weights = _check_weights(weights)
    size = weights.shape[-1]
    if isinstance(detection_pattern, str):
        name = detection_pattern
        if name in HEAD_NAMES:
            name = PATTERNS[HEAD_NAMES.index(name)]
        if name not in PATTERNS:
            raise ValueError(f"unknown pattern {detection_pattern!r}; known: {', '.join(HEAD_NAMES + PATTERNS)}")
        if ids is not None and np.shape(ids) != (size,):
            raise ValueError(f"ids must be ({size},) to match weights (L, H, {size}, {size}), got shape {np.shape(ids)}")
        pattern = _named_pattern(name, ids, size)
    else:
        pattern = np.asarray(detection_pattern, dtype=np.float64)
        if pattern.shape != (size, size) or not np.all(np.isfinite(pattern)):
            raise ValueError(f"a detection pattern must be a finite ({size}, {size}) array to match the weights, "
                             f"got shape {pattern.shape}")
        if np.triu(pattern, k=1).any():
            raise ValueError("a detection pattern must be lower triangular (a query attends to itself and earlier keys)")
    if error_measure not in ("mul", "abs"):
        raise ValueError(f"error_measure must be 'mul' or 'abs', got {error_measure!r}")
    keep = np.ones((size, size))
    if exclude_bos:
        keep[:, 0] = 0.0
    if exclude_current_token:
        np.fill_diagonal(keep, 0.0)
    if error_measure == "mul":
        attention = weights * keep
        hits = (attention * pattern).sum(axis=(-2, -1))
        total = attention.sum(axis=(-2, -1))
        return np.divide(hits, total, out=np.zeros_like(hits), where=total > 0)
    difference = np.abs(weights - pattern)
    if np.triu(difference, k=1).any():
        raise ValueError("error_measure='abs' needs causal heads: these weights attend to later keys "
                         "(TransformerLens asserts the same)")
    raw = (difference * keep).sum(axis=(-2, -1)) / size
    return 1.0 - np.vectorize(lambda x: round(float(x), 3), otypes=[np.float64])(raw)


def _named_pattern(name: str, ids, size: int) -> np.ndarray:
    """`detection_pattern` (detect_head's argument of that name hides the function there)."""
    return detection_pattern(name, ids) if ids is not None else detection_pattern(name, size=size)


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



def _score_vectors(trace, prefix: str):
    """(q (H, Tq, Dk), k (H, Tk, Dk) — each query head's key/value head's keys —, rotated, G) as the scores used them."""
    rotated = prefix + "q_rotated" in trace and prefix + "k_rotated" in trace
    q_all = np.asarray(trace[prefix + ("q_rotated" if rotated else "q_heads")].value, dtype=np.float64)
    k_all = np.asarray(trace[prefix + ("k_rotated" if rotated else "k_heads")].value, dtype=np.float64)
    if q_all.ndim == 2:                         # one head recorded as (T, Dk)
        q_all, k_all = q_all[None], k_all[None]
    heads, kv_heads = q_all.shape[0], k_all.shape[0]
    per_head = np.repeat(k_all, max(1, heads // kv_heads), axis=0)      # (H, Tk, Dk): GQA's sharing
    return q_all, per_head, rotated, kv_heads


def _recorded(trace, name: str) -> np.ndarray:
    value = np.asarray(trace[name].value, dtype=np.float64)
    return value[None] if value.ndim == 2 else value


def score_products(trace, prefix: str = "") -> dict:
    """Every query/key pair's score as per-dimension products: `score_terms` for all pairs of all heads at once.

    Returns {"terms": (H, Tq, Tk, Dk) q_i·k_i, "sums": (H, Tq, Tk) Σ_i q_i·k_i (float64), "scores": the recorded
    q·k (H, Tq, Tk), "rotated": bool}. Memory: H·Tq·Tk·Dk float64 numbers (callers bound it).
    """
    q, k, rotated, _ = _score_vectors(trace, prefix)
    terms = q[:, :, None, :] * k[:, None, :, :]                          # (H, Tq, Tk, Dk)
    return {"terms": terms, "sums": terms.sum(axis=-1), "scores": _recorded(trace, prefix + "scores"), "rotated": rotated}


def score_terms(trace, *, query: int, key: int, head: int = 0, prefix: str = "") -> dict:
    """The score of one query/key pair of a recorded head as a sum of per-dimension products (a neuron view).

    Reads the Trace's ``prefix + q_heads`` (H, Tq, Dk) and ``k_heads`` (G, Tk, Dk) — their RoPE-rotated
    forms ``q_rotated``/``k_rotated`` where recorded, which are what the scores used — and ``scores``,
    ``scaled_scores`` (H, Tq, Tk). Key/value head of ``head``: head // (H / G) (grouped-query attention).
    Returns {"q", "k": the two vectors (Dk,), "terms": q_i·k_i (Dk,), "sum": Σ_i q_i·k_i, all float64;
    "score", "scaled": the recorded q·k and scaled score of that cell; "rotated": bool; "kv_head": int}.
    Σ terms is the recorded score up to the rounding of the recorded dtype (the model computed it as one
    matrix product). Raises KeyError naming a missing step, IndexError naming an index out of range.
    """
    q_all, k_all, rotated, kv_heads = _score_vectors(trace, prefix)
    heads = q_all.shape[0]
    for name, value, count in (("head", head, heads), ("query", query, q_all.shape[1]), ("key", key, k_all.shape[1])):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < count:
            raise IndexError(f"{name}={value!r} is out of range: the trace has {count} (0 … {count - 1})")
    q, k = q_all[head, query], k_all[head, key]
    terms = q * k
    scores, scaled = _recorded(trace, prefix + "scores"), _recorded(trace, prefix + "scaled_scores")
    return {"q": q, "k": k, "terms": terms, "sum": float(terms.sum()), "score": float(scores[head, query, key]),
            "scaled": float(scaled[head, query, key]), "rotated": rotated, "kv_head": head // max(1, heads // kv_heads)}
