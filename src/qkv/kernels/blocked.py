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
running state. The causal diagonal is one in-place add of a precomputed 0/−inf band slice.

For float32, steps 3–5 (row max, reference, exp, row sums) run in the optional C extension
`_fused` (one pass per row, vectorised exp; ~4× less time than NumPy's passes) when it is
built; otherwise, and for float64, in NumPy. Both follow the same reference rule.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

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


def blocked_attention(q, k, v, mask=None, *, bias=None, causal: bool = False, scale: float | None = None,
                      block_q: int | None = None, block_k: int | None = None, num_threads: int | None = None,
                      return_lse: bool = False):
    """softmax(q·kᵀ·scale + bias, masked)·v without ever forming the Tq×Tk score matrix.

    Args:
      q: (…, Tq, Dk) float32 or float64 queries; with heads (…, H, Tq, Dk).
      k: (…, Tk, Dk) keys; (…, G, Tk, Dk) with G < H, H % G == 0 is grouped-query attention:
         query head h reads key/value head h // (H // G), without copying k or v.
      v: (…, Tk, Dv) values (Dv may differ from Dk). k and v are converted to q's dtype.
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
      block_q, block_k: rows of q and of k per block (defaults 256 and 512, clipped to Tq, Tk;
        when Tq < 256 the default block_k grows so the score block stays 256·512 elements).
      num_threads: worker threads (default: the CPUs this process may use).
      return_lse: also return lse (…, Tq) = log Σ_j exp(s_ij) over the allowed keys (natural
        log, s = q·kᵀ·scale + bias), −inf for a row with no allowed key.

    Leading (batch/head) dimensions broadcast like NumPy's; there may be none (2-D inputs).

    Returns:
      out (…, Tq, Dv) in q's dtype, or (out, lse) with return_lse. A query row with no allowed
      key gives a zero row (never NaN, no warning). Tq = 0 or Tk = 0 gives a correctly shaped
      empty or zero result.
    """
    if not return_lse:
        return _attention(q, k, v, mask, bias=bias, causal=causal, scale=scale, block_q=block_q,
                          block_k=block_k, num_threads=num_threads, partial=False)
    # The un-normalised Partial carries the row max m and the sum l = Σ exp(s − m): lse = m + log l.
    part = _attention(q, k, v, mask, bias=bias, causal=causal, scale=scale, block_q=block_q,
                      block_k=block_k, num_threads=num_threads, partial=True)
    return finalize(part), lse_of(part)


def partial_attention(q, k, v, mask=None, *, bias=None, scale=None) -> Partial:
    """Attention of q over the keys k (…, Tk, Dk) / values v (…, Tk, Dv), left un-normalised.

    Same inputs and broadcasting rules as `blocked_attention` (GQA included); the mask and bias
    are those of this key range, i.e. (…, Tq, Tk) for this k. Returns a `Partial` with out
    (…, Tq, Dv), row_max and row_sum (…, Tq), in q's dtype. `finalize(partial_attention(...))`
    equals `blocked_attention(...)`; partials over disjoint key ranges combine with
    `merge_partials`.
    """
    return _attention(q, k, v, mask, bias=bias, causal=False, scale=scale, partial=True)


# --------------------------------------------------------------------------- validation
@dataclass(frozen=True)
class _Problem:
    q: np.ndarray          # broadcast view (*L, Tq, Dk); with GQA L ends in (G, H/G)
    k: np.ndarray          # broadcast view (*L, Tk, Dk)
    v: np.ndarray          # broadcast view (*L, Tk, Dv)
    mask: np.ndarray | None   # broadcast view (*L, Tq, Tk), never materialised
    bias: np.ndarray | None   # broadcast view (*L, Tq, Tk), never materialised
    lead: tuple            # L, the loop over (batch, head) pairs
    out_lead: tuple        # the caller's leading shape (…, H): L with (G, H/G) merged back
    scale: float
    causal: bool


def _shape(x) -> str:
    return str(tuple(int(n) for n in x))


def _prepare(q, k, v, mask, bias, scale, causal) -> _Problem:
    q = np.asarray(q)
    if q.dtype not in (np.float32, np.float64):
        raise TypeError(f"q has dtype {q.dtype}; the blocked kernel computes in float32 or float64")
    dtype = q.dtype
    k = np.asarray(k, dtype=dtype)
    v = np.asarray(v, dtype=dtype)
    for name, x, letters in (("q", q, "Tq, Dk"), ("k", k, "Tk, Dk"), ("v", v, "Tk, Dv")):
        if x.ndim < 2:
            raise ValueError(f"{name} has shape {_shape(x.shape)} but needs at least 2 dimensions (…, {letters})")
    tq, dk = q.shape[-2:]
    tk, dv = v.shape[-2:]
    if k.shape[-1] != dk:
        raise ValueError(f"k has shape {_shape(k.shape)} but q has width {dk} (expected (…, Tk, {dk}))")
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v has shape {_shape(v.shape)} but k has {k.shape[-2]} keys "
                         f"(expected (…, {k.shape[-2]}, Dv))")
    tk = k.shape[-2]

    # Grouped-query attention: q (…, H, Tq, Dk) → (…, G, H/G, Tq, Dk); k, v (…, G, Tk, ·) →
    # (…, G, 1, Tk, ·). Plain broadcasting then pairs query head h with kv head h // (H/G).
    heads = q.shape[-3] if q.ndim >= 3 else 1
    kv_heads = k.shape[-3] if k.ndim >= 3 else 1
    grouped = q.ndim >= 3 and k.ndim >= 3 and 1 < kv_heads < heads
    if grouped:
        if heads % kv_heads:
            raise ValueError(f"k has shape {_shape(k.shape)}: its {kv_heads} key/value heads do not divide "
                             f"q's {heads} heads (q has shape {_shape(q.shape)})")
        v_heads = v.shape[-3] if v.ndim >= 3 else 1
        if v_heads not in (1, kv_heads):
            raise ValueError(f"v has shape {_shape(v.shape)} but k has {kv_heads} heads "
                             f"(expected (…, {kv_heads}, {tk}, Dv))")
        q = _split_axis(q, q.ndim - 3, kv_heads, heads // kv_heads)   # (…, G, H/G, Tq, Dk)
        k = k[..., None, :, :]                                        # (…, G, 1, Tk, Dk)
        v = v[..., None, :, :] if v.ndim >= 3 else v                  # (…, G, 1, Tk, Dv)
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"q, k and v have leading (batch/head) shapes {_shape(q.shape[:-2])}, "
                         f"{_shape(k.shape[:-2])} and {_shape(v.shape[:-2])} that do not broadcast") from None
    out_lead = lead[:-2] + (lead[-2] * lead[-1],) if grouped else lead
    scores_shape = out_lead + (tq, tk)

    def scores_like(name, x):
        if x is None:
            return None
        try:
            ok = np.broadcast_shapes(x.shape, scores_shape) == scores_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{name} has shape {_shape(x.shape)} which does not broadcast to the scores' "
                             f"(…, H, Tq, Tk) = {_shape(scores_shape)}")
        x = np.broadcast_to(x, scores_shape)
        if grouped:
            x = _split_axis(x, x.ndim - 3, kv_heads, heads // kv_heads)
        return np.broadcast_to(x, lead + (tq, tk))

    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"mask has dtype {mask.dtype}; it must be boolean (True = may attend). "
                            "Pass additive scores as bias=")
    if bias is not None:
        bias = np.asarray(bias)
        if not np.issubdtype(bias.dtype, np.floating):
            raise TypeError(f"bias has dtype {bias.dtype}; it must be floating point")
    if scale is None:
        scale = 1.0 / math.sqrt(dk) if dk else 1.0
    return _Problem(
        q=np.broadcast_to(q, lead + (tq, dk)), k=np.broadcast_to(k, lead + (tk, dk)),
        v=np.broadcast_to(v, lead + (tk, dv)), mask=scores_like("mask", mask),
        bias=scores_like("bias", bias), lead=lead, out_lead=out_lead, scale=float(scale), causal=bool(causal),
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
# may be up to e^16 ≈ 2^23 larger than with r = max, so |v|·Tk must stay below ~4e31 (float32).
_HEADROOM = 16.0
# float32 blocks take _fused.softmax_rows for steps 3–5 when the extension is built: the same
# reference logic, but per row in one pass (max, then exp(S − r) and its sum while the row is in
# L1) with a vectorised exp, ~0.3 ns per score against ~1.6 ns for NumPy's passes. Chosen once,
# here; tests switch it to run every kernel test on both paths.
_USE_FUSED = _fused is not None


def _attention(q, k, v, mask=None, *, bias=None, causal=False, scale=None, block_q=None, block_k=None,
               num_threads=None, partial=False):
    """blocked_attention, or with partial=True the un-normalised `Partial`."""
    for name, value in (("block_q", block_q), ("block_k", block_k), ("num_threads", num_threads)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    prob = _prepare(q, k, v, mask, bias, scale, causal)
    tq, tk, dv = prob.q.shape[-2], prob.k.shape[-2], prob.v.shape[-1]
    out_shape = prob.out_lead + (tq, dv)
    heads = list(np.ndindex(*prob.lead))
    if not (heads and tq and tk):
        out = np.zeros(out_shape, prob.q.dtype)
        if partial:
            return Partial(out, np.full(out_shape[:-1], -np.inf, out.dtype), np.zeros(out_shape[:-1], out.dtype))
        return out
    bq = min(block_q or DEFAULT_BLOCK_Q, tq)
    # With few query rows (decoding) take longer key blocks, keeping the score block at
    # the default's size: fewer, larger BLAS calls for the same memory.
    bk = min(block_k or max(DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q * DEFAULT_BLOCK_K // bq), tk)
    shift = tk - tq  # causal: query i sees key j iff j <= i + shift
    tasks = [(h, i0, min(i0 + bq, tq)) for h in heads for i0 in range(0, tq, bq)]
    big = len(heads) * tq * tk >= _PARALLEL_MIN_SCORES
    threads = min(num_threads or _available_cpus(), max(len(tasks), tk // bk)) if big else 1
    # Too few (head, query block) tasks for the threads — one long head, or decoding with few
    # heads: split each task's keys into ranges (whole key blocks), one Partial per range, and
    # merge them with merge_partials. Otherwise one range, written straight into the result.
    ranges = 1 if len(tasks) >= threads else min(-(-threads // len(tasks)), -(-tk // bk))
    parts = [_State.empty(prob.lead + (tq, dv), prob.q.dtype) for _ in range(ranges)]
    ctx = _Context(prob, parts, bq, bk, shift, partial or ranges > 1)
    jobs = []
    for h, i0, i1 in tasks:
        key_end = min(tk, i1 + shift) if prob.causal else tk   # keys past this are all future
        blocks = -(-max(key_end, 0) // bk)
        for r in range(ranges):   # range r: key blocks [r·n/ranges, (r+1)·n/ranges)
            j0, j1 = (blocks * r // ranges) * bk, min(key_end, (blocks * (r + 1) // ranges) * bk)
            if j1 > j0 or r == 0:
                jobs.append((h, i0, i1, j0, max(j1, j0), r))
    jobs.sort(key=lambda job: -(job[2] - job[1]) * (job[4] - job[3]))   # heaviest first (stable)
    # BLAS is held to one thread even without a pool: its own threads on these block-sized
    # products cost more in synchronisation than they gain (and spin badly on a busy
    # machine). Small problems skip the pool and the limit (~70 µs to set and restore).
    with _blas_single_thread() if big else contextlib.nullcontext():
        _run_all(ctx.run, jobs, threads)
    if ranges > 1:
        whole = parts[0].as_partial()
        for part in parts[1:]:
            whole = merge_partials(whole, part.as_partial())
        result = Partial(*whole) if partial else finalize(whole)
    else:
        result = parts[0].as_partial() if partial else parts[0].out
    if partial:
        out, row_max, row_sum = result
        return Partial(out.reshape(out_shape), row_max.reshape(out_shape[:-1]), row_sum.reshape(out_shape[:-1]))
    return result.reshape(out_shape)


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

    def __init__(self, prob, parts, bq, bk, shift, partial):
        self.prob, self.parts = prob, parts
        self.bq, self.bk, self.shift, self.partial = bq, bk, shift, partial
        self.scale = prob.q.dtype.type(prob.scale)
        self.local = threading.local()
        self.causal_bias = _causal_band(bq, bk, prob.q.dtype) if prob.causal else None
        self.fused = _fused.softmax_rows if _USE_FUSED and prob.q.dtype == np.float32 else None

    def scratch(self):
        """This thread's buffers, allocated once per call: O(block_q·block_k)."""
        buffers = getattr(self.local, "buffers", None)
        if buffers is None:
            dtype, bq, bk, dv = self.prob.q.dtype, self.bq, self.bk, self.prob.v.shape[-1]
            buffers = self.local.buffers = _Scratch(
                scores=np.empty((bq, bk), dtype), blocked=np.empty((bq, bk), np.bool_),
                block_out=np.empty((bq, dv), dtype), ones=np.ones(bk, dtype),
                vectors=np.empty((6, bq), dtype), flags=np.empty((2, bq), np.bool_),
            )
        return buffers

    def run(self, head, i0, i1, key_start, key_end, part):
        """Rows i0:i1 of one (batch, head) over keys key_start:key_end: the online softmax."""
        prob, bk, shift = self.prob, self.bk, self.shift
        rows = i1 - i0
        keys, values = prob.k[head], prob.v[head]                   # (Tk, Dk), (Tk, Dv)
        mask = prob.mask[head] if prob.mask is not None else None   # (Tq, Tk) view, no copy
        bias = prob.bias[head] if prob.bias is not None else None   # (Tq, Tk) view, no copy
        state = self.parts[part]
        buf = self.scratch()
        block_out = buf.block_out[:rows]                            # (rows, Dv)
        ref, block_max, alpha, l, block_sum, row_max = (row[:rows] for row in buf.vectors)
        moved, fresh = (row[:rows] for row in buf.flags)

        # Step 0. Running state: acc = 0 (written straight into the output rows), l = 0, the
        # reference r = 0 (see _HEADROOM) and whether any row's r has moved. Fold the scale into q.
        acc = state.out[head][i0:i1]                                # (rows, Dv), zeros
        ref.fill(0)
        l.fill(0)
        row_max.fill(-np.inf)   # the true running max, kept only for a Partial
        shifted = False
        q_scaled = prob.q[head][i0:i1] * self.scale                 # (rows, Dk)

        for j0 in range(key_start, key_end, bk):
            j1 = min(j0 + bk, key_end)
            scores = buf.scores[:rows, : j1 - j0]                   # (rows, cols) scratch
            # Step 1. S = (Q_i·scale)·K_jᵀ, BLAS.
            np.matmul(q_scaled, keys[j0:j1].T, out=scores)
            # Step 2. S += bias; S = −inf where the key is not allowed (mask, causal diagonal).
            if bias is not None:
                np.add(scores, bias[i0:i1, j0:j1], out=scores, casting="same_kind")
            if mask is not None:
                blocked = buf.blocked[:rows, : j1 - j0]
                np.logical_not(mask[i0:i1, j0:j1], out=blocked)
                np.copyto(scores, -np.inf, where=blocked)
            if prob.causal and j1 - 1 > i0 + shift:  # this block crosses the diagonal: add 0/−inf
                offset = self.bk - (i0 + shift - j0)
                np.add(scores, self.causal_bias[:rows, offset : offset + j1 - j0], out=scores)
            if self.fused is not None:
                # Steps 3–5 in C (_fused.c), float32: the same reference rule row by row, then
                # P = exp(S − r) and l = α·l + rowsum(P) in one pass; True when some r moved up.
                if self.fused(scores, ref, l, alpha, row_max if self.partial else None, _HEADROOM):
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
                np.matmul(scores, buf.ones[: j1 - j0], out=block_sum)
                l += block_sum
            # Step 6. Õ = P·V_j, BLAS. Step 7. Merge: acc = acc + Õ (already against the common r).
            np.matmul(scores, values[j0:j1], out=block_out)
            acc += block_out

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


def _causal_band(bq, bk, dtype):
    """(bq, 2·bk + bq) additive causal block source: band[r, x] = 0 if x − bk ≤ r else −inf.

    The block at (i0, j0) with offset o = i0 + shift − j0 (key j0+c is in query i0+r's future
    iff c − r > o) is band[:rows, bk − o : bk − o + cols]; a crossing block has −bq < o < bk."""
    band = np.zeros((bq, 2 * bk + bq), dtype)
    band[np.arange(2 * bk + bq)[None, :] - bk > np.arange(bq)[:, None]] = -np.inf
    return band


@dataclass(frozen=True)
class _Scratch:
    scores: np.ndarray      # (block_q, block_k) scores, then probabilities P, in place
    blocked: np.ndarray     # (block_q, block_k) bool: entries not allowed
    block_out: np.ndarray   # (block_q, Dv) Õ = P·V_j
    ones: np.ndarray        # (block_k,) for the row sums P·1
    vectors: np.ndarray     # (6, block_q): r, block max, α, l, l̃, running max (Partial)
    flags: np.ndarray       # (2, block_q) bool: reference moved, fresh row


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

    futures = [_worker_pool(threads - 1).submit(drain) for _ in range(threads - 1)]
    try:
        drain()
    finally:
        for future in futures:
            future.cancel()   # not started (pool busy with another call): nothing left to do
        for future in futures:
            if not future.cancelled():
                future.result()   # waits; re-raises a worker's exception


def _worker_pool(size: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < size:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(size, thread_name_prefix="qkv-attn"), size
        return _pool


def _forget_pool_after_fork() -> None:
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()   # the child has none of the threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter = None   # threadpoolctl's limiter while any kernel call runs
_blas_controller = None


@contextlib.contextmanager
def _blas_single_thread():
    """Hold NumPy's BLAS to one thread while the kernel runs.

    Without it each of our threads would start BLAS's own threads: 2 workers × 2 BLAS threads
    on 2 cores. Uses threadpoolctl when installed; otherwise BLAS is left as it is. BLAS has one
    process-wide setting, so concurrent kernel calls share the limit (counted): the first sets
    it and the last one out restores what was there before.
    """
    global _blas_users, _blas_limiter, _blas_controller
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
