"""A decoder-only language model (GPT-2, the Llama family, Gemma, Phi, GPT-NeoX, OPT, Mixtral) on qkv's one block.

    ids (T,) ─ token embeddings [+ learned positions] ─┐
    per layer:  qkv.block.TransformerBlock (pre-norm, causal; RoPE and GQA inside its MultiHeadAttention)
    final norm ─ · unembedding (D, V) → logits (T, V)

`gpt2.py` and `llama.py` turn a checkpoint's config.json and tensors into a `DecoderConfig` and
`DecoderArrays` (plain arrays, row-vector convention); `build` makes the blocks from them; `CausalLM`
runs them — one route for computing, tracing and decoding (a `qkv.KVCache` per layer).
"""

from __future__ import annotations

import functools
import math
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..block import MLP, LayerNorm, MoE, RMSNorm, TransformerBlock
from ..masks import soft_cap
from ..errors import InputError
from ..mha import KVCache, MultiHeadAttention
from ..rope import RoPE
from ..trace import (Recorder, scoped, BIASED_SCORES, K_HEADS, MASK, OUT, Q_HEADS, SCALED_SCORES, SCORES, V_HEADS, WEIGHTS, Trace,
                     layer_step)
from .config import DecoderConfig
from .files import check_finite_states

# A whole-model trace (layer=None) records, per layer, the self-attention steps a page needs to derive
# any cell (q, k — rotated where RoPE turns them —, v, scores, scaled scores, mask, weights, outputs)
# for texts up to this many tokens; a longer text records each layer's weights only (at 512 tokens
# the weights alone make a 17 MB page; every step would be about 4× that).
DERIVATION_TOKENS = 64
# The self-attention sublayer's steps kept per layer in a whole-model trace.
LAYER_STEPS = (Q_HEADS, K_HEADS, V_HEADS, "q_rotated", "k_rotated", SCORES, SCALED_SCORES, BIASED_SCORES,
               "modified_scores", MASK, WEIGHTS, OUT)


def layer_recorder(trace: Trace, sublayer: str = "attention", *, batched: bool = False) -> Recorder:
    """A recorder for `forward(record=…)`/`states(record=…)`: of the steps ``layer {l}/{sublayer}/<name>``
    the blocks record, keeps those in LAYER_STEPS as ``layer {l}/<name>`` (the names the page reads).
    batched: the values carry a batch axis of one sequence, dropped (BERT's states run (1, T, D))."""
    def record(name: str, value, **meta):
        layer, _, rest = name.partition("/")
        scope, _, step = rest.partition("/")
        if scope == sublayer and step in LAYER_STEPS:
            trace(f"{layer}/{step}", value[0] if batched else value, **meta)

    return record


def whole_model_meta(meta: dict, n_tokens: int) -> dict:
    """meta of a whole-model trace: derivation_tokens, and derivation (whether each layer's steps are there)."""
    return dict(meta, derivation_tokens=DERIVATION_TOKENS, derivation=n_tokens <= DERIVATION_TOKENS)

__all__ = ["LayerArrays", "DecoderArrays", "CausalLM", "Output", "build"]


@dataclass(frozen=True, eq=False, kw_only=True)
class LayerArrays:
    """One layer's weights as read from a checkpoint, row-vector convention (x @ W, W (in, out)).

    w_q (D, H·Dh), w_k, w_v (D, G·Dh), w_o (H·Dh, D) and their biases (or None); norm1, norm2:
    (weight (D,), bias (D,) or None); MLP: w_in (D, F) (Llama's up_proj), w_gate (D, F) for SwiGLU
    (else None), w_out (F, D), and biases.
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None
    norm1: tuple
    norm2: tuple
    w_in: np.ndarray | None = None
    b_in: np.ndarray | None = None
    w_gate: np.ndarray | None = None
    b_gate: np.ndarray | None = None
    w_out: np.ndarray | None = None
    b_out: np.ndarray | None = None
    q_norm: tuple | None = None          # (weight (Dh,), bias or None): per-head norms (Qwen3, Gemma 3)
    k_norm: tuple | None = None
    attention_out_norm: tuple | None = None   # Gemma 2/3's norms of a sublayer's output
    mlp_out_norm: tuple | None = None
    router: np.ndarray | None = None     # (D, E): a sparse mixture of experts (Mixtral) ...
    experts: tuple | None = None         # ... E tuples (w_gate (D, F), w_up (D, F), w_down (F, D)); w_in unused


@dataclass(frozen=True, eq=False)
class DecoderArrays:
    """token_embeddings (V, D), position_embeddings (P, D) or None (RoPE), layers, final_norm (weight, bias|None),
    unembedding (D, V): logits = final_norm(x) @ unembedding (a view of token_embeddingsᵀ when tied). With OPT's
    projections, token_embeddings (V, P) and unembedding (P, V) around project_in (P, D) and project_out (D, P)."""

    token_embeddings: np.ndarray
    position_embeddings: np.ndarray | None
    layers: tuple[LayerArrays, ...]
    final_norm: tuple | None
    unembedding: np.ndarray
    unembedding_bias: np.ndarray | None = None       # (V,): Phi's lm_head bias
    project_in: np.ndarray | None = None             # (P, D): OPT's word_embed_proj_dim P ≠ D, after the embeddings (V, P)
    project_out: np.ndarray | None = None            # (D, P): after the final norm, before the unembedding (P, V)


def _norm(config: DecoderConfig, weight_bias: tuple | None):
    if weight_bias is None:
        return None
    weight, bias = weight_bias
    if config.norm == "rmsnorm":
        if config.norm_offset:          # Gemma: x̂·(1 + w), computed once here (as transformers, in the weight's dtype)
            weight = (weight + weight.dtype.type(config.norm_offset)).astype(weight.dtype)
        return RMSNorm(weight, config.norm_eps)
    return LayerNorm(weight, bias, config.norm_eps)


def build(config: DecoderConfig, arrays: DecoderArrays) -> tuple[tuple[TransformerBlock, ...], Any]:
    """The L `TransformerBlock`s and the final norm (or None) of a decoder: every family's options are
    options of the one block (see `DecoderConfig`)."""
    # float32 models: RoPE's frequencies and angles in float32, as transformers computes them (at long
    # positions the rounded angles differ by many ulps from exact ones, and the model was run that way);
    # float64 models are the exact reference: angles in float64. See docs/models.md.
    float32_angles = arrays.token_embeddings.dtype == np.float32
    ropes = {}
    if config.rope_theta is not None:
        long = rope_frequencies(config, float32_angles, long=True)          # LongRoPE's second set, else None
        ropes["full_attention"] = RoPE(config.head_dim, config.rope_theta, rotary_dim=config.rotary_dim,
                                       inv_freq=rope_frequencies(config, float32_angles), float32_angles=float32_angles,
                                       attention_factor=rope_attention_factor(config), long_inv_freq=long,
                                       long_after=None if long is None else
                                       int(dict(config.rope_scaling)["original_max_position_embeddings"]))
        ropes["sliding_attention"] = ropes["full_attention"] if config.local_rope_theta is None else \
            RoPE(config.head_dim, config.local_rope_theta, rotary_dim=config.rotary_dim, float32_angles=float32_angles)
    activation = "silu" if config.mlp == "swiglu" else config.mlp
    gated = config.mlp == "swiglu" or config.gated
    score_mod = None if config.attn_softcap is None else soft_cap(config.attn_softcap)
    blocks = []
    for index, layer in enumerate(arrays.layers):
        kind = config.layer_types[index] if config.layer_types else "full_attention"
        attention = MultiHeadAttention(layer.w_q, layer.w_k, layer.w_v, layer.w_o, config.n_heads, config.n_kv_heads,
                                       b_q=layer.b_q, b_k=layer.b_k, b_v=layer.b_v, b_o=layer.b_o, rope=ropes.get(kind),
                                       q_norm=_norm(config, layer.q_norm), k_norm=_norm(config, layer.k_norm),
                                       scale=_layer_scale(config, index), score_mod=score_mod)
        if layer.experts is not None:
            mlp = MoE(router=layer.router, top_k=config.experts_per_token,
                      experts=[MLP(w_in=up, w_out=down, w_gate=gate, activation=activation) for gate, up, down in layer.experts])
        else:
            mlp = MLP(w_in=layer.w_in, w_out=layer.w_out, b_in=layer.b_in, b_out=layer.b_out, activation=activation,
                      w_gate=layer.w_gate if gated else None, b_gate=layer.b_gate)
        norm1 = _norm(config, layer.norm1)
        blocks.append(TransformerBlock(attention=attention, norm1=norm1, mlp=mlp,
                                       norm2=norm1 if config.shared_norm else _norm(config, layer.norm2),
                                       norm_position=config.norm_position, parallel=config.parallel,
                                       attention_out_norm=_norm(config, layer.attention_out_norm),
                                       mlp_out_norm=_norm(config, layer.mlp_out_norm)))
    return tuple(blocks), _norm(config, arrays.final_norm)


def rope_frequencies(config: DecoderConfig, float32: bool, *, long: bool = False) -> np.ndarray | None:
    """RoPE's θᵢ after the config's frequency scaling, or None for the plain θᵢ = theta^(−2i/d).

    linear: θᵢ / factor. llama3 (Llama 3.1+): wavelengths λᵢ = 2π/θᵢ longer than
    original_max_position_embeddings / low_freq_factor are divided by factor, those shorter than
    … / high_freq_factor kept, and those between interpolated with
    s = (original / λᵢ − low_freq_factor) / (high_freq_factor − low_freq_factor):
    θᵢ ← (1 − s)·θᵢ/factor + s·θᵢ. longrope (Phi-3): θᵢ / short_factorᵢ, or with long=True θᵢ / long_factorᵢ
    (the set for calls past original_max_position_embeddings; long=True of any other kind: None). Computed in
    float32 when ``float32`` (as transformers does), else float64.
    """
    scaling = dict(config.rope_scaling)
    kind = scaling.pop("rope_type", "default")
    if long and kind != "longrope":
        return None
    dtype = np.float32 if float32 else np.float64
    d = config.rope_dim or config.rotary_dim or config.head_dim      # an odd d: ⌈d/2⌉ frequencies (transformers)
    if kind == "longrope":                  # transformers: 1.0 / (ext_factors * base ** (arange(0, d, 2).float() / d))
        if config.rope_dim is not None:
            raise InputError.keyed("error.rope.odd_scaled", field="rope_scaling", kind=repr(kind), width=d)
        factors = np.asarray(scaling["long_factor" if long else "short_factor"], dtype=dtype)
        if factors.shape != (d // 2,):
            raise InputError.keyed("error.rope.longrope_length", field="rope_scaling", width=d, frequencies=d // 2,
                                   name="long_factor" if long else "short_factor", count=len(factors))
        return 1.0 / (factors * config.rope_theta ** (np.arange(0, d, 2).astype(dtype) / d))
    base = 1.0 / (config.rope_theta ** (np.arange(0, d, 2).astype(dtype) / d))      # (⌈d/2⌉,)
    if kind in ("default", "dynamic"):      # dynamic: the plain θᵢ within max_position_embeddings (see forward)
        return None if config.rope_dim is None else base
    factor = scaling["factor"]
    if kind == "linear":
        return base / factor
    if config.rope_dim is not None:         # odd frequency widths are read only where transformers runs them plainly
        raise InputError.keyed("error.rope.odd_scaled", field="rope_scaling", kind=repr(kind), width=d)
    if kind == "yarn":                      # transformers' _compute_yarn_parameters (truncate=True)
        original = scaling.get("original_max_position_embeddings", config.max_positions)
        fast, slow = scaling.get("beta_fast", 32.0), scaling.get("beta_slow", 1.0)

        def correction(rotations):
            return d * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(config.rope_theta))

        low, high = max(math.floor(correction(fast)), 0), min(math.ceil(correction(slow)), d - 1)
        high = high + 0.001 if low == high else high
        ramp = np.clip((np.arange(d // 2, dtype=np.float32 if float32 else np.float64) - low) / (high - low), 0, 1)
        extrapolation = 1 - ramp.astype(dtype)
        positions = config.rope_theta ** (np.arange(0, d, 2).astype(dtype) / d)
        return ((1.0 / (factor * positions)) * (1 - extrapolation) + (1.0 / positions) * extrapolation).astype(dtype)
    low, high, original = scaling["low_freq_factor"], scaling["high_freq_factor"], \
        scaling["original_max_position_embeddings"]
    wavelength = 2 * np.pi / base
    scaled = np.where(wavelength > original / low, base / factor, base)
    smooth = (original / wavelength - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelength < original / high) & ~(wavelength > original / low)
    return np.where(medium, smoothed, scaled).astype(dtype)


def _layer_scale(config: DecoderConfig, index: int) -> float | None:
    """Layer ``index``'s q·kᵀ scale: attn_scale (default 1/√Dh), ÷ (index + 1) with scale_by_layer (GPT-2)."""
    if not config.scale_by_layer:
        return config.attn_scale
    return (config.head_dim ** -0.5 if config.attn_scale is None else config.attn_scale) / (index + 1)


def rope_attention_factor(config: DecoderConfig) -> float:
    """YaRN's factor on cos and sin: attention_factor, or 0.1·mscale·ln(factor) + 1 (a ratio with mscale_all_dim);
    LongRoPE's, as read with the config (`llama._longrope`)."""
    scaling = dict(config.rope_scaling)
    if scaling.get("rope_type") == "longrope":
        return scaling["attention_factor"]
    if scaling.get("rope_type") != "yarn":
        return 1.0
    if "attention_factor" in scaling:
        return scaling["attention_factor"]
    factor = scaling["factor"]

    def mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if scaling.get("mscale") and scaling.get("mscale_all_dim"):
        return float(mscale(factor, scaling["mscale"]) / mscale(factor, scaling["mscale_all_dim"]))
    return mscale(factor)


def check_rope(config: DecoderConfig, source: str) -> None:
    """InputError naming rope_theta (or the scaling) when RoPE's frequencies, or the angles at the model's
    positions, are not finite in float32 (θ = Infinity, 1e-300, a scaling factor of 1e-300): the model
    would compute NaN. Frequencies that underflow to 0 are fine (those columns are not turned)."""
    if config.rope_theta is None:
        return
    d = config.rope_dim or config.rotary_dim or config.head_dim
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        base = 1.0 / (np.float32(config.rope_theta) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d)))
        freq = rope_frequencies(config, True)
        freq = base if freq is None else freq
        long = rope_frequencies(config, True, long=True)
        freq = freq if long is None else np.concatenate([freq, long])
        top = freq.astype(np.float32) * np.float32(max(config.max_positions, 1))
    if not (np.isfinite(base).all() and np.isfinite(top).all()):
        scaled = np.isfinite(base).all()
        raise InputError.keyed("error.rope.scaled_not_finite" if scaled else "error.rope.not_finite", source=source,
                               field="rope_scaling" if scaled else "rope_theta", theta=repr(config.rope_theta),
                               scaling=dict(config.rope_scaling), width=d)


@dataclass(frozen=True)
class Output:
    """One forward pass over T tokens: logits (T, V); hidden_states: L + 1 arrays (T, D) — the
    embeddings, then each block's output (before the final norm) — when asked; weights (L, H, T, Tk)
    when asked."""

    logits: np.ndarray
    hidden_states: list[np.ndarray] | None = None
    weights: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class CausalLM:
    """A loaded decoder-only language model. See `qkv.models.load`.

    Every text is one sequence (no batch axis): ids (T,), hidden states (T, D), logits (T, V).
    """

    name: str
    config: DecoderConfig
    arrays: DecoderArrays
    blocks: tuple[TransformerBlock, ...]
    final_norm: Any
    tokenizer: Any
    directory: Path

    @property
    def dtype(self) -> np.dtype:
        return self.arrays.token_embeddings.dtype

    @property
    def is_causal(self) -> bool:
        """Whether the attention is causal (False: Gemma 3's use_bidirectional_attention)."""
        return self.config.causal

    # ------------------------------------------------------------------ tokens
    def token_ids(self, text: str) -> np.ndarray:
        """Token ids (T,) int64 of one text, special tokens (e.g. Llama's <s>) as the tokenizer adds them."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return np.asarray(self.tokenizer.encode(text).ids, dtype=np.int64)

    def tokens(self, text: str) -> list[str]:
        """The token strings the model sees for one text."""
        return self.token_strings(self.token_ids(text))

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """The text each id stands for, as a reader would write it: " cat", not byte-level BPE's "Ġcat" or
        SentencePiece's "▁cat" (see `piece_text`); an id the vocabulary lacks as "<id>"."""
        return piece_texts(self.tokenizer, ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def states(self, ids: np.ndarray, lengths: np.ndarray, *, weights: bool = False):
        """BERT's batch interface (`BertEncoder.states`), for tools written against it: ids (B, T) padded on
        the right, lengths (B,). Yields (hidden (B, T, D), weights (B, H, T, T) or None): the embeddings,
        then each block's output; each sequence runs alone over its real tokens, the rest stays zero."""
        ids, lengths = np.asarray(ids), np.asarray(lengths)
        if ids.ndim != 2 or lengths.shape != ids.shape[:1]:
            raise ValueError(f"ids must be (B, T) and lengths (B,), got {ids.shape} and {lengths.shape}")
        b, t = ids.shape
        runs = [self.forward(ids[row, : lengths[row]], hidden_states=True, weights=weights) for row in range(b)]
        h = self.config.n_heads
        for layer in range(self.config.n_layers + 1):
            hidden = np.zeros((b, t, self.config.hidden_size), dtype=self.dtype)
            layer_weights = np.zeros((b, h, t, t), dtype=self.dtype) if weights and layer else None
            for row, run in enumerate(runs):
                n = lengths[row]
                hidden[row, :n] = run.hidden_states[layer]
                if layer_weights is not None:
                    layer_weights[row, :, :n, :n] = run.weights[layer - 1]
            yield hidden, layer_weights

    # ------------------------------------------------------------------ forward
    def new_caches(self) -> list[KVCache]:
        """One empty `qkv.KVCache` per layer, for `forward(..., caches=)`."""
        return [KVCache() for _ in self.blocks]

    def embed(self, ids: np.ndarray, start: int = 0) -> np.ndarray:
        """ids (T,) → (T, D): token embeddings, plus learned positions start … start+T−1 (GPT-2)."""
        ids = np.asarray(ids)
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise ValueError(f"ids must be a 1-D integer array, got shape {ids.shape} dtype {ids.dtype}")
        if ids.size and not 0 <= ids.min() <= ids.max() < self.config.vocab_size:
            raise InputError.keyed("error.decoder.token_id", field="ids", vocab_size=self.config.vocab_size,
                                   id=int(ids.max() if ids.max() >= self.config.vocab_size else ids.min()))
        x = self.arrays.token_embeddings[ids]                                  # (T, D), a fresh array
        if self.arrays.project_in is not None:                                  # OPT: (T, P) · project_in → (T, D)
            x = x @ self.arrays.project_in
        if self.config.embed_scale is not None:                                 # Gemma: ·√D, rounded to the dtype
            x *= x.dtype.type(self.config.embed_scale)
        if self.arrays.position_embeddings is not None:
            if start + len(ids) > self.config.max_positions:
                raise InputError.keyed("error.decoder.positions", source=self.name, n=start + len(ids),
                                       positions=self.config.max_positions)
            offset = self.config.position_offset + start                        # OPT's table starts at row 2
            x += self.arrays.position_embeddings[offset:offset + len(ids)]
        return x

    def window_mask(self, tq: int, tk: int, layer: int = 0) -> np.ndarray | None:
        """(Tq, Tk) boolean, True = may attend: layer ``layer``'s sliding window (keys less than `sliding_window`
        tokens back, the query itself counted); None when that layer has no window or every key is within it.
        Queries are the last Tq of Tk positions (bottom-right, as the causal mask)."""
        window = self.config.window_of(layer)
        if window is None or tk <= window:
            return None
        query_positions = np.arange(tk - tq, tk)[:, None]                       # (Tq, 1)
        if not self.config.causal:                                              # both sides: |i − j| < window
            return np.abs(np.arange(tk)[None, :] - query_positions) < window
        return np.arange(tk)[None, :] > query_positions - window                # (Tq, Tk)

    def forward(self, ids, *, caches: list[KVCache] | None = None, hidden_states: bool = False,
                weights: bool = False, last_only: bool = False, record: Recorder | None = None) -> Output:
        """Run ids (T,) through every block; with caches, after the tokens they already hold.

        caches: from `new_caches()`, extended by this call (decoding). hidden_states: keep the L + 1
        states; weights: keep every layer's attention weights (L, H, T, Tk). last_only: logits of the
        last position only (1, V), as a decoding step needs. record: handed every block's steps as
        ``layer {l}/<the block's step>`` (see `layer_recorder`).
        """
        ids = np.asarray(ids)
        start = 0 if caches is None else caches[0].length
        if dict(self.config.rope_scaling).get("rope_type") == "dynamic" and start + len(ids) > self.config.max_positions:
            raise InputError.keyed("error.rope.dynamic", source=self.name, n=start + len(ids),
                                   positions=self.config.max_positions)
        x = self.embed(ids, start)
        if x.shape[0] == 0:
            raise InputError.keyed("error.text.no_tokens", source=self.name)
        masks = {}
        states = [x] if hidden_states else None
        all_weights = []
        for i, block in enumerate(self.blocks):
            window = self.config.window_of(i)
            if window not in masks:
                masks[window] = self.window_mask(x.shape[0], start + x.shape[0], i)
            # an overflow inside the block is reported once, by check_finite_states just below, as one
            # InputError: NumPy's RuntimeWarnings would print lines of their own before it
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                result = block(x, mask=masks[window], causal=self.config.causal, cache=None if caches is None else caches[i],
                               return_weights=weights, record=scoped(record, f"layer {i}"))
            x, layer_weights = result if weights else (result, None)
            check_finite_states(x, layer=i, source=str(self.directory), dtype=self.dtype)
            if weights:
                all_weights.append(layer_weights)
            if hidden_states:
                states.append(x)
        final = x[-1:] if last_only else x
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):    # checked below, as above
            if self.final_norm is not None:
                final = self.final_norm(final)
            if self.arrays.project_out is not None:                            # OPT: (T, D) · project_out → (T, P)
                final = final @ self.arrays.project_out
            logits = final @ self.arrays.unembedding                           # (T, V)
            if self.arrays.unembedding_bias is not None:
                logits += self.arrays.unembedding_bias
            if self.config.final_softcap is not None:                          # Gemma 2: cap·tanh(logits / cap)
                cap = logits.dtype.type(self.config.final_softcap)
                logits /= cap
                np.tanh(logits, out=logits)
                logits *= cap
        check_finite_states(logits, layer=None, source=str(self.directory), dtype=self.dtype, squared=False)
        return Output(logits, states, np.stack(all_weights) if weights else None)

    def logits(self, text: str) -> np.ndarray:
        """(T, V): the next-token logits after each position of one text."""
        return self.forward(self.token_ids(text)).logits

    def hidden_states(self, text: str) -> list[np.ndarray]:
        """L + 1 arrays (T, D): the embeddings, then each block's output (the last before the final norm)."""
        return self.forward(self.token_ids(text), hidden_states=True).hidden_states

    def next_token_probabilities(self, text: str) -> np.ndarray:
        """(V,): the model's distribution over the token after ``text`` (softmax of the last logits)."""
        from .generate import softmax

        return softmax(self.forward(self.token_ids(text), last_only=True).logits[0])

    def generate(self, prompt: str, max_new_tokens: int = 20, **options):
        """Continue ``prompt`` with the KV cache; see `qkv.models.generate.generate`."""
        from .generate import generate

        return generate(self, prompt, max_new_tokens, **options)

    # ------------------------------------------------------------------ looking inside
    def attention_weights(self, text: str) -> np.ndarray:
        """(L, H, T, T): every layer's and head's attention weights for one text (rows: queries; causal,
        so each row is zero right of the diagonal)."""
        return self.forward(self.token_ids(text), weights=True).weights

    def kv_groups(self) -> list[list[int]]:
        """For each key/value head g, the query heads that read it: GQA's sharing (one group per head
        when G = H)."""
        size = self.config.group_size
        return [list(range(g * size, (g + 1) * size)) for g in range(self.config.n_kv_heads)]

    def trace(self, text: str, *, layer: int | None = None, head: int | None = None,
              query: int | str | None = None, derivation: bool = False) -> Trace:
        """A Trace of the model on one text.

        - layer and head: that query head alone (with its key/value head's slices, RoPE, the causal
          mask) by `qkv.MultiHeadAttention` on the layer's normalised input: steps x, w_q, q, …,
          rope_angles, q_rotated, k_rotated, …, weights, out, concat, w_o, y (this head's share).
        - layer only: the whole block (norm, attention with every head, residual, MLP) as the model
          runs it, steps "attention/…", "mlp/…", "output".
        - neither: the whole model, steps ``layer {l}/weights`` (H, T, T). With derivation=True, each
          layer's self-attention steps ``layer {l}/q_heads``, k_heads, v_heads, q_rotated, k_rotated
          (RoPE), scores, scaled_scores, mask, weights, out — as `forward` runs them — for texts of up
          to DERIVATION_TOKENS tokens (meta derivation True/False, derivation_tokens the bound): what
          the interactive page needs to derive any clicked cell.
        meta: kind="model", model, tokens, n_layers, n_heads, n_kv_heads, kv_groups, causal=True,
        rope_theta, sliding_window, layer, head, kv_head, query; with a layer, scale_reason where q·kᵀ's scale is
        not 1/√d_k: {"by_layer": l + 1} (GPT-2's scale_attn_by_inverse_layer_idx) or {"query_pre_attn_scalar": s}
        (Gemma 2/3), for the explanation to say what the scale is.
        """
        if head is not None and layer is None:
            raise ValueError("head= needs layer= too (the same head index exists in every layer)")
        ids = self.token_ids(text)
        tokens = self.token_strings(ids)
        c = self.config
        meta = {"kind": "model", "model": self.name, "model_type": c.model_type, "tokens": tokens,
                "n_layers": c.n_layers, "n_heads": c.n_heads, "n_kv_heads": c.n_kv_heads, "kv_groups": self.kv_groups(),
                "causal": c.causal, "rope_theta": c.rope_theta, "sliding_window": c.sliding_window, "bias_out": c.bias_out}
        if query is not None:
            meta["query"] = query_index(tokens, query)
        if layer is None:
            meta = whole_model_meta(meta, len(ids)) if derivation else meta
            trace = Trace(f"{self.name}: attention {'of' if derivation else 'weights of'} every layer and head", meta)
            if meta.get("derivation"):
                self.forward(ids, record=layer_recorder(trace))
                return trace
            for index, w in enumerate(self.forward(ids, weights=True).weights):
                trace(layer_step(index, WEIGHTS), w, formula="softmax(Q·Kᵀ/√d_k + mask)")
            return trace
        layer = _check_index("layer", layer, c.n_layers)
        meta["layer"] = layer
        if c.scale_by_layer and c.attn_scale is None:         # why the scale is not 1/√d_k, for the explanation
            meta["scale_reason"] = {"by_layer": layer + 1}
        elif c.attn_scale is not None and c.attn_scale != 1.0 and not c.scale_by_layer:
            meta["scale_reason"] = {"query_pre_attn_scalar": round(c.attn_scale ** -2, 6)}
        x = self.forward(ids, hidden_states=True).hidden_states[layer]       # (T, D): the layer's input
        block = self.blocks[layer]
        mask = self.window_mask(len(ids), len(ids), layer)
        if head is None:
            trace = Trace(f"{self.name}: layer {layer} (the whole block, {c.n_heads} heads)", meta)
            block(x, mask=mask, causal=c.causal, record=trace)
            return trace
        head = _check_index("head", head, c.n_heads)
        kv_head = c.kv_head_of(head)
        meta.update(head=head, kv_head=kv_head, kv_group=self.kv_groups()[kv_head])
        single = block.attention.single(head)                                # its slices and every option
        trace = Trace(f"{self.name}: layer {layer}, head {head} (key/value head {kv_head})", meta)
        normed = block.norm1(x) if block.norm_position == "pre" else x      # post-norm: attention reads x itself
        trace("normed", normed, formula="N₁(x)" if block.norm_position == "pre" else "x")
        single(normed, mask=mask, causal=c.causal, record=trace)
        return trace

    @staticmethod
    def query_index(tokens: Sequence[str], query: int | str) -> int:
        return query_index(tokens, query)


def piece_text(tokenizer, token_id: int) -> str:
    """What one token id stands for, for a reader (see `piece_texts`)."""
    return piece_texts(tokenizer, [token_id])[0]


def piece_texts(tokenizer, ids: Sequence[int]) -> list[str]:
    """What each token id stands for, for a reader. Byte-level BPE (GPT-2, Qwen2 …) stores bytes as stand-in
    letters ("Ġ" a space, "Ċ" a newline, "ìķĪ" the three bytes of 안): the id's bytes are decoded instead
    (" cat", "안"). Bytes that are no whole character alone (a piece of a character split across tokens) and
    control characters are written as their bytes, "<0xEC>", "<0x0A>", as SentencePiece's byte tokens are
    named. SentencePiece's word mark "▁" is the space it stands for. WordPiece's "##" stays: it says the piece
    continues a word, and BERT's readers know it. Special tokens ([CLS], <s>, <|endoftext|>) are shown as they
    are; an id the vocabulary lacks as "<id>"."""
    byte_level = "ByteLevel" in repr(getattr(tokenizer, "decoder", None))      # once for all the ids
    return [_piece(tokenizer.id_to_token(int(i)), int(i), byte_level) for i in ids]


def _piece(raw: str | None, token_id: int, byte_level: bool) -> str:
    if raw is None:
        return f"<{token_id}>"
    if not byte_level:
        return raw.replace("\u2581", " ")
    stand_in = _byte_of_stand_in()
    if not all(c in stand_in for c in raw):          # a special or added token, stored as written
        return raw
    data = bytes(stand_in[c] for c in raw)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(f"<0x{b:02X}>" for b in data)
    return "".join(f"<0x{ord(c):02X}>" if unicodedata.category(c) == "Cc" else c for c in text)


@functools.lru_cache(maxsize=1)
def _byte_of_stand_in() -> dict[str, int]:
    """Byte-level BPE's alphabet (GPT-2's bytes_to_unicode, which the tokenizers library's ByteLevel uses):
    the printable bytes stand for themselves, the other 68 for the letters from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + n): b for n, b in enumerate(others)}}


def find_token(tokens: Sequence[str], text: str) -> int | None:
    """The first row of ``tokens`` that is ``text`` as typed — as written, in lower case (BERT's uncased
    tokenizers), or after a word's leading space (" cat" for cat) — else None."""
    tokens = list(tokens)
    for candidate in (text, text.lower(), " " + text, " " + text.lower()):
        if candidate in tokens:
            return tokens.index(candidate)
    return None


def query_index(tokens: Sequence[str], query: int | str) -> int:
    """The row of ``query`` in ``tokens``, for every model family: a token string (its first occurrence,
    see `find_token`), or a row index (an int, or a string of ASCII digits — parsed strictly, '²' is no
    number — that is no token)."""
    from .._io import as_int

    tokens = list(tokens)
    if isinstance(query, str):
        found = find_token(tokens, query)
        if found is not None:
            return found
        number = as_int(query)
        if number is None:
            raise InputError.keyed("error.query.token", field="query", value=repr(query), tokens=" ".join(tokens))
        query = number
    if isinstance(query, bool) or not isinstance(query, (int, np.integer)) or not 0 <= query < len(tokens):
        raise InputError.keyed("error.query.row", field="query", value=repr(query), n=len(tokens), last=len(tokens) - 1)
    return int(query)


def _check_index(name: str, value, count: int) -> int:
    from ..explain import texts

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < count:
        raise InputError.keyed("error.index.range", field=name, value=repr(value), count=count, last=count - 1,
                               by_lang={lang: {"what": texts.text(lang, f"error.index.{name}")} for lang in texts.LANGS},
                               what=texts.text("en", f"error.index.{name}"))
    return int(value)
