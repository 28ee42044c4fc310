"""The translator's learned cross-attention next to the hand-made numbers of the post
“도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention”.

The post's cross-attention: the decoder has written 私は and asks the encoder's outputs for
"I love machine learning" which words matter. Its inputs are dummy values (the post says so) in the
shipped example ``cross-attention.toml``; qkv computes its weights with the core
(`qkv.examples.run`). The translator, given the same English sentence and asked for Japanese, writes
私は first too, and its decoder's state for 私は queries the encoder's outputs for the same four words:
the row of `Translation.cross_weights` whose decoder input is 私は (the step that generated the
second word). Both are softmax(Q·Kᵀ/√d_k) over the same keys; nothing else about them is the same
(one hand-made head with d_k = 2 against 2 layers × 4 learned heads with d_k = 16), so they need not
match, and the text says what agrees and what differs from the numbers themselves.

    >>> from qkv import translator
    >>> from qkv.translator import compare
    >>> model = translator.load()
    >>> c = compare.post_comparison(model, model.translate("I love machine learning", "ja"))
    >>> c.keys, c.query, c.post.shape, c.learned.shape       # learned: (layers, heads, English words)
    (['I', 'love', 'machine', 'learning'], '私は', (4,), (2, 4, 4))
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .model import LANG_TOKENS, Translation, Translator

__all__ = ["PostComparison", "post_comparison", "comparison_text", "comparison_figure", "EXAMPLE"]

EXAMPLE = "cross-attention"
"""The shipped example that holds the post's hand-made cross-attention inputs."""


@dataclass(frozen=True)
class PostComparison:
    """The post's weights and the translator's for the same query and keys.

    keys: the English words (S); query: the decoder token whose state asks (私は); generated: the word
    the translator generated at that step; post: (S,) the post's weights, computed by qkv from the
    example's inputs; post_dk: the post's d_k; learned: (L, H, S) the translator's weights of that
    step, every decoder layer and head; learned_dk: its head width d_k; step: the row of
    `Translation.cross_weights` (0 = the step that generated the first word).
    """

    keys: list[str]
    query: str
    generated: str
    post: np.ndarray
    post_dk: int
    learned: np.ndarray
    learned_dk: int
    step: int


def post_comparison(model: Translator, translation: Translation) -> PostComparison:
    """The comparison for a translation of the post's own sentence into the post's language.

    InputError (field --compare-post) when the translation is not of the post's English words into
    Japanese, or never feeds the post's query token to the decoder (then there is no row to compare)."""
    from .. import examples

    trace = examples.run(EXAMPLE)
    keys, query = list(trace.meta["key_tokens"]), trace.meta["tokens"][trace.meta["query"]]
    inputs = [LANG_TOKENS[translation.lang], *translation.target[:-1]]      # each step's decoder input
    if translation.source != keys or translation.lang != "ja" or query not in inputs:
        raise InputError.keyed("error.translator.compare_post", sentence=" ".join(keys), query=query,
                               got=" ".join(translation.source), lang=translation.lang, field="--compare-post")
    step = inputs.index(query)
    post = np.asarray(trace["weights"].value, dtype=np.float64)[0, trace.meta["query"]]     # (S,)
    learned = np.asarray(translation.cross_weights[:, :, step, :], dtype=np.float64)        # (L, H, S)
    return PostComparison(keys=keys, query=query, generated=translation.target[step], post=post,
                          post_dk=int(np.asarray(trace["q_heads"].value).shape[-1]), learned=learned,
                          learned_dk=model.config.d_model // model.config.n_heads, step=step)


# --------------------------------------------------------------------------- numbers → sentences
def _entropy_bits(weights: np.ndarray) -> float:
    w = weights[weights > 0]
    return float(-(w * np.log2(w)).sum())


def _order(weights: np.ndarray) -> list[int]:
    return [int(i) for i in np.argsort(-weights, kind="stable")]


def _pairs_agreeing(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """How many pairs of words the two rows order the same way (ties in either row count as not the
    same), out of how many."""
    n = len(a)
    same = sum(1 for i in range(n) for j in range(i + 1, n) if (a[i] - a[j]) * (b[i] - b[j]) > 0)
    return same, n * (n - 1) // 2


_TEXTS = {
    "en": {
        "title": "The cross-attention of the post “{post}” next to the translator's, for {query} → {sentence}",
        "same": ("In both, the decoder's state for {query} is the query, and the encoder's outputs for the English "
                 "words {keys} are the keys and values: softmax(Q·Kᵀ/√d_k) gives one weight per English word."),
        "differ_setup": ("The post's inputs are hand-made (its own dummy values), one head with d_k = {post_dk}; the "
                         "translator's weights were learned from its corpus, {layers} decoder layers × {heads} heads "
                         "with d_k = {dk}. They are not the same computation, so they need not match."),
        "step": "At this step the translator generated {generated} (decoder input {query} → {generated}).",
        "header_rows": "weights of {query}",
        "post_row": "the post (hand-made)",
        "head_row": "layer {layer} head {head}",
        "mean_row": "layer {layer} mean",
        "largest": "read most",
        "entropy": "entropy (bits)",
        "agrees": "What agrees:",
        "differs": "What differs:",
        "sums": "every row sums to 1 (largest deviation {deviation:.1e})",
        "same_top": "the largest weight falls on the same word, {word}: the post {post:.{d}f}, the translator (layer "
                    "{layer}, mean of the heads) {learned:.{d}f}",
        "other_top": "the word read most: the post's is {post_word} ({post:.{d}f}), the translator's (layer {layer}, "
                     "mean of the heads) is {learned_word} ({learned:.{d}f})",
        "heads_top": "{count} of the translator's {total} heads read {word} most, as the post does",
        "order": "the order of the words by weight: the post {post_order}; the translator (layer {layer}, mean) "
                 "{learned_order}: they order {same} of {pairs} pairs of words the same way",
        "spread_post": ("the post's weights lie within {spread:.{d}f} of each other (entropy {entropy:.3f} of "
                        "{most:.0f} bits: nearly even)"),
        "spread_post_uneven": "the post's weights range over {spread:.{d}f} (entropy {entropy:.3f} of {most:.0f} bits)",
        "spread_learned": ("the translator's (layer {layer}, mean) range over {spread:.{d}f} (entropy {entropy:.3f} "
                           "bits): {how} than the post's"),
        "more": "more concentrated",
        "heads_peak": ("each of the translator's {total} heads puts between {low:.{d}f} and {high:.{d}f} on a single "
                       "word; the post's one head puts at most {post:.{d}f} on any word"),
        "less": "more even",
        "figure_title": "{query}'s weights over “{sentence}”: the post “{post}” (hand-made) and the translator (learned)",
        "figure_rows": "whose weights (query: the decoder's state for {query})",
        "colour": "weight (0 to 1)",
    },
    "ko": {
        "title": "글 「{post}」의 cross-attention과 번역기의 cross-attention: {query} → {sentence}",
        "same": ("두 경우 모두 {query}에서의 디코더 상태가 Query이고, 인코더가 영어 단어 {keys}에 대해 만든 출력이 "
                 "Key와 Value이다. softmax(Q·Kᵀ/√d_k)는 영어 단어마다 가중치를 하나씩 준다."),
        "differ_setup": ("글의 입력은 손으로 정한 값(글이 말하는 더미 값)이고 헤드 하나, d_k = {post_dk}이다. 번역기의 "
                         "가중치는 말뭉치에서 학습되었고 디코더 {layers}층 × 헤드 {heads}개, d_k = {dk}이다. 같은 "
                         "값으로 하는 계산이 아니므로 숫자가 일치할 필요는 없다."),
        "step": "이 단계에서 번역기가 생성한 단어: {generated} (디코더 입력 {query} → {generated}).",
        "header_rows": "{query}의 가중치",
        "post_row": "글 (손으로 정한 입력)",
        "head_row": "층 {layer} 헤드 {head}",
        "mean_row": "층 {layer} 평균",
        "largest": "가장 많이 읽은 단어",
        "entropy": "엔트로피 (비트)",
        "agrees": "같은 점:",
        "differs": "다른 점:",
        "sums": "모든 행의 합이 1이다 (가장 큰 차이 {deviation:.1e})",
        "same_top": "가장 큰 가중치가 같은 단어 {word}에 간다. 글은 {post:.{d}f}, 번역기(층 {layer}, 헤드 평균)는 "
                    "{learned:.{d}f}이다",
        "other_top": "가장 많이 읽은 단어가 다르다. 글은 {post_word} ({post:.{d}f}), 번역기(층 {layer}, 헤드 평균)는 "
                     "{learned_word} ({learned:.{d}f})이다",
        "heads_top": "번역기의 헤드 {total}개 중 {count}개가 글과 같은 단어({word})를 가장 많이 읽는다",
        "order": "가중치 순서: 글 {post_order} / 번역기(층 {layer}, 평균) {learned_order}. 단어 쌍 {pairs}개 중 "
                 "{same}개의 순서가 같다",
        "spread_post": ("글의 가중치는 가장 큰 것과 가장 작은 것의 차이가 {spread:.{d}f}뿐이다 (엔트로피 {entropy:.3f}비트, 최대 {most:.0f}비트: "
                        "거의 고르다)"),
        "spread_post_uneven": ("글의 가중치는 가장 큰 것과 가장 작은 것의 차이가 {spread:.{d}f}이다 (엔트로피 "
                               "{entropy:.3f}비트, 최대 {most:.0f}비트)"),
        "spread_learned": ("번역기(층 {layer}, 평균)의 가중치는 가장 큰 것과 가장 작은 것의 차이가 {spread:.{d}f}이다 "
                           "(엔트로피 {entropy:.3f}비트). 글보다 {how}"),
        "more": "한곳에 더 몰려 있다",
        "heads_peak": ("번역기의 헤드 {total}개가 저마다 가장 많이 읽는 단어에 주는 가중치는 {low:.{d}f}에서 {high:.{d}f} 사이이다. "
                       "글의 헤드 하나가 어느 단어에 주는 가중치는 많아야 {post:.{d}f}이다"),
        "less": "더 고르다",
        "figure_title": "“{sentence}”에 대한 {query}의 가중치: 글 「{post}」(손으로 정한 입력)과 번역기(학습된 값)",
        "figure_rows": "누구의 가중치인가 (Query: {query}에서의 디코더 상태)",
        "colour": "가중치 (0에서 1)",
    },
}


def _words(lang: str) -> dict:
    if lang not in _TEXTS:
        raise InputError.keyed("error.translator.explain_lang", value=repr(lang), field="--lang")
    return _TEXTS[lang]


def _rows(c: PostComparison, words: dict) -> list[tuple[str, np.ndarray]]:
    rows = [(words["post_row"], c.post)]
    for layer in range(c.learned.shape[0]):
        rows += [(words["head_row"].format(layer=layer, head=h), c.learned[layer, h]) for h in range(c.learned.shape[1])]
        rows.append((words["mean_row"].format(layer=layer), c.learned[layer].mean(axis=0)))
    return rows


def comparison_text(c: PostComparison, *, lang: str = "en", digits: int = 4) -> str:
    """The comparison as plain text in ``lang``: the weights side by side, then what agrees and what
    differs, each sentence computed from the weights it describes."""
    from rich.table import Table

    from ..explain import texts
    from ..explain.model_text import render_rich

    words = _words(lang)
    post_title = texts.text(lang, "post.001")
    n_layers, n_heads, n_keys = c.learned.shape
    last = n_layers - 1
    mean = c.learned[last].mean(axis=0)
    most = math.log2(n_keys)
    lines = [words["title"].format(post=post_title, query=c.query, sentence=" ".join(c.keys)), "",
             words["same"].format(query=c.query, keys=", ".join(c.keys)),
             words["differ_setup"].format(post_dk=c.post_dk, layers=n_layers, heads=n_heads, dk=c.learned_dk),
             words["step"].format(generated=c.generated, query=c.query), ""]

    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    table.add_column(words["header_rows"].format(query=c.query))
    for key in c.keys:
        table.add_column(key, justify="right")
    table.add_column(words["largest"])
    table.add_column(words["entropy"], justify="right")
    for label, row in _rows(c, words):
        table.add_row(label, *(f"{v:.{digits}f}" for v in row), c.keys[int(np.argmax(row))], f"{_entropy_bits(row):.3f}")
    lines += [render_rich(table).rstrip(), ""]

    d = digits
    all_rows = np.concatenate([c.post[None], c.learned.reshape(-1, n_keys)])
    agrees = [words["sums"].format(deviation=float(np.abs(all_rows.sum(axis=-1) - 1).max()))]
    differs = []
    post_top, learned_top = int(np.argmax(c.post)), int(np.argmax(mean))
    if post_top == learned_top:
        agrees.append(words["same_top"].format(word=c.keys[post_top], post=c.post[post_top], layer=last,
                                               learned=mean[learned_top], d=d))
    else:
        differs.append(words["other_top"].format(post_word=c.keys[post_top], post=c.post[post_top], layer=last,
                                                 learned_word=c.keys[learned_top], learned=mean[learned_top], d=d))
    heads_top = int((np.argmax(c.learned, axis=-1) == post_top).sum())
    (agrees if heads_top else differs).append(words["heads_top"].format(count=heads_top, total=n_heads * n_layers,
                                                                        word=c.keys[post_top]))
    same, pairs = _pairs_agreeing(c.post, mean)
    order = words["order"].format(post_order=" > ".join(c.keys[i] for i in _order(c.post)), layer=last,
                                  learned_order=" > ".join(c.keys[i] for i in _order(mean)), same=same, pairs=pairs)
    (agrees if same == pairs else differs).append(order)
    post_entropy, learned_entropy = _entropy_bits(c.post), _entropy_bits(mean)
    even = post_entropy > 0.99 * most
    post_spread = float(c.post.max() - c.post.min())
    spread = (words["spread_post"] if even else words["spread_post_uneven"]).format(
        spread=post_spread, entropy=post_entropy, most=most, d=d)
    learned_spread = words["spread_learned"].format(
        layer=last, spread=float(mean.max() - mean.min()), entropy=learned_entropy,
        how=words["more"] if learned_entropy < post_entropy else words["less"], d=d)
    peaks = c.learned.max(axis=-1)                                       # (L, H)
    differs += [spread, learned_spread,
                words["heads_peak"].format(total=n_heads * n_layers, low=float(peaks.min()), high=float(peaks.max()),
                                           post=float(c.post.max()), d=d)]
    lines += [words["agrees"]] + [f"  · {s}" for s in agrees] + [words["differs"]] + [f"  · {s}" for s in differs]
    return "\n".join(lines) + "\n"


def comparison_figure(c: PostComparison, *, lang: str = "en", digits: int = 4):
    """One grid of weights on one colour scale (0 to 1): the post's row on top, a line under it, then
    every layer's heads and their mean; the English words as columns, each cell's weight written."""
    import textwrap

    from matplotlib.figure import Figure

    from ..explain import texts
    from ..explain.numbers import fmt
    from ..viz import fonts

    words = _words(lang)
    rows = _rows(c, words)
    matrix = np.stack([r for _, r in rows])                             # (1 + L·(H + 1), S)
    title = words["figure_title"].format(query=c.query, sentence=" ".join(c.keys), post=texts.text(lang, "post.001"))
    with fonts.context():
        figure = Figure(figsize=(1.6 * len(c.keys) + 3.2, 0.42 * len(rows) + 2.2), layout="constrained")
        ax = figure.add_subplot()
        image = ax.imshow(matrix, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for (r, k), value in np.ndenumerate(matrix):
            shown = fmt(float(value), digits) if value >= 10 ** -digits / 2 else f"{value:.0e}"
            ax.text(k, r, shown, ha="center", va="center", fontsize=8, color="white" if value > 0.6 else "black")
        ax.axhline(0.5, color="#d62728", linewidth=2)                   # the post above, the translator below
        ax.set_xticks(range(len(c.keys)), c.keys)
        ax.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
        ax.get_yticklabels()[0].set_color("#d62728")
        ax.xaxis.tick_top()
        ax.set_ylabel(words["figure_rows"].format(query=c.query), fontsize=8)
        ax.set_title("\n".join(textwrap.wrap(title, 70)), fontsize=9)
        figure.colorbar(image, ax=ax, shrink=0.6, label=words["colour"])
    return figure
