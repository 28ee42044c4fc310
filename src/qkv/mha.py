"""Multi-head attention: W_Q, W_K, W_V projections, heads, core attention, W_O — and a KV cache.

As in “Attention의 projection: Q·K·V와 멀티 헤드”: X (T×D) → Q = X·W_Q, K = X·W_K, V = X·W_V → each seen as T×H×Dh (a reshape) →
attention per head → heads concatenated, H (T×H·Dv) → Y = H·W_O. The residual R + Y is
`qkv.residual`. Projections act on each token alone; only the core attention mixes tokens.

Weights follow the row-vector convention: ``x @ W`` with W shaped (d_in, d_out). torch's
nn.Linear stores (d_out, d_in); `MultiHeadAttention.from_torch` transposes explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ._backend import is_numpy, is_torch, namespace, shape_str
from .attention import attention
from .attention import padding_mask as qkv_padding_mask
from .heads import merge_heads, split_heads
from .rope import RoPE
from .trace import (CONCAT, K_ROTATED, MEMORY, Q_ROTATED, ROPE_ANGLES, W_O, X, Y, Recorder, emit)

__all__ = ["MultiHeadAttention", "HeadWeights", "KVCache"]


class HeadWeights(NamedTuple):
    """One head's own slices: w_q (D, Dk), w_k (Dkv_in, Dk), w_v (Dkv_in, Dv), w_o (Dv, D_out)."""

    w_q: Any
    w_k: Any
    w_v: Any
    w_o: Any
    b_q: Any = None
    b_k: Any = None
    b_v: Any = None


@dataclass(frozen=True, eq=False)
class MultiHeadAttention:
    """Weights of one multi-head attention layer; call it to run it.

    w_q (D, H·Dk), w_k (Dkv_in, G·Dk), w_v (Dkv_in, G·Dv), w_o (H·Dv, D_out); biases, when
    given, b_q (H·Dk,), b_k (G·Dk,), b_v (G·Dv,), b_o (D_out,). Columns are grouped by head:
    columns h·Dk … (h+1)·Dk − 1 of w_q belong to head h. n_kv_heads = G (default H); H % G == 0
    (G < H is grouped-query attention, G = 1 multi-query attention).

    rope: a `qkv.rope.RoPE` rotating q and k heads after projection (self-attention only), by
    positions 0 … T−1 offset by the KV cache's length (or the positions= given to the call).
    q_norm, k_norm: a norm over each query / key head's Dk columns (an `RMSNorm` or `LayerNorm` of
      width Dk), applied after the projection and before RoPE (Qwen3, Gemma 3, OLMo 2), or None.
    scale: multiplies q·kᵀ (default 1/√Dk; Gemma 2/3: query_pre_attn_scalar^−½); a call's scale= wins.
    score_mod: applied to every scaled score before the mask and softmax, e.g.
      `qkv.masks.soft_cap(50.0)` (Gemma 2's attention logit soft-capping); None for none.
    """

    w_q: Any
    w_k: Any
    w_v: Any
    w_o: Any
    n_heads: int
    n_kv_heads: int | None = None
    b_q: Any = None
    b_k: Any = None
    b_v: Any = None
    b_o: Any = None
    rope: RoPE | None = None
    q_norm: Any = None
    k_norm: Any = None
    scale: float | None = None
    score_mod: Any = None
    _xp: Any = field(default=None, init=False, repr=False)
    _w_qkv: Any = field(default=None, init=False, repr=False)   # set by `fused`: [W_Q | W_K | W_V]
    _b_qkv: Any = field(default=None, init=False, repr=False)
    # set by `single`: (i, H) when this one-head layer is head i of an H-head layer. A mask array with
    # an H-long head axis is read at head i (the full layer's mask passes unchanged)
    _head_of: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        xp = namespace(w_q=self.w_q, w_k=self.w_k, w_v=self.w_v, w_o=self.w_o,
                       b_q=self.b_q, b_k=self.b_k, b_v=self.b_v, b_o=self.b_o)
        object.__setattr__(self, "_xp", xp)
        h = self.n_heads
        if isinstance(h, bool) or not isinstance(h, int) or h < 1:
            raise ValueError(f"n_heads must be a positive integer, got {h!r}")
        g = h if self.n_kv_heads is None else self.n_kv_heads
        if isinstance(g, bool) or not isinstance(g, int) or g < 1 or h % g:
            raise ValueError(f"n_kv_heads must be a positive divisor of n_heads={h}, got {self.n_kv_heads!r}")
        object.__setattr__(self, "n_kv_heads", g)
        for name in ("w_q", "w_k", "w_v", "w_o"):
            w = getattr(self, name)
            if w.ndim != 2:
                raise ValueError(f"{name} must be a matrix (d_in, d_out), got shape {shape_str(w.shape)}")
        for name, heads in (("w_q", h), ("w_k", g), ("w_v", g)):
            width = getattr(self, name).shape[1]
            if width % heads:
                raise ValueError(f"{name} has shape {shape_str(getattr(self, name).shape)}: its {width} columns "
                                 f"do not split into {heads} heads")
        if self.w_q.shape[1] // h != self.w_k.shape[1] // g:
            raise ValueError(f"w_q has shape {shape_str(self.w_q.shape)} and w_k has shape "
                             f"{shape_str(self.w_k.shape)}: query and key heads must have the same width "
                             f"(got {self.w_q.shape[1] // h} and {self.w_k.shape[1] // g})")
        if self.w_v.shape[0] != self.w_k.shape[0]:
            raise ValueError(f"w_v has shape {shape_str(self.w_v.shape)} but w_k has shape "
                             f"{shape_str(self.w_k.shape)}: keys and values read the same input width")
        if self.w_o.shape[0] != h * self.d_v:
            raise ValueError(f"w_o has shape {shape_str(self.w_o.shape)} but the {h} concatenated heads have "
                             f"width {h * self.d_v} (expected ({h * self.d_v}, D_out))")
        for name, width in (("b_q", self.w_q.shape[1]), ("b_k", self.w_k.shape[1]),
                            ("b_v", self.w_v.shape[1]), ("b_o", self.w_o.shape[1])):
            b = getattr(self, name)
            if b is not None and tuple(b.shape) != (width,):
                raise ValueError(f"{name} has shape {shape_str(b.shape)}, expected ({width},)")
        for name in ("q_norm", "k_norm"):
            norm = getattr(self, name)
            if norm is not None and (not callable(norm) or tuple(getattr(norm, "weight", np.zeros(0)).shape) != (self.d_k,)):
                raise ValueError(f"{name} must be a norm (RMSNorm or LayerNorm) over a head's {self.d_k} columns")
        if self.scale is not None and (isinstance(self.scale, bool) or not isinstance(self.scale, (int, float))
                                       or not np.isfinite(self.scale) or self.scale <= 0):
            raise ValueError(f"scale must be a finite positive number or None, got {self.scale!r}")
        if self.score_mod is not None and not callable(self.score_mod):
            raise TypeError(f"score_mod must be a function (score, b, h, q_idx, kv_idx) -> score, got "
                            f"{type(self.score_mod).__name__}")
        if self.rope is not None:
            if not isinstance(self.rope, RoPE):
                raise TypeError(f"rope must be a qkv.rope.RoPE, got {type(self.rope).__name__}")
            if self.rope.head_dim != self.d_k:
                raise ValueError(f"rope rotates heads of width {self.rope.head_dim} but the query/key heads have "
                                 f"width {self.d_k}")

    # ------------------------------------------------------------------ sizes
    @property
    def d_model(self) -> int:
        """D: width of the query-side input x."""
        return int(self.w_q.shape[0])

    @property
    def d_kv_in(self) -> int:
        """Width of the key/value-side input (memory in cross-attention; D in self-attention)."""
        return int(self.w_k.shape[0])

    @property
    def d_k(self) -> int:
        return int(self.w_q.shape[1]) // self.n_heads

    @property
    def d_v(self) -> int:
        return int(self.w_v.shape[1]) // self.n_kv_heads

    @property
    def d_out(self) -> int:
        return int(self.w_o.shape[1])

    # ------------------------------------------------------------------ constructors
    @classmethod
    def random(cls, d_model: int, n_heads: int, *, n_kv_heads: int | None = None, d_k: int | None = None,
               d_v: int | None = None, d_kv_in: int | None = None, d_out: int | None = None,
               bias: bool = True, seed: int = 0, dtype: Any = None,
               rope: RoPE | None = None, like: Any = None) -> "MultiHeadAttention":
        """Random weights, N(0, 1/fan_in), reproducible from ``seed``.

        d_k, d_v default to d_model // n_heads; d_kv_in and d_out default to d_model.
        like: an array (NumPy or torch, e.g. the x you will call the layer with); the weights are
          made in its library, on its device, with its dtype (unless dtype= is given). Without it,
          NumPy arrays. The numbers are the same either way (drawn by NumPy from ``seed``, then
          converted), so ``random(…, like=torch_x)`` equals ``random(…)`` up to the dtype.
        dtype: the weights' dtype (a NumPy dtype, or a torch dtype with a torch ``like``); default
          float64, or like's dtype.
        """
        if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
            raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
        if d_k is None or d_v is None:
            if d_model % n_heads:
                raise ValueError(f"d_model={d_model} does not split into n_heads={n_heads} heads; "
                                 "pass d_k and d_v explicitly")
        g = n_heads if n_kv_heads is None else n_kv_heads
        d_k = d_model // n_heads if d_k is None else d_k
        d_v = d_model // n_heads if d_v is None else d_v
        d_kv_in = d_model if d_kv_in is None else d_kv_in
        d_out = d_model if d_out is None else d_out
        rng = np.random.default_rng(seed)
        convert = _converter(like, dtype)

        def matrix(rows: int, cols: int):
            return convert(rng.standard_normal((rows, cols)) / np.sqrt(rows))

        def vector(n: int):
            return convert(0.1 * rng.standard_normal(n)) if bias else None

        return cls(matrix(d_model, n_heads * d_k), matrix(d_kv_in, g * d_k), matrix(d_kv_in, g * d_v),
                   matrix(n_heads * d_v, d_out), n_heads, g if n_kv_heads is not None else None,
                   vector(n_heads * d_k), vector(g * d_k), vector(g * d_v), vector(d_out), rope=rope)

    @classmethod
    def fused(cls, w_qkv, w_o, n_heads: int, n_kv_heads: int | None = None, *, b_qkv=None, b_o=None,
              rope: RoPE | None = None) -> "MultiHeadAttention":
        """A layer whose W_Q, W_K, W_V are stored side by side: w_qkv (D, H·Dk + G·Dk + G·Dv) =
        [W_Q | W_K | W_V] (BERT's and GPT-2's layout), b_qkv likewise; Dv = w_o's rows / H.

        w_q, w_k, w_v (and the biases) are views of w_qkv, so nothing is copied; self-attention then
        projects with one matmul over all tokens. Everything else (heads, traces, the cache) is as for
        separate matrices, and the numbers are the same.
        """
        g = n_heads if n_kv_heads is None else n_kv_heads
        if getattr(w_qkv, "ndim", None) != 2 or getattr(w_o, "ndim", None) != 2:
            raise ValueError("w_qkv and w_o must be matrices (d_in, d_out)")
        if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1 or \
                isinstance(g, bool) or not isinstance(g, int) or g < 1:
            raise ValueError(f"n_heads and n_kv_heads must be positive integers, got {n_heads!r}, {n_kv_heads!r}")
        d_v, rest = divmod(int(w_o.shape[0]), n_heads)
        d_k, rest_k = divmod(int(w_qkv.shape[1]) - g * d_v, n_heads + g)
        if rest or rest_k or d_k < 1 or d_v < 1:
            raise ValueError(f"w_qkv has shape {shape_str(w_qkv.shape)} and w_o {shape_str(w_o.shape)}: the columns "
                             f"do not split into {n_heads} query heads, {g} key heads and {g} value heads")
        q, k = n_heads * d_k, g * d_k

        def split(a):
            return (None, None, None) if a is None else (a[..., :q], a[..., q:q + k], a[..., q + k:])

        layer = cls(*split(w_qkv), w_o, n_heads, n_kv_heads, *split(b_qkv), b_o, rope)
        object.__setattr__(layer, "_w_qkv", w_qkv)
        object.__setattr__(layer, "_b_qkv", b_qkv)
        return layer

    @classmethod
    def from_torch(cls, module: Any, *, detach: bool = True) -> "MultiHeadAttention":
        """Weights of a ``torch.nn.MultiheadAttention``, transposed to the row-vector convention.

        The result holds torch tensors (detached by default; detach=False keeps them views of the
        module's parameters, so gradients reach them); call it with torch inputs.
        """
        import torch

        def own(t):
            return t.detach() if detach else t

        if not isinstance(module, torch.nn.MultiheadAttention):
            raise TypeError(f"expected torch.nn.MultiheadAttention, got {type(module).__name__}")
        d = module.embed_dim
        if module._qkv_same_embed_dim:
            w_q, w_k, w_v = own(module.in_proj_weight).split(d, dim=0)   # each (out, in)
        else:
            w_q, w_k, w_v = (own(module.q_proj_weight), own(module.k_proj_weight),
                             own(module.v_proj_weight))
        if module.kdim != module.vdim:
            raise ValueError(f"kdim={module.kdim} and vdim={module.vdim} differ; qkv reads keys and values "
                             "from one memory, so they must be equal")
        b_q = b_k = b_v = b_o = None
        if module.in_proj_bias is not None:
            b_q, b_k, b_v = own(module.in_proj_bias).split(d)
        if module.out_proj.bias is not None:
            b_o = own(module.out_proj.bias)
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn are not supported")
        return cls(w_q.T, w_k.T, w_v.T, own(module.out_proj.weight).T, module.num_heads,
                   b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o)

    # ------------------------------------------------------------------ heads
    def head(self, i: int) -> HeadWeights:
        """Head i's own projections: the columns of w_q/w_k/w_v and the rows of w_o it owns.

        Running every head with its own slices and concatenating the results equals the fused
        computation: one matrix with columns grouped by head is H matrices side by side.
        """
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.n_heads:
            raise ValueError(f"head index must be in [0, {self.n_heads}), got {i!r}")
        j = i // (self.n_heads // self.n_kv_heads)  # its key/value head
        qs, ks, vs, os = (slice(i * self.d_k, (i + 1) * self.d_k), slice(j * self.d_k, (j + 1) * self.d_k),
                          slice(j * self.d_v, (j + 1) * self.d_v), slice(i * self.d_v, (i + 1) * self.d_v))

        def part(b, s):
            return None if b is None else b[s]

        return HeadWeights(self.w_q[:, qs], self.w_k[:, ks], self.w_v[:, vs], self.w_o[os, :],
                           part(self.b_q, qs), part(self.b_k, ks), part(self.b_v, vs))

    def single(self, i: int) -> "MultiHeadAttention":
        """Head i alone as a one-head layer: its slices (see `head`) and every option of this layer (RoPE,
        q/k norms, scale, score_mod). Its output is head i's share of y (b_O, shared, is left out).

        What differs per head stays head i's: ALiBi's slope i, row i of T5's bias table, a score function
        called with h + i (it runs as head 0), and a mask array whose head axis (−3) has H entries —
        the full layer's mask (…, H, Tq, Tk) may be passed unchanged — read at head i."""
        own = self.head(i)
        layer = MultiHeadAttention(own.w_q, own.w_k, own.w_v, own.w_o, 1, b_q=own.b_q, b_k=own.b_k, b_v=own.b_v,
                                   rope=self.rope, q_norm=self.q_norm, k_norm=self.k_norm,
                                   scale=self.d_k ** -0.5 if self.scale is None else self.scale,
                                   score_mod=_score_mod_of_head(self.score_mod, i, self.n_heads))
        # per-head things stay head i's: a one-head layer runs as head 0, so its score_mod is head i's
        # (ALiBi's slope, T5's table row, a function's h shifted) and a per-head mask is read at head i
        outer = (self._head_of[0] + i, self._head_of[1]) if self._head_of is not None else (i, self.n_heads)
        object.__setattr__(layer, "_head_of", outer)
        return layer

    # ------------------------------------------------------------------ forward
    def project(self, x, memory=None, *, record: Recorder | None = None):
        """Q, K, V split into heads: q (…, H, Tq, Dk), k (…, G, Tk, Dk), v (…, G, Tk, Dv).

        Queries come from x (…, Tq, D); keys and values from memory (…, Tk, Dkv_in), or from x
        itself when memory is None (self-attention).
        """
        self._check_input("x", x, self.d_model, "w_q")
        if memory is not None:
            self._check_input("memory", memory, self.d_kv_in, "w_k")
        elif self.d_kv_in != self.d_model:
            raise ValueError(f"self-attention needs w_k to read width {self.d_model}, but w_k has shape "
                             f"{shape_str(self.w_k.shape)}; pass memory= for cross-attention")
        x = emit(record, X, x, formula="X")
        if memory is not None:
            memory = emit(record, MEMORY, memory, formula="M_enc")
        source = x if memory is None else memory
        heads = {"q": self.n_heads, "k": self.n_kv_heads, "v": self.n_kv_heads}
        fused = None
        if self._w_qkv is not None and memory is None and record is None:
            fused = _matmul(x, self._w_qkv)                               # (…, T, H·Dk + G·Dk + G·Dv): one matmul
            if self._b_qkv is not None:
                fused = _add_in_place(fused, self._b_qkv)
        out = []
        start = 0
        for name, inputs, w, b in (("q", x, self.w_q, self.b_q), ("k", source, self.w_k, self.b_k),
                                   ("v", source, self.w_v, self.b_v)):
            w = emit(record, f"w_{name}", w, formula=f"W_{name.upper()}")
            if fused is not None:                                         # this projection's columns of it
                projected, start = fused[..., start:start + w.shape[1]], start + w.shape[1]
            else:
                projected = _matmul(inputs, w) if b is None else _matmul(inputs, w) + b   # (…, T, heads·Dh)
            projected = emit(record, name, projected, formula=f"{name.upper()} = X·W_{name.upper()}" + (" + b" if b is not None else ""))
            split = split_heads(projected, heads[name])                   # (…, heads, T, Dh)
            split = emit(record, f"{name}_heads", split, formula=f"{name.upper()} (T×d) → T×h×d_h")
            norm = self.q_norm if name == "q" else self.k_norm if name == "k" else None
            if norm is not None:                                          # each head's row normalised alone
                split = emit(record, f"{name}_normed", norm(split), formula=f"N({name.upper()}ₕ) per head")
            out.append(split)
        return tuple(out)

    def __call__(self, x, memory=None, *, mask=None, causal: bool = False, cache: "KVCache | None" = None,
                 lengths=None, positions=None, scale: float | None = None, return_weights: bool = False,
                 record: Recorder | None = None):
        """Multi-head attention of x over itself (self-attention) or over memory (cross-attention).

        Args:
          x: (…, Tq, D) queries' input, one row per token.
          memory: (…, Tk, Dkv_in) keys' and values' input; None for self-attention.
          mask: boolean, broadcastable to (…, H, Tq, Tk); True = may attend.
          causal: block future keys, aligned bottom-right (with a cache: the new tokens come last).
          lengths: (B,) integers, a right-padded batch of self-attention, x (B, T, D): sequence b
            attends over its first lengths[b] tokens only; its padded query rows give zero heads
            (y = b_O there). NumPy runs sequences of equal length together with no mask at all
            (no scores are computed for padding); otherwise it is `qkv.padding_mask`.
          cache: a `KVCache`; this call's keys and values are appended to it and the queries
            attend over everything it holds (incremental decoding). The cache changes only when
            the call succeeds.
          positions: integer positions (Tq,) or (B, Tq) for RoPE; default cache.length + 0 … Tq−1.
          scale: multiplies q·kᵀ before the softmax; default 1/√Dk (as `qkv.attention`).
          return_weights: also return the weights (…, H, Tq, Tk).
          record: a recorder (e.g. `qkv.Trace`) handed every intermediate.

        Returns:
          y (…, Tq, D_out) = concat(heads)·W_O (+ b_O), or (y, weights).
        """
        if self._head_of is not None and mask is not None:
            mask = _mask_of_head(mask, *self._head_of)
        q, k, v = self.project(x, memory, record=record)
        if self.rope is not None:
            q, k = self._rotate(q, k, memory, cache, positions, record)
        elif positions is not None:
            raise ValueError("positions= is only used with rope=; this layer has no RoPE")
        staged = None
        scale = self.scale if scale is None else scale
        if cache is not None:
            k, v, staged = cache._stage(k, v)
        if lengths is not None:
            if self.score_mod is not None:
                raise ValueError("lengths= does not take a layer with score_mod; fold the lengths into mask=")
            result = _attend_lengths(q, k, v, lengths, mask=mask, memory=memory, cache=cache, causal=causal,
                                     scale=scale, return_weights=return_weights, record=record)
        else:
            result = attention(q, k, v, mask, causal=causal, scale=scale, score_mod=self.score_mod,
                               return_weights=return_weights, record=record)
        if cache is not None:  # only now: a call that failed above leaves the cache as it was
            cache._commit(staged)
        heads_out = result[0] if return_weights else result           # (…, H, Tq, Dv)
        concat = merge_heads(heads_out)                                # (…, Tq, H·Dv)
        concat = emit(record, CONCAT, concat, formula="Concat(head₁, …, head_h)")
        w_o = emit(record, W_O, self.w_o, formula="W_O")
        y = _matmul(concat, w_o) if self.b_o is None else _add_in_place(_matmul(concat, w_o), self.b_o)
        y = emit(record, Y, y, formula="Y = Concat(heads)·W_O" + (" + b_O" if self.b_o is not None else ""))
        return (y, result[1]) if return_weights else y

    def _rotate(self, q, k, memory, cache, positions, record):
        """RoPE on q (…, H, Tq, Dk) and k (…, G, Tq, Dk): each row turned by its position's angles."""
        if memory is not None:
            raise ValueError("rope applies to self-attention; this call passes memory= (cross-attention)")
        if positions is None:
            start = 0 if cache is None else cache.length
            positions = np.arange(start, start + q.shape[-2])
        angles = self.rope.angles(positions)
        emit(record, ROPE_ANGLES, angles, formula="pos · θᵢ, θᵢ = θ^(−2i/d)")
        q = emit(record, Q_ROTATED, self.rope(q, positions), formula="Q·cos + rotate_half(Q)·sin")
        k = emit(record, K_ROTATED, self.rope(k, positions), formula="K·cos + rotate_half(K)·sin")
        return q, k

    def _check_input(self, name: str, a, width: int, weight: str) -> None:
        namespace(**{name: a, weight: getattr(self, weight)})
        if a.ndim < 2 or a.shape[-1] != width:
            raise ValueError(f"{name} has shape {shape_str(a.shape)} but {weight} has shape "
                             f"{shape_str(getattr(self, weight).shape)} (expected (…, T, {width}))")


def _score_mod_of_head(score_mod, i: int, heads: int):
    """score_mod as head i of `heads` sees it, for a one-head layer (which calls it with h = 0).

    The catalogue's per-head tables (ALiBi's slopes (H,), T5's biases (H, buckets)) keep row i alone (the
    C routes read them from `params`); soft-capping has no head; any other function is called with h + i.
    """
    from . import masks

    if score_mod is None:
        return None
    params = getattr(score_mod, "params", None)
    if isinstance(score_mod, masks.ScoreMod) and params is not None:
        if params[0] in ("alibi", "t5_relative_buckets") and len(params[1]) != heads:
            pass   # not one row per head of the layer: the shifted function below, whose check refuses it as the layer's
        elif params[0] == "alibi":
            return masks.alibi(params[1][i:i + 1])
        elif params[0] == "t5_relative_buckets":
            _, table, num_buckets, max_distance, bidirectional = params
            return masks.t5_relative_buckets(table[i:i + 1], num_buckets=num_buckets, max_distance=max_distance,
                                             bidirectional=bidirectional)
        if params[0] == "soft_cap":
            return score_mod

    def shifted(score, b, h, q_idx, kv_idx):
        return score_mod(score, b, h + i, q_idx, kv_idx)

    if isinstance(score_mod, masks.ScoreMod):
        # its table checks see the whole layer's heads (a table without one row per head is still refused)
        return masks.ScoreMod(f"{score_mod.name}, head {i}", score_mod.formula, shifted, relative=score_mod.relative,
                              shape=lambda batch, h, tq, tk: score_mod.check_shape(batch, heads, tq, tk))
    return shifted


def _mask_of_head(mask, i: int, heads: int):
    """A mask array broadcastable to the H-head layer's (…, H, Tq, Tk), as head i alone sees it: its head
    axis (−3) is kept at i:i+1 when it has H entries (a mask without one, or with one head, unchanged)."""
    shape = getattr(mask, "shape", None)
    if shape is None or len(shape) < 3 or heads == 1 or shape[-3] != heads:
        return mask
    return mask[..., i:i + 1, :, :]


def _converter(like, dtype):
    """A function turning a float64 NumPy array into like's library, device and dtype (see `random`)."""
    if like is None:
        target = np.dtype(np.float64 if dtype is None else dtype)
        return lambda a: a.astype(target)
    namespace(like=like)                                   # a NumPy array or a torch tensor, else TypeError
    if is_numpy(like):
        target = np.dtype(like.dtype if dtype is None else dtype)
        return lambda a: a.astype(target)
    import torch

    if dtype is None:
        target = like.dtype
    elif isinstance(dtype, torch.dtype):
        target = dtype
    else:                                                   # a NumPy dtype: torch's equivalent
        target = torch.from_numpy(np.zeros(0, dtype=np.dtype(dtype))).dtype
    if not target.is_floating_point:
        raise TypeError(f"like= has dtype {target}; weights need a floating-point dtype (pass dtype=)")
    return lambda a: torch.as_tensor(a, dtype=target, device=like.device)


# Sequences per attention call of a run of equal lengths: as many as keep one call's (b, H, T, T)
# scores within ~1 MiB of cache.
_ATTENTION_BYTES = 1 << 20


def _matmul(x, w):
    """x (…, T, d_in) @ w (d_in, d_out). NumPy: as one (rows, d_in) matrix — NumPy would otherwise run
    one small product per leading index (B of them), markedly slower than one big one."""
    if is_numpy(x) and x.ndim > 2 and x.flags.c_contiguous:
        return (x.reshape(-1, x.shape[-1]) @ w).reshape(x.shape[:-1] + (w.shape[-1],))
    return x @ w


def _add_in_place(fresh, bias):
    """fresh + bias, in place for a NumPy array this module just made (torch: out of place, autograd)."""
    if is_numpy(fresh):
        fresh += bias
        return fresh
    return fresh + bias


def _attend_lengths(q, k, v, lengths, *, mask, memory, cache, causal, return_weights, record, scale=None):
    """Self-attention of a right-padded batch: q (B, H, T, Dk), k (B, G, T, Dk), v (B, G, T, Dv), lengths (B,).

    Sequence b attends over its first lengths[b] tokens; rows of padded queries are zero (weights
    too). NumPy without a trace: the batch is cut into runs of equal length (a few sequences at a
    time, so the (b, H, L, L) scores stay in cache), each run attends over q[:, :, :L] and friends
    with no mask, and the padded rows stay zero — for the real rows exactly attention under
    `qkv.padding_mask(lengths, T)`, without scores for padding. Otherwise the padding mask itself.
    """
    if memory is not None or cache is not None or mask is not None:
        raise ValueError("lengths= is for self-attention over a right-padded batch, without memory=, cache= "
                         "or mask= (fold the lengths into the mask with qkv.padding_mask instead)")
    b, t = q.shape[0], q.shape[-2]
    lengths_np = np.asarray(lengths.detach().cpu() if is_torch(lengths) else lengths)
    if q.ndim != 4 or lengths_np.shape != (b,) or lengths_np.dtype.kind not in "iu":
        raise ValueError(f"lengths must be integers (B,) = ({b},) for q of shape (B, H, T, Dk), got "
                         f"{shape_str(lengths_np.shape)} {lengths_np.dtype} and q {shape_str(q.shape)}")
    if lengths_np.size and not 0 <= lengths_np.min() <= lengths_np.max() <= t:
        raise ValueError(f"lengths must lie in [0, T={t}], got {lengths_np.tolist()}")
    if record is not None or not is_numpy(q):
        xp = namespace(q=q)
        real = qkv_padding_mask(lengths_np, t, like=q)                     # (B, 1, 1, T): real keys
        result = attention(q, k, v, real, causal=causal, scale=scale, return_weights=return_weights, record=record)
        rows = xp.astype(xp.reshape(real, (b, 1, t, 1)), q.dtype)           # padded queries → 0
        return (result[0] * rows, result[1] * rows) if return_weights else result * rows
    out = np.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)
    weights = np.zeros(q.shape[:-1] + (t,), dtype=q.dtype) if return_weights else None
    start = 0
    while start < b:
        length = int(lengths_np[start])
        most = max(1, _ATTENTION_BYTES // max(1, q.shape[1] * length * length * q.dtype.itemsize))
        stop = start + 1
        while stop < b and stop - start < most and lengths_np[stop] == length:
            stop += 1
        run, real = slice(start, stop), slice(0, length)
        if length:
            if return_weights:
                out[run, :, real], weights[run, :, real, real] = attention(
                    q[run, :, real], k[run, :, real], v[run, :, real], causal=causal, scale=scale, return_weights=True)
            else:
                out[run, :, real] = attention(q[run, :, real], k[run, :, real], v[run, :, real], causal=causal, scale=scale)
        start = stop
    return (out, weights) if return_weights else out


class KVCache:
    """Keys (…, G, T, Dk) and values (…, G, T, Dv) of the tokens seen so far, for decoding.

    `append` adds a step's keys and values and returns everything held. NumPy (and torch under
    `torch.no_grad()` / `torch.inference_mode()`): storage grows by doubling, so a decode step costs
    O(T) (attention over T keys), not O(T²). torch tensors with autograd on are concatenated into new
    tensors instead, whether or not k and v need gradients (no in-place writes into anything a graph
    may have saved, so backward works through every cached step, also for a query that needs a
    gradient beside keys that do not). The cache is an explicit object the caller
    owns and passes to `MultiHeadAttention.__call__`; a call that fails leaves it as it was.
    """

    def __init__(self) -> None:
        self._k = None
        self._v = None
        self.length = 0

    @property
    def k(self):
        return None if self._k is None else self._k[..., : self.length, :]

    @property
    def v(self):
        return None if self._v is None else self._v[..., : self.length, :]

    def append(self, k, v):
        """Add k (…, G, t, Dk), v (…, G, t, Dv); return all keys and values (…, G, T, ·)."""
        keys, values, staged = self._stage(k, v)
        self._commit(staged)
        return keys, values

    def _stage(self, k, v):
        """Everything held plus k, v, without changing what the cache holds: (keys, values, staged).

        Only `_commit(staged)` makes them part of the cache. Writes into spare capacity beyond
        ``length`` are invisible until then.
        """
        xp = namespace(k=k, v=v)
        if k.ndim < 3 or v.ndim < 3 or tuple(k.shape[:-1]) != tuple(v.shape[:-1]):
            raise ValueError(f"k has shape {shape_str(k.shape)} and v has shape {shape_str(v.shape)}; expected "
                             "(…, G, t, Dk) and (…, G, t, Dv) with the same leading dimensions")
        if self._k is not None:
            namespace(k=k, cached=self._k)
            for name, new, held in (("k", k, self._k), ("v", v, self._v)):
                if tuple(new.shape[:-2]) != tuple(held.shape[:-2]) or new.shape[-1] != held.shape[-1]:
                    raise ValueError(f"{name} has shape {shape_str(new.shape)} but the cache holds "
                                     f"{shape_str(held.shape[:-2] + (self.length,) + held.shape[-1:])}")
                if new.dtype != held.dtype:
                    raise TypeError(f"{name} has dtype {new.dtype} but the cache holds {held.dtype}")
        needed = self.length + k.shape[-2]
        if self._needs_graph(k, v):
            if self._k is None:
                keys, values = k, v
            else:
                keys, values = xp.concat((self.k, k), axis=-2), xp.concat((self.v, v), axis=-2)
            return keys, values, (keys, values, needed)
        buffers = (self._k, self._v)
        if self._k is None or needed > self._k.shape[-2]:
            capacity = max(needed, 2 * (0 if self._k is None else self._k.shape[-2]), 16)
            buffers = (self._grow(xp, self._k, k, capacity), self._grow(xp, self._v, v, capacity))
        buffers[0][..., self.length:needed, :] = k
        buffers[1][..., self.length:needed, :] = v
        return buffers[0][..., :needed, :], buffers[1][..., :needed, :], (buffers[0], buffers[1], needed)

    def _commit(self, staged) -> None:
        self._k, self._v, self.length = staged

    def _snapshot(self):
        """What the cache holds now; `_commit(snapshot)` restores it exactly (later writes only ever go
        past ``length`` or into new buffers). A block uses it to undo a step whose later part failed."""
        return self._k, self._v, self.length

    def _needs_graph(self, k, v) -> bool:
        """torch tensors with autograd on: concatenate, never write in place. A graph may have saved
        what an earlier `append` returned even when k and v need no gradient (attention saves keys and
        values to differentiate a query that needs one), and a write into the same storage's spare
        capacity would make its backward fail ("modified by an inplace operation")."""
        if not is_torch(k):
            return False
        import torch

        return torch.is_grad_enabled()

    def _grow(self, xp, held, new, capacity: int):
        from ._backend import device

        buffer = xp.zeros(tuple(new.shape[:-2]) + (capacity, new.shape[-1]), dtype=new.dtype,
                          device=device(new))
        if held is not None:
            buffer[..., : self.length, :] = held[..., : self.length, :]
        return buffer
