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

import itertools
import math
from typing import Any, Callable

import numpy as np

from ._backend import is_numpy, is_torch, namespace, shape_str
from .kernels import autograd as _kernel_autograd
from .kernels import blocked as _kernel_module
from .kernels import route as _route
from .kernels.call import Call, _compiling, as_bool_mask, as_scores, call_mask, call_score, check_call, index_arrays
from .trace import (BIASED_SCORES, CONTRIBUTIONS, EXP_SCORES, EXP_SUM, MASK, MODIFIED_SCORES, OUT, RESIDUAL,
                    SCALED_SCORES, SCORES, SHARES, SOFTMAX_MAX, WEIGHTS, Recorder, emit)

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
    return _softmax_lse(scores, mask, axis=axis)[0]


def _softmax_lse(scores, mask=None, *, axis: int = -1):
    """softmax(scores) and its log-sum-exp log Σ exp(s) over the allowed entries (keepdims).

    The lse of a slice with no allowed entry is -inf. No NaN reaches the values or, under torch
    autograd, the gradients: empty slices take log(1) on a branch that `where` discards.
    """
    return _softmax_steps(scores, mask, axis=axis, record=None)


def _softmax_steps(scores, mask=None, *, axis: int = -1, record: Recorder | None = None, shift=None):
    """softmax and lse, handing a recorder the steps a person follows: m, e^(s − m), Σ e^(s − m).

    softmax(s)ⱼ = e^(sⱼ − m) / Σₖ e^(sₖ − m) for any m; m is the row's largest allowed score, so no
    exponential overflows (every e^(s − m) ≤ 1). Recorded (only when ``record`` is given):
    ``softmax_max`` m (…, 1), ``exp_scores`` e^(s − m) (0 where masked), ``exp_sum`` Σ (…, 1); the
    weights are computed from what the recorder hands back (a by-hand recorder's rounded numbers).

    shift: the scores are s·2^−shift (scores too large for the float range, see _overflow_shifts):
    the weights are e^((s' − m')·2^shift), exact powers of two, and lse = m'·2^shift + log Σ.
    """
    xp = namespace(scores=scores, mask=mask)
    # A -inf score needs no special case: exp(-inf - max) = 0. Masked entries become -inf too.
    masked = scores if mask is None else xp.where(xp.astype(mask, xp.bool), scores, -xp.inf)
    row_max = xp.max(masked, axis=axis, keepdims=True)
    # A slice with nothing allowed has max -inf; subtracting 0 instead keeps exp(-inf) = 0 clean.
    row_max = xp.where(row_max == -xp.inf, xp.zeros_like(row_max), row_max)
    row_max = emit(record, SOFTMAX_MAX, row_max, formula="m = maxⱼ sⱼ")
    if shift is None:
        exps = emit(record, EXP_SCORES, xp.exp(masked - row_max), formula="e^(s − m)")
    else:   # (s' − m') ≤ 0; times 2^shift it may reach −inf: its exponential is 0, as it should be
        if is_torch(masked):   # (torch warns of nothing; np.errstate cannot be traced by torch.compile)
            exps = xp.exp(_ldexp(xp, masked - row_max, shift))
        else:
            with np.errstate(over="ignore"):
                exps = xp.exp(_ldexp(xp, masked - row_max, shift))
    total = emit(record, EXP_SUM, xp.sum(exps, axis=axis, keepdims=True), formula="Σ e^(s − m)")
    # Empty means nothing allowed (the sum is 0); a NaN sum (scores that overflowed to inf) is not
    # empty: its lse is NaN, never the −inf that marks an empty row.
    empty = total == 0
    safe_total = xp.where(empty, xp.ones_like(total), total)
    top = row_max if shift is None else _ldexp(xp, row_max, shift)
    lse = xp.where(empty, xp.full_like(total, -xp.inf), top + xp.log(safe_total))
    return exps / safe_total, lse


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
    return _attention(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod,
                      score_mod=score_mod, return_weights=return_weights, return_lse=return_lse, record=record)


def _attention(q, k, v, mask=None, *, bias=None, causal=False, scale=None, mask_mod=None, score_mod=None,
               return_weights=False, return_lse=False, record=None, route=None):
    """`attention` with route= (the fastest route allowed, a qkv.kernels.route.RouteName or its value:
    tests and benchmarks pin a route with it). The call is checked once, its route chosen once
    (`choose_route`), and the route executed."""
    call = check_call(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod, score_mod=score_mod)
    want = "weights" if return_weights or record is not None else "lse" if return_lse else "out"
    if is_torch(q) and _compiling():   # torch.compile: a route decided without reading values
        chosen = _route.traced_torch_route(call, want=want, route=route)
    else:
        call, chosen = _route.choose_call_route(call, want=want, route=route)   # (a mask array of key ranges: as ranges)
    return _run(call, chosen, return_weights=return_weights, return_lse=return_lse, record=record)


def _run(call: Call, route: "_route.Route", *, return_weights: bool, return_lse: bool, record: Recorder | None):
    """Execute a chosen route: nothing here decides anything."""
    name = route.name
    if name == _route.EMPTY:
        return _empty_result(call, return_weights=return_weights, return_lse=return_lse)
    if name == _route.PLAIN:
        return _reference(call, call.q, call.k, call.v, return_weights=return_weights, return_lse=return_lse,
                          record=record)
    if name == _route.PLAIN_C_SOFTMAX:
        return _plain_fused(call, call.q, call.k, call.v)
    if name == _route.TORCH_SDPA:
        if _compiling():   # traced (unmasked): in an op that reads the values, as eager calls do
            return _kernel_autograd.checked_sdpa(call)
        return _torch_sdpa(call, call.q, call.k, call.v)
    if route.key_rows:   # one pass per key range (and batch), merged by lse
        return _by_key_ranges(call, route, return_lse=return_lse)
    if name == _route.TORCH_FLASH:   # the C forward + backward on CPU torch tensors (kernels/autograd.py)
        return _kernel_autograd.run(call, return_lse=return_lse)
    return _kernel_module.run(call, route, "lse" if return_lse else "out")


def _by_key_ranges(call: Call, route: "_route.Route", *, return_lse: bool):
    """A route with key_rows: for each batch (one entry: all batches at once) and each of its key
    ranges, one pass of the route with that range alone (TORCH_FLASH: the C forward and backward under
    torch autograd, the op under torch.compile; the kernel's routes: the ranges as the mask), their
    (out, lse) merged exactly (`merge_lse`, differentiable). out (…, H, Tq, Dv), lse (…, H, Tq)."""
    import dataclasses

    from .kernels.merge import merge_lse, merge_lse_into

    xp = call.xp
    torch_flash = route.name == _route.TORCH_FLASH
    traced = is_torch(call.q) and _compiling()
    outs, lses = [], []
    for b, per_range in enumerate(route.key_rows):
        base = _route.batch_call(call, b) if len(route.key_rows) > 1 else call
        parts = []
        for r, rows in enumerate(per_range):
            if torch_flash:   # rows alone say which keys each query sees
                import torch

                bare = dataclasses.replace(base, mask_mod=None, mask_info=None, causal=False)
                # (under torch.compile the rows are the graph's constants: the default key block)
                block_k = _kernel_autograd.BLOCK_K if traced else \
                    _route.pass_block_k(rows, _kernel_autograd.BLOCK_K) or _kernel_autograd.BLOCK_K
                rows = rows if traced else torch.from_numpy(rows)
                out, lse = _kernel_autograd.run(bare, return_lse=True, rows=rows, traced=traced, block_k=block_k)
            else:
                sub = _route.split_call(base, rows, 0, 0)
                chosen = _route.choose_route(sub, want="lse", route=route.name, v_top=route.v_top,
                                             block_k=_route.pass_block_k(rows, _route._SPARSE_BLOCK_K))
                out, lse = _kernel_module.run(sub, chosen, "lse")
            parts.append((xp.astype(out, call.work, copy=False), xp.astype(lse, call.work, copy=False)))
        if is_torch(call.q) and traced:   # differentiable, no branch on the values
            out, lse = merge_lse(parts) if len(parts) > 1 else parts[0]
        elif is_torch(call.q):
            out, lse = _merged_function()(*(x for part in parts for x in part)) if len(parts) > 1 else parts[0]
        else:                  # in place on the first pass's fresh arrays: no temporaries per pass
            out, lse = parts[0]
            for more in parts[1:]:
                merge_lse_into(out, lse, *more)
        outs.append(out)
        lses.append(lse)
    if len(outs) > 1:
        out, lse = xp.reshape(xp.stack(outs), call.out_shape), xp.reshape(xp.stack(lses), call.out_shape[:-1])
    out, lse = xp.astype(out, call.dtype), xp.astype(lse, call.dtype)
    return (out, lse) if return_lse else out


_MERGED = None


def _merged_function():
    """merge_lse of eager torch passes as a torch.autograd.Function computed in NumPy (float32, one
    thread): torch's own elementwise ops here wake its OpenMP workers, which then spin beside the C
    kernel's threads in the next pass (measured: the sinks + window backward 2× slower). Inputs
    out₁, lse₁, out₂, lse₂, …; outputs (out, lse). Backward, with aₖ = exp(lseₖ − lse) (0 for an empty
    pass): d outₖ = aₖ·dO, d lseₖ = aₖ·(dL + rowsum(dO ∘ (outₖ − O)))."""
    global _MERGED
    if _MERGED is None:
        import torch

        from .kernels.merge import merge_lse_into

        def arrays(tensors):
            return [np.ascontiguousarray(t.detach().numpy()) for t in tensors]

        class MergedPasses(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *flat):
                outs, lses = arrays(flat[0::2]), arrays(flat[1::2])
                out, lse = outs[0].copy(), lses[0].copy()
                for more in zip(outs[1:], lses[1:]):
                    merge_lse_into(out, lse, *more)
                out_t, lse_t = torch.from_numpy(out), torch.from_numpy(lse)
                ctx.save_for_backward(*flat, out_t, lse_t)
                return out_t, lse_t

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, d_out, d_lse):
                saved = ctx.saved_tensors
                flat, out, lse = arrays(saved[:-2]), saved[-2].numpy(), saved[-1].numpy()
                d_out = np.zeros_like(out) if d_out is None else np.ascontiguousarray(d_out.numpy())
                d_lse = np.zeros_like(lse) if d_lse is None else np.ascontiguousarray(d_lse.numpy())
                safe = np.where(lse == -np.inf, 0, lse)
                grads = []
                for o, l in zip(flat[0::2], flat[1::2]):
                    a = np.exp(l - safe)                     # 0 where the pass (or every pass) is empty
                    spread = np.einsum("...d,...d->...", d_out, o - out, optimize=False)
                    grads += [torch.from_numpy(d_out * a[..., None]), torch.from_numpy(a * (d_lse + spread))]
                return tuple(grads)

        _MERGED = MergedPasses
    return _MERGED.apply


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
    call = check_call(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod,
                      score_mod=score_mod)
    if call.empty:
        return _empty_result(call, return_weights=return_weights, return_lse=return_lse)
    return _reference(call, q, k, v, return_weights=return_weights, return_lse=return_lse, record=record)


def _reference(call: Call, q, k, v, *, return_weights: bool, return_lse: bool, record: Recorder | None):
    """attention_reference's steps on a checked call.

    Scores past the float range are decided before any product (`_magnitude_plan`, one rule in
    Python floats from max|q|, max|k|, Dk): float16/bfloat16/float32 then compute in float64 ("wider
    work"; NumPy float64 in long double where it is wider) and cast back; torch float64 and traced
    calls divide q and k by exact powers of two (`_overflow_shifts`) and carry the shift through
    bias, relative score terms and softmax."""
    xp = call.xp
    shifts, wider = _magnitude_plan(call, q, k)
    if wider is not None:
        import dataclasses

        call = dataclasses.replace(call, work=wider)
    work = call.work
    qc, kc, vc = (xp.astype(a, work) for a in (q, k, v))
    qg, kg = _group(call, qc), _group_kv(call, kc)        # (…, G, H/G, Tq, Dk), (…, G, 1, Tk, Dk)
    if isinstance(shifts, str):   # traced: no data-dependent branch, shifts as tensors (0 when not needed)
        shifts = _overflow_shifts(call, qc, kc)
    weights, lse = _scores_to_weights(call, q, qg, kg, record, shifts)
    weights = emit(record, WEIGHTS, weights, formula="e^(s − m) / Σ e^(s − m) = softmax(s)")
    out = _weights_times_values(call, weights, vc)            # (…, H, Tq, Dv)
    out = emit(record, OUT, out, formula="softmax(·)·V")
    if record is not None:
        _record_contributions(call, weights, vc, record)
    result = (xp.astype(out, call.dtype),)
    if return_weights:
        result += (xp.astype(weights, call.dtype),)
    if return_lse:   # (from wider work: inf where the true lse is beyond the dtype, as documented)
        if is_torch(lse):
            result += (xp.astype(lse[..., 0], call.dtype),)
        else:
            with np.errstate(over="ignore"):
                result += (xp.astype(lse[..., 0], call.dtype),)
    return result if len(result) > 1 else result[0]


def _record_contributions(call: Call, weights, values, record: Recorder) -> None:
    """Record what each key adds to each query's output (a weight is not a contribution):
    contributions ‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖ (…, H, Tq, Tk) (weights are ≥ 0) and shares, each row's
    contributions over their sum (all 0 for a row with no weight). Only when recording."""
    xp = call.xp
    norms = xp.sqrt(xp.sum(values * values, axis=-1))                 # (…, G, Tk): ‖vⱼ‖
    norms = xp.expand_dims(norms, axis=-2)                            # (…, G, 1, Tk)
    grouped = _group(call, weights)                                   # (…, G, H/G, Tq, Tk)
    given = grouped > 0                   # 0·inf would be NaN (a masked key's value may be inf): no weight, no share
    norms = xp.where(given, _group_kv(call, norms), xp.ones_like(grouped))
    contributions = _ungroup(call, grouped * norms)                   # 0 where no weight, never computed as 0·inf
    total = xp.sum(contributions, axis=-1, keepdims=True)
    shares = xp.where(total > 0, contributions / xp.where(total > 0, total, xp.ones_like(total)),
                      xp.zeros_like(contributions))
    emit(record, CONTRIBUTIONS, contributions, formula="‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖")
    emit(record, SHARES, shares, formula="‖wⱼ·vⱼ‖ / Σₖ ‖wₖ·vₖ‖")


def _magnitude_plan(call: Call, q, k):
    """(shifts, wider) for the plain path: shifts "traced" (torch.compile: `_overflow_shifts` as
    tensors), (a, b) ints or None; wider the work dtype to compute in instead of call.work, or None.
    Decided before any product, from max|q| and max|k| as Python floats (`route.tops_may_overflow`)."""
    if is_torch(q) and _compiling():
        return "traced", None
    if call.dk == 0 or call.empty:
        return None, None
    if is_torch(q):
        import torch

        from .kernels.autograd import value_tops

        top_q, top_k = value_tops(q, k)
        if not _route.tops_may_overflow(top_q, top_k, call.dk, float(torch.finfo(call.work).max)):
            return None, None
        if call.work != torch.float64:
            return None, torch.float64
        return (int(math.frexp(top_q)[1]), int(math.frexp(top_k)[1])), None
    top_q, top_k = _route._value_top(q), _route._value_top(k)
    if not _route.tops_may_overflow(top_q, top_k, call.dk, np.finfo(call.work).max):
        return None, None
    if np.dtype(call.work) == np.float32:
        return None, np.dtype(np.float64)
    if np.dtype(call.work) == np.float64 and np.finfo(np.longdouble).max > np.finfo(np.float64).max:
        return None, np.dtype(np.longdouble)
    return (int(np.frexp(top_q)[1]), int(np.frexp(top_k)[1])), None


def _scale_formula(call: Call) -> str:
    """The scaled scores' formula: "Q·Kᵀ · 0.176777 (= 1/√d_k)" wherever the scale is 1/√d_k — the default, or
    given as 1/√d_k (MultiHeadAttention and the models pass it, computed in float32 or float64) — else the
    scale alone (a temperature, GPT-2's ÷ layer, Gemma's query_pre_attn_scalar: the models' meta says why)."""
    scale = float(call.scale)
    # a scale of 1 given is "not scaled" even where d_k = 1 makes it 1/√1 (the group meeting's given scores)
    root = call.default_scale or (call.dk > 1 and abs(scale * math.sqrt(call.dk) - 1.0) <= 2.0 ** -22)
    return f"Q·Kᵀ · {scale:.6g}" + (" (= 1/√d_k)" if root else "")


def _scores_to_weights(call: Call, q, qg, kg, record, shifts):
    """_reference's steps from q·kᵀ to the weights and lse. shifts: None, or (a, b) from
    _overflow_shifts: q·2^−a times k·2^−b, the power of two put back exactly."""
    xp, work = call.xp, call.work
    shift = None
    if shifts is None:
        if is_torch(qg):
            scores = _ungroup(call, qg @ xp.matrix_transpose(kg))  # (…, H, Tq, Tk)
        else:   # a NaN or inf in q or k makes some products NaN (0·inf, inf − inf): a masked key's are dropped
            with np.errstate(invalid="ignore"):   # before the softmax (a right result, no warning), others reach the
                scores = _ungroup(call, qg @ xp.matrix_transpose(kg))   # output as NaN, as from the input
        scores = emit(record, SCORES, scores, formula="Q·Kᵀ")
        scaled = scores * _as_work(call, call.scale)
        scaled = emit(record, SCALED_SCORES, scaled, formula=_scale_formula(call))
    else:
        # |q|·|k|·Dk could overflow q·kᵀ although q·kᵀ·scale fits: multiply q·2^−a by k·2^−b (exact
        # powers of two), scale, and put 2^(a+b) back (inf only where the scaled score itself overflows)
        a, b = shifts
        scaled = _ungroup(call, _ldexp(xp, qg, -a) @ xp.matrix_transpose(_ldexp(xp, kg, -b)))
        scaled = scaled * _as_work(call, call.scale)            # the scores · 2^−(a+b)
        shift = a + b                                            # softmax takes the shift (exactly)
    if shift is not None and call.score_mod is not None and not getattr(call.score_mod, "relative", False):
        scaled, shift = _ldexp(xp, scaled, shift), None          # the function needs the scores themselves
    if call.bias is not None:   # (on shifted scores: the bias divided by the same power of two)
        bias = xp.astype(call.bias, work)
        scaled = scaled + (bias if shift is None else _ldexp(xp, bias, -shift))
        scaled = emit(record, BIASED_SCORES, scaled, formula="Q·Kᵀ/√d_k + bias")
    indices = q if (call.mask_mod is not None or call.score_mod is not None) else None
    if call.score_mod is not None:
        scaled = xp.broadcast_to(scaled, call.scores_shape)
        if shift is None:
            modified = _evaluate(call, call.score_mod, q, score=scaled)
        else:   # relative: score + f(h, kv − q); the term (the function at score 0) shifted as the scores are
            term = xp.astype(_evaluate(call, call.score_mod, q, score=xp.zeros_like(scaled)), work)
            modified = scaled + _ldexp(xp, term, -shift)
        scaled = xp.broadcast_to(xp.astype(modified, work), call.scores_shape)
        scaled = emit(record, MODIFIED_SCORES, scaled,
                       formula=getattr(call.score_mod, "formula", "score_mod(score, b, h, q, k)"))
    allowed = _combined_mask(call, indices)
    if allowed is not None and record is not None:
        emit(record, MASK, xp.where(allowed, xp.zeros_like(scaled), -xp.inf * xp.ones_like(scaled)),
              formula="0 (may attend) / −∞ (masked)")
    return _softmax_steps(scaled, allowed, record=record, shift=shift)


def _overflow_shifts(call: Call, q, k):
    """(a, b): powers of two to divide q and k by before q·kᵀ, when max|q|·max|k|·Dk could pass the
    float range (else None). NumPy decides in Python; torch always takes the shifts as tensors (0
    when not needed), so there is no data-dependent branch for torch.compile."""
    xp = call.xp
    if call.dk == 0:
        return None
    if is_torch(q):
        import torch

        top_q, top_k = torch.amax(torch.abs(q.detach())), torch.amax(torch.abs(k.detach()))
        limit = torch.finfo(call.work).max
        risk = (top_q.double() * top_k.double() * call.dk > limit / 4) & torch.isfinite(top_q) & torch.isfinite(top_k)
        a, b = torch.frexp(top_q)[1], torch.frexp(top_k)[1]
        zero = torch.zeros_like(a)
        return torch.where(risk, a, zero), torch.where(risk, b, zero)
    top_q, top_k = np.max(np.abs(q)), np.max(np.abs(k))
    if not (np.isfinite(top_q) and np.isfinite(top_k)):
        return None
    limit = np.finfo(call.work).max
    if top_q * (top_k / limit) * call.dk <= 0.25:   # divided first: the check itself must not overflow
        return None
    return int(np.frexp(top_q)[1]), int(np.frexp(top_k)[1])


def _ldexp(xp, x, exponent):
    """x·2^exponent, exact (the factor itself is never formed, so it cannot overflow)."""
    if is_torch(x):
        import torch

        return torch.ldexp(x, torch.as_tensor(exponent, device=x.device)).to(x.dtype)
    with np.errstate(over="ignore"):   # inf where the value itself is beyond the float range
        return np.ldexp(x, exponent).astype(x.dtype, copy=False)


def _weights_times_values(call: Call, weights, values):
    """weights·v (…, H, Tq, Dv). Where some values are not finite, a key's value is read only by
    the rows that give it weight > 0 (a product 0·NaN would otherwise poison every row)."""
    xp = call.xp
    finite = xp.isfinite(values)
    if is_torch(values) and _compiling():   # no data-dependent branch under torch.compile
        return _weights_times_values_traced(call, weights, values, finite)
    if bool(xp.all(finite)):
        return _ungroup(call, _group(call, weights) @ _group_kv(call, values))
    clean = xp.where(finite, values, xp.zeros_like(values))
    out = _ungroup(call, _group(call, weights) @ _group_kv(call, clean))
    bad = xp.reshape(xp.any(~finite, axis=-1), (-1, call.tk))    # (…, Tk) → (n, Tk)
    keys = xp.nonzero(xp.any(bad, axis=0))[0]                    # the keys with a non-finite value
    w = _group(call, xp.take(weights, keys, axis=-1))[..., None]  # (…, Tq, n, 1)
    vb = _group_kv(call, xp.take(values, keys, axis=-2))          # (…, n, Dv)
    # only those keys' non-finite entries: their finite ones are in `out` already
    vb = xp.where(_group_kv(call, xp.take(finite, keys, axis=-2)), xp.zeros_like(vb), vb)
    vb = xp.expand_dims(vb, axis=-3)                              # (…, 1, n, Dv)
    terms = w * xp.where(w > 0, vb, xp.zeros_like(vb))            # 0 where the row gives no weight
    return out + _ungroup(call, xp.sum(terms, axis=-2))


def _weights_times_values_traced(call: Call, weights, values, finite):
    """_weights_times_values without a branch on the values (torch.compile): weights·v over the finite
    values, then each (row, column) that gives weight > 0 to a key whose value there is +inf, −inf or
    NaN gets what the sum would: NaN for NaN or for both infinities, else that infinity. Three more
    products (Tq, Tk)·(Tk, Dv), of 0/1 indicators."""
    import torch

    clean = torch.where(finite, values, torch.zeros_like(values))
    out = _ungroup(call, _group(call, weights) @ _group_kv(call, clean))
    seen = _group(call, (weights > 0).to(values.dtype))

    def reached(flags):   # (…, H, Tq, Dv): rows that give weight to a key flagged in that column
        return _ungroup(call, seen @ _group_kv(call, flags.to(values.dtype))) > 0

    pos, neg, nan = reached(values == torch.inf), reached(values == -torch.inf), reached(torch.isnan(values))
    out = torch.where(pos, torch.full_like(out, torch.inf), out)
    out = torch.where(neg, torch.full_like(out, -torch.inf), out)
    return torch.where(nan | (pos & neg), torch.full_like(out, torch.nan), out)


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


# --------------------------------------------------------------------------- internals
def _as_work(call: Call, value: float):
    """A Python float in the compute dtype (NumPy's longdouble keeps its precision)."""
    return np.longdouble(value) if isinstance(call.work, np.dtype) and call.work == np.longdouble else value


def _group(call: Call, x):
    """(…, H, T, D) → (…, G, H/G, T, D): query heads gathered under their key/value head."""
    if call.groups == 1:
        return x
    return call.xp.reshape(x, tuple(x.shape[:-3]) + (call.kv_heads, call.groups) + tuple(x.shape[-2:]))


def _group_kv(call: Call, x):
    """(…, G, T, D) → (…, G, 1, T, D): one key/value head shared by its group, no copy."""
    if call.groups == 1:
        return x
    return call.xp.expand_dims(x, axis=-3)


def _ungroup(call: Call, x):
    """(…, G, H/G, T, D) → (…, H, T, D)."""
    if call.groups == 1:
        return x
    return call.xp.reshape(x, tuple(x.shape[:-4]) + (call.heads,) + tuple(x.shape[-2:]))


def _evaluate(call: Call, fn, like, *, score=None):
    """A mask function's booleans (…, H, Tq, Tk), or a score function's scores from `score` (the
    scores, (…, H, Tq, Tk)), in like's array library.

    qkv.masks' functions (`broadcasts`) are called once with broadcasting index arrays (see
    `index_arrays`); any other function once per (batch, head) pair with scalar b and h, as the
    kernel calls it, so a function that indexes captured tensors in steps (`bias[b][q_idx]`) means
    the same on every route. A score function must return one score per score it was given."""
    xp = call.xp
    b_all, h_all, q_idx, kv_idx = index_arrays(call, like=like)
    if getattr(fn, "broadcasts", False):
        if score is not None:
            return as_scores(call_score(fn, score, b_all, h_all, q_idx, kv_idx), score)
        return as_bool_mask(call_mask(fn, b_all, h_all, q_idx, kv_idx), xp, call.device)
    torch_scalar = is_torch(like)
    if torch_scalar:
        import torch
    # (itertools, not np.ndindex: torch.compile traces this loop)
    pairs = list(itertools.product(*(range(n) for n in call.lead))) if call.lead else [()]
    heads = call.lead[-1] if call.lead else 1
    results = []
    for number, index in enumerate(pairs):
        b, h = divmod(number, heads)   # the leading dimensions flattened in C order, heads last
        b, h = ((torch.tensor(b, device=call.device), torch.tensor(h, device=call.device)) if torch_scalar
                else (np.int64(b), np.int64(h)))
        if score is not None:
            results.append(as_scores(call_score(fn, score[index], b, h, q_idx, kv_idx), score[index]))
        else:
            allowed = as_bool_mask(call_mask(fn, b, h, q_idx, kv_idx), xp, call.device)
            results.append(xp.broadcast_to(allowed, (call.tq, call.tk)))
    return xp.reshape(xp.stack(results), call.scores_shape)


def _combined_mask(call: Call, like=None):
    """The boolean mask actually applied (user mask AND causal AND mask_mod), or None. like: an
    array of the call (q) when there is a mask_mod."""
    xp = call.xp
    allowed = call.mask
    if call.causal:
        tri = np.arange(call.tk)[None, :] <= np.arange(call.tq)[:, None] + (call.tk - call.tq)
        tri = xp.asarray(tri, device=call.device)
        allowed = tri if allowed is None else (allowed & tri)
    if call.mask_mod is not None:
        modded = _evaluate(call, call.mask_mod, like)
        allowed = modded if allowed is None else (allowed & modded)
    return allowed


def _empty_result(call: Call, *, return_weights: bool, return_lse: bool = False):
    xp = call.xp
    result = (xp.zeros(call.out_shape, dtype=call.dtype, device=call.device),)
    if return_weights:
        result += (xp.zeros(call.scores_shape, dtype=call.dtype, device=call.device),)
    if return_lse:
        result += (xp.full(call.scores_shape[:-1], -xp.inf, dtype=call.dtype, device=call.device),)
    return result if len(result) > 1 else result[0]


def _fused_softmax_rows(q):
    """The C extension's one-pass softmax step, for float32 NumPy inputs when it is built."""
    if q.dtype != np.float32 or _kernel_module._fused is None:  # not compiled: NumPy's passes are used
        return None
    return _kernel_module._fused.softmax_rows


def _plain_fused(call: Call, q, k, v):
    """attention_reference's steps for unmasked float32 inputs, its softmax (max, subtract, exp,
    sum) done as one C pass per row: scores = q·kᵀ·scale, exp(scores − row max) in place, ÷ row sum, ·v.
    Every row has a key (no mask), so every row sum is ≥ 1."""
    qg, kg, vg = _group(call, q), _group_kv(call, k), _group_kv(call, v)
    with np.errstate(over="ignore"):   # scores past float32's range become inf, found below: the plain steps take over
        scores = qg @ np.swapaxes(kg, -1, -2)                  # (…, [G, H/G,] Tq, Tk), a fresh array
        scores *= np.float32(call.scale)
    rows = scores.reshape(-1, call.tk)                         # a view: one row per query
    ref = np.full(rows.shape[0], -np.inf, dtype=np.float32)    # moves to each row's max on the first pass
    row_sum = np.zeros(rows.shape[0], dtype=np.float32)
    _fused_softmax_rows(q)(rows, ref, row_sum, np.empty_like(row_sum), None, 0.0)
    if not np.all(np.isfinite(row_sum)):   # scores beyond the float range: the plain steps handle them
        return _reference(call, q, k, v, return_weights=False, return_lse=False, record=None)
    scores /= row_sum.reshape(scores.shape[:-1] + (1,))
    return np.broadcast_to(_ungroup(call, scores @ vg), call.out_shape)   # (…, H, Tq, Dv)


def _torch_sdpa(call: Call, q, k, v):
    """torch's fused scaled_dot_product_attention, with qkv's mask semantics kept.

    torch's is_causal aligns top-left, so bottom-right causality is passed as an explicit mask;
    rows with no allowed key are given a harmless all-True mask and zeroed afterwards, so no
    NaN reaches the output or the gradients. A mask_mod is evaluated into a dense mask.
    """
    import torch
    import torch.nn.functional as F

    lead = call.lead
    q_b = q.expand(lead + tuple(q.shape[-2:]))
    kv_lead = lead[:-1] + (call.kv_heads,) if call.groups > 1 else lead
    k_b = k.expand(kv_lead + tuple(k.shape[-2:]))
    v_b = v.expand(kv_lead + tuple(v.shape[-2:]))
    if call.causal and call.tq == call.tk and call.mask is None and call.mask_mod is None and call.bias is None:
        # square causal: torch's is_causal (top-left) is qkv's (bottom-right); every row sees a key
        return F.scaled_dot_product_attention(q_b, k_b, v_b, is_causal=True, scale=call.scale,
                                              enable_gqa=call.groups > 1)
    allowed = _combined_mask(call, q)
    bias = call.bias
    if bias is not None:
        finite_bias = ~(torch.isinf(bias) & (bias < 0))
        allowed = finite_bias if allowed is None else (allowed & finite_bias)
    any_allowed = None
    attn_mask = None
    if allowed is not None:
        allowed = allowed.expand(call.scores_shape)
        any_allowed = allowed.any(dim=-1, keepdim=True)  # (…, Tq, 1)
        allowed = allowed | ~any_allowed
        attn_mask = allowed
    if bias is not None:
        bias_t = bias.to(q.dtype).expand(call.scores_shape)
        bias_t = torch.where(torch.isneginf(bias_t), 0.0, bias_t)  # those keys are blocked in `allowed`
        attn_mask = bias_t if allowed is None else bias_t.masked_fill(~allowed, float("-inf"))
    out = F.scaled_dot_product_attention(q_b, k_b, v_b, attn_mask=attn_mask, scale=call.scale,
                                         enable_gqa=call.groups > 1)
    if any_allowed is not None:
        out = out * any_allowed.to(out.dtype)
    return out
