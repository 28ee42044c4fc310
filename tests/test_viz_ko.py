"""No English under lang="ko" in any figure (issue 29: the Korean multi-head figure's title began
"Multi-head attention:"). Every figure kind is drawn in Korean and every Text artist it holds (titles,
labels, legends, tick labels, cell numbers, colour-bar labels) is read word by word: a Latin word is
allowed only when it is a symbol or variable name the figures write the same in every language
(q, k_love, W_Q, softmax, exp, Concat …), a token string of the input, or one of the post's own terms
the Korean posts write in Latin letters (Query, Key, Value; Self-attention, Cross-attention, Multi-head attention). The list of allowed words is written
here, not read from the code under test."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.text
import numpy as np
import pytest

import qkv
import qkv.examples
from qkv import viz

ROOT = Path(__file__).resolve().parents[1]

# Written the same in Korean: the formulas' functions and the posts' terms for Q, K, V (the Korean posts
# write "Query·Key·Value"), the library's name, and one proper name ("3Blue1Brown", post 002).
SYMBOLS = {"softmax", "exp", "max", "Concat", "Query", "Key", "Value", "qkv", "3Blue1Brown", "score_mod",
           # «도해와 최소 사례로 …» writes its three attentions in Latin letters in its Korean text and title
           # ("Self-attention, Cross-attention, Multi-head Attention"); the text output and serve use the same
           "Self", "Cross", "Multi", "head", "attention"}
_WORD = re.compile(r"[0-9]*[A-Za-z][A-Za-z0-9_]*")


def _english(text: str, tokens: set[str]) -> list[str]:
    """The Latin words of ``text`` that are neither symbols nor the input's token strings."""
    found = []
    for word in _WORD.findall(text):
        if word in SYMBOLS or word in tokens or word.lower() in tokens:
            continue
        if len(word) <= 2 or "_" in word:        # a variable or shape letter: q, k, v, z, X, T, d, h, dh, W_Q, q_love
            continue
        found.append(word)
    return found


def _words_of(fig, tokens) -> dict[str, list[str]]:
    fig.draw_without_rendering()                  # every tick label exists after a layout pass
    bad = {}
    for artist in fig.findobj(matplotlib.text.Text):
        text = artist.get_text()
        if text and (words := _english(text, tokens)):
            bad[text] = words
    return bad


def _tokens(*lists) -> set[str]:
    words = set()
    for tokens in lists:
        for token in tokens:
            words |= {w for w in _WORD.findall(str(token))} | {str(token)}
    return words


def _example_tokens(trace) -> set[str]:
    meta = trace.meta
    lists = [meta.get("tokens") or [], meta.get("key_tokens") or [], meta.get("answers") or []]
    for scene in meta.get("scenes") or []:
        lists.append(scene.get("tokens") or [])
        lists.append([scene.get("query", "")])
    return _tokens(*lists)


@pytest.mark.parametrize("name", ["self-attention", "cross-attention", "multi-head", "projection", "group-meeting"])
def test_an_example_figure_has_no_english_under_ko(name):
    trace = qkv.examples.run(name)
    fig = viz.figure_for(trace, lang="ko")
    assert _words_of(fig, _example_tokens(trace)) == {}


def test_the_chain_heatmap_mask_and_grid_have_no_english_under_ko():
    trace = qkv.examples.run("self-attention")
    tokens = _example_tokens(trace)
    weights = trace["weights"].value[0]
    names = ["I", "love", "machine", "learning"]
    figures = {
        "query_path": viz.query_path(trace, lang="ko"),
        "heatmap": viz.heatmap(weights, names, lang="ko", mask=np.tril(np.ones((4, 4), bool))),
        "heatmap cross": viz.heatmap(weights, names, lang="ko", cross=True),
        "mask": viz.mask_figure(np.tril(np.ones((4, 4), bool)), names, lang="ko"),
        "grid": viz.attention_grid(np.stack([trace["weights"].value] * 2), names, lang="ko"),
        "grid of one head": viz.attention_grid(trace["weights"].value[None], names, lang="ko", layers=[2], heads=[5]),
    }
    bad = {kind: found for kind, fig in figures.items() if (found := _words_of(fig, tokens))}
    assert bad == {}


def test_a_users_causal_two_head_example_has_no_english_under_ko():
    from qkv.examples.runner import trace_spec
    from qkv.spec import parse_spec, read_document

    path = ROOT / "examples" / "my-example.toml"
    trace = trace_spec(parse_spec(read_document(path), source=str(path), base=path.parent))
    fig = viz.figure_for(trace, lang="ko")
    # the file's own title is the user's words, drawn as written
    assert _words_of(fig, _example_tokens(trace) | _tokens([trace.title])) == {}


def test_the_heads_figure_has_no_english_under_ko():
    from qkv.analysis import head_scores, rollout
    from qkv.viz.heads import heads_figure

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 3, 5, 5))
    weights = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    tokens = ["I", "love", "machine", "learning", "!"]
    fig = heads_figure(head_scores(weights), rollout(weights)[-1], tokens, title="", lang="ko")
    assert _words_of(fig, _tokens(tokens)) == {}


@pytest.fixture(scope="module")
def minilm():
    import qkv.models

    return qkv.models.load("minilm")


def test_a_models_figures_have_no_english_under_ko(minilm):
    text = "The cat sat on the mat."
    tokens = _tokens(minilm.tokens(text), ["minilm", "MiniLM"])
    figures = {
        "one head": viz.figure_for(minilm.trace(text, layer=2, head=3, query="cat"), lang="ko"),
        "one layer": viz.figure_for(minilm.trace(text, layer=2, query="cat"), lang="ko"),
        "every layer": viz.figure_for(minilm.trace(text), lang="ko"),
    }
    bad = {kind: found for kind, fig in figures.items() if (found := _words_of(fig, tokens))}
    assert bad == {}


def test_the_checker_finds_english():
    # the check itself: an English title is found, symbols and tokens are not
    assert _english("Outputs of three heads: love에 대한 세 헤드", {"love"}) == ["Outputs", "three", "heads"]
    assert _english("Multi-head attention: love에 대한 세 헤드", {"love"}) == []      # the post's own term
    assert _english("q_love · k_I = 0.92 × 0.45 = softmax(QKᵀ/√d_k) Query", {"love", "I"}) == []
