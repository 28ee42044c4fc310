"""A page of weights alone (`attention_page`: the 512-token page of docs/pictures.md) promised "Click a cell or a
key token for its derivation" and then showed a panel of "not recorded in this trace" rows (issue 29's leftovers):
it has no q, k or v to derive a weight from. Its words now say what a click gives, the cell's weight, and why no
derivation; a page made from a trace (the example's) keeps its promise and its derivation."""

from __future__ import annotations

import numpy as np
import pytest

import qkv.examples
from qkv.explain import texts
from qkv.viz.html import attention_page, trace_html

from browser_support import OpenPage, browser_context  # noqa: F401  (fixture)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_weights_page_promises_the_weight_not_a_derivation(browser_context, tmp_path, lang):  # noqa: F811
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 6, 6))
    weights = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    pages = {"weights": attention_page(weights, [f"t{i}" for i in range(6)], title="weights", lang=lang),
             "example": trace_html(qkv.examples.run("self-attention"), lang=lang)}
    for name, html in pages.items():
        path = tmp_path / f"{name}.html"
        path.write_text(html, encoding="utf-8")
        page = OpenPage(browser_context, path)
        try:
            p = page.page
            notes = " ".join(p.locator(".qkv-note").all_inner_texts())
            p.evaluate("() => document.querySelector('.qkv-view').qkv.showCell(1, 0)")
            heading = p.locator(".qkv-cell").first.inner_text()
            if name == "weights":
                assert texts.text(lang, "page.hint_weights") in notes and texts.text(lang, "page.hint") not in notes
                assert heading.startswith(texts.text(lang, "page.cell_weight")), heading
                shown = weights[0, 1, 0]
                assert f"{shown:.4f}" in heading, heading          # the cell's weight itself, as stored (4 decimals)
            else:
                assert texts.text(lang, "page.hint") in notes
                assert heading.startswith(texts.text(lang, "page.derivation")), heading
            assert page.errors == []
        finally:
            page.close()


def test_the_promise_says_why_in_words_a_learner_reads():
    for lang, said in (("en", "holds the weights alone"), ("ko", "가중치만 있고")):
        assert said in texts.text(lang, "page.hint_weights")
