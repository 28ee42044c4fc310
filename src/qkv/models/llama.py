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

import math
import warnings

import numpy as np

from ..explain import texts
from .checkpoint import Checkpoint
from .config import ConfigReader, DecoderConfig, rotary_width, with_defaults
from .decoder import DecoderArrays, LayerArrays

__all__ = ["FAMILY", "read_config", "read_weights"]

FAMILY = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3", "mixtral")
GEMMA = ("gemma", "gemma2", "gemma3_text")
# hidden_act values of the gated MLP → qkv's activation names (transformers' ACT2FN keys)
GATED_ACTIVATIONS = {"silu": "silu", "swish": "silu", "gelu": "gelu", "relu": "relu", "gelu_pytorch_tanh": "gelu_tanh",
                     "gelu_new": "gelu_tanh", "gelu_fast": "gelu_tanh"}


def read_config(data: dict, source: str) -> DecoderConfig:
    """A config.json of the Llama-named families as a DecoderConfig; InputError naming any unusable field.

    llama, mistral, qwen2 (q/k/v biases, always — transformers builds them whatever attention_bias
    says), qwen3 (per-head q/k RMSNorm), gemma (RMSNorm (1 + w), embeddings ·√D, GeGLU), gemma2 (+
    sandwich norms, attention and final logit soft-capping, query_pre_attn_scalar, alternating
    windows), gemma3_text (+ q/k norms, a local RoPE θ on sliding layers), phi3 (fused qkv_proj and
    gate_up_proj, split at load), mixtral (a sparse mixture of experts)."""
    data = with_defaults(data)
    read = ConfigReader(data, source)
    model_type = data["model_type"]
    gemma = model_type in GEMMA
    # use_bidirectional_attention: Gemma 3 drops the causal mask (full layers see every key; sliding layers the keys
    # less than sliding_window // 2 + 1 away on either side, as Gemma3TextConfig halves the window); Gemma and
    # Gemma 2 keep the mask under eager attention and drop it under sdpa (refused); the others never read it (warned)
    bidirectional = read.flag("use_bidirectional_attention", False)
    if bidirectional and model_type in ("gemma", "gemma2"):
        raise read.fail("use_bidirectional_attention", "error.llama.bidirectional", model_type=model_type)
    if bidirectional and model_type != "gemma3_text":
        warnings.warn(f"{source}: use_bidirectional_attention: " + texts.text("en", "warn.llama.bidirectional",
                                                                               model_type=model_type),
                      UserWarning, stacklevel=3)
        bidirectional = False
    # Gemma 2 and 3 read hidden_activation alone, the others hidden_act; GemmaConfig reads a legacy "gelu" as the
    # tanh form its releases meant
    act_key = "hidden_activation" if model_type in ("gemma2", "gemma3_text") else "hidden_act"
    activation = read.choice(act_key, "gelu_pytorch_tanh" if gemma else "silu", GATED_ACTIVATIONS)
    if model_type == "gemma" and activation == "gelu":
        activation = "gelu_tanh"
    d = read.integer("hidden_size")
    h = read.integer("num_attention_heads")
    if data.get("head_dim") is None and d % h:
        raise read.fail("num_attention_heads", "error.config.split_no_head_dim", width=d, heads=h)
    head_dim = read.integer("head_dim", d // h)
    n_layers = read.integer("num_hidden_layers")
    theta, scaling, partial = _rope(read, model_type)
    window, layer_types = None, ()
    if model_type in ("mistral", "mixtral", "phi3"):
        window = read.optional_integer("sliding_window", low=1)
    elif model_type in ("qwen2", "qwen3"):
        if read.flag("use_sliding_window", False):
            window = read.optional_integer("sliding_window", low=1)
        first = read.integer("max_window_layers", 28, low=0)     # layers from this one on are windowed
        layer_types = read.layer_types(n_layers) or tuple(
            "sliding_attention" if window is not None and i >= first else "full_attention" for i in range(n_layers))
    elif model_type in ("gemma2", "gemma3_text"):
        window = read.optional_integer("sliding_window", low=1)
        if bidirectional:                            # Gemma3TextConfig: |i − j| < sliding_window // 2 + 1 (it fails
            window = read.integer("sliding_window") // 2 + 1     # on sliding_window: null, and so does qkv)
        # Gemma3TextConfig reads sliding_window_pattern, never the _sliding_window_pattern it writes
        pattern = 2 if model_type == "gemma2" else read.integer("sliding_window_pattern", 6)
        layer_types = read.layer_types(n_layers) or tuple(
            "full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n_layers))
    sliding = [i for i, kind in enumerate(layer_types) if kind == "sliding_attention"]
    if window is None and sliding:               # transformers' sliding-window mask then fails on every call
        raise read.fail("layer_types", "error.config.sliding_without_window", indices=", ".join(map(str, sliding)))
    if model_type == "qwen2":
        bias = True                      # Qwen2Attention builds q/k/v with bias=True whatever attention_bias says
    elif model_type in ("llama", "qwen3", "gemma", "gemma2", "gemma3_text", "mixtral"):
        bias = read.flag("attention_bias", False)
        if model_type == "mixtral":
            bias = False
    else:
        bias = False
    rotary = rope_dim = None
    if model_type == "phi3":                 # Phi-3 rotates the first partial_rotary_factor of each head
        if data.get("partial_rotary_factor") not in (None, 1, 1.0):
            partial = read.number("partial_rotary_factor", 1.0, high=1.0)
        rotary, rope_dim = rotary_width(read, head_dim, partial)
    elif partial != 1.0 and dict(scaling).get("rope_type", "default") != "default":
        # transformers' scaled frequencies honour the factor, its attention rotates whole heads: it cannot run
        raise read.fail("partial_rotary_factor", "error.llama.partial_scaled", model_type=model_type, partial=partial)
    # else: the other families' default RoPE turns every column whatever partial_rotary_factor says (transformers
    # 5.25's LlamaRotaryEmbedding and its copies read head_dim alone), and so does qkv
    experts = top_k = 0
    if model_type == "mixtral":
        experts, top_k = read.integer("num_local_experts"), read.integer("num_experts_per_tok")
        if top_k > experts:
            raise read.fail("num_experts_per_tok", "error.config.experts", top_k=top_k, experts=experts)
    softcap = read.optional_number("attn_logit_softcapping") if model_type == "gemma2" else None
    if model_type == "gemma3_text" and read.optional_number("attn_logit_softcapping") is not None:
        # transformers 5.25's Gemma 3 keeps the field but never passes it to its attention: qkv follows the numbers
        # transformers computes, and says so
        warnings.warn(f"{source}: attn_logit_softcapping: " + texts.text("en", "warn.gemma3.softcap", value=data["attn_logit_softcapping"]),
                      UserWarning, stacklevel=3)
    final_softcap = read.optional_number("final_logit_softcapping") if model_type in ("gemma2", "gemma3_text") else None
    scalar = read.number("query_pre_attn_scalar", head_dim) if model_type in ("gemma2", "gemma3_text") else None
    local_theta = None
    if model_type == "gemma3_text":
        local_theta = _local_theta(read)
    return read.check_heads(DecoderConfig(
        model_type=model_type, vocab_size=read.integer("vocab_size"), hidden_size=d,
        n_layers=n_layers, n_heads=h, n_kv_heads=read.integer("num_key_value_heads", h),
        head_dim=head_dim, intermediate_size=read.integer("intermediate_size"),
        max_positions=read.integer("max_position_embeddings", 2048), norm="rmsnorm",
        norm_eps=read.number("rms_norm_eps", 1e-6), mlp="swiglu" if activation == "silu" else activation,
        rope_theta=theta, bias_qkv=bias, bias_out=bias and model_type != "qwen2",
        bias_mlp=read.flag("mlp_bias", False) if model_type == "llama" else False,
        tie_embeddings=read.flag("tie_word_embeddings", gemma), sliding_window=window, rope_scaling=scaling,
        bos_token_id=read.optional_integer("bos_token_id"), eos_token_ids=read.token_ids("eos_token_id"),
        pad_token_id=read.optional_integer("pad_token_id"), rotary_dim=rotary, rope_dim=rope_dim, gated=True,
        qk_norm=model_type in ("qwen3", "gemma3_text"), sandwich=model_type in ("gemma2", "gemma3_text"),
        norm_offset=1.0 if gemma else 0.0,
        # transformers keeps √D in a float32 buffer (torch.tensor(hidden_size ** 0.5)) cast to the weights' dtype
        embed_scale=float(np.float32(d ** 0.5)) if gemma else None,
        attn_scale=None if scalar is None else scalar ** -0.5, attn_softcap=softcap, final_softcap=final_softcap,
        layer_types=layer_types, local_rope_theta=local_theta, n_experts=experts, experts_per_token=top_k,
        causal=not bidirectional))


def _local_theta(read: ConfigReader) -> float:
    """Gemma 3's RoPE θ on sliding layers: rope_parameters["sliding_attention"] or rope_local_base_freq."""
    parameters = read.data.get("rope_parameters")
    if isinstance(parameters, dict) and isinstance(parameters.get("sliding_attention"), dict):
        local = parameters["sliding_attention"]
        if local.get("rope_type", "default") != "default":
            raise read.fail("rope_parameters", "error.rope.sliding_scaled")
        value = local.get("rope_theta", read.data.get("rope_local_base_freq", 10000.0))
    else:
        value = read.data.get("rope_local_base_freq", 10000.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not value > 0:
        raise read.fail("rope_local_base_freq", "error.config.finite_positive", value=repr(value))
    return float(value)


# rope_type → the parameters it needs besides rope_theta (transformers' names)
ROPE_TYPES = {"default": (), "linear": ("factor",), "dynamic": ("factor",),
              "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
              "yarn": ("factor",), "longrope": ()}
# parameters a rope_type may give (transformers' defaults otherwise)
ROPE_OPTIONAL = {"yarn": ("original_max_position_embeddings", "beta_fast", "beta_slow", "attention_factor",
                          "mscale", "mscale_all_dim")}


def _rope(read: ConfigReader, model_type: str = "llama") -> tuple[float, tuple, float]:
    """θ, the frequency scaling and the partial rotary factor from rope_parameters (transformers ≥ 5) or
    rope_theta + rope_scaling (older)."""
    parameters = read.data.get("rope_parameters")
    nested = isinstance(parameters, dict) and isinstance(parameters.get("full_attention"), dict)
    if nested:                                                       # per layer type (Gemma 3)
        parameters = parameters["full_attention"]
    # a non-empty rope_scaling wins over rope_parameters (transformers' convert_rope_params_to_dict:
    # rope_scaling or rope_parameters)
    legacy = bool(read.data.get("rope_scaling")) and not nested
    if isinstance(parameters, dict) and parameters and not legacy:   # one set for every layer (rope_type: default)
        key, scaling = "rope_parameters", parameters
    else:
        key, scaling = "rope_scaling", read.data.get("rope_scaling") or {}
        if not isinstance(scaling, dict):
            raise read.fail(key, "error.config.object_or_null", value=repr(scaling))
    # the rope dict's own θ, else config.json's rope_theta, else the family's default (config.DEFAULTS)
    theta = scaling.get("rope_theta", read.data.get("rope_theta", 10000.0))
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if model_type == "phi3" and kind in ("su", "yarn"):
        kind = "longrope"                    # Phi3Config reads its older names "su" and "yarn" as longrope
    elif model_type == "phi3" and kind not in ("default", "longrope"):
        raise read.fail(key, "error.config.choice", value=repr(kind), choices="default, longrope")   # as Phi3Config
    if kind not in ROPE_TYPES:
        raise read.fail(key, "error.rope.type", kind=repr(kind), choices=", ".join(ROPE_TYPES))
    partial = scaling.get("partial_rotary_factor", read.data.get("partial_rotary_factor", 1.0))
    if isinstance(partial, bool) or not isinstance(partial, (int, float)) or not 0 < partial <= 1:
        raise read.fail(key, "error.rope.partial", value=repr(partial))
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not math.isfinite(theta) or not theta > 0:
        raise read.fail("rope_theta", "error.config.finite_positive", value=repr(theta))
    values = [("rope_type", kind)] if kind != "default" else []
    for name in ROPE_TYPES[kind]:
        value = scaling.get(name)
        if name == "original_max_position_embeddings" and read.data.get(name) is not None:
            value = read.data[name]        # config.json's top-level field wins, as transformers' standardize_rope_params
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not value > 0:
            raise read.fail(key, "error.rope.factor", name=name, kind=repr(kind), value=repr(value))
        values.append((name, float(value)))
    for name in ROPE_OPTIONAL.get(kind, ()):
        value = scaling.get(name)
        if name == "original_max_position_embeddings" and read.data.get(name) is not None:
            value = read.data[name]        # as above (yarn)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not value > 0:
            raise read.fail(key, "error.rope.factor", name=name, kind=repr(kind), value=repr(value))
        values.append((name, float(value)))
    if kind == "longrope":
        values += _longrope(read, key, scaling, model_type)
    if kind == "yarn" and scaling.get("truncate", True) is not True:
        raise read.fail(key, "error.rope.yarn_truncate")
    if kind == "llama3" and not scaling["high_freq_factor"] > scaling["low_freq_factor"]:
        raise read.fail(key, "error.rope.llama3_factors")
    return float(theta), tuple(sorted(values)), float(partial)


def _longrope(read: ConfigReader, key: str, scaling: dict, model_type: str) -> list[tuple]:
    """LongRoPE's parameters as transformers 5.25 reads them (`_compute_longrope_parameters`): short_factor and
    long_factor (one number per frequency: θᵢ ÷ factorᵢ), original_max_position_embeddings (config.json's top-level
    field wins over the rope dict's, as `standardize_rope_params` gives it priority; Phi3Config's default is 4096;
    else max_position_embeddings), factor (else max_position_embeddings / original) and attention_factor (else
    √(1 + ln factor / ln original) for factor > 1, else 1)."""
    values = []
    for name in ("short_factor", "long_factor"):
        factors = scaling.get(name)
        if not isinstance(factors, list) or not factors or any(
                isinstance(f, bool) or not isinstance(f, (int, float)) or not math.isfinite(f) or not f > 0 for f in factors):
            raise read.fail(key, "error.rope.longrope_factors", name=name, value=repr(factors)[:80])
        values.append((name, tuple(float(f) for f in factors)))
    top = read.data.get("original_max_position_embeddings")     # Phi3Config's class default 4096 among them
    original = top if top is not None else scaling.get("original_max_position_embeddings",
                                                       read.data.get("max_position_embeddings", 2048))
    if isinstance(original, bool) or not isinstance(original, int) or original < 1:
        raise read.fail("original_max_position_embeddings", "error.config.integer", low=1, value=repr(original))
    factor = scaling.get("factor")
    if factor is None:
        factor = read.integer("max_position_embeddings", 2048) / original
    elif isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or not factor > 0:
        raise read.fail(key, "error.rope.factor", name="factor", kind="'longrope'", value=repr(factor))
    attention = scaling.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    elif isinstance(attention, bool) or not isinstance(attention, (int, float)) or not math.isfinite(attention) \
            or not attention > 0:
        raise read.fail(key, "error.rope.factor", name="attention_factor", kind="'longrope'", value=repr(attention))
    return values + [("original_max_position_embeddings", int(original)), ("factor", float(factor)),
                     ("attention_factor", float(attention))]


def read_weights(checkpoint: Checkpoint, config: DecoderConfig, dtype) -> DecoderArrays:
    """The arrays of every layer, row-vector convention, from the Llama-named families' tensors."""
    d, f, v = config.hidden_size, config.intermediate_size, config.vocab_size
    h, g, dh = config.n_heads, config.n_kv_heads, config.head_dim
    checkpoint.expect_family("model.embed_tokens.weight", config.model_type)

    def get(name: str, *shape: int) -> np.ndarray:
        return checkpoint.get(name, shape, dtype)

    def linear(name: str, d_in: int, d_out: int, bias: bool):
        # nn.Linear stores (out, in); qkv multiplies x @ W with W (in, out): the transpose, as a view
        weight = get(f"{name}.weight", d_out, d_in).T
        return weight, (get(f"{name}.bias", d_out) if bias else None)

    def norm(name: str, width: int = d):
        return get(name + ".weight", width), None

    layers = []
    for i in range(config.n_layers):
        p = f"model.layers.{i}."
        if config.model_type == "phi3":              # [W_Q | W_K | W_V] and [W_gate | W_up] stored as one matrix each
            w_qkv, _ = linear(p + "self_attn.qkv_proj", d, (h + 2 * g) * dh, False)
            w_q, w_k, w_v = w_qkv[:, :h * dh], w_qkv[:, h * dh:(h + g) * dh], w_qkv[:, (h + g) * dh:]
            b_q = b_k = b_v = None
        else:
            w_q, b_q = linear(p + "self_attn.q_proj", d, h * dh, config.bias_qkv)
            w_k, b_k = linear(p + "self_attn.k_proj", d, g * dh, config.bias_qkv)
            w_v, b_v = linear(p + "self_attn.v_proj", d, g * dh, config.bias_qkv)
        w_o, b_o = linear(p + "self_attn.o_proj", h * dh, d, config.bias_out)
        mlp: dict = {}
        if config.n_experts and p + "mlp.experts.gate_up_proj" in checkpoint:
            # the layout transformers 5.25 keeps in memory (save_pretrained(save_original_format=False) writes it):
            # gate_up_proj (E, 2F, D) = [w1 | w3] per expert, down_proj (E, D, F), the router at mlp.gate
            e = config.n_experts
            mlp["router"] = get(p + "mlp.gate.weight", e, d).T                             # (D, E)
            gate_up = get(p + "mlp.experts.gate_up_proj", e, 2 * f, d)
            down = get(p + "mlp.experts.down_proj", e, d, f)
            mlp["experts"] = tuple((gate_up[i, :f].T, gate_up[i, f:].T, down[i].T) for i in range(e))
        elif config.n_experts:                       # the original layout: one w1, w3, w2 per expert
            moe = p + "block_sparse_moe."
            mlp["router"] = get(moe + "gate.weight", config.n_experts, d).T                  # (D, E)
            mlp["experts"] = tuple((linear(f"{moe}experts.{e}.w1", d, f, False)[0], linear(f"{moe}experts.{e}.w3", d, f, False)[0],
                                    linear(f"{moe}experts.{e}.w2", f, d, False)[0]) for e in range(config.n_experts))
        elif config.model_type == "phi3":
            w_gate_up, _ = linear(p + "mlp.gate_up_proj", d, 2 * f, False)
            mlp.update(w_gate=w_gate_up[:, :f], w_in=w_gate_up[:, f:], w_out=linear(p + "mlp.down_proj", f, d, False)[0])
        else:
            w_gate, b_gate = linear(p + "mlp.gate_proj", d, f, config.bias_mlp)
            w_up, b_up = linear(p + "mlp.up_proj", d, f, config.bias_mlp)
            w_down, b_down = linear(p + "mlp.down_proj", f, d, config.bias_mlp)
            mlp.update(w_in=w_up, b_in=b_up, w_gate=w_gate, b_gate=b_gate, w_out=w_down, b_out=b_down)
        if config.sandwich:                           # Gemma 2/3: a norm before and after each sublayer
            norms = dict(norm1=norm(p + "input_layernorm"), attention_out_norm=norm(p + "post_attention_layernorm"),
                         norm2=norm(p + "pre_feedforward_layernorm"), mlp_out_norm=norm(p + "post_feedforward_layernorm"))
        else:
            norms = dict(norm1=norm(p + "input_layernorm"), norm2=norm(p + "post_attention_layernorm"))
        if config.qk_norm:
            norms.update(q_norm=norm(p + "self_attn.q_norm", dh), k_norm=norm(p + "self_attn.k_norm", dh))
        layers.append(LayerArrays(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o, **norms, **mlp))
    embeddings = get("model.embed_tokens.weight", v, d)                   # (V, D)
    unembedding = checkpoint.unembedding("lm_head.weight", embeddings, config.tie_embeddings, dtype)   # (D, V)
    return DecoderArrays(embeddings, None, tuple(layers), norm("model.norm"), unembedding)
