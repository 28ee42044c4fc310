"""GPT-NeoX (Pythia), OPT and Phi: config.json and weight names → qkv's decoder, on the same block.

    gpt_neox: x + Attn(LN₁(x)) + MLP(LN₂(x))  (use_parallel_residual; else sequential), GELU, RoPE on
              the first rotary_pct of each head; query_key_value (3D, D) interleaved per head
              [q_h | k_h | v_h], re-ordered into W_Q, W_K, W_V at load; untied embed_out.
    opt:      learned positions at rows p + 2 (OPT's offset), ReLU, pre-norm (do_layer_norm_before)
              or post-norm; biases everywhere; tied lm_head; word_embed_proj_dim P ≠ D: embeddings (V, P)
              · project_in (P, D), and project_out (D, P) before the head (V, P); layer_norm_elementwise_affine
              false: LayerNorms without weight and bias.
    phi:      x + Attn(LN(x)) + MLP(LN(x)) with one LayerNorm, partial rotary, GELU (tanh), a dense
              output projection, lm_head with a bias; qk_layernorm: a LayerNorm over each q and k head.
Every nn.Linear (out, in) is transposed to qkv's (in, out).
"""

from __future__ import annotations

import numpy as np

from .checkpoint import Checkpoint
from .config import ConfigReader, DecoderConfig, rotary_width, with_defaults
from .decoder import DecoderArrays, LayerArrays
from .gpt2 import ACTIVATIONS
from .llama import _rope

__all__ = ["read_config", "read_weights"]


def read_config(data: dict, source: str) -> DecoderConfig:
    data = with_defaults(data)
    read = ConfigReader(data, source)
    model_type = data["model_type"]
    d = read.integer("hidden_size")
    h = read.integer("num_attention_heads")
    # Phi's attention reads head_dim (q_proj is (H·head_dim, D)); GPT-NeoX's splits hidden_size, and its rotary
    # embedding alone reads head_dim (the width its frequencies are computed for)
    if (model_type != "phi" or data.get("head_dim") is None) and d % h:
        raise read.fail("num_attention_heads", "error.config.split", width_key="hidden_size", width=d, heads=h)
    head_dim = read.integer("head_dim", d // h) if model_type == "phi" else d // h
    common = dict(model_type=model_type, vocab_size=read.integer("vocab_size"), hidden_size=d,
                  n_layers=read.integer("num_hidden_layers"), n_heads=h, head_dim=head_dim, norm="layernorm",
                  bos_token_id=read.optional_integer("bos_token_id"), eos_token_ids=read.token_ids("eos_token_id"),
                  pad_token_id=read.optional_integer("pad_token_id"))
    if model_type == "gpt_neox":
        # GPTNeoXConfig takes θ and the rotated fraction of each head from rotary_emb_base and rotary_pct (10000 and
        # 0.25 when absent) where the rope dict gives none, and ignores a top-level rope_theta or partial_rotary_factor
        fraction = read.number("rotary_pct", 0.25, high=1.0)         # a fraction of the head: (0, 1]
        rope_read = ConfigReader({**data, "rope_theta": read.number("rotary_emb_base", 10_000.0),
                                  "partial_rotary_factor": fraction}, source)
        theta, scaling, partial = _rope(rope_read, model_type)
        bias = read.flag("attention_bias", True)
        return read.check_heads(DecoderConfig(
            **common, n_kv_heads=h, intermediate_size=read.integer("intermediate_size"),
            max_positions=read.integer("max_position_embeddings", 2048), norm_eps=read.number("layer_norm_eps", 1e-5),
            mlp=read.choice("hidden_act", "gelu", ACTIVATIONS), rope_theta=theta, rope_scaling=scaling,
            **_rotary(read, head_dim, partial, frequency_width=read.integer("head_dim", head_dim)),
            bias_qkv=bias, bias_out=bias, bias_mlp=True,
            tie_embeddings=read.flag("tie_word_embeddings", False), parallel=read.flag("use_parallel_residual", True)))
    if model_type == "phi":
        theta, scaling, partial = _rope(read, model_type)
        g = read.integer("num_key_value_heads", h)
        return read.check_heads(DecoderConfig(
            **{**common, "n_kv_heads": g}, intermediate_size=read.integer("intermediate_size"),
            max_positions=read.integer("max_position_embeddings", 2048), norm_eps=read.number("layer_norm_eps", 1e-5),
            mlp=read.choice("hidden_act", "gelu_new", ACTIVATIONS), rope_theta=theta, rope_scaling=scaling,
            **_rotary(read, head_dim, partial, odd=False), bias_qkv=True, bias_out=True, bias_mlp=True,
            tie_embeddings=read.flag("tie_word_embeddings", False), parallel=True, shared_norm=True, lm_head_bias=True,
            qk_norm=read.flag("qk_layernorm", False)))
    # opt
    projection = read.integer("word_embed_proj_dim", d)          # ≠ D: project_in / project_out (OPT-350m)
    pre = read.flag("do_layer_norm_before", True)
    bias = read.flag("enable_bias", True)
    return read.check_heads(DecoderConfig(
        **common, n_kv_heads=h, intermediate_size=read.integer("ffn_dim"),
        max_positions=read.integer("max_position_embeddings", 2048), norm_eps=1e-5,
        mlp=read.choice("activation_function", "relu", ACTIVATIONS), rope_theta=None,
        bias_qkv=bias, bias_out=bias, bias_mlp=bias, tie_embeddings=read.flag("tie_word_embeddings", True),
        position_offset=2, norm_position="pre" if pre else "post",
        final_norm=pre and not read.flag("_remove_final_layer_norm", False),
        embed_width=None if projection == d else projection, norm_affine=read.flag("layer_norm_elementwise_affine", True)))


def _rotary(read: ConfigReader, head_dim: int, partial: float, **options) -> dict:
    rotary, rope_dim = rotary_width(read, head_dim, partial, **options)
    return dict(rotary_dim=rotary, rope_dim=rope_dim)


def read_weights(checkpoint: Checkpoint, config: DecoderConfig, dtype) -> DecoderArrays:
    d, f, v, h, dh = config.hidden_size, config.intermediate_size, config.vocab_size, config.n_heads, config.head_dim

    def get(name: str, *shape: int) -> np.ndarray:
        return checkpoint.get(name, shape, dtype)

    def linear(name: str, d_in: int, d_out: int, bias: bool = True):
        return get(f"{name}.weight", d_out, d_in).T, (get(f"{name}.bias", d_out) if bias else None)

    def norm(name: str, width: int = d):
        if not config.norm_affine:           # OPT's layer_norm_elementwise_affine false: x̂ · 1 + 0, exactly x̂
            return np.ones(width, dtype), np.zeros(width, dtype)
        return get(name + ".weight", width), get(name + ".bias", width)

    layers = []
    if config.model_type == "gpt_neox":
        root = "gpt_neox."
        checkpoint.expect_family(root + "embed_in.weight", "gpt_neox")
        for i in range(config.n_layers):
            p = f"{root}layers.{i}."
            w, b = linear(p + "attention.query_key_value", d, 3 * d, config.bias_qkv)
            # rows of the (3D, D) matrix are (head, [q | k | v], column): gather each projection's columns
            by_head = w.reshape(d, h, 3, dh)
            w_q, w_k, w_v = (np.ascontiguousarray(by_head[:, :, j, :].reshape(d, d)) for j in range(3))
            b_q = b_k = b_v = None
            if b is not None:
                b_q, b_k, b_v = (np.ascontiguousarray(b.reshape(h, 3, dh)[:, j, :].reshape(d)) for j in range(3))
            w_o, b_o = linear(p + "attention.dense", d, d, config.bias_out)
            w_in, b_in = linear(p + "mlp.dense_h_to_4h", d, f)
            w_out, b_out = linear(p + "mlp.dense_4h_to_h", f, d)
            layers.append(LayerArrays(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
                                      norm1=norm(p + "input_layernorm"), norm2=norm(p + "post_attention_layernorm"),
                                      w_in=w_in, b_in=b_in, w_out=w_out, b_out=b_out))
        embeddings = get(root + "embed_in.weight", v, d)
        unembedding = checkpoint.unembedding("embed_out.weight", embeddings, config.tie_embeddings, dtype)
        return DecoderArrays(embeddings, None, tuple(layers), norm(root + "final_layer_norm"), unembedding)
    if config.model_type == "phi":
        checkpoint.expect_family("model.embed_tokens.weight", "phi")
        g = config.n_kv_heads
        for i in range(config.n_layers):
            p = f"model.layers.{i}."
            w_q, b_q = linear(p + "self_attn.q_proj", d, h * dh)
            w_k, b_k = linear(p + "self_attn.k_proj", d, g * dh)
            w_v, b_v = linear(p + "self_attn.v_proj", d, g * dh)
            w_o, b_o = linear(p + "self_attn.dense", h * dh, d)
            w_in, b_in = linear(p + "mlp.fc1", d, f)
            w_out, b_out = linear(p + "mlp.fc2", f, d)
            shared = norm(p + "input_layernorm")
            # qk_layernorm: a LayerNorm (weight and bias) over each query and key head, before RoPE
            heads = dict(q_norm=norm(p + "self_attn.q_layernorm", dh), k_norm=norm(p + "self_attn.k_layernorm", dh)) \
                if config.qk_norm else {}
            layers.append(LayerArrays(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
                                      norm1=shared, norm2=shared, w_in=w_in, b_in=b_in, w_out=w_out, b_out=b_out, **heads))
        embeddings = get("model.embed_tokens.weight", v, d)
        unembedding, bias = linear("lm_head", d, v)
        return DecoderArrays(embeddings, None, tuple(layers), norm("model.final_layernorm"), unembedding, bias)
    root = "model.decoder."
    checkpoint.expect_family(root + "embed_tokens.weight", "opt")
    bias = config.bias_qkv
    for i in range(config.n_layers):
        p = f"{root}layers.{i}."
        w_q, b_q = linear(p + "self_attn.q_proj", d, d, bias)
        w_k, b_k = linear(p + "self_attn.k_proj", d, d, bias)
        w_v, b_v = linear(p + "self_attn.v_proj", d, d, bias)
        w_o, b_o = linear(p + "self_attn.out_proj", d, d, bias)
        w_in, b_in = linear(p + "fc1", d, f, bias)
        w_out, b_out = linear(p + "fc2", f, d, bias)
        layers.append(LayerArrays(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
                                  norm1=norm(p + "self_attn_layer_norm"), norm2=norm(p + "final_layer_norm"),
                                  w_in=w_in, b_in=b_in, w_out=w_out, b_out=b_out))
    p = config.embed_width or d                   # word_embed_proj_dim: the embeddings' and the head's width
    embeddings = get(root + "embed_tokens.weight", v, p)
    positions = get(root + "embed_positions.weight", config.max_positions + config.position_offset, d)
    unembedding = checkpoint.unembedding("lm_head.weight", embeddings, config.tie_embeddings, dtype)
    final = norm(root + "final_layer_norm") if config.final_norm else None
    project_in = project_out = None
    if config.embed_width is not None:            # nn.Linear without bias, (out, in) → (in, out)
        project_in, _ = linear(root + "project_in", p, d, False)
        project_out, _ = linear(root + "project_out", d, p, False)
    return DecoderArrays(embeddings, positions, tuple(layers), final, unembedding, project_in=project_in,
                         project_out=project_out)
