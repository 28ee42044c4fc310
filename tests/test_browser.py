"""The interactive page in a real browser: Debian's Chromium, headless, driven by Playwright (sync API).

These tests run in CI and never skip: without Chromium they fail with the command that installs it
(`make browser`). Pages are opened from disk (file://) and every request they make is recorded.
"""

from __future__ import annotations

import numpy as np
import pytest

import qkv
import qkv.examples
from qkv.viz.html import attention_page, trace_html

from browser_support import OpenPage, browser_context  # noqa: F401  (fixture)

DIGITS = 4
TOLERANCE = 0.5 * 10 ** -DIGITS + 1e-12    # the page shows (and stores) 4 decimals


def not_blank(png_path) -> None:
    from PIL import Image

    pixels = np.asarray(Image.open(png_path).convert("RGB"), dtype=float)
    assert pixels.std() > 10, "the screenshot is one flat colour"
    background = pixels[0, 0]
    differs = np.any(np.abs(pixels - background) > 30, axis=-1).mean()
    assert differs > 0.02, f"only {differs:.1%} of the screenshot differs from the background"


@pytest.fixture(scope="module")
def mha_trace():
    """Two heads, causal, recorded through MultiHeadAttention — every step the page reads."""
    trace = qkv.Trace("two heads", meta={"tokens": ["I", "love", "machine", "learning", "!"], "kind": "self-attention"})
    mha = qkv.MultiHeadAttention.random(8, n_heads=2, seed=3)
    mha(np.random.default_rng(3).standard_normal((5, 8)), causal=True, record=trace)
    return trace


@pytest.fixture()
def opened(browser_context, tmp_path, mha_trace):  # noqa: F811
    path = tmp_path / "page.html"
    path.write_text(trace_html(mha_trace, digits=DIGITS), encoding="utf-8")
    page = OpenPage(browser_context, path)
    yield page
    page.close()


def key_weights(page) -> list[float]:
    texts = page.eval_on_selector_all(".qkv-right .qkv-tok", "els => els.map(e => e.getAttribute('data-weight'))")
    assert all(t is not None for t in texts), "hovering a query must label every key with its weight"
    return [float(t.replace("−", "-")) for t in texts]


def test_no_request_leaves_the_page(opened):
    opened.page.hover(".qkv-left .qkv-tok[data-index='2']")
    opened.page.select_option(".qkv-head", "1")
    assert opened.outside_requests() == []
    assert all(url.startswith("file:") for url in opened.requests)
    assert opened.errors == []


def test_hovered_query_shows_the_traces_weights_per_head(opened, mha_trace):
    weights = mha_trace["weights"].value                     # (H, Tq, Tk)
    page = opened.page
    for head in (0, 1):
        page.select_option(".qkv-head", str(head))
        assert page.get_attribute(".qkv-view", "data-head") == str(head)
        for query in (0, 3, 4):
            page.hover(f".qkv-left .qkv-tok[data-index='{query}']")
            assert page.get_attribute(".qkv-view", "data-query") == str(query)
            np.testing.assert_allclose(key_weights(page), weights[head, query], rtol=0, atol=TOLERANCE)
    # the read-only accessor hands out the same recorded numbers
    row = page.evaluate("() => document.querySelector('.qkv-view').qkv.row(1, 4)")
    np.testing.assert_allclose(row, weights[1, 4], rtol=0, atol=TOLERANCE)
    assert opened.errors == []


def test_switching_head_changes_the_highlight(opened, mha_trace):
    page = opened.page
    page.hover(".qkv-left .qkv-tok[data-index='4']")
    first = key_weights(page)
    page.select_option(".qkv-head", "1")
    page.hover(".qkv-left .qkv-tok[data-index='3']")
    page.hover(".qkv-left .qkv-tok[data-index='4']")
    second = key_weights(page)
    assert first != second
    np.testing.assert_allclose(second, mha_trace["weights"].value[1, 4], rtol=0, atol=TOLERANCE)


def test_clicking_a_cell_shows_its_derivation_from_the_recorded_steps(opened, mha_trace):
    page = opened.page
    page.select_option(".qkv-head", "1")
    point = page.evaluate("() => document.querySelector('.qkv-view').qkv.cellPoint(3, 1)")
    page.mouse.click(point["x"], point["y"])
    assert page.get_attribute(".qkv-view", "data-cell") == "3,1"
    cell = page.locator(".qkv-cell")
    assert cell.is_visible()

    def shown(step: str) -> float:
        return float(cell.locator(f'span[data-step="{step}"]').first.inner_text().replace("−", "-"))

    for step in ("scores", "scaled_scores", "weights"):
        assert abs(shown(step) - mha_trace[step].value[1, 3, 1]) <= TOLERANCE, step
    assert "0 (may attend)" in cell.locator('[data-step="mask"]').first.inner_text()
    value_row = cell.locator('span[data-step="v_heads"]').inner_text()
    expected = mha_trace["v_heads"].value[1, 1]
    numbers = [float(x.replace("−", "-")) for x in value_row.strip("[]").split(", ")]
    np.testing.assert_allclose(numbers, expected, rtol=0, atol=TOLERANCE)
    # a blocked (causal) cell says −∞ before softmax and weight 0
    point = page.evaluate("() => document.querySelector('.qkv-view').qkv.cellPoint(1, 3)")
    page.mouse.click(point["x"], point["y"])
    assert "−∞" in cell.locator('[data-step="mask"]').first.inner_text()
    assert shown("weights") == 0.0
    # clicking a key token while a query is chosen opens the same panel
    page.hover(".qkv-left .qkv-tok[data-index='2']")
    page.click(".qkv-right .qkv-tok[data-index='0']")
    assert page.get_attribute(".qkv-view", "data-cell") == "2,0"
    assert opened.errors == []


def test_screenshot_is_not_blank(opened, tmp_path):
    opened.page.hover(".qkv-left .qkv-tok[data-index='3']")
    shot = tmp_path / "page.png"
    opened.page.screenshot(path=str(shot), full_page=True)
    not_blank(shot)


def test_the_step_by_step_derivation_is_embedded(opened):
    section = opened.page.locator(".qkv-steps")
    assert section.count() == 1 and len(section.inner_text()) > 100


@pytest.mark.parametrize("name", qkv.examples.names())
def test_every_shipped_example_opens(browser_context, tmp_path, name):  # noqa: F811
    path = tmp_path / f"{name}.html"
    path.write_text(trace_html(qkv.examples.run(name), lang="ko" if name == "group-meeting" else "en"),
                    encoding="utf-8")
    page = OpenPage(browser_context, path)
    try:
        assert page.errors == [] and page.outside_requests() == []
        parts = page.page.locator(".qkv-part option").count()
        if parts > 1:  # scoped scenes (seed 002): switch to the last one
            page.page.select_option(".qkv-part", str(parts - 1))
            page.page.wait_for_selector('.qkv-view[data-ready="1"]')
            assert page.page.get_attribute(".qkv-view", "data-part") == str(parts - 1)
        assert page.errors == []
    finally:
        page.close()


# ------------------------------------------------------------------ 512 tokens × 12 heads × 6 layers
LAYERS, HEADS, TOKENS = 6, 12, 512
# The page stores 18.9 M weights. As raw int16 that is 37.7 MB, 50.3 MB in base64; as JSON floats
# (what BertViz-style pages embed) ≈ 20 bytes a number, ~380 MB. Deflate on byte planes must bring
# this random-but-peaked test data (close to the hardest case: ~10 bits of entropy per weight) well
# under the incompressible size; measured ≈ 19 MB. Real model attention is peakier and smaller.
SIZE_BOUND = 32_000_000


@pytest.fixture(scope="module")
def big_weights():
    rng = np.random.default_rng(0)
    weights = np.empty((LAYERS, HEADS, TOKENS, TOKENS))
    for layer in range(LAYERS):
        logits = 2.0 * rng.standard_normal((HEADS, TOKENS, TOKENS))
        logits -= logits.max(-1, keepdims=True)
        np.exp(logits, out=logits)
        weights[layer] = logits / logits.sum(-1, keepdims=True)
    return weights


def test_512_tokens_12_heads_6_layers_renders(browser_context, tmp_path, big_weights):  # noqa: F811
    path = tmp_path / "model.html"
    path.write_text(attention_page(big_weights, [f"tok{i}" for i in range(TOKENS)], title="6 × 12 × 512"),
                    encoding="utf-8")
    size = path.stat().st_size
    print(f"\n512 tokens × 12 heads × 6 layers: page {size / 1e6:.1f} MB")
    assert size < SIZE_BOUND
    page = OpenPage(browser_context, path)
    try:
        p = page.page
        assert p.locator(".qkv-left .qkv-tok").count() == TOKENS     # token rows, not one node per cell
        assert p.locator(".qkv-matrix canvas").count() == 1
        p.select_option(".qkv-part", "5")
        p.wait_for_selector('.qkv-view[data-ready="1"]')
        p.select_option(".qkv-head", "11")
        p.hover(".qkv-left .qkv-tok[data-index='7']")
        np.testing.assert_allclose(key_weights(p), big_weights[5, 11, 7], rtol=0, atol=TOLERANCE)
        shot = tmp_path / "model.png"
        p.screenshot(path=str(shot))
        not_blank(shot)
        assert page.errors == [] and page.outside_requests() == []
    finally:
        page.close()
