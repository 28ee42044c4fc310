"""Scaled dot-product attention, softmax and masks: the math every other part of qkv calls.

Conventions (see design.md):
- Row vectors: a token is a row. q (…, Tq, Dk), k (…, Tk, Dk), v (…, Tk, Dv).
- Leading dimensions are batch and heads, any number of them. When q has H heads in
  dimension -3 and k/v have G heads there (H % G == 0, G < H), it is grouped-query attention:
  query head h reads key/value head h // (H // G). G = 1 is multi-query attention.
- A boolean mask means one thing everywhere: True = this query may attend to this key.
  It broadcasts to (…, Tq, Tk). An additive float bias is a separate argument.
- A query row with no allowed key gets zero weights and a zero output, never NaN.
- causal=True aligns bottom-right when Tq < Tk: the last query sees every key.

Recording: `attention_reference` (the plain path) takes `record=`, a callable
``record(name, value, *, formula="", note="")`` (a `qkv.Trace` is one). It is handed each
intermediate as it is computed; nothing is recomputed for the explanation. A recorder that returns
an array (same shape and type) replaces the intermediate: the rest is computed from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import is_numpy, is_torch, namespace, shape_str
from .kernels import execute, plain
from .kernels.call import check_call
from .trace import RESIDUAL, Recorder, emit

__all__ = [
    "attention",
    "attention_reference",
    "attention_columns",
    "softmax",
    "causal_mask",
    "padding_mask",
    "residual",
]


# --------------------------------------------------------------------------- masks
def causal_mask(tq: int, tk: int | None = None, *, like: Any = None):
    """Boolean causal mask (Tq, Tk), True = may attend, aligned bottom-right.

    Query i may see key j when j <= i + (Tk - Tq). With Tq = 2, Tk = 4 (two new tokens
    decoded after two cached ones)::

                 k0 k1 k2 k3
        q0 (t=2)  1  1  1  0
        q1 (t=3)  1  1  1  1

    With Tq > Tk the first Tq - Tk queries see no key (their rows are all False; attention
    gives them zero output). ``like`` picks the array library (and torch device) of the result;
    NumPy by default.
    """
    tk = tq if tk is None else tk
    _check_length("tq", tq)
    _check_length("tk", tk)
    rows = np.arange(tq)[:, None]
    cols = np.arange(tk)[None, :]
    mask = cols <= rows + (tk - tq)
    return _like(mask, like)


def padding_mask(lengths, tk: int, *, like: Any = None):
    """Key padding mask (B, 1, 1, Tk) from the real lengths (B,), True = a real token.

    It broadcasts against scores shaped (B, H, Tq, Tk): key j of sequence b is visible when
    j < lengths[b]. A length of 0 hides every key (those rows give zero output).
    """
    _check_length("tk", tk)
    lengths_np = np.asarray(lengths.detach().cpu() if is_torch(lengths) else lengths)
    if lengths_np.ndim != 1 or not np.issubdtype(lengths_np.dtype, np.integer):
        raise ValueError(
            f"lengths must be a 1-D array of integers (B,), got shape {shape_str(lengths_np.shape)} "
            f"and dtype {lengths_np.dtype}"
        )
    if lengths_np.size and (lengths_np.min() < 0 or lengths_np.max() > tk):
        raise ValueError(f"lengths must lie in [0, tk={tk}], got {lengths_np.tolist()}")
    mask = np.arange(tk)[None, :] < lengths_np[:, None]  # (B, Tk)
    return _like(mask[:, None, None, :], like if like is not None else (lengths if is_torch(lengths) else None))


def _check_length(name: str, n: Any) -> None:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {n!r}")


def _like(mask: np.ndarray, like: Any):
    if like is None or is_numpy(like):
        return mask
    if is_torch(like):
        import torch

        return torch.as_tensor(mask, device=like.device)
    raise TypeError(f"like must be a NumPy array or a torch tensor, got {type(like).__name__}")


# --------------------------------------------------------------------------- softmax
def softmax(scores, mask=None, *, axis: int = -1):
    """Numerically stable softmax along ``axis`` that respects a boolean mask.

    weights = exp(s - max) / Σ exp(s - max), over the allowed entries only. Entries where
    ``mask`` is False, or whose score is -inf, get weight 0. A slice with no allowed entry
    gets all-zero weights (not NaN). Shapes: scores (…), mask broadcastable to scores.
    Scores of ±1e4 are exact: the maximum is subtracted before exponentiating.
    """
    return plain.softmax_lse(scores, mask, axis=axis)[0]


# --------------------------------------------------------------------------- attention
def attention(q, k, v, mask=None, *, bias=None, causal: bool = False, scale: float | None = None,
              mask_mod=None, score_mod=None, return_weights: bool = False, return_lse: bool = False,
              record: Recorder | None = None):
    """softmax(score_mod(q·kᵀ·scale + bias), masked per row)·v.

    Args:
      q: (…, Tq, Dk) queries. With heads, (…, H, Tq, Dk).
      k: (…, Tk, Dk) keys; (…, G, Tk, Dk) with G key/value heads, 1 < G < H, H % G == 0 (GQA).
         Other head counts broadcast like NumPy's (G = 1; or H = 1 against G heads).
      v: (…, Tk, Dv) values; Dv may differ from Dk.
      mask: boolean, broadcastable to (…, H, Tq, Tk); True = may attend.
      bias: additive float scores, broadcastable to (…, H, Tq, Tk); -inf blocks too.
        A NumPy mask or bias given with torch q, k, v becomes a tensor on q's device (so
        `causal_mask(T)` works with torch inputs); q, k and v themselves must be of one library.
      causal: also block keys in the future, aligned bottom-right (see `causal_mask`).
      scale: multiplies q·kᵀ; default 1/√Dk. A finite real number (not a bool).
      mask_mod: mask_mod(b, h, q_idx, kv_idx) -> bool (True = may attend), in flex_attention's
        style: called with broadcasting int64 index arrays (b: the batch index, the leading
        dimensions before the heads flattened; h: the head; q_idx (Tq, 1); kv_idx (Tk,)), on
        q's array library. ANDed with mask and causal. Catalogue: `qkv.masks`.
      score_mod: score_mod(score, b, h, q_idx, kv_idx) -> score, applied to q·kᵀ·scale + bias
        before masking (ALiBi, soft-capping, relative position buckets: `qkv.masks`).
      return_weights: also return the weights (…, H, Tq, Tk).
      return_lse: also return the log-sum-exp of each query row (…, H, Tq):
        lse_i = log Σ_j exp(s_ij) over the allowed keys j, s = score_mod(q·kᵀ·scale + bias)
        (natural log); −inf for a row with no allowed key. Partial results over key ranges
        merge with it (`qkv.kernels.merge_partials`); weights = exp(s − lse).
      record: a recorder (e.g. a `qkv.Trace`) handed every intermediate.

    Returns:
      out (…, Tq, Dv); with return_weights and/or return_lse a tuple in this order:
      (out, weights), (out, lse) or (out, weights, lse). A query with no allowed key gives a
      zero row in out and weights and lse = −inf. Keys a query may not attend to are never
      read: NaN or inf in their values does not reach it (in an attended key's value it does).

    The route is chosen once per call (`qkv.kernels.route.choose_route`, which names it and says
    why): the plain path (`attention_reference`: the full Tq×Tk score matrix) when the weights or a
    trace are asked for and for short NumPy inputs (Tq·Tk ≤ 128², where it is as fast); otherwise
    NumPy inputs go to the blocked online-softmax kernel (O(T) memory, block-sparse with qkv.masks;
    `qkv.kernels.blocked_attention`) and torch tensors to torch's fused scaled_dot_product_attention
    (the plain path, with autograd, for score_mod or return_lse, or for non-finite keys/values under
    a mask).
    """
    if mask is None and bias is None and mask_mod is None and score_mod is None and record is None \
            and not return_weights and not return_lse:   # a short CPU torch call: its kind's plan, else None
        out = execute.short_torch(q, k, v, causal, scale)
        if out is not None:
            return out
    return _attention(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod,
                      score_mod=score_mod, return_weights=return_weights, return_lse=return_lse, record=record)


def _attention(q, k, v, mask=None, *, bias=None, causal=False, scale=None, mask_mod=None, score_mod=None,
               return_weights=False, return_lse=False, record=None, route=None):
    """`attention` with route= (the fastest route allowed, a qkv.kernels.route.RouteName or its value:
    tests and benchmarks pin a route with it). The call is checked once, its route chosen once
    (`choose_route`), and the route executed (`qkv.kernels.execute`). (`attention` first tries an unmasked
    or causal call's kept plan, `execute.short_torch`: the same route, decided once per kind of call.)"""
    call = check_call(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod, score_mod=score_mod)
    want = "weights" if return_weights or record is not None else "lse" if return_lse else "out"
    return execute.dispatch(call, want=want, route_name=route, return_weights=return_weights, return_lse=return_lse,
                            record=record)


def attention_reference(q, k, v, mask=None, *, bias=None, causal: bool = False,
                        scale: float | None = None, mask_mod=None, score_mod=None,
                        return_weights: bool = False, return_lse: bool = False,
                        record: Recorder | None = None):
    """The plain path of `attention`, same signature: every intermediate materialised.

    Steps (each handed to ``record`` when given):
      scores = q·kᵀ                       (…, H, Tq, Tk)
      scaled_scores = scores·scale (+ bias: biased_scores)
      modified_scores = score_mod(scaled, b, h, q_idx, kv_idx)   (only with score_mod)
      mask  (True = may attend; causal and mask_mod folded in)
      weights = softmax per row over allowed keys  (lse = log Σ exp over them, −inf if none)
      out = weights·v                     (…, H, Tq, Dv)
    """
    return plain.attend(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod, score_mod=score_mod,
                        return_weights=return_weights, return_lse=return_lse, record=record)


def attention_columns(q, k, v, *, scale: float | None = None, return_weights: bool = False):
    """The column-vector form (3Blue1Brown): tokens are columns, softmax runs down each column.

    q (…, Dk, Tq), k (…, Dk, Tk), v (…, Dv, Tk) → out (…, Dv, Tq) = v·softmax(kᵀ·q·scale),
    with softmax over keys, i.e. along axis -2 of the (…, Tk, Tq) weight matrix. This is the
    row-vector `attention` transposed: attention_columns(Qᵀ, Kᵀ, Vᵀ) = attention(Q, K, V)ᵀ, and
    it is computed so (one implementation). Tk = 0 gives zero output; Dk = 0 uniform weights.
    Returns out, or (out, weights (…, Tk, Tq)).
    """
    xp = namespace(q=q, k=k, v=v)
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{name} must have tokens as columns, (…, D, T); got shape {shape_str(a.shape)}")
    if k.shape[-2] != q.shape[-2]:
        raise ValueError(f"k has shape {shape_str(k.shape)} but q has {q.shape[-2]} rows "
                         f"(expected (…, {q.shape[-2]}, Tk))")
    if v.shape[-1] != k.shape[-1]:
        raise ValueError(f"v has shape {shape_str(v.shape)} but k has {k.shape[-1]} columns "
                         f"(expected (…, Dv, {k.shape[-1]}))")
    out, weights = attention_reference(*(xp.matrix_transpose(a) for a in (q, k, v)), scale=scale,
                                       return_weights=True)
    out, weights = xp.matrix_transpose(out), xp.matrix_transpose(weights)   # (…, Dv, Tq), (…, Tk, Tq)
    return (out, weights) if return_weights else out


def residual(r, y, *, record: Recorder | None = None):
    """The residual connection R + Y: the sublayer's output added to its input, same shape."""
    namespace(r=r, y=y)
    if tuple(r.shape) != tuple(y.shape):
        raise ValueError(f"y has shape {shape_str(y.shape)} but the residual r has shape {shape_str(r.shape)}; "
                         "they must match")
    total = r + y
    return emit(record, RESIDUAL, total, formula="R + Y")


