"""Executing a chosen route: the one table from a route's name to the function that computes it.

`dispatch(call, want=…, route=…)` asks the rulebook once (`route.choose_call_route`; under torch.compile
`route.traced_torch_route`) and `run(call, chosen, …)` executes what it chose: nothing here decides a
route. The executors of the routes that are not a module of their own live here too: PLAIN_C_SOFTMAX
(the plain steps with the C one-pass softmax), TORCH_SDPA (torch's fused kernel with qkv's mask
semantics; under torch.compile qkv's checked op `qkv::checked_sdpa`) and a route's key ranges run one
pass each and merged by their log-sum-exp (`_by_key_ranges`).

The kernel's entry points live here too, since they ask the rulebook and then execute:
`blocked_attention`, `partial_attention` and `kernel_attention` (the blocked kernel on NumPy arrays,
a route pinned with route=) and `flash_attention` (the C training route on torch tensors). Above
this module: `qkv.attention` (the API); below it the rulebook (`route`) and every route's module
(`plain`, `blocked`, `autograd`).
"""

from __future__ import annotations

import dataclasses
import sys
import threading

import numpy as np

from .. import _backend as compat  # array-api-compat, imported on first use
from .._backend import is_torch
from .._keep import keep
from ..trace import Recorder
from . import autograd, blocked, native, plain, speed
from . import route as rulebook
from .call import Call, check_call
from .functions import _compiling
from .magnitude import value_tops
from .merge import Partial, merge_lse, merge_lse_into
from .route import Route

__all__ = ["dispatch", "run", "short_torch", "EXECUTORS", "blocked_attention", "partial_attention", "kernel_attention",
           "flash_attention"]


# --------------------------------------------------------------------------- entry points
def blocked_attention(q, k, v, mask=None, *, bias=None, causal: bool = False, scale: float | None = None,
                      mask_mod=None, score_mod=None, block_q: int | None = None, block_k: int | None = None,
                      num_threads: int | None = None, return_lse: bool = False):
    """softmax(q·kᵀ·scale + bias, masked)·v without ever forming the Tq×Tk score matrix.

    Args:
      q: (…, Tq, Dk) queries; with heads (…, H, Tq, Dk). float32, float64, NumPy's longdouble
         (computed in themselves) or float16 (computed in float32); the result has q's dtype.
      k: (…, Tk, Dk) keys; (…, G, Tk, Dk) with 1 < G < H, H % G == 0 is grouped-query attention:
         query head h reads key/value head h // (H // G), without copying k or v. Other head
         counts broadcast like NumPy's (G = 1, or H = 1 against G heads).
      v: (…, Tk, Dv) values (Dv may differ from Dk), q's dtype.
      mask: boolean, broadcastable to (…, H, Tq, Tk); True = this query may attend to this key.
      bias: additive float scores, broadcastable to (…, H, Tq, Tk); −inf blocks a key too.
      causal: query i may see key j iff j <= i + (Tk − Tq): aligned bottom-right, so the last
        query sees every key. Tq = 2, Tk = 4 (two new tokens after two cached ones)::

                     k0 k1 k2 k3
            q0 (t=2)  1  1  1  0
            q1 (t=3)  1  1  1  1

        With Tq > Tk the first Tq − Tk queries see no key. Key blocks wholly above the
        diagonal are skipped, not computed and masked.
      scale: multiplies q·kᵀ; default 1/√Dk.
      mask_mod: mask_mod(b, h, q_idx, kv_idx) -> bool, True = may attend (qkv.masks, or any
        flex_attention-style function written with plain operators). Evaluated per block; a
        block it leaves empty is skipped. A function with a `block_kinds` method (everything in
        qkv.masks) says per (query block, key block) whether it is empty (never computed), full
        (no mask formed) or partial, so a sliding window of width W costs O(Tq·W).
      score_mod: score_mod(score, b, h, q_idx, kv_idx) -> score, applied to each block's
        q·kᵀ·scale + bias (qkv.masks.alibi, soft_cap, t5_relative_buckets, or your own).
      block_q: rows of q per block (default 256, clipped to Tq).
      block_k: rows of k per block (default 512, clipped to Tk;
        when Tq < 256 the default block_k grows so the score block stays 256·512 elements;
        causal calls with Tk ≤ 2048 take block_k = 256 (square blocks, less to mask);
        with a mask_mod that reports block kinds the default block_k is 256, and both are 128
        for band masks of kv − q such as windows).
      num_threads: worker threads (default: the CPUs this process may use).
      return_lse: also return lse (…, Tq) = log Σ_j exp(s_ij) over the allowed keys (natural
        log, s the modified scores), −inf for a row with no allowed key.

    Leading (batch/head) dimensions broadcast like NumPy's; there may be none (2-D inputs).

    Returns:
      out (…, Tq, Dv) in q's dtype, or (out, lse) with return_lse. A query row with no allowed
      key gives a zero row (never NaN, no warning). Tq = 0 or Tk = 0 gives a correctly shaped
      empty or zero result. Values of keys a query may not attend to are never read: a NaN or
      inf there does not reach that query's output (one that it attends to does).
    """
    return kernel_attention(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod,
                      score_mod=score_mod, block_q=block_q, block_k=block_k, num_threads=num_threads,
                      want="lse" if return_lse else "out")


def partial_attention(q, k, v, mask=None, *, bias=None, scale=None, mask_mod=None, score_mod=None) -> Partial:
    """Attention of q over the keys k (…, Tk, Dk) / values v (…, Tk, Dv), left un-normalised.

    Same inputs and broadcasting rules as `blocked_attention` (GQA included); the mask and bias
    are those of this key range, i.e. (…, Tq, Tk) for this k (a mask_mod sees kv_idx 0 … Tk−1 of
    this range). Returns a `Partial` with out (…, Tq, Dv), row_max and row_sum (…, Tq), in q's
    dtype. `finalize(partial_attention(...))` equals `blocked_attention(...)` and
    `lse_of(partial)` its lse; partials over disjoint key ranges combine with `merge_partials`.
    """
    return kernel_attention(q, k, v, mask, bias=bias, causal=False, scale=scale, mask_mod=mask_mod,
                      score_mod=score_mod, want="partial")


def kernel_attention(q, k, v, mask=None, *, bias=None, causal=False, scale=None, mask_mod=None, score_mod=None,
                     block_q=None, block_k=None, num_threads=None, want="out", call: Call | None = None, route=None,
                     tile: bool | None = None, width: int | None = None):
    """The kernel. want: "out" (the output), "lse" ((out, lse)) or "partial" (the un-normalised
    `Partial`). `call` skips validation when the caller (qkv.attention) has checked already.
    route: a Route chosen already (qkv.attention), or the fastest kernel route allowed (a RouteName
    or its value: "flash_many", "flash_rows", "py_walk", "numpy_walk"; default flash_many).
    tile, width: replace the route's C per-block choice (Route.tile, Route.width: tests run the BLAS
    step and every vector loop this way); None keeps the plan's."""
    for name, value in (("block_q", block_q), ("block_k", block_k), ("num_threads", num_threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    # (before the route: a bad value is refused whatever the call; bool is an int to Python, so checked first)
    if tile is not None and not isinstance(tile, (bool, np.bool_)):
        raise TypeError(f"tile must be True, False or None, got {tile!r}")
    if width is not None and (isinstance(width, (bool, np.bool_)) or not isinstance(width, (int, np.integer))
                              or width not in (0, 1, 8, 16)):
        raise ValueError(f"width must be 0, 1, 8 or 16, got {width!r}")
    if call is None:
        q, k, v = (np.asarray(x) if isinstance(x, (list, tuple)) else x for x in (q, k, v))
        call = check_call(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod,
                          score_mod=score_mod)
    if not compat.is_numpy_namespace(call.xp):
        raise TypeError("the blocked kernel takes NumPy arrays; pass torch tensors to qkv.attention")
    if not isinstance(route, Route):
        route = rulebook.choose_route(call, want=want, route=rulebook.FLASH_MANY if route is None else route, block_q=block_q,
                                      block_k=block_k, num_threads=num_threads)
    if tile is not None or width is not None:
        route = dataclasses.replace(route, tile=route.tile if tile is None else bool(tile),
                                    width=route.width if width is None else int(width))
    if route.key_rows:   # several key ranges per row, or per batch: one pass per range, merged by lse,
        return _by_key_ranges(call, route, return_lse=want == "lse")
    return blocked.run(call, route, want)


def flash_attention(q, k, v, *, causal: bool = False, scale: float | None = None, mask_mod=None, score_mod=None,
                    return_lse: bool = False, block_q: int = autograd.BLOCK_Q,
                    block_k: int = autograd.BLOCK_K):
    """attention(q, k, v, causal=…, scale=…, mask_mod=…) through the TORCH_FLASH route only (tests,
    benchmarks, ring attention): CPU torch tensors, forward and backward in C, with the given block
    sizes. Same shapes and meaning as `qkv.attention`; raises ValueError naming why the route does
    not take the call."""
    call = check_call(q, k, v, None, causal=causal, scale=scale, mask_mod=mask_mod, score_mod=score_mod)
    why = rulebook.torch_flash_why_not(call, pinned=True)
    if why is not None:
        raise ValueError(f"the C training route does not take this call: {why}")
    if call.empty:
        raise ValueError("the C training route does not take this call: Tq, Tk or a leading dimension is 0")
    return autograd.run(call, return_lse=return_lse, block_q=block_q, block_k=block_k)


# --------------------------------------------------------------------------- the table
def dispatch(call: Call, *, want: str = "out", route_name=None, return_weights: bool = False,
             return_lse: bool = False, record: Recorder | None = None):
    """A checked call's route chosen once (the fastest route allowed: route_name) and executed."""
    # torch.compile: a route decided without reading values (a call with a signature is never traced:
    # `call.signature` gives none while torch.compile traces)
    if call.key is None and is_torch(call.q) and _compiling():
        chosen = rulebook.traced_torch_route(call, want=want, route=route_name)
        if chosen.name == rulebook.TORCH_SDPA:
            _sdpa_registered()
    else:
        call, chosen = rulebook.choose_call_route(call, want=want, route=route_name)   # (a mask array of key ranges)
    return run(call, chosen, return_weights=return_weights, return_lse=return_lse, record=record)


def run(call: Call, chosen: Route, *, return_weights: bool = False, return_lse: bool = False,
        record: Recorder | None = None):
    """Execute a chosen route (`EXECUTORS`): nothing here decides anything. A route with key ranges
    (Route.key_rows) runs one pass per range, merged by lse."""
    if chosen.key_rows:
        return _by_key_ranges(call, chosen, return_lse=return_lse)
    return EXECUTORS[chosen.name](call, chosen, return_weights=return_weights, return_lse=return_lse,
                                  record=record)


def _empty(call, chosen, *, return_weights, return_lse, record):
    return plain.empty_result(call, return_weights=return_weights, return_lse=return_lse)


def _plain(call, chosen, *, return_weights, return_lse, record):
    return plain.reference(call, call.q, call.k, call.v, return_weights=return_weights, return_lse=return_lse,
                           record=record)


def _plain_c_softmax(call, chosen, *, return_weights, return_lse, record):
    return _plain_fused(call, call.q, call.k, call.v)


def _sdpa(call, chosen, *, return_weights, return_lse, record):
    if call.key is None and _compiling():   # traced (unmasked): in an op that reads the values, as eager calls do
        return checked_sdpa(call)
    return _torch_sdpa(call, call.q, call.k, call.v)


def _torch_flash(call, chosen, *, return_weights, return_lse, record):
    """The C forward + backward on CPU torch tensors (kernels/autograd.py)."""
    return autograd.run(call, return_lse=return_lse)


def _kernel(call, chosen, *, return_weights, return_lse, record):
    """The blocked kernel's routes (kernels/blocked.py)."""
    return blocked.run(call, chosen, "lse" if return_lse else "out")


# route → the function that computes it: f(call, route, *, return_weights, return_lse, record)
EXECUTORS = {
    rulebook.EMPTY: _empty,
    rulebook.PLAIN: _plain,
    rulebook.PLAIN_C_SOFTMAX: _plain_c_softmax,
    rulebook.TORCH_SDPA: _sdpa,
    rulebook.TORCH_FLASH: _torch_flash,
    rulebook.FLASH_MANY: _kernel,
    rulebook.FLASH_ROWS: _kernel,
    rulebook.PY_WALK: _kernel,
    rulebook.NUMPY_WALK: _kernel,
}


def _by_key_ranges(call: Call, route: Route, *, return_lse: bool):
    """A route with key_rows: for each batch (one entry: all batches at once) and each of its key
    ranges, one pass of the route with that range alone (TORCH_FLASH: the C forward and backward under
    torch autograd, the op under torch.compile; the kernel's routes: the ranges as the mask), their
    (out, lse) merged exactly (`merge_lse`, differentiable). out (…, H, Tq, Dv), lse (…, H, Tq)."""
    import dataclasses

    xp = call.xp
    torch_flash = route.name == rulebook.TORCH_FLASH
    traced = is_torch(call.q) and _compiling()
    outs, lses = [], []
    for b, per_range in enumerate(route.key_rows):
        base = rulebook.batch_call(call, b) if len(route.key_rows) > 1 else call
        parts = []
        for r, rows in enumerate(per_range):
            if torch_flash:   # rows alone say which keys each query sees
                import torch

                bare = dataclasses.replace(base, mask_mod=None, mask_info=None, causal=False)
                # (under torch.compile the rows are the graph's constants: the default key block)
                block_k = autograd.BLOCK_K if traced else \
                    rulebook.pass_block_k(rows, autograd.BLOCK_K) or autograd.BLOCK_K
                rows = rows if traced else torch.from_numpy(rows)
                out, lse = autograd.run(bare, return_lse=True, rows=rows, traced=traced, block_k=block_k)
            else:
                sub = rulebook.split_call(base, rows, 0, 0)
                chosen = rulebook.choose_route(sub, want="lse", route=route.name, v_top=route.v_top,
                                             block_k=rulebook.pass_block_k(rows, rulebook._SPARSE_BLOCK_K))
                out, lse = blocked.run(sub, chosen, "lse")
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


def _fused_softmax_rows(q):
    """The C extension's one-pass softmax step, for float32 NumPy inputs when it is built."""
    fused = native.extension()
    if q.dtype != np.float32 or fused is None:  # not compiled (or a use_machine block without it): NumPy's passes
        return None
    return fused.softmax_rows


def _plain_fused(call: Call, q, k, v):
    """attention_reference's steps for unmasked float32 inputs, its softmax (max, subtract, exp,
    sum) done as one C pass per row: scores = q·kᵀ·scale, exp(scores − row max) in place, ÷ row sum, ·v.
    Every row has a key (no mask), so every row sum is ≥ 1."""
    qg, kg, vg = plain.group(call, q), plain.group_kv(call, k), plain.group_kv(call, v)
    # scores past float32's range become inf, a NaN or inf key NaN scores (0·inf, inf − inf): the row sum is then
    # not finite, found below, and the plain steps take over (which say nothing of a product either)
    with np.errstate(over="ignore", invalid="ignore"):
        scores = qg @ np.swapaxes(kg, -1, -2)                  # (…, [G, H/G,] Tq, Tk), a fresh array
        scores *= np.float32(call.scale)
    rows = scores.reshape(-1, call.tk)                         # a view: one row per query
    ref = np.full(rows.shape[0], -np.inf, dtype=np.float32)    # moves to each row's max on the first pass
    row_sum = np.zeros(rows.shape[0], dtype=np.float32)
    _fused_softmax_rows(q)(rows, ref, row_sum, np.empty_like(row_sum), None, 0.0)
    if not np.all(np.isfinite(row_sum)):   # scores beyond the float range: the plain steps handle them
        return plain.reference(call, q, k, v, return_weights=False, return_lse=False, record=None)
    scores /= row_sum.reshape(scores.shape[:-1] + (1,))
    return np.broadcast_to(plain.ungroup(call, scores @ vg), call.out_shape)   # (…, H, Tq, Dv)


def _torch_sdpa(call: Call, q, k, v):
    """torch's fused scaled_dot_product_attention, with qkv's mask semantics kept.

    torch's is_causal aligns top-left, so bottom-right causality is passed as an explicit mask;
    rows with no allowed key are given a harmless all-True mask and zeroed afterwards, so no
    NaN reaches the output or the gradients. A mask_mod is evaluated into a dense mask.
    """
    import torch
    import torch.nn.functional as F

    lead = call.lead
    grouped = call.groups > 1
    kv_lead = lead[:-1] + (call.kv_heads,) if grouped else lead
    # each broadcast to the call's batch where it is not (an expand to its own shape is a no-op view that
    # costs ~3 µs, against SDPA's ~30 µs for a B1 H8 T16 D64 call on one CPU); the call's own leading
    # shapes say which (no shape read from the tensors)
    q_b = q if call.q_lead == lead else q.expand(lead + tuple(q.shape[-2:]))
    if call.k_lead == kv_lead and call.v_lead == kv_lead:
        k_b, v_b = k, v
    else:
        k_b, v_b = (x.expand(kv_lead + tuple(x.shape[-2:])) for x in (k, v))
    if _sdpa_unmasked(call):
        return _sdpa_is_causal(q_b, k_b, v_b, call.causal, call.scale, grouped)
    allowed = plain.combined_mask(call, q)
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


def _sdpa_unmasked(call: Call) -> bool:
    """Unmasked, or causal on a square: torch's is_causal (top-left) is qkv's (bottom-right), and every row
    sees a key, so SDPA takes the call as it is."""
    return call.mask is None and call.mask_mod is None and call.bias is None and (not call.causal or call.tq == call.tk)


def _sdpa_is_causal(q, k, v, causal: bool, scale: float, grouped: bool):
    """torch's SDPA on a call `_sdpa_unmasked` takes (q, k, v at the call's batch)."""
    import torch.nn.functional as F

    if grouped:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


# --------------------------------------------------------------------------- short torch calls
# A short call's plan by its kind (`short_torch`): (route, what runs it, Dk, the overflow look's limit), or
# False for a kind short_torch leaves to `dispatch`. 256 kept, the oldest dropped first.
_SHORT: dict = {}
_SHORT_KEPT = 256
_short_lock = threading.Lock()
_SCALES = (float, int, type(None))


def short_torch(q, k, v, causal, scale):
    """The output of an unmasked or causal CPU torch call no gradient is asked of — the common short call of
    a model's forward — on the route the rulebook gives its kind of call with ordinary values, or None
    (the caller then checks the call and dispatches it, as any other).

    The call's kind — q, k and v plain torch tensors on the CPU, their shapes and dtypes, causal, scale,
    torch's threads, the speed table's generation, the machine — keys a plan, made once from the checked
    call (`check_call`, whose errors it raises) and its route for ordinary values (`route.ordinary_route`):
    the C kernel's one flash_at call (`autograd.short_plan`) or SDPA as it stands. Each call then reads
    its values once (`value_tops`: max |q|, |k|, |v|) and runs the plan when they are ordinary
    (`route.ordinary_tops`: every look of the rulebook answers as when the plan was made, so its route is
    the one `dispatch` would choose); otherwise None. What this skips is the work of deciding again —
    the checks, the Call, the kept route's lookup, the route's own checks — which took ~12 µs of a
    B1 H8 T16 D64 call on one AMD EPYC Zen 5 core, against SDPA's whole call of ~17 µs."""
    torch = sys.modules.get("torch")
    tensor = torch.Tensor if torch is not None else None
    if type(q) is not tensor or type(k) is not tensor or type(v) is not tensor or type(causal) is not bool \
            or type(scale) not in _SCALES or scale == 0 or not (q.is_cpu and k.is_cpu and v.is_cpu):
        return None
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return None
    if torch.compiler.is_compiling():
        return None
    hw = rulebook.current_machine()
    key = (q.shape, k.shape, v.shape, q.dtype, k.dtype, v.dtype, causal, scale, torch.get_num_threads(),
           speed.generation, hw)
    plan = _SHORT.get(key)
    if plan is None:
        plan = _short_plan(q, k, v, causal, scale, hw)
        if plan is None:   # (this call's values are not ordinary: nothing kept, the next call asks again)
            return None
        keep(_SHORT, key, plan, _SHORT_KEPT, _short_lock)
    if plan is False:
        return None
    name, run, dk, limit = plan
    if name == rulebook.TORCH_FLASH:   # (the values read by the same C call, after: an output refused is dropped)
        out, tops = autograd.run_short(run, q, k, v, tops=True)
        return out if rulebook.ordinary_tops(tops, dk, limit) else None
    if not rulebook.ordinary_tops(value_tops(q, k, v), dk, limit):
        return None
    return _sdpa_is_causal(q, k, v, *run)


def _short_plan(q, k, v, causal, scale, hw):
    """short_torch's plan for the kind of this call (its docstring), False when short_torch leaves the kind to
    `dispatch`, None when this call's values are not ordinary (no route for the kind is known yet)."""
    call = check_call(q, k, v, causal=causal, scale=scale)
    if call.key is None or call.differentiated:
        return False
    chosen = rulebook.ordinary_route(call, hw)
    if chosen is None:
        return None
    if chosen.key_rows:
        return False
    if chosen.name == rulebook.TORCH_FLASH:   # (an extension built before flash_at's tops: no plan, dispatch runs it)
        run = autograd.short_plan(call) if hasattr(native.extension(), "absmax3_at") else None
    elif chosen.name == rulebook.TORCH_SDPA and _sdpa_unmasked(call) and call.groups == 1 and \
            call.q_lead == call.lead and call.k_lead == call.lead and call.v_lead == call.lead:
        run = (call.causal, call.scale, False)
    else:
        run = None
    return False if run is None else (chosen.name, run, call.dk, rulebook.overflow_limit(call))


# --------------------------------------------------------------------------- traced SDPA, checked
_sdpa_op = None


def sdpa_op():
    """The torch custom op `torch.ops.qkv.checked_sdpa(q, k, v, scale, causal) -> out` (defined on first call,
    eagerly: a trace only calls it), which traced unmasked calls take instead of torch's SDPA.

    q (…, H, Tq, Dk), k and v (…, G, Tk, ·) expanded to the call's batch (H % G == 0), scale a float;
    out (…, H, Tq, Dv). Its body is eager qkv.attention on the real tensors — the eager route's value
    looks included: scores past the float range take the plain path's exact shift, where SDPA would
    give inf and NaN (a trace cannot branch on values). Its backward op (qkv::checked_sdpa_backward)
    differentiates the same eager call (the forward is computed once more)."""
    global _sdpa_op
    if _sdpa_op is not None:
        return _sdpa_op
    import torch
    from torch import Tensor

    def attend(q, k, v, scale, causal):
        return dispatch(check_call(q, k, v, causal=causal, scale=scale))

    @torch.library.custom_op("qkv::checked_sdpa", mutates_args=(),
                             schema="(Tensor q, Tensor k, Tensor v, float scale, bool causal) -> Tensor")
    def checked_sdpa(q: Tensor, k: Tensor, v: Tensor, scale: float, causal: bool) -> Tensor:
        return attend(q, k, v, scale, causal).contiguous().clone()   # fresh: an op's output may not alias an input

    @checked_sdpa.register_fake
    def _(q, k, v, scale, causal):
        return q.new_empty(q.shape[:-1] + v.shape[-1:])

    @torch.library.custom_op("qkv::checked_sdpa_backward", mutates_args=(), schema=(
        "(Tensor dout, Tensor q, Tensor k, Tensor v, float scale, bool causal) -> (Tensor, Tensor, Tensor)"))
    def checked_sdpa_backward(dout: Tensor, q: Tensor, k: Tensor, v: Tensor,
                              scale: float, causal: bool) -> tuple[Tensor, Tensor, Tensor]:
        return autograd._vjp(lambda q, k, v: (attend(q, k, v, scale, causal),), (q, k, v), (dout,))

    @checked_sdpa_backward.register_fake
    def _(dout, q, k, v, scale, causal):
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def setup_context(ctx, inputs, output):
        q, k, v, scale, causal = inputs
        ctx.save_for_backward(q, k, v)
        ctx.scale, ctx.causal = scale, causal

    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        return (*checked_sdpa_backward(dout, q, k, v, ctx.scale, ctx.causal), None, None)

    checked_sdpa.register_autograd(backward, setup_context=setup_context)
    _sdpa_op = checked_sdpa
    return _sdpa_op


def checked_sdpa(call: Call):
    """A traced unmasked (or square causal) torch call through `sdpa_op`'s op: out (…, H, Tq, Dv) in the call's dtype."""
    import torch

    lead = call.lead
    q = call.q.expand(lead + tuple(call.q.shape[-2:]))
    kv_lead = lead[:-1] + (call.kv_heads,) if call.groups > 1 else lead
    k, v = (x.expand(kv_lead + tuple(x.shape[-2:])) for x in (call.k, call.v))
    return torch.ops.qkv.checked_sdpa(q, k, v, float(call.scale), bool(call.causal)).reshape(call.out_shape)


def _sdpa_registered() -> bool:
    """sdpa_op registered, eagerly: Dynamo runs this once per graph and keeps its result (True)."""
    sdpa_op()
    return True


# Dynamo calls it eagerly and keeps its result as a constant of the graph (what
# torch.compiler.assume_constant_result sets; set here so importing this module never imports torch)
_sdpa_registered._dynamo_marked_constant = True
