"""Training through qkv's kernel on CPU torch tensors: the C forward (flash_many, which also
writes each row's log-sum-exp) and a FlashAttention-2-style backward in C (`_backward.c`, compiled
into the same extension `_fused`: backward_many), as one
torch custom op with its autograd formula, so `torch.compile(fullgraph=True)` keeps it.

The op works on every mask whose query rows each see one contiguous range of keys (the same for
every batch and head): no mask, causal (bottom-right), and qkv.masks functions with `key_ranges`
(causal(offset), sliding_window, prefix_lm, chunked, document with one sorted id row, and their
`&`). Per row i the range is rows[0, i] <= j < rows[1, i]; both passes visit only the
(query block, key block) pairs some row of the block can see, and mask the rest of a partial
block by the ranges, so a window of width W costs O(T·W) forward and backward. Memory: O(T·D)
beyond the inputs (out, lse, the gradients, one dQ part per thread, and per thread the forward's
block_q × block_k and the backward's three _BACKWARD_GROUP·block_q × block_k scratch blocks).

Numbers: float32 (float16/bfloat16 inputs are computed in float32 and cast back; gradients flow
through the casts). Other dtypes, other devices, a mask array, a bias, a score_mod, non-finite
inputs, values above 2^60 or max|q|·max|k|·Dk near float32's range are not taken
(qkv.kernels.route.torch_flash_why_not says why; qkv.attention then uses its other paths).

Under torch.compile the route reads no values, so the ops' bodies (run eagerly, on the real tensors,
inside the compiled graph) make the eager route's value looks themselves: `op()` refuses non-finite
values and computes scores past float32's range on the plain path (forward and backward op);
`mask_op()` reads a boolean mask array as key ranges (or takes the plain path); `sdpa_op()` wraps the
eager unmasked call that SDPA serves (so its overflow look runs too).

Layout inside the op: q (Nq, Tq, Dk), k (Nk, Tk, Dk), v (Nk, Tk, Dv), Nq = Nk·G: query head n reads
key/value head n // G (grouped-query attention without copying k or v). `run` brings a
checked call's tensors to that layout (broadcast batch dimensions are expanded under autograd, so
their gradients are summed by torch).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading

import numpy as np

from .. import _keep
from . import blas, blocked, native, plain, pool
from .call import Call
from .functions import _compiling
from .magnitude import tops_lose_lse, tops_may_overflow, tops_of, value_tops


__all__ = ["op", "mask_op", "run", "available", "row_ranges", "values_ok", "cast",
           "block_backward", "score_spec", "in_fresh_thread"]

# Blocks of both passes. 128×128 keeps each sgemm's operands in L2 and wastes little of a band's
# partial blocks (see blocked._BAND_BLOCK).
BLOCK_Q = 128
BLOCK_K = 128
# Below this many visited scores (summed over heads) one thread does it all: a pool costs more.
_PARALLEL_MIN_SCORES = 1 << 18
# flash_many / backward_many return to Python after this many seconds (Ctrl-C stays prompt).
_BUDGET_S = 0.05
# The backward computes up to this many consecutive query blocks of a key block as one taller
# block (backward_many's group): fewer, larger sgemm; S and dP of 256 × 128 floats (256 KiB) stay
# in a Zen 3 core's 512 KiB L2. Measured at causal T = 2048, H = 8, D = 64, one thread, on a machine
# at load 11–16 (so per step, not per call: each of the five sgemm, the exp and dS timed with rdtsc
# per block pair, their medians summed): 541 / 469 / 436 M cycles per call for group 1 / 2 / 4 (a
# second run: – / 392 / 492–521; by each step's 10th percentile 358 / 268–321 / 198–234). The five
# sgemm are ~88 % of a block pair, the exp ~6 %, dS ~4 %. 2: the gain without 768 KiB of scratch.
# With the register tiles (AVX2, _backward.c's bt_gemm) group hardly matters: one thread's CPU time per
# call, causal T = 2048, medians at load ~7: 194 / 194 / 199 ms for group 1 / 2 / 4 (sgemm 212 / 208 /
# 201 in the same rounds), so 2 stays for both.
_BACKWARD_GROUP = 2
# Values above this are left to the other paths (the forward's e^16 headroom must not overflow P·v).
_MAX_VALUE = 2.0 ** 60

_ready_lock = threading.Lock()
_ready_state = None


def available() -> bool:
    """Whether this route can run: the C extension built (its backward_many, kernels/_backward.c)
    and NumPy's cblas_sgemm found (blas.sgemm_ready hands it to the extension, forward and backward)."""
    global _ready_state
    chosen = native.machine_in_use()   # a `native.use_machine` block: its answer
    if chosen is not None and not (chosen.backward and chosen.fused is not None):
        return False
    if _ready_state is None:
        with _ready_lock:
            if _ready_state is None:
                fused = native.extension()
                ok = fused is not None and hasattr(fused, "backward_many") and blas.sgemm_ready()
                _ready_state = bool(ok and blas.sgemm_found is not None)
    return _ready_state


# --------------------------------------------------------------------------- masks as row ranges
def row_ranges(call: Call, *, per_batch: bool = False):
    """(2, Tq) int64: query row i sees keys rows[0, i] <= j < rows[1, i] (an empty range: no key),
    from causal and the mask function's `key_ranges`; None when the call's mask is not of that
    kind (a mask array, a mask function without key ranges, or ranges that differ by batch/head).
    per_batch: also (B, 2, Tq), batch b's rows[b], when the mask is one range per row that differs by
    batch (a key-padding mask, MaskInfo.range_table (B, 1, 2, Tq); no score_mod): the eager C forward
    and backward then run every batch in one call (`_forward_tensors`), no torch op between batches."""
    if call.has_mask:
        return None
    tq, tk = call.tq, call.tk
    if call.mask_mod is None:   # causal or none: one read-only table per shape, kept
        key = (tq, tk, bool(call.causal))
        rows = _SIMPLE_ROWS.get(key)
        if rows is None:
            rows = _ranges(tq, tk, call.causal, None)
            rows.flags.writeable = False
            _keep.keep(_SIMPLE_ROWS, key, rows, _PLANS_KEPT, _plans_lock)
        return rows.copy()   # the caller's own (writable, as torch.from_numpy wants), ~1 µs
    found = None if call.mask_info is None else call.mask_info.key_ranges   # the validator's analysis
    if found is None and per_batch:
        found = _batch_ranges(call)
    if found is None:
        return None
    return _ranges(tq, tk, call.causal, found)


_SIMPLE_ROWS: dict = {}


def _ranges(tq: int, tk: int, causal: bool, found):
    """row_ranges' table from causal and a mask function's key ranges (found (2, Tq), or None)."""
    lo = np.zeros(tq, np.int64)
    hi = np.full(tq, tk, np.int64)
    if causal:   # bottom-right: row i sees j <= i + Tk − Tq
        np.minimum(hi, np.arange(tq, dtype=np.int64) + (tk - tq) + 1, out=hi)
    if found is not None:   # (2, Tq), or per batch (lo, hi) each (B, Tq)
        lo, hi = np.maximum(lo, found[0]), np.minimum(hi, found[1])
    lo, hi = np.clip(lo, 0, tk), np.clip(hi, 0, tk)   # (lo, hi may have become (B, Tq))
    hi = np.maximum(hi, lo)
    return np.ascontiguousarray(np.stack([lo, hi], axis=-2))


def _batch_ranges(call: Call):
    """(lo, hi) each (B, Tq), the call's per-batch one-range table (see row_ranges' per_batch), or None."""
    info = call.mask_info
    if info is None or info.block_kinds is None or call.scored or not call.lead or call.batch < 2:
        return None
    if call.ndim < 3:
        return None
    table = info.range_table
    if table is None or table.shape[:2] != (call.batch, 1) or table.shape[-1] != call.tq:
        return None
    return table[:, 0, 0], table[:, 0, 1]


# --------------------------------------------------------------------------- block plans
_PLANS: dict = {}
_PLANS_KEPT = 32
_plans_lock = threading.Lock()


class _Plan:
    """Which (query block, key block) pairs some row sees, and whether every row sees every key.

    fwd_blocks (m, 5) and fwd_rows (query blocks, 4): flash_many's key-block table (j0, j1, flags
    4 on partial blocks: per-row ranges; 0 on full ones, 0, 0) and each query block's (i0, i1, b0,
    b1). pairs (n, 2) (query block, full) grouped by key block, offsets (key blocks + 1,), and
    kb_weight (key blocks,): visited rows per key block, for splitting the backward's tasks."""

    def __init__(self, rows: np.ndarray, tq: int, tk: int, bq: int, bk: int):
        lo, hi = rows
        q_starts = np.arange(0, tq, bq)
        n_qb, n_kb = len(q_starts), -(-tk // bk)
        seen = np.empty((n_qb, n_kb), bool)
        full = np.empty((n_qb, n_kb), bool)
        step = max(1, (1 << 22) // max(tq, 1))   # key blocks at a time: (Tq, step) booleans, ≤ 4 MiB
        for b0 in range(0, n_kb, step):
            j0 = np.arange(b0, min(b0 + step, n_kb), dtype=np.int64) * bk
            j1 = np.minimum(j0 + bk, tk)
            overlap = np.minimum(hi[:, None], j1) > np.maximum(lo[:, None], j0)       # (Tq, step)
            covers = (lo[:, None] <= j0) & (hi[:, None] >= j1)
            seen[:, b0:b0 + len(j0)] = np.logical_or.reduceat(overlap, q_starts, axis=0)
            full[:, b0:b0 + len(j0)] = np.logical_and.reduceat(covers, q_starts, axis=0)
        qb, kb = np.nonzero(seen)                     # row-major: by query block, then key block
        j0 = kb * bk
        i0 = qb * bq
        band = _band_of(rows, tq, tk)
        if band is None:   # partial blocks masked by the rows' ranges (flag 4)
            flags = np.where(full[qb, kb], 0, 4)
            limit = start = np.zeros_like(j0)
        else:              # a band (causal, windows): flash_many's limit/start (flags 1, 2), which its
            a, b = band    # AVX-512 register tiles take too; row r of a block keeps c < limit + r, c >= start + r
            partial = ~full[qb, kb]
            flags = np.where(partial, (1 if b is not None else 0) | (2 if a is not None else 0), 0)
            limit = i0 + (b if b is not None else 0) - j0
            start = i0 + (a if a is not None else 0) - j0
        self.fwd_blocks = np.ascontiguousarray(
            np.stack([j0, np.minimum(j0 + bk, tk), flags, limit, start], axis=1), np.int64)
        counts = seen.sum(axis=1)
        ends = np.cumsum(counts)
        self.fwd_rows = np.ascontiguousarray(
            np.stack([q_starts, np.minimum(q_starts + bq, tq), ends - counts, ends], axis=1), np.int64)
        kb_t, qb_t = np.nonzero(seen.T)               # by key block, then query block
        self.pairs = np.ascontiguousarray(np.stack([qb_t, full[qb_t, kb_t]], axis=1), np.int64)
        per_kb = seen.sum(axis=0)
        self.offsets = np.concatenate([[0], np.cumsum(per_kb)]).astype(np.int64)
        q_rows = np.minimum(q_starts + bq, tq) - q_starts
        self.kb_weight = (seen * q_rows[:, None]).sum(axis=0)
        self.visited = int((seen * q_rows[:, None]).sum()) * bk
        for a in (self.fwd_blocks, self.fwd_rows, self.pairs, self.offsets):
            a.flags.writeable = False
        self.kept = {}   # the task tables built from this plan, by head counts and threads (read-only)


def _band_of(rows: np.ndarray, tq: int, tk: int):
    """(a, b) when every row's range is exactly clip(i + a, 0, Tk) <= j < clip(i + b, 0, Tk) (a None:
    from 0; b None: to Tk) — causal, windows —, else None."""
    lo, hi = rows
    i = np.arange(tq, dtype=np.int64)
    # each edge read off a row where it is not clipped (0 < edge < Tk); no such row: unbounded when
    # the edge never moves off its end (lo all 0, hi all Tk), else undecided (not taken as a band)
    inner_lo, inner_hi = np.flatnonzero((lo > 0) & (lo < tk)), np.flatnonzero((hi > 0) & (hi < tk))
    if (not len(inner_lo) and np.any(lo > 0)) or (not len(inner_hi) and np.any(hi < tk)):
        return None
    a = None if not len(inner_lo) else int(lo[inner_lo[0]] - inner_lo[0])
    b = None if not len(inner_hi) else int(hi[inner_hi[0]] - inner_hi[0])
    want_lo = np.zeros(tq, np.int64) if a is None else np.clip(i + a, 0, tk)
    want_hi = np.full(tq, tk, np.int64) if b is None else np.clip(i + b, 0, tk)
    if not (np.array_equal(lo, want_lo) and np.array_equal(hi, want_hi)):
        return None
    return a, b


def _plan(rows: np.ndarray, tq: int, tk: int, bq: int, bk: int) -> _Plan:
    key = (tq, tk, bq, bk, rows.tobytes())
    plan = _PLANS.get(key)
    if plan is None:
        plan = _Plan(rows, tq, tk, bq, bk)
        _keep.keep(_PLANS, key, plan, _PLANS_KEPT, _plans_lock)
    return plan


# --------------------------------------------------------------------------- the two passes (NumPy)
def _run(step, threads: int, big: bool) -> None:
    """step(scratch) on `threads` threads until it returns False (it takes tasks from a shared
    counter); no fork meanwhile (see pool.fork_gate). BLAS is held to one thread whenever the work
    is big (the route's rule), also with threads=1: where a product still goes to sgemm (no AVX2,
    D not a multiple of 8, the scalar loops) OpenBLAS would otherwise spin its own threads
    (measured: 4.6 s wall for 0.2 s of CPU on a busy machine). Small calls skip the ~70 µs limit."""
    stop = []

    def work():
        try:
            while not stop and step():
                pass
        except BaseException:
            stop.append(True)
            raise

    with pool.fork_gate(), (blas.single_thread() if big or threads > 1 else contextlib.nullcontext()):
        pool.run_all(work, [()] * threads, threads)


def _need_sgemm() -> None:
    """The C forward and backward call NumPy's cblas_sgemm, handed over by blas.sgemm_ready() the
    first time a route is chosen. The ops (torch.ops.qkv.flash_attention…) can be called before any
    route was: look for it here, and refuse clearly where this process has none."""
    if not blas.sgemm_ready():
        raise RuntimeError("qkv's C attention needs NumPy's OpenBLAS cblas_sgemm, and this process has none "
                           "(qkv doctor shows what was found); qkv.attention takes the plain path instead")


def forward_arrays(q, k, v, rows, scale: float, bq: int = BLOCK_Q, bk: int = BLOCK_K, threads: int | None = None,
                   score=None, tile: bool = True, width: int = 0):
    """out (Nq, Tq, Dv) and lse (Nq, Tq) float32 from C-contiguous float32 q (Nq, Tq, Dk),
    k (Nk, Tk, Dk), v (Nk, Tk, Dv) and row ranges (2, Tq) (see the module docstring). threads:
    None picks by the work (one thread for small calls). score: None, or (kind, table, cap) of a
    catalogue score function (`score_spec`, its table tiled to the Nq heads: (Nq, Tq + Tk − 1)).
    tile, width: the C per-block choice (flash_many's; defaults: the hardware's best)."""
    _need_sgemm()
    fused = native.extension()   # read here, in the caller's context: the steps run on the pool's threads
    nq, tq, _ = q.shape
    nk, tk, dv = k.shape[0], k.shape[1], v.shape[2]
    groups = nq // nk
    bq, bk = min(bq, tq), min(bk, tk)
    plan = _plan(rows, tq, tk, bq, bk)
    tasks = plan.kept.get(("forward", nq, groups))
    if tasks is None:   # the same for every call of this plan and head count: built once
        rows_of = plan.fwd_rows
        heads = np.arange(nq, dtype=np.int64)
        tasks = np.empty((nq, len(rows_of), 7), np.int64)
        tasks[:, :, 0] = heads[:, None]
        tasks[:, :, 1] = (heads // groups)[:, None]
        tasks[:, :, 2] = heads[:, None]
        tasks[:, :, 3:] = rows_of[None]
        tasks = tasks.reshape(-1, 7)
        weight = (tasks[:, 4] - tasks[:, 3]) * (tasks[:, 6] - tasks[:, 5])
        tasks = np.ascontiguousarray(tasks[np.argsort(-weight, kind="stable")])
        tasks = tasks[tasks[:, 6] > tasks[:, 5]] if len(tasks) else tasks   # rows that see no key: below
        tasks.flags.writeable = False
        plan.kept[("forward", nq, groups)] = tasks
    out = np.zeros((nq, tq, dv), np.float32)
    lse = np.full((nq, tq), -np.inf, np.float32)
    counter = np.zeros(1, np.int64)
    big = plan.visited * nq >= _PARALLEL_MIN_SCORES
    threads = threads or (pool.available_cpus() if big else 1)
    local = threading.local()

    def step():
        if not hasattr(local, "scores"):
            local.scores = np.empty((bq, bk), np.float32)
            local.vectors = np.empty((3, bq), np.float32)
        return fused.flash_many(q, k, v, out, lse, tasks, plan.fwd_blocks, counter, local.scores,
                                  local.vectors, blocked._HEADROOM, float(scale), _BUDGET_S, rows, *extra,
                                         tile=tile, width=width)

    extra = () if score is None else (int(score[0]), score[1], float(score[2]))

    if len(tasks):
        _run(step, threads, big)
    return out, lse


def backward_arrays(dout, q, k, v, out, lse, rows, scale: float, dlse=None, bq: int = BLOCK_Q, bk: int = BLOCK_K,
                    threads: int | None = None, delta=None, score=None, width: int = 0, group: int | None = None,
                    tile: int = -1):
    """dq (Nq, Tq, Dk), dk (Nk, Tk, Dk), dv (Nk, Tk, Dv) float32 from the forward's inputs, out and lse,
    and the gradients dout (Nq, Tq, Dv) and dlse (Nq, Tq) or None; C-contiguous float32. threads:
    None picks by the work. delta (Nq, Tq): rowsum(dO ∘ O) − dlse given by the caller (out and dlse
    then unused) — a block of a longer attention (ring attention) passes the whole row's lse and δ.
    score: None, or (kind, table, cap) of a catalogue score function (`score_spec`, its table tiled to
    the Nq heads: (Nq, Tq + Tk − 1)). width: the C vector loops (0: the widest the CPU has; 1, 8, 16:
    at most that — tests run every loop). group: consecutive query blocks computed as one taller
    block (default _BACKWARD_GROUP). tile: backward_many's products in AVX2 register tiles (1), in
    sgemm (0), or where the tiles serve (-1) — tests compare the two."""
    _need_sgemm()
    fused = native.extension()   # read here, in the caller's context: the steps run on the pool's threads
    nq, tq, dk = q.shape
    nk, tk, dv = k.shape[0], k.shape[1], v.shape[2]
    bq, bk = min(bq, tq), min(bk, tk)
    plan = _plan(rows, tq, tk, bq, bk)
    if delta is None:
        delta = np.einsum("htd,htd->ht", dout, out, dtype=np.float32, optimize=False)   # rowsum(dO ∘ O)
        if dlse is not None:
            delta -= dlse                # lse's own gradient: ∂lse/∂s = P, so dS = P∘(dP − δ + dlse)
    delta = np.ascontiguousarray(delta, np.float32)
    big = plan.visited * nq >= _PARALLEL_MIN_SCORES
    threads = threads or (pool.available_cpus() if big else 1)
    kept = plan.kept.get(("backward", nk, threads))   # the same tasks for every call of the plan
    if kept is None:
        kept = _backward_tasks(plan, nk, threads)
        kept.flags.writeable = False
        plan.kept[("backward", nk, threads)] = kept
    tasks = kept
    # dQ: one part per thread (each adds only to its own; summed below), so a task can be a single
    # key block: the threads finish within about one block's time of each other.
    parts = threads
    dq = np.zeros((parts * nq, tq, dk), np.float32)
    dk_ = np.empty((nk, tk, dk), np.float32)
    dv_ = np.empty((nk, tk, dv), np.float32)
    counter = np.zeros(1, np.int64)
    slots = itertools.count()
    local = threading.local()

    def step():
        if not hasattr(local, "part"):
            local.part = next(slots)   # this thread's part of dq (run_all: at most `threads` threads)
        return fused.backward_many(q, k, v, dout, lse, delta, rows, dq, dk_, dv_, tasks, plan.pairs,
                                            plan.offsets, counter, bq, bk, float(scale), _BUDGET_S, *extra,
                                            width=width, part=local.part, group=group or _BACKWARD_GROUP,
                                            tile=tile)

    extra = (0, None, 1.0) if score is None else (int(score[0]), score[1], float(score[2]))

    _run(step, threads, big)
    dq = dq.reshape(parts, nq, tq, dk)
    whole = dq[0]
    for part in dq[1:next(slots)]:   # the parts a thread wrote to (a thread that took no task has none)
        whole += part
    return whole, dk_, dv_


def _backward_tasks(plan: _Plan, nk: int, threads: int) -> np.ndarray:
    """backward_many's tasks (n, 4) int64: (key/value head, first key block, end key block, 0), heaviest first.

    One thread: one task per head (nothing to balance). Otherwise one task per key block, ordered
    by the rows that see it (causal: the first key blocks are the heaviest),
    so the last tasks taken are the lightest and no thread waits long for another."""
    n_kb = len(plan.offsets) - 1
    if threads <= 1:
        return np.array([(g, 0, n_kb, 0) for g in range(nk)], np.int64).reshape(-1, 4)
    # every key block, the unseen ones (weight 0) last: their task only zeroes their dK and dV rows
    order = np.argsort(-plan.kb_weight, kind="stable")
    tasks = np.zeros((len(order), nk, 4), np.int64)
    tasks[:, :, 0] = np.arange(nk)[None, :]
    tasks[:, :, 1] = order[:, None]
    tasks[:, :, 2] = order[:, None] + 1
    return np.ascontiguousarray(tasks.reshape(-1, 4))


# --------------------------------------------------------------------------- the torch op
_op = None
_function = None
_scored = None


def _contiguous_numpy(t):
    # NumPy's copy where one is needed (dout is often an expanded tensor): single-threaded, so torch's
    # OpenMP workers are not woken to spin beside the kernel's threads after it
    return np.ascontiguousarray(t.detach().numpy())


def _by_batch(rows, *arrays):
    """rows (2, Tq): [(rows, arrays)]; rows (B, 2, Tq) (row_ranges' per_batch): per batch b, (rows[b], each
    array's b-th of B equal parts along axis 0 (its heads: (B·H, …) → (H, …)), contiguous views)."""
    if rows.ndim == 2:
        return [(rows, arrays)]
    n = rows.shape[0]
    return [(rows[b], tuple(None if a is None else a.reshape((n, -1) + a.shape[1:])[b] for a in arrays))
            for b in range(n)]


def _forward_tensors(q, k, v, rows, scale, block_q, block_k):
    import torch

    parts = [forward_arrays(*arrays, np.ascontiguousarray(r), scale, block_q, block_k) for r, arrays in
             _by_batch(_contiguous_numpy(rows), _contiguous_numpy(q), _contiguous_numpy(k), _contiguous_numpy(v))]
    out, lse = (parts[0][i] if len(parts) == 1 else np.concatenate([p[i] for p in parts]) for i in (0, 1))
    return torch.from_numpy(out), torch.from_numpy(lse)


def _backward_tensors(dout, dlse, q, k, v, out, lse, rows, scale, block_q, block_k):
    import torch

    if dout is None:
        dout = torch.zeros_like(out)
    arrays = (_contiguous_numpy(dout), _contiguous_numpy(q), _contiguous_numpy(k), _contiguous_numpy(v),
              _contiguous_numpy(out), _contiguous_numpy(lse), None if dlse is None else _contiguous_numpy(dlse))
    parts = [backward_arrays(*a[:6], np.ascontiguousarray(r), scale, a[6], block_q, block_k)
             for r, a in _by_batch(_contiguous_numpy(rows), *arrays)]
    grads = parts[0] if len(parts) == 1 else [np.concatenate([p[i] for p in parts]) for i in range(3)]
    return tuple(torch.from_numpy(g) for g in grads)


# The C routes' score kinds (_fused.c / _backward.c: SCORE_RELATIVE, SCORE_SOFT_CAP)
SCORE_RELATIVE, SCORE_SOFT_CAP = 1, 2
_SPECS: dict = {}
_SPECS_KEPT = 16
_specs_lock = threading.Lock()


def relative_table(score_mod, heads: int, tq: int, tk: int, batch: int = 1, like=None):
    """float64 (heads, Tq + Tk − 1): column kv − q + Tq − 1 of row h holds f(h, kv − q) of a score_mod
    declared relative (score_mod(s, b, h, q, kv) = s + f(h, kv − q)), from the function itself on
    score 0 (one implementation of the math); q and kv are kept inside 0 … Tq − 1, 0 … Tk − 1.

    The declaration is checked, not trusted: each diagonal kv − q is evaluated at three places (its
    first, middle and last row) and three batch indices (0, batch // 2, batch − 1); a function whose
    values differ there (it reads q, kv or b on their own) is not relative, and the C routes would add a
    wrong bias. like: a torch tensor when the call is on torch (the function then gets CPU float64 /
    int64 tensors, as the plain path gives it torch tensors); NumPy arrays otherwise.

    None — the plain path (or the NumPy walk) then evaluates the function on every score, says what
    is wrong when something is, and carries gradients into captured tensors — when the function
    fails on the probe (any exception), returns anything but one score per score it is given, gives a
    value that is not finite, differs along a diagonal, or returns a tensor that requires grad (it
    reads a trained tensor: the C backward gives no gradient to it)."""
    d = np.arange(-(tq - 1), tk, dtype=np.int64)[None, :]          # kv − q
    first = np.maximum(-d, 0)                                       # the diagonal's first row
    last = np.minimum(tq - 1, tk - 1 - d)                           # and its last
    h = np.arange(heads, dtype=np.int64)[:, None]
    places = ((0, first), (max(batch - 1, 0), last), (max(batch - 1, 0) // 2, (first + last) // 2))
    table = None
    for b, q_idx in places:
        bias = _probe(score_mod, b, h, q_idx, q_idx + d, like)
        if bias is None or not np.isfinite(bias).all():
            return None
        if table is None:
            table = bias
        # the C table is float32: differences below its rounding are the same bias
        elif not np.allclose(bias, table, rtol=1e-7, atol=1e-7):
            return None
    return table


def _probe(score_mod, b, h, q_idx, kv_idx, like):
    """score_mod on score 0 at the given indices as float64 (h.shape[0], q_idx.shape[1]); None when
    it fails or returns something the plain path would not take (see relative_table)."""
    shape = (h.shape[0], q_idx.shape[1])
    score = np.zeros(shape, np.float64)
    args = (score, np.int64(b), h, q_idx, kv_idx)
    torch_call = like is not None and type(like).__module__.startswith("torch")
    try:
        if torch_call:
            import torch

            args = tuple(torch.as_tensor(a) for a in args)
            value = score_mod(*args)
            if not isinstance(value, torch.Tensor) or value.requires_grad or tuple(value.shape) != shape:
                return None
            value = value.detach().to("cpu", torch.float64).numpy()
        else:
            value = score_mod(*args)
            if tuple(np.shape(value)) != shape:
                return None
            value = np.asarray(value)
            if not (np.issubdtype(value.dtype, np.floating) or np.issubdtype(value.dtype, np.integer)):
                return None
            value = value.astype(np.float64)
    except Exception:   # noqa: BLE001 — whatever it is, the plain path runs the function and reports it
        return None
    return value


def score_spec(call: Call):
    """How the C routes compute the call's score_mod: (0, None, 1.0) without one; (SCORE_SOFT_CAP,
    None, cap) for qkv.masks.soft_cap; (SCORE_RELATIVE, table, 1.0) for a score_mod declared
    relative (qkv.masks.alibi, t5_relative_buckets, or any ScoreMod(…, relative=True)) that passes
    `relative_table`'s check, table float32 (H, Tq + Tk − 1) per query head h; None for other score
    functions (the plain path or the NumPy kernel's walk). The catalogue's tables are kept per
    (function, H, Tq, Tk); a user's function is evaluated on every call (it may read an array
    or a global that changed since: a kept table would be stale)."""
    mod, info = call.score_mod, call.score_info
    if mod is None:
        return 0, None, 1.0
    if info.kind == "soft_cap":
        return SCORE_SOFT_CAP, None, float(info.params[1])
    if not info.relative:
        return None
    heads = call.lead[-1] if call.lead else 1
    batch = call.batch if call.lead else 1
    keep = info.catalogue_relative   # (the catalogue's tables are copies made at construction)
    key = (id(mod), heads, batch, call.tq, call.tk)
    if keep:
        found = _SPECS.get(key)
        if found is not None and found[0] is mod:
            return found[1]
    like = call.q
    if like is not None and type(like).__module__.startswith("torch"):
        if _compiling():   # a trace may not run eager tensor code on the side: probe on NumPy
            like = None
    table = relative_table(mod, heads, call.tq, call.tk, batch, like)
    spec = None if table is None else (SCORE_RELATIVE, np.ascontiguousarray(table, np.float32), 1.0)
    if keep:   # the function kept with its spec, so its id is not reused while cached
        _keep.keep(_SPECS, key, (mod, spec), _SPECS_KEPT, _specs_lock)
    return spec


def _flat_spec(spec, n_heads: int):
    """spec with its (H, L) table tiled to the op's N·H flattened query heads (batch-major)."""
    if spec is None or spec[1] is None:
        return spec
    table = spec[1]
    return spec[0], np.ascontiguousarray(np.tile(table, (n_heads // table.shape[0], 1))), spec[2]


def _scored_function():
    """The passes with a catalogue score function (eager only): both in C, the forward (flash_many)
    and the backward with the function's derivative; spec: `score_spec` with its table tiled to the
    N·H query heads (`_flat_spec`)."""
    global _scored
    if _scored is None:
        import torch

        class FlashAttentionScored(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v, rows, scale, block_q, block_k, spec):
                out, lse = forward_arrays(_contiguous_numpy(q), _contiguous_numpy(k), _contiguous_numpy(v),
                                          _contiguous_numpy(rows), scale, block_q, block_k, score=spec)
                out, lse = torch.from_numpy(out), torch.from_numpy(lse)
                ctx.save_for_backward(q, k, v, out, lse, rows)
                ctx.options = (scale, block_q, block_k, spec)
                return out, lse

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, dout, dlse):
                q, k, v, out, lse, rows = ctx.saved_tensors
                scale, block_q, block_k, spec = ctx.options
                if dout is None:
                    dout = torch.zeros_like(out)
                grads = backward_arrays(_contiguous_numpy(dout), _contiguous_numpy(q), _contiguous_numpy(k),
                                        _contiguous_numpy(v), _contiguous_numpy(out), _contiguous_numpy(lse),
                                        _contiguous_numpy(rows), scale,
                                        None if dlse is None else _contiguous_numpy(dlse), block_q, block_k,
                                        score=spec)
                return tuple(torch.from_numpy(g) for g in grads) + (None,) * 5

        _scored = FlashAttentionScored
    return _scored.apply


def op():
    """The torch custom op `torch.ops.qkv.flash_attention(q, k, v, rows, scale, block_q, block_k) ->
    (out, lse)` (defined on first call; its backward is `qkv::flash_attention_backward`).

    q (Nq, Tq, Dk), k (Nk, Tk, Dk), v (Nk, Tk, Dv) float32 CPU (Nq = Nk·G: query head n reads kv head
    n // G), rows (2, Tq) int64 key ranges (`row_ranges`), scale a float, block sizes ints. out
    (Nq, Tq, Dv), lse (Nq, Tq) (−inf for rows with no key). With register_fake and register_autograd:
    `torch.compile(fullgraph=True)` keeps it as one node, forward and backward.
    qkv.attention itself runs the same two passes through `_eager_function` (a torch.autograd.Function):
    a custom op's first call imports torch._dynamo (2–7 s measured here), which eager calls need not pay."""
    return _register()


def _eager_function():
    """The same forward and backward as `op()`, as a plain torch.autograd.Function (eager calls)."""
    global _function
    if _function is None:
        import torch

        class FlashAttention(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v, rows, scale, block_q, block_k):
                out, lse = _forward_tensors(q, k, v, rows, scale, block_q, block_k)
                ctx.save_for_backward(q, k, v, out, lse, rows)
                ctx.options = (scale, block_q, block_k)
                return out, lse

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, dout, dlse):
                q, k, v, out, lse, rows = ctx.saved_tensors
                dq, dk, dv = _backward_tensors(dout, dlse, q, k, v, out, lse, rows, *ctx.options)
                return dq, dk, dv, None, None, None, None

        _function = FlashAttention
    return _function.apply


def _register():
    """Defines the custom ops qkv::flash_attention (forward: out, lse) and
    qkv::flash_attention_backward, with fake (meta) implementations and the autograd formula."""
    global _op
    if _op is not None:
        return _op
    import torch
    from torch import Tensor

    # Schemas written out: this module's annotations are strings (from __future__ import annotations).
    @torch.library.custom_op("qkv::flash_attention", mutates_args=(), schema=(
        "(Tensor q, Tensor k, Tensor v, Tensor rows, float scale, int block_q, int block_k) -> (Tensor, Tensor)"))
    def flash_attention_op(q: Tensor, k: Tensor, v: Tensor, rows: Tensor, scale: float, block_q: int,
                           block_k: int) -> tuple[Tensor, Tensor]:
        # qkv.attention checks the values before it picks this route; under torch.compile that check
        # cannot branch, so the op makes it (one C pass over each tensor)
        tops = value_tops(q, k, v)
        if not tops_ok(tops):
            raise ValueError("qkv.flash_attention: q, k or v has a non-finite value or a value above 2^60, "
                             "which the C kernel does not take; outside torch.compile qkv.attention sends such "
                             "calls to its plain path")
        if _overflows(tops, q.shape[-1]):   # the eager route's overflow look, made here on the real values
            return _plain_forward(q, k, v, rows, scale)
        return _forward_tensors(q, k, v, rows, scale, block_q, block_k)

    @flash_attention_op.register_fake
    def _(q, k, v, rows, scale, block_q, block_k):
        return q.new_empty(q.shape[:-1] + v.shape[-1:]), q.new_empty(q.shape[:-1])

    @torch.library.custom_op("qkv::flash_attention_backward", mutates_args=(), schema=(
        "(Tensor dout, Tensor? dlse, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, Tensor rows, float scale, "
        "int block_q, int block_k) -> (Tensor, Tensor, Tensor)"))
    def flash_attention_backward_op(dout: Tensor, dlse: Tensor | None, q: Tensor, k: Tensor, v: Tensor, out: Tensor,
                                    lse: Tensor, rows: Tensor, scale: float, block_q: int,
                                    block_k: int) -> tuple[Tensor, Tensor, Tensor]:
        tops = value_tops(q, k)
        if _overflows(tops, q.shape[-1]) or _loses_lse(tops, q.shape[-1], scale):
            # the forward took the plain path (or its lse cannot give the weights back precisely): the
            # gradient of the plain path
            return _plain_backward(dout, dlse, q, k, v, rows, scale)
        return _backward_tensors(dout, dlse, q, k, v, out, lse, rows, scale, block_q, block_k)

    @flash_attention_backward_op.register_fake
    def _(dout, dlse, q, k, v, out, lse, rows, scale, block_q, block_k):
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def setup_context(ctx, inputs, output):
        q, k, v, rows, scale, block_q, block_k = inputs
        out, lse = output
        ctx.save_for_backward(q, k, v, out, lse, rows)
        ctx.options = (scale, block_q, block_k)

    def backward(ctx, dout, dlse):
        q, k, v, out, lse, rows = ctx.saved_tensors
        if dout is None:
            dout = torch.zeros_like(out)
        dq, dk, dv = flash_attention_backward_op(dout, dlse, q, k, v, out, lse, rows, *ctx.options)
        return dq, dk, dv, None, None, None, None

    flash_attention_op.register_autograd(backward, setup_context=setup_context)
    _op = flash_attention_op
    return _op


# --------------------------------------------------------------------------- scores past float32's range
# Under torch.compile the traced route reads no values, so the op's body (which runs eagerly, on the
# real tensors, inside the compiled graph) asks the eager route's overflow look itself and, when
# max|q|·max|k|·Dk could pass float32's range, computes the call as the eager route would: on the
# plain path, which divides q and k by exact powers of two (attention._overflow_shifts). The C kernel
# would give inf scores and NaN weights there.
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT32_EPS = float(np.finfo(np.float32).eps)


def _overflows(tops, dk: int) -> bool:
    """route.tops_may_overflow for the op's float32 work, from value_tops' (max|q|, max|k|, …)."""
    return tops_may_overflow(tops[0], tops[1], int(dk), _FLOAT32_MAX)


def _loses_lse(tops, dk: int, scale: float) -> bool:
    """route.tops_lose_lse for the op's float32 work: scores so large that the C backward's weights,
    recomputed from the stored lse, would lose the gradients (the plain path's backward is taken)."""
    return tops_lose_lse(tops[0], tops[1], int(dk), scale, _FLOAT32_EPS)


def _plain_inputs(q, k, v, rows):
    """The op's layout as the plain path's call: q (Nq, Tq, Dk) → (B, Nk/B, G, Tq, Dk), k and v
    (Nk, Tk, ·) → (B, Nk/B, 1, Tk, ·) (query head n reads kv head n // G: broadcast, no copy), and
    the boolean mask (B, 1, 1, Tq, Tk) of rows' key ranges (rows (2, Tq): B = 1; (B, 2, Tq): per batch)."""
    import torch

    nq, tq, dk = q.shape
    nk, tk, dv = v.shape
    rows3 = rows.reshape((-1,) + tuple(rows.shape[-2:]))                  # (B, 2, Tq)
    batch = rows3.shape[0]
    keys = torch.arange(tk, device=rows.device)
    allowed = (keys >= rows3[:, 0, :, None]) & (keys < rows3[:, 1, :, None])   # (B, Tq, Tk)
    return (q.reshape(batch, nk // batch, nq // nk, tq, dk), k.reshape(batch, nk // batch, 1, tk, dk),
            v.reshape(batch, nk // batch, 1, tk, dv), allowed[:, None, None])


def _plain_forward(q, k, v, rows, scale):
    """(out (Nq, Tq, Dv), lse (Nq, Tq)) of the op's call on qkv's plain path (float32, fresh tensors)."""
    q5, k5, v5, allowed = _plain_inputs(q, k, v, rows)
    out, lse = plain.attend(q5, k5, v5, allowed, scale=float(scale), return_lse=True)
    return out.reshape(q.shape[:-1] + v.shape[-1:]).contiguous().clone(), lse.reshape(q.shape[:-1]).contiguous().clone()


def _plain_backward(dout, dlse, q, k, v, rows, scale):
    """(dq, dk, dv) of _plain_forward by torch autograd through the plain path (see `_vjp`).
    dout (Nq, Tq, Dv) or None, dlse (Nq, Tq) or None."""
    return _vjp(lambda q, k, v: _plain_forward(q, k, v, rows, scale), (q, k, v), (dout, dlse))


def _vjp(forward, inputs, grads):
    """The gradients of forward(*inputs) (a tuple of tensors) with respect to inputs, given each
    output's gradient (None: that output is not used), by torch autograd in a fresh thread (a custom
    op's body runs with autograd off: see in_fresh_thread); zeros for an input no output depends on.
    The ops' backward bodies that differentiate an eager computation share it."""
    import torch

    def gradients():
        leaves = [x.detach().requires_grad_(True) for x in inputs]
        with torch.enable_grad():
            pairs = [(out, grad) for out, grad in zip(forward(*leaves), grads) if grad is not None]
            found = (torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)
                     if pairs else (None,) * len(leaves))
        return tuple((torch.zeros_like(x) if g is None else g).contiguous() for g, x in zip(found, leaves))

    return in_fresh_thread(gradients)


def in_fresh_thread(fn):
    """fn() in a new thread. A custom op's body runs with autograd switched off for its thread
    (torch's dispatcher excludes the autograd keys); a new thread starts with torch's defaults, so
    autograd can differentiate the plain path there. The caller waits: nothing runs concurrently."""
    box = {}

    def run():
        try:
            box["result"] = fn()
        except BaseException as exc:   # noqa: BLE001 — handed back to the caller as it was raised
            box["error"] = exc

    worker = threading.Thread(target=native.carry(run), name="qkv-attention-backward")   # the caller's machine
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


# --------------------------------------------------------------------------- mask arrays under compile
_mask_op = None


def _mask_rows(mask, lead, tq: int, tk: int, causal: bool):
    """The eager route's reading of a boolean mask array (`masks.mask_ranges`) at run time: (2, Tq) or
    (B, 2, Tq) int64 key ranges (causal folded in), or None when some row is not one run of keys or the
    heads differ."""
    found = _masks().mask_ranges(mask, tuple(lead), tq, tk)
    if found is None:
        return None
    rows = _ranges(tq, tk, causal, found)            # (B', 2, Tq)
    return rows[0] if rows.shape[0] == 1 else rows


def _masked_plain_forward(q, k, v, mask, lead, causal, scale):
    """(out (N·H, Tq, Dv), lse (N·H, Tq)) of the masked op's call on qkv's plain path (fresh tensors):
    q (N·H, Tq, Dk), k and v (N·G, Tk, ·) back in the call's layout lead + (…)."""
    lead = tuple(lead)
    kv_lead = lead[:-1] + (k.shape[0] // max(1, math.prod(lead[:-1])),)
    out, lse = plain.attend(q.reshape(lead + q.shape[1:]), k.reshape(kv_lead + k.shape[1:]),
                                   v.reshape(kv_lead + v.shape[1:]), mask, causal=causal, scale=float(scale),
                                   return_lse=True)
    return (out.reshape(q.shape[:-1] + v.shape[-1:]).contiguous().clone(),
            lse.reshape(q.shape[:-1]).contiguous().clone())


def mask_op():
    """The torch custom op `torch.ops.qkv.flash_attention_mask(q, k, v, mask, lead, causal, scale, block_q,
    block_k) -> (out, lse)` (defined on first call, eagerly), which traced calls with a boolean mask array
    take: its body reads the mask as the eager route does (`masks.mask_ranges`: each row one run of keys,
    the heads alike) and runs the C forward on those key ranges (one pass over every batch); a mask of
    another kind, or scores past float32's range, on the plain path. Its backward op does the same.

    q (N·H, Tq, Dk), k and v (N·G, Tk, ·) float32 (`run`'s flat layout), mask bool broadcastable to
    lead + (Tq, Tk), lead the call's (…, H) as ints, causal bottom-right; out (N·H, Tq, Dv), lse (N·H, Tq)."""
    global _mask_op
    if _mask_op is not None:
        return _mask_op
    import torch
    from torch import Tensor

    def ranges_or_none(q, k, v, mask, lead, causal):
        tops = value_tops(q, k, v)
        if not tops_ok(tops) or _overflows(tops, q.shape[-1]):   # the plain path handles both
            return None
        return _mask_rows(mask, lead, q.shape[1], k.shape[1], causal)

    @torch.library.custom_op("qkv::flash_attention_mask", mutates_args=(), schema=(
        "(Tensor q, Tensor k, Tensor v, Tensor mask, int[] lead, bool causal, float scale, int block_q, "
        "int block_k) -> (Tensor, Tensor)"))
    def masked(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, lead: list[int], causal: bool, scale: float,
               block_q: int, block_k: int) -> tuple[Tensor, Tensor]:
        rows = ranges_or_none(q, k, v, mask, lead, causal)
        if rows is None:
            return _masked_plain_forward(q, k, v, mask, lead, causal, scale)
        return _forward_tensors(q, k, v, torch.from_numpy(rows), scale, block_q, block_k)

    @masked.register_fake
    def _(q, k, v, mask, lead, causal, scale, block_q, block_k):
        return q.new_empty(q.shape[:-1] + v.shape[-1:]), q.new_empty(q.shape[:-1])

    @torch.library.custom_op("qkv::flash_attention_mask_backward", mutates_args=(), schema=(
        "(Tensor dout, Tensor? dlse, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, Tensor mask, int[] lead, "
        "bool causal, float scale, int block_q, int block_k) -> (Tensor, Tensor, Tensor)"))
    def masked_backward(dout: Tensor, dlse: Tensor | None, q: Tensor, k: Tensor, v: Tensor, out: Tensor,
                        lse: Tensor, mask: Tensor, lead: list[int], causal: bool, scale: float, block_q: int,
                        block_k: int) -> tuple[Tensor, Tensor, Tensor]:
        rows = ranges_or_none(q, k, v, mask, lead, causal)
        if rows is not None and not _loses_lse(value_tops(q, k), q.shape[-1], scale):
            return _backward_tensors(dout, dlse, q, k, v, out, lse, torch.from_numpy(rows), scale, block_q, block_k)

        return _vjp(lambda q, k, v: _masked_plain_forward(q, k, v, mask, lead, causal, scale), (q, k, v),
                    (dout, dlse))

    @masked_backward.register_fake
    def _(dout, dlse, q, k, v, out, lse, mask, lead, causal, scale, block_q, block_k):
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def setup_context(ctx, inputs, output):
        q, k, v, mask, lead, causal, scale, block_q, block_k = inputs
        ctx.save_for_backward(q, k, v, *output, mask)
        ctx.options = (lead, causal, scale, block_q, block_k)

    def backward(ctx, dout, dlse):
        q, k, v, out, lse, mask = ctx.saved_tensors
        if dout is None:
            dout = torch.zeros_like(out)
        return (*masked_backward(dout, dlse, q, k, v, out, lse, mask, *ctx.options), None, None, None, None, None, None)

    masked.register_autograd(backward, setup_context=setup_context)
    _mask_op = masked
    return _mask_op


# --------------------------------------------------------------------------- half-precision casts
def cast(x, dtype):
    """x as `dtype`, as x.to(dtype) gives it (the same values, the same rounding; autograd through it): for a
    contiguous CPU tensor between float32 and bfloat16/float16, eager, by the C extension's one-thread cast
    (`_fused.convert16`, in `_cast_function` when autograd records x); torch's .to() otherwise (another
    pair of dtypes or device, a strided tensor, torch.compile tracing, an extension without convert16 or a
    CPU without F16C for float16).

    Why not .to(): torch casts with an OpenMP team from 32,768 values on, and on 2 cores other processes
    keep busy the team's barrier waits for a descheduled thread: profiled (torch.profiler, load ~18, AMD
    EPYC Zen 3), aten::copy_ took 98 % of the C route's time on bfloat16 at T = 128 (B1 H8 D64), 6-27 ms of
    CPU per cast where convert16 takes ~10 µs; the route casts q, k, v in and out back."""
    if x.dtype == dtype:
        return x
    if not _fast_cast_takes(x, dtype):
        return x.to(dtype)
    import torch

    if x.requires_grad and torch.is_grad_enabled():
        return _cast_function()(x, dtype)
    return _convert(x, dtype)


def _fast_cast_takes(x, dtype) -> bool:
    import torch

    if _compiling():   # (first: a trace may not read the ContextVar behind native.extension())
        return False
    fused = native.extension()
    if fused is None or not hasattr(fused, "convert16") or x.device.type != "cpu":
        return False
    half = dtype if x.dtype == torch.float32 else x.dtype if dtype == torch.float32 else None
    if half not in (torch.bfloat16, torch.float16) or not x.is_contiguous():
        return False
    return half == torch.bfloat16 or fused.vector_width() >= 8   # float16 needs F16C (the AVX2 loops)


def _convert(x, dtype):
    """`cast` without autograd, by convert16 (`_fast_cast_takes` said yes)."""
    import torch

    out = torch.empty(tuple(x.shape), dtype=dtype)
    fused = native.extension()
    if dtype == torch.float32:
        fused.convert16(x.detach().view(torch.int16).numpy(), out.numpy(), x.dtype == torch.bfloat16)
    else:
        fused.convert16(x.detach().numpy(), out.view(torch.int16).numpy(), dtype == torch.bfloat16)
    return out


_cast_class = None


def _cast_function():
    """`cast` as a torch.autograd.Function: the gradient is cast back to the input's dtype the same way (a
    strided gradient by .to())."""
    global _cast_class
    if _cast_class is None:
        import torch

        class HalfCast(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, dtype):
                ctx.source = x.dtype
                return _convert(x, dtype)

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, grad):
                return cast(grad, ctx.source), None

        _cast_class = HalfCast
    return _cast_class.apply


# --------------------------------------------------------------------------- qkv.attention's route
def run(call: Call, *, return_lse: bool = False, block_q: int = BLOCK_Q, block_k: int = BLOCK_K, rows=None,
        traced: bool = False):
    """Execute the TORCH_FLASH route (chosen by qkv.kernels.route.choose_route) on a checked call.

    call.q (…, H, Tq, Dk), call.k and call.v (…, G, Tk, ·) as `check_call` accepted them (GQA,
    broadcasting, 2-D inputs). Returns out (…, H, Tq, Dv) in q's dtype, or (out, lse (…, H, Tq))
    with return_lse (−inf for rows that see no key). Broadcast batch dimensions are expanded under
    autograd (their gradients summed by torch); float16/bfloat16 are cast to float32 and back.
    rows: a (2, Tq) int64 tensor of key ranges (default `row_ranges(call)`). traced: under
    torch.compile, run the custom op (registered beforehand) instead of the eager Function.
    """
    import torch

    if rows is None and not (return_lse or traced) and block_q == BLOCK_Q and block_k == BLOCK_K:
        out = _short_forward(call)
        if out is not None:
            return out
    q, k, v = call.q, call.k, call.v
    rows_t = None if call.mask is not None else \
        torch.from_numpy(row_ranges(call, per_batch=not traced)) if rows is None else rows
    lead = call.lead or (1,)
    heads = lead[-1]
    kv_heads = int(k.shape[-3]) if k.ndim >= 3 else 1

    def flat(x, heads_here, t, d):   # (…, heads, T, D) broadcast to the call's batch → (N·heads, T, D) float32
        x = x.expand(tuple(lead[:-1]) + (heads_here, t, d))
        x = cast(x, torch.float32)   # (not .to(): see cast)
        return x.reshape(-1, t, d).contiguous()   # no copy for a contiguous float32 tensor

    q3 = flat(q, heads, call.tq, call.dk)
    k3 = flat(k, kv_heads, call.tk, call.dk)
    v3 = flat(v, kv_heads, call.tk, call.dv)
    if call.mask is not None:   # traced only (eager calls have their mask read as ranges before): see mask_op
        mask = call.mask.reshape((1,) * (len(lead) + 2 - call.mask.ndim) + tuple(call.mask.shape))
        out, lse = torch.ops.qkv.flash_attention_mask(q3, k3, v3, mask, [int(n) for n in lead], bool(call.causal),
                                                      float(call.scale), int(block_q), int(block_k))
    elif traced:
        out, lse = torch.ops.qkv.flash_attention(q3, k3, v3, rows_t, float(call.scale), int(block_q), int(block_k))
    elif call.score_mod is None:
        out, lse = _eager_function()(q3, k3, v3, rows_t, float(call.scale), int(block_q), int(block_k))
    else:   # a catalogue score function (route.torch_flash_why_not checked score_spec)
        out, lse = _scored_function()(q3, k3, v3, rows_t, float(call.scale), int(block_q), int(block_k),
                                      _flat_spec(score_spec(call), q3.shape[0]))
    out = cast(out.reshape(call.out_shape), call.dtype)
    if return_lse:
        return out, cast(lse.reshape(call.out_shape[:-1]), call.dtype)
    return out


# The tensor kinds `_fused.flash_at` reads (0 float32, 1 bfloat16, 2 float16); filled on first use.
_AT_KINDS: dict = {}


def _short_forward(call: Call):
    """The call's output by one `_fused.flash_at` call, or None where it does not apply: a call no gradient
    is asked of, unmasked or causal (no mask array, mask or score function), q, k and v CPU
    float32/bfloat16/float16 tensors of the call's own leading shapes (no broadcast batch), and little enough
    work that the pool would run it on one thread anyway (`_PARALLEL_MIN_SCORES`). flash_at reads the
    tensors at their addresses and runs the same blocks and steps as the route's general path
    (forward_arrays over the plan of `row_ranges`: the same bits), without what that path builds around
    them — NumPy views of each tensor, the casts, a task table, the pool and a torch.autograd.Function —
    which cost a B1 H8 T64 D64 float32 call ~60 µs beside ~130 µs of arithmetic on one AMD EPYC Zen 4
    core (load ~10), more than SDPA's whole call at T = 16 (~19 µs). The conditions on the call's kind are
    `short_plan`'s; `run_short` runs it (copying a tensor that is not contiguous); execute.short_torch keeps
    the plan by the call's kind."""
    if _compiling():   # (a trace may not read the ContextVar behind native.extension(); the op runs)
        return None
    plan = short_plan(call)
    if plan is None or call.differentiated:
        return None
    return run_short(plan, call.q, call.k, call.v)


def short_plan(call: Call) -> tuple | None:
    """What `run_short` needs of a call of this kind, read without a value or a tensor's layout: (flash_at,
    its arguments after the four addresses, the output's shape and dtype, whether that is q's shape), or None
    when flash_at does not take such a call (see `_short_forward`)."""
    if call.mask is not None or call.mask_mod is not None or call.score_mod is not None or not call.lead:
        return None
    fused = native.extension()
    flash_at = getattr(fused, "flash_at", None)   # (an extension built before it: the general path)
    if flash_at is None:
        return None
    kinds = _AT_KINDS or _at_kinds()
    kind = kinds.get(call.dtype)
    lead = call.lead
    heads = math.prod(lead)
    kv_lead = lead[:-1] + (call.kv_heads,) if call.groups > 1 else lead
    if kind is None or call.tq * call.tk * heads >= _PARALLEL_MIN_SCORES or call.q_lead != lead \
            or call.k_lead != kv_lead or call.v_lead != kv_lead or not blas.sgemm_ready():
        return None
    if kind == 2 and fused.vector_width() < 8:   # float16 needs F16C
        return None
    if call.device_type != "cpu":   # (one device: check_call)
        return None
    return (flash_at, (heads, heads // call.groups, call.tq, call.tk, call.dk, call.dv, float(call.scale),
                       blocked._HEADROOM, bool(call.causal), kind), call.out_shape, call.dtype,
            call.out_shape == call.q_lead + (call.tq, call.dk))


def run_short(plan: tuple, q, k, v, tops: bool = False):
    """The output of a call `short_plan` gave `plan` for, by one flash_at call (no gradient is asked of it:
    the caller checked). A tensor that is not contiguous (heads split off by a transpose, as a model's
    projections give them) is copied first, as the general path's `flat` copies it: the same values in the
    same layout, so the same bits. tops: (out, max |q|, |k|, |v| as `magnitude.tops_of` reads them), read
    by the same C call after the arithmetic (the caller's value look: an output it refuses is dropped)."""
    import torch

    if not q.is_contiguous():
        q = q.contiguous()
    if not k.is_contiguous():
        k = k.contiguous()
    if not v.is_contiguous():
        v = v.contiguous()
    flash_at, arguments, shape, dtype, like_q = plan
    # (out of q's shape, as in self-attention with Dv = Dk: empty_like, ~0.6 µs less than empty's ~1.5)
    out = torch.empty_like(q) if like_q else torch.empty(shape, dtype=dtype)
    if tops:
        return out, tops_of(flash_at(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), *arguments, tops=True),
                            dtype)
    flash_at(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), *arguments)
    return out


def _at_kinds() -> dict:
    import torch

    _AT_KINDS.update({torch.float32: 0, torch.bfloat16: 1, torch.float16: 2})
    return _AT_KINDS


def values_ok(q, k, v) -> bool:
    """Every value of q, k, v finite and |v| <= 2^60 (the forward's e^16 headroom must not overflow
    P·v): one C pass over each contiguous float32 tensor (no temporaries, no torch threads), torch's
    isfinite otherwise."""
    return tops_ok(value_tops(q, k, v))


def tops_ok(tops) -> bool:
    """values_ok from value_tops' (max|q|, max|k|, max|v|)."""
    return all(math.isfinite(t) for t in tops) and tops[2] <= _MAX_VALUE


def block_backward(q, k, v, d_out, lse, delta, *, causal: bool, scale: float):
    """One block's gradients with the whole row's lse and δ (FlashAttention's backward as ring
    attention needs it), through the C backward. float32 CPU torch tensors, no autograd:
    q, d_out (B, H, t, ·); k, v (B, G, K, ·) (H % G == 0); lse, delta (B, H, t) (lse −inf: a row
    with no key anywhere). causal: row i sees key j <= i + (K − t) (bottom-right). Returns this
    block's dq (B, H, t, Dk), dk (B, G, K, Dk), dv (B, G, K, Dv) as float32 tensors."""
    import torch

    b, h, t, dk = q.shape
    g, keys, dv = k.shape[1], k.shape[2], v.shape[-1]
    lo = np.zeros(t, np.int64)
    hi = np.full(t, keys, np.int64)
    if causal:
        hi = np.clip(np.arange(t, dtype=np.int64) + (keys - t) + 1, 0, keys)
    rows = np.ascontiguousarray(np.stack([lo, np.maximum(hi, lo)]))

    def flat(x, n, d):
        return cast(x.detach(), torch.float32).reshape(b * n, -1, d).contiguous().numpy()

    grads = backward_arrays(flat(d_out, h, dv), flat(q, h, dk), flat(k, g, dk), flat(v, g, dv), None,
                            cast(lse.detach(), torch.float32).reshape(b * h, t).contiguous().numpy(), rows, scale,
                            delta=cast(delta.detach(), torch.float32).reshape(b * h, t).contiguous().numpy())
    dq, dk_, dv_ = (torch.from_numpy(x) for x in grads)
    return dq.reshape(b, h, t, dk), dk_.reshape(b, g, keys, dk), dv_.reshape(b, g, keys, dv)


def _masks():
    """qkv.masks, imported on first use (a bare `import qkv` does not load it: tests/test_cli.py)."""
    from .. import masks

    return masks
