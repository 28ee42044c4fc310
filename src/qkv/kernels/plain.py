"""The plain path: attention with every intermediate materialised (the full Tq×Tk score matrix).

`reference(call, q, k, v, …)` computes a checked call (`kernels.call.check_call`) step by step —
scores, scaled (+ bias), score_mod, mask, softmax (`softmax_steps`), weights·v — handing each step
to a recorder when one is given (the explainer's numbers are these). It is the route PLAIN, the
reference the other routes are tested against, and what the C ops fall back on for calls they do
not take (scores past the float range): `qkv.attention.attention_reference` is it, checked.

It imports nothing of the kernel (no route, executor, blocked walk or C training route): only the
validator's `Call` and index arrays, the one place user functions are called (`kernels.functions`),
the magnitude rules (`kernels.magnitude`), and the recording protocol (`qkv.trace`). Scores past the
float range are handled here without a retry: wider work (float64; long double for float64) or q and
k divided by exact powers of two (torch float64, and every traced call: no data-dependent branch).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._backend import is_torch, namespace
from ..trace import (BIASED_SCORES, CONTRIBUTIONS, EXP_SCORES, EXP_SUM, MASK, MODIFIED_SCORES, OUT, SCALED_SCORES,
                     SCORES, SHARES, SOFTMAX_MAX, WEIGHTS, Recorder, emit)
from .call import Call, check_call, index_arrays
from .functions import _compiling, as_bool_mask, as_scores, call_mask, call_score
from .magnitude import tops_may_overflow, value_top, value_tops

__all__ = ["attend", "reference", "softmax_steps", "softmax_lse", "empty_result", "combined_mask", "evaluate", "group",
           "group_kv", "ungroup"]


# --------------------------------------------------------------------------- the softmax copies
# softmax(s)ⱼ = e^(sⱼ − m) / Σₖ e^(sₖ − m) is written once per algorithm that needs its own form of it, and
# nowhere else; every route's result is tested against a float64 reference.
#  1. `softmax_steps` (here): the whole row at once, m its largest allowed score; recorded step by step
#     for the explainer, exact power-of-two shifts for scores past the float range; NumPy and torch
#     (autograd differentiates it). The reference, the PLAIN route, `qkv.softmax`.
#  2. `blocked._Context.walk` (NumPy): online softmax over key blocks against a lazily moved reference r
#     (`blocked._HEADROOM`), acc and l rescaled by exp(r − r_new) only when r moves — the blocked kernel
#     never holds a whole row (NUMPY_WALK: float64, long double, no C extension).
#  3. `_fused.c` `softmax_block` / `softmax_rows`: the same online step in one C pass per row (float32,
#     vector exp of `_exp.h`) — PY_WALK, FLASH_ROWS, FLASH_MANY, and PLAIN_C_SOFTMAX's whole rows.
#  4. `_tile.h` `tile_block`: that step with the exponentials taken while the score tile is in registers
#     (AVX-512 / AVX2 register tiles; the same reference rule: it agrees with 3 to float32 rounding).
#  5. `_backward.c` (and `bt_gemm`'s tiles), `distributed.ring` for non-float32 blocks: the backward's
#     P = exp(S − lse) from the forward's stored lse (FlashAttention-2: the weights are recomputed, not kept).
#  6. `merge.py` (`merge_partials`, `merge_lse`, `merge_lse_into`): partial results over disjoint key
#     ranges combined by exp(lseₖ − max lse) (split calls, ring attention, Partials).
#  7. `execute._merged_function`'s backward: the same factors aₖ = exp(lseₖ − lse) in NumPy for eager torch
#     passes (torch's own ops there would wake its OpenMP workers beside the C kernel's threads).
# (benchmarks' and `qkv.bench`'s `_local_plain` are independent peers on purpose; the explainer only
# reads the numbers recorded by 1.)


def softmax_lse(scores, mask=None, *, axis: int = -1):
    """softmax(scores) and its log-sum-exp log Σ exp(s) over the allowed entries (keepdims).

    The lse of a slice with no allowed entry is -inf. No NaN reaches the values or, under torch
    autograd, the gradients: empty slices take log(1) on a branch that `where` discards.
    """
    return softmax_steps(scores, mask, axis=axis, record=None)


def softmax_steps(scores, mask=None, *, axis: int = -1, record: Recorder | None = None, shift=None):
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


def attend(q, k, v, mask=None, *, bias=None, causal=False, scale=None, mask_mod=None, score_mod=None,
           return_weights=False, return_lse=False, record: Recorder | None = None):
    """`qkv.attention.attention_reference`: the call checked, then its plain steps (`reference`)."""
    call = check_call(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod, score_mod=score_mod)
    if call.empty:
        return empty_result(call, return_weights=return_weights, return_lse=return_lse)
    return reference(call, q, k, v, return_weights=return_weights, return_lse=return_lse, record=record)


def reference(call: Call, q, k, v, *, return_weights: bool, return_lse: bool, record: Recorder | None):
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
    qg, kg = group(call, qc), group_kv(call, kc)        # (…, G, H/G, Tq, Dk), (…, G, 1, Tk, Dk)
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
    grouped = group(call, weights)                                   # (…, G, H/G, Tq, Tk)
    given = grouped > 0                   # 0·inf would be NaN (a masked key's value may be inf): no weight, no share
    norms = xp.where(given, group_kv(call, norms), xp.ones_like(grouped))
    contributions = ungroup(call, grouped * norms)                   # 0 where no weight, never computed as 0·inf
    total = xp.sum(contributions, axis=-1, keepdims=True)
    shares = xp.where(total > 0, contributions / xp.where(total > 0, total, xp.ones_like(total)),
                      xp.zeros_like(contributions))
    emit(record, CONTRIBUTIONS, contributions, formula="‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖")
    emit(record, SHARES, shares, formula="‖wⱼ·vⱼ‖ / Σₖ ‖wₖ·vₖ‖")


def _magnitude_plan(call: Call, q, k):
    """(shifts, wider) for the plain path: shifts "traced" (torch.compile: `_overflow_shifts` as
    tensors), (a, b) ints or None; wider the work dtype to compute in instead of call.work, or None.
    Decided before any product, from max|q| and max|k| as Python floats (`magnitude.tops_may_overflow`)."""
    if is_torch(q) and _compiling():
        return "traced", None
    if call.dk == 0 or call.empty:
        return None, None
    if is_torch(q):
        import torch

        top_q, top_k = value_tops(q, k)
        if not tops_may_overflow(top_q, top_k, call.dk, float(torch.finfo(call.work).max)):
            return None, None
        if call.work != torch.float64:
            return None, torch.float64
        return (int(math.frexp(top_q)[1]), int(math.frexp(top_k)[1])), None
    top_q, top_k = value_top(q), value_top(k)
    if not tops_may_overflow(top_q, top_k, call.dk, np.finfo(call.work).max):
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
    """reference's steps from q·kᵀ to the weights and lse. shifts: None, or (a, b) from
    _overflow_shifts: q·2^−a times k·2^−b, the power of two put back exactly."""
    xp, work = call.xp, call.work
    shift = None
    if shifts is None:
        if is_torch(qg):
            scores = ungroup(call, qg @ xp.matrix_transpose(kg))  # (…, H, Tq, Tk)
        else:   # a NaN or inf in q or k makes some products NaN (0·inf, inf − inf): a masked key's are dropped
            with np.errstate(invalid="ignore"):   # before the softmax (a right result, no warning), others reach the
                scores = ungroup(call, qg @ xp.matrix_transpose(kg))   # output as NaN, as from the input
        scores = emit(record, SCORES, scores, formula="Q·Kᵀ")
        scaled = scores * _as_work(call, call.scale)
        scaled = emit(record, SCALED_SCORES, scaled, formula=_scale_formula(call))
    else:
        # |q|·|k|·Dk could overflow q·kᵀ although q·kᵀ·scale fits: multiply q·2^−a by k·2^−b (exact
        # powers of two), scale, and put 2^(a+b) back (inf only where the scaled score itself overflows)
        a, b = shifts
        scaled = ungroup(call, _ldexp(xp, qg, -a) @ xp.matrix_transpose(_ldexp(xp, kg, -b)))
        scaled = scaled * _as_work(call, call.scale)            # the scores · 2^−(a+b)
        shift = a + b                                            # softmax takes the shift (exactly)
    if shift is not None and call.score_mod is not None and not call.score_info.relative:
        scaled, shift = _ldexp(xp, scaled, shift), None          # the function needs the scores themselves
    if call.bias is not None:   # (on shifted scores: the bias divided by the same power of two)
        bias = xp.astype(call.bias, work)
        scaled = scaled + (bias if shift is None else _ldexp(xp, bias, -shift))
        scaled = emit(record, BIASED_SCORES, scaled, formula="Q·Kᵀ/√d_k + bias")
    indices = q if (call.mask_mod is not None or call.score_mod is not None) else None
    if call.score_mod is not None:
        scaled = xp.broadcast_to(scaled, call.scores_shape)
        if shift is None:
            modified = evaluate(call, call.score_mod, q, broadcasts=call.score_info.broadcasts, score=scaled)
        else:   # relative: score + f(h, kv − q); the term (the function at score 0) shifted as the scores are
            term = xp.astype(evaluate(call, call.score_mod, q, broadcasts=call.score_info.broadcasts,
                                           score=xp.zeros_like(scaled)), work)
            modified = scaled + _ldexp(xp, term, -shift)
        scaled = xp.broadcast_to(xp.astype(modified, work), call.scores_shape)
        scaled = emit(record, MODIFIED_SCORES, scaled,
                       formula=call.score_info.formula)
    allowed = combined_mask(call, indices)
    if allowed is not None and record is not None:
        emit(record, MASK, xp.where(allowed, xp.zeros_like(scaled), -xp.inf * xp.ones_like(scaled)),
              formula="0 (may attend) / −∞ (masked)")
    return softmax_steps(scaled, allowed, record=record, shift=shift)


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
        return ungroup(call, group(call, weights) @ group_kv(call, values))
    clean = xp.where(finite, values, xp.zeros_like(values))
    out = ungroup(call, group(call, weights) @ group_kv(call, clean))
    bad = xp.reshape(xp.any(~finite, axis=-1), (-1, call.tk))    # (…, Tk) → (n, Tk)
    keys = xp.nonzero(xp.any(bad, axis=0))[0]                    # the keys with a non-finite value
    w = group(call, xp.take(weights, keys, axis=-1))[..., None]  # (…, Tq, n, 1)
    vb = group_kv(call, xp.take(values, keys, axis=-2))          # (…, n, Dv)
    # only those keys' non-finite entries: their finite ones are in `out` already
    vb = xp.where(group_kv(call, xp.take(finite, keys, axis=-2)), xp.zeros_like(vb), vb)
    vb = xp.expand_dims(vb, axis=-3)                              # (…, 1, n, Dv)
    terms = w * xp.where(w > 0, vb, xp.zeros_like(vb))            # 0 where the row gives no weight
    return out + ungroup(call, xp.sum(terms, axis=-2))


def _weights_times_values_traced(call: Call, weights, values, finite):
    """_weights_times_values without a branch on the values (torch.compile): weights·v over the finite
    values, then each (row, column) that gives weight > 0 to a key whose value there is +inf, −inf or
    NaN gets what the sum would: NaN for NaN or for both infinities, else that infinity. Three more
    products (Tq, Tk)·(Tk, Dv), of 0/1 indicators."""
    import torch

    clean = torch.where(finite, values, torch.zeros_like(values))
    out = ungroup(call, group(call, weights) @ group_kv(call, clean))
    seen = group(call, (weights > 0).to(values.dtype))

    def reached(flags):   # (…, H, Tq, Dv): rows that give weight to a key flagged in that column
        return ungroup(call, seen @ group_kv(call, flags.to(values.dtype))) > 0

    pos, neg, nan = reached(values == torch.inf), reached(values == -torch.inf), reached(torch.isnan(values))
    out = torch.where(pos, torch.full_like(out, torch.inf), out)
    out = torch.where(neg, torch.full_like(out, -torch.inf), out)
    return torch.where(nan | (pos & neg), torch.full_like(out, torch.nan), out)


# --------------------------------------------------------------------------- internals
def _as_work(call: Call, value: float):
    """A Python float in the compute dtype (NumPy's longdouble keeps its precision)."""
    return np.longdouble(value) if isinstance(call.work, np.dtype) and call.work == np.longdouble else value


def group(call: Call, x):
    """(…, H, T, D) → (…, G, H/G, T, D): query heads gathered under their key/value head."""
    if call.groups == 1:
        return x
    return call.xp.reshape(x, tuple(x.shape[:-3]) + (call.kv_heads, call.groups) + tuple(x.shape[-2:]))


def group_kv(call: Call, x):
    """(…, G, T, D) → (…, G, 1, T, D): one key/value head shared by its group, no copy."""
    if call.groups == 1:
        return x
    return call.xp.expand_dims(x, axis=-3)


def ungroup(call: Call, x):
    """(…, G, H/G, T, D) → (…, H, T, D)."""
    if call.groups == 1:
        return x
    return call.xp.reshape(x, tuple(x.shape[:-4]) + (call.heads,) + tuple(x.shape[-2:]))


def evaluate(call: Call, fn, like, *, broadcasts: bool, score=None):
    """A mask function's booleans (…, H, Tq, Tk), or a score function's scores from `score` (the
    scores, (…, H, Tq, Tk)), in like's array library.

    qkv.masks' functions (broadcasts: the call's MaskInfo / ScoreInfo says so) are called once with
    broadcasting index arrays (see
    `index_arrays`); any other function once per (batch, head) pair with scalar b and h, as the
    kernel calls it, so a function that indexes captured tensors in steps (`bias[b][q_idx]`) means
    the same on every route. A score function must return one score per score it was given."""
    xp = call.xp
    b_all, h_all, q_idx, kv_idx = index_arrays(call, like=like)
    if broadcasts:
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


def combined_mask(call: Call, like=None):
    """The boolean mask actually applied (user mask AND causal AND mask_mod), or None. like: an
    array of the call (q) when there is a mask_mod."""
    xp = call.xp
    allowed = call.mask
    if call.causal:
        tri = np.arange(call.tk)[None, :] <= np.arange(call.tq)[:, None] + (call.tk - call.tq)
        tri = xp.asarray(tri, device=call.device)
        allowed = tri if allowed is None else (allowed & tri)
    if call.mask_mod is not None:
        modded = evaluate(call, call.mask_mod, like, broadcasts=call.mask_info.broadcasts)
        allowed = modded if allowed is None else (allowed & modded)
    return allowed


def empty_result(call: Call, *, return_weights: bool, return_lse: bool = False):
    xp = call.xp
    result = (xp.zeros(call.out_shape, dtype=call.dtype, device=call.device),)
    if return_weights:
        result += (xp.zeros(call.scores_shape, dtype=call.dtype, device=call.device),)
    if return_lse:
        result += (xp.full(call.scores_shape[:-1], -xp.inf, dtype=call.dtype, device=call.device),)
    return result if len(result) > 1 else result[0]


