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

Which walk a call takes is decided once, by `qkv.kernels.route.choose_route` (a `Route`: its name,
block sizes, threads, tasks); `run(call, route, want)` executes it. NumPy's BLAS (the sgemm handed
to C, held to one thread) lives in `blas.py`, the thread pool and fork gate in `pool.py`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from dataclasses import dataclass, field

import numpy as np


from .._keep import keep
from . import blas, native, pool
from .call import PARTIAL, Call, as_bool_mask, as_scores, call_mask, call_score
from .merge import Partial, finalize, finalize_into, lse_of, merge_partials
from .plan import EMPTY, FLASH_MANY, FLASH_ROWS, NUMPY_WALK, Route, batch_head


__all__ = ["run"]



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
    score_table: np.ndarray | None = None   # a relative bias: (heads of lead, Tq + Tk − 1) float32 (Route.score)


def _prepare(call: Call, route: Route) -> _Problem:
    """NumPy broadcast views of a checked call, in the dtype the kernel computes in. On the C walks
    every (T, D) slice has rows BLAS can read as they are (copied where not: a transposed array)."""
    work = np.dtype(call.work)
    q, k, v = (np.asarray(x).astype(work, copy=False) for x in (call.q, call.k, call.v))
    if route.name in (FLASH_MANY, FLASH_ROWS):
        q, k, v = (x if _rows_fit(x) else np.ascontiguousarray(x) for x in (q, k, v))
    mask, bias = call.mask, call.bias
    tq, tk, dk, dv = call.tq, call.tk, call.dk, call.dv
    grouped = call.groups > 1
    if grouped:   # q (…, H, Tq, Dk) → (…, G, H/G, Tq, Dk); k, v (…, G, Tk, ·) → (…, G, 1, Tk, ·)
        q = _split_axis(q, q.ndim - 3, call.kv_heads, call.groups)
        k = k[..., None, :, :]
        v = v[..., None, :, :] if v.ndim >= 3 else v
    lead = q.shape[:-2] if q.shape[:-2] == k.shape[:-2] == v.shape[:-2] else \
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])

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
    top = route.v_top                                 # max |v|, NaN or inf if any is (choose_route)
    if not np.isfinite(top):                          # a NaN or ±inf somewhere
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
        call=call, q=_broadcast(q, lead + (tq, dk)), k=_broadcast(k, lead + (tk, dk)),
        v=_broadcast(v, lead + (tk, dv)),
        v_raw=None if v_raw is None else _broadcast(v_raw, lead + (tk, dv)), bad_keys=bad_keys,
        v_exponent=exponent, mask=scores_like(mask), bias=scores_like(bias), lead=lead,
        out_lead=call.lead, scale=call.scale, causal=call.causal, own=(q, k, v),
    )


def _broadcast(x: np.ndarray, shape: tuple) -> np.ndarray:
    """x broadcast to shape: a read-only view, as np.broadcast_to gives (x itself when it has that
    shape already and is read-only; a read-only view of it when writable — ~1 µs against ~5)."""
    if x.shape != shape:
        return np.broadcast_to(x, shape)
    if x.flags.writeable:
        x = x.view()
        x.flags.writeable = False
    return x


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
# Which walk a call takes (flash_many, flash_rows, the Python walk with _fused.softmax_rows — the same
# reference logic per row in one pass, ~0.3 ns per score against ~1.6 ns for NumPy's passes — or
# NumPy only) is its Route (qkv.kernels.route.choose_route); this module executes it.
# Masks handed to flash_rows at once, at most (bytes, beyond one block): bounds a task's memory.
_FLASH_MASK_BYTES = 1 << 22

# The C boundary's tables: C-contiguous int64 rows with these columns (the same as _fused.c's
# struct block_row and struct task_row).
# A key block: keys j0:j1; flags: BLOCK_LIMIT (row r keeps only keys j < j0 + limit + r: the causal
# diagonal, a band's upper edge), BLOCK_START (only j >= j0 + start + r: a band's lower edge),
# BLOCK_RANGES (each row's own key range, MaskInfo.key_ranges, applied by flash_many).
BLOCK_COLUMNS = ("j0", "j1", "flags", "limit", "start")
BLOCK_LIMIT, BLOCK_START, BLOCK_RANGES = 1, 2, 4
# A flash_many task: rows i0:i1 of q head q_head against k, v head kv_head, into out head out_head,
# over the key blocks b0:b1 of the blocks table.
TASK_COLUMNS = ("q_head", "kv_head", "out_head", "i0", "i1", "b0", "b1")
_T = {name: i for i, name in enumerate(TASK_COLUMNS)}


def _block_row(j0, j1, limit, start, ranged=False) -> tuple:
    """One row of a blocks table (BLOCK_COLUMNS)."""
    flags = (BLOCK_LIMIT if limit is not None else 0) | (BLOCK_START if start is not None else 0) | \
        (BLOCK_RANGES if ranged else 0)
    return (j0, j1, flags, limit or 0, start or 0)


def run(call: Call, route: Route, want: str = "out"):
    """Execute a kernel route (or EMPTY) of a checked NumPy call: out, (out, lse) or a Partial."""
    out_shape = call.out_shape
    if route.name == EMPTY:
        out = np.zeros(out_shape, call.dtype)
        rows = np.full(out_shape[:-1], -np.inf, call.dtype)
        if want == "partial":
            return Partial(out, rows, np.zeros(out_shape[:-1], call.dtype))
        return (out, rows) if want == "lse" else out
    tq, dv = call.tq, call.dv
    prob = _prepare(call, route)
    if route.score is not None and route.score[1] is not None:
        heads = list(np.ndindex(*prob.lead))
        # a relative bias (route.score: its table per query head h): one row per (batch, head) of the loop
        hs = np.array([int(batch_head(call, head)[1]) for head in heads], np.int64)
        prob = dataclasses.replace(prob, score_table=np.ascontiguousarray(route.score[1][hs]))
    threads, big, ranges = route.threads, route.big, route.ranges
    keep_partial = want != "out" or ranges > 1
    if route.name == FLASH_MANY:
        ctx = _Context(prob, route, [], keep_partial)
        out, lse = _flash_all(ctx, list(route.tasks), threads, big, want)
        out = _cast(_unscale(out, prob.v_exponent).reshape(out_shape), call.dtype)
        return (out, _cast(lse.reshape(out_shape[:-1]), call.dtype)) if want == "lse" else out
    parts = [_State.empty(prob.lead + (tq, dv), prob.q.dtype) for _ in range(ranges)]
    ctx = _Context(prob, route, parts, keep_partial)
    jobs = []
    for h, i0, i1, blocks, key_end in route.tasks:
        for r in range(ranges):   # range r: blocks [r·n/ranges, (r+1)·n/ranges) of this task's list
            chosen = blocks[len(blocks) * r // ranges: len(blocks) * (r + 1) // ranges]
            if len(chosen) or r == 0:
                jobs.append((h, i0, i1, chosen, key_end, r))
    jobs.sort(key=lambda job: -(job[2] - job[1]) * len(job[3]))   # heaviest first (stable)
    # BLAS is held to one thread even without a pool: its own threads on these block-sized
    # products cost more in synchronisation than they gain (and spin badly on a busy
    # machine). Small problems skip the pool and the limit (~70 µs to set and restore).
    with pool.fork_gate(), (blas.single_thread() if big else contextlib.nullcontext()):
        pool.run_all(ctx.run, jobs, threads)
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


# flash_many returns to Python after this many seconds (and is called again): Ctrl-C stays prompt.
_FLASH_BUDGET_S = 0.05
# flash_many's key-block tables by (Tq, Tk, block_q, block_k, causal, band, query block starts), and its task tables by
# that and the heads' shapes: the same for every call of that shape (a model's layers), so built
# once (~0.1 ms each at T = 512). Read-only; 64 kept, the oldest dropped first.
_TABLES: dict = {}
_TABLES_KEPT = 64


def _flash_all(ctx: "_Context", first_head: list, threads: int, big: bool, want: str):
    """Every (head, query block) task in C: one flash_many call per thread, each taking the next task
    from a shared counter (heaviest first), so no Python runs per task. first_head: the first head's
    (head, i0, i1, key blocks, key_end) tasks; every head has the same key blocks (see route.choose_route).
    Returns out (*L, Tq, Dv) and lse (*L, Tq) (None unless want == "lse"), float32."""
    prob = ctx.prob
    call = prob.call
    tq, tk, dk, dv = call.tq, call.tk, call.dk, call.dv
    info = call.mask_info
    band = ctx.route.band   # the mask's band, declared or found from its key ranges (Route.band)
    key_rows = info.key_ranges if info is not None and band is None else None
    # Key ranges from data (documents' ids): a table per call; otherwise one per shape, kept.
    # The query blocks are part of the key: the plan cuts the lightest one into pieces with threads.
    key = None if key_rows is not None else (tq, tk, ctx.bq, ctx.bk, prob.causal, band,
                                             tuple(task[1] for task in first_head))
    cached = None if key is None else _TABLES.get(key)
    if cached is None:
        rows, table = [], []
        for head, i0, i1, blocks, key_end in first_head:
            b0 = len(table)
            for j0, j1, blocked, limit, start, ranged in ctx.plan(head, i0, i1, blocks, key_end, ranges=True,
                                                                  key_rows=key_rows is not None):
                assert blocked is None, "partial blocks of a band or key ranges come with no mask array"
                table.append(_block_row(j0, j1, limit, start, ranged))
            rows.append((i0, i1, b0, len(table)))
        cached = (np.array(table, np.int64).reshape(-1, len(BLOCK_COLUMNS)), np.array(rows, np.int64).reshape(-1, 4))
        for array in cached:
            array.flags.writeable = False
        if key is not None:
            keep(_TABLES, key, cached, _TABLES_KEPT)
    blocks, query_blocks = cached
    lead = prob.lead
    q_own, k_own, v_own = prob.own
    task_key = None if key is None else key + (lead, q_own.shape[:-2], k_own.shape[:-2])
    tasks = None if task_key is None else _TABLES.get(task_key)
    if tasks is None:
        tasks = _task_table(query_blocks, lead, q_own.shape[:-2], k_own.shape[:-2])
        if task_key is not None:
            keep(_TABLES, task_key, tasks, _TABLES_KEPT)
    q3, k3, v3 = _heads(q_own, tq, dk), _heads(k_own, tk, dk), _heads(v_own, tk, dv)
    out = np.empty(lead + (tq, dv), np.float32)
    lse = np.empty(lead + (tq,), np.float32) if want == "lse" else None
    out3, lse2 = out.reshape(-1, tq, dv), None if lse is None else lse.reshape(-1, tq)
    counter = np.zeros(1, np.int64)
    stop = []

    fused = native.extension()   # read here, in the caller's context: work() runs on the pool's threads

    def work():
        # Back in Python every _FLASH_BUDGET_S: the main thread handles signals (Ctrl-C) there, and
        # a failure in one thread stops the others after their current task.
        buf = ctx.scratch()
        try:
            while not stop and fused.flash_many(q3, k3, v3, out3, lse2, tasks, blocks, counter, buf.scores,
                                                 buf.vectors, _HEADROOM, ctx.scale, _FLASH_BUDGET_S, key_rows,
                                                 *ctx.score_args(), tile=ctx.route.tile, width=ctx.route.width):
                pass
        except BaseException:
            stop.append(True)
            raise
        finally:
            _give_scratch(buf)

    with pool.fork_gate(), (blas.single_thread() if big else contextlib.nullcontext()):
        pool.run_all(work, [()] * max(threads, 1), threads)
    return out, lse


def _task_table(query_blocks: np.ndarray, lead: tuple, q_lead: tuple, k_lead: tuple) -> np.ndarray:
    """flash_many's tasks, (heads · query blocks, 7) int64, heaviest first, read-only: for each
    (batch, head) of the loop's lead and each query block (i0, i1, b0, b1), the index of its q head
    and k/v head in their own flattened heads (broadcasting and GQA), and of its output head."""
    def flat_index(own_lead):   # for each (batch, head) of the loop, its index in own's flattened heads
        return np.broadcast_to(np.arange(int(np.prod(own_lead))).reshape(own_lead), lead).ravel()

    n = int(np.prod(lead))
    tasks = np.empty((n, len(query_blocks), len(TASK_COLUMNS)), np.int64)
    tasks[:, :, _T["q_head"]] = flat_index(q_lead)[:, None]
    tasks[:, :, _T["kv_head"]] = flat_index(k_lead)[:, None]
    tasks[:, :, _T["out_head"]] = np.arange(n)[:, None]
    tasks[:, :, _T["i0"]:] = query_blocks[None]          # i0, i1, b0, b1
    tasks = tasks.reshape(-1, len(TASK_COLUMNS))
    weight = (tasks[:, _T["i1"]] - tasks[:, _T["i0"]]) * (tasks[:, _T["b1"]] - tasks[:, _T["b0"]])
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

    def __init__(self, prob, route: Route, parts, partial):
        self.prob, self.parts, self.route = prob, parts, route
        self.bq, self.bk, self.shift, self.partial = route.block_q, route.block_k, prob.call.tk - prob.call.tq, partial
        self.scale = prob.q.dtype.type(prob.scale)
        # The route says which walk: flash_rows (C, both products in NumPy's BLAS), the Python walk
        # with the C softmax step (softmax_rows), or NumPy only.
        fused = native.extension() if route.name != NUMPY_WALK else None
        self.fused = fused.softmax_rows if fused is not None else None
        self.flash = fused.flash_rows if fused is not None and route.name in (FLASH_MANY, FLASH_ROWS) else None
        self.causal_in_c = route.causal_in_c
        self._causal_bias = None   # the 0/−inf band of the Python walks, built when first used (causal_bias)
        self.kinds = route.kinds   # head → (query blocks, key blocks) kinds of the mask function, if it has them
        self.info = prob.call.mask_info
        self.relative = self.info is not None and self.info.relative
        self.relative_blocks = {}   # (kv − q offset, rows, cols) → bool "not allowed" block

    def score_args(self):
        """flash_many's score_kind, table, cap for the route's score function (none: kind 0)."""
        score = self.route.score
        return (0, None, 1.0) if score is None else (int(score[0]), self.prob.score_table, float(score[2]))

    @property
    def causal_bias(self):
        """The additive causal band (_causal_band) of the Python walks without causal_in_c. Built on
        first use: the C walks never read it, and building it took 0.2–0.5 ms of every causal call
        (~1 MiB at block_q = 256). Threads may race to build it: the same array either way."""
        if self._causal_bias is None:
            self._causal_bias = _causal_band(self.bq, self.bk, self.prob.q.dtype)
        return self._causal_bias

    def relative_block(self, offset, rows, cols, b, h):
        """The "not allowed" block of a mask that depends on kv − q only, for a block whose first key
        lies `offset` after its first query: computed once per offset and shape (a sliding window
        has about block_k/block_q + 2 of them), shared by the threads (read-only)."""
        key = (offset, rows, cols)
        block = self.relative_blocks.get(key)
        if block is None:
            q_idx = np.arange(rows, dtype=np.int64)[:, None]
            kv_idx = np.arange(offset, offset + cols, dtype=np.int64)
            allowed = as_bool_mask(call_mask(self.prob.call.mask_mod, b, h, q_idx, kv_idx), np)
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
        per-row key ranges (MaskInfo.key_ranges: documents, prefix-LM, chunked) gives its partial blocks
        with no array and the last field True (flash_many applies the ranges)."""
        prob, bk, shift = self.prob, self.bk, self.shift
        call = prob.call
        rows = i1 - i0
        mask = prob.mask[head] if prob.mask is not None else None   # (Tq, Tk) view, no copy
        kinds = self.kinds_row(head, i0)                            # (key blocks,) or None
        info = self.info
        band = self.route.band if ranges and kinds is not None and mask is None else None
        by_rows = key_rows and band is None and kinds is not None and mask is None and info.key_ranges is not None
        if call.mask_mod is not None:
            b, h = batch_head(call, head)
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
                    rows_ranged = True   # each row's key range (MaskInfo.key_ranges), applied in C
                elif kinds is not None and self.relative and allowed is None:
                    # The mask depends on kv − q only (windows, causal): one block per offset, kept.
                    blocked = self.relative_block(j0 - i0, rows, cols, b, h)
                else:
                    kv_idx = np.arange(j0, j1, dtype=np.int64)
                    modded = np.broadcast_to(as_bool_mask(call_mask(call.mask_mod, b, h, q_idx, kv_idx), np), (rows, cols))
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
        if self.flash is not None:   # (_prepare made every row readable by BLAS)
            # Steps 1–8 in C for every key block (_fused.flash_rows): q·scale once, the two
            # products in NumPy's BLAS, the softmax step of softmax_rows, acc += P·V in place, and
            # out = acc / l at the end; masks handed over a few blocks at a time (at most
            # _FLASH_MASK_BYTES of them).
            chunk, masks, held = [], [], 0
            for j0, j1, blocked, limit, start, _ in self.plan(head, i0, i1, blocks, key_end, ranges=True):
                chunk.append(_block_row(j0, j1, limit, start))
                masks.append(blocked)
                held += 0 if blocked is None else blocked.size
                if held > _FLASH_MASK_BYTES:
                    self._flash(queries, keys, values, acc, ref, l, alpha, row_max, buf, chunk, masks, False, head, i0)
                    chunk, masks, held = [], [], 0
            self._flash(queries, keys, values, acc, ref, l, alpha, row_max, buf, chunk, masks, not self.partial, head,
                        i0)
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

    def _flash(self, queries, keys, values, acc, ref, l, alpha, row_max, buf, chunk, masks, finalize, head, i0):
        blocks = np.array(chunk, dtype=np.int64).reshape(-1, len(BLOCK_COLUMNS))
        kind, table, cap = self.score_args()
        if table is not None:   # this head's row; row r of the block, key j: table[j − r + offset]
            table = table[int(np.ravel_multi_index(head, self.prob.lead)) if head else 0]
        self.flash(queries, keys, values, acc, ref, l, alpha, row_max if self.partial else None, buf.scores,
                   blocks, None if all(m is None for m in masks) else masks, _HEADROOM, scale=self.scale,
                   finalize=finalize, score_kind=kind, table=table, cap=cap, offset=self.prob.call.tq - 1 - i0,
                   tile=self.route.tile, width=self.route.width)

    def walk(self, plan, head, i0, i1, q_scaled, keys, values, acc, ref, block_max, alpha, l, block_sum, row_max,
             buf):
        """Steps 1–7 in Python, block by block (float64; bias, score_mod or non-finite values; no BLAS
        address for the C loop)."""
        prob, call = self.prob, self.prob.call
        rows = i1 - i0
        bias = prob.bias[head] if prob.bias is not None else None   # (Tq, Tk) view, no copy
        if call.score_mod is not None:
            b, h = batch_head(call, head)
            q_idx = np.arange(i0, i1, dtype=np.int64)[:, None]
        block_out = buf.block_out[:rows]                            # (rows, Dv)
        moved, fresh = (row[:rows] for row in buf.flags)
        shifted = False   # whether any row's reference has moved from 0
        for j0, j1, blocked, limit, _, _ in plan:   # no start: ranges=False
            cols = j1 - j0
            scores = buf.scores[:rows, :cols]                       # (rows, cols) scratch
            # Step 1. S = (Q_i·scale)·K_jᵀ, BLAS. A NaN or inf in q or k makes some products NaN (0·inf,
            # inf − inf): a masked key's are replaced by −inf in step 2 (a right result, no warning), an
            # allowed key's reach the output as NaN, as from the input — as on the plain path. (One BLAS
            # thread, or NumPy's own loop for long double, raises the flag in this thread; OpenBLAS's
            # worker threads did not, so the warning showed with OPENBLAS_NUM_THREADS=1 only.)
            with np.errstate(invalid="ignore"):
                np.matmul(q_scaled, keys[j0:j1].T, out=scores)
            # Step 2. S += bias; S = score_mod(S); S = −inf where the key is not allowed (mask,
            # mask function, causal diagonal).
            if bias is not None:
                np.add(scores, bias[i0:i1, j0:j1], out=scores, casting="same_kind")
            if call.score_mod is not None:
                kv_idx = np.arange(j0, j1, dtype=np.int64)
                np.copyto(scores, as_scores(call_score(call.score_mod, scores, b, h, q_idx, kv_idx), scores),
                          casting="same_kind")
            if blocked is not None:
                np.copyto(scores, -np.inf, where=blocked)
            if limit is not None and not (self.fused is not None and self.causal_in_c):
                offset = self.bk - (limit - 1)                      # add the 0/−inf band
                np.add(scores, self.causal_bias[:rows, offset : offset + cols], out=scores)
                limit = None
            if self.fused is not None:
                # Steps 3–5 in C (_fused.c), float32: the same reference rule row by row, then
                # P = exp(S − r) and l = α·l + rowsum(P) in one pass (future keys of a causal
                # block set to 0 there, no band added, no exp taken); True when some r moved up.
                if self.fused(scores, ref, l, alpha, row_max if self.partial else None, _HEADROOM, limit,
                              width=self.route.width):
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
    """Whether every (T, D) slice of x (…, T, D) can go to BLAS as it is: contiguous rows that do
    not overlap."""
    return x.strides[-1] == x.itemsize and (x.shape[-2] <= 1 or x.strides[-2] >= x.shape[-1] * x.itemsize)


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
