"""The Llama family (Llama, Mistral, Qwen2): config.json and weight names → qkv's decoder.

    ids ─ embed_tokens ─┐                               (no position table: RoPE rotates q and k)
    per layer:  x + Attn(RMSNorm₁(x)) → x + SwiGLU(RMSNorm₂(x))      pre-norm, causal
                Attn: H query heads, G key/value heads (GQA; G = 1 is MQA), RoPE(θ = rope_theta)
                SwiGLU(x) = (SiLU(x·W_gate) ⊙ x·W_up)·W_down
    RMSNorm_f ─ · W_lm (or embed_tokensᵀ when tied) → logits

Differences between the three: Qwen2 has biases on q/k/v (not o); Llama's attention_bias /
mlp_bias switch biases on; Mistral may mask keys beyond a sliding window. Every projection is an
nn.Linear stored (out, in) and is transposed to qkv's row-vector (in, out) — a view, no copy.
"""

from __future__ import annotations

import numpy as np

from .checkpoint import Checkpoint
from .config import ConfigReader, DecoderConfig
from .decoder import DecoderArrays, LayerArrays

__all__ = ["FAMILY", "read_config", "read_weights"]

FAMILY = ("llama", "mistral", "qwen2")


def read_config(data: dict, source: str) -> DecoderConfig:
    """A Llama/Mistral/Qwen2 config.json as a DecoderConfig; InputError naming any unusable field."""
    read = ConfigReader(data, source)
    model_type = data["model_type"]
    read.choice("hidden_act", "silu", {"silu": "swiglu"})
    d = read.integer("hidden_size")
    h = read.integer("num_attention_heads")
    if data.get("head_dim") is None and d % h:
        raise read.fail("num_attention_heads", f"hidden_size {d} does not split into {h} heads (and no head_dim)")
    theta, scaling = _rope(read)
    window = None
    if model_type == "mistral":
        window = read.optional_integer("sliding_window", low=1)
    elif model_type == "qwen2" and read.flag("use_sliding_window", False):
        raise read.fail("use_sliding_window", "true is not supported (Qwen2's per-layer windows)")
    bias = read.flag("attention_bias", model_type == "qwen2") if model_type != "mistral" else False
    return read.check_heads(DecoderConfig(
        model_type=model_type, vocab_size=read.integer("vocab_size"), hidden_size=d,
        n_layers=read.integer("num_hidden_layers"), n_heads=h, n_kv_heads=read.integer("num_key_value_heads", h),
        head_dim=read.integer("head_dim", d // h), intermediate_size=read.integer("intermediate_size"),
        max_positions=read.integer("max_position_embeddings", 2048), norm="rmsnorm",
        norm_eps=read.number("rms_norm_eps", 1e-6), mlp="swiglu", rope_theta=theta,
        bias_qkv=bias, bias_out=bias and model_type == "llama",
        bias_mlp=read.flag("mlp_bias", False) if model_type == "llama" else False,
        tie_embeddings=read.flag("tie_word_embeddings", False), sliding_window=window, rope_scaling=scaling,
        bos_token_id=read.optional_integer("bos_token_id"), eos_token_ids=read.token_ids("eos_token_id"),
        pad_token_id=read.optional_integer("pad_token_id")))


# rope_type → the parameters it needs besides rope_theta (transformers' names)
ROPE_TYPES = {"default": (), "linear": ("factor",),
              "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}


def _rope(read: ConfigReader) -> tuple[float, tuple]:
    """θ and the frequency scaling from rope_parameters (transformers ≥ 5) or rope_theta + rope_scaling (older)."""
    parameters = read.data.get("rope_parameters")
    if isinstance(parameters, dict) and "rope_type" in parameters:   # one set for every layer
        key, scaling = "rope_parameters", parameters
        theta = parameters.get("rope_theta", read.data.get("rope_theta", 10000.0))
    else:
        key, scaling = "rope_scaling", read.data.get("rope_scaling") or {}
        if not isinstance(scaling, dict):
            raise read.fail(key, f"must be an object or null, got {scaling!r}")
        theta = read.data.get("rope_theta", 10000.0)
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise read.fail(key, f"rope_type {kind!r} is not supported (one of {', '.join(ROPE_TYPES)})")
    if scaling.get("partial_rotary_factor", 1.0) != 1.0:
        raise read.fail(key, "partial_rotary_factor other than 1 is not supported")
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0:
        raise read.fail("rope_theta", f"must be a positive number, got {theta!r}")
    values = [("rope_type", kind)] if kind != "default" else []
    for name in ROPE_TYPES[kind]:
        value = scaling.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise read.fail(key, f"{name} must be a positive number for rope_type {kind!r}, got {value!r}")
        values.append((name, float(value)))
    if kind == "llama3" and not scaling["high_freq_factor"] > scaling["low_freq_factor"]:
        raise read.fail(key, "high_freq_factor must exceed low_freq_factor (llama3)")
    return float(theta), tuple(sorted(values))


def read_weights(checkpoint: Checkpoint, config: DecoderConfig, dtype) -> DecoderArrays:
    """The arrays of every layer, row-vector convention, from the Llama family's tensor names."""
    d, f, v = config.hidden_size, config.intermediate_size, config.vocab_size
    h, g, dh = config.n_heads, config.n_kv_heads, config.head_dim
    checkpoint.expect_family("model.embed_tokens.weight", config.model_type)

    def get(name: str, *shape: int) -> np.ndarray:
        return checkpoint.get(name, shape, dtype)

    def linear(name: str, d_in: int, d_out: int, bias: bool):
        # nn.Linear stores (out, in); qkv multiplies x @ W with W (in, out): the transpose, as a view
        weight = get(f"{name}.weight", d_out, d_in).T
        return weight, (get(f"{name}.bias", d_out) if bias else None)

    layers = []
    for i in range(config.n_layers):
        p = f"model.layers.{i}."
        w_q, b_q = linear(p + "self_attn.q_proj", d, h * dh, config.bias_qkv)
        w_k, b_k = linear(p + "self_attn.k_proj", d, g * dh, config.bias_qkv)
        w_v, b_v = linear(p + "self_attn.v_proj", d, g * dh, config.bias_qkv)
        w_o, b_o = linear(p + "self_attn.o_proj", h * dh, d, config.bias_out)
        w_gate, b_gate = linear(p + "mlp.gate_proj", d, f, config.bias_mlp)
        w_up, b_up = linear(p + "mlp.up_proj", d, f, config.bias_mlp)
        w_down, b_down = linear(p + "mlp.down_proj", f, d, config.bias_mlp)
        layers.append(LayerArrays(
            w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
            norm1=(get(p + "input_layernorm.weight", d), None), norm2=(get(p + "post_attention_layernorm.weight", d), None),
            w_in=w_up, b_in=b_up, w_gate=w_gate, b_gate=b_gate, w_out=w_down, b_out=b_down))
    embeddings = get("model.embed_tokens.weight", v, d)                   # (V, D)
    if config.tie_embeddings and "lm_head.weight" not in checkpoint:
        unembedding = embeddings.T                                         # (D, V), a view
    else:
        unembedding = get("lm_head.weight", v, d).T                        # nn.Linear (V, D) → (D, V)
    return DecoderArrays(embeddings, None, tuple(layers), (get("model.norm.weight", d), None), unembedding)
