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
BLAS and inside ufunc loops, so the threads really run in parallel.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .merge import Partial, finalize_into

__all__ = ["blocked_attention"]

DEFAULT_BLOCK_Q = 256
DEFAULT_BLOCK_K = 512
# Below this many score elements (summed over heads) a thread pool costs more than it gains.
_PARALLEL_MIN_SCORES = 1 << 18


def blocked_attention(q, k, v, mask=None, *, bias=None, causal: bool = False, scale: float | None = None,
                      block_q: int | None = None, block_k: int | None = None, num_threads: int | None = None):
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

    Leading (batch/head) dimensions broadcast like NumPy's; there may be none (2-D inputs).

    Returns:
      out (…, Tq, Dv) in q's dtype. A query row with no allowed key gives a zero row (never
      NaN, no warning). Tq = 0 or Tk = 0 gives a correctly shaped empty or zero result.
    """
    return _attention(q, k, v, mask, bias=bias, causal=causal, scale=scale, block_q=block_q,
                      block_k=block_k, num_threads=num_threads, partial=False)


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
def _attention(q, k, v, mask=None, *, bias=None, causal=False, scale=None, block_q=None, block_k=None,
               num_threads=None, partial=False):
    """blocked_attention, or with partial=True the un-normalised `Partial` (keys not causal)."""
    for name, value in (("block_q", block_q), ("block_k", block_k), ("num_threads", num_threads)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    prob = _prepare(q, k, v, mask, bias, scale, causal)
    tq, tk, dv = prob.q.shape[-2], prob.k.shape[-2], prob.v.shape[-1]
    dtype = prob.q.dtype
    out = np.zeros(prob.lead + (tq, dv), dtype)
    row_max = np.full(prob.lead + (tq,), -np.inf, dtype)
    row_sum = np.zeros(prob.lead + (tq,), dtype)
    heads = list(np.ndindex(*prob.lead))
    if heads and tq and tk:
        bq = min(block_q or DEFAULT_BLOCK_Q, tq)
        # With few query rows (decoding) take longer key blocks, keeping the score block at
        # the default's size: fewer, larger BLAS calls for the same memory.
        bk = min(block_k or max(DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q * DEFAULT_BLOCK_K // bq), tk)
        shift = tk - tq  # causal: query i sees key j iff j <= i + shift
        tasks = [(h, i0, min(i0 + bq, tq)) for h in heads for i0 in range(0, tq, bq)]
        if prob.causal:  # later query blocks see more keys: hand the heaviest out first
            tasks.sort(key=lambda task: -min(tk, task[2] + shift))
        ctx = _Context(prob, out, row_max, row_sum, bq, bk, shift, partial)
        threads = min(num_threads or _available_cpus(), len(tasks))
        big = len(heads) * tq * tk >= _PARALLEL_MIN_SCORES
        # BLAS is held to one thread even without a pool: its own threads on these block-sized
        # products cost more in synchronisation than they gain (and spin badly on a busy
        # machine). Small problems skip the pool and the limit (~70 µs to set and restore).
        with _blas_single_thread() if big else contextlib.nullcontext():
            if threads > 1 and big:
                with ThreadPoolExecutor(threads, thread_name_prefix="qkv-attn") as pool:
                    for _ in pool.map(lambda task: ctx.run(*task), tasks):
                        pass  # re-raises a worker's exception here
            else:
                for task in tasks:
                    ctx.run(*task)
    out_shape = prob.out_lead + (tq, dv)
    if partial:
        return Partial(out.reshape(out_shape), row_max.reshape(out_shape[:-1]), row_sum.reshape(out_shape[:-1]))
    return out.reshape(out_shape)


class _Context:
    """One call's inputs, outputs and per-thread scratch; `run` computes one query block."""

    def __init__(self, prob, out, row_max, row_sum, bq, bk, shift, partial):
        self.prob, self.out, self.row_max, self.row_sum = prob, out, row_max, row_sum
        self.bq, self.bk, self.shift, self.partial = bq, bk, shift, partial
        self.scale = prob.q.dtype.type(prob.scale)
        self.local = threading.local()
        # diagonal[r, c] = c − r: in a block at (i0, j0) key j0+c is in query i0+r's future
        # iff c − r > i0 + shift − j0. Shared, read-only, (block_q, block_k).
        self.diagonal = (np.arange(bk)[None, :] - np.arange(bq)[:, None]) if prob.causal else None

    def scratch(self):
        """This thread's buffers, allocated once per call: O(block_q·block_k)."""
        buffers = getattr(self.local, "buffers", None)
        if buffers is None:
            dtype, bq, bk, dv = self.prob.q.dtype, self.bq, self.bk, self.prob.v.shape[-1]
            buffers = self.local.buffers = _Scratch(
                scores=np.empty((bq, bk), dtype), blocked=np.empty((bq, bk), np.bool_),
                block_out=np.empty((bq, dv), dtype), ones=np.ones(bk, dtype),
                vectors=np.empty((5, bq), dtype),
            )
        return buffers

    def run(self, head, i0, i1):
        """Rows i0:i1 of one (batch, head): the online softmax over its key blocks."""
        prob, bk, shift = self.prob, self.bk, self.shift
        rows = i1 - i0
        tk = prob.k.shape[-2]
        keys, values = prob.k[head], prob.v[head]                   # (Tk, Dk), (Tk, Dv)
        mask = prob.mask[head] if prob.mask is not None else None   # (Tq, Tk) view, no copy
        bias = prob.bias[head] if prob.bias is not None else None   # (Tq, Tk) view, no copy
        buf = self.scratch()
        block_out = buf.block_out[:rows]                            # (rows, Dv)
        m, m_new, alpha, l, block_sum = (row[:rows] for row in buf.vectors)

        # Step 0. Running state: acc = 0 (written straight into the output rows), l = 0 and
        # m = the lowest finite float instead of −inf, so that every later m − m_new and
        # S − m_new is −inf or finite, never −inf − (−inf) = NaN. Fold the scale into q once.
        acc = self.out[head][i0:i1]                                 # (rows, Dv), zeros
        m.fill(np.finfo(m.dtype).min)
        l.fill(0)
        q_scaled = prob.q[head][i0:i1] * self.scale                 # (rows, Dk)
        key_end = min(tk, i1 + shift) if prob.causal else tk         # keys past this are all future

        for j0 in range(0, key_end, bk):
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
            if prob.causal and j1 - 1 > i0 + shift:  # this block crosses the diagonal
                blocked = buf.blocked[:rows, : j1 - j0]
                np.greater(self.diagonal[:rows, : j1 - j0], i0 + shift - j0, out=blocked)
                np.copyto(scores, -np.inf, where=blocked)
            # Step 3. New running max m_new = max(m, rowmax(S)).
            np.maximum.reduce(scores, axis=1, out=m_new)
            np.maximum(m_new, m, out=m_new)
            # Step 4. P = exp(S − m_new), in place; α = exp(m − m_new) rescales the old state.
            np.subtract(scores, m_new[:, None], out=scores)
            np.exp(scores, out=scores)
            np.subtract(m, m_new, out=alpha)
            np.exp(alpha, out=alpha)
            # Step 5. l̃ = rowsum(P) as a BLAS matrix-vector product (faster than a reduction);
            # Step 6. Õ = P·V_j, BLAS.
            np.matmul(scores, buf.ones[: j1 - j0], out=block_sum)
            np.matmul(scores, values[j0:j1], out=block_out)
            # Step 7. Merge: acc = α·acc + Õ, l = α·l + l̃, m = m_new. This is merge.merge_into
            # with the block's own factor exp(m_new − m_new) = 1, written out to save the calls.
            acc *= alpha[:, None]
            acc += block_out
            l *= alpha
            l += block_sum
            m, m_new = m_new, m

        # Step 8. out = acc / l, rows with l = 0 (nothing allowed) stay zero. A Partial keeps
        # acc un-normalised and reports m = −inf for those empty rows.
        if self.partial:
            self.row_max[head][i0:i1] = np.where(l > 0, m, -np.inf)
            self.row_sum[head][i0:i1] = l
        else:
            finalize_into(acc, l)


@dataclass(frozen=True)
class _Scratch:
    scores: np.ndarray      # (block_q, block_k) scores, then probabilities P, in place
    blocked: np.ndarray     # (block_q, block_k) bool: entries not allowed
    block_out: np.ndarray   # (block_q, Dv) Õ = P·V_j
    ones: np.ndarray        # (block_k,) for the row sums P·1
    vectors: np.ndarray     # (5, block_q): m, m_new, α, l, l̃


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
