"""The translator: a small encoder–decoder transformer built from qkv's own blocks.

    source words → embedding·√D + sinusoidal positions → encoder blocks (self-attention) → norm → memory
    <ko>/<ja> + words so far → embedding·√D + positions → decoder blocks
        (masked self-attention, cross-attention over memory, MLP) → norm → ·Eᵀ → next-word logits

Every block is a `qkv.block.TransformerBlock` (pre-norm, GELU MLP); a decoder block's middle
sublayer is its cross-attention: queries from the decoder, keys and values from the encoder's
output (seed 001). The same code runs on NumPy arrays (inference, `Translator.translate`) and on
torch tensors (training with autograd, `qkv.translator.train`): only the weights' array type differs.

Weights live in one flat dict of named arrays (``params``), which is also the checkpoint's layout
(safetensors): ``source_embedding`` (Vs, D), ``target_embedding`` (Vt, D) (also the output
projection), ``encoder.{i}.…`` and ``decoder.{i}.…`` block weights in the row-vector convention,
``encoder_norm.*``, ``decoder_norm.*``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .._backend import is_torch, namespace
from .._io import write_atomic
from ..block import MLP, LayerNorm, TransformerBlock
from ..errors import InputError
from ..mha import KVCache, MultiHeadAttention
from ..trace import scoped
from . import corpus

__all__ = ["Config", "Translator", "Translation", "init_params", "exact_match", "tokenize", "sinusoidal_positions", "load", "save",
           "DEFAULT_CHECKPOINT", "PAD", "EOS", "LANG_TOKENS"]

PAD, EOS = "<pad>", "</s>"
LANG_TOKENS = {"ko": "<ko>", "ja": "<ja>"}
DEFAULT_CHECKPOINT = Path(__file__).with_name("translator.safetensors")
FORMAT = "qkv-translator/1"


@dataclass(frozen=True)
class Config:
    """Sizes and vocabularies. D = d_model, H = n_heads, F = d_ff; max_len bounds source and target."""

    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 128
    n_encoder: int = 2
    n_decoder: int = 2
    max_len: int = 16
    source_vocab: tuple[str, ...] = field(default_factory=lambda: (PAD, *corpus.source_words()))
    target_vocab: tuple[str, ...] = field(
        default_factory=lambda: (PAD, EOS, *LANG_TOKENS.values(), *corpus.target_words()))

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Config":
        data = json.loads(text)
        data["source_vocab"], data["target_vocab"] = tuple(data["source_vocab"]), tuple(data["target_vocab"])
        return cls(**data)


def sinusoidal_positions(n: int, d: int) -> np.ndarray:
    """(n, d) float64: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    position = np.arange(n)[:, None]
    rate = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    table = np.zeros((n, d))
    table[:, 0::2] = np.sin(position * rate)
    table[:, 1::2] = np.cos(position * rate)
    return table


def init_params(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Random float32 weights: matrices N(0, 1/fan_in) (output layers scaled by 1/√(2·layers)),
    embeddings N(0, 1/D), zero biases, unit norm weights. Reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    d, f = config.d_model, config.d_ff
    params: dict[str, np.ndarray] = {}

    def matrix(name, rows, cols, scale=1.0):
        params[name] = (rng.standard_normal((rows, cols)) * scale / math.sqrt(rows)).astype(np.float32)

    def zeros(name, n):
        params[name] = np.zeros(n, np.float32)

    def norm(prefix):
        params[f"{prefix}.weight"] = np.ones(d, np.float32)
        zeros(f"{prefix}.bias", d)

    params["source_embedding"] = (rng.standard_normal((len(config.source_vocab), d)) / math.sqrt(d)).astype(np.float32)
    params["target_embedding"] = (rng.standard_normal((len(config.target_vocab), d)) / math.sqrt(d)).astype(np.float32)
    depth_scale = 1.0 / math.sqrt(2 * (config.n_encoder + config.n_decoder))
    for stack, n in (("encoder", config.n_encoder), ("decoder", config.n_decoder)):
        for i in range(n):
            parts = ["attention"] + (["cross_attention"] if stack == "decoder" else [])
            for part in parts:
                p = f"{stack}.{i}.{part}"
                for w in ("w_q", "w_k", "w_v"):
                    matrix(f"{p}.{w}", d, d)
                matrix(f"{p}.w_o", d, d, depth_scale)
                for b in ("b_q", "b_k", "b_v", "b_o"):
                    zeros(f"{p}.{b}", d)
            for part in ("norm1", "norm2") + (("cross_norm",) if stack == "decoder" else ()):
                norm(f"{stack}.{i}.{part}")
            matrix(f"{stack}.{i}.mlp.w_in", d, f)
            zeros(f"{stack}.{i}.mlp.b_in", f)
            matrix(f"{stack}.{i}.mlp.w_out", f, d, depth_scale)
            zeros(f"{stack}.{i}.mlp.b_out", d)
    norm("encoder_norm")
    norm("decoder_norm")
    return params


class Translation(NamedTuple):
    """A translation and the decoder's cross-attention that produced it.

    source: the English tokens (S); target: the generated tokens (T, without </s>);
    cross_weights: (L, H, T, S), layer l's cross-attention weights when token t was generated
    (query = the decoder state of the token before it, keys and values = the encoder's outputs).
    """

    source: list[str]
    target: list[str]
    lang: str
    cross_weights: np.ndarray


class Translator:
    """The model: a Config plus named weights (NumPy arrays or torch tensors), built into qkv blocks."""

    def __init__(self, config: Config, params: dict[str, Any]):
        self.config = config
        self.params = params
        self._xp = namespace(**{name.replace(".", "_"): a for name, a in params.items()})
        p = params

        def norm(prefix):
            return LayerNorm(p[f"{prefix}.weight"], p[f"{prefix}.bias"])

        def mha(prefix):
            return MultiHeadAttention(*(p[f"{prefix}.{w}"] for w in ("w_q", "w_k", "w_v", "w_o")), config.n_heads,
                                      **{b: p[f"{prefix}.{b}"] for b in ("b_q", "b_k", "b_v", "b_o")})

        def block(prefix, cross):
            mlp = MLP(w_in=p[f"{prefix}.mlp.w_in"], b_in=p[f"{prefix}.mlp.b_in"], w_out=p[f"{prefix}.mlp.w_out"],
                      b_out=p[f"{prefix}.mlp.b_out"], activation="gelu")
            return TransformerBlock(attention=mha(f"{prefix}.attention"), norm1=norm(f"{prefix}.norm1"), mlp=mlp,
                                    norm2=norm(f"{prefix}.norm2"), norm_position="pre",
                                    cross_attention=mha(f"{prefix}.cross_attention") if cross else None,
                                    cross_norm=norm(f"{prefix}.cross_norm") if cross else None)

        self.encoder = [block(f"encoder.{i}", False) for i in range(config.n_encoder)]
        self.decoder = [block(f"decoder.{i}", True) for i in range(config.n_decoder)]
        self.encoder_norm, self.decoder_norm = norm("encoder_norm"), norm("decoder_norm")
        positions = sinusoidal_positions(config.max_len + 1, config.d_model)
        self._positions = self._asarray(positions, p["source_embedding"].dtype)
        self._source_index = {w: i for i, w in enumerate(config.source_vocab)}
        self._target_index = {w: i for i, w in enumerate(config.target_vocab)}

    def _asarray(self, array: np.ndarray, dtype):
        like = self.params["source_embedding"]
        if is_torch(like):
            import torch

            return torch.as_tensor(array, dtype=dtype, device=like.device)
        return array.astype(dtype)

    # ------------------------------------------------------------------ the two stacks
    def _embed(self, table, ids, offset: int = 0):
        """ids (B, T) → (B, T, D): embedding·√D + the sinusoidal positions offset … offset + T − 1."""
        t = ids.shape[-1]
        return table[ids] * math.sqrt(self.config.d_model) + self._positions[offset: offset + t]

    def encode(self, source_ids, source_mask=None):
        """source_ids (B, S) integers, source_mask (B, S) bool True = a real token (None: all real)
        → memory (B, S, D), the encoder's output that every cross-attention reads."""
        key_mask = None if source_mask is None else source_mask[:, None, None, :]   # (B, 1, 1, S)
        x = self._embed(self.params["source_embedding"], source_ids)
        for block in self.encoder:
            x = block(x, mask=key_mask)
        return self.encoder_norm(x)

    def decode(self, target_ids, memory, source_mask=None, *, caches: list[KVCache] | None = None,
               return_weights: bool = False, record=None):
        """target_ids (B, T) (the language token, then the words so far), memory (B, S, D) →
        logits (B, T, Vt) for the next word at each position; with return_weights also the
        cross-attention weights, one (B, H, T, S) per decoder layer.

        caches: one `KVCache` per decoder layer; the call then runs only the new tokens (their
        positions continue after the cached ones) and appends their keys and values.
        record: a recorder handed each decoder block's steps under "decoder {i}/".
        """
        offset = 0 if caches is None else caches[0].length
        memory_mask = None if source_mask is None else source_mask[:, None, None, :]
        x = self._embed(self.params["target_embedding"], target_ids, offset)
        cross = []
        for i, block in enumerate(self.decoder):
            sub = scoped(record, f"decoder {i}")
            result = block(x, memory=memory, memory_mask=memory_mask, causal=True,
                           cache=None if caches is None else caches[i], return_weights=return_weights, record=sub)
            x = result[0] if return_weights else result
            if return_weights:
                cross.append(result[2])
        logits = self.decoder_norm(x) @ self._xp.matrix_transpose(self.params["target_embedding"])
        return (logits, cross) if return_weights else logits

    # ------------------------------------------------------------------ words
    def source_ids(self, text: str) -> list[int]:
        """English text → token ids. InputError for empty text, unknown words or too many words."""
        words = tokenize(text)
        if not words:
            raise InputError("the text to translate is empty: type English words the translator knows, e.g. I love you",
                             field="TEXT", key="error.translator.empty")
        unknown = [w for w in words if w not in self._source_index or w == PAD]
        if unknown:
            known = ", ".join(w for w in self.config.source_vocab if w != PAD)
            raise InputError(f"unknown word {unknown[0]!r}; the translator knows these English words: {known}",
                             field="TEXT", key="error.translator.unknown_word",
                             values={"word": unknown[0][:40], "known": known})
        if len(words) > self.config.max_len:
            raise InputError(f"{len(words)} words is over the translator's limit of {self.config.max_len}",
                             field="TEXT", key="error.translator.too_long",
                             values={"count": len(words), "limit": self.config.max_len})
        return [self._source_index[w] for w in words]

    def translate(self, text: str, lang: str, *, use_cache: bool = True) -> Translation:
        """Greedy decoding of one English text into ``lang`` ("ko" or "ja"); see `translate_batch`."""
        return self.translate_batch([text], lang, use_cache=use_cache)[0]

    def translate_batch(self, texts: list[str], lang: str, *, use_cache: bool = True) -> list[Translation]:
        """Greedy decoding (NumPy weights): at each step the most likely next word, until </s> or
        max_len words. Texts of different lengths are padded; the masks hide the padding.

        use_cache=True runs each step on the new token only, with a `KVCache` per decoder layer
        (keys and values of the tokens so far); use_cache=False reruns the whole prefix each step.
        Both give the same words and weights (a test checks it).
        """
        if lang not in LANG_TOKENS:
            raise InputError(f"unknown target language {lang!r}; choose one of {', '.join(LANG_TOKENS)}",
                             field="--to")
        if not isinstance(self.params["source_embedding"], np.ndarray):
            raise TypeError("translate runs on NumPy weights; use translator.load() or .to_numpy() first")
        ids = [self.source_ids(text) for text in texts]
        source = np.zeros((len(ids), max(map(len, ids))), np.int64)       # (B, S), 0 = <pad>
        for i, row in enumerate(ids):
            source[i, : len(row)] = row
        source_mask = source != 0
        memory = self.encode(source, source_mask)                          # (B, S, D)
        caches = [KVCache() for _ in self.decoder] if use_cache else None
        sequence = np.full((len(ids), 1), self._target_index[LANG_TOKENS[lang]])   # (B, 1)
        eos = self._target_index[EOS]
        steps = []                                                         # per step: (L, B, H, S)
        for _ in range(self.config.max_len):
            new = sequence[:, -1:] if use_cache else sequence
            logits, cross = self.decode(new, memory, source_mask, caches=caches, return_weights=True)
            steps.append(np.stack([w[:, :, -1, :] for w in cross]))        # the newest query's rows
            sequence = np.concatenate([sequence, np.argmax(logits[:, -1], axis=-1)[:, None]], axis=1)
            if (sequence[:, 1:] == eos).any(axis=1).all():
                break
        weights = np.stack(steps, axis=3)                                  # (L, B, H, T, S)
        results = []
        for b, row in enumerate(ids):
            generated = [int(t) for t in sequence[b, 1:]]
            n = generated.index(eos) if eos in generated else len(generated)
            results.append(Translation([self.config.source_vocab[i] for i in row],
                                       [self.config.target_vocab[i] for i in generated[:n]], lang,
                                       weights[:, b, :, :n, : len(row)]))
        return results

    def to_numpy(self) -> "Translator":
        """The same model with float32 NumPy weights (detached copies of torch tensors)."""
        from .._backend import to_numpy

        return Translator(self.config, {k: np.ascontiguousarray(to_numpy(v), dtype=np.float32)
                                        for k, v in self.params.items()})


def exact_match(translator: Translator, sentences: list[corpus.Sentence], lang: str) -> float:
    """Fraction of sentences whose greedy translation equals the grammar's, word for word."""
    if not sentences:
        raise ValueError("exact_match needs at least one sentence")
    found = translator.translate_batch([" ".join(s.english()) for s in sentences], lang)
    return sum(t.target == s.target(lang) for t, s in zip(found, sentences)) / len(sentences)


def tokenize(text: str) -> list[str]:
    """English text → the grammar's words: split on spaces, final .!? and commas dropped, lower
    case except the pronoun I."""
    words = []
    for raw in text.replace(",", " ").split():
        word = raw.strip(".!?").lower()
        if word:
            words.append("I" if word == "i" else word)
    return words



# --------------------------------------------------------------------------- checkpoints
def save(path: str | os.PathLike, translator: Translator, *, metadata: dict[str, Any] | None = None) -> Path:
    """Write the weights (float32) and the config to a safetensors file, atomically."""
    from safetensors.numpy import save as to_bytes

    weights = translator.to_numpy().params if not isinstance(translator.params["source_embedding"], np.ndarray) \
        else translator.params
    header = {"format": FORMAT, "config": translator.config.to_json()}
    header.update({k: json.dumps(v, ensure_ascii=False) for k, v in (metadata or {}).items()})
    return write_atomic(path, to_bytes({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()},
                                       metadata=header))


def load(path: str | os.PathLike | None = None) -> Translator:
    """A Translator from a safetensors checkpoint (default: the one shipped with qkv), NumPy float32."""
    from safetensors import SafetensorError
    from safetensors.numpy import load as from_bytes

    target = Path(path) if path is not None else DEFAULT_CHECKPOINT
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the checkpoint: {exc.strerror}", source=str(target)) from None
    try:
        tensors = from_bytes(data)
        header = _metadata(data)
    except (SafetensorError, ValueError) as exc:
        raise InputError(f"not a safetensors file ({exc})", source=str(target)) from None
    if header.get("format") != FORMAT:
        raise InputError(f"not a qkv translator checkpoint (format {header.get('format')!r}, expected {FORMAT!r})",
                         source=str(target))
    config = Config.from_json(header["config"])
    expected = set(init_params_names(config))
    if set(tensors) != expected:
        missing = sorted(expected - set(tensors))
        raise InputError(f"checkpoint weights do not match its config (missing {missing[:3]}, "
                         f"unexpected {sorted(set(tensors) - expected)[:3]})", source=str(target))
    return Translator(config, tensors)


def checkpoint_metadata(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The training metadata stored in a checkpoint (seed, steps, time, …), JSON-decoded."""
    header = _metadata(Path(path or DEFAULT_CHECKPOINT).read_bytes())
    return {k: (v if k in ("format", "config") else json.loads(v)) for k, v in header.items()}


def init_params_names(config: Config) -> list[str]:
    """The weight names a Config implies (without drawing random numbers)."""
    return list(init_params(config, 0))


def _metadata(data: bytes) -> dict[str, str]:
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8: 8 + n]).get("__metadata__", {}) or {}
