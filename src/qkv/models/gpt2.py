"""GPT-2: config.json and weight names → qkv's decoder (`decoder.CausalLM`).

    ids ─ wte + wpe (learned positions) ─┐
    per layer:  x + Attn(LN₁(x)) → x + MLP(LN₂(x))        pre-norm, causal, GELU (tanh form)
    LN_f ─ · wteᵀ (tied) → logits

GPT-2's Conv1D layers store their weights as (in, out) — already qkv's row-vector convention
(``x @ W``), unlike nn.Linear's (out, in) — so nothing is transposed; c_attn's (D, 3D) matrix is
[W_Q | W_K | W_V], split by columns.
"""

from __future__ import annotations

import numpy as np

from .checkpoint import Checkpoint
from .config import ConfigReader, DecoderConfig, with_defaults
from .decoder import DecoderArrays, LayerArrays

__all__ = ["read_config", "read_weights"]

ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
               "gelu": "gelu", "gelu_python": "gelu", "relu": "relu", "silu": "silu", "swish": "silu",
               "quick_gelu": "quick_gelu"}


def read_config(data: dict, source: str) -> DecoderConfig:
    """A GPT-2 config.json (model_type "gpt2") as a DecoderConfig; InputError naming any unusable field."""
    read = ConfigReader(with_defaults(data), source)
    if read.flag("add_cross_attention", False):
        raise read.fail("add_cross_attention", "error.gpt2.cross")
    d = read.integer("n_embd", names=("hidden_size",))
    h = read.integer("n_head", names=("num_attention_heads",))
    if d % h:
        raise read.fail("n_head", "error.config.split", width_key="n_embd", width=d, heads=h)
    inner = data.get("n_inner")
    return read.check_heads(DecoderConfig(
        model_type="gpt2", vocab_size=read.integer("vocab_size"), hidden_size=d,
        n_layers=read.integer("n_layer", names=("num_hidden_layers",)), n_heads=h, n_kv_heads=h, head_dim=d // h,
        intermediate_size=4 * d if inner is None else read.integer("n_inner"),
        max_positions=read.integer("n_positions", 1024, names=("max_position_embeddings",)),
        norm="layernorm", norm_eps=read.number("layer_norm_epsilon", 1e-5),
        mlp=read.choice("activation_function", "gelu_new", ACTIVATIONS), rope_theta=None,
        bias_qkv=True, bias_out=True, bias_mlp=True, tie_embeddings=read.flag("tie_word_embeddings", True),
        bos_token_id=read.optional_integer("bos_token_id"), eos_token_ids=read.token_ids("eos_token_id"),
        pad_token_id=read.optional_integer("pad_token_id"),
        # scale_attn_weights false: q·kᵀ unscaled; scale_attn_by_inverse_layer_idx: layer l's scale ÷ (l + 1)
        attn_scale=None if read.flag("scale_attn_weights", True) else 1.0,
        scale_by_layer=read.flag("scale_attn_by_inverse_layer_idx", False)))


def read_weights(checkpoint: Checkpoint, config: DecoderConfig, dtype) -> DecoderArrays:
    """The arrays of every layer, row-vector convention, from GPT-2's tensor names.

    Names may carry the "transformer." prefix (GPT2LMHeadModel) or not (GPT2Model). A separate
    lm_head.weight (V, D) — nn.Linear, (out, in) — is used, transposed, whenever it is saved (`Checkpoint.unembedding`).
    """
    prefix = "transformer." if "transformer.wte.weight" in checkpoint else ""
    checkpoint.expect_family(prefix + "wte.weight", "gpt2")
    d, f, v = config.hidden_size, config.intermediate_size, config.vocab_size

    def get(name: str, *shape: int) -> np.ndarray:
        return checkpoint.get(prefix + name, shape, dtype)

    layers = []
    for i in range(config.n_layers):
        p = f"h.{i}."
        w_qkv, b_qkv = get(p + "attn.c_attn.weight", d, 3 * d), get(p + "attn.c_attn.bias", 3 * d)  # (D, 3D): in, out
        layers.append(LayerArrays(
            w_q=w_qkv[:, :d], w_k=w_qkv[:, d:2 * d], w_v=w_qkv[:, 2 * d:],
            b_q=b_qkv[:d], b_k=b_qkv[d:2 * d], b_v=b_qkv[2 * d:],
            w_o=get(p + "attn.c_proj.weight", d, d), b_o=get(p + "attn.c_proj.bias", d),
            norm1=(get(p + "ln_1.weight", d), get(p + "ln_1.bias", d)),
            norm2=(get(p + "ln_2.weight", d), get(p + "ln_2.bias", d)),
            w_in=get(p + "mlp.c_fc.weight", d, f), b_in=get(p + "mlp.c_fc.bias", f),
            w_out=get(p + "mlp.c_proj.weight", f, d), b_out=get(p + "mlp.c_proj.bias", d)))
    embeddings = get("wte.weight", v, d)                                   # (V, D)
    unembedding = checkpoint.unembedding("lm_head.weight", embeddings, config.tie_embeddings, dtype)   # (D, V)
    return DecoderArrays(embeddings, get("wpe.weight", config.max_positions, d), tuple(layers),
                         (get("ln_f.weight", d), get("ln_f.bias", d)), unembedding)
