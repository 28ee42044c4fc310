"""Blocked online-softmax attention (FlashAttention's algorithm) for NumPy arrays.

The plain path forms the whole Tq×Tk score matrix. This kernel never does: it walks the keys
in blocks and keeps, for every query row, a running max m, a running sum l and an
un-normalised output acc, merging each key block in with the exact rescaling step of
`merge.py`. Memory per worker is O(block_q·block_k + T·D); the result equals
softmax(q·kᵀ·scale + bias)·v to rounding.

Speed comes from BLAS for the two products (q·kᵀ and P·v), from in-place ufuncs on one
scratch score block per worker (no temporaries of block size), from folding the scale into q
once, and from a thread pool over (batch·head, query block) with BLAS itself held to one
thread so the pool and BLAS do not oversubscribe the cores. NumPy releases the GIL inside
BLAS and inside ufunc loops, so the threads really run in parallel. The pool's threads are
kept between calls; the calling thread works too. When there are fewer (head, query block)
tasks than threads (one long head, decoding), each task's keys are split into ranges whose
`Partial` results are merged with `merge_partials`.

The exponentials are taken against a lazily moved reference (see _HEADROOM) rather than the
exact running max: for moderate scores no block pays the S − m pass or the rescaling of the
running state. The causal diagonal is one in-place add of a precomputed 0/−inf band slice, or,
with the C extension, masked inside its pass (the future keys take no exp and become 0).

For float32, steps 3–5 (row max, reference, exp, row sums) run in the optional C extension
`_fused` (one pass per row, vectorised exp; ~4× less time than NumPy's passes) when it is
built; otherwise, and for float64, in NumPy. Both follow the same reference rule.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

import array_api_compat

from .call import PARTIAL, Call, as_bool_mask, as_scores, check_call
from .merge import Partial, finalize, finalize_into, lse_of, merge_partials

try:   # the optional C extension (setup.py): steps 3–5 for float32 in one pass
    from . import _fused
except ImportError:   # not built: the NumPy steps below are used
    _fused = None

__all__ = ["blocked_attention", "partial_attention"]

DEFAULT_BLOCK_Q = 256
DEFAULT_BLOCK_K = 512
# Below this many score elements (summed over heads) a thread pool costs more than it gains.
_PARALLEL_MIN_SCORES = 1 << 18
# ... where a score of a one- or two-row block counts this many (it reads a k and a v row: one query
# over 16,384 keys in 8 heads took 3.4 ms on one thread, 2.8 on two; over 65,536, 10.5 on two).
_DECODE_WEIGHT = 32


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
      block_q, block_k: rows of q and of k per block (defaults 256 and 512, clipped to Tq, Tk;
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
    return _attention(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod,
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
    return _attention(q, k, v, mask, bias=bias, causal=False, scale=scale, mask_mod=mask_mod,
                      score_mod=score_mod, want="partial")


# --------------------------------------------------------------------------- the problem
@dataclass(frozen=True)
class _Problem:
    call: Call
    q: np.ndarray          # broadcast view (*L, Tq, Dk); with GQA L ends in (G, H/G)
    k: np.ndarray          # broadcast view (*L, Tk, Dk)
    v: np.ndarray          # broadcast view (*L, Tk, Dv), finite (see bad_keys) and scaled by 2^-v_exponent
    v_raw: np.ndarray | None   # the values as given, where some are not finite
    bad_keys: np.ndarray | None  # (Tk,) bool: keys with a non-finite value somewhere, or None
    v_exponent: int        # out = (P·v) · 2^v_exponent: large values are scaled down exactly
    mask: np.ndarray | None   # broadcast view (*L, Tq, Tk), never materialised
    bias: np.ndarray | None   # broadcast view (*L, Tq, Tk), never materialised
    lead: tuple            # L, the loop over (batch, head) pairs
    out_lead: tuple        # the caller's leading shape (…, H): L with (G, H/G) merged back
    scale: float
    causal: bool
    own: tuple = ()        # (q, k, v) before broadcasting to lead (GQA already split), for flash_many
    memo: dict = field(default_factory=dict)   # per-call values computed once (see _key_ranges)


def _prepare(call: Call, q, k, v, mask, bias) -> _Problem:
    """NumPy broadcast views of a checked call, in the dtype the kernel computes in."""
    work = np.dtype(call.work)
    q, k, v = (np.asarray(x).astype(work, copy=False) for x in (q, k, v))
    tq, tk, dk, dv = call.tq, call.tk, call.dk, call.dv
    grouped = call.groups > 1
    if grouped:   # q (…, H, Tq, Dk) → (…, G, H/G, Tq, Dk); k, v (…, G, Tk, ·) → (…, G, 1, Tk, ·)
        q = _split_axis(q, q.ndim - 3, call.kv_heads, call.groups)
        k = k[..., None, :, :]
        v = v[..., None, :, :] if v.ndim >= 3 else v
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])

    def scores_like(x):
        if x is None:
            return None
        x = np.broadcast_to(np.asarray(x), call.scores_shape)
        if grouped:
            x = _split_axis(x, x.ndim - 3, call.kv_heads, call.groups)
        return np.broadcast_to(x, lead + (tq, tk))

    # Values: where some are not finite, the kernel multiplies finite copies and adds the
    # non-finite keys' terms only where a query gives them weight (see _Context.run), so keys a
    # query may not attend to are never read. Large values are scaled by an exact power of two:
    # the lazy reference lets P reach e^16, and P·v must not overflow where softmax·v does not.
    v_raw, bad_keys = None, None
    if _fused is not None and v.dtype == np.float32 and v.flags.c_contiguous:
        top = _fused.absmax(v)                        # one pass: max |v|, NaN or inf if any is
        low, high = (work.type(-top), work.type(top))
    else:
        low, high = (v.min(), v.max()) if v.size else (work.type(0), work.type(0))   # two passes, no temporaries
    if not (np.isfinite(low) and np.isfinite(high)):                            # a NaN or ±inf somewhere
        finite = np.isfinite(v)
        bad_keys = ~finite.all(axis=-1)
        bad_keys = bad_keys.reshape(-1, tk).any(axis=0) if bad_keys.ndim > 1 else bad_keys
        v_raw, v = v, np.where(finite, v, 0)
        low, high = (v.min(), v.max()) if v.size else (work.type(0), work.type(0))
    top = max(abs(low), abs(high))
    exponent = int(np.frexp(top)[1])
    if exponent <= np.finfo(work).maxexp // 2:
        exponent = 0
    else:
        v = np.ldexp(v, -exponent).astype(work, copy=False)
    if bias is not None:
        bias = np.asarray(bias)
    return _Problem(
        call=call, q=np.broadcast_to(q, lead + (tq, dk)), k=np.broadcast_to(k, lead + (tk, dk)),
        v=np.broadcast_to(v, lead + (tk, dv)),
        v_raw=None if v_raw is None else np.broadcast_to(v_raw, lead + (tk, dv)), bad_keys=bad_keys,
        v_exponent=exponent, mask=scores_like(mask), bias=scores_like(bias), lead=lead,
        out_lead=call.lead, scale=call.scale, causal=call.causal, own=(q, k, v),
    )


def _split_axis(x: np.ndarray, axis: int, outer: int, inner: int) -> np.ndarray:
    """View of x with axis split into (outer, inner); never copies (works on broadcast views)."""
    stride = x.strides[axis]
    shape = x.shape[:axis] + (outer, inner) + x.shape[axis + 1:]
    strides = x.strides[:axis] + (stride * inner, stride) + x.strides[axis + 1:]
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


# --------------------------------------------------------------------------- the kernel
# Lazy reference: the exponentials of a row are taken against a reference r (not necessarily the
# running max) that moves only when it must. exp(s − r) is exact for any r; r only has to keep
# the numbers in range: a block whose row max exceeds r by more than _HEADROOM moves r up to that
# max (so no P entry exceeds e^_HEADROOM), and a row with nothing summed yet whose block max lies
# more than _HEADROOM below r moves r down (so its largest entries do not underflow). r starts at
# 0; while every reference is still 0 the block skips the S − r pass and the rescaling of acc
# and l entirely — the common case for moderate scores (|s| ≤ 16). Cost: P entries, l and acc
# may be up to e^16 ≈ 2^23 larger than with r = max; values above 2^64 (float32) are therefore
# scaled down by a power of two first (in _prepare), exactly.
_HEADROOM = 16.0
# float32 blocks take _fused.softmax_rows for steps 3–5 when the extension is built: the same
# reference logic, but per row in one pass (max, then exp(S − r) and its sum while the row is in
# L1) with a vectorised exp, ~0.3 ns per score against ~1.6 ns for NumPy's passes. Chosen once,
# here; tests switch it to run every kernel test on both paths.
_USE_FUSED = _fused is not None
# With _fused, the causal diagonal is masked inside softmax_rows (limit) instead of by adding the
# 0/−inf band first: the same bits, one pass less. Tests switch it to check both.
_CAUSAL_IN_C = True
# float32 calls without bias, score_mod or non-finite values walk each query block's key blocks in
# C (_fused.flash_rows: both products in NumPy's own BLAS, found once by _sgemm_ready; acc += P·V
# accumulated by the BLAS). Tests switch it off to run the Python walk too.
_USE_FLASH = True
# ... and where no task needs a mask array, run every task in C through flash_many (no Python per
# task); tests switch it off to run flash_rows per task too.
_USE_MANY = True
# Masks handed to flash_rows at once, at most (bytes, beyond one block): bounds a task's memory.
_FLASH_MASK_BYTES = 1 << 22
_sgemm_state = None   # None: not looked for yet; False: not found; True: handed to _fused
_sgemm_found = None   # (address, ilp64) of the checked cblas_sgemm, for the backward (autograd.py)


def _sgemm_ready() -> bool:
    """Whether _fused.flash_rows has a BLAS sgemm. The first call looks for cblas_sgemm in the BLAS
    libraries loaded in this process (threadpoolctl lists them; NumPy's comes first), checks it
    on a small product against NumPy, and hands its address to _fused."""
    global _sgemm_state
    if _sgemm_state is None:
        with _pool_lock:
            if _sgemm_state is None:
                _sgemm_state = _find_sgemm()
    return _sgemm_state


def _find_sgemm() -> bool:
    """Hands _fused the cblas_sgemm of the OpenBLAS that NumPy uses (other BLAS libraries: not
    used; the kernel then walks in Python). Its integer width comes from the library itself
    (openblas_get_config names USE64BITINT), never from a guess; the function is then checked on
    a small product against float64 NumPy."""
    import ctypes

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return False
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    libraries = [info["filepath"] for info in threadpool_info()
                 if info.get("user_api") == "blas" and info.get("internal_api") == "openblas"]
    libraries.sort(key=lambda path: not path.startswith(numpy_dir))   # NumPy's own BLAS first
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((3, 5), (7, 5), (7, 4)))
    expected = np.exp(q.astype(np.float64) @ k.T.astype(np.float64)) @ v.astype(np.float64)
    for path in libraries:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        # NumPy's wheels: scipy-openblas, symbols "scipy_…64_"; a plain OpenBLAS: no prefix or suffix.
        for prefix, suffix in (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")):
            sgemm = getattr(library, f"{prefix}cblas_sgemm{suffix}", None)
            config = getattr(library, f"{prefix}openblas_get_config{suffix}", None)
            if sgemm is None or config is None:
                continue
            config.restype = ctypes.c_char_p
            ilp64 = b"USE64BITINT" in (config() or b"")
            _fused.set_sgemm(ctypes.cast(sgemm, ctypes.c_void_p).value, ilp64)
            acc, ref, l, alpha = np.zeros((3, 4), np.float32), *(np.zeros(3, np.float32) for _ in range(3))
            try:
                _fused.flash_rows(q, k, v, acc, ref, l, alpha, None, np.empty((3, 7), np.float32),
                                  np.array([[0, 7, 0, 0, 0]], np.int64), None, _HEADROOM)
            except Exception:   # pragma: no cover - a BLAS that refuses the call
                acc[:] = np.nan
            if np.allclose(acc, expected, rtol=1e-4, atol=1e-4):
                global _sgemm_found
                _sgemm_found = (ctypes.cast(sgemm, ctypes.c_void_p).value, ilp64)
                return True
    _fused.set_sgemm(0, False)
    return False


# With a mask function that reports block kinds, smaller key blocks skip more (a window of
# width W touches about W/block_k + 1 key blocks per query block).
_SPARSE_BLOCK_K = 256
_BAND_BLOCK = 128
# Short causal calls (no mask function, Tk ≤ 2048) take square 256×256 blocks: less of each
# block to mask, fewer uneven tasks. Measured on 2 AMD EPYC cores, alternating with torch SDPA:
# ~3–5 % faster at T = 512 and 1024, no gain at T = 4096 (more blocks, more Python per block).
_CAUSAL_BLOCK_K = 256
_CAUSAL_SQUARE_MAX_TK = 2048


def _attention(q, k, v, mask=None, *, bias=None, causal=False, scale=None, mask_mod=None, score_mod=None,
               block_q=None, block_k=None, num_threads=None, want="out", call: Call | None = None):
    """The kernel. want: "out" (the output), "lse" ((out, lse)) or "partial" (the un-normalised
    `Partial`). `call` skips validation when the caller (qkv.attention) has checked already."""
    for name, value in (("block_q", block_q), ("block_k", block_k), ("num_threads", num_threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if call is None:
        q, k, v = (np.asarray(x) if isinstance(x, (list, tuple)) else x for x in (q, k, v))
        call = check_call(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod,
                          score_mod=score_mod)
    if not array_api_compat.is_numpy_namespace(call.xp):
        raise TypeError("the blocked kernel takes NumPy arrays; pass torch tensors to qkv.attention")
    tq, tk, dv = call.tq, call.tk, call.dv
    out_shape = call.out_shape
    if call.empty:
        out = np.zeros(out_shape, call.dtype)
        rows = np.full(out_shape[:-1], -np.inf, call.dtype)
        if want == "partial":
            return Partial(out, rows, np.zeros(out_shape[:-1], call.dtype))
        return (out, rows) if want == "lse" else out
    prob = _prepare(call, q, k, v, call.mask, call.bias)
    heads = list(np.ndindex(*prob.lead))
    sparse = callable(getattr(call.mask_mod, "block_kinds", None))
    # A band (window, causal: masks of kv − q) wastes less of each block when blocks are smaller:
    # measured 10 % faster at 128×128 than 256×256 for W = 256, T = 4096 (busy cores, alternating).
    band = sparse and bool(getattr(call.mask_mod, "relative", False))
    bq = min(block_q or (_BAND_BLOCK if band else DEFAULT_BLOCK_Q), tq)
    # With few query rows (decoding) take longer key blocks, keeping the score block at
    # the default's size: fewer, larger BLAS calls for the same memory.
    # Short causal calls with full query blocks: square key blocks (see _CAUSAL_BLOCK_K).
    default_bk = (_BAND_BLOCK if band else _SPARSE_BLOCK_K) if sparse else \
        _CAUSAL_BLOCK_K if prob.causal and bq >= DEFAULT_BLOCK_Q and tk <= _CAUSAL_SQUARE_MAX_TK else \
        max(DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q * DEFAULT_BLOCK_K // bq)
    bk = min(block_k or default_bk, tk)
    shift = tk - tq  # causal: query i sees key j iff j <= i + shift
    n_kb = -(-tk // bk)
    kinds_by_head = {}

    def plan_tasks(for_heads):   # (head, i0, i1, key block indices to visit: ascending, none empty, key_end)
        planned = []
        for h in for_heads:
            kinds = kinds_by_head[h] = _block_kinds(prob, h, bq, bk) if sparse else None
            for qb, i0 in enumerate(range(0, tq, bq)):
                i1 = min(i0 + bq, tq)
                key_end = min(tk, i1 + shift) if prob.causal else tk   # keys past this are all future
                last = -(-max(key_end, 0) // bk)
                blocks = np.arange(last) if kinds is None else np.flatnonzero(kinds[qb, :last])
                planned.append((h, i0, i1, blocks, key_end))
        return planned

    # On the flash_many route every head has the same key blocks: plan the first head only.
    many = want != "partial" and _many_route(prob)
    tasks = plan_tasks(heads[:1] if many else heads)
    copies = len(heads) if many else 1
    n_tasks = len(tasks) * copies
    total_blocks = sum(len(t[3]) for t in tasks) * copies
    # A decoding row (one or two queries) reads a whole k and v row per score: count it heavier.
    big = total_blocks * bq * bk * (_DECODE_WEIGHT if bq <= 2 else 1) >= _PARALLEL_MIN_SCORES
    threads = min(num_threads or _available_cpus(), max(n_tasks, n_kb)) if big else 1
    # Too few (head, query block) tasks for the threads — one long head, or decoding with few
    # heads: split each task's key blocks into ranges, one Partial per range, and merge them
    # with merge_partials. Otherwise one range, written straight into the result.
    ranges = 1 if n_tasks >= threads else min(-(-threads // n_tasks), n_kb)
    keep_partial = want != "out" or ranges > 1
    if many and ranges == 1:
        ctx = _Context(prob, [], bq, bk, shift, keep_partial, kinds_by_head if sparse else {})
        out, lse = _flash_all(ctx, tasks, threads, big, want)
        out = _cast(_unscale(out, prob.v_exponent).reshape(out_shape), call.dtype)
        return (out, _cast(lse.reshape(out_shape[:-1]), call.dtype)) if want == "lse" else out
    if many:
        tasks = plan_tasks(heads)
    parts = [_State.empty(prob.lead + (tq, dv), prob.q.dtype) for _ in range(ranges)]
    ctx = _Context(prob, parts, bq, bk, shift, keep_partial, kinds_by_head if sparse else {})
    jobs = []
    for h, i0, i1, blocks, key_end in tasks:
        for r in range(ranges):   # range r: blocks [r·n/ranges, (r+1)·n/ranges) of this task's list
            chosen = blocks[len(blocks) * r // ranges: len(blocks) * (r + 1) // ranges]
            if len(chosen) or r == 0:
                jobs.append((h, i0, i1, chosen, key_end, r))
    jobs.sort(key=lambda job: -(job[2] - job[1]) * len(job[3]))   # heaviest first (stable)
    # BLAS is held to one thread even without a pool: its own threads on these block-sized
    # products cost more in synchronisation than they gain (and spin badly on a busy
    # machine). Small problems skip the pool and the limit (~70 µs to set and restore).
    with _fork_gate(), (_blas_single_thread() if big else contextlib.nullcontext()):
        _run_all(ctx.run, jobs, threads)
    whole = parts[0].as_partial() if keep_partial else None
    for part in parts[1:]:
        whole = merge_partials(whole, part.as_partial())
    if want == "partial":
        out, row_max, row_sum = whole
        out = _unscale(out, prob.v_exponent)
        return Partial(_cast(out.reshape(out_shape), call.dtype), _cast(row_max.reshape(out_shape[:-1]), call.dtype),
                       _cast(row_sum.reshape(out_shape[:-1]), call.dtype))
    out = finalize(whole) if keep_partial else parts[0].out
    out = _cast(_unscale(out, prob.v_exponent).reshape(out_shape), call.dtype)
    if want == "lse":
        return out, _cast(lse_of(whole).reshape(out_shape[:-1]), call.dtype)
    return out


def _many_route(prob: _Problem) -> bool:
    """Whether the whole call can run as flash_many tasks: float32 through the C walk with no
    mask array (no mask; no mask function, a band or per-row key ranges: the same for every batch
    and head), no bias, score_mod or non-finite values, and k, v with the same leading shape."""
    call = prob.call
    mask_mod = call.mask_mod
    if not (_USE_MANY and _USE_FLASH and _USE_FUSED and _fused is not None and prob.q.dtype == np.float32):
        return False
    if prob.mask is not None or prob.bias is not None or call.score_mod is not None or prob.bad_keys is not None:
        return False
    if call.dk == 0 or call.dv == 0 or prob.own[1].shape[:-2] != prob.own[2].shape[:-2]:
        return False
    if mask_mod is not None:
        if not callable(getattr(mask_mod, "block_kinds", None)):
            return False
        if getattr(mask_mod, "band", None) is None and _key_ranges(prob) is None:
            return False
    return _sgemm_ready()


def _key_ranges(prob: _Problem):
    """The mask function's per-row key ranges ((2, Tq) int64: query q sees keys lo ≤ kv < hi, the
    same for every batch and head), or None. Computed once per call."""
    call = prob.call
    if "ranges" not in prob.memo:
        found = getattr(call.mask_mod, "key_ranges", None)
        found = found(call.tq, call.tk) if callable(found) else None
        prob.memo["ranges"] = None if found is None else np.ascontiguousarray(np.stack(found).astype(np.int64))
    return prob.memo["ranges"]


# flash_many returns to Python after this many seconds (and is called again): Ctrl-C stays prompt.
_FLASH_BUDGET_S = 0.05
# flash_many's key-block tables by (Tq, Tk, block_q, block_k, causal, band), and its task tables by
# that and the heads' shapes: the same for every call of that shape (a model's layers), so built
# once (~0.1 ms each at T = 512). Read-only; 64 kept, the oldest dropped first.
_TABLES: dict = {}
_TABLES_KEPT = 64


def _keep_table(key, value) -> None:
    if len(_TABLES) >= _TABLES_KEPT:
        _TABLES.pop(next(iter(_TABLES)), None)
    _TABLES[key] = value


def _flash_all(ctx: "_Context", first_head: list, threads: int, big: bool, want: str):
    """Every (head, query block) task in C: one flash_many call per thread, each taking the next task
    from a shared counter (heaviest first), so no Python runs per task. first_head: the first head's
    (head, i0, i1, key blocks, key_end) tasks; every head has the same key blocks (see _many_route).
    Returns out (*L, Tq, Dv) and lse (*L, Tq) (None unless want == "lse"), float32."""
    prob = ctx.prob
    call = prob.call
    tq, tk, dk, dv = call.tq, call.tk, call.dk, call.dv
    band = getattr(call.mask_mod, "band", None)
    key_rows = _key_ranges(prob) if call.mask_mod is not None and band is None else None
    # Key ranges from data (documents' ids): a table per call; otherwise one per shape, kept.
    key = None if key_rows is not None else (tq, tk, ctx.bq, ctx.bk, prob.causal, band)
    cached = None if key is None else _TABLES.get(key)
    if cached is None:
        rows, table = [], []
        for head, i0, i1, blocks, key_end in first_head:
            b0 = len(table)
            for j0, j1, blocked, limit, start, ranged in ctx.plan(head, i0, i1, blocks, key_end, ranges=True,
                                                                  key_rows=key_rows is not None):
                assert blocked is None, "partial blocks of a band or key ranges come with no mask array"
                flags = (limit is not None) | (start is not None) << 1 | ranged << 2
                table.append((j0, j1, flags, limit or 0, start or 0))
            rows.append((i0, i1, b0, len(table)))
        cached = (np.array(table, np.int64).reshape(-1, 5), np.array(rows, np.int64).reshape(-1, 4))
        for array in cached:
            array.flags.writeable = False
        if key is not None:
            _keep_table(key, cached)
    blocks, query_blocks = cached
    lead = prob.lead
    q_own, k_own, v_own = prob.own
    task_key = None if key is None else key + (lead, q_own.shape[:-2], k_own.shape[:-2])
    tasks = None if task_key is None else _TABLES.get(task_key)
    if tasks is None:
        tasks = _task_table(query_blocks, lead, q_own.shape[:-2], k_own.shape[:-2])
        if task_key is not None:
            _keep_table(task_key, tasks)
    q3, k3, v3 = _heads(q_own, tq, dk), _heads(k_own, tk, dk), _heads(v_own, tk, dv)
    out = np.empty(lead + (tq, dv), np.float32)
    lse = np.empty(lead + (tq,), np.float32) if want == "lse" else None
    out3, lse2 = out.reshape(-1, tq, dv), None if lse is None else lse.reshape(-1, tq)
    counter = np.zeros(1, np.int64)
    stop = []

    def work():
        # Back in Python every _FLASH_BUDGET_S: the main thread handles signals (Ctrl-C) there, and
        # a failure in one thread stops the others after their current task.
        buf = ctx.scratch()
        try:
            while not stop and _fused.flash_many(q3, k3, v3, out3, lse2, tasks, blocks, counter, buf.scores,
                                                 buf.vectors, _HEADROOM, ctx.scale, _FLASH_BUDGET_S, key_rows):
                pass
        except BaseException:
            stop.append(True)
            raise
        finally:
            _give_scratch(buf)

    with _fork_gate(), (_blas_single_thread() if big else contextlib.nullcontext()):
        _run_all(work, [()] * max(threads, 1), threads)
    return out, lse


def _task_table(query_blocks: np.ndarray, lead: tuple, q_lead: tuple, k_lead: tuple) -> np.ndarray:
    """flash_many's tasks, (heads · query blocks, 7) int64, heaviest first, read-only: for each
    (batch, head) of the loop's lead and each query block (i0, i1, b0, b1), the index of its q head
    and k/v head in their own flattened heads (broadcasting and GQA), and of its output head."""
    def flat_index(own_lead):   # for each (batch, head) of the loop, its index in own's flattened heads
        return np.broadcast_to(np.arange(int(np.prod(own_lead))).reshape(own_lead), lead).ravel()

    n = int(np.prod(lead))
    tasks = np.empty((n, len(query_blocks), 7), np.int64)
    tasks[:, :, 0] = flat_index(q_lead)[:, None]
    tasks[:, :, 1] = flat_index(k_lead)[:, None]
    tasks[:, :, 2] = np.arange(n)[:, None]
    tasks[:, :, 3:] = query_blocks[None]
    tasks = tasks.reshape(-1, 7)
    weight = (tasks[:, 4] - tasks[:, 3]) * (tasks[:, 6] - tasks[:, 5])
    tasks = np.ascontiguousarray(tasks[np.argsort(-weight, kind="stable")])
    tasks.flags.writeable = False
    return tasks


def _heads(x: np.ndarray, t: int, d: int) -> np.ndarray:
    """x as (heads, T, D) with rows flash_many can read (contiguous, not overlapping, ascending);
    a view where x allows it, else a copy (a transposed or reversed array, say)."""
    x = x.reshape(-1, t, d)
    item = x.itemsize
    if x.strides[2] != item or (t > 1 and x.strides[1] < d * item):
        x = np.ascontiguousarray(x)
    return x


def _unscale(x: np.ndarray, exponent: int) -> np.ndarray:
    return np.ldexp(x, exponent).astype(x.dtype, copy=False) if exponent else x


def _cast(x: np.ndarray, dtype) -> np.ndarray:
    return x.astype(dtype, copy=False)


def _block_kinds(prob: _Problem, head: tuple, bq: int, bk: int) -> np.ndarray:
    """(query blocks, key blocks) int8 of EMPTY / PARTIAL / FULL from the mask function's
    block_kinds(b, h, q_lo, q_hi, k_lo, k_hi) (half-open index ranges, broadcasting arrays)."""
    call = prob.call
    b, h = _batch_head(prob, head)
    tq, tk = call.tq, call.tk
    q_lo = np.arange(0, tq, bq)[:, None]
    k_lo = np.arange(0, tk, bk)[None, :]
    kinds = call.mask_mod.block_kinds(b, h, q_lo, np.minimum(q_lo + bq, tq), k_lo, np.minimum(k_lo + bk, tk))
    return np.broadcast_to(np.asarray(kinds, dtype=np.int8), (q_lo.shape[0], k_lo.shape[1]))


def _batch_head(prob: _Problem, head: tuple) -> tuple:
    """The flex_attention indices (b, h) of one (batch, head) pair of the loop."""
    call = prob.call
    if call.groups > 1:   # (…, G, H/G) → (…, H)
        head = head[:-2] + (head[-2] * call.groups + head[-1],)
    if not call.lead:
        return np.int64(0), np.int64(0)
    # the loop's lead may hold broadcast 1s where call.lead does not: index within call.lead
    head = tuple(min(i, n - 1) for i, n in zip(head, call.lead))
    b = np.ravel_multi_index(head[:-1], call.lead[:-1]) if len(head) > 1 else 0
    return np.int64(b), np.int64(head[-1])


@dataclass(frozen=True)
class _State:
    """One key range's result over all (batch, head) pairs: acc (*L, Tq, Dv), row_max, row_sum (*L, Tq)."""

    out: np.ndarray
    row_max: np.ndarray
    row_sum: np.ndarray

    @classmethod
    def empty(cls, shape, dtype):
        return cls(np.zeros(shape, dtype), np.full(shape[:-1], -np.inf, dtype), np.zeros(shape[:-1], dtype))

    def as_partial(self) -> Partial:
        return Partial(self.out, self.row_max, self.row_sum)


class _Context:
    """One call's inputs, outputs and per-thread scratch; `run` computes one query block over one key range."""

    def __init__(self, prob, parts, bq, bk, shift, partial, kinds):
        self.prob, self.parts = prob, parts
        self.bq, self.bk, self.shift, self.partial = bq, bk, shift, partial
        self.scale = prob.q.dtype.type(prob.scale)
        self.fused = _fused.softmax_rows if _USE_FUSED and prob.q.dtype == np.float32 else None
        call = prob.call
        # The whole walk in C where nothing needs Python per block (no bias, no score_mod, finite
        # values, Dk and Dv > 0) and NumPy's BLAS was found.
        simple = call.bias is None and call.score_mod is None and prob.bad_keys is None and call.dk > 0 and call.dv > 0
        self.flash = _fused.flash_rows if self.fused is not None and _USE_FLASH and simple and _sgemm_ready() else None
        self.causal_bias = _causal_band(bq, bk, prob.q.dtype) if prob.causal else None
        self.kinds = kinds   # head → (query blocks, key blocks) kinds of the mask function, if it has them
        self.relative = bool(getattr(prob.call.mask_mod, "relative", False))
        self.relative_blocks = {}   # (kv − q offset, rows, cols) → bool "not allowed" block

    def relative_block(self, offset, rows, cols, b, h):
        """The "not allowed" block of a mask that depends on kv − q only, for a block whose first key
        lies `offset` after its first query: computed once per offset and shape (a sliding window
        has about block_k/block_q + 2 of them), shared by the threads (read-only)."""
        key = (offset, rows, cols)
        block = self.relative_blocks.get(key)
        if block is None:
            q_idx = np.arange(rows, dtype=np.int64)[:, None]
            kv_idx = np.arange(offset, offset + cols, dtype=np.int64)
            allowed = as_bool_mask(self.prob.call.mask_mod(b, h, q_idx, kv_idx), np)
            block = ~np.broadcast_to(allowed, (rows, cols))
            self.relative_blocks[key] = block
        return block

    def kinds_row(self, head, i0):
        """This query block's row of the block-kind map, or None (no map: every block partial)."""
        kinds = self.kinds.get(head)
        return None if kinds is None else kinds[i0 // self.bq]

    def scratch(self):
        """Buffers for one task on this thread: O(block_q·block_k), kept between calls (see
        _take_scratch); hand them back with _give_scratch."""
        dtype, bq, bk, dv = self.prob.q.dtype, self.bq, self.bk, self.prob.v.shape[-1]
        return _take_scratch((dtype, bq, bk, dv))

    def plan(self, head, i0, i1, blocks, key_end, ranges=False, key_rows=False):
        """The key blocks that rows i0:i1 of one (batch, head) visit, as (j0, j1, blocked, limit,
        start): keys j0:j1; blocked None (every key allowed, as far as masks go) or a bool (rows,
        j1 − j0) array, True where the key is not allowed (mask, mask function); limit None or
        an int: row r keeps only keys j < j0 + limit + r (a block crossing the causal diagonal);
        start None or an int: row r keeps only keys j >= j0 + start + r. Blocks the masks leave
        empty are left out. A generator: one block's mask at a time.

        ranges: a mask function that is a band of kv − q (qkv.masks.causal, sliding_window: its
        `band`) gives its partial blocks as limit/start (the C walk masks by row ranges, with no
        array and no exp on hidden keys) instead of a mask array. key_rows: a mask function with
        per-row key ranges (_key_ranges: documents, prefix-LM, chunked) gives its partial blocks
        with no array and the last field True (flash_many applies the ranges)."""
        prob, bk, shift = self.prob, self.bk, self.shift
        call = prob.call
        rows = i1 - i0
        mask = prob.mask[head] if prob.mask is not None else None   # (Tq, Tk) view, no copy
        kinds = self.kinds_row(head, i0)                            # (key blocks,) or None
        band = getattr(call.mask_mod, "band", None) if ranges and kinds is not None and mask is None else None
        by_rows = key_rows and band is None and kinds is not None and mask is None and _key_ranges(prob) is not None
        if call.mask_mod is not None:
            b, h = _batch_head(prob, head)
            q_idx = np.arange(i0, i1, dtype=np.int64)[:, None]
        for jb in blocks:
            j0 = int(jb) * bk
            j1 = min(j0 + bk, key_end)
            cols = j1 - j0
            allowed = None
            blocked = None      # a cached "not allowed" block (relative masks), used as is
            limit = start = None
            rows_ranged = False
            if mask is not None:
                allowed = mask[i0:i1, j0:j1]
            if call.mask_mod is not None and (kinds is None or kinds[jb] == PARTIAL):
                if band is not None:
                    # lo <= kv − q <= hi: row r keeps keys j0 + c with i0 + lo − j0 <= c − r <= i0 + hi − j0.
                    lo, hi = band
                    start = None if lo is None else i0 + lo - j0
                    limit = None if hi is None else i0 + hi - j0 + 1
                elif by_rows:
                    rows_ranged = True   # each row's key range (_key_ranges), applied in C
                elif kinds is not None and self.relative and allowed is None:
                    # The mask depends on kv − q only (windows, causal): one block per offset, kept.
                    blocked = self.relative_block(j0 - i0, rows, cols, b, h)
                else:
                    kv_idx = np.arange(j0, j1, dtype=np.int64)
                    modded = np.broadcast_to(as_bool_mask(call.mask_mod(b, h, q_idx, kv_idx), np), (rows, cols))
                    allowed = modded if allowed is None else (allowed & modded)
            if allowed is not None:
                if not allowed.any():
                    continue
                blocked = None if allowed.all() else ~allowed
            if prob.causal and j1 - 1 > i0 + shift:  # this block crosses the diagonal
                diagonal = i0 + shift - j0 + 1
                limit = diagonal if limit is None else min(limit, diagonal)
            yield j0, j1, blocked, limit, start, rows_ranged

    def run(self, head, i0, i1, blocks, key_end, part):
        """Rows i0:i1 of one (batch, head) over the key blocks `blocks` (indices, ascending) that
        end by key_end: the online softmax."""
        prob = self.prob
        rows = i1 - i0
        keys, values = prob.k[head], prob.v[head]                   # (Tk, Dk), (Tk, Dv)
        state = self.parts[part]
        buf = self.scratch()
        try:
            self._run(head, i0, i1, blocks, key_end, state, buf, keys, values, rows)
        finally:
            _give_scratch(buf)

    def _run(self, head, i0, i1, blocks, key_end, state, buf, keys, values, rows):
        prob = self.prob
        ref, block_max, alpha, l, block_sum, row_max = (row[:rows] for row in buf.vectors)

        # Step 0. Running state: acc = 0 (written straight into the output rows), l = 0, the
        # reference r = 0 (see _HEADROOM) and the true running max (kept only for a Partial).
        acc = state.out[head][i0:i1]                                # (rows, Dv), zeros
        ref.fill(0)
        l.fill(0)
        row_max.fill(-np.inf)
        queries = prob.q[head][i0:i1]                               # (rows, Dk)
        if self.flash is not None and _rows_fit(keys) and _rows_fit(values) and _rows_fit(queries):
            # Steps 1–8 in C for every key block (_fused.flash_rows): q·scale once, the two
            # products in NumPy's BLAS, the softmax step of softmax_rows, acc += P·V in place, and
            # out = acc / l at the end; masks handed over a few blocks at a time (at most
            # _FLASH_MASK_BYTES of them).
            chunk, masks, held = [], [], 0
            for j0, j1, blocked, limit, start, _ in self.plan(head, i0, i1, blocks, key_end, ranges=True):
                flags = (limit is not None) | (start is not None) << 1
                chunk.append((j0, j1, flags, limit or 0, start or 0))
                masks.append(blocked)
                held += 0 if blocked is None else blocked.size
                if held > _FLASH_MASK_BYTES:
                    self._flash(queries, keys, values, acc, ref, l, alpha, row_max, buf, chunk, masks, False)
                    chunk, masks, held = [], [], 0
            self._flash(queries, keys, values, acc, ref, l, alpha, row_max, buf, chunk, masks, not self.partial)
            if not self.partial:
                return
        else:
            q_scaled = queries * self.scale                         # (rows, Dk): the scale folded into q
            plan = self.plan(head, i0, i1, blocks, key_end)
            self.walk(plan, head, i0, i1, q_scaled, keys, values, acc, ref, block_max, alpha, l, block_sum,
                      row_max, buf)

        # Step 8. out = acc / l, rows with l = 0 (nothing allowed) stay zero. A Partial keeps
        # acc un-normalised, against the row's largest score m (not r): acc, l ×= exp(r − m),
        # and reports m = −inf for those empty rows.
        if self.partial:
            empty = l <= 0
            np.copyto(row_max, -np.inf, where=empty)
            np.subtract(ref, row_max, out=alpha)
            np.copyto(alpha, 0, where=empty)
            np.exp(alpha, out=alpha)                                # exp(r − m), 1 for empty rows
            acc *= alpha[:, None]
            l *= alpha
            state.row_max[head][i0:i1] = row_max
            state.row_sum[head][i0:i1] = l
        else:
            finalize_into(acc, l)

    def _flash(self, queries, keys, values, acc, ref, l, alpha, row_max, buf, chunk, masks, finalize):
        blocks = np.array(chunk, dtype=np.int64).reshape(-1, 5)
        self.flash(queries, keys, values, acc, ref, l, alpha, row_max if self.partial else None, buf.scores,
                   blocks, None if all(m is None for m in masks) else masks, _HEADROOM, scale=self.scale,
                   finalize=finalize)

    def walk(self, plan, head, i0, i1, q_scaled, keys, values, acc, ref, block_max, alpha, l, block_sum, row_max,
             buf):
        """Steps 1–7 in Python, block by block (float64; bias, score_mod or non-finite values; no BLAS
        address for the C loop)."""
        prob, call = self.prob, self.prob.call
        rows = i1 - i0
        bias = prob.bias[head] if prob.bias is not None else None   # (Tq, Tk) view, no copy
        if call.score_mod is not None:
            b, h = _batch_head(prob, head)
            q_idx = np.arange(i0, i1, dtype=np.int64)[:, None]
        block_out = buf.block_out[:rows]                            # (rows, Dv)
        moved, fresh = (row[:rows] for row in buf.flags)
        shifted = False   # whether any row's reference has moved from 0
        for j0, j1, blocked, limit, _, _ in plan:   # no start: ranges=False
            cols = j1 - j0
            scores = buf.scores[:rows, :cols]                       # (rows, cols) scratch
            # Step 1. S = (Q_i·scale)·K_jᵀ, BLAS.
            np.matmul(q_scaled, keys[j0:j1].T, out=scores)
            # Step 2. S += bias; S = score_mod(S); S = −inf where the key is not allowed (mask,
            # mask function, causal diagonal).
            if bias is not None:
                np.add(scores, bias[i0:i1, j0:j1], out=scores, casting="same_kind")
            if call.score_mod is not None:
                kv_idx = np.arange(j0, j1, dtype=np.int64)
                np.copyto(scores, as_scores(call.score_mod(scores, b, h, q_idx, kv_idx), scores), casting="same_kind")
            if blocked is not None:
                np.copyto(scores, -np.inf, where=blocked)
            if limit is not None and not (self.fused is not None and _CAUSAL_IN_C):
                offset = self.bk - (limit - 1)                      # add the 0/−inf band
                np.add(scores, self.causal_bias[:rows, offset : offset + cols], out=scores)
                limit = None
            if self.fused is not None:
                # Steps 3–5 in C (_fused.c), float32: the same reference rule row by row, then
                # P = exp(S − r) and l = α·l + rowsum(P) in one pass (future keys of a causal
                # block set to 0 there, no band added, no exp taken); True when some r moved up.
                if self.fused(scores, ref, l, alpha, row_max if self.partial else None, _HEADROOM, limit):
                    acc *= alpha[:, None]
            else:
                # Step 3. Block row max; move a row's reference only where the headroom requires it
                # (rarely: then α = exp(r − r_new) rescales that row's acc and l, as in merge.py).
                np.maximum.reduce(scores, axis=1, out=block_max)
                if self.partial:
                    np.maximum(row_max, block_max, out=row_max)
                np.subtract(block_max, ref, out=alpha)                  # block max − r
                top, bottom = alpha.max(), alpha.min()
                if not (top <= _HEADROOM and bottom >= -_HEADROOM):     # NaN lands here too
                    np.greater(alpha, _HEADROOM, out=moved)             # up: rescale acc, l
                    np.equal(l, 0, out=fresh)                           # down: only rows with
                    fresh &= alpha < -_HEADROOM                         # nothing summed yet, so
                    fresh &= np.isfinite(alpha)                         # no rescaling needed
                    if moved.any() or fresh.any():
                        np.copyto(alpha, 0, where=~moved)               # alpha held block max − r
                        np.negative(alpha, out=alpha)
                        np.exp(alpha, out=alpha)                        # α = exp(r − r_new) ≤ 1; 1 elsewhere
                        acc *= alpha[:, None]
                        l *= alpha
                        moved |= fresh
                        np.copyto(ref, block_max, where=moved)          # r_new = block max
                        shifted = True
                # Step 4. P = exp(S − r), in place (no subtraction while every r is 0).
                if shifted:
                    np.subtract(scores, ref[:, None], out=scores)
                np.exp(scores, out=scores)
                # Step 5. l̃ = rowsum(P) as a BLAS matrix-vector product (faster than a reduction),
                # and l = l + l̃ (already against the common r).
                np.matmul(scores, buf.ones[:cols], out=block_sum)
                l += block_sum
            # Step 6. Õ = P·V_j, BLAS. Step 7. Merge: acc = acc + Õ (already against the common r).
            np.matmul(scores, values[j0:j1], out=block_out)
            if prob.bad_keys is not None and prob.bad_keys[j0:j1].any():
                _add_non_finite_values(block_out, scores, prob.v_raw[head], j0, prob.bad_keys[j0:j1])
            acc += block_out


def _rows_fit(x: np.ndarray) -> bool:
    """Whether a (T, D) view can go to BLAS as it is: contiguous rows that do not overlap."""
    return x.strides[1] == x.itemsize and (x.shape[0] <= 1 or x.strides[0] >= x.shape[1] * x.itemsize)


def _add_non_finite_values(block_out, probs, values, j0, bad):
    """block_out += Σ_j P_ij·v_j over the keys j of this block whose values are not finite, taken
    only where P_ij > 0: a key that a query gives no weight (masked, or exp underflowed) is not
    read, one it attends to carries its NaN or inf into that query's row."""
    cols = np.flatnonzero(bad)
    p = probs[:, cols][:, :, None]                                  # (rows, n, 1)
    v = values[j0 + cols][None, :, :]                               # (1, n, Dv)
    with np.errstate(invalid="ignore", over="ignore"):
        block_out += (p * np.where(p > 0, v, 0)).sum(axis=1)


def _causal_band(bq, bk, dtype):
    """(bq, 2·bk + bq) additive causal block source: band[r, x] = 0 if x − bk ≤ r else −inf.

    The block at (i0, j0) with offset o = i0 + shift − j0 (key j0+c is in query i0+r's future
    iff c − r > o) is band[:rows, bk − o : bk − o + cols]; a crossing block has −bq < o < bk."""
    band = np.zeros((bq, 2 * bk + bq), dtype)
    band[np.arange(2 * bk + bq)[None, :] - bk > np.arange(bq)[:, None]] = -np.inf
    return band


@dataclass(frozen=True)
class _Scratch:
    key: tuple              # (dtype, block_q, block_k, Dv)
    scores: np.ndarray      # (block_q, block_k) scores, then probabilities P, in place
    block_out: np.ndarray   # (block_q, Dv) Õ = P·V_j
    ones: np.ndarray        # (block_k,) for the row sums P·1
    vectors: np.ndarray     # (6, block_q): r, block max, α, l, l̃, running max (Partial)
    flags: np.ndarray       # (2, block_q) bool: reference moved, fresh row


# Each thread keeps the scratch of its last task for the next call: allocating 0.5 MiB and
# faulting its pages in cost ~0.1–0.3 ms per call and thread, a tenth of a T = 512 call. A task
# takes it off the thread's shelf and puts it back when done, so a kernel call nested inside
# one (a mask function calling qkv.attention) finds the shelf empty and allocates its own.
_shelf = threading.local()


def _take_scratch(key) -> _Scratch:
    buffers = getattr(_shelf, "buffers", None)
    _shelf.buffers = None
    if buffers is not None and buffers.key == key:
        return buffers
    dtype, bq, bk, dv = key
    return _Scratch(key=key, scores=np.empty((bq, bk), dtype), block_out=np.empty((bq, dv), dtype),
                    ones=np.ones(bk, dtype), vectors=np.empty((6, bq), dtype), flags=np.empty((2, bq), np.bool_))


def _give_scratch(buffers: _Scratch) -> None:
    _shelf.buffers = buffers


# --------------------------------------------------------------------------- threads
_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def _run_all(run, jobs, threads) -> None:
    """run(*job) for every job, on `threads` threads: the caller and threads − 1 workers of a
    pool kept between calls (starting threads per call cost ~0.1–1 ms). Each thread takes the
    next job from the shared list (heaviest first), so a slow thread never holds up the rest."""
    threads = min(threads, len(jobs))
    if threads <= 1:
        for job in jobs:
            run(*job)
        return
    pending = iter(jobs)
    lock = threading.Lock()
    failed = []

    def drain():
        while not failed:
            with lock:
                job = next(pending, None)
            if job is None:
                return
            try:
                run(*job)
            except BaseException:
                failed.append(True)
                raise

    futures = _submit(drain, threads - 1)
    try:
        drain()
    finally:
        for future in futures:
            future.cancel()   # not started (pool busy with another call): nothing left to do
        for future in futures:
            if not future.cancelled():
                future.result()   # waits; re-raises a worker's exception


def _submit(fn, count: int) -> list:
    """Submit fn `count` times to the shared pool, growing it first if it is too small.

    Under the lock, so a concurrent call that grows (replaces) the pool can never shut down the
    pool between our lookup and our submissions ("cannot schedule new futures after shutdown").
    A replaced pool is shut down without waiting: work already submitted to it still runs."""
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < count:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(count, thread_name_prefix="qkv-attn"), count
        return [_pool.submit(fn) for _ in range(count)]


# os.fork() waits until no kernel call is running, and kernel calls wait while a fork is under way:
# OpenBLAS shuts its threads down at a fork and may restart them with its default thread count,
# so a BLAS call in flight in another thread across a fork can hang (seen: sgemm spinning in
# inner_thread after the fork) and the BLAS limit held for that call would be lost.
_gate = threading.Condition()
_gate_active = 0
_gate_forking = False


@contextlib.contextmanager
def _fork_gate():
    global _gate_active
    with _gate:
        while _gate_forking:
            _gate.wait()
        _gate_active += 1
    try:
        yield
    finally:
        with _gate:
            _gate_active -= 1
            if _gate_active == 0:
                _gate.notify_all()


def _before_fork() -> None:
    global _gate_forking
    with _gate:
        _gate_forking = True
        while _gate_active:
            _gate.wait()


def _after_fork_in_parent() -> None:
    global _gate_forking
    with _gate:
        _gate_forking = False
        _gate.notify_all()


def _after_fork_in_child() -> None:
    """The child of os.fork() has only the forking thread: none of the pool's workers. Start from
    nothing: a new (empty) pool on first use, fresh locks and gate, no kernel call counted as
    holding BLAS to one thread. (The gate lets no kernel call run across a fork; should one have
    held the BLAS limit, the saved limiter restores the original setting after the child's next
    kernel call.)"""
    global _pool, _pool_size, _pool_lock, _blas_lock, _blas_users, _blas_limiter, _inherited_limiter
    global _gate, _gate_active, _gate_forking
    _gate, _gate_active, _gate_forking = threading.Condition(), 0, False
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()
    _blas_lock = threading.Lock()
    if _blas_users and _blas_limiter is not None:
        _inherited_limiter = _blas_limiter
    _blas_users, _blas_limiter = 0, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter = None   # threadpoolctl's limiter while any kernel call runs
_blas_controller = None
_inherited_limiter = None   # a forked child's copy of the parent's limiter (see _after_fork_in_child)


@contextlib.contextmanager
def _blas_single_thread():
    """Hold NumPy's BLAS to one thread while the kernel runs.

    Without it each of our threads would start BLAS's own threads: 2 workers × 2 BLAS threads
    on 2 cores. Uses threadpoolctl when installed; otherwise BLAS is left as it is. BLAS has one
    process-wide setting, so concurrent kernel calls share the limit (counted): the first sets
    it and the last one out restores what was there before.
    """
    global _blas_users, _blas_limiter, _blas_controller, _inherited_limiter
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            if _blas_controller is None:   # finding the libraries takes ~0.3 ms: once
                _blas_controller = ThreadpoolController()
            _blas_limiter = _blas_controller.limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None
                if _inherited_limiter is not None:   # forked while the parent held the limit
                    _inherited_limiter.restore_original_limits()
                    _inherited_limiter = None
