"""What the translator's cross-attention did: per generated token, which English words it read.

Seed 001's cross-attention, on a model that learned it: when the decoder generates a word, its
state for the token before that word is the query Q; the encoder's outputs for the English
words are the keys K and the values V. softmax(Q·Kᵀ/√d_k) are the weights below, read from the
weights the decoding itself computed (`Translation.cross_weights`), never recomputed.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..trace import Trace
from .model import LANG_TOKENS, Translation, Translator

__all__ = ["alignment", "explain_text", "alignment_figure", "cross_attention_trace"]

_TEXTS = {
    "en": {
        "title": "{source} → {target}",
        "story": ("The cross-attention of the post “도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, "
                  "Multi-head Attention”, learned by a small translator: to generate each word, the decoder's state for the token "
                  "before it is the query Q; the encoder's outputs for the English words are the keys K and the "
                  "values V. The weights softmax(Q·Kᵀ/√d_k) say which English words each generated word read."),
        "which": "layer {layer} of 0–{last}, {heads}",
        "rows": "row: the decoder's input at that step (the token before) → the word it generated",
        "mean": "mean of the {n} heads",
        "head": "head {head} of 0–{last}",
        "step": "{i}. {word}  (query: the decoder's state for {prev}) reads {reads}",
        "matrix": "weights (rows: generated words; columns: English words; each row sums to 1):",
        "order": "English order → {lang} order: {pairs}",
        "langs": {"ko": "Korean", "ja": "Japanese"},
    },
    "ko": {
        "title": "{source} → {target}",
        "story": ("글 「도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention」의 "
                  "cross-attention을 학습된 번역기에서 본다. 단어 하나를 생성할 때, 그 단어 바로 앞 토큰에서의 디코더 "
                  "상태가 Query Q가 되고, 인코더가 영어 단어들에 대해 만든 출력이 Key K와 Value V가 된다. 가중치 "
                  "softmax(Q·Kᵀ/√d_k)는 생성된 각 단어가 어떤 영어 단어를 읽었는지 보여 준다."),
        "which": "층 {layer} (0–{last} 중), {heads}",
        "rows": "행: 그 단계의 디코더 입력(앞 토큰) → 그 단계에서 생성한 단어",
        "mean": "헤드 {n}개의 평균",
        "head": "헤드 {head} (0–{last} 중)",
        "step": "{i}. {word}  (Query: ‘{prev}’에서의 디코더 상태) → {reads}",
        "matrix": "가중치 (행: 생성된 단어, 열: 영어 단어, 각 행의 합은 1):",
        "order": "영어 어순 → {lang} 어순: {pairs}",
        "langs": {"ko": "한국어", "ja": "일본어"},
    },
}


def alignment(translation: Translation, *, layer: int | None = None, head: int | None = None) -> np.ndarray:
    """(T, S) cross-attention weights: generated words × English words, of one decoder layer
    (default the last) and one head (default: the mean over heads). Each row sums to 1."""
    n_layers, n_heads = translation.cross_weights.shape[:2]
    layer = n_layers - 1 if layer is None else layer
    if not 0 <= layer < n_layers:
        raise InputError.keyed("error.translator.layer", value=layer, last=n_layers - 1, field="--layer")
    if head is not None and not 0 <= head < n_heads:
        raise InputError.keyed("error.translator.head", value=head, last=n_heads - 1, field="--head")
    weights = translation.cross_weights[layer]                          # (H, T, S)
    return weights.mean(axis=0) if head is None else weights[head]


def explain_text(translation: Translation, *, lang: str = "en", layer: int | None = None,
                 head: int | None = None, digits: int = 2, top: int = 2) -> str:
    """The explanation as plain text in ``lang`` ("en" or "ko")."""
    if lang not in _TEXTS:
        raise InputError.keyed("error.translator.explain_lang", value=repr(lang), field="--lang")
    words = _TEXTS[lang]
    n_layers, n_heads = translation.cross_weights.shape[:2]
    layer_shown = n_layers - 1 if layer is None else layer
    weights = alignment(translation, layer=layer, head=head)            # (T, S)
    heads = words["mean"].format(n=n_heads) if head is None else words["head"].format(head=head, last=n_heads - 1)
    lines = [words["title"].format(source=" ".join(translation.source), target=" ".join(translation.target)), "",
             words["story"], words["which"].format(layer=layer_shown, last=n_layers - 1, heads=heads), ""]
    previous = ["<" + translation.lang + ">"] + translation.target[:-1]
    for i, (word, prev, row) in enumerate(zip(translation.target, previous, weights), start=1):
        strongest = np.argsort(-row, kind="stable")[:top]
        reads = ", ".join(f"{translation.source[j]} {row[j]:.{digits}f}" for j in strongest)
        lines.append(words["step"].format(i=i, word=word, prev=prev, reads=reads))
    lines += ["", words["matrix"], _matrix(weights, translation.source, translation.target, digits)]
    pairs = " · ".join(f"{w}→{translation.source[int(np.argmax(r))]}" for w, r in zip(translation.target, weights))
    lines += ["", words["order"].format(lang=words["langs"][translation.lang], pairs=pairs)]
    return "\n".join(lines) + "\n"


def _matrix(weights: np.ndarray, source: list[str], target: list[str], digits: int) -> str:
    from rich.table import Table

    from ..explain.model_text import render_rich as _render_rich

    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    table.add_column("")
    for word in source:
        table.add_column(word, justify="right")
    for word, row in zip(target, weights):
        table.add_row(word, *(f"{v:.{digits}f}" for v in row))
    return _render_rich(table).rstrip()


def alignment_figure(translation: Translation, *, layer: int | None = None, head: int | None = None,
                     lang: str = "en"):
    """The alignment matrix as a matplotlib Figure (qkv.viz.heatmap): one row per decoding step,
    English words as columns; the reordering shows as the verb's column lit at the last row.

    A row's query is the decoder's state for its input token, the token before the word that step
    generated (the language token for the first), so each row is labelled "input → generated word"."""
    from ..viz import fonts, heatmap

    weights = alignment(translation, layer=layer, head=head)
    n_layers, n_heads = translation.cross_weights.shape[:2]
    layer_shown = n_layers - 1 if layer is None else layer
    words = _TEXTS[lang]
    which = words["which"].format(layer=layer_shown, last=n_layers - 1,
                                  heads=words["mean"].format(n=n_heads) if head is None
                                  else words["head"].format(head=head, last=n_heads - 1))
    title = f"{' '.join(translation.source)} → {' '.join(translation.target)}\n{which}\n{words['rows']}"
    previous = ["<" + translation.lang + ">"] + translation.target[:-1]
    rows = [f"{before} → {word}" for before, word in zip(previous, translation.target)]
    with fonts.context():
        return heatmap(weights, rows, translation.source, title=title, cross=True, lang=lang, digits=2)


# Steps of one decoder block's cross-attention sublayer that make seed 001's derivation; the block's
# own "norm" and "residual" steps around it are left out (pre-norm: R is the stream, not x).
_SUBLAYER = "cross_attention/"
_SKIPPED = {"norm", "residual"}


def cross_attention_trace(model: Translator, translation: Translation, *, word: int = 1,
                          layer: int | None = None) -> Trace:
    """A `qkv.Trace` of one decoder layer's cross-attention while it generated word ``word`` (1 = the
    first), for `qkv.explain.render`: x (the decoder's normalised states, one row per decoder input
    token), memory (the encoder's outputs), Q, K, V per head, scores, weights, outputs, W_O, Y.

    The decoder is run once more on the language token and the generated words (teacher forcing:
    the same inputs the cached decoding saw, so the same numbers) with a recorder; trace.meta["query"]
    is the row of the token whose state asked for ``word``.
    """
    n_layers = len(model.decoder)
    layer = n_layers - 1 if layer is None else layer
    if not 0 <= layer < n_layers:
        raise InputError.keyed("error.translator.layer", value=layer, last=n_layers - 1, field="--layer")
    if not 1 <= word <= len(translation.target):
        raise InputError.keyed("error.translator.word", value=word, last=len(translation.target), field="--derive")
    source = np.asarray([[model.config.source_vocab.index(w) for w in translation.source]])
    inputs = [LANG_TOKENS[translation.lang], *translation.target[:-1]]
    target = np.asarray([[model.config.target_vocab.index(w) for w in inputs]])
    trace = Trace(title=f"{' '.join(translation.source)} → {' '.join(translation.target)}",
                  meta={"kind": "cross-attention", "tokens": inputs, "key_tokens": list(translation.source),
                        "query": word - 1, "n_heads": model.config.n_heads, "layer": layer})
    prefix = f"decoder {layer}/{_SUBLAYER}"

    def record(name: str, value, **meta):
        if name.startswith(prefix) and name[len(prefix):] not in _SKIPPED:
            step = name[len(prefix):]
            trace(step, value if step.startswith("w_") else value[0], **meta)   # drop the batch of one
        return None

    model.decode(target, model.encode(source), record=record)
    return trace
