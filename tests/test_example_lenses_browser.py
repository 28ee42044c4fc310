"""The offline page of the posts' worked examples (`qkv example NAME --format html`) with the lenses, in Chromium:
the neuron view of the followed pair (each q_i·k_i, their sum = the score, ÷ √d_k = the scaled score), the
projection example's two heads overlaid with keyboard toggles (head numbers as the post numbers them), the
sentence coloured by the chosen query's weights with the weights written — every number against a float64
computation from the example's own TOML inputs (never the page's or qkv's output), English and Korean, 1366
and 390 px, WCAG AA contrast, no sideways scroll."""

from __future__ import annotations

import numpy as np
import pytest

from qkv.cli import main

from browser_support import OpenPage, browser_context, low_contrast_text  # noqa: F401  (fixture)
from example_float64 import float64_steps

DIGITS = 4


def _write(tmp_path, name: str, lang: str):
    path = tmp_path / f"{name}-{lang}.html"
    assert main(["example", name, "--format", "html", "--lang", lang, "--out", str(path)]) == 0
    return path


def _numbers(texts) -> list[float]:
    return [float(t.replace("−", "-")) for t in texts]


def _check_neuron(page, ref: dict, head: int, i: int, j: int, lang: str) -> None:
    neuron = page.locator(".qkv-neuron")
    assert neuron.get_attribute("data-pair") == f"{i},{j}"
    half = 0.5 * 10 ** -DIGITS + 1e-12
    terms = ref["q"][head, i] * ref["k"][head, j]
    np.testing.assert_allclose(_numbers(neuron.locator(".qkv-term").all_inner_texts()), terms, atol=half)
    line = neuron.locator(".qkv-neuron-sum").inner_text().replace("−", "-")
    score, scaled = ref["scores"][head, i, j], ref["scaled"][head, i, j]
    assert f"= {score:.{DIGITS}f};" in line or f"= {score:.{DIGITS}f}," in line
    assert f"q·k: {score:.{DIGITS}f}." in line                          # the recorded score, the same number
    printed = [f"{t:.{DIGITS}f}" for t in terms]                          # the terms written out, then "=" or "≈"
    adds = round(sum(round(t * 10 ** DIGITS) for t in terms)) == round(score * 10 ** DIGITS)
    assert (" = " if adds else " ≈ ") + f"{score:.{DIGITS}f}" in line
    assert all(p in line for p in printed)
    division = neuron.locator(".qkv-neuron-scaled").inner_text().replace("−", "-")
    assert f"{score:.{DIGITS}f} ÷ √{ref['dk']}" in division and division.rstrip(".").endswith(f"{scaled:.{DIGITS}f}")
    lead = neuron.locator(".qkv-note").first.inner_text()
    base = ref["doc"].get("token_base", 0)
    word = "토큰" if lang == "ko" else "token"
    for name, index in ((ref["doc"]["tokens"][i], i), (ref["keys"][j], j)):
        number = f"{word} {index + base}"      # glossed by its number, unless that number is its name (“token 3”)
        assert f"({number})" in lead or (name == f"token {index + base}" and number in lead), (number, lead)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_self_attention_neuron_view_and_coloured_sentence(browser_context, tmp_path, lang):  # noqa: F811
    """Post 001's love: its weights written on the coloured sentence, its strongest key's q·k term by term."""
    ref = float64_steps("self-attention")
    tokens = ref["doc"]["tokens"]
    query = tokens.index(ref["doc"]["query"])
    path = _write(tmp_path, "self-attention", lang)
    for width in (1366, 390):
        opened = OpenPage(browser_context, path, (width, 900))
        page = opened.page
        page.wait_for_selector(".qkv-neuron", timeout=60_000)
        colour = page.locator(".qkv-colourtext")
        assert colour.get_attribute("data-query") == str(query)
        np.testing.assert_allclose(_numbers(colour.locator(".qkv-ct-w").all_inner_texts()), ref["weights"][0, query],
                                   atol=0.5e-4 + 1e-12)
        assert colour.locator(".qkv-ct-text").all_inner_texts() == tokens
        assert colour.locator("select option").first.inner_text().startswith(f"{ref['doc']['token_base']}:")
        strongest = int(np.argmax(ref["weights"][0, query]))
        _check_neuron(page, ref, 0, query, strongest, lang)
        assert page.locator(".qkv-overlay").count() == 0                  # one head: nothing to overlay
        # another cell of the page's matrix: the neuron view shows that pair, the coloured sentence its query
        page.evaluate("document.querySelector('.qkv-view').qkv.showCell(0, 2)")
        page.wait_for_selector(".qkv-neuron[data-pair='0,2']", timeout=30_000)
        _check_neuron(page, ref, 0, 0, 2, lang)
        assert colour.get_attribute("data-query") == "0"
        np.testing.assert_allclose(_numbers(colour.locator(".qkv-ct-w").all_inner_texts()), ref["weights"][0, 0],
                                   atol=0.5e-4 + 1e-12)
        assert "contribution" not in page.locator(".qkv-lens-box").inner_text().lower()
        assert opened.overflow() <= 0 and opened.outside_requests() == [] and opened.errors == []
        assert low_contrast_text(page) == []
        opened.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_projection_heads_overlaid_with_keyboard_toggles(browser_context, tmp_path, lang):  # noqa: F811
    """The post “Attention의 projection”'s two heads, numbered 1 and 2 as the post numbers them, overlaid; the
    toggles work by keyboard; the table under the lines holds the float64 weights of the shown heads."""
    ref = float64_steps("projection")
    doc = ref["doc"]
    query = doc["tokens"].index(doc["query"])
    head_word = "헤드" if lang == "ko" else "head"
    path = _write(tmp_path, "projection", lang)
    for width in (1366, 390):
        opened = OpenPage(browser_context, path, (width, 900))
        page = opened.page
        page.wait_for_selector(".qkv-overlay", timeout=60_000)
        overlay = page.locator(".qkv-overlay")
        assert overlay.get_attribute("data-query") == str(query) and overlay.get_attribute("data-heads") == "0,1"
        names = overlay.locator(".qkv-toggle-name").all_inner_texts()
        assert names == [f"{head_word} {h + doc['head_base']}" for h in range(2)]
        for h in range(2):
            row = overlay.locator(f".qkv-overlay-weights tr[data-head='{h}'] td").all_inner_texts()
            np.testing.assert_allclose(_numbers(row), ref["weights"][h, query], atol=0.5e-4 + 1e-12)
        first = overlay.locator(".qkv-overlay-toggles input[data-head='0']")
        first.focus()
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.getAttribute('data-head')") == "1"
        page.keyboard.press("Space")                                        # head 2 off
        assert overlay.get_attribute("data-heads") == "0"
        assert overlay.locator(".qkv-overlay-weights tr[data-head='1']").count() == 0
        assert overlay.locator("line[data-head='1']").count() == 0 and overlay.locator("line[data-head='0']").count() == 3
        page.keyboard.press("Space")                                        # and on again
        assert overlay.get_attribute("data-heads") == "0,1"
        _check_neuron(page, ref, 0, query, int(np.argmax(ref["weights"][0, query])), lang)
        page.locator(".qkv-head").focus()                                   # the page's head picker, by keyboard: head 2
        page.keyboard.press("ArrowDown")
        strongest = int(np.argmax(ref["weights"][1, query]))
        page.wait_for_selector(f".qkv-colourtext .qkv-note:has-text('{head_word} 2')", timeout=30_000)
        page.wait_for_selector(f".qkv-neuron[data-pair='{query},{strongest}']", timeout=30_000)
        _check_neuron(page, ref, 1, query, strongest, lang)
        np.testing.assert_allclose(_numbers(page.locator(".qkv-colourtext .qkv-ct-w").all_inner_texts()),
                                   ref["weights"][1, query], atol=0.5e-4 + 1e-12)
        assert opened.overflow() <= 0 and opened.outside_requests() == [] and opened.errors == []
        assert low_contrast_text(page) == []
        opened.close()


def test_cross_attention_colours_the_source_sentence(browser_context, tmp_path):  # noqa: F811
    """Cross-attention: the query comes from the other sentence; the coloured tokens are the keys (the source
    sentence), each with its float64 weight, and the neuron view reads the query's q against a key's k."""
    ref = float64_steps("cross-attention")
    doc = ref["doc"]
    path = _write(tmp_path, "cross-attention", "en")
    opened = OpenPage(browser_context, path, (390, 900))
    page = opened.page
    page.wait_for_selector(".qkv-neuron", timeout=60_000)
    colour = page.locator(".qkv-colourtext")
    assert colour.locator(".qkv-ct-text").all_inner_texts() == doc["memory_tokens"]
    np.testing.assert_allclose(_numbers(colour.locator(".qkv-ct-w").all_inner_texts()), ref["weights"][0, 0],
                               atol=0.5e-4 + 1e-12)
    strongest = int(np.argmax(ref["weights"][0, 0]))
    assert page.locator(".qkv-neuron").get_attribute("data-pair") == f"0,{strongest}"
    terms = ref["q"][0, 0] * ref["k"][0, strongest]
    np.testing.assert_allclose(_numbers(page.locator(".qkv-neuron .qkv-term").all_inner_texts()), terms,
                               atol=0.5e-4 + 1e-12)
    assert opened.overflow() <= 0 and opened.errors == [] and low_contrast_text(page) == []
    opened.close()
