"""The fields of a decoder's config.json that qkv uses, validated: one frozen `DecoderConfig` for every family.

GPT-2 (`gpt2.py`) and the Llama family (`llama.py`: llama, mistral, qwen2) each read their own
config.json names into it; the model (`decoder.py`) only ever sees a `DecoderConfig`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError

__all__ = ["DecoderConfig", "ConfigReader"]


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

    @property
    def group_size(self) -> int:
        """Query heads per key/value head (H / G)."""
        return self.n_heads // self.n_kv_heads

    def kv_head_of(self, head: int) -> int:
        """The key/value head query head ``head`` reads: head // (H / G)."""
        return head // self.group_size


class ConfigReader:
    """Typed access to a parsed config.json; every problem is an InputError naming the file and field."""

    def __init__(self, data: dict, source: str):
        self.data, self.source = data, source

    def fail(self, key: str, problem: str) -> InputError:
        return InputError(problem, source=self.source, field=key)

    def integer(self, key: str, default: int | None = None, *, low: int = 1, names: tuple[str, ...] = ()) -> int:
        value = self._first(key, names, default)
        if value is None:
            raise self.fail(key, f"missing (model_type {self.data.get('model_type')!r} needs it)")
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(key, f"must be an integer ≥ {low}, got {value!r}")
        return value

    def optional_integer(self, key: str, *, low: int = 0) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(key, f"must be an integer ≥ {low} or null, got {value!r}")
        return value

    def number(self, key: str, default: float, *, positive: bool = True) -> float:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or (positive and not value > 0):
            raise self.fail(key, f"must be a {'positive ' if positive else ''}number, got {value!r}")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, got {value!r}")
        return value

    def choice(self, key: str, default: str, allowed: dict[str, str]) -> str:
        value = self.data.get(key, default)
        if value not in allowed:
            raise self.fail(key, f"{value!r} is not supported (one of {', '.join(allowed)})")
        return allowed[value]

    def token_ids(self, key: str) -> tuple[int, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise self.fail(key, f"must be a token id or a list of them, got {value!r}")
        return tuple(values)

    def _first(self, key: str, names: tuple[str, ...], default):
        for name in (key, *names):
            if self.data.get(name) is not None:
                return self.data[name]
        return default

    def check_heads(self, config: DecoderConfig) -> DecoderConfig:
        """Sizes that must agree with each other (GQA divisibility, RoPE's even head width)."""
        if config.n_heads % config.n_kv_heads:
            raise self.fail("num_key_value_heads", f"{config.n_kv_heads} does not divide num_attention_heads "
                            f"{config.n_heads} (each key/value head serves a whole group of query heads)")
        if config.rope_theta is not None and config.head_dim % 2:
            raise self.fail("head_dim", f"{config.head_dim} is odd; RoPE rotates pairs of columns")
        if config.bos_token_id is not None and config.bos_token_id >= config.vocab_size:
            raise self.fail("bos_token_id", f"{config.bos_token_id} is outside the vocabulary of {config.vocab_size}")
        return config
