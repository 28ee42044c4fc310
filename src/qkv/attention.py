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

import math
from typing import Any, Callable

import array_api_compat
import numpy as np

from ._backend import compute_dtype, is_numpy, is_torch, namespace, shape_str
from .kernels import blocked as _kernel_module
from .kernels import blocked_attention

__all__ = [
    "attention",
    "attention_reference",
    "attention_columns",
    "softmax",
    "causal_mask",
    "padding_mask",
    "residual",
]

Recorder = Callable[..., None]

# Below this many scores per head (Tq·Tk) the plain path is as fast as the blocked kernel or faster
# (measured: MiniLM's T=64 layers, 32 sequences × 12 heads: plain 18 ms, kernel 73 ms with a mask),
# and its memory (the full score matrix) is small.
_PLAIN_MAX_SCORES = 128 * 128


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
    return _softmax_lse(scores, mask, axis=axis)[0]


def _softmax_lse(scores, mask=None, *, axis: int = -1):
    """softmax(scores) and its log-sum-exp log Σ exp(s) over the allowed entries (keepdims).

    The lse of a slice with no allowed entry is -inf. No NaN reaches the values or, under torch
    autograd, the gradients: empty slices take log(1) on a branch that `where` discards.
    """
    xp = namespace(scores=scores, mask=mask)
    # A -inf score needs no special case: exp(-inf - max) = 0. Masked entries become -inf too.
    masked = scores if mask is None else xp.where(xp.astype(mask, xp.bool), scores, -xp.inf)
    row_max = xp.max(masked, axis=axis, keepdims=True)
    # A slice with nothing allowed has max -inf; subtracting 0 instead keeps exp(-inf) = 0 clean.
    row_max = xp.where(row_max == -xp.inf, xp.zeros_like(row_max), row_max)
    exps = xp.exp(masked - row_max)
    total = xp.sum(exps, axis=axis, keepdims=True)
    nonempty = total > 0
    safe_total = xp.where(nonempty, total, xp.ones_like(total))
    lse = xp.where(nonempty, row_max + xp.log(safe_total), xp.full_like(total, -xp.inf))
    return exps / safe_total, lse


# --------------------------------------------------------------------------- attention
def attention(q, k, v, mask=None, *, bias=None, causal: bool = False, scale: float | None = None,
              return_weights: bool = False, return_lse: bool = False, record: Recorder | None = None):
    """softmax(q·kᵀ·scale + bias, masked per row)·v.

    Args:
      q: (…, Tq, Dk) queries. With heads, (…, H, Tq, Dk).
      k: (…, Tk, Dk) keys; (…, G, Tk, Dk) with G key/value heads, H % G == 0 (GQA).
      v: (…, Tk, Dv) values; Dv may differ from Dk.
      mask: boolean, broadcastable to (…, H, Tq, Tk); True = may attend.
      bias: additive float scores, broadcastable to (…, H, Tq, Tk); -inf blocks too.
      causal: also block keys in the future, aligned bottom-right (see `causal_mask`).
      scale: multiplies q·kᵀ; default 1/√Dk.
      return_weights: also return the weights (…, H, Tq, Tk).
      return_lse: also return the log-sum-exp of each query row (…, H, Tq):
        lse_i = log Σ_j exp(s_ij) over the allowed keys j, s = q·kᵀ·scale + bias (natural log);
        −inf for a row with no allowed key. Partial results over key ranges merge with it
        (`qkv.kernels.merge_partials`); weights = exp(s − lse).
      record: a recorder (e.g. a `qkv.Trace`) handed every intermediate.

    Returns:
      out (…, Tq, Dv); with return_weights and/or return_lse a tuple in this order:
      (out, weights), (out, lse) or (out, weights, lse). A query with no allowed key gives a
      zero row in out and weights and lse = −inf.

    The plain path (`attention_reference`) forms the full Tq×Tk score matrix; it is used when
    the weights or a trace are asked for, and for short NumPy inputs (Tq·Tk ≤ 128², where it is
    as fast). Otherwise NumPy inputs go to the blocked online-softmax kernel (O(T) memory;
    `qkv.kernels.blocked_attention`) and torch tensors to torch's fused
    scaled_dot_product_attention.
    """
    plain = dict(bias=bias, causal=causal, scale=scale, return_weights=return_weights,
                 return_lse=return_lse, record=record)
    # torch with return_lse: the plain path (autograd through the lse too; SDPA does not return it).
    if return_weights or record is not None or (return_lse and not is_numpy(q)):
        return attention_reference(q, k, v, mask, **plain)
    spec = _validate(q, k, v, mask, bias, scale)
    if spec.empty:
        return _empty_result(spec, q, v, return_weights=False, return_lse=return_lse)
    if is_torch(q):
        return _torch_sdpa(spec, q, k, v, mask, bias, causal)
    if spec.tq * spec.tk <= _PLAIN_MAX_SCORES:
        if (mask is None and bias is None and not causal and not return_lse
                and _fused_softmax_rows(q) is not None):
            return _plain_fused(spec, q, k, v)
        return attention_reference(q, k, v, mask, **plain)
    return blocked_attention(q, k, v, mask, bias=bias, causal=causal, scale=spec.scale, return_lse=return_lse)


def attention_reference(q, k, v, mask=None, *, bias=None, causal: bool = False,
                        scale: float | None = None, return_weights: bool = False,
                        return_lse: bool = False, record: Recorder | None = None):
    """The plain path of `attention`, same signature: every intermediate materialised.

    Steps (each handed to ``record`` when given):
      scores = q·kᵀ                       (…, H, Tq, Tk)
      scaled_scores = scores·scale (+ bias)
      mask  (True = may attend; causal folded in)
      weights = softmax per row over allowed keys  (lse = log Σ exp over them, −inf if none)
      out = weights·v                     (…, H, Tq, Dv)
    """
    spec = _validate(q, k, v, mask, bias, scale)
    xp = spec.xp
    if spec.empty:
        return _empty_result(spec, q, v, return_weights=return_weights, return_lse=return_lse)
    work = compute_dtype(xp, q.dtype)
    qc, kc, vc = (xp.astype(a, work) for a in (q, k, v))

    qg, kg = _group(spec, qc), _group_kv(spec, kc)        # (…, G, H/G, Tq, Dk), (…, G, 1, Tk, Dk)
    scores = _ungroup(spec, qg @ xp.matrix_transpose(kg))  # (…, H, Tq, Tk)
    scores = _emit(record, "scores", scores, formula="Q·Kᵀ")
    scaled = scores * spec.scale
    scaled = _emit(record, "scaled_scores", scaled, formula=f"Q·Kᵀ · {spec.scale:.6g}" + (" (= 1/√d_k)" if spec.default_scale else ""))
    if bias is not None:
        scaled = scaled + xp.astype(bias, work)
        scaled = _emit(record, "biased_scores", scaled, formula="Q·Kᵀ/√d_k + bias")
    allowed = _combined_mask(spec, mask, causal)
    if allowed is not None and record is not None:
        _emit(record, "mask", xp.where(allowed, xp.zeros_like(scaled), -xp.inf * xp.ones_like(scaled)),
              formula="0 where the query may attend, −∞ where it may not")
    weights, lse = _softmax_lse(scaled, allowed)
    weights = _emit(record, "weights", weights, formula="softmax(Q·Kᵀ/√d_k) per row")
    out = _ungroup(spec, _group(spec, weights) @ _group_kv(spec, vc))  # (…, H, Tq, Dv)
    out = _emit(record, "out", out, formula="weights · V")
    result = (xp.astype(out, q.dtype),)
    if return_weights:
        result += (xp.astype(weights, q.dtype),)
    if return_lse:
        result += (xp.astype(lse[..., 0], q.dtype),)
    return result if len(result) > 1 else result[0]


def attention_columns(q, k, v, *, scale: float | None = None, return_weights: bool = False):
    """The column-vector form (3Blue1Brown): tokens are columns, softmax runs down each column.

    q (…, Dk, Tq), k (…, Dk, Tk), v (…, Dv, Tk) → out (…, Dv, Tq) = v·softmax(kᵀ·q·scale),
    with softmax over keys, i.e. along axis -2 of the (…, Tk, Tq) weight matrix. This is the
    row-vector `attention` transposed: attention_columns(Qᵀ, Kᵀ, Vᵀ) = attention(Q, K, V)ᵀ.
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
    scale = 1.0 / math.sqrt(q.shape[-2]) if scale is None else float(scale)
    weights = softmax((xp.matrix_transpose(k) @ q) * scale, axis=-2)  # (…, Tk, Tq), columns sum to 1
    out = v @ weights                                                # (…, Dv, Tq)
    return (out, weights) if return_weights else out


def residual(r, y, *, record: Recorder | None = None):
    """The residual connection R + Y: the sublayer's output added to its input, same shape."""
    namespace(r=r, y=y)
    if tuple(r.shape) != tuple(y.shape):
        raise ValueError(f"y has shape {shape_str(y.shape)} but the residual r has shape {shape_str(r.shape)}; "
                         "they must match")
    total = r + y
    return _emit(record, "residual", total, formula="R + Y")


# --------------------------------------------------------------------------- internals
class _Spec:
    """Validated shapes of one attention call."""

    __slots__ = ("xp", "tq", "tk", "dk", "dv", "heads", "kv_heads", "groups", "scores_shape",
                 "out_shape", "scale", "default_scale", "empty", "device")


def _validate(q, k, v, mask, bias, scale) -> _Spec:
    xp = namespace(q=q, k=k, v=v, mask=mask, bias=bias)
    for name, a, letters in (("q", q, "Tq, Dk"), ("k", k, "Tk, Dk"), ("v", v, "Tk, Dv")):
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (…, {letters}), got shape {shape_str(a.shape)}")
        if not xp.isdtype(a.dtype, "real floating"):
            raise TypeError(f"{name} must be floating point, got dtype {a.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k and v must share one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}")
    tq, dk = q.shape[-2], q.shape[-1]
    tk = k.shape[-2]
    if k.shape[-1] != dk:
        raise ValueError(f"k has shape {shape_str(k.shape)} but q has width {dk} (expected (…, Tk, {dk}))")
    if v.shape[-2] != tk:
        raise ValueError(f"v has shape {shape_str(v.shape)} but k has length {tk} (expected (…, {tk}, Dv))")
    if tuple(v.shape[:-2]) != tuple(k.shape[:-2]):
        raise ValueError(f"v has shape {shape_str(v.shape)} but k has shape {shape_str(k.shape)}; "
                         "their leading (batch, head) dimensions must match")
    spec = _Spec()
    spec.xp, spec.tq, spec.tk, spec.dk, spec.dv = xp, tq, tk, dk, v.shape[-1]
    spec.device = _device(q)
    heads = q.shape[-3] if q.ndim >= 3 else 1
    kv_heads = k.shape[-3] if k.ndim >= 3 else 1
    grouped = q.ndim >= 3 and k.ndim >= 3 and kv_heads not in (1, heads)
    if grouped and heads % kv_heads:
        raise ValueError(f"q has {heads} heads (shape {shape_str(q.shape)}) but k has {kv_heads} "
                         f"(shape {shape_str(k.shape)}); grouped-query attention needs H % G == 0")
    spec.heads, spec.kv_heads = heads, kv_heads
    spec.groups = heads // kv_heads if grouped else 1
    # Leading dimensions broadcast like NumPy; the head dimension is matched above.
    q_lead, k_lead = tuple(q.shape[:-2]), tuple(k.shape[:-2])
    if grouped:
        q_lead, k_lead = q_lead[:-1], k_lead[:-1]
    try:
        lead = np.broadcast_shapes(q_lead, k_lead)
    except ValueError:
        raise ValueError(f"q has shape {shape_str(q.shape)} and k has shape {shape_str(k.shape)}: "
                         "their leading (batch, head) dimensions do not broadcast") from None
    if grouped:
        lead = lead + (heads,)
    spec.scores_shape = lead + (tq, tk)
    spec.out_shape = lead + (tq, spec.dv)
    for name, extra in (("mask", mask), ("bias", bias)):
        if extra is None:
            continue
        if name == "mask" and extra.dtype != xp.bool:
            raise TypeError(f"mask must be boolean (True = may attend), got dtype {extra.dtype}; "
                            "pass an additive float mask as bias=")
        if name == "bias" and not xp.isdtype(extra.dtype, "real floating"):
            raise TypeError(f"bias must be floating point, got dtype {extra.dtype}")
        try:
            ok = np.broadcast_shapes(tuple(extra.shape), spec.scores_shape) == spec.scores_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{name} has shape {shape_str(extra.shape)} but must broadcast to the scores' "
                             f"shape {shape_str(spec.scores_shape)} (…, Tq, Tk)")
    spec.default_scale = scale is None
    if scale is None:
        spec.scale = 1.0 / math.sqrt(dk) if dk else 1.0
    else:
        spec.scale = float(scale)
        if not math.isfinite(spec.scale):
            raise ValueError(f"scale must be a finite number, got {scale!r}")
    spec.empty = tq == 0 or tk == 0
    return spec


def _group(spec: _Spec, x):
    """(…, H, T, D) → (…, G, H/G, T, D): query heads gathered under their key/value head."""
    if spec.groups == 1:
        return x
    return spec.xp.reshape(x, tuple(x.shape[:-3]) + (spec.kv_heads, spec.groups) + tuple(x.shape[-2:]))


def _group_kv(spec: _Spec, x):
    """(…, G, T, D) → (…, G, 1, T, D): one key/value head shared by its group, no copy."""
    if spec.groups == 1:
        return x
    return spec.xp.expand_dims(x, axis=-3)


def _ungroup(spec: _Spec, x):
    """(…, G, H/G, T, D) → (…, H, T, D)."""
    if spec.groups == 1:
        return x
    return spec.xp.reshape(x, tuple(x.shape[:-4]) + (spec.heads,) + tuple(x.shape[-2:]))


def _combined_mask(spec: _Spec, mask, causal: bool):
    """The boolean mask actually applied (user mask AND causal), or None."""
    if not causal:
        return mask
    xp = spec.xp
    tri = np.arange(spec.tk)[None, :] <= np.arange(spec.tq)[:, None] + (spec.tk - spec.tq)
    tri = xp.asarray(tri, device=spec.device)
    return tri if mask is None else (mask & tri)


def _device(x):
    return array_api_compat.device(x)


def _emit(record: Recorder | None, name: str, value, **meta):
    """Hand ``value`` to the recorder; return the value the computation continues with.

    A recorder normally returns None and the value is kept. It may instead return a replacement of
    the same shape and array type (the "by hand" mode of the worked examples rounds every
    intermediate to the digits shown, as a person with a calculator would, and the next step is
    computed from the rounded numbers by this same code).
    """
    if record is None:
        return value
    replacement = record(name, value, **meta)
    return value if replacement is None else replacement


def _empty_result(spec: _Spec, q, v, *, return_weights: bool, return_lse: bool = False):
    xp = spec.xp
    result = (xp.zeros(spec.out_shape, dtype=q.dtype, device=spec.device),)
    if return_weights:
        result += (xp.zeros(spec.scores_shape, dtype=q.dtype, device=spec.device),)
    if return_lse:
        result += (xp.full(spec.scores_shape[:-1], -xp.inf, dtype=q.dtype, device=spec.device),)
    return result if len(result) > 1 else result[0]


def _fused_softmax_rows(q):
    """The C extension's one-pass softmax step, for float32 NumPy inputs when it is built."""
    if q.dtype != np.float32 or _kernel_module._fused is None:  # not compiled: NumPy's passes are used
        return None
    return _kernel_module._fused.softmax_rows


def _plain_fused(spec: _Spec, q, k, v):
    """attention_reference's steps for unmasked float32 inputs, its softmax (max, subtract, exp,
    sum) done as one C pass per row: scores = q·kᵀ·scale, exp(scores − row max) in place, ÷ row sum, ·v.
    Every row has a key (no mask), so every row sum is ≥ 1."""
    qg, kg, vg = _group(spec, q), _group_kv(spec, k), _group_kv(spec, v)
    scores = qg @ np.swapaxes(kg, -1, -2)                      # (…, [G, H/G,] Tq, Tk), a fresh array
    scores *= np.float32(spec.scale)
    rows = scores.reshape(-1, spec.tk)                         # a view: one row per query
    ref = np.full(rows.shape[0], -np.inf, dtype=np.float32)    # moves to each row's max on the first pass
    row_sum = np.zeros(rows.shape[0], dtype=np.float32)
    _fused_softmax_rows(q)(rows, ref, row_sum, np.empty_like(row_sum), None, 0.0)
    scores /= row_sum.reshape(scores.shape[:-1] + (1,))
    return _ungroup(spec, scores @ vg)                         # (…, H, Tq, Dv)


def _torch_sdpa(spec: _Spec, q, k, v, mask, bias, causal):
    """torch's fused scaled_dot_product_attention, with qkv's mask semantics kept.

    torch's is_causal aligns top-left, so bottom-right causality is passed as an explicit mask;
    rows with no allowed key are given a harmless all-True mask and zeroed afterwards, so no
    NaN reaches the output or the gradients.
    """
    import torch
    import torch.nn.functional as F

    allowed = _combined_mask(spec, mask, causal)
    if bias is not None:
        finite_bias = ~(torch.isinf(bias) & (bias < 0))
        allowed = finite_bias if allowed is None else (allowed & finite_bias)
    lead = spec.scores_shape[:-2]
    q_b = q.expand(lead + tuple(q.shape[-2:]))
    kv_lead = lead[:-1] + (spec.kv_heads,) if spec.groups > 1 else lead
    k_b = k.expand(kv_lead + tuple(k.shape[-2:]))
    v_b = v.expand(kv_lead + tuple(v.shape[-2:]))
    any_allowed = None
    attn_mask = None
    if allowed is not None:
        allowed = allowed.expand(spec.scores_shape)
        any_allowed = allowed.any(dim=-1, keepdim=True)  # (…, Tq, 1)
        allowed = allowed | ~any_allowed
        attn_mask = allowed
    if bias is not None:
        bias_t = bias.to(q.dtype).expand(spec.scores_shape)
        bias_t = torch.where(torch.isneginf(bias_t), 0.0, bias_t)  # those keys are blocked in `allowed`
        attn_mask = bias_t if allowed is None else bias_t.masked_fill(~allowed, float("-inf"))
    out = F.scaled_dot_product_attention(q_b, k_b, v_b, attn_mask=attn_mask, scale=spec.scale,
                                         enable_gqa=spec.groups > 1)
    if any_allowed is not None:
        out = out * any_allowed.to(out.dtype)
    return out
