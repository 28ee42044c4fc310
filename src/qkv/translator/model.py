"""The translator: a small encoder–decoder transformer built from qkv's own blocks.

    source words → embedding·√D + sinusoidal positions → encoder blocks (self-attention) → norm → memory
    <ko>/<ja> + words so far → embedding·√D + positions → decoder blocks
        (masked self-attention, cross-attention over memory, MLP) → norm → ·Eᵀ → next-word logits

Every block is a `qkv.block.TransformerBlock` (pre-norm, GELU MLP); a decoder block's middle
sublayer is its cross-attention: queries from the decoder, keys and values from the encoder's
output (as in “도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention”). The same code runs on NumPy arrays (inference, `Translator.translate`) and on
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
import unicodedata
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .._backend import is_torch, namespace
from .._io import read_bytes, short_repr, write_atomic
from ..block import MLP, LayerNorm, TransformerBlock
from ..errors import InputError
from ..mha import KVCache, MultiHeadAttention
from ..trace import scoped
from . import corpus

__all__ = ["Config", "Translator", "Translation", "init_params", "exact_match", "tokenize", "sinusoidal_positions", "load", "save",
           "param_shapes", "checkpoint_metadata", "DEFAULT_CHECKPOINT", "PAD", "EOS", "LANG_TOKENS"]

PAD, EOS = "<pad>", "</s>"
LANG_TOKENS = {"ko": "<ko>", "ja": "<ja>"}
DEFAULT_CHECKPOINT = Path(__file__).with_name("translator.safetensors")
FORMAT = "qkv-translator/1"


UNSURE = 0.5
"""Below this probability of the whole translation, the command line and serve name its least likely token."""


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


def _param_specs(config: Config):
    """(name, shape, how) for every weight, in the order `init_params` draws them.

    how: ("embedding",) N(0, 1/D); ("matrix", scale) N(0, scale²/fan_in); ("zeros",); ("ones",).
    No array is made here, so a checkpoint's config can be checked before anything is allocated.
    """
    d, f = config.d_model, config.d_ff
    depth_scale = 1.0 / math.sqrt(2 * (config.n_encoder + config.n_decoder))
    yield "source_embedding", (len(config.source_vocab), d), ("embedding",)
    yield "target_embedding", (len(config.target_vocab), d), ("embedding",)
    for stack, n in (("encoder", config.n_encoder), ("decoder", config.n_decoder)):
        for i in range(n):
            parts = ["attention"] + (["cross_attention"] if stack == "decoder" else [])
            for part in parts:
                p = f"{stack}.{i}.{part}"
                for w in ("w_q", "w_k", "w_v"):
                    yield f"{p}.{w}", (d, d), ("matrix", 1.0)
                yield f"{p}.w_o", (d, d), ("matrix", depth_scale)
                for b in ("b_q", "b_k", "b_v", "b_o"):
                    yield f"{p}.{b}", (d,), ("zeros",)
            for part in ("norm1", "norm2") + (("cross_norm",) if stack == "decoder" else ()):
                yield f"{stack}.{i}.{part}.weight", (d,), ("ones",)
                yield f"{stack}.{i}.{part}.bias", (d,), ("zeros",)
            yield f"{stack}.{i}.mlp.w_in", (d, f), ("matrix", 1.0)
            yield f"{stack}.{i}.mlp.b_in", (f,), ("zeros",)
            yield f"{stack}.{i}.mlp.w_out", (f, d), ("matrix", depth_scale)
            yield f"{stack}.{i}.mlp.b_out", (d,), ("zeros",)
    for prefix in ("encoder_norm", "decoder_norm"):
        yield f"{prefix}.weight", (d,), ("ones",)
        yield f"{prefix}.bias", (d,), ("zeros",)


def param_shapes(config: Config) -> dict[str, tuple[int, ...]]:
    """The weight names a Config implies and their shapes (no arrays are made)."""
    return {name: shape for name, shape, _ in _param_specs(config)}


def init_params(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Random float32 weights: matrices N(0, 1/fan_in) (output layers scaled by 1/√(2·layers)),
    embeddings N(0, 1/D), zero biases, unit norm weights. Reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    params: dict[str, np.ndarray] = {}
    for name, shape, how in _param_specs(config):
        if how[0] == "embedding":
            value = rng.standard_normal(shape) / math.sqrt(config.d_model)
        elif how[0] == "matrix":
            value = rng.standard_normal(shape) * how[1] / math.sqrt(shape[0])
        else:
            value = (np.ones if how[0] == "ones" else np.zeros)(shape)
        params[name] = value.astype(np.float32)
    return params


class Translation(NamedTuple):
    """A translation, how sure the model was of it, and the cross-attention that produced it.

    source: the English tokens (S); target: the generated tokens (T, without </s>);
    cross_weights: (L, H, T, S), layer l's cross-attention weights when token t was generated
    (query = the decoder state of the token before it, keys and values = the encoder's outputs).
    probabilities: (T,) float64, the probability the model gave each chosen token when it chose it
    (softmax of that step's logits over the whole target vocabulary; greedy decoding chose the most
    likely word of the target language, so inside the grammar each is the most likely of all).
    end_probability: the probability of </s> at the step that ended the sentence; None when the
    decoding stopped at max_len words without </s>.
    outside_grammar: None when the grammar parses the English text; otherwise the
    `corpus.OutsideGrammar` error naming the part outside it (only with outside_grammar=True —
    by default such text is refused); `.say("ko")` gives it in Korean.
    """

    source: list[str]
    target: list[str]
    lang: str
    cross_weights: np.ndarray
    probabilities: np.ndarray | None = None
    end_probability: float | None = None
    outside_grammar: corpus.OutsideGrammar | None = None

    @property
    def sequence_probability(self) -> float:
        """The probability of the whole output: the product of the chosen tokens' probabilities,
        </s> included when the decoding ended with it."""
        p = float(np.prod(self.probabilities)) if self.probabilities is not None else float("nan")
        return p * (1.0 if self.end_probability is None else self.end_probability)

    @property
    def least_likely(self) -> tuple[int, float]:
        """The least likely choice, ``(t, p)``: t indexes ``target``, or is ``len(target)`` for the end
        (</s>), which is named only when strictly less likely than every word (ties: the first word).
        With no word and no end: ``(0, 1.0)``. The command line and serve name it below `UNSURE`."""
        t, p = 0, 1.0
        if self.probabilities is not None and len(self.target):
            t = int(np.argmin(self.probabilities))
            p = float(self.probabilities[t])
        if self.end_probability is not None and self.end_probability < p:
            t, p = len(self.target), float(self.end_probability)
        return t, p


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
    def source_ids(self, text: str, *, grammar: bool = True) -> list[int]:
        """English text → token ids. InputError for empty text, unknown words or too many words, and
        (with ``grammar``, the default) `corpus.OutsideGrammar` for known words the grammar cannot
        parse — the model was trained only on the grammar's sentences, and outside it it guesses."""
        words = tokenize(text)
        if not words:
            raise InputError("the text to translate is empty: type English words the translator knows, e.g. I love you",
                             field="TEXT", key="error.translator.empty")
        unknown = [w for w in words if w not in self._source_index or w == PAD]
        if unknown:
            known = ", ".join(w for w in self.config.source_vocab if w != PAD)
            # the word as typed can be any length: both languages show the same first 40 characters
            shown = unknown[0] if len(unknown[0]) <= 40 else unknown[0][:39] + "…"
            raise InputError(f"unknown word {shown!r}; the translator knows these English words: {known}",
                             field="TEXT", key="error.translator.unknown_word",
                             values={"word": shown, "known": known})
        if len(words) > self.config.max_len:
            raise InputError(f"{len(words)} words is over the translator's limit of {self.config.max_len}",
                             field="TEXT", key="error.translator.too_long",
                             values={"count": len(words), "limit": self.config.max_len})
        if grammar:
            corpus.parse(words)
        return [self._source_index[w] for w in words]

    def translate(self, text: str, lang: str, *, use_cache: bool = True, outside_grammar: bool = False) -> Translation:
        """Greedy decoding of one English text into ``lang`` ("ko" or "ja"); see `translate_batch`."""
        return self.translate_batch([text], lang, use_cache=use_cache, outside_grammar=outside_grammar)[0]

    def translate_batch(self, texts: list[str], lang: str, *, use_cache: bool = True,
                        outside_grammar: bool = False) -> list[Translation]:
        """Greedy decoding (NumPy weights): at each step the most likely next word of ``lang`` (or
        </s>), until </s> or max_len words. The decoder has one vocabulary for both languages; outside
        the grammar its most likely word can be the other language's ("I I I" → ja gave 나는), so the
        choice is made among ``lang``'s words only, and each probability stays the model's own. Texts of different lengths are padded; the masks hide the padding.

        Text the grammar cannot parse is refused (`corpus.OutsideGrammar`, naming the part outside
        it); outside_grammar=True translates it anyway and records the problem in the result's
        ``outside_grammar`` — the words are then the model's guess, and its probabilities show it.

        use_cache=True runs each step on the new token only, with a `KVCache` per decoder layer
        (keys and values of the tokens so far); use_cache=False reruns the whole prefix each step.
        Both give the same words and weights (a test checks it).
        """
        if lang not in LANG_TOKENS:
            raise InputError(f"unknown target language {lang!r}; choose one of {', '.join(LANG_TOKENS)}",
                             field="--to")
        if not isinstance(self.params["source_embedding"], np.ndarray):
            raise TypeError("translate runs on NumPy weights; use translator.load() or .to_numpy() first")
        ids = [self.source_ids(text, grammar=not outside_grammar) for text in texts]
        problems = [_grammar_problem(text) if outside_grammar else None for text in texts]
        source = np.zeros((len(ids), max(map(len, ids))), np.int64)       # (B, S), 0 = <pad>
        for i, row in enumerate(ids):
            source[i, : len(row)] = row
        source_mask = source != 0
        with np.errstate(over="ignore", invalid="ignore"):                 # a non-finite memory shows in the logits
            memory = self.encode(source, source_mask)                      # (B, S, D)
        caches = [KVCache() for _ in self.decoder] if use_cache else None
        sequence = np.full((len(ids), 1), self._target_index[LANG_TOKENS[lang]])   # (B, 1)
        eos = self._target_index[EOS]
        allowed = np.array([w == EOS or _language_of(w) == lang for w in self.config.target_vocab])   # (Vt,)
        steps = []                                                         # per step: (L, B, H, S)
        chosen_p = []                                                      # per step: (B,) float64
        for _ in range(self.config.max_len + 1):                           # max_len words, then </s>
            new = sequence[:, -1:] if use_cache else sequence
            with np.errstate(over="ignore", invalid="ignore"):             # overflow is checked just below, once
                logits, cross = self.decode(new, memory, source_mask, caches=caches, return_weights=True)
            steps.append(np.stack([w[:, :, -1, :] for w in cross]))        # the newest query's rows
            if not np.isfinite(logits[:, -1]).all():        # finite weights can still overflow float32 (3e38)
                raise InputError("the translator's output scores are not finite (NaN or ±inf): its weights overflow "
                                 "float32 on this text; the checkpoint is unusable", key="error.translator.non_finite")
            # softmax in float64 from the float32 logits: the probability of the chosen (most likely) token
            z = logits[:, -1].astype(np.float64)                           # (B, Vt)
            z -= z.max(axis=-1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=-1, keepdims=True)
            choice = np.argmax(np.where(allowed, logits[:, -1], -np.inf), axis=-1)
            chosen_p.append(p[np.arange(len(ids)), choice])
            sequence = np.concatenate([sequence, choice[:, None]], axis=1)
            if (sequence[:, 1:] == eos).any(axis=1).all():
                break
        weights = np.stack(steps, axis=3)                                  # (L, B, H, T, S)
        chosen = np.stack(chosen_p, axis=1)                                # (B, steps)
        results = []
        for b, row in enumerate(ids):
            generated = [int(t) for t in sequence[b, 1:]]
            n = generated.index(eos) if eos in generated else min(len(generated), self.config.max_len)
            results.append(Translation([self.config.source_vocab[i] for i in row],
                                       [self.config.target_vocab[i] for i in generated[:n]], lang,
                                       weights[:, b, :, :n, : len(row)], chosen[b, :n].copy(),
                                       float(chosen[b, n]) if n < len(generated) and generated[n] == eos else None,
                                       problems[b]))
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


def _language_of(word: str) -> str | None:
    """"ko" for a word with Hangul in it, "ja" for any other word, None for <pad>, </s>, <ko>, <ja>."""
    if word in (PAD, EOS) or word in LANG_TOKENS.values():
        return None
    hangul = any("\uac00" <= c <= "\ud7a3" or "\u1100" <= c <= "\u11ff" or "\u3130" <= c <= "\u318f" for c in word)
    return "ko" if hangul else "ja"


def _grammar_problem(text: str) -> corpus.OutsideGrammar | None:
    try:
        corpus.parse(tokenize(text))
    except corpus.OutsideGrammar as problem:
        return problem
    return None


def tokenize(text: str) -> list[str]:
    """English text → the grammar's words: lower case except the pronoun I, split on white space
    and commas, punctuation around a word dropped.

    As typed, not as stored: NFKC first (full-width "Ｉ ｌｏｖｅ", the "ﬁ" ligature become plain
    letters), invisible format characters removed (zero-width spaces and joiners, bidirectional
    marks), then every Unicode punctuation mark at either end of a word (quotes “…” '…' “…”, ;:…¡¿
    as well as .!?) stripped. Punctuation inside a word stays ("I-love" is one unknown word).
    """
    text = "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")
    words = []
    for raw in text.replace(",", " ").split():
        start, stop = 0, len(raw)
        while start < stop and unicodedata.category(raw[start]).startswith("P"):
            start += 1
        while stop > start and unicodedata.category(raw[stop - 1]).startswith("P"):
            stop -= 1
        word = raw[start:stop].lower()
        if word:
            words.append("I" if word == "i" else word)
    return words



# --------------------------------------------------------------------------- checkpoints
# Bounds a checkpoint's config must keep: generous for experiments, small enough that nothing a
# config says can make qkv allocate more than the file itself holds (the file is at most
# MAX_CHECKPOINT_BYTES, its tensors must match the config's shapes).
_SIZE_LIMITS = {"d_model": 4096, "n_heads": 256, "d_ff": 16384, "n_encoder": 64, "n_decoder": 64, "max_len": 1024}
_VOCAB_LIMIT = 1_000_000
MAX_CHECKPOINT_BYTES = 256 * 2**20
"""The largest checkpoint read (the shipped one is 0.7 MB; the config bounds above allow far more)."""


def save(path: str | os.PathLike, translator: Translator, *, metadata: dict[str, Any] | None = None) -> Path:
    """Write the weights (float32) and the config to a safetensors file, atomically.

    ValueError (nothing written) if a weight is not finite: such a checkpoint could not be loaded.
    """
    from safetensors.numpy import save as to_bytes

    weights = translator.to_numpy().params if not isinstance(translator.params["source_embedding"], np.ndarray) \
        else translator.params
    arrays = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
    bad = [k for k, v in arrays.items() if not np.isfinite(v).all()]
    if bad:
        raise ValueError(f"weights {', '.join(bad[:3])} are not finite (NaN or ±inf); nothing was written")
    header = {"format": FORMAT, "config": translator.config.to_json()}
    header.update({k: json.dumps(v, ensure_ascii=False) for k, v in (metadata or {}).items()})
    return write_atomic(path, to_bytes(arrays, metadata=header))


def load(path: str | os.PathLike | None = None) -> Translator:
    """A Translator from a safetensors checkpoint (default: the one shipped with qkv), NumPy float32.

    Every way a file can fail to be a translator checkpoint is one InputError naming the file and
    the problem: not a regular file or too large (`qkv._io.read_bytes`, 256 MiB), not safetensors,
    no qkv translator metadata, a config that is not the JSON object `Config` writes (or sizes
    out of bounds), weights missing, unexpected, not float32, of the wrong shape, or not finite.
    """
    from safetensors.numpy import load as from_bytes

    target = Path(path) if path is not None else DEFAULT_CHECKPOINT
    source = str(target)
    data = _read_checkpoint(target)
    header, metadata = _header(data, source)
    if metadata.get("format") != FORMAT:
        raise InputError.keyed("error.translator.ckpt.format", format=short_repr(metadata.get("format")),
                               expected=repr(FORMAT), source=source)
    config = _config(metadata.get("config"), source)
    shapes = param_shapes(config)
    names = {k for k in header if k != "__metadata__"}
    if names != set(shapes):
        missing, unexpected = sorted(set(shapes) - names), sorted(names - set(shapes))
        raise InputError.keyed("error.translator.ckpt.weights", n_missing=len(missing),
                               missing=", ".join(missing[:3]) or "-", n_unexpected=len(unexpected),
                               unexpected=", ".join(short_repr(u, 40) for u in unexpected[:3]) or "-", source=source)
    for name, shape in shapes.items():
        entry = header[name]
        if entry.get("dtype") != "F32":
            raise InputError.keyed("error.translator.ckpt.dtype", name=name, dtype=short_repr(entry.get("dtype")),
                                   source=source)
        if tuple(entry.get("shape", ())) != shape:
            raise InputError.keyed("error.translator.ckpt.shape", name=name, shape=tuple(entry.get("shape", ())),
                                   needed=shape, source=source)
    try:
        tensors = from_bytes(data)
    except Exception as exc:                  # safetensors' own checks (offsets, sizes): one line, whatever its type
        raise InputError.keyed("error.translator.ckpt.invalid", reason=exc, source=source) from None
    for name in shapes:
        bad = int(np.size(tensors[name]) - np.count_nonzero(np.isfinite(tensors[name])))
        if bad:
            raise InputError.keyed("error.translator.ckpt.finite", name=name, bad=bad, source=source)
    return Translator(config, tensors)


def checkpoint_metadata(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The training metadata stored in a checkpoint (seed, steps, time, …), JSON-decoded where it is JSON."""
    target = Path(path or DEFAULT_CHECKPOINT)
    _, metadata = _header(_read_checkpoint(target), str(target))
    out: dict[str, Any] = {}
    for k, v in metadata.items():
        try:
            out[k] = v if k in ("format", "config") else json.loads(v)
        except ValueError:
            out[k] = v
    return out


def _read_checkpoint(target: Path) -> bytes:
    """The bytes of a regular file of at most MAX_CHECKPOINT_BYTES (`qkv._io.read_bytes`: kind and size
    checked before and while reading)."""
    return read_bytes(target, limit=MAX_CHECKPOINT_BYTES)


def _header(data: bytes, source: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The safetensors header (a JSON object: tensor name → {dtype, shape, data_offsets}) and its
    ``__metadata__`` (str → str), or InputError."""
    def fail(key: str, **values) -> InputError:
        return InputError.keyed(f"error.translator.header.{key}", source=source, **values)

    if len(data) < 8:
        raise fail("short", n=len(data))
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise fail("size", n=n, m=len(data) - 8)
    try:
        header = json.loads(data[8: 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise fail("json", reason=exc) from None
    if not isinstance(header, dict):
        raise fail("type", type=type(header).__name__)
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise fail("metadata")
    for name, entry in header.items():
        if name != "__metadata__" and not (isinstance(entry, dict) and isinstance(entry.get("shape"), list)
                                           and all(_whole(x) and x >= 0 for x in entry["shape"])):
            raise fail("tensor", name=short_repr(name, 40))
    return header, metadata


def _config(text: Any, source: str) -> Config:
    """The Config stored in a checkpoint's metadata, checked field by field (InputError)."""
    def fail(key: str, **values) -> InputError:
        return InputError.keyed(f"error.translator.config.{key}", source=source, **values)

    if not isinstance(text, str):
        raise fail("missing")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise fail("json", reason=exc) from None
    if not isinstance(data, dict):
        raise fail("type", type=type(data).__name__)
    known = {f.name for f in fields(Config)}
    if set(data) != known:
        missing, extra = sorted(known - set(data)), sorted(set(data) - known)
        raise fail("fields", missing=", ".join(missing) or "-",
                   unknown=", ".join(short_repr(x, 30) for x in extra[:3]) or "-")
    for name, limit in _SIZE_LIMITS.items():
        if not (_whole(data[name]) and 1 <= data[name] <= limit):
            raise fail("size", name=name, value=short_repr(data[name]), limit=limit)
    if data["d_model"] % data["n_heads"]:
        raise fail("split", d=data["d_model"], h=data["n_heads"])
    for name, needed in (("source_vocab", (PAD,)), ("target_vocab", (PAD, EOS, *LANG_TOKENS.values()))):
        vocab = data[name]
        if not (isinstance(vocab, list) and 0 < len(vocab) <= _VOCAB_LIMIT and all(isinstance(w, str) for w in vocab)):
            raise fail("vocab", name=name, limit=f"{_VOCAB_LIMIT:,}")
        if len(set(vocab)) != len(vocab):
            raise fail("twice", name=name)
        if vocab[0] != PAD or not set(needed) <= set(vocab):
            raise fail("start", name=name, pad=PAD, needed=", ".join(needed))
    data["source_vocab"], data["target_vocab"] = tuple(data["source_vocab"]), tuple(data["target_vocab"])
    return Config(**data)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
