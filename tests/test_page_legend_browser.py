"""The matrix view's legend speaks of a mask only where the mask blocks a cell (found in the learner's pass of
issue 29: every worked example's page, none of which has a mask, said "hatched grey: masked" / "빗금 친 회색:
마스크" under its matrix, beside a hatched swatch no cell wore — the class of "a mask named where there is none").
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import qkv
from qkv.explain import texts
from qkv.explain.page import trace_html

from browser_support import OpenPage, browser_context  # noqa: F401

pytestmark = pytest.mark.browser


def _causal() -> qkv.Trace:
    mha = qkv.MultiHeadAttention.random(8, n_heads=2, seed=1)
    x = np.random.default_rng(1).standard_normal((4, 8))
    trace = qkv.Trace("causal", {"tokens": ["a", "b", "c", "d"], "query": 3})
    q, k, v = mha.project(x, record=trace)
    qkv.attention(q, k, v, causal=True, record=trace)
    return trace


def _payload_masked(page: str) -> bool:
    return bool(re.search(r'"masked":true', page))


@pytest.mark.parametrize("name", qkv.examples.names())
def test_no_worked_example_page_says_masked(name):
    assert not _payload_masked(trace_html(qkv.examples.run(name), lang="ko"))


def test_a_causal_page_says_masked():
    assert _payload_masked(trace_html(_causal()))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_legend_a_reader_sees(browser_context, tmp_path, lang):  # noqa: F811
    for name, trace, masked in (("plain", qkv.examples.run("self-attention"), False), ("causal", _causal(), True)):
        path = tmp_path / f"{name}-{lang}.html"
        path.write_text(trace_html(trace, lang=lang), encoding="utf-8")
        opened = OpenPage(browser_context, path)
        legend = opened.page.locator(".qkv-legend-label").first.inner_text()
        swatches = opened.page.locator(".qkv-masked-swatch").count()
        opened.close()
        want = texts.text(lang, "page.legend_masked" if masked else "page.legend")
        assert legend == want and swatches == int(masked), (name, lang, legend, swatches)
        assert ("mask" in legend.lower() or "마스크" in legend) == masked, legend
