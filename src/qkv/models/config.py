"""The fields of a decoder's config.json that qkv uses, validated: one frozen `DecoderConfig` for every family.

GPT-2 (`gpt2.py`) and the Llama family (`llama.py`: llama, mistral, qwen2) each read their own
config.json names into it; the model (`decoder.py`) only ever sees a `DecoderConfig`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError

__all__ = ["DecoderConfig", "ConfigReader", "rotary_width", "DEFAULTS", "with_defaults"]

# transformers 5.25's config classes, field by field where the default is not the same for every family: a field
# left out of config.json takes its family's value, as the config class gives it (a field written as null stays
# null, as there). Shapes (hidden_size, vocab_size, …) have no default here: transformers' would contradict the
# weights, and qkv refuses their absence. tests/test_models_parity.py removes each field in turn and compares.
DEFAULTS: dict[str, dict] = {
    "gpt2": dict(n_positions=1024, layer_norm_epsilon=1e-5, activation_function="gelu_new", tie_word_embeddings=True),
    "llama": dict(max_position_embeddings=2048, rms_norm_eps=1e-6, hidden_act="silu", rope_theta=10_000.0,
                  attention_bias=False, mlp_bias=False, tie_word_embeddings=False),
    "mistral": dict(max_position_embeddings=4096 * 32, rms_norm_eps=1e-6, hidden_act="silu", rope_theta=10_000.0,
                    num_key_value_heads=8, sliding_window=4096, tie_word_embeddings=False),
    "mixtral": dict(max_position_embeddings=4096 * 32, rms_norm_eps=1e-5, hidden_act="silu", rope_theta=1_000_000.0,
                    num_key_value_heads=8, sliding_window=None, num_local_experts=8, num_experts_per_tok=2,
                    tie_word_embeddings=False),
    "qwen2": dict(max_position_embeddings=32768, rms_norm_eps=1e-6, hidden_act="silu", rope_theta=10_000.0,
                  num_key_value_heads=32, use_sliding_window=False, sliding_window=4096, max_window_layers=28,
                  tie_word_embeddings=False),
    "qwen3": dict(max_position_embeddings=32768, rms_norm_eps=1e-6, hidden_act="silu", rope_theta=10_000.0,
                  num_key_value_heads=32, head_dim=128, attention_bias=False, use_sliding_window=False,
                  sliding_window=4096, max_window_layers=28, tie_word_embeddings=False),
    "gemma": dict(max_position_embeddings=8192, rms_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh", rope_theta=10_000.0,
                  num_key_value_heads=16, head_dim=256, attention_bias=False, tie_word_embeddings=True),
    "gemma2": dict(max_position_embeddings=8192, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
                   rope_theta=10_000.0, num_key_value_heads=4, head_dim=256, attention_bias=False,
                   query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0,
                   final_logit_softcapping=30.0, tie_word_embeddings=True),
    "gemma3_text": dict(max_position_embeddings=131_072, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
                        rope_theta=1_000_000.0, rope_local_base_freq=10_000.0, num_key_value_heads=4, head_dim=256,
                        attention_bias=False, query_pre_attn_scalar=256, sliding_window=4096,
                        attn_logit_softcapping=None, final_logit_softcapping=None, tie_word_embeddings=True),
    "phi3": dict(max_position_embeddings=4096, original_max_position_embeddings=4096, rms_norm_eps=1e-5,
                 hidden_act="silu", rope_theta=10_000.0, sliding_window=None, tie_word_embeddings=False),
    "gpt_neox": dict(max_position_embeddings=2048, layer_norm_eps=1e-5, hidden_act="gelu", rotary_emb_base=10_000.0,
                     rotary_pct=0.25, attention_bias=True, use_parallel_residual=True, tie_word_embeddings=False),
    "phi": dict(max_position_embeddings=2048, layer_norm_eps=1e-5, hidden_act="gelu_new", rope_theta=10_000.0,
                partial_rotary_factor=0.5, qk_layernorm=False, tie_word_embeddings=False),
    "opt": dict(max_position_embeddings=2048, activation_function="relu", do_layer_norm_before=True,
                enable_bias=True, layer_norm_elementwise_affine=True, tie_word_embeddings=True),
}


def with_defaults(data: dict) -> dict:
    """config.json's fields, with each absent one its family's default (`DEFAULTS`)."""
    return {**DEFAULTS.get(data.get("model_type"), {}), **data}


@dataclass(frozen=True)
class DecoderConfig:
    """A decoder-only (causal) language model's shape and options.

    vocab_size V, hidden_size D, n_layers L, n_heads H, n_kv_heads G (H % G == 0; G < H grouped-query,
    G = 1 multi-query), head_dim Dh (query, key and value heads alike), intermediate_size F (the MLP's
    inner width), max_positions (learned position table length; RoPE models: the trained context).
    norm: "layernorm" | "rmsnorm"; mlp: "gelu" | "gelu_tanh" | "relu" (two matrices) or "swiglu"
    (gate, up, down); rope_theta: None for learned absolute positions (GPT-2); bias_qkv / bias_out /
    bias_mlp: which projections have biases; tie_embeddings: the output matrix is the token
    embedding's transpose; sliding_window: keys further back than this many tokens (the query itself
    counted) are masked, None for none; rope_scaling: () for RoPE's plain frequencies, or
    (("rope_type", "linear" | "llama3"), (parameter, value), …) sorted by name; eos_token_ids:
    generation stops at any of them.

    Options of the other families (defaults: off): rotary_dim, RoPE on a head's first columns only
    (partial rotary: GPT-NeoX, Phi); rope_dim, the d of θᵢ = θ^(−2i/d) when it is not rotary_dim (transformers
    turns 2·⌈d/2⌉ columns for an odd d); gated, a gated MLP with activation ``mlp`` (Gemma's GeGLU; "swiglu"
    is always gated); parallel, x + Attn(N₁(x)) + MLP(N₂(x)) (GPT-NeoX, Phi; shared_norm: N₂ is N₁,
    Phi); qk_norm, an RMSNorm over each query and key head (Qwen3, Gemma 3); sandwich, norms on the
    sublayers' outputs too (Gemma 2/3); norm_offset, RMSNorm's weight is (offset + w) (Gemma: 1);
    embed_scale, embeddings multiplied by it (Gemma: √D); attn_scale, q·kᵀ's scale (Gemma 2/3:
    query_pre_attn_scalar^−½); attn_softcap / final_softcap, cap·tanh(s / cap) on the attention scores /
    the logits (Gemma 2); layer_types, per layer "sliding_attention" (the window applies) or
    "full_attention" (empty: every layer is windowed when sliding_window is set); local_rope_theta,
    RoPE's θ on sliding layers (Gemma 3); position_offset, learned positions start at this row (OPT: 2);
    norm_position, "pre" or "post" (OPT-350m); final_norm, a norm before the unembedding; lm_head_bias
    (Phi); n_experts, experts_per_token, a sparse mixture-of-experts MLP (Mixtral); scale_by_layer, layer l's
    attention scale divided by l + 1 (GPT-2's scale_attn_by_inverse_layer_idx); embed_width, the token
    embeddings' and the output head's width P when it is not D (OPT's word_embed_proj_dim: project_in (P, D)
    after the embeddings, project_out (D, P) before the head); norm_affine False, LayerNorms with no weight and
    bias (OPT's layer_norm_elementwise_affine); causal False, no causal mask (Gemma 3's
    use_bidirectional_attention: a sliding layer then sees the keys less than sliding_window tokens away on
    either side).
    """

    model_type: str
    vocab_size: int
    hidden_size: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    max_positions: int
    norm: str
    norm_eps: float
    mlp: str
    rope_theta: float | None
    bias_qkv: bool
    bias_out: bool
    bias_mlp: bool
    tie_embeddings: bool
    sliding_window: int | None = None
    rope_scaling: tuple = ()
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    pad_token_id: int | None = None
    rotary_dim: int | None = None
    rope_dim: int | None = None
    gated: bool = False
    parallel: bool = False
    shared_norm: bool = False
    qk_norm: bool = False
    sandwich: bool = False
    norm_offset: float = 0.0
    embed_scale: float | None = None
    attn_scale: float | None = None
    attn_softcap: float | None = None
    final_softcap: float | None = None
    layer_types: tuple[str, ...] = ()
    local_rope_theta: float | None = None
    position_offset: int = 0
    norm_position: str = "pre"
    final_norm: bool = True
    lm_head_bias: bool = False
    n_experts: int = 0
    experts_per_token: int = 0
    scale_by_layer: bool = False
    embed_width: int | None = None
    norm_affine: bool = True
    causal: bool = True

    def window_of(self, layer: int) -> int | None:
        """The sliding window of layer ``layer`` (None: it sees every earlier key)."""
        if self.sliding_window is None:
            return None
        if self.layer_types and self.layer_types[layer] != "sliding_attention":
            return None
        return self.sliding_window

    @property
    def group_size(self) -> int:
        """Query heads per key/value head (H / G)."""
        return self.n_heads // self.n_kv_heads

    def kv_head_of(self, head: int) -> int:
        """The key/value head query head ``head`` reads: head // (H / G)."""
        return head // self.group_size


FLOAT32_MAX = 3.4028234663852886e38
"""float32's largest finite number."""


class ConfigReader:
    """Typed access to a parsed config.json; every problem is an InputError naming the file and field."""

    def __init__(self, data: dict, source: str):
        self.data, self.source = data, source

    def fail(self, key: str, text_key: str, /, **values) -> InputError:
        """The refusal of config.json's field ``key``: the text ``text_key`` of `qkv.explain.texts`
        (said in the reader's language), naming the file and the field."""
        return InputError.keyed(text_key, source=self.source, field=key, **values)

    def integer(self, key: str, default: int | None = None, *, low: int = 1, names: tuple[str, ...] = ()) -> int:
        value = self._first(key, names, default)
        if value is None:
            raise self.fail(key, "error.config.missing", model_type=repr(self.data.get('model_type')))
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(key, "error.config.integer", low=low, value=repr(value))
        return value

    def optional_integer(self, key: str, *, low: int = 0) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(key, "error.config.integer_or_null", low=low, value=repr(value))
        return value

    def number(self, key: str, default: float, *, positive: bool = True, high: float | None = None) -> float:
        """A finite number (> 0 when ``positive``) that float32 holds (≤ 3.4e38: an epsilon or soft-cap
        beyond it is infinite in the float32 arithmetic, a norm of zeros), and ≤ ``high`` when given."""
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or (positive and not value > 0):
            raise self.fail(key, "error.config.positive" if positive else "error.config.number", value=repr(value))
        if abs(value) > FLOAT32_MAX:
            raise self.fail(key, "error.config.float32", value=repr(value))
        if high is not None and value > high:
            raise self.fail(key, "error.config.at_most", high=f"{high:g}", value=repr(value))
        return float(value)

    def optional_number(self, key: str) -> float | None:
        """A finite positive number, or None when the key is absent or null."""
        return None if self.data.get(key) is None else self.number(key, 1.0)

    def layer_types(self, n_layers: int) -> tuple[str, ...]:
        """config.json's layer_types (one of "sliding_attention", "full_attention" per layer), or ()."""
        value = self.data.get("layer_types")
        if value is None:
            return ()
        if not isinstance(value, list) or len(value) != n_layers or \
                any(v not in ("sliding_attention", "full_attention") for v in value):
            raise self.fail("layer_types", "error.config.layer_types", layers=n_layers, value=repr(value))
        return tuple(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "error.config.flag", value=repr(value))
        return value

    def choice(self, key: str, default: str, allowed: dict[str, str]) -> str:
        value = self.data.get(key, default)
        if value not in allowed:
            raise self.fail(key, "error.config.choice", value=repr(value), choices=", ".join(allowed))
        return allowed[value]

    def token_ids(self, key: str) -> tuple[int, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise self.fail(key, "error.config.token_ids", value=repr(value))
        return tuple(values)

    def _first(self, key: str, names: tuple[str, ...], default):
        for name in (key, *names):
            if self.data.get(name) is not None:
                return self.data[name]
        return default

    def check_heads(self, config: DecoderConfig) -> DecoderConfig:
        """Sizes that must agree with each other (GQA divisibility, RoPE's even head width)."""
        if config.n_heads % config.n_kv_heads:
            raise self.fail("num_key_value_heads", "error.config.kv_groups", kv=config.n_kv_heads, heads=config.n_heads)
        rotated = config.rotary_dim or config.head_dim
        if config.rope_theta is not None and rotated % 2:
            raise self.fail("head_dim", "error.config.rope_odd", columns=rotated)
        return config


def rotary_width(read: ConfigReader, head_dim: int, partial: float, *, frequency_width: int | None = None,
                 odd: bool = True) -> tuple[int | None, int | None]:
    """RoPE's (rotated columns, frequency width d of θᵢ = θ^(−2i/d)) for a partial rotary factor, as transformers
    5.25 computes them: d = int(frequency_width · partial) (frequency_width: config.json's head_dim where the
    family's rotary embedding reads it, else the head width), ⌈d/2⌉ frequencies, so 2·⌈d/2⌉ columns turn — one
    more than d when d is odd (GPT-NeoX, Phi-3 slice by the cos table's width). (None, None): every column turns
    at the plain frequencies. odd=False: a family whose attention slices d columns (Phi) cannot run an odd d,
    refused. InputError when no column or more than the head would turn."""
    width = head_dim if frequency_width is None else frequency_width
    if partial == 1.0 and width == head_dim:
        return None, None
    frequencies = int(width * partial)
    rotated = 2 * ((frequencies + 1) // 2)
    if frequencies < 2 or rotated > head_dim or (frequencies % 2 and not odd):
        raise read.fail("partial_rotary_factor", "error.config.partial", partial=partial, width=head_dim,
                        rotary=frequencies)
    return rotated, (None if frequencies == rotated else frequencies)
