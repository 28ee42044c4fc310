"""Mask and score functions in flex_attention's style, and a catalogue of the common ones.

A mask function says which keys a query may see; a score function changes a score:

    mask_mod(b, h, q_idx, kv_idx) -> bool          True = query q_idx may attend to key kv_idx
    score_mod(score, b, h, q_idx, kv_idx) -> score applied to q·kᵀ·scale (+ bias), before masking

(the signatures of torch.nn.attention.flex_attention). qkv calls them once per call, or once per
block in the kernel, with broadcasting int64 index arrays — b the batch index, h the head,
q_idx (Tq, 1), kv_idx (Tk,) — so any function written with plain operators (``q_idx >= kv_idx``,
``score + slope * (kv_idx - q_idx)``) works on NumPy arrays and torch tensors alike, and the
functions here work unchanged as flex_attention's ``mask_mod``/``score_mod`` (tensors or vmap).

    qkv.attention(q, k, v, mask_mod=qkv.masks.sliding_window(256))
    qkv.attention(q, k, v, mask_mod=qkv.masks.causal() & qkv.masks.document(ids),
                  score_mod=qkv.masks.alibi(8))

Every mask here also answers `block_kinds(b, h, q_lo, q_hi, k_lo, k_hi)`: for the half-open
query range [q_lo, q_hi) and key range [k_lo, k_hi) (broadcasting arrays of block bounds) whether
no pair is allowed (EMPTY: the kernel skips the block), every pair is (FULL: no mask is formed)
or some are (PARTIAL: the mask is evaluated for the block). `&` and `|` combine masks, and their
block kinds. A plain function has no block kinds: the kernel evaluates it block by block and
still skips a block that comes out empty.

Positions are absolute indices: `causal()` is q_idx >= kv_idx (top-left, as flex_attention's);
for qkv's bottom-right causality with Tq < Tk (decoding after a cache) use
`causal(offset=Tk - Tq)` or the `causal=True` argument.
"""

from __future__ import annotations

import math
import ast
import functools
import itertools
import threading
import types
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from . import _backend as compat  # array-api-compat, imported on first use
from .kernels.functions import EMPTY, FULL, PARTIAL, _compiling, as_bool_mask, call_mask, call_score, elementwise  # noqa: F401 (elementwise: public here)
from ._keep import keep

__all__ = [
    "MaskMod", "MaskInfo", "analyse", "BlockMask", "block_mask", "ScoreMod", "ScoreInfo", "read_score", "EMPTY", "PARTIAL", "FULL", "dense_mask", "block_map",
    "causal", "sliding_window", "dilated_window", "global_tokens", "prefix_lm", "document", "sinks",
    "chunked", "and_masks", "or_masks", "key_range_mask", "mask_ranges", "alibi", "alibi_slopes", "soft_cap", "t5_relative_buckets",
    "t5_bucket", "catalogue", "elementwise", "call_mask", "call_score", "captured_tensors",
]


def _xp(*arrays):
    return compat.array_namespace(*[a for a in arrays if hasattr(a, "shape")])


def _kinds(all_allowed, any_allowed):
    """EMPTY / PARTIAL / FULL from two boolean arrays (every pair allowed, some pair allowed)."""
    return np.where(all_allowed, FULL, np.where(any_allowed, PARTIAL, EMPTY)).astype(np.int8)


class MaskMod:
    """A mask function with a name, a formula and what the kernel may know about it before any score
    is computed; `&` and `|` combine two.

    The protocol (read once per call by `analyse`, into the call's `MaskInfo`; a subclass, or any
    object with these attributes, declares what holds for it):
      block_kinds(b, h, q_lo, q_hi, k_lo, k_hi) -> int8 EMPTY / PARTIAL / FULL per block.
      relative: True when allowed(q, kv) depends on kv − q only (mask blocks are reused per offset).
      band: (lo, hi) when the mask is exactly lo <= kv − q <= hi (None on a side: unbounded), else None.
      key_ranges(tq, tk) -> (lo, hi) int64 (Tq,) arrays when every query row q allows exactly the
        keys lo[q] <= kv < hi[q], the same for every batch and head; else None.
      broadcasts: True when the function may be called with broadcasting b and h arrays (the
        catalogue's are); otherwise qkv calls it once per (batch, head) with scalar b and h.
    """

    name = "mask"
    formula = ""
    recipe = None        # how the catalogue built it, a string of plain values (see _recorded); or None
    relative = False
    band = None
    broadcasts = False   # True: written for broadcasting index arrays (b (…, 1, 1, 1), h (H, 1, 1))

    def __call__(self, b, h, q_idx, kv_idx):
        raise NotImplementedError

    def block_kinds(self, b, h, q_lo, q_hi, k_lo, k_hi):
        """EMPTY / PARTIAL / FULL per block (int8, broadcast of the bounds' shapes)."""
        return np.full(np.broadcast_shapes(np.shape(q_lo), np.shape(k_lo)), PARTIAL, np.int8)

    def key_ranges(self, tq: int, tk: int):
        """(lo, hi) int64 (Tq,): query q allows exactly keys lo[q] <= kv < hi[q]; None when unknown."""
        return None

    def check_shape(self, batch: int, heads: int, tq: int, tk: int) -> None:
        """Raise InputError when an array the mask was built from (per-batch ids, per-row ranges) does not
        fit a call of (B, H, Tq, Tk) = (batch, heads, tq, tk); called once per call (`analyse`)."""

    def key_range_table(self, tq: int, tk: int, batch: int = 1):
        """(B', K, 2, Tq) int64: batch b's query q allows exactly the keys of its K disjoint ranges
        table[b, r, 0, q] <= kv < table[b, r, 1, q] (B' = 1: the same for every batch; an empty range
        has lo = hi); the same for every head. None when unknown. By default key_ranges as one range."""
        found = self.key_ranges(tq, tk)
        return None if found is None else _range_table(np.stack(np.broadcast_arrays(*found))[None, None], tk)

    def __and__(self, other):
        return and_masks(self, other)

    def __or__(self, other):
        return or_masks(self, other)

    def __repr__(self):
        return f"<mask {self.name}: {self.formula}>"


class _Mask(MaskMod):
    """The catalogue's masks: a function plus the MaskMod protocol's facts given as arguments.
    band: the blocked kernel masks a partial block by per-row key ranges, with no mask array.
    ranges(q, tq, tk) -> (lo, hi) or None gives key_ranges (causal, windows, prefix-LM, chunked,
    documents with one sorted id row, and their `&`); the kernel masks partial blocks by these
    ranges in C."""

    def __init__(self, name, formula, fn, kinds=None, relative=False, band=None, ranges=None, broadcasts=True,
                 table=None, shape=None):
        self.name, self.formula, self._fn, self._kinds, self.relative = name, formula, fn, kinds, relative
        self._shape = shape   # shape(batch, heads, tq, tk): raises InputError when its arrays do not fit
        self.broadcasts = broadcasts
        self.band = band
        self._ranges = ranges
        self._table = table   # table(tq, tk, batch) -> key_range_table, when not one range per row

    def check_shape(self, batch: int, heads: int, tq: int, tk: int) -> None:
        if self._shape is not None:
            self._shape(batch, heads, tq, tk)

    def key_range_table(self, tq: int, tk: int, batch: int = 1):
        if self._table is None:
            return super().key_range_table(tq, tk, batch)
        return self._table(tq, tk, batch)

    def key_ranges(self, tq: int, tk: int):
        if self._ranges is None:
            return None
        found = self._ranges(np.arange(tq, dtype=np.int64), tq, tk)
        if found is None:
            return None
        lo, hi = (np.broadcast_to(np.asarray(x, dtype=np.int64), (tq,)) for x in found)
        return lo, hi

    def __call__(self, b, h, q_idx, kv_idx):
        return self._fn(b, h, q_idx, kv_idx)

    def block_kinds(self, b, h, q_lo, q_hi, k_lo, k_hi):
        if self._kinds is None:
            return super().block_kinds(b, h, q_lo, q_hi, k_lo, k_hi)
        return self._kinds(b, h, np.asarray(q_lo), np.asarray(q_hi), np.asarray(k_lo), np.asarray(k_hi))


class MaskInfo:
    """What one call knows about its mask function, read once (`analyse`) when the call is checked;
    the route and the kernel use this, never the function's attributes again.

    fn: the mask function itself (b, h, q_idx, kv_idx) -> bool.
    block_kinds: kinds(b, h, q_lo, q_hi, k_lo, k_hi) -> int8 EMPTY / PARTIAL / FULL, or None (a
      function qkv could not analyse: the kernel evaluates it block by block and skips blocks that
      come out empty).
    relative: allowed(q, kv) depends on kv − q only.
    band: (lo, hi): the mask is exactly lo <= kv − q <= hi (None on a side: unbounded), or None.
    key_ranges: (2, Tq) int64, row 0 the first allowed key and row 1 one past the last, the same for
      every batch and head; or None. Computed on first use (a BlockMask's tiles are evaluated then).
    range_table: (B', K, 2, Tq) int64, K disjoint key ranges per row, per batch (B' = the call's
      batch) or for all (B' = 1); or None (MaskMod.key_range_table). Masks with more than one run of
      keys per row (sinks | window, global tokens) or per-batch documents go to the C routes by it.
    block_size: the block size the analysis was made at (BlockMask), a hint for the kernel; or None.
    broadcasts: the call's function is written for broadcasting index arrays (qkv.masks' functions):
      called once per call; otherwise once per (batch, head) with scalar b and h.
    recipe: a catalogue mask's recipe string (`from_recipe` rebuilds it; how it passes into a trace), or None.
    """

    def __init__(self, fn, block_kinds, relative, band, ranges, block_size=None, table=None, broadcasts=False,
                 recipe=None):
        self.fn, self.block_kinds, self.relative, self.band = fn, block_kinds, relative, band
        self.block_size = block_size
        self.broadcasts, self.recipe = bool(broadcasts), recipe
        self._ranges = ranges
        self._table = table if table is not None else (lambda: None)

    @functools.cached_property
    def range_table(self):
        """(B', K, 2, Tq) int64 key ranges (see MaskMod.key_range_table), or None. Computed on first use."""
        found = self._table()
        if found is None:
            return None
        found = np.ascontiguousarray(found, dtype=np.int64)
        found.flags.writeable = False
        return found

    @functools.cached_property
    def key_ranges(self):
        found = self._ranges()   # (two threads may both compute it: the same value)
        if found is None:   # a table of one range, the same for every batch (an `|` that stays one run)
            table = self.range_table if self.block_kinds is not None else None
            if table is not None and table.shape[:2] == (1, 1):
                found = (table[0, 0, 0], table[0, 0, 1])
        if found is None:
            return None
        tq = np.shape(found[0])[0] if np.ndim(found[0]) else None
        lo, hi = (np.asarray(x, dtype=np.int64) for x in found)
        found = np.ascontiguousarray(np.stack(np.broadcast_arrays(lo, hi)))
        found.flags.writeable = False
        return found if tq is None or found.shape[1] == tq else None

    def __repr__(self):
        return (f"MaskInfo(kinds={'yes' if self.block_kinds is not None else 'no'}, relative={self.relative}, "
                f"band={self.band})")


def analyse(mask_mod: Callable, tq: int, tk: int, *, batch: int = 1, heads: int = 1, numpy: bool = True) -> MaskInfo:
    """The MaskInfo of a mask function for a call with `batch` × `heads` (b, h) pairs, Tq queries and
    Tk keys (see MaskMod's protocol). A plain function (no block_kinds) is analysed as `block_mask`
    does, once per function and shape (kept while the function lives), when it is pure index
    arithmetic (see `block_mask`) and `numpy` (NumPy inputs, or torch outside torch.compile);
    otherwise nothing is known about it."""
    check = getattr(mask_mod, "check_shape", None)
    if callable(check):   # per-batch / per-row arrays against the call's shape (a BlockMask: its own shape)
        check(batch, heads, tq, tk)
    broadcasts, recipe = getattr(mask_mod, "broadcasts", False), getattr(mask_mod, "recipe", None)
    if isinstance(mask_mod, BlockMask):
        pass
    elif not callable(getattr(mask_mod, "block_kinds", None)) and numpy:
        built = _auto_block_mask(mask_mod, batch, heads, tq, tk)
        if built is not None:
            mask_mod = built
    kinds = getattr(mask_mod, "block_kinds", None)
    kinds = kinds if callable(kinds) else None
    ranges = getattr(mask_mod, "key_ranges", None)
    table = getattr(mask_mod, "key_range_table", None)
    band = getattr(mask_mod, "band", None) if kinds is not None else None
    return MaskInfo(fn=mask_mod, block_kinds=kinds,
                    relative=bool(getattr(mask_mod, "relative", False)) and kinds is not None,
                    band=None if band is None else tuple(band),
                    ranges=(lambda: ranges(tq, tk)) if callable(ranges) else (lambda: None),
                    table=(lambda: table(tq, tk, batch)) if callable(table) else None,
                    block_size=getattr(mask_mod, "block_size", None) if isinstance(mask_mod, BlockMask) else None,
                    broadcasts=broadcasts, recipe=recipe)


def _offsets(q_lo, q_hi, k_lo, k_hi):
    """The least and greatest kv_idx − q_idx over a block."""
    return k_lo - (q_hi - 1), (k_hi - 1) - q_lo


# --------------------------------------------------------------------------- masks
# A catalogue mask remembers how it was built, in plain values: `recipe` = repr((factory name, its
# arguments, keyword arguments)) with masks as their own recipes — a string, as Dynamo keeps strings
# constant where it would make a changed int symbolic. torch.compile needs this: a mask built inside a
# compiled function is, while Dynamo traces, an object whose attributes are not yet set, so the
# traced route (kernels/route.py, _traced_plan) rebuilds it from its recipe, eagerly.
_RECORDED: dict = {}
_LIVE: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
_TOKENS = itertools.count()


def _recipe_part(value):
    if isinstance(value, MaskMod):
        return None if value.recipe is None else ("mask", value._recipe)
    if value is None or isinstance(value, (bool, int, float, str)):
        return ("value", value)
    if isinstance(value, (np.integer, np.floating)):
        return ("value", value.item())
    return None   # an array (document ids): no recipe


def _recorded(factory):
    """The factory, its masks given `recipe` (None when an argument is not a plain value or a mask with
    a recipe)."""
    _RECORDED[factory.__name__] = factory

    @functools.wraps(factory)
    def build(*args, **kwargs):
        mask = factory(*args, **kwargs)
        parts = tuple(_recipe_part(a) for a in args)
        whole = all(p is not None for p in parts) and all(_recipe_part(kwargs[key]) is not None for key in kwargs)
        if not whole and _compiling():   # built inside torch.compile from a function or an array: no
            mask._recipe, mask.recipe, mask.in_trace = None, None, True   # token (a weak reference cannot
            return mask                                                    # be made in a trace)
        named = tuple((key, _recipe_part(kwargs[key])) for key in sorted(kwargs))
        if all(p is not None for p in parts) and all(p is not None for _, p in named):
            mask._recipe = (factory.__name__, parts, named)
            mask.recipe = repr(mask._recipe)
        else:   # built from arrays (documents' ids): the object itself, by a number (built outside
            token = next(_TOKENS)   # torch.compile, where this runs eagerly)
            _LIVE[token] = mask
            mask._recipe = ("_object", token, ())
            mask.recipe = repr(mask._recipe)
        return mask

    return build




def passes_into_a_trace(mask_mod) -> bool:
    """Whether torch.compile can hand mask_mod, as a Python value, to a function it runs eagerly (the
    traced route's analysis, kernels/route.py `_traced_plan`). Called while Dynamo traces.

    Dynamo rebuilds a function made inside the compiled code from its closure cells' values, and fails
    (`ClosureConversionError`) when one is a tensor or an array — a mask lambda capturing a tensor of a
    function enclosing the compiled one. Such a function, and a catalogue mask combined inside the
    trace with one (`in_trace`), are not handed over: the call takes the plain path, which traces the
    function itself. A function with a closure is probed once on Python ints (b = h = q = kv = 0): pure
    index arithmetic on captured numbers gives a bool and is handed over (its key ranges still reach the
    C op); a tensor result, or an error, means a closure Dynamo may not convert."""
    if getattr(mask_mod, "in_trace", False):
        return False
    code = getattr(mask_mod, "__code__", None)
    if code is None or not code.co_freevars:
        return True
    try:
        probe = mask_mod(0, 0, 0, 0)
    except Exception:   # noqa: BLE001 — not arithmetic on ints: its closure is not known to be constants
        return False
    return isinstance(probe, (bool, np.bool_))


def from_recipe(recipe) -> MaskMod:
    """The catalogue mask a `recipe` describes (see _recorded), built anew. recipe: the string (or its
    tuple)."""
    name, parts, named = ast.literal_eval(recipe) if isinstance(recipe, str) else recipe
    if name == "_object":
        return _LIVE[parts]

    def value(part):
        kind, x = part
        return from_recipe(x) if kind == "mask" else x

    return _RECORDED[name](*(value(p) for p in parts), **{key: value(p) for key, p in named})


@_recorded
def causal(offset: int = 0) -> MaskMod:
    """kv_idx <= q_idx + offset: no key in the future. offset = Tk − Tq aligns bottom-right."""
    offset = _integer("offset", offset, minimum=None)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        low, high = _offsets(q_lo, q_hi, k_lo, k_hi)
        return _kinds(high <= offset, low <= offset)

    return _Mask("causal", f"kv ≤ q + {offset}" if offset else "kv ≤ q",
                 lambda b, h, q_idx, kv_idx: kv_idx <= q_idx + offset, kinds, relative=True, band=(None, offset),
                 ranges=lambda q, tq, tk: (0, q + offset + 1))


@_recorded
def sliding_window(left: int | None, right: int | None = 0) -> MaskMod:
    """q_idx − left <= kv_idx <= q_idx + right: `left` keys before the query, `right` after (None:
    unbounded on that side). sliding_window(W) is the causal window of Mistral/Gemma: each query
    sees itself and the W keys before it. Costs O(T·(left + right)) in the blocked kernel."""
    left = None if left is None else _integer("left", left)
    right = None if right is None else _integer("right", right)

    def fn(b, h, q_idx, kv_idx):
        allowed = None
        if left is not None:
            allowed = kv_idx >= q_idx - left
        if right is not None:
            upper = kv_idx <= q_idx + right
            allowed = upper if allowed is None else (allowed & upper)
        return allowed if allowed is not None else (kv_idx >= 0) & (q_idx >= 0)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        low, high = _offsets(q_lo, q_hi, k_lo, k_hi)
        lo = -math.inf if left is None else -left
        hi = math.inf if right is None else right
        return _kinds((low >= lo) & (high <= hi), (high >= lo) & (low <= hi))

    side = lambda n: "∞" if n is None else str(n)
    return _Mask(f"sliding window ({side(left)}, {side(right)})",
                 f"q − {side(left)} ≤ kv ≤ q + {side(right)}", fn, kinds, relative=True,
                 band=(None if left is None else -left, right),
                 ranges=lambda q, tq, tk: (0 if left is None else q - left, tk if right is None else q + right + 1))


@_recorded
def dilated_window(left: int, right: int = 0, dilation: int = 2) -> MaskMod:
    """A sliding window that sees every `dilation`-th key: q − left <= kv <= q + right and
    (q − kv) divisible by dilation (Longformer's dilated attention)."""
    dilation = _integer("dilation", dilation, minimum=1)
    window = sliding_window(left, right)

    def fn(b, h, q_idx, kv_idx):
        return window(b, h, q_idx, kv_idx) & ((q_idx - kv_idx) % dilation == 0)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        inner = window.block_kinds(b, h, q_lo, q_hi, k_lo, k_hi)
        return np.minimum(inner, PARTIAL).astype(np.int8) if dilation > 1 else inner

    return _Mask(f"dilated window ({left}, {right}, every {dilation})",
                 f"q − {left} ≤ kv ≤ q + {right} and (q − kv) mod {dilation} = 0", fn, kinds, relative=True)


@_recorded
def global_tokens(n: int) -> MaskMod:
    """The first n tokens are global: they see every key and every query sees them
    (Longformer/BigBird). Combine with a window by `|`."""
    n = _integer("n", n)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        return _kinds((q_hi <= n) | (k_hi <= n), (q_lo < n) | (k_lo < n))

    return _Mask(f"global tokens ({n})", f"q < {n} or kv < {n}",
                 lambda b, h, q_idx, kv_idx: (q_idx < n) | (kv_idx < n), kinds,
                 ranges=lambda q, tq, tk: (0, np.where(q < n, tk, min(n, tk))))


@_recorded
def prefix_lm(prefix: int) -> MaskMod:
    """Prefix-LM (T5, PaLI): the first `prefix` keys are seen by every query (bidirectional
    prefix), the rest causally: kv < prefix or kv <= q."""
    prefix = _integer("prefix", prefix)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        low, high = _offsets(q_lo, q_hi, k_lo, k_hi)
        return _kinds((k_hi <= prefix) | (high <= 0), (k_lo < prefix) | (low <= 0))

    return _Mask(f"prefix-LM ({prefix})", f"kv < {prefix} or kv ≤ q",
                 lambda b, h, q_idx, kv_idx: (kv_idx < prefix) | (kv_idx <= q_idx), kinds,
                 ranges=lambda q, tq, tk: (0, np.maximum(prefix, q + 1)))


@_recorded
def sinks(n: int) -> MaskMod:
    """Attention sinks (StreamingLLM): the first n keys are always visible. Combine with a window
    by `|`: sliding_window(W) | sinks(4)."""
    n = _integer("n", n)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        return _kinds(np.broadcast_to(k_hi <= n, np.broadcast_shapes(q_lo.shape, k_lo.shape)),
                      np.broadcast_to(k_lo < n, np.broadcast_shapes(q_lo.shape, k_lo.shape)))

    return _Mask(f"sinks ({n})", f"kv < {n}", lambda b, h, q_idx, kv_idx: (kv_idx < n) & (q_idx >= 0), kinds,
                 ranges=lambda q, tq, tk: (0, min(n, tk)))


@_recorded
def chunked(size: int) -> MaskMod:
    """Chunked local attention (Llama 4): queries see only keys of their own chunk of `size`
    positions, q // size == kv // size. Combine with causal() by `&`."""
    size = _integer("size", size, minimum=1)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        qa, qb, ka, kb = q_lo // size, (q_hi - 1) // size, k_lo // size, (k_hi - 1) // size
        return _kinds((qa == qb) & (ka == kb) & (qa == ka), (qa <= kb) & (ka <= qb))

    return _Mask(f"chunked ({size})", f"⌊q/{size}⌋ = ⌊kv/{size}⌋",
                 lambda b, h, q_idx, kv_idx: q_idx // size == kv_idx // size, kinds,
                 ranges=lambda q, tq, tk: (q // size * size, q // size * size + size))


@_recorded
def document(ids, kv_ids=None) -> MaskMod:
    """Document (segment) masking: a query sees only keys of its own document,
    ids[q] == kv_ids[kv] — block-diagonal for packed sequences. ids: (T,) or (B, T) integers,
    one per query position (and key position, unless kv_ids is given for Tq ≠ Tk). With
    sorted ids the kernel's cost is the sum of the documents' squares."""
    q_ids = _ids("ids", ids)
    k_ids = q_ids if kv_ids is None else _ids("kv_ids", kv_ids)
    # one row given as (1, T): the same ids for every batch, as (T,)
    q_ids, k_ids = (x[0] if x.ndim == 2 and x.shape[0] == 1 else x for x in (q_ids, k_ids))
    def lookup(table, b, index, like):
        if compat.is_torch_array(like):
            import torch

            table = torch.as_tensor(table, device=like.device)
        return table[index] if table.ndim == 1 else table[b, index]

    def fn(b, h, q_idx, kv_idx):
        return lookup(q_ids, b, q_idx, q_idx) == lookup(k_ids, b, kv_idx, kv_idx)

    def ranges(table, b, lo, hi):
        row = table if table.ndim == 1 else table[int(b)]
        starts = np.asarray(lo).reshape(-1)
        low = np.minimum.reduceat(row, starts) if row.size else np.zeros(0, row.dtype)
        high = np.maximum.reduceat(row, starts) if row.size else np.zeros(0, row.dtype)
        return low.reshape(np.shape(lo)), high.reshape(np.shape(lo))

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        qa, qb = ranges(q_ids, b, q_lo, q_hi)
        ka, kb = ranges(k_ids, b, k_lo, k_hi)
        return _kinds((qa == qb) & (ka == kb) & (qa == ka), (qa <= kb) & (ka <= qb))

    def key_ranges(q, tq, tk):   # one id row, keys' ids sorted: a document's keys are contiguous
        if q_ids.ndim != 1 or k_ids.ndim != 1 or q_ids.shape[0] < tq or k_ids.shape[0] < tk:
            return None
        keys = k_ids[:tk]
        if tk > 1 and np.any(keys[1:] < keys[:-1]):
            return None
        mine = q_ids[:tq]
        return np.searchsorted(keys, mine, side="left"), np.searchsorted(keys, mine, side="right")

    def table(tq, tk, batch):   # a (B, T) id table: each batch's own ranges (its keys' ids sorted)
        if q_ids.ndim == 1 and k_ids.ndim == 1:
            found = key_ranges(None, tq, tk)
            return None if found is None else _range_table(np.stack(found)[None, None], tk)
        rows = []
        for b in range(batch):
            mine = q_ids if q_ids.ndim == 1 else q_ids[b] if b < q_ids.shape[0] else None
            keys = k_ids if k_ids.ndim == 1 else k_ids[b] if b < k_ids.shape[0] else None
            if mine is None or keys is None or mine.shape[0] < tq or keys.shape[0] < tk:
                return None
            mine, keys = mine[:tq], keys[:tk]
            if tk > 1 and np.any(keys[1:] < keys[:-1]):
                return None
            rows.append(np.stack([np.searchsorted(keys, mine, side="left"), np.searchsorted(keys, mine, side="right")]))
        return _range_table(np.stack(rows)[:, None], tk)

    q_shape, k_shape = tuple(int(n) for n in q_ids.shape), tuple(int(n) for n in k_ids.shape)

    def shape(batch, heads, tq, tk):   # rows: 1 or the batch; positions: every query's (and key's) id
        checks = [("ids", q_shape, tq if kv_ids is not None else max(tq, tk))]
        if kv_ids is not None:
            checks.append(("kv_ids", k_shape, tk))
        for arg, table_, need in checks:
            _check_rows(arg, table_, batch, heads, tq, tk)
            _check_length(arg, table_, need, batch, heads, tq, tk)

    return _Mask("document", "doc[q] = doc[kv]", fn, kinds, ranges=key_ranges, table=table, shape=shape)


@_recorded
def and_masks(*masks) -> MaskMod:
    """Allowed where every mask allows (block kinds: the least of theirs)."""
    return _combine(masks, "and", np.minimum, lambda a, b: a & b)


@_recorded
def or_masks(*masks) -> MaskMod:
    """Allowed where any mask allows (block kinds: the greatest of theirs)."""
    return _combine(masks, "or", np.maximum, lambda a, b: a | b)


def _combine(masks, word, pick, join):
    if not masks or not all(callable(m) for m in masks):
        raise TypeError(f"{word}_masks takes mask functions (b, h, q_idx, kv_idx) -> bool")

    def fn(b, h, q_idx, kv_idx):
        result = masks[0](b, h, q_idx, kv_idx)
        for mask in masks[1:]:
            result = join(result, mask(b, h, q_idx, kv_idx))
        return result

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        result = None
        for mask in masks:
            own = mask.block_kinds(b, h, q_lo, q_hi, k_lo, k_hi) if isinstance(mask, MaskMod) else \
                MaskMod.block_kinds(mask, b, h, q_lo, q_hi, k_lo, k_hi)
            result = own if result is None else pick(result, own)
        return result

    names = [getattr(m, "name", getattr(m, "__name__", "mask")) for m in masks]
    formulas = [f"({getattr(m, 'formula', '') or getattr(m, '__name__', 'mask')})" for m in masks]
    relative = all(getattr(m, "relative", False) for m in masks)
    broadcasts = all(getattr(m, "broadcasts", False) for m in masks)

    def key_ranges(q, tq, tk):   # "and" of key ranges is their intersection; "or" is not a range
        if word != "and" or not all(callable(getattr(m, "key_ranges", None)) for m in masks):
            return None
        parts = [m.key_ranges(tq, tk) for m in masks]
        if any(part is None for part in parts):
            return None
        return (np.maximum.reduce([part[0] for part in parts]), np.minimum.reduce([part[1] for part in parts]))

    def table(tq, tk, batch):   # "or": the union of the masks' ranges; "and": their intersections
        parts = [m.key_range_table(tq, tk, batch) if callable(getattr(m, "key_range_table", None)) else None
                 for m in masks]
        if any(part is None for part in parts):
            return None
        if word == "or":   # the widest part kept whole (a window stays a band for the kernel), the others
            parts.sort(key=lambda part: -int((part[:, :, 1] - part[:, :, 0]).sum()) / part.shape[0])
        result = parts[0]
        for part in parts[1:]:
            b = max(result.shape[0], part.shape[0])
            result, part = (np.broadcast_to(x, (b,) + x.shape[1:]) for x in (result, part))
            if word == "or":   # ... less what the earlier ones cover: disjoint pieces
                joined = np.concatenate([result, _subtract(part, result)], axis=1)
            else:   # every range of one against every range of the other: disjoint again
                lo = np.maximum(result[:, :, None, 0], part[:, None, :, 0])
                hi = np.minimum(result[:, :, None, 1], part[:, None, :, 1])
                joined = np.stack([lo, hi], axis=3)
                joined = joined.reshape((joined.shape[0], -1) + joined.shape[3:])
            result = _range_table(joined, tk)
            if result is None and word == "or":   # too many pieces: join overlapping ranges instead
                b = max(part.shape[0] for part in parts)
                return _joined_table(np.concatenate([np.broadcast_to(x, (b,) + x.shape[1:]) for x in parts], axis=1), tk)
            if result is None:
                return None
        return result

    def shape(batch, heads, tq, tk):
        for mask in masks:
            check = getattr(mask, "check_shape", None)
            if callable(check):
                check(batch, heads, tq, tk)

    return _Mask(f" {word} ".join(names), f" {word} ".join(formulas), fn, kinds, relative=relative,
                 ranges=key_ranges, broadcasts=broadcasts, table=table, shape=shape)


def key_range_mask(lo, hi) -> MaskMod:
    """The mask of given key ranges: query q sees keys lo[q] <= kv < hi[q] (int arrays (Tq,)), with
    exact block kinds and key_ranges (the C routes' one-range pass of a split call, kernels/route.py).
    lo, hi (B, Tq): batch b's query q sees lo[b, q] <= kv < hi[b, q] (a key-padding mask's ranges,
    `mask_ranges`): then key_range_table gives each batch's ranges and key_ranges is None (unless every
    batch has the same ranges: then it is the (Tq,) mask). An empty range (lo >= hi) allows no key."""
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    if lo.shape != hi.shape or lo.ndim not in (1, 2):
        raise ValueError(f"lo and hi must share one shape (Tq,) or (B, Tq), got {lo.shape} and {hi.shape}")
    if lo.ndim == 2:
        if lo.shape[0] == 1 or (np.array_equal(lo, lo[:1].repeat(lo.shape[0], 0))
                                and np.array_equal(hi, hi[:1].repeat(hi.shape[0], 0))):
            return key_range_mask(lo[0], hi[0])
        return _batch_key_range_mask(lo, hi)
    tq = lo.shape[0]

    def fn(b, h, q_idx, kv_idx):
        if compat.is_torch_array(q_idx):
            import torch

            low, high = torch.as_tensor(lo, device=q_idx.device), torch.as_tensor(hi, device=q_idx.device)
        else:
            low, high = lo, hi
        return (kv_idx >= low[q_idx]) & (kv_idx < high[q_idx])

    lo_shape = tuple(int(n) for n in lo.shape)

    def shape(batch, heads, tq_, tk):
        _check_length("lo", lo_shape, tq_, batch, heads, tq_, tk)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        return _range_kinds(lo, hi, q_lo, k_lo, k_hi)

    band = _band_of(lo, hi)
    if band is not None:   # a window's pass: the kernel masks its partial blocks as a band
        a, b = band
        kinds_of_band = sliding_window(None if a is None else -a, None if b is None else b - 1).block_kinds
        return _Mask("key ranges (a band)", "lo[q] ≤ kv < hi[q]", fn, kinds_of_band, relative=True,
                     band=(a, None if b is None else b - 1), ranges=lambda q, tq_, tk: (lo, hi), broadcasts=True,
                     shape=shape)
    return _Mask("key ranges", "lo[q] ≤ kv < hi[q]", fn, kinds, ranges=lambda q, tq_, tk: (lo, hi),
                 broadcasts=True, shape=shape)


def _range_kinds(lo, hi, q_lo, k_lo, k_hi):
    """Block kinds of the ranges lo[q] <= kv < hi[q] ((Tq,) int64) for blocks whose query ranges start
    at q_lo and run to the next start (the kernel's grid) and key ranges [k_lo, k_hi)."""
    starts = np.asarray(q_lo).reshape(-1)
    if not lo.shape[0]:
        return np.full(np.broadcast_shapes(np.shape(q_lo), np.shape(k_lo)), EMPTY, np.int8)
    lo_min, lo_max = (f.reduceat(lo, starts).reshape(np.shape(q_lo)) for f in (np.minimum, np.maximum))
    hi_min, hi_max = (f.reduceat(hi, starts).reshape(np.shape(q_lo)) for f in (np.minimum, np.maximum))
    # FULL: every row covers the block; EMPTY: no row reaches into it (PARTIAL is always safe)
    return _kinds((lo_max <= k_lo) & (hi_min >= k_hi), (lo_min < k_hi) & (hi_max > k_lo) & (hi_max > lo_min))


def _batch_key_range_mask(lo, hi) -> MaskMod:
    """key_range_mask with ranges per batch, lo and hi (B, Tq) int64 (B > 1, not all the same)."""
    batch, tq = lo.shape

    def fn(b, h, q_idx, kv_idx):
        if compat.is_torch_array(q_idx):
            import torch

            low, high = torch.as_tensor(lo, device=q_idx.device), torch.as_tensor(hi, device=q_idx.device)
            b = torch.as_tensor(b, device=q_idx.device)
        else:
            low, high = lo, hi
        return (kv_idx >= low[b, q_idx]) & (kv_idx < high[b, q_idx])

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        if np.ndim(b) == 0:   # one batch (the kernel's loop): its own ranges
            return _range_kinds(lo[int(b)], hi[int(b)], q_lo, k_lo, k_hi)
        # several batches at once: a block is FULL / EMPTY only when it is so for every batch
        each = np.stack([_range_kinds(lo[i], hi[i], q_lo, k_lo, k_hi) for i in range(batch)])
        return np.where((each == FULL).all(0), FULL, np.where((each == EMPTY).all(0), EMPTY, PARTIAL)).astype(np.int8)

    def table(tq_, tk, batch_):
        if tq_ != tq or batch_ != batch:
            return None
        return _range_table(np.stack([lo, hi], axis=1)[:, None], tk)   # (B, 1, 2, Tq)

    lo_shape = (int(batch), int(tq))

    def shape(batch_, heads, tq_, tk):
        _check_rows("lo", lo_shape, batch_, heads, tq_, tk)
        _check_length("lo", lo_shape, tq_, batch_, heads, tq_, tk)

    return _Mask(f"key ranges ({batch} batches)", "lo[b, q] ≤ kv < hi[b, q]", fn, kinds, broadcasts=True,
                 table=table, shape=shape)


def mask_ranges(mask, lead: tuple, tq: int, tk: int):
    """(lo, hi), each (B', Tq) int64, when a boolean mask array allows each query row one contiguous run
    of keys, lo <= kv < hi (a row with no allowed key: lo = hi = 0), the same for every head; else None.

    mask: broadcastable to the scores lead + (Tq, Tk), lead = (…, H) (NumPy or torch, True = may attend):
    key padding (B, 1, 1, Tk), causal + padding (B, 1, Tq, Tk), (Tq, Tk), …. B' = 1 when the mask is the
    same for every batch, else B = prod(lead[:-1]) (the batch dimensions flattened in C order, as b
    numbers them). None for a mask with a hole in some row or that differs between heads.
    Work O(size of the mask): (B, 1, 1, Tk) costs O(B·Tk); a mask with a query dimension O(B·Tq·Tk)."""
    if compat.is_torch_array(mask):
        mask = mask.detach().cpu().numpy()
    mask = np.asarray(mask)
    full = tuple(lead) + (tq, tk)
    if mask.dtype != np.bool_ or mask.ndim > len(full):
        return None
    mask = mask.reshape((1,) * (len(full) - mask.ndim) + mask.shape)
    if lead:   # one head's mask: the same for every head, or not ranges
        if mask.shape[-3] > 1:
            if not np.array_equal(mask, np.broadcast_to(mask[..., :1, :, :], mask.shape)):
                return None
            mask = mask[..., :1, :, :]
        mask = mask[..., 0, :, :]                       # (…batch, Tq', Tk')
        batch_shape = tuple(lead[:-1])
        if all(n == 1 for n in mask.shape[:-2]):
            mask = mask.reshape((1,) + mask.shape[-2:])
        else:
            mask = np.broadcast_to(mask, batch_shape + mask.shape[-2:]).reshape((-1,) + mask.shape[-2:])
    else:
        mask = mask[None]                               # (1, Tq', Tk')
    mask = np.broadcast_to(mask, mask.shape[:2] + (tk,))   # (B', Tq', Tk)
    if tk == 0:
        return None
    count = np.count_nonzero(mask, axis=-1)
    first = np.argmax(mask, axis=-1)
    end = tk - np.argmax(mask[..., ::-1], axis=-1)
    empty = count == 0
    if not np.all(empty | (end - first == count)):
        return None
    lo = np.where(empty, 0, first).astype(np.int64)
    hi = np.where(empty, 0, end).astype(np.int64)
    lo, hi = (np.ascontiguousarray(np.broadcast_to(x, (x.shape[0], tq))) for x in (lo, hi))
    return lo, hi


def _band_of(lo, hi):
    """(a, b) when the ranges are exactly max(q + a, 0) <= kv < q + b for every row q, with at least one
    row cut by each bound (a None: from 0, b None: to the end); else None. Rows are not clipped at Tk
    here: hi past Tk would differ from q + b, so only bands inside [0, Tk) on the right are found."""
    tq = lo.shape[0]
    if not tq:
        return None
    i = np.arange(tq, dtype=np.int64)
    inner = np.flatnonzero(lo > 0)
    a = None if not len(inner) else int(lo[inner[0]] - inner[0])
    b = int(hi[0])   # row 0 ends at 0 + b
    want_lo = np.zeros(tq, np.int64) if a is None else np.maximum(i + a, 0)
    want_hi = np.maximum(i + b, want_lo)
    if not (np.array_equal(lo, want_lo) and np.array_equal(np.maximum(hi, lo), want_hi)):
        return None
    if a is not None and a > b:
        return None
    # the band's block kinds are sliding_window(−a, b − 1)'s, a window around the diagonal: a band
    # beside it (a split pass of chunked(8) | sliding_window(36) with causal: kv < q) is plain ranges
    if (a is not None and a > 0) or b < 1:
        return None
    return a, b


# Most key ranges per row a table keeps (each one is a pass of the kernel); more: None (no table).
_MAX_RANGES = 4


def _joined_table(table: np.ndarray, tk: int):
    """A (B', K, 2, Tq) table of any key ranges made disjoint and sorted per row (overlapping or touching
    ranges joined, empty ones last as (Tk, Tk)), ranges empty in every row dropped; None when more than
    _MAX_RANGES remain (the union's fallback when cutting pieces gives too many)."""
    table = np.clip(np.asarray(table, dtype=np.int64), 0, tk)
    lo, hi = table[:, :, 0], table[:, :, 1]                  # (B', K, Tq)
    empty = hi <= lo
    lo, hi = np.where(empty, tk, lo), np.where(empty, tk, hi)
    order = np.argsort(lo, axis=1, kind="stable")
    lo, hi = np.take_along_axis(lo, order, axis=1), np.take_along_axis(hi, order, axis=1)
    out_lo, out_hi = np.full_like(lo, tk), np.full_like(hi, tk)
    slot = np.zeros(lo[:, 0].shape, np.int64)
    cur_lo, cur_hi = lo[:, 0].copy(), hi[:, 0].copy()

    def emit(where):
        index = np.where(where, slot, lo.shape[1])[:, None]   # out of range: dropped (mode "clip" below)
        keep = index < lo.shape[1]
        np.put_along_axis(out_lo, np.minimum(index, lo.shape[1] - 1),
                          np.where(keep, cur_lo[:, None], np.take_along_axis(out_lo, np.minimum(index, lo.shape[1] - 1), 1)), 1)
        np.put_along_axis(out_hi, np.minimum(index, lo.shape[1] - 1),
                          np.where(keep, cur_hi[:, None], np.take_along_axis(out_hi, np.minimum(index, lo.shape[1] - 1), 1)), 1)

    for r in range(1, lo.shape[1]):
        nxt_lo, nxt_hi = lo[:, r], hi[:, r]
        join = nxt_lo <= cur_hi
        emit(~join)
        slot = slot + ~join
        cur_hi = np.where(join, np.maximum(cur_hi, nxt_hi), nxt_hi)
        cur_lo = np.where(join, cur_lo, nxt_lo)
    emit(np.ones_like(slot, bool))
    used = np.flatnonzero((out_hi > out_lo).any(axis=(0, 2)))
    if len(used) > _MAX_RANGES:
        return None
    used = used if len(used) else np.arange(1)
    return np.ascontiguousarray(np.stack([out_lo[:, used], out_hi[:, used]], axis=2))


def _subtract(part: np.ndarray, cover: np.ndarray) -> np.ndarray:
    """The ranges of `part` (B, K, 2, Tq) less every range of `cover` (B, K', 2, Tq): each range cut by
    each covering one into what lies left and right of it; (B, K·2^K', 2, Tq), empty ones lo = hi."""
    pieces = [part]
    for r in range(cover.shape[1]):
        c_lo, c_hi = cover[:, r:r + 1, 0], cover[:, r:r + 1, 1]
        cut = []
        for x in pieces:
            lo, hi = x[:, :, 0], x[:, :, 1]
            left = np.stack([lo, np.minimum(hi, np.maximum(c_lo, lo))], axis=2)     # [lo, min(hi, c_lo))
            right = np.stack([np.maximum(lo, np.minimum(c_hi, hi)), hi], axis=2)    # [max(lo, c_hi), hi)
            empty_cover = (c_hi <= c_lo)[:, :, None]                                # covers nothing: x whole
            cut += [np.where(empty_cover, x, left), np.where(empty_cover, np.stack([hi, hi], axis=2), right)]
        pieces = cut
    return np.concatenate(pieces, axis=1)


def _range_table(table: np.ndarray, tk: int):
    """A (B', K, 2, Tq) table of disjoint key ranges clipped to [0, Tk), an empty range written lo = hi,
    ranges empty in every row dropped (one kept if all are); None when more than _MAX_RANGES remain.
    Ranges are not joined or reordered: a window stays exactly a band (the kernel's fast masking)."""
    table = np.clip(np.asarray(table, dtype=np.int64), 0, tk)
    lo, hi = table[:, :, 0], np.maximum(table[:, :, 1], table[:, :, 0])
    used = np.flatnonzero((hi > lo).any(axis=(0, 2)))
    if len(used) > _MAX_RANGES:
        return None
    used = used if len(used) else np.arange(1)
    return np.ascontiguousarray(np.stack([lo[:, used], hi[:, used]], axis=2))


# --------------------------------------------------------------------------- score functions
class ScoreMod:
    """A score function with a name and a formula (shown by the explainer); written for broadcasting
    index arrays (`broadcasts`)."""

    broadcasts = True

    def __init__(self, name, formula, fn, params=None, relative=False, shape=None):
        self.name, self.formula, self._fn = name, formula, fn
        self._shape = shape   # shape(batch, heads, tq, tk): raises InputError when its tables do not fit
        # ("alibi", slopes (H,)), ("soft_cap", cap) or ("t5_relative_buckets", table (H, buckets),
        # num_buckets, max_distance, bidirectional) for the catalogue's functions; None for others
        self.params = params
        # relative: fn(score, b, h, q, kv) = score + f(h, kv − q) (ALiBi, T5's buckets). The C routes
        # then evaluate f once per call, on score 0 over the Tq + Tk − 1 relative positions (one row
        # per head), and add it to each block (derivative 1 w.r.t. the score; kernels/autograd.py)
        self.relative = bool(relative)

    def __call__(self, score, b, h, q_idx, kv_idx):
        return self._fn(score, b, h, q_idx, kv_idx)

    def check_shape(self, batch: int, heads: int, tq: int, tk: int) -> None:
        """Raise InputError when a per-head table (ALiBi's slopes, T5's biases) has not exactly one row per
        head of the call (B, H, Tq, Tk); called once per call (`check_call`)."""
        if self._shape is not None:
            self._shape(batch, heads, tq, tk)

    def __repr__(self):
        return f"<score {self.name}: {self.formula}>"


class ScoreInfo:
    """What one call knows about its score function, read once (`read_score`) when the call is checked;
    the route, the plain path and the C routes' score specs use this, never the function's attributes
    (the score functions' MaskInfo). A plain class, as MaskInfo: torch.compile traces check_call.

    fn: the score function (score, b, h, q_idx, kv_idx) -> score.
    formula: its formula as the explainer shows it ("score_mod(score, b, h, q, k)" for one without).
    broadcasts: written for broadcasting index arrays (qkv.masks' functions): called once per call;
      otherwise once per (batch, head) with scalar b and h.
    relative: declared fn(score, …) = score + f(h, kv − q) (ALiBi, T5's buckets, ScoreMod(relative=True));
      the C routes check it before they use it (`kernels.autograd.relative_table`).
    params: the catalogue's parameters (`ScoreMod.params`: ("soft_cap", cap), ("alibi", slopes), …) or None;
      kind: their name, "alibi", "soft_cap" or "t5_relative_buckets" (None for other functions).
    """

    def __init__(self, fn, formula, broadcasts, relative, params):
        self.fn, self.formula, self.broadcasts, self.relative = fn, formula, broadcasts, relative
        self.params = params
        self.kind = params[0] if params else None

    @property
    def catalogue_relative(self) -> bool:
        """ALiBi or T5's buckets from the catalogue: tables copied at construction, so one computed per
        shape stays true (a user's relative function may read state that changes)."""
        return self.kind in ("alibi", "t5_relative_buckets")


def read_score(score_mod: Callable, *, batch: int = 1, heads: int = 1, tq: int = 0, tk: int = 0) -> ScoreInfo:
    """The ScoreInfo of a score function for a call of `batch` × `heads` (b, h) pairs, Tq queries and Tk
    keys: the one place a score function's attributes are read (as `analyse` reads a mask function's).
    A function with per-head tables (`ScoreMod.check_shape`: ALiBi's slopes, T5's biases) is checked
    against the call's shape here (InputError when they do not fit)."""
    check = getattr(score_mod, "check_shape", None)
    if callable(check):   # per-head tables against the call
        check(batch, heads, tq, tk)
    return ScoreInfo(score_mod, getattr(score_mod, "formula", "score_mod(score, b, h, q, k)"),
                     bool(getattr(score_mod, "broadcasts", False)), bool(getattr(score_mod, "relative", False)),
                     getattr(score_mod, "params", None))


def alibi_slopes(num_heads: int) -> np.ndarray:
    """ALiBi's per-head slopes (Press et al.): 2^(−8(h+1)/H) for H a power of two, the paper's
    interleaving otherwise. float64 (H,)."""
    num_heads = _integer("num_heads", num_heads, minimum=1)
    def power_of_two(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(num_heads).is_integer():
        slopes = power_of_two(num_heads)
    else:
        closest = 2 ** math.floor(math.log2(num_heads))
        slopes = power_of_two(closest) + power_of_two(2 * closest)[0::2][: num_heads - closest]
    return np.asarray(slopes, dtype=np.float64)


def alibi(slopes) -> ScoreMod:
    """ALiBi: score + slope[h]·(kv − q), a linear penalty on distance. slopes: an int H (the
    standard slopes, `alibi_slopes(H)`) or an array (H,), copied (later changes to it are not seen)."""
    # a copy: the function is fixed when made (changing the caller's array afterwards changes
    # nothing; the C routes keep a table computed from it per shape)
    table = alibi_slopes(slopes) if isinstance(slopes, (int, np.integer)) else np.array(slopes, np.float64)
    if table.ndim != 1:
        raise ValueError(f"slopes must be a number of heads or an array (H,), got shape {table.shape}")
    cached = {}

    def fn(score, b, h, q_idx, kv_idx):
        slope = _table_on(table, score, cached)[h]
        return score + slope * (kv_idx - q_idx)

    return ScoreMod(f"ALiBi ({len(table)} heads)", "s + m_h·(kv − q)", fn, params=("alibi", table), relative=True,
                    shape=lambda batch, heads, tq, tk: _check_heads("slopes", (len(table),), batch, heads, tq, tk))


def soft_cap(cap: float) -> ScoreMod:
    """tanh soft-capping (Gemma 2, Grok): cap·tanh(score / cap), scores squashed into (−cap, cap)."""
    if isinstance(cap, bool) or not isinstance(cap, (int, float, np.floating, np.integer)) or not cap > 0 \
            or not math.isfinite(cap):
        raise ValueError(f"cap must be a positive finite number, got {cap!r}")
    cap = float(cap)

    def fn(score, b, h, q_idx, kv_idx):
        xp = _xp(score)
        return xp.tanh(score / cap) * cap

    return ScoreMod(f"soft-cap ({cap:g})", f"{cap:g}·tanh(s / {cap:g})", fn, params=("soft_cap", cap))


def t5_bucket(relative_position, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True):
    """T5's relative position bucket of kv − q (transformers' T5Attention._relative_position_bucket):
    exact buckets for small distances, logarithmic ones up to max_distance. Int64 array."""
    xp = _xp(relative_position)
    rp = relative_position
    buckets = xp.zeros_like(rp)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + xp.astype(rp > 0, rp.dtype) * num_buckets
        n = xp.abs(rp)
    else:
        n = -xp.minimum(rp, xp.zeros_like(rp))
    max_exact = num_buckets // 2
    small = n < max_exact
    # as transformers computes it: float32 log, truncated toward zero
    ratio = xp.astype(xp.maximum(n, xp.ones_like(n)), xp.float32) / max_exact
    large = xp.log(ratio) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    large = max_exact + xp.astype(large, rp.dtype)
    large = xp.minimum(large, xp.full_like(large, num_buckets - 1))
    return buckets + xp.where(small, n, large)


def t5_relative_buckets(table, *, num_buckets: int | None = None, max_distance: int = 128,
                        bidirectional: bool = True) -> ScoreMod:
    """T5's relative position bias: score + table[h, bucket(kv − q)]. table: (H, num_buckets)
    learned biases (transformers stores its transpose, relative_attention_bias.weight), copied: later
    changes to the caller's array are not seen."""
    table = np.array(table, dtype=np.float64)   # a copy: fixed when made (see alibi)
    if table.ndim != 2:
        raise ValueError(f"table must be (H, num_buckets), got shape {table.shape}")
    num_buckets = table.shape[1] if num_buckets is None else num_buckets
    table_shape = tuple(int(n) for n in table.shape)
    cached = {}

    def fn(score, b, h, q_idx, kv_idx):
        bucket = t5_bucket(_like_index(kv_idx - q_idx, score), num_buckets, max_distance, bidirectional)
        return score + _table_on(table, score, cached)[h, bucket]

    return ScoreMod(f"T5 relative buckets ({num_buckets})", "s + bias_h[bucket(kv − q)]", fn,
                    params=("t5_relative_buckets", table, num_buckets, max_distance, bidirectional), relative=True,
                    shape=lambda batch, heads, tq, tk: _check_heads("table", table_shape, batch, heads, tq, tk))


def _table_on(table: np.ndarray, like, cached: dict):
    """The table in like's array library and float dtype. Not cached for torch: flex_attention
    traces score functions, and a trace may not write to a dict outside it."""
    if compat.is_torch_array(like):
        import torch

        return torch.as_tensor(table, dtype=like.dtype, device=like.device)
    return table.astype(like.dtype, copy=False)


def _like_index(x, like):
    if compat.is_torch_array(like) and not compat.is_torch_array(x):
        import torch

        return torch.as_tensor(x, device=like.device)
    return x


# --------------------------------------------------------------------------- helpers
def dense_mask(mask_mod: Callable, tq: int, tk: int | None = None, *, b: int = 0, h: int = 0) -> np.ndarray:
    """The (Tq, Tk) boolean matrix of a mask function for one (b, h), evaluated at once (drawing,
    testing; attention itself never forms it)."""
    tk = tq if tk is None else tk
    q_idx = np.arange(tq, dtype=np.int64)[:, None]
    kv_idx = np.arange(tk, dtype=np.int64)
    value = call_mask(mask_mod, np.int64(b), np.int64(h), q_idx, kv_idx)
    if compat.is_torch_array(value):
        value = value.detach().cpu().numpy()
    return np.broadcast_to(np.asarray(value, bool), (tq, tk)).copy()


def block_map(mask_mod: Callable, tq: int, tk: int | None = None, *, block_q: int = 256, block_k: int = 256,
              b: int = 0, h: int = 0) -> np.ndarray:
    """(query blocks, key blocks) int8 EMPTY / PARTIAL / FULL: what the kernel does per block.
    A mask without block kinds is evaluated (the kernel finds the same when it runs)."""
    tk = tq if tk is None else tk
    q_lo = np.arange(0, tq, block_q)[:, None]
    k_lo = np.arange(0, tk, block_k)[None, :]
    q_hi, k_hi = np.minimum(q_lo + block_q, tq), np.minimum(k_lo + block_k, tk)
    if isinstance(mask_mod, MaskMod) and type(mask_mod).block_kinds is not MaskMod.block_kinds or \
            isinstance(mask_mod, _Mask) and mask_mod._kinds is not None:
        kinds = mask_mod.block_kinds(np.int64(b), np.int64(h), q_lo, q_hi, k_lo, k_hi)
        return np.broadcast_to(np.asarray(kinds, np.int8), (q_lo.shape[0], k_lo.shape[1])).copy()
    dense = dense_mask(mask_mod, tq, tk, b=b, h=h)
    kinds = np.empty((q_lo.shape[0], k_lo.shape[1]), np.int8)
    for i, i0 in enumerate(q_lo[:, 0]):
        for j, j0 in enumerate(k_lo[0]):
            block = dense[i0:i0 + block_q, j0:j0 + block_k]
            kinds[i, j] = FULL if block.all() else PARTIAL if block.any() else EMPTY
    return kinds


def _integer(name: str, value: Any, *, minimum: int | None = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be ≥ {minimum}, got {value}")
    return int(value)


# The checks take the array's shape as a tuple of ints, read when the mask was made: under torch.compile
# they run in the trace, where a NumPy array's attributes are traced as tensor ops (a graph break).
def _shape_error(key: str, arg: str, shape: tuple, call: tuple, **values):
    """InputError naming the argument, its shape and the call's (B, H, Tq, Tk)."""
    from ._backend import shape_str
    from .errors import InputError

    return InputError.keyed(key, arg=arg, shape=shape_str(shape), call=shape_str(call), **values)


def _check_rows(arg: str, shape: tuple, batch, heads, tq, tk) -> None:
    """A (B, T) array's rows are per batch: 1 row (shared) or the call's B."""
    if len(shape) == 2 and shape[0] not in (1, batch):
        raise _shape_error("error.mask.rows", arg, shape, (batch, heads, tq, tk), rows=shape[0], batch=batch)


def _check_length(arg: str, shape: tuple, need: int, batch, heads, tq, tk) -> None:
    """A (…, T) array gives one value per position: at least `need` of them."""
    if shape[-1] < need:
        raise _shape_error("error.mask.length", arg, shape, (batch, heads, tq, tk), length=shape[-1], need=need)


def _check_heads(arg: str, shape: tuple, batch, heads, tq, tk) -> None:
    """A per-head table (H, …): exactly one row per head of the call (h indexes it). Fewer rows would
    index past the end; more would be read as if they were the first H heads' (a table made for another
    layer, or the whole layer's table given to one head): both refused."""
    if shape[0] != heads:
        raise _shape_error("error.mask.heads", arg, shape, (batch, heads, tq, tk), rows=shape[0], heads=heads)


def _ids(name: str, ids) -> np.ndarray:
    if compat.is_torch_array(ids):
        ids = ids.detach().cpu().numpy()
    ids = np.asarray(ids)
    if ids.ndim not in (1, 2) or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name} must be integers shaped (T,) or (B, T), got dtype {ids.dtype} and shape {ids.shape}")
    return ids.astype(np.int64, copy=False)



# --------------------------------------------------------------------------- user-written masks
class BlockMask(MaskMod):
    """A mask function analysed once for one shape: what `block_mask` returns. Pass it as mask_mod
    (again and again: the analysis is not repeated). Attributes:

      fn: the function; batch, heads, tq, tk: the shape it was analysed for (b < batch, h < heads);
      block_size: the analysis' block (query and key); kinds: int8 (query blocks, key blocks) EMPTY /
      PARTIAL / FULL, the same for every (b, h) (a block is PARTIAL unless it is empty, or full, for
      all of them); exact: whether every block was evaluated (False: blocks the index arithmetic
      proved empty or full were not, see `block_mask`).
    key_ranges(tq, tk): (lo, hi) int64 (Tq,) when every row allows one range of keys, the same for
      every (b, h) (the kernel then masks partial blocks by those ranges, in C); else None.
    block_kinds answers for any block bounds from the analysis' blocks (a block made of full ones is
    full, of empty ones empty, anything else partial).
    """

    def __init__(self, fn, batch, heads, tq, tk, block_size, kinds, ranges, exact):
        self.fn, self.batch, self.heads, self.tq, self.tk = fn, batch, heads, tq, tk
        self.block_size, self.kinds, self._ranges, self.exact = block_size, kinds, ranges, exact
        self.broadcasts = not exact   # proved by index arithmetic: fine with broadcasting b and h
        self.name = f"block mask of {getattr(fn, '__name__', 'a function')}"
        self.formula = getattr(fn, "formula", "")
        # the tensors fn reads, with their in-place versions: a call after one changed is refused
        self._watched = [(what, t, t._version) for what, t in captured_tensors(fn)]
        # prefix sums of full and empty blocks: any rectangle of blocks is counted in O(1)
        pad = ((1, 0), (1, 0))
        self._full = np.pad((kinds == FULL).cumsum(0).cumsum(1), pad)
        self._empty = np.pad((kinds == EMPTY).cumsum(0).cumsum(1), pad)

    def __call__(self, b, h, q_idx, kv_idx):
        return call_mask(self.fn, b, h, q_idx, kv_idx)

    def check_shape(self, batch, heads, tq, tk):
        self.check_fresh()
        if (tq, tk) != (self.tq, self.tk) or batch > self.batch or heads > self.heads:
            raise ValueError(f"mask_mod is a BlockMask built for (B, H, Tq, Tk) = ({self.batch}, {self.heads}, "
                             f"{self.tq}, {self.tk}) but the call has ({batch}, {heads}, {tq}, {tk}); "
                             "build one for this shape with qkv.masks.block_mask")

    def check_fresh(self):
        """Raise ValueError when a tensor the function reads changed in place after the analysis (its
        blocks and key ranges would be stale). NumPy arrays have no version counter: one changed after
        block_mask is not seen; build the BlockMask again after changing it."""
        if _compiling():
            return
        for what, tensor, version in self._watched:
            if tensor._version != version:
                raise ValueError(f"mask_mod is a stale BlockMask: {what} was changed in place after "
                                 "qkv.masks.block_mask analysed it, so its empty and full blocks and key ranges "
                                 "describe the old values; build it again with qkv.masks.block_mask")

    def block_kinds(self, b, h, q_lo, q_hi, k_lo, k_hi):
        n = self.block_size
        qa, qb = np.asarray(q_lo) // n, -(-np.asarray(q_hi) // n)
        ka, kb = np.asarray(k_lo) // n, -(-np.asarray(k_hi) // n)

        def count(table):
            return table[qb, kb] - table[qa, kb] - table[qb, ka] + table[qa, ka]

        total = (qb - qa) * (kb - ka)
        return _kinds(count(self._full) == total, count(self._empty) != total)

    def key_ranges(self, tq: int, tk: int):
        if (tq, tk) != (self.tq, self.tk) or self._ranges is None:
            return None
        return self._ranges[0], self._ranges[1]

    def __repr__(self):
        counts = [int((self.kinds == kind).sum()) for kind in (EMPTY, PARTIAL, FULL)]
        return (f"<BlockMask (B, H, Tq, Tk) = ({self.batch}, {self.heads}, {self.tq}, {self.tk}), "
                f"{self.block_size}-blocks: {counts[0]} empty, {counts[1]} partial, {counts[2]} full; "
                f"key ranges: {'yes' if self._ranges is not None else 'no'}>")


def block_mask(mask_mod: Callable, B: int, H: int, Tq: int, Tk: int | None = None, *,
               block_size: int = 128) -> BlockMask:
    """Analyse a mask function once for B batches, H heads, Tq queries and Tk keys (flex_attention's
    create_block_mask): which (block_size × block_size) blocks are empty, partial or full, and, where
    every query row allows one range of keys, the ranges. Pass the result as mask_mod.

    A function written as index arithmetic (+ − * // %, comparisons, & | ~ on b, h, q_idx, kv_idx
    and numbers, e.g. `lambda b, h, q, kv: (q >= kv) & (q - kv <= 256)`) is first run on the blocks'
    index intervals, which proves most blocks empty or full without evaluating them; only the rest
    is evaluated, a block at a time. Other functions (indexing captured arrays, branching) are
    evaluated on every block, once per (b, h). Results are exact either way; the work is O(T²) only
    for those other functions.
    """
    tk = Tq if Tk is None else Tk
    for name, n, low in (("B", B, 1), ("H", H, 1), ("Tq", Tq, 0), ("Tk", tk, 0), ("block_size", block_size, 1)):
        _integer(name, n, minimum=low)
    if not callable(mask_mod):
        raise TypeError(f"mask_mod must be a function (b, h, q_idx, kv_idx), got {type(mask_mod).__name__}")
    if isinstance(mask_mod, BlockMask):
        mask_mod = mask_mod.fn
    return _analyse_function(mask_mod, int(B), int(H), int(Tq), int(tk), int(block_size), intervals=True)


def _analyse_function(fn, batch, heads, tq, tk, n, *, intervals: bool):
    """The BlockMask of fn (see block_mask). Raises _NotIndexArithmetic when intervals is "only"."""
    nq, nk = -(-tq // n), -(-tk // n)
    q_lo = np.arange(nq, dtype=np.int64)[:, None] * n
    k_lo = np.arange(nk, dtype=np.int64)[None, :] * n
    q_hi, k_hi = np.minimum(q_lo + n, tq), np.minimum(k_lo + n, tk)
    proven = None
    if intervals and nq and nk:
        try:
            proven = _on_intervals(fn, batch, heads, q_lo, q_hi, k_lo, k_hi)
        except _NotIndexArithmetic:
            if intervals == "only":
                raise
    if proven is not None:
        kinds = proven
        pairs = [(np.int64(0), np.int64(0))]
        by_arrays = True
    else:
        kinds = np.full((nq, nk), PARTIAL, np.int8)
        pairs = [(np.int64(b), np.int64(h)) for b in range(batch) for h in range(heads)]
        by_arrays = False
    # per row: allowed keys counted, first and last (for the key ranges)
    count = np.zeros(tq, np.int64)
    first = np.full(tq, tk, np.int64)
    last = np.full(tq, -1, np.int64)
    same = True     # every (b, h) allows the same keys in the evaluated blocks
    b_all = np.arange(batch, dtype=np.int64).reshape(batch, 1, 1, 1)
    h_all = np.arange(heads, dtype=np.int64).reshape(heads, 1, 1)
    for i in range(nq):
        i0, i1 = int(q_lo[i, 0]), int(q_hi[i, 0])
        partial = np.flatnonzero(kinds[i] == PARTIAL)
        full = np.flatnonzero(kinds[i] == FULL)
        for j in full:
            j0, j1 = int(k_lo[0, j]), int(k_hi[0, j])
            count[i0:i1] += j1 - j0
            np.minimum(first[i0:i1], j0, out=first[i0:i1])
            np.maximum(last[i0:i1], j1 - 1, out=last[i0:i1])
        if not len(partial):
            continue
        cols = np.concatenate([np.arange(k_lo[0, j], k_hi[0, j], dtype=np.int64) for j in partial])
        q_idx = np.arange(i0, i1, dtype=np.int64)[:, None]
        if by_arrays:   # index arithmetic: all (b, h) at once, broadcasting
            allowed = _evaluate(fn, b_all, h_all, q_idx, cols)
        else:
            allowed = np.stack([_evaluate(fn, b, h, q_idx, cols) for b, h in pairs])
        if allowed.ndim == 2 or allowed.shape[0] == 1:   # the same for every (b, h): nothing to reduce
            any_bh = all_bh = allowed.reshape((i1 - i0, len(cols)))
        else:
            allowed = allowed.reshape((-1, i1 - i0, len(cols)))
            any_bh, all_bh = allowed.any(axis=0), allowed.all(axis=0)
            same = same and bool(np.array_equal(any_bh, all_bh))
        edges = np.cumsum([0] + [int(k_hi[0, j] - k_lo[0, j]) for j in partial])
        for t, j in enumerate(partial):
            block_any, block_all = any_bh[:, edges[t]:edges[t + 1]], all_bh[:, edges[t]:edges[t + 1]]
            kinds[i, j] = FULL if block_all.all() else EMPTY if not block_any.any() else PARTIAL
        rows = all_bh
        has = rows.any(axis=1)
        count[i0:i1] += rows.sum(axis=1)
        lo_col = cols[np.argmax(rows, axis=1)]
        hi_col = cols[len(cols) - 1 - np.argmax(rows[:, ::-1], axis=1)]
        np.minimum(first[i0:i1], np.where(has, lo_col, tk), out=first[i0:i1])
        np.maximum(last[i0:i1], np.where(has, hi_col, -1), out=last[i0:i1])
    ranges = None
    if same:
        empty = count == 0
        if np.all(empty | (last - first + 1 == count)):
            ranges = (np.where(empty, 0, first), np.where(empty, 0, last + 1))
    return BlockMask(fn, batch, heads, tq, tk, n, kinds, ranges, exact=proven is None)


def _evaluate(fn, b, h, q_idx, kv_idx) -> np.ndarray:
    """fn on index arrays as a NumPy bool array broadcast to (…, rows, cols) (leading dimensions
    only where the result depends on b or h); see `call_mask`."""
    value = as_bool_mask(call_mask(fn, b, h, q_idx, kv_idx), np)
    return np.broadcast_to(value, np.broadcast_shapes(np.shape(value), (q_idx.shape[0], kv_idx.shape[0])))


# Automatic analysis of plain functions (qkv.attention on NumPy inputs, torch outside torch.compile):
# only for pure index arithmetic whose closure cells, defaults and globals read are plain immutable
# values (numbers, strings, None, tuples of them). It is kept by what the function computes, not by the
# function object: (code object, those values with their types, shape), so a lambda written afresh on
# every call (`mask_mod=lambda b, h, q, kv: q - kv <= w`) is analysed once per w and shape. A function
# that captures anything else — an array, a tensor, a list, another function — is never cached: its
# contents could change between calls unseen (a mutated array), and nothing cheap proves they did not.
_AUTO: dict = {}         # insertion-ordered: the oldest entry goes first
_AUTO_KEPT = 64
_AUTO_LOCK = threading.Lock()


def _auto_block_mask(fn, batch, heads, tq, tk):
    key = _frozen_inputs(fn)
    if key is None or not tq or not tk:
        return None
    key = key + (batch, heads, tq, tk)
    with _AUTO_LOCK:
        found = _AUTO.get(key)
    if found is not None:
        return found or None
    try:
        found = _analyse_function(fn, batch, heads, tq, tk, _AUTO_BLOCK, intervals="only")
    except Exception:   # noqa: BLE001 — not index arithmetic, or it fails on index arrays: kept as
        found = False   # "not analysable"; the call itself evaluates fn and reports its errors
    keep(_AUTO, key, found, _AUTO_KEPT, _AUTO_LOCK)
    return found or None


_AUTO_BLOCK = 128
_PLAIN = (int, float, bool, str, bytes, type(None), np.integer, np.floating, np.bool_)


def _plain_value(value):
    """(type name, value) for a plain immutable value or a tuple of them (the type kept: 1, 1.0 and True
    are equal as keys but not as index arithmetic); None for anything else."""
    if isinstance(value, _PLAIN):
        return (type(value).__name__, value)
    if type(value) is tuple:
        parts = tuple(_plain_value(x) for x in value)
        return None if any(p is None for p in parts) else ("tuple", parts)
    return None


def _frozen_inputs(fn):
    """(code, closure values, globals read, module attributes read, defaults) when they are all plain
    immutable values, else None: what an automatic analysis is kept by (see _AUTO). Names are those of
    the code and of its nested code objects (comprehensions, inner lambdas); a module read as a global
    is not a key itself, the plain values of its attributes the code may read are."""
    code = getattr(fn, "__code__", None)
    if code is None or not isinstance(fn, types.FunctionType):
        return None
    values = []
    for cell in fn.__closure__ or ():
        try:
            value = _plain_value(cell.cell_contents)
        except ValueError:   # an empty cell
            return None
        if value is None:
            return None
        values.append(value)
    glob = fn.__globals__
    names = _names_read(code)
    modules = []
    for name in names:
        if name in glob:
            if isinstance(glob[name], types.ModuleType):
                modules.append(glob[name])
                continue
            value = _plain_value(glob[name])
            if value is None:
                return None
            values.append((name, value))
    # A module's attributes the code may read (`cfg.WINDOW`): plain values are keys like globals;
    # functions, classes and modules (np.where, torch.float32) are taken as fixed; anything else
    # (an array in a module) leaves the function uncached.
    seen = {id(m) for m in modules}
    while modules:
        module = modules.pop()
        for name in names:
            try:
                value = getattr(module, name)
            except Exception:   # noqa: BLE001 — not an attribute of this module (or a lazy import failing)
                continue
            if isinstance(value, types.ModuleType):
                if id(value) not in seen:
                    seen.add(id(value))
                    modules.append(value)
                continue
            plain = _plain_value(value)
            if plain is not None:
                values.append((module.__name__, name, plain))
            elif not callable(value):
                return None
    defaults = _plain_value(fn.__defaults__ or ())
    kwdefaults = _plain_value(tuple(sorted((fn.__kwdefaults__ or {}).items())))
    if defaults is None or kwdefaults is None:
        return None
    return (code, tuple(values), defaults, kwdefaults)


def reads_module_state(fn) -> bool:
    """Whether a plain function reads a value of a global or of a module's attribute that could change
    between calls (anything but modules, functions and classes: `W` in `q - kv <= W`, `cfg.WINDOW`),
    in its own code or its nested code objects. torch.compile guards what the trace reads, and a
    mask function's analysis runs beside the trace (kernels/route.py, _traced_plan): such a
    function's key ranges could be baked into a graph that a later value no longer matches."""
    code = getattr(fn, "__code__", None)
    if code is None or not isinstance(fn, types.FunctionType):
        return False
    glob = fn.__globals__
    names = _names_read(code)
    modules, seen = [], set()
    for name in names:
        if name in glob:
            value = glob[name]
            if isinstance(value, types.ModuleType):
                modules.append(value)
                seen.add(id(value))
            elif not callable(value):
                return True
    while modules:
        module = modules.pop()
        for name in names:
            try:
                value = getattr(module, name)
            except Exception:   # noqa: BLE001 — not an attribute of this module
                continue
            if isinstance(value, types.ModuleType):
                if id(value) not in seen:
                    seen.add(id(value))
                    modules.append(value)
            elif not callable(value) and module.__name__.split(".")[0] not in ("numpy", "torch", "math"):
                return True
    return False


def _names_read(code) -> tuple:
    """The global and attribute names code reads, its nested code objects' too (a comprehension or
    an inner lambda is a code object of its own in co_consts, with its own co_names)."""
    names, stack = [], [code]
    while stack:
        c = stack.pop()
        names.extend(c.co_names)
        stack.extend(x for x in c.co_consts if isinstance(x, types.CodeType))
    return tuple(dict.fromkeys(names))


def captured_tensors(fn, *, depth: int = 6):
    """[(what, tensor)]: the tensors a function reads from outside its arguments — closure cells,
    globals it names, defaults, a functools.partial's arguments, an object's attributes — following
    functions it holds (torch's and_masks/or_masks keep their parts in a closure)."""
    found, seen = [], set()

    def visit(value, what, level):
        if id(value) in seen or level > depth:
            return
        seen.add(id(value))
        if compat.is_torch_array(value):
            found.append((what, value))
        elif isinstance(value, (list, tuple)):
            for i, x in enumerate(value):
                visit(x, f"{what}[{i}]", level + 1)
        elif isinstance(value, dict):
            for k, x in list(value.items())[:256]:
                visit(x, f"{what}[{k!r}]", level + 1)
        elif isinstance(value, types.FunctionType):
            name = value.__name__
            for var, cell in zip(value.__code__.co_freevars, value.__closure__ or ()):
                try:
                    visit(cell.cell_contents, f"{var!r} captured by {name}", level + 1)
                except ValueError:   # an empty cell
                    pass
            for var in _names_read(value.__code__):
                if var in value.__globals__ and not isinstance(value.__globals__[var], types.ModuleType):
                    visit(value.__globals__[var], f"the global {var!r} read by {name}", level + 1)
            visit(value.__defaults__ or (), f"{name}'s defaults", level + 1)
        elif hasattr(value, "func") and hasattr(value, "args"):   # functools.partial
            visit(value.func, what, level + 1)
            visit(value.args, f"{what}'s arguments", level + 1)
            visit(dict(value.keywords or {}), f"{what}'s keywords", level + 1)
        elif callable(value) and hasattr(value, "__dict__") and not isinstance(value, type):
            for k, x in vars(value).items():
                visit(x, f"{what}.{k}", level + 1)

    visit(fn, "mask_mod", 0)
    return found


class _NotIndexArithmetic(Exception):
    """The function did something interval arithmetic cannot follow."""


def _on_intervals(fn, batch, heads, q_lo, q_hi, k_lo, k_hi):
    """Block kinds of fn proved by interval arithmetic on each block's index ranges: FULL where every
    index in the block is allowed, EMPTY where none is, PARTIAL where the arithmetic cannot tell."""
    b = _Interval(np.int64(0), np.int64(batch - 1))
    h = _Interval(np.int64(0), np.int64(heads - 1))
    q = _Interval(q_lo, q_hi - 1)
    kv = _Interval(k_lo, k_hi - 1)
    try:
        with np.errstate(all="ignore"):
            result = fn(b, h, q, kv)
    except _NotIndexArithmetic:
        raise
    except Exception as error:   # noqa: BLE001 — anything it cannot follow: evaluate instead
        raise _NotIndexArithmetic(str(error)) from None
    if isinstance(result, (bool, np.bool_)):
        result = _Truth(np.bool_(result), np.bool_(not result))
    if not isinstance(result, _Truth):
        raise _NotIndexArithmetic(f"returned {type(result).__name__}")
    shape = np.broadcast_shapes(q_lo.shape, k_lo.shape)
    return _kinds(np.broadcast_to(result.always, shape), ~np.broadcast_to(result.never, shape))


def _as_interval(x):
    if isinstance(x, _Interval):
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise _NotIndexArithmetic(f"an operand {type(x).__name__}")
    return _Interval(np.int64(x), np.int64(x))


class _Interval:
    """Integer intervals [lo, hi] (broadcasting arrays): every value an index can take in a block."""

    __array_ufunc__ = None   # NumPy defers to the reflected operators below

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __add__(self, other):
        o = _as_interval(other)
        return _Interval(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __sub__(self, other):
        o = _as_interval(other)
        return _Interval(self.lo - o.hi, self.hi - o.lo)

    def __rsub__(self, other):
        return _as_interval(other) - self

    def __neg__(self):
        return _Interval(-self.hi, -self.lo)

    def __pos__(self):
        return self

    def __abs__(self):
        lo = np.where((self.lo <= 0) & (self.hi >= 0), 0, np.minimum(abs(self.lo), abs(self.hi)))
        return _Interval(lo, np.maximum(abs(self.lo), abs(self.hi)))

    def __mul__(self, other):
        o = _as_interval(other)
        corners = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return _Interval(np.minimum.reduce(np.broadcast_arrays(*corners)),
                         np.maximum.reduce(np.broadcast_arrays(*corners)))

    __rmul__ = __mul__

    def __floordiv__(self, other):
        o = _as_interval(other)
        if not (np.all(o.lo == o.hi) and np.all(o.lo != 0)):
            raise _NotIndexArithmetic("division by an index")
        d = o.lo
        a, c = self.lo // d, self.hi // d   # floor division is monotone in the dividend
        return _Interval(np.minimum(a, c), np.maximum(a, c))

    def __mod__(self, other):
        o = _as_interval(other)
        if not (np.all(o.lo == o.hi) and np.all(o.lo > 0)):
            raise _NotIndexArithmetic("modulo by an index or a non-positive number")
        m = o.lo
        one_period = self.lo // m == self.hi // m
        return _Interval(np.where(one_period, self.lo % m, 0), np.where(one_period, self.hi % m, m - 1))

    def _compare(self, other, op):
        o = _as_interval(other)
        if op == "<":
            return _Truth(self.hi < o.lo, self.lo >= o.hi)
        if op == "<=":
            return _Truth(self.hi <= o.lo, self.lo > o.hi)
        if op == ">":
            return _Truth(self.lo > o.hi, self.hi <= o.lo)
        if op == ">=":
            return _Truth(self.lo >= o.hi, self.hi < o.lo)
        point = (self.lo == self.hi) & (o.lo == o.hi) & (self.lo == o.lo)
        apart = (self.hi < o.lo) | (o.hi < self.lo)
        return _Truth(point, apart) if op == "==" else _Truth(apart, point)

    def __lt__(self, other):
        return self._compare(other, "<")

    def __le__(self, other):
        return self._compare(other, "<=")

    def __gt__(self, other):
        return self._compare(other, ">")

    def __ge__(self, other):
        return self._compare(other, ">=")

    def __eq__(self, other):
        return self._compare(other, "==")

    def __ne__(self, other):
        return self._compare(other, "!=")

    __hash__ = None

    def __bool__(self):
        raise _NotIndexArithmetic("an index used as a truth value")

    def __index__(self):
        raise _NotIndexArithmetic("an index used to index")

    def __getattr__(self, name):
        raise _NotIndexArithmetic(f"an index's .{name}")


class _Truth:
    """What a comparison says over a block: always (every index allowed), never (none allowed)."""

    __array_ufunc__ = None

    def __init__(self, always, never):
        self.always, self.never = always, never

    def __and__(self, other):
        o = _as_truth(other)
        return _Truth(self.always & o.always, self.never | o.never)

    __rand__ = __and__

    def __or__(self, other):
        o = _as_truth(other)
        return _Truth(self.always | o.always, self.never & o.never)

    __ror__ = __or__

    def __invert__(self):
        return _Truth(self.never, self.always)

    def __xor__(self, other):
        o = _as_truth(other)
        return _Truth((self.always & o.never) | (self.never & o.always), (self.always & o.always) | (self.never & o.never))

    __rxor__ = __xor__

    def __eq__(self, other):
        return ~(self ^ other)

    def __ne__(self, other):
        return self ^ other

    __hash__ = None

    def __bool__(self):
        raise _NotIndexArithmetic("a comparison used as a truth value")

    def __getattr__(self, name):
        raise _NotIndexArithmetic(f"a comparison's .{name}")


def _as_truth(x):
    if isinstance(x, _Truth):
        return x
    if isinstance(x, (bool, np.bool_)):
        return _Truth(np.bool_(x), np.bool_(not x))
    raise _NotIndexArithmetic(f"an operand {type(x).__name__}")


def catalogue(t: int) -> dict[str, MaskMod]:
    """One example of every mask in the catalogue, sized for length t (what `qkv masks` draws)."""
    w = max(1, t // 8)
    cuts = np.round(np.array([0.15, 0.5, 0.7]) * t).astype(int)     # four documents of uneven length
    docs = np.searchsorted(cuts, np.arange(t), side="right")
    return {
        "causal": causal(),
        "sliding window": sliding_window(w),
        "sliding window (both sides)": sliding_window(w, w),
        "dilated window": dilated_window(2 * w, 0, 2),
        "global tokens + window": global_tokens(max(1, t // 16)) | sliding_window(w, w),
        "prefix-LM": prefix_lm(t // 4),
        "document": document(docs),
        "document + causal": document(docs) & causal(),
        "sinks + window": sinks(max(1, t // 32)) | sliding_window(w),
        "chunked local": chunked(max(1, t // 4)) & causal(),
    }
