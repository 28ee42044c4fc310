"""The transformer block: norm, multi-head attention, residual R + Y, MLP — encoder, decoder, pre/post-norm.

    pre-norm  (GPT-2, Llama):   x ← x + Attn(N₁(x));   [x ← x + Cross(N_c(x), memory)];   x ← x + MLP(N₂(x))
    post-norm (BERT, 2017):     x ← N₁(x + Attn(x));   [x ← N_c(x + Cross(x, memory))];   x ← N₂(x + MLP(x))

Attention is `qkv.MultiHeadAttention` (RoPE, GQA and the KV cache live there), the residual is
`qkv.residual`, the norm a `LayerNorm` or `RMSNorm`, the MLP GELU (exact or tanh), ReLU or SwiGLU.
Everything is written against the array API: NumPy arrays (inference; float32 fast paths in place)
and torch tensors (autograd: a block whose weights are torch Parameters trains with torch).
Weights follow the row-vector convention, ``x @ W`` with W (d_in, d_out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ._backend import is_numpy, namespace, shape_str
from .activations import ACTIVATIONS, add_bias_and_activate
from .attention import residual
from .mha import KVCache, MultiHeadAttention
from .trace import Recorder, emit, scoped

__all__ = ["LayerNorm", "RMSNorm", "MLP", "MoE", "TransformerBlock"]

# NumPy runs the MLP on blocks of this many rows (tokens), so the (rows, F) hidden activations stay in cache.
_ROWS_PER_BLOCK = 128


def _check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) or not math.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number ≥ 0, got {eps!r}")
    return float(eps)


def _check_vector(name: str, vector, width: int | None = None) -> None:
    namespace(**{name: vector})
    if vector.ndim != 1 or (width is not None and vector.shape[0] != width):
        expected = "(D,)" if width is None else f"({width},)"
        raise ValueError(f"{name} has shape {shape_str(vector.shape)}, expected {expected}")


@dataclass(frozen=True, eq=False)
class LayerNorm:
    """y = (x − mean) / √(var + eps) · weight + bias over the last axis. weight (D,), bias (D,) or None."""

    weight: Any
    bias: Any = None
    eps: float = 1e-5

    def __post_init__(self) -> None:
        _check_vector("weight", self.weight)
        if self.bias is not None:
            _check_vector("bias", self.bias, self.weight.shape[0])
        object.__setattr__(self, "eps", _check_eps(self.eps))

    def __call__(self, x, *, out=None):
        """x (…, D) → (…, D). NumPy only: ``out`` may be x itself (computed in place)."""
        if is_numpy(x):
            mean = x.mean(axis=-1, keepdims=True)
            centered = np.subtract(x, mean, out=out)
            variance = np.einsum("...d,...d->...", centered, centered)[..., None]  # Σ (x − mean)², no temporary
            variance *= 1.0 / x.shape[-1]
            variance += self.eps
            np.sqrt(variance, out=variance)
            centered /= variance
            centered *= self.weight
            if self.bias is not None:
                centered += self.bias
            return centered
        xp = _no_out(out, x=x, weight=self.weight, bias=self.bias)
        centered = x - xp.mean(x, axis=-1, keepdims=True)
        variance = xp.mean(centered * centered, axis=-1, keepdims=True)
        y = centered / xp.sqrt(variance + self.eps) * self.weight
        return y if self.bias is None else y + self.bias


@dataclass(frozen=True, eq=False)
class RMSNorm:
    """y = x / √(mean(x²) + eps) · weight over the last axis (Llama, Mistral, Qwen2). weight (D,).

    float32_compute: normalise in float32 and cast back before the weight, as transformers'
    LlamaRMSNorm does whatever the model's dtype (needed to match its float64 outputs to 1e-10;
    a no-op for float32 inputs). Default False: computed in x's own dtype.
    """

    weight: Any
    eps: float = 1e-6
    float32_compute: bool = False

    def __post_init__(self) -> None:
        _check_vector("weight", self.weight)
        object.__setattr__(self, "eps", _check_eps(self.eps))

    def __call__(self, x, *, out=None):
        """x (…, D) → (…, D). NumPy only: ``out`` may be x itself."""
        if self.float32_compute and x.dtype != (np.float32 if is_numpy(x) else namespace(x=x).float32):
            return self._in_float32(x, out)
        if is_numpy(x):
            mean_square = np.einsum("...d,...d->...", x, x)[..., None]
            mean_square *= 1.0 / x.shape[-1]
            mean_square += self.eps
            np.sqrt(mean_square, out=mean_square)
            y = np.divide(x, mean_square, out=out)
            y *= self.weight
            return y
        xp = _no_out(out, x=x, weight=self.weight)
        mean_square = xp.mean(x * x, axis=-1, keepdims=True)
        return x / xp.sqrt(mean_square + self.eps) * self.weight

    def _in_float32(self, x, out):
        if is_numpy(x):
            x32 = x.astype(np.float32)
            normed = x32 / np.sqrt(np.mean(x32 * x32, axis=-1, keepdims=True) + np.float32(self.eps))
            return np.multiply(self.weight, normed.astype(x.dtype), out=out)
        import torch

        _no_out(out, x=x, weight=self.weight)
        x32 = x.to(torch.float32)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)   # transformers' exact ops
        return self.weight * normed.to(x.dtype)


def _no_out(out, **arrays):
    if out is not None:
        raise ValueError("out= is for NumPy arrays; torch tensors are computed out of place (autograd)")
    return namespace(**arrays)


@dataclass(frozen=True, eq=False, kw_only=True)
class MLP:
    """The position-wise feed-forward network: out = act(x·W_in + b_in)·W_out + b_out.

    w_in (D, F), w_out (F, D_out), biases b_in (F,), b_out (D_out,) or None. activation: a name in
    `qkv.activations.ACTIVATIONS` ("gelu" exact, "gelu_tanh", "relu", "silu", …).
    Gated (SwiGLU when activation="silu", as Llama): w_gate (D, F), b_gate (F,) or None, and
    out = (act(x·W_gate + b_gate) ⊙ (x·W_in + b_in))·W_out + b_out (W_in is Llama's up_proj).
    """

    w_in: Any
    w_out: Any
    b_in: Any = None
    b_out: Any = None
    activation: str = "gelu"
    w_gate: Any = None
    b_gate: Any = None

    def __post_init__(self) -> None:
        namespace(w_in=self.w_in, w_out=self.w_out, b_in=self.b_in, b_out=self.b_out, w_gate=self.w_gate,
                  b_gate=self.b_gate)
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        for name in ("w_in", "w_out", "w_gate"):
            w = getattr(self, name)
            if w is not None and w.ndim != 2:
                raise ValueError(f"{name} must be a matrix (d_in, d_out), got shape {shape_str(w.shape)}")
        if self.w_out.shape[0] != self.w_in.shape[1]:
            raise ValueError(f"w_out has shape {shape_str(self.w_out.shape)} but w_in has shape "
                             f"{shape_str(self.w_in.shape)} (expected ({self.w_in.shape[1]}, D_out))")
        if self.w_gate is not None and tuple(self.w_gate.shape) != tuple(self.w_in.shape):
            raise ValueError(f"w_gate has shape {shape_str(self.w_gate.shape)}, expected {shape_str(self.w_in.shape)} "
                             "(the same as w_in)")
        if self.b_gate is not None and self.w_gate is None:
            raise ValueError("b_gate needs w_gate (a gated MLP)")
        for name, width in (("b_in", self.w_in.shape[1]), ("b_out", self.w_out.shape[1]),
                            ("b_gate", self.w_in.shape[1])):
            if getattr(self, name) is not None:
                _check_vector(name, getattr(self, name), width)

    @property
    def d_model(self) -> int:
        return int(self.w_in.shape[0])

    @property
    def d_out(self) -> int:
        return int(self.w_out.shape[1])

    def __call__(self, x, *, record: Recorder | None = None):
        """x (…, T, D) → (…, T, D_out). Records hidden (…, T, F), [gate], activated, out."""
        if x.ndim < 1 or x.shape[-1] != self.d_model:
            raise ValueError(f"x has shape {shape_str(x.shape)} but w_in has shape {shape_str(self.w_in.shape)} "
                             f"(expected (…, {self.d_model}))")
        if record is None and is_numpy(x) and x.ndim >= 2:
            return self._numpy_rows(x)
        activate = ACTIVATIONS[self.activation]
        hidden = x @ self.w_in                                                  # (…, T, F)
        if self.b_in is not None:
            hidden = hidden + self.b_in
        hidden = emit(record, "hidden", hidden, formula="X·W_in + b_in")
        if self.w_gate is None:
            activated = activate(hidden)
        else:
            gate = x @ self.w_gate if self.b_gate is None else x @ self.w_gate + self.b_gate
            gate = emit(record, "gate", gate, formula="X·W_gate")
            activated = activate(gate) * hidden
        activated = emit(record, "activated", activated,
                          formula=f"{self.activation}(hidden)" if self.w_gate is None
                          else f"{self.activation}(gate) ⊙ hidden")
        out = activated @ self.w_out if self.b_out is None else activated @ self.w_out + self.b_out
        return emit(record, "out", out, formula="activated·W_out + b_out")

    def _numpy_rows(self, x: np.ndarray) -> np.ndarray:
        """The same computation for NumPy without a trace: blocks of rows, in place, one reused scratch
        array for the (rows, F) activations (float32 GELU + bias: one C pass)."""
        rows = x.reshape(-1, x.shape[-1])                                       # (N, D)
        n = rows.shape[0]
        dtype = np.result_type(x.dtype, self.w_in.dtype)
        out = np.empty((n, self.d_out), dtype=dtype)
        hidden = np.empty((min(_ROWS_PER_BLOCK, n), self.w_in.shape[1]), dtype=dtype)
        gate = np.empty_like(hidden) if self.w_gate is not None else None
        for start in range(0, n, _ROWS_PER_BLOCK):
            block = slice(start, start + _ROWS_PER_BLOCK)
            part = rows[block]
            h = np.matmul(part, self.w_in, out=hidden[: part.shape[0]])         # (rows, F)
            if self.w_gate is None:
                if self.b_in is not None:
                    add_bias_and_activate(h, self.b_in, self.activation)    # in place
                else:
                    ACTIVATIONS[self.activation](h, out=h)
            else:
                if self.b_in is not None:
                    h += self.b_in
                g = np.matmul(part, self.w_gate, out=gate[: part.shape[0]])
                if self.b_gate is not None:
                    g += self.b_gate
                ACTIVATIONS[self.activation](g, out=g)
                h *= g
            np.matmul(h, self.w_out, out=out[block])
        if self.b_out is not None:
            out += self.b_out
        return out.reshape(x.shape[:-1] + (self.d_out,))


@dataclass(frozen=True, eq=False, kw_only=True)
class MoE:
    """A sparse mixture of experts in place of the MLP (Mixtral): each token goes to its top_k experts.

    router (D, E): logits = x·router (…, T, E); p = softmax(logits) over the E experts (computed in
    float32 for float16/bfloat16 inputs, else in x's dtype); the top_k largest p are kept and divided
    by their sum, w (…, T, top_k). `out = Σ_k w_k · experts[e_k](x)`, summed in ascending expert order
    (as transformers adds them). experts: E `MLP`s D → D (Mixtral's are SwiGLU).
    """

    router: Any
    experts: tuple
    top_k: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "experts", tuple(self.experts))
        namespace(router=self.router)
        if self.router.ndim != 2 or self.router.shape[1] != len(self.experts) or not self.experts:
            raise ValueError(f"router has shape {shape_str(self.router.shape)} but there are {len(self.experts)} "
                             "experts (expected (D, E))")
        for i, expert in enumerate(self.experts):
            if not isinstance(expert, MLP) or expert.d_model != self.router.shape[0] or expert.d_out != expert.d_model:
                raise ValueError(f"experts[{i}] must be an MLP of width {self.router.shape[0]} → {self.router.shape[0]}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or not 1 <= self.top_k <= len(self.experts):
            raise ValueError(f"top_k must be an integer in [1, {len(self.experts)}], got {self.top_k!r}")

    @property
    def d_model(self) -> int:
        return int(self.router.shape[0])

    @property
    def d_out(self) -> int:
        return self.d_model

    def route(self, x):
        """x (…, T, D) → (experts (…, T, top_k) integers, weights (…, T, top_k)): each token's chosen experts,
        most probable first, and their renormalised probabilities."""
        from .attention import softmax

        logits = x @ self.router                                               # (…, T, E)
        if is_numpy(logits):
            p = softmax(logits.astype(np.float32) if logits.dtype not in (np.float32, np.float64) else logits)
            chosen = np.argsort(-p, axis=-1, kind="stable")[..., : self.top_k]
            top = np.take_along_axis(p, chosen, axis=-1)
        else:
            import torch

            p = torch.softmax(logits if logits.dtype in (torch.float32, torch.float64) else logits.float(), dim=-1)
            top, chosen = torch.topk(p, self.top_k, dim=-1)
        total = top.sum(-1, keepdims=True) if is_numpy(top) else top.sum(-1, keepdim=True)
        return chosen, top / total

    def __call__(self, x, *, record: Recorder | None = None):
        """x (…, T, D) → (…, T, D). Records "experts" (…, T, top_k) integers, "routing" (…, T, top_k), "out"."""
        xp = namespace(x=x, router=self.router)
        chosen, weights = self.route(x)
        emit(record, "experts", chosen, formula=f"top-{self.top_k} of softmax(X·W_router)")
        weights = emit(record, "routing", weights, formula="p_e / Σ_top-k p")
        rows = xp.reshape(x, (-1, x.shape[-1]))                                # (N, D)
        flat_chosen = xp.reshape(chosen, (-1, self.top_k))
        flat_weights = xp.reshape(weights, (-1, self.top_k))
        out = xp.zeros_like(rows)
        for e, expert in enumerate(self.experts):
            hit = flat_chosen == e                                             # (N, top_k)
            if is_numpy(rows):
                tokens, slot = np.nonzero(hit)
                if tokens.size:
                    share = expert(rows[tokens]) * flat_weights[tokens, slot][:, None].astype(rows.dtype)
                    np.add.at(out, tokens, share)
            else:
                tokens, slot = xp.nonzero(hit)
                if tokens.shape[0]:
                    share = expert(rows[tokens]) * flat_weights[tokens, slot][:, None].to(rows.dtype)
                    out = out.index_add(0, tokens, share)
        return emit(record, "out", xp.reshape(out, x.shape), formula="Σ w_e · expert_e(X)")


Norm = LayerNorm | RMSNorm


@dataclass(frozen=True, eq=False, kw_only=True)
class TransformerBlock:
    """One transformer layer: self-attention, [cross-attention over memory], MLP, each with a norm and R + Y.

    attention: the self-attention (`MultiHeadAttention`, D → D; RoPE and GQA live there).
    norm1, norm2: the norms of the attention and MLP sublayers (LayerNorm or RMSNorm over D).
    mlp: the `MLP` (D → D). norm_position: "pre" (norm the sublayer's input) or "post" (norm the sum).
    cross_attention, cross_norm: given together, a decoder block's middle sublayer: queries from
      the block's stream, keys and values from ``memory`` (the encoder's output).
    attention_out_norm, mlp_out_norm: norms of a sublayer's output before it joins the residual,
      x + N_out(Sub(N(x))) (Gemma 2/3's "sandwich"), or None.
    parallel: attention and MLP read the same stream and are added together,
      x ← x + Attn(N₁(x)) + MLP(N₂(x)) (GPT-J, GPT-NeoX, Phi; norm2 may be norm1 itself, Phi's one norm).
      Pre-norm only, no cross-attention.
    The mlp may be a `MoE` (a sparse mixture of experts, Mixtral).
    """

    attention: MultiHeadAttention
    norm1: Norm
    mlp: MLP
    norm2: Norm
    norm_position: str = "pre"
    cross_attention: MultiHeadAttention | None = None
    cross_norm: Norm | None = None
    attention_out_norm: Norm | None = None
    mlp_out_norm: Norm | None = None
    parallel: bool = False

    def __post_init__(self) -> None:
        if self.norm_position not in ("pre", "post"):
            raise ValueError(f"norm_position must be \"pre\" or \"post\", got {self.norm_position!r}")
        if not isinstance(self.attention, MultiHeadAttention):
            raise TypeError(f"attention must be a qkv.MultiHeadAttention, got {type(self.attention).__name__}")
        if (self.cross_attention is None) != (self.cross_norm is None):
            raise ValueError("cross_attention and cross_norm come together (a decoder block has both)")
        d = self.attention.d_model
        if self.attention.d_out != d:
            raise ValueError(f"attention maps width {d} to {self.attention.d_out}; a block keeps the width "
                             "(the residual adds them)")
        if not isinstance(self.mlp, (MLP, MoE)):
            raise TypeError(f"mlp must be a qkv.block.MLP or MoE, got {type(self.mlp).__name__}")
        if self.parallel and (self.norm_position != "pre" or self.cross_attention is not None):
            raise ValueError("parallel=True is a pre-norm block without cross-attention")
        if self.mlp.d_model != d or self.mlp.d_out != d:
            raise ValueError(f"mlp maps width {self.mlp.d_model} to {self.mlp.d_out}, the block's width is {d}")
        if self.cross_attention is not None:
            cross = self.cross_attention
            if not isinstance(cross, MultiHeadAttention):
                raise TypeError(f"cross_attention must be a qkv.MultiHeadAttention, got {type(cross).__name__}")
            if cross.d_model != d or cross.d_out != d:
                raise ValueError(f"cross_attention maps width {cross.d_model} to {cross.d_out}, the block's "
                                 f"width is {d}")
        for name in ("norm1", "norm2", "cross_norm", "attention_out_norm", "mlp_out_norm"):
            norm = getattr(self, name)
            if norm is None:
                continue
            if not isinstance(norm, (LayerNorm, RMSNorm)):
                raise TypeError(f"{name} must be a LayerNorm or RMSNorm, got {type(norm).__name__}")
            if norm.weight.shape[0] != d:
                raise ValueError(f"{name} has weight of shape {shape_str(norm.weight.shape)}, the block's width is {d}")

    @property
    def d_model(self) -> int:
        return self.attention.d_model

    @classmethod
    def from_torch(cls, module: Any, *, detach: bool = True) -> "TransformerBlock":
        """The weights of a ``torch.nn.TransformerEncoderLayer`` or ``TransformerDecoderLayer`` (detached,
        transposed to the row-vector convention; detach=False keeps the module's parameters in the
        graph, so training the block trains them); norm_first gives "pre". Call it with torch inputs.
        Dropout is not applied (an eval-mode layer). torch's norm3 (the MLP's) becomes norm2 here and
        its norm2 (cross-attention's) cross_norm."""
        import torch

        decoder = isinstance(module, torch.nn.TransformerDecoderLayer)
        if not decoder and not isinstance(module, torch.nn.TransformerEncoderLayer):
            raise TypeError(f"expected torch.nn.TransformerEncoderLayer or TransformerDecoderLayer, got "
                            f"{type(module).__name__}")
        act = module.activation
        if act is torch.nn.functional.relu or isinstance(act, torch.nn.ReLU):
            activation = "relu"
        elif act is torch.nn.functional.gelu or (isinstance(act, torch.nn.GELU) and act.approximate == "none"):
            activation = "gelu"
        elif isinstance(act, torch.nn.GELU) and act.approximate == "tanh":
            activation = "gelu_tanh"
        else:
            raise ValueError(f"the activation {act!r} is not supported (relu, gelu)")

        def own(t):
            return None if t is None else (t.detach() if detach else t)

        def norm(n):
            return LayerNorm(own(n.weight), own(n.bias), n.eps)

        def linear(layer):
            return own(layer.weight).T, own(layer.bias)

        w_in, b_in = linear(module.linear1)
        w_out, b_out = linear(module.linear2)
        mlp = MLP(w_in=w_in, b_in=b_in, w_out=w_out, b_out=b_out, activation=activation)
        return cls(attention=MultiHeadAttention.from_torch(module.self_attn, detach=detach), norm1=norm(module.norm1), mlp=mlp,
                   norm2=norm(module.norm3 if decoder else module.norm2),
                   norm_position="pre" if module.norm_first else "post",
                   cross_attention=MultiHeadAttention.from_torch(module.multihead_attn, detach=detach) if decoder else None,
                   cross_norm=norm(module.norm2) if decoder else None)

    def __call__(self, x, *, memory=None, mask=None, memory_mask=None, causal: bool = False,
                 cache: KVCache | None = None, lengths=None, positions=None, return_weights: bool = False,
                 record: Recorder | None = None):
        """Run the block on x (…, T, D) → (…, T, D).

        memory (…, Tm, Dm): the encoder's output, needed exactly when the block has cross-attention.
        mask: boolean, broadcastable to (…, H, T, Tk), True = may attend (self-attention);
          memory_mask likewise over the memory's keys (…, H, T, Tm). causal: self-attention sees no
          future key (bottom-right aligned, so it works with a cache).
        cache: the self-attention's `KVCache` (decoding); positions: RoPE positions; lengths (B,):
          a right-padded batch for the self-attention (see MultiHeadAttention; padded rows of the
          output hold values nobody should read). A call that fails leaves the cache as it was.
        return_weights: also return the self-attention weights (…, H, T, Tk), and with cross-attention
          the cross weights (…, H, T, Tm) after them: (y, weights[, cross_weights]).
        record: handed ``x``, then each sublayer's steps under "attention/", "cross_attention/",
          "mlp/" (norm, the sublayer's own steps, residual), then ``output``.
        """
        if (memory is None) != (self.cross_attention is None):
            raise ValueError("memory= is needed exactly when the block has cross_attention "
                             f"(this block has {'one' if self.cross_attention is not None else 'none'})")
        if memory_mask is not None and memory is None:
            raise ValueError("memory_mask= needs memory= (cross-attention)")
        snapshot = None if cache is None else cache._snapshot()
        try:
            return self._run(x, memory, mask, memory_mask, causal, cache, lengths, positions, return_weights, record)
        except BaseException:
            if cache is not None:  # a later sublayer failed after the self-attention stored this step
                cache._commit(snapshot)
            raise

    def _run(self, x, memory, mask, memory_mask, causal, cache, lengths, positions, return_weights, record):
        x = emit(record, "x", x, formula="x")
        weights = []

        def attend(stream, sublayer_record):
            return self.attention(stream, mask=mask, causal=causal, cache=cache, lengths=lengths,
                                  positions=positions, return_weights=return_weights, record=sublayer_record)

        if self.parallel:
            return self._run_parallel(x, attend, record, weights, return_weights)
        x = self._sublayer(x, attend, self.norm1, "attention", record, weights, self.attention_out_norm)
        if self.cross_attention is not None:
            def cross(stream, sublayer_record):
                return self.cross_attention(stream, memory, mask=memory_mask, return_weights=return_weights,
                                            record=sublayer_record)

            x = self._sublayer(x, cross, self.cross_norm, "cross_attention", record, weights)
        x = self._sublayer(x, lambda stream, sub: self.mlp(stream, record=sub), self.norm2, "mlp", record, weights,
                           self.mlp_out_norm)
        x = emit(record, "output", x, formula="x_out")
        return (x, *weights) if return_weights else x

    def _run_parallel(self, x, attend, record, weights, return_weights):
        """x + Attn(N₁(x)) + MLP(N₂(x)), the two sublayers side by side (N₂ is N₁: normalised once)."""
        attention_record, mlp_record = scoped(record, "attention"), scoped(record, "mlp")
        normed = emit(attention_record, "norm", self.norm1(x), formula="N₁(x)")
        y = attend(normed, attention_record)
        if isinstance(y, tuple):
            y, w = y
            weights.append(w)
        if self.attention_out_norm is not None:
            y = emit(attention_record, "out_norm", self.attention_out_norm(y), formula="N_out(Y)")
        normed2 = normed if self.norm2 is self.norm1 else self.norm2(x)
        normed2 = emit(mlp_record, "norm", normed2, formula="N₂(x)")
        m = self.mlp(normed2, record=mlp_record)
        if self.mlp_out_norm is not None:
            m = emit(mlp_record, "out_norm", self.mlp_out_norm(m), formula="N_out(MLP)")
        total = residual(x, y, record=attention_record)
        total = emit(mlp_record, "residual", total + m, formula="x + Attn(N₁(x)) + MLP(N₂(x))")
        total = emit(record, "output", total, formula="x_out")
        return (total, *weights) if return_weights else total

    def _sublayer(self, x, run: Callable, norm: Norm, name: str, record: Recorder | None, weights: list,
                  out_norm: Norm | None = None):
        """Pre-norm: x + [out_norm](run(norm(x))); post-norm: norm(x + run(x)). Steps recorded under ``name/``."""
        sub = scoped(record, name)
        if self.norm_position == "pre":
            y = run(emit(sub, "norm", norm(x), formula="N(x)"), sub)
        else:
            y = run(x, sub)
        if isinstance(y, tuple):
            y, w = y
            weights.append(w)
        if out_norm is not None:
            y = emit(sub, "out_norm", out_norm(y), formula="N_out(Y)")
        total = residual(x, y, record=sub)
        if self.norm_position == "post":
            normed = norm(total, out=total) if is_numpy(total) and sub is None else norm(total)   # in place: a fresh sum
            total = emit(sub, "norm", normed, formula="N(R + Y)")
        return total
