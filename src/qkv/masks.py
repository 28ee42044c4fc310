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
from dataclasses import dataclass
from typing import Any, Callable

import array_api_compat
import numpy as np

from .kernels.call import EMPTY, FULL, PARTIAL

__all__ = [
    "MaskMod", "MaskInfo", "analyse", "ScoreMod", "EMPTY", "PARTIAL", "FULL", "dense_mask", "block_map",
    "causal", "sliding_window", "dilated_window", "global_tokens", "prefix_lm", "document", "sinks",
    "chunked", "and_masks", "or_masks", "alibi", "alibi_slopes", "soft_cap", "t5_relative_buckets",
    "t5_bucket", "catalogue",
]


def _xp(*arrays):
    return array_api_compat.array_namespace(*[a for a in arrays if hasattr(a, "shape")])


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
    """

    name = "mask"
    formula = ""
    relative = False
    band = None

    def __call__(self, b, h, q_idx, kv_idx):
        raise NotImplementedError

    def block_kinds(self, b, h, q_lo, q_hi, k_lo, k_hi):
        """EMPTY / PARTIAL / FULL per block (int8, broadcast of the bounds' shapes)."""
        return np.full(np.broadcast_shapes(np.shape(q_lo), np.shape(k_lo)), PARTIAL, np.int8)

    def key_ranges(self, tq: int, tk: int):
        """(lo, hi) int64 (Tq,): query q allows exactly keys lo[q] <= kv < hi[q]; None when unknown."""
        return None

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

    def __init__(self, name, formula, fn, kinds=None, relative=False, band=None, ranges=None):
        self.name, self.formula, self._fn, self._kinds, self.relative = name, formula, fn, kinds, relative
        self.band = band
        self._ranges = ranges

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


@dataclass(frozen=True)
class MaskInfo:
    """What one call knows about its mask function, read once (`analyse`) when the call is checked;
    the route and the kernel use this, never the function's attributes again.

    fn: the mask function itself (b, h, q_idx, kv_idx) -> bool.
    block_kinds: kinds(b, h, q_lo, q_hi, k_lo, k_hi) -> int8 EMPTY / PARTIAL / FULL, or None (a
      plain function: the kernel evaluates it block by block and skips blocks that come out empty).
    relative: allowed(q, kv) depends on kv − q only.
    band: (lo, hi): the mask is exactly lo <= kv − q <= hi (None on a side: unbounded), or None.
    key_ranges: (2, Tq) int64, row 0 the first allowed key and row 1 one past the last, the same for
      every batch and head; or None.
    """

    fn: Callable
    block_kinds: Callable | None
    relative: bool
    band: tuple | None
    key_ranges: np.ndarray | None


def analyse(mask_mod: Callable, tq: int, tk: int) -> MaskInfo:
    """The MaskInfo of a mask function for Tq queries and Tk keys (see MaskMod's protocol)."""
    kinds = getattr(mask_mod, "block_kinds", None)
    kinds = kinds if callable(kinds) else None
    ranges = getattr(mask_mod, "key_ranges", None)
    found = ranges(tq, tk) if callable(ranges) else None
    if found is not None:
        found = np.ascontiguousarray(np.stack([np.broadcast_to(np.asarray(x, dtype=np.int64), (tq,)) for x in found]))
        found.flags.writeable = False
    band = getattr(mask_mod, "band", None) if kinds is not None else None
    return MaskInfo(fn=mask_mod, block_kinds=kinds, relative=bool(getattr(mask_mod, "relative", False)) and
                    kinds is not None, band=None if band is None else tuple(band), key_ranges=found)


def _offsets(q_lo, q_hi, k_lo, k_hi):
    """The least and greatest kv_idx − q_idx over a block."""
    return k_lo - (q_hi - 1), (k_hi - 1) - q_lo


# --------------------------------------------------------------------------- masks
def causal(offset: int = 0) -> MaskMod:
    """kv_idx <= q_idx + offset: no key in the future. offset = Tk − Tq aligns bottom-right."""
    offset = _integer("offset", offset, minimum=None)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        low, high = _offsets(q_lo, q_hi, k_lo, k_hi)
        return _kinds(high <= offset, low <= offset)

    return _Mask("causal", f"kv ≤ q + {offset}" if offset else "kv ≤ q",
                 lambda b, h, q_idx, kv_idx: kv_idx <= q_idx + offset, kinds, relative=True, band=(None, offset),
                 ranges=lambda q, tq, tk: (0, q + offset + 1))


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


def global_tokens(n: int) -> MaskMod:
    """The first n tokens are global: they see every key and every query sees them
    (Longformer/BigBird). Combine with a window by `|`."""
    n = _integer("n", n)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        return _kinds((q_hi <= n) | (k_hi <= n), (q_lo < n) | (k_lo < n))

    return _Mask(f"global tokens ({n})", f"q < {n} or kv < {n}",
                 lambda b, h, q_idx, kv_idx: (q_idx < n) | (kv_idx < n), kinds)


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


def sinks(n: int) -> MaskMod:
    """Attention sinks (StreamingLLM): the first n keys are always visible. Combine with a window
    by `|`: sliding_window(W) | sinks(4)."""
    n = _integer("n", n)

    def kinds(b, h, q_lo, q_hi, k_lo, k_hi):
        return _kinds(np.broadcast_to(k_hi <= n, np.broadcast_shapes(q_lo.shape, k_lo.shape)),
                      np.broadcast_to(k_lo < n, np.broadcast_shapes(q_lo.shape, k_lo.shape)))

    return _Mask(f"sinks ({n})", f"kv < {n}", lambda b, h, q_idx, kv_idx: (kv_idx < n) & (q_idx >= 0), kinds)


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


def document(ids, kv_ids=None) -> MaskMod:
    """Document (segment) masking: a query sees only keys of its own document,
    ids[q] == kv_ids[kv] — block-diagonal for packed sequences. ids: (T,) or (B, T) integers,
    one per query position (and key position, unless kv_ids is given for Tq ≠ Tk). With
    sorted ids the kernel's cost is the sum of the documents' squares."""
    q_ids = _ids("ids", ids)
    k_ids = q_ids if kv_ids is None else _ids("kv_ids", kv_ids)
    def lookup(table, b, index, like):
        if array_api_compat.is_torch_array(like):
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

    return _Mask("document", "doc[q] = doc[kv]", fn, kinds, ranges=key_ranges)


def and_masks(*masks) -> MaskMod:
    """Allowed where every mask allows (block kinds: the least of theirs)."""
    return _combine(masks, "and", np.minimum, lambda a, b: a & b)


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

    def key_ranges(q, tq, tk):   # "and" of key ranges is their intersection; "or" is not a range
        if word != "and" or not all(callable(getattr(m, "key_ranges", None)) for m in masks):
            return None
        parts = [m.key_ranges(tq, tk) for m in masks]
        if any(part is None for part in parts):
            return None
        return (np.maximum.reduce([part[0] for part in parts]), np.minimum.reduce([part[1] for part in parts]))

    return _Mask(f" {word} ".join(names), f" {word} ".join(formulas), fn, kinds, relative=relative,
                 ranges=key_ranges)


# --------------------------------------------------------------------------- score functions
class ScoreMod:
    """A score function with a name and a formula (shown by the explainer)."""

    def __init__(self, name, formula, fn, params=None):
        self.name, self.formula, self._fn = name, formula, fn
        # ("alibi", slopes (H,)) or ("soft_cap", cap) for the catalogue's functions the C backward
        # computes with their derivatives (kernels/autograd.py); None for others
        self.params = params

    def __call__(self, score, b, h, q_idx, kv_idx):
        return self._fn(score, b, h, q_idx, kv_idx)

    def __repr__(self):
        return f"<score {self.name}: {self.formula}>"


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
    standard slopes, `alibi_slopes(H)`) or an array (H,)."""
    table = alibi_slopes(slopes) if isinstance(slopes, (int, np.integer)) else np.asarray(slopes, np.float64)
    if table.ndim != 1:
        raise ValueError(f"slopes must be a number of heads or an array (H,), got shape {table.shape}")
    cached = {}

    def fn(score, b, h, q_idx, kv_idx):
        slope = _table_on(table, score, cached)[h]
        return score + slope * (kv_idx - q_idx)

    return ScoreMod(f"ALiBi ({len(table)} heads)", "s + m_h·(kv − q)", fn, params=("alibi", table))


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
    learned biases (transformers stores its transpose, relative_attention_bias.weight)."""
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"table must be (H, num_buckets), got shape {table.shape}")
    num_buckets = table.shape[1] if num_buckets is None else num_buckets
    cached = {}

    def fn(score, b, h, q_idx, kv_idx):
        bucket = t5_bucket(_like_index(kv_idx - q_idx, score), num_buckets, max_distance, bidirectional)
        return score + _table_on(table, score, cached)[h, bucket]

    return ScoreMod(f"T5 relative buckets ({num_buckets})", "s + bias_h[bucket(kv − q)]", fn)


def _table_on(table: np.ndarray, like, cached: dict):
    """The table in like's array library and float dtype. Not cached for torch: flex_attention
    traces score functions, and a trace may not write to a dict outside it."""
    if array_api_compat.is_torch_array(like):
        import torch

        return torch.as_tensor(table, dtype=like.dtype, device=like.device)
    return table.astype(like.dtype, copy=False)


def _like_index(x, like):
    if array_api_compat.is_torch_array(like) and not array_api_compat.is_torch_array(x):
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
    value = mask_mod(np.int64(b), np.int64(h), q_idx, kv_idx)
    if array_api_compat.is_torch_array(value):
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


def _ids(name: str, ids) -> np.ndarray:
    if array_api_compat.is_torch_array(ids):
        ids = ids.detach().cpu().numpy()
    ids = np.asarray(ids)
    if ids.ndim not in (1, 2) or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name} must be integers shaped (T,) or (B, T), got dtype {ids.dtype} and shape {ids.shape}")
    return ids.astype(np.int64, copy=False)



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
