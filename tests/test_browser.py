"""The interactive page in a real browser: Debian's Chromium, headless, driven by Playwright (sync API).

These tests run in CI and never skip: without Chromium they fail with the command that installs it
(`make browser`). Pages are opened from disk (file://) and every request they make is recorded.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import qkv
import qkv.examples
import qkv.explain
from qkv.viz.html import attention_page, trace_html

from browser_support import OpenPage, browser_context  # noqa: F401  (fixture)

pytestmark = pytest.mark.browser            # every test here drives Chromium

DIGITS = 4
TOLERANCE = 0.5 * 10 ** -DIGITS + 1e-12    # the page shows (and stores) 4 decimals


# The screenshots not_blank checks are JPEG (quality 90): for a 1400 × 4227 page, Chromium's capture and encoding took
# 0.37 CPU-s against 0.68 for PNG and not_blank's decoding and count 0.19 against 0.83 (7 December). JPEG's error at
# that quality is a few levels near edges, far under the 30 counted here; a flat page stays flat
# (test_not_blank_refuses_a_flat_jpeg).
SHOT = {"type": "jpeg", "quality": 90}


def not_blank(png_path) -> None:
    """The screenshot is not one flat colour: its channel values spread (standard deviation over 10) and over 2 % of
    its pixels differ from the corner's colour by more than 30 in a channel. Counted on the image's own bytes: a
    full-page screenshot is 10-20 million channel values, and float64 copies of them (the array, its difference from
    the corner, its absolute value) cost 0.6-4 CPU-s a screenshot, most of it page faults for the new memory."""
    from PIL import Image

    pixels = np.asarray(Image.open(png_path).convert("RGB"))           # uint8, (height, width, 3)
    counts = np.bincount(pixels.ravel(), minlength=256).astype(float)  # how many channel values are 0, 1, … 255
    levels = np.arange(256.0)
    mean = counts @ levels / counts.sum()
    assert np.sqrt(counts @ (levels - mean) ** 2 / counts.sum()) > 10, "the screenshot is one flat colour"
    far = np.zeros(pixels.shape[:2], dtype=bool)
    for channel, corner in enumerate(pixels[0, 0].tolist()):            # |value − corner| > 30, in uint8 without wrapping
        values = pixels[..., channel]
        far |= values > corner + 30 if corner + 30 < 255 else False
        far |= values < corner - 30 if corner - 30 > 0 else False
    differs = far.mean()
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


def key_texts(page) -> list[str]:
    texts = page.eval_on_selector_all(".qkv-right .qkv-tok", "els => els.map(e => e.getAttribute('data-weight'))")
    assert all(t is not None for t in texts), "a shown query must label every key with its weight"
    return texts


def key_weights(page) -> list[float]:
    """The keys' weights as the page writes them; a masked key reads "masked" (never 0.0000), taken as 0."""
    return [0.0 if t == "masked" else float(t.replace("−", "-")) for t in key_texts(page)]


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
            masked = np.isneginf(mha_trace["mask"].value[0, query])
            assert [t == "masked" for t in key_texts(page)] == list(masked)     # causal: later keys are masked
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
    # a masked (causal) cell says −∞ before softmax and "masked" for its weight, not 0.0000
    point = page.evaluate("() => document.querySelector('.qkv-view').qkv.cellPoint(1, 3)")
    page.mouse.click(point["x"], point["y"])
    assert "−∞" in cell.locator('[data-step="mask"]').first.inner_text()
    assert cell.locator('span[data-step="weights"]').first.inner_text() == "masked"
    # clicking a key token while a query is chosen opens the same panel
    page.hover(".qkv-left .qkv-tok[data-index='2']")
    page.click(".qkv-right .qkv-tok[data-index='0']")
    assert page.get_attribute(".qkv-view", "data-cell") == "2,0"
    assert opened.errors == []


def test_screenshot_is_not_blank(opened, tmp_path):
    opened.page.hover(".qkv-left .qkv-tok[data-index='3']")
    shot = tmp_path / "page.jpg"
    opened.page.screenshot(path=str(shot), full_page=True, **SHOT)
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
        assert p.locator(".qkv-pan canvas").count() == 1                # 512 × 512 cells: one canvas
        assert p.locator(".qkv-thumb").count() == LAYERS * HEADS        # the overview: every layer × head
        p.select_option(".qkv-part", "5")
        p.wait_for_selector('.qkv-view[data-ready="1"]')
        p.select_option(".qkv-head", "11")
        p.hover(".qkv-left .qkv-tok[data-index='7']")
        np.testing.assert_allclose(key_weights(p), big_weights[5, 11, 7], rtol=0, atol=TOLERANCE)
        shot = tmp_path / "model.jpg"
        p.screenshot(path=str(shot), **SHOT)
        not_blank(shot)
        assert page.errors == [] and page.outside_requests() == []
    finally:
        page.close()


# ------------------------------------------------------------------ phone to desktop, model pages
WIDTHS = [(1280, 800), (390, 844)]
TOKENS9 = "the cat sat on the mat because it was".split()


def layered_trace(layers: int = 3, heads: int = 4, d_model: int = 16, query: int = 2) -> qkv.Trace:
    """A small model's trace as MODELS records it: each layer's MultiHeadAttention with a recorder
    scoped to "layer {l}/" (q_heads, k_heads, v_heads, scores, scaled_scores, weights, out, …)."""
    trace = qkv.Trace("tiny model", meta={"tokens": TOKENS9, "kind": "model", "query": query})
    rng = np.random.default_rng(5)
    x = rng.standard_normal((len(TOKENS9), d_model))
    for layer in range(layers):
        mha = qkv.MultiHeadAttention.random(d_model, n_heads=heads, seed=10 + layer)
        x = x + mha(x, record=trace.scoped(f"layer {layer}"))
    return trace


@pytest.fixture(scope="module")
def model_trace():
    return layered_trace()


@pytest.fixture(scope="module")
def pages(tmp_path_factory, mha_trace, model_trace):
    """An example page, a model page (every layer's steps recorded) and a 512-token page, on disk."""
    folder = tmp_path_factory.mktemp("pages")
    rng = np.random.default_rng(2)
    logits = 2.0 * rng.standard_normal((1, 3, 512, 512))
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    files = {"example": qkv.explain.render(mha_trace, "html"), "model": trace_html(model_trace),
             "tokens512": attention_page(weights, [f"token{i}" for i in range(512)], title="512 tokens")}
    for name, text in files.items():
        (folder / f"{name}.html").write_text(text, encoding="utf-8")
    return folder


def shot(page, name: str, tmp_path) -> None:
    """A screenshot that is not blank; kept in $QKV_SCREENSHOTS (to be looked at) when that is set."""
    import os

    folder = os.environ.get("QKV_SCREENSHOTS")
    path = (Path(folder) if folder else tmp_path) / f"{name}.jpg"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True, **SHOT)
    not_blank(path)


@pytest.mark.parametrize("name", ["example", "model", "tokens512"])
@pytest.mark.parametrize("size", WIDTHS, ids=["1280x800", "390x844"])
def test_no_page_scrolls_sideways(browser_context, pages, tmp_path, name, size):  # noqa: F811
    page = OpenPage(browser_context, pages / f"{name}.html", viewport=size)
    try:
        p = page.page
        assert page.overflow() <= 0, f"{name} at {size[0]} px is {page.overflow()} px too wide"
        lead = p.locator(".qkv-lead").inner_text()
        assert "queries" in lead.lower() or "rows" in lead.lower()            # the first line says what it shows
        assert p.locator(".qkv-colhead-q").inner_text() == "queries"
        assert p.locator(".qkv-colhead-k").inner_text() == "keys"
        # the legend: its ticks sit on its colour bar (0 at the left end, 1 at the right end)
        bar = p.locator(".qkv-legend canvas").bounding_box()
        for tick in ("0", "1"):
            box = p.locator(".qkv-ticks span", has_text=tick).filter(has_not_text=".").first.bounding_box()
            centre = box["x"] + box["width"] / 2
            end = bar["x"] if tick == "0" else bar["x"] + bar["width"]
            assert abs(centre - end) <= 2, (tick, centre, end)
        # open a cell's derivation: still no sideways scrolling, and no number broken across lines
        p.evaluate("() => document.querySelector('.qkv-view').qkv.showCell(1, 0)")
        assert page.overflow() <= 0
        broken = p.evaluate("""() => Array.from(document.querySelectorAll('.qkv-n')).filter(
            e => e.getClientRects().length > 1).length""")
        assert broken == 0, f"{broken} numbers break across lines"
        shot(p, f"{name}-{size[0]}", tmp_path)
        assert page.errors == [] and page.outside_requests() == []
    finally:
        page.close()


def _numbers(text: str) -> list[float]:
    return [float(x.replace("−", "-")) for x in text.strip().strip("[]").split(", ")]


def test_model_page_cell_fills_every_derivation_row_from_the_trace(browser_context, pages, model_trace):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html")
    try:
        p = page.page
        p.select_option(".qkv-part", "1")
        p.wait_for_selector('.qkv-view[data-ready="1"]')
        p.select_option(".qkv-head", "3")
        point = p.evaluate("() => document.querySelector('.qkv-view').qkv.cellPoint(4, 6)")
        p.mouse.click(point["x"], point["y"])
        assert p.get_attribute(".qkv-view", "data-cell") == "4,6"
        cell = p.locator(".qkv-cell")
        assert cell.locator(".qkv-missing").count() == 0, cell.inner_text()

        def recorded(name):
            return model_trace[f"layer 1/{name}"].value

        expected = {"q_heads": recorded("q_heads")[3, 4], "k_heads": recorded("k_heads")[3, 6],
                    "v_heads": recorded("v_heads")[3, 6], "out": recorded("out")[3, 4],
                    "scores": [recorded("scores")[3, 4, 6]], "scaled_scores": [recorded("scaled_scores")[3, 4, 6]],
                    "weights": [recorded("weights")[3, 4, 6]]}
        for name, values in expected.items():
            shown = _numbers(cell.locator(f'span[data-step="{name}"]').first.inner_text())
            np.testing.assert_allclose(shown, values, rtol=0, atol=TOLERANCE, err_msg=name)
        assert page.errors == []
    finally:
        page.close()


def test_overview_opens_a_head(browser_context, pages, model_trace):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html")
    try:
        p = page.page
        assert p.locator(".qkv-thumb").count() == 3 * 4              # every layer × head
        p.click(".qkv-thumb[data-part='2'][data-head='1']")
        p.wait_for_selector('.qkv-view[data-ready="1"]')
        assert p.get_attribute(".qkv-view", "data-part") == "2"
        assert p.get_attribute(".qkv-view", "data-head") == "1"
        assert p.input_value(".qkv-head") == "1"
        # the followed query stays selected; its keys show layer 2, head 1
        assert p.get_attribute(".qkv-view", "data-query") == "2"
        np.testing.assert_allclose(key_weights(p), model_trace["layer 2/weights"].value[1, 2], rtol=0, atol=TOLERANCE)
        assert page.errors == []
    finally:
        page.close()


def test_multi_select_sums_the_selected_rows_and_lock_keeps_them(browser_context, pages, model_trace):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html")
    try:
        p = page.page
        assert p.get_attribute(".qkv-view", "data-selected") == "2"        # the followed query, on open
        p.click(".qkv-left .qkv-tok[data-index='0']")                          # the first click replaces it
        assert p.get_attribute(".qkv-view", "data-selected") == "0"
        p.click(".qkv-left .qkv-tok[data-index='2']")                          # later clicks add
        p.click(".qkv-left .qkv-tok[data-index='5']")
        assert p.get_attribute(".qkv-view", "data-selected") == "0,2,5"
        p.click(".qkv-lock")
        p.hover(".qkv-left .qkv-tok[data-index='7']")                        # locked: hovering changes nothing
        assert p.get_attribute(".qkv-view", "data-query") == "0,2,5"
        weights = model_trace["layer 0/weights"].value[0]
        # the page sums the numbers it shows (4 decimals), so its sum is exact to them
        shown = np.round(weights[[0, 2, 5]] * 10 ** DIGITS).sum(0) / 10 ** DIGITS
        np.testing.assert_allclose(key_weights(p), shown, rtol=0, atol=1e-9)
        np.testing.assert_allclose(key_weights(p), weights[[0, 2, 5]].sum(0), rtol=0, atol=3 * TOLERANCE)
        p.click(".qkv-lock")                                                   # unlock: hovering shows one row
        p.hover(".qkv-left .qkv-tok[data-index='7']")
        assert p.get_attribute(".qkv-view", "data-query") == "7"
        p.click(".qkv-left .qkv-tok[data-index='2']")                          # clicking again deselects
        assert p.get_attribute(".qkv-view", "data-selected") == "0,5"
        assert page.errors == []
    finally:
        page.close()


def test_korean_page_words(browser_context, tmp_path, model_trace):  # noqa: F811
    path = tmp_path / "ko.html"
    path.write_text(trace_html(model_trace, lang="ko"), encoding="utf-8")
    page = OpenPage(browser_context, path, viewport=(390, 844))
    try:
        assert page.page.locator(".qkv-colhead-q").inner_text() == "Query"      # the posts keep Query, Key, Value
        assert "한눈에" in page.page.locator(".qkv-overview h3").inner_text()
        assert page.overflow() <= 0 and page.errors == []
    finally:
        page.close()


# ------------------------------------------------------------------ `qkv inspect TEXT --format html`: every layer
@pytest.fixture(scope="module")
def inspect_pages(tmp_path_factory):
    """`qkv inspect … --format html` (every layer × head) for MiniLM and a tiny Llama (RoPE, GQA, causal)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from model_fixtures import built        # the run's shared checkpoint: read, never changed

    from qkv.cli import main

    folder = tmp_path_factory.mktemp("inspect")
    made = {"minilm": ("minilm", "The cat sat on the mat."),
            "llama": (str(built("llama-gqa")), "the cat sat on the mat")}
    for name, (model, text) in made.items():
        assert main(["inspect", text, "--model", model, "--format", "html", "--digits", str(DIGITS),
                     "--out", str(folder / f"{name}.html")]) == 0
    return folder, made


@pytest.mark.parametrize("name", ["minilm", "llama"])
def test_inspect_page_cell_of_a_later_layer_fills_every_row_from_the_trace(browser_context, inspect_pages, name):  # noqa: F811
    """Click a cell of a layer > 0 head on the whole-model page: every derivation row holds the Trace's
    numbers (for RoPE, the rotated q and k: their product is the score shown)."""
    from qkv import models

    folder, made = inspect_pages
    model_name, text = made[name]
    trace = models.load(model_name).trace(text, derivation=True)
    layer, head, i, j = 2, 3, 4, 2
    page = OpenPage(browser_context, folder / f"{name}.html")
    try:
        p = page.page
        p.select_option(".qkv-part", str(layer))
        p.wait_for_selector('.qkv-view[data-ready="1"]')
        p.select_option(".qkv-head", str(head))
        p.locator(".qkv-pan canvas").scroll_into_view_if_needed()
        point = p.evaluate(f"() => document.querySelector('.qkv-view').qkv.cellPoint({i}, {j})")
        p.mouse.click(point["x"], point["y"])
        assert p.get_attribute(".qkv-view", "data-cell") == f"{i},{j}"
        cell = p.locator(".qkv-cell")
        assert cell.locator(".qkv-missing").count() == 0, cell.inner_text()

        def recorded(step):
            return trace[f"layer {layer}/{step}"].value

        rotated = f"layer {layer}/q_rotated" in trace
        assert rotated == (name == "llama")
        q, k = (recorded("q_rotated"), recorded("k_rotated")) if rotated else (recorded("q_heads"), recorded("k_heads"))
        kv = head // (q.shape[0] // k.shape[0])                            # GQA: the key/value head it reads
        expected = {"q_heads": q[head, i], "k_heads": k[kv, j], "v_heads": recorded("v_heads")[kv, j],
                    "out": recorded("out")[head, i], "scores": [recorded("scores")[head, i, j]],
                    "scaled_scores": [recorded("scaled_scores")[head, i, j]],
                    "weights": [recorded("weights")[head, i, j]]}
        for step, values in expected.items():
            shown = _numbers(cell.locator(f'span[data-step="{step}"]').first.inner_text())
            np.testing.assert_allclose(shown, values, rtol=0, atol=TOLERANCE, err_msg=step)
        np.testing.assert_allclose(q[head, i] @ k[kv, j], recorded("scores")[head, i, j], rtol=1e-5, atol=1e-5)
        mask = recorded("mask")
        allowed = bool(mask[min(head, mask.shape[0] - 1), i, j] == 0)
        assert cell.locator('span[data-step="mask"]').inner_text() == ("0 (may attend)" if allowed else "−∞ (masked)")
        assert page.errors == [] and page.outside_requests() == []
    finally:
        page.close()


def test_inspect_page_of_a_long_text_says_weights_only(tmp_path):
    """Over the derivation bound the page holds weights only and its first line says so."""
    from qkv.cli import main
    from qkv.models.decoder import DERIVATION_TOKENS

    out = tmp_path / "long.html"
    assert main(["inspect", " ".join(["cat"] * (DERIVATION_TOKENS + 5)), "--format", "html", "--out", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert f"over {DERIVATION_TOKENS} tokens" in html


# ------------------------------------------------------------------ the page's own behaviour (issue 19)
def example_page(browser_context, folder, name, lang="en", viewport=None):  # noqa: F811
    path = folder / f"{name}-{lang}.html"
    if not path.exists():
        trace = qkv.examples.run(name)
        trace.meta["variants"] = qkv.examples.variants(name, trace)     # what `qkv example --format html` adds
        path.write_text(trace_html(trace, lang=lang, digits=DIGITS), encoding="utf-8")
    return OpenPage(browser_context, path, viewport=viewport)


@pytest.fixture(scope="module")
def example_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("examples")


def _d(text: str):
    from decimal import Decimal

    return Decimal(text.replace("−", "-"))


def check_equation(line: str) -> str:
    """Recompute one equation the step-through prints, with exact decimals (independent of the page's
    JavaScript): products and sums of the printed operands, then the relation to the printed result.
    "=" must hold exactly as printed (or, for a quotient, to the result's decimals); "≈" must be the
    result rounded to its decimals; a result introduced as "recorded … from unrounded numbers" is
    not an equation. Returns the kind of equation checked."""
    import re
    from decimal import ROUND_HALF_EVEN, Decimal, getcontext

    getcontext().prec = 50
    line = line.replace("\u00a0", " ").strip()
    if ";" in line:                        # "…= S; the recorded value, from unrounded numbers, is R"
        line = line.split(";")[0]
    line = re.sub(r"\(the recorded value[^)]*\)|\(반올림하지[^)]*\)", "", line).strip()
    num = r"−?\d+(?:\.\d+)?"
    half = lambda r: Decimal(1).scaleb(-max(0, -_d(r).as_tuple().exponent)) / 2   # noqa: E731

    def close(value, shown, sign):
        if sign == "=" and "." not in shown:
            return value == _d(shown)
        return abs(value - _d(shown)) <= half(shown)

    body = line.split(": ", 1)[1] if re.match(r"^(“[^”]*”|\[\d+\]): ", line) else line
    body = re.sub(r"^[^=]*?\] = ", "", body, count=1) if re.match(r"^(q·k|z|Y|z_final|q)\[", body) else body
    if "√" in body:                                    # s ÷ √d = t
        m = re.fullmatch(rf"({num}) ÷ √(\d+) ([=≈→]) ({num})", body)
        assert m, line
        if m.group(3) == "=":
            value = _d(m.group(1)) / Decimal(int(m.group(2))).sqrt()
            assert close(value, m.group(4), "≈"), line
        return "root"
    if body.startswith("Σ e^(s − m) = "):
        parts = re.split(r" ([=≈→]) ", body[len("Σ e^(s − m) = "):])
        terms, sign, total = parts[0], parts[1], parts[2]
        value = sum((_d(t) for t in terms.split(" + ")), Decimal(0))
        if sign != "→":
            assert (value == _d(total)) if sign == "=" else close(value, total, "≈"), line
        return "sum"
    m = re.fullmatch(rf"({num}) / ({num}) ([=≈]) ({num})", body)
    if m:
        if m.group(3) == "=":
            assert close(_d(m.group(1)) / _d(m.group(2)), m.group(4), "≈"), line
        return "quotient"
    m = re.fullmatch(rf"({num}) × \[(.*)\] = \[(.*)\]", body)
    if m:                                              # w × [v…] = [w·v…]
        w, vs, ps = _d(m.group(1)), m.group(2).split(", "), m.group(3).split(", ")
        assert [w * _d(v) for v in vs] == [_d(p) for p in ps], line
        return "scaled row"
    m = re.fullmatch(rf"({num}) \+ ({num}) (=|= {num} ≈|→) ({num})", body)
    if m:                                              # x + y = r
        if m.group(3) != "→":
            value = _d(m.group(1)) + _d(m.group(2))
            assert (value == _d(m.group(4))) if m.group(3) == "=" else close(value, m.group(4), "≈"), line
        return "residual"
    if " × " in body:                                  # a×b + c×d = p + q = S (≈ R)
        body = body[re.search(rf"{num} × ", body).start():]      # after its name ("q[…][0] = x[…] · W_Q[:, 0] = ")
        chain = re.split(r" ([=≈]) ", body)
        products, rest = chain[0], chain[1:]
        exact = [_d(a) * _d(b) for a, b in (t.split(" × ") for t in products.split(" + "))]
        value = sum(exact, Decimal(0))
        k = 0
        if len(exact) > 1 and rest and rest[0] == "=" and re.search(r" [+−] ", rest[1]):
            signed = re.sub(r" − ", " + −", rest[1])            # "p − q" lists the product −q
            assert [_d(t) for t in signed.split(" + ")] == exact, line
            k = 2
        while k < len(rest):
            sign, shown = rest[k], rest[k + 1]
            assert (value == _d(shown)) if sign == "=" else close(value, shown, "≈"), line
            k += 2
        return "products"
    return ""


# The walk of all_steps in one round trip: Playwright's click of the next button and a read of the step after each (four
# round trips a step, and each click waits for the button to be visible, stable over two animation frames and
# enabled) drew a frame at every step. Here the page clicks its own button (its click handler: the stepper's next)
# after the same checks Playwright made: exactly one stepper and one next button (its strict mode), the button shown
# with a size, and enabled (the walk ends where it is disabled); each step's id and its lines' innerText, as
# get_attribute and all_inner_texts read them.
_ALL_STEPS_JS = """() => {
    const one = (s) => { const found = document.querySelectorAll(s);
        if (found.length !== 1) throw new Error(`${found.length} elements match ${s}`); return found[0]; };
    document.querySelector('.qkv-view').qkv.stepper.go(0);
    const stepper = one('.qkv-stepper'), next = one('.qkv-next'), seen = [];
    for (;;) {
        seen.push({id: stepper.getAttribute('data-step'),
                   lines: Array.from(stepper.querySelectorAll('.qkv-eq'), (e) => e.innerText)});
        if (next.disabled) return JSON.stringify(seen);
        const box = next.getBoundingClientRect(), style = getComputedStyle(next);
        if (!(box.width > 0 && box.height > 0) || style.visibility === 'hidden')
            throw new Error(`the next button is not visible at step ${seen.length}`);
        next.click();
    }
}"""


def all_steps(page) -> list[dict]:
    """Every step of the step-through, walked with the next button: its id and its equation lines."""
    import json

    return json.loads(page.page.evaluate(_ALL_STEPS_JS))


def shown_rows_follow_the_post(page, name: str, lang: str) -> None:
    """The page numbers query and key rows as the example's post does (from 1 in the projection post,
    else from 0, qkv's API) and names its tokens in the page's language (tokens_ko): every "query N “t”" it writes,
    in the cell's derivation (the followed query's first key opened), the step-through and the what-if,
    has N = t's row in the TOML + that base, and the value row is v[key + base]."""
    doc = qkv.examples.load(name)
    p = page.page
    if name == "group-meeting":       # its scores are given (the post types them in), not q·k: labelled so
        point = p.evaluate("() => document.querySelector('.qkv-view').qkv.cellPoint(0, 0)")
        p.mouse.click(point["x"], point["y"])
        label = p.locator('.qkv-cell tr[data-step="scores"] th').inner_text()
        assert label == qkv.explain.texts.text(lang, "page.score_given") and "q·k (" not in label, label
        # softmax reads its scores as given (a scale of 1): no "scaled" row repeats them
        assert p.locator('.qkv-cell tr[data-step="scaled_scores"]').count() == 0
    if "tokens" not in doc or "w_q" not in doc:          # the multi-head and meeting examples: no rows of their own
        return
    # every post counts its tokens from 1 ("토큰 3"; A₁ … Aₙ): the base the example's TOML declares, read here
    # from the file, not from the page
    base = doc["token_base"]
    tokens = doc.get("tokens_ko", doc["tokens"]) if lang == "ko" else doc["tokens"]
    point = p.evaluate("() => { var v = document.querySelector('.qkv-view').qkv; return v.cellPoint(v.state.selected[0] || 0, 0); }")
    p.mouse.click(point["x"], point["y"])
    cell = p.locator(".qkv-cell")
    text = p.inner_text(".qkv-app")
    pairs = re.findall(r"(?:query|Query) (\d+) “([^”]+)”", text)
    if all(re.fullmatch(r"(?:token|토큰) \d+", t) for t in tokens):
        # tokens named by their numbers (the projection's 토큰 3) are not glossed by them: the number alone, from 1
        numbers = [int(n) for n in re.findall(r"(?:query|Query) (\d+)", text)]
        assert numbers and pairs == [] and all(base <= n < base + len(tokens) for n in numbers), text[:400]
    else:
        assert pairs, text[:400]
    for number, token in pairs:
        if token in tokens:
            assert int(number) == tokens.index(token) + base, (number, token)
    assert f"v[{base}]" in cell.locator('tr[data-step="v_heads"]').inner_text()
    if lang == "ko":
        assert "token" not in text.lower() or name != "projection", text[:400]


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("name", qkv.examples.names())
def test_every_equation_of_the_step_through_holds_as_printed(browser_context, example_folder, name, lang):  # noqa: F811
    page = example_page(browser_context, example_folder, name, lang)
    try:
        p = page.page
        shown_rows_follow_the_post(page, name, lang)
        steps = all_steps(page)
        assert steps and page.errors == []
        checked = [check_equation(line) for step in steps for line in step["lines"]]
        # every other part (the group meeting's meetings and notation) and head (projection's head 2)
        n_parts, n_heads = p.locator(".qkv-part option").count(), p.locator(".qkv-head option").count()
        for part in range(max(1, n_parts)):
            if n_parts > 1:
                p.select_option(".qkv-part", str(part))
                p.wait_for_selector('.qkv-view[data-ready="1"]')
            for head in range(max(1, p.locator(".qkv-head option").count())):
                if (part, head) == (0, 0):
                    continue
                if n_heads > 1:
                    p.select_option(".qkv-head", str(head))
                checked += [check_equation(line) for step in all_steps(page) for line in step["lines"]]
        kinds = {k for k in checked if k}
        if name == "self-attention":
            assert [s["id"] for s in steps] == ["x", "w", "qkv", "dot", "scale", "softmax", "weighted", "z"]
            assert {"products", "root", "sum", "quotient", "scaled row"} <= kinds
        if name == "multi-head":
            assert [s["id"] for s in steps] == ["heads", "concat", "wo"]
            assert "products" in kinds
        print(name, lang, len(checked), "lines,", sum(1 for k in checked if k), "equations checked")
    finally:
        page.close()


def test_step_through_with_keys_and_buttons_shows_each_step_and_its_cells(browser_context, example_folder):  # noqa: F811
    trace = qkv.examples.run("self-attention")
    query = trace.meta["query"]                                           # “love”
    page = example_page(browser_context, example_folder, "self-attention")
    try:
        p = page.page
        stepper = ".qkv-stepper"
        assert p.get_attribute(stepper, "data-step") == "x"
        assert p.locator(".qkv-prev").is_disabled()
        # X: the followed query's row of X is marked as read
        marked = p.locator(f"{stepper} table[data-step='x'] td.qkv-read").all_inner_texts()
        np.testing.assert_allclose([float(t) for t in marked], trace["x"].value[query], atol=TOLERANCE)
        p.keyboard.press("ArrowRight")
        assert p.get_attribute(stepper, "data-step") == "w"
        p.click(".qkv-next")
        assert p.get_attribute(stepper, "data-step") == "qkv"
        # q, k, v: the step writes the followed query's q
        written = p.locator(f"{stepper} table[data-step='q_heads'] td.qkv-write").all_inner_texts()
        np.testing.assert_allclose([float(t) for t in written], trace["q"].value[query], atol=TOLERANCE)
        p.keyboard.press("ArrowRight")
        assert p.get_attribute(stepper, "data-step") == "dot"
        assert "step 4 of 8" in p.locator(".qkv-stepnum").inner_text()
        # q·k as a sum of products: the operands read are q and k, the results written are the recorded scores
        first = p.locator(f"{stepper} .qkv-eq").first
        reads = [float(t.replace("−", "-")) for t in first.locator(".qkv-read").all_inner_texts()]
        q, k = trace["q"].value[query], trace["k"].value[0]
        np.testing.assert_allclose(reads, [q[0], k[0], q[1], k[1]], atol=TOLERANCE)
        scores = p.locator(f"{stepper} table[data-step='scores'] td.qkv-write").all_inner_texts()
        np.testing.assert_allclose([float(t) for t in scores], trace["scores"].value[0, query], atol=TOLERANCE)
        p.keyboard.press("ArrowLeft")
        assert p.get_attribute(stepper, "data-step") == "qkv"
        p.click(".qkv-prev")
        assert p.get_attribute(stepper, "data-step") == "w"
        # the step list jumps too; softmax writes the weights: e^(s − m) / Σ, each a recorded number
        p.click(f"{stepper} .qkv-steplist li:nth-child(6) button")
        assert p.get_attribute(stepper, "data-step") == "softmax"
        text = p.locator(f"{stepper} .qkv-stepbody").inner_text()
        assert f"{trace['exp_sum'].value[0, query, 0]:.4f}" in text
        # keys typed into a form control are the control's, not the step-through's
        p.focus(".qkv-lock")
        p.keyboard.press("ArrowRight")
        assert p.get_attribute(stepper, "data-step") == "weighted"
        assert page.errors == []
    finally:
        page.close()


def test_step_through_follows_any_head_of_a_model(browser_context, pages, model_trace):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html")
    try:
        p = page.page
        p.select_option(".qkv-part", "1")
        p.wait_for_selector('.qkv-view[data-ready="1"]')
        p.select_option(".qkv-head", "3")
        p.click(".qkv-left .qkv-tok[data-index='4']")                       # follow query 4
        walked = all_steps(page)
        ids = [s["id"] for s in walked]
        assert sum(1 for s in walked for line in s["lines"] if check_equation(line)) >= 10   # all hold as printed
        # this trace records each layer's X and W too: the whole story, X to W_O
        assert ids == ["x", "w", "qkv", "dot", "scale", "softmax", "weighted", "z", "concat", "wo"]
        p.evaluate("() => document.querySelector('.qkv-view').qkv.stepper.go(3)")
        scores = p.locator(".qkv-stepper table[data-step='scores'] td.qkv-write").all_inner_texts()
        np.testing.assert_allclose([float(t.replace("−", "-")) for t in scores],
                                   model_trace["layer 1/scores"].value[3, 4], atol=TOLERANCE)
        assert page.errors == []
    finally:
        page.close()


def test_first_click_on_the_model_page_replaces_the_followed_query(browser_context, pages, model_trace):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html")
    try:
        p = page.page
        assert p.get_attribute(".qkv-view", "data-selected") == "2"           # chosen by the page on open
        p.click(".qkv-left .qkv-tok[data-index='6']")
        assert p.get_attribute(".qkv-view", "data-selected") == "6"
        # a key token now opens the derivation of the query the user clicked
        p.click(".qkv-right .qkv-tok[data-index='1']")
        assert p.get_attribute(".qkv-view", "data-cell") == "6,1"
        shown = float(p.locator('.qkv-cell span[data-step="weights"]').first.inner_text())
        assert abs(shown - model_trace["layer 0/weights"].value[0, 6, 1]) <= TOLERANCE
        assert page.errors == []
    finally:
        page.close()


def test_summed_weights_have_their_own_scale_and_label(browser_context, pages, model_trace):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html")
    try:
        p = page.page
        weights = model_trace["layer 0/weights"].value[0]
        key = int(np.argmax(weights.sum(0)))                   # the key most queries look at: its three
        chosen = sorted(int(i) for i in np.argsort(-weights[:, key])[:3])   # heaviest rows sum past 1
        for i in chosen:
            p.click(f".qkv-left .qkv-tok[data-index='{i}']")
        assert p.get_attribute(".qkv-view", "data-selected") == ",".join(map(str, chosen))
        assert p.get_attribute(".qkv-view", "data-scale") == "3"
        total = weights[chosen].sum(0)
        assert total.max() > 1                                                # a sum leaves the 0–1 scale
        key = int(np.argmax(total))
        title = p.get_attribute(f".qkv-right .qkv-tok[data-index='{key}']", "title")
        assert "sum of the weights of 3 queries" in title and "weight " not in title.replace("weights", "")
        legend = p.locator(".qkv-sum-legend")
        assert "0 to 3" in legend.inner_text()
        assert legend.locator(".qkv-ticks span").last.inner_text() == "3"
        # the colour is the sum on the 0–3 scale: the largest sum is not painted as a saturated 1
        colour = p.evaluate(f"() => getComputedStyle(document.querySelector(\".qkv-right .qkv-tok[data-index='{key}']\")).backgroundColor")
        expected = p.evaluate(f"() => 'rgb(' + window.qkvViews.colour({total[key] / 3}).join(', ') + ')'")
        assert colour == expected and colour != p.evaluate("() => 'rgb(' + window.qkvViews.colour(1).join(', ') + ')'")
        assert page.errors == []
    finally:
        page.close()


@pytest.mark.parametrize("size", WIDTHS, ids=["1280x800", "390x844"])
def test_overview_is_a_layer_by_head_grid(browser_context, pages, size):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html", viewport=size)
    try:
        p = page.page
        boxes = p.evaluate("""() => Array.from(document.querySelectorAll('.qkv-thumb')).map(b => {
            const r = b.getBoundingClientRect(); return [+b.dataset.part, +b.dataset.head, Math.round(r.top), Math.round(r.left)]; })""")
        assert len(boxes) == 3 * 4
        rows = {}
        for part, head, top, left in boxes:
            rows.setdefault(top, []).append((part, head, left))
        assert len(rows) == 3 and all(len(r) == 4 for r in rows.values())      # one row per layer, one per head
        for r in rows.values():
            assert len({part for part, _, _ in r}) == 1
        columns = {head: {left for _, h, _, left in boxes if h == head} for head in range(4)}
        assert all(len(lefts) == 1 for lefts in columns.values())              # heads line up across layers
        labels = p.locator(".qkv-ov-row").all_inner_texts()
        assert labels == ["layer 0", "layer 1", "layer 2"]
        assert page.overflow() <= 0
    finally:
        page.close()


def test_head_view_lines_stay_on_the_tokens_and_the_matrix_stays_put(browser_context, pages):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html")
    try:
        p = page.page

        def geometry():
            return p.evaluate("""() => {
                const c = document.querySelector('.qkv-lines').getBoundingClientRect();
                const k = document.querySelector('.qkv-right').getBoundingClientRect();
                const q = document.querySelector('.qkv-left').getBoundingClientRect();
                const m = document.querySelector('.qkv-mx-cells').getBoundingClientRect();
                return {gapLeft: c.left - q.right, gapRight: k.left - c.right, mx: m.left, my: m.top - window.scrollY,
                        cw: c.width, mw: m.width}; }""")

        before = geometry()
        assert abs(before["gapLeft"]) <= 1 and abs(before["gapRight"]) <= 1
        for action in (lambda: p.click(".qkv-left .qkv-tok[data-index='0']"),
                       lambda: p.click(".qkv-left .qkv-tok[data-index='3']"),
                       lambda: p.click(".qkv-left .qkv-tok[data-index='7']"),
                       lambda: p.click(".qkv-right .qkv-tok[data-index='2']"),
                       lambda: p.click(".qkv-next")):
            action()
            after = geometry()
            assert abs(after["gapLeft"]) <= 1 and abs(after["gapRight"]) <= 1, after    # lines meet both columns
            assert (after["mx"], after["cw"], after["mw"]) == (before["mx"], before["cw"], before["mw"]), (before, after)
        assert page.errors == []
    finally:
        page.close()


def test_a_clicked_cell_is_brought_into_view_on_a_phone(browser_context, pages):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html", viewport=(390, 844))
    try:
        p = page.page
        p.locator(".qkv-pan").scroll_into_view_if_needed()
        point = p.evaluate("() => document.querySelector('.qkv-view').qkv.cellPoint(3, 2)")
        p.mouse.click(point["x"], point["y"])
        assert p.get_attribute(".qkv-view", "data-cell") == "3,2"
        p.wait_for_timeout(200)
        box = p.evaluate("() => { const r = document.querySelector('.qkv-cell').getBoundingClientRect(); "
                         "return [r.top, r.bottom, window.innerHeight]; }")
        assert -2 <= box[0] < box[2] * 0.5, box                               # its heading is on screen
        assert page.overflow() <= 0 and page.errors == []
    finally:
        page.close()


@pytest.mark.parametrize("name", qkv.examples.names())
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_example_page_fits_a_phone_and_reads_one_letter_tokens(browser_context, example_folder, name, lang):  # noqa: F811
    page = example_page(browser_context, example_folder, name, lang, viewport=(390, 844))
    try:
        p = page.page
        assert page.overflow() <= 0, f"{name} {lang}: {page.overflow()} px too wide"
        # the step-through's matrix captions on one line ("memory (the encoder's sentence) (4 ×" / "2)")
        lines = ("() => Array.from(document.querySelectorAll('.qkv-stepbody caption'))"
                 ".map(c => c.getBoundingClientRect().height / parseFloat(getComputedStyle(c).fontSize))")
        assert max(p.evaluate(lines), default=0) < 2.0, p.evaluate(lines)          # one line ≈ 1.3 em
        p.click(".qkv-next")
        assert page.overflow() <= 0
        assert max(p.evaluate(lines), default=0) < 2.0, p.evaluate(lines)
        if lang == "ko":
            assert p.evaluate("() => getComputedStyle(document.querySelector('.qkv-lead')).wordBreak") == "keep-all"
        headers = p.locator(".qkv-mx-col")
        tokens = p.evaluate("() => Array.from(document.querySelectorAll('.qkv-mx-col')).map(e => [e.textContent, e.className])")
        for text, cls in tokens:
            if len(text) == 1:                      # "I": written upright, never turned into a dash
                assert "qkv-mx-turned" not in cls, text
        if name == "self-attention":
            assert headers.first.inner_text() == "I"
            assert "qkv-mx-turned" not in (headers.first.get_attribute("class") or "")
        assert page.errors == [] and page.outside_requests() == []
    finally:
        page.close()


def test_multi_head_page_steps_heads_concat_and_w_o(browser_context, example_folder):  # noqa: F811
    trace = qkv.examples.run("multi-head")
    page = example_page(browser_context, example_folder, "multi-head")
    try:
        p = page.page
        assert "no attention weights" not in p.locator(".qkv-app").inner_text()
        assert p.get_attribute(".qkv-stepper", "data-step") == "heads"
        labels = p.locator(".qkv-stepper .qkv-eq").all_inner_texts()
        assert [line.split(":")[0] for line in labels] == ["head 1", "head 2", "head 3"]   # the post counts from 1
        assert [line.split(" = ")[0].split(": ")[1] for line in labels] == ["z⁽¹⁾", "z⁽²⁾", "z⁽³⁾"]   # and writes z⁽¹⁾
        p.keyboard.press("ArrowRight")
        assert p.get_attribute(".qkv-stepper", "data-step") == "concat"
        concat = p.locator(".qkv-stepper table[data-step='concat'] td").all_inner_texts()
        np.testing.assert_allclose([float(t) for t in concat], trace["concat"].value[0], atol=TOLERANCE)
        p.keyboard.press("ArrowRight")
        assert p.get_attribute(".qkv-stepper", "data-step") == "wo"
        final = p.locator(".qkv-stepper .qkv-vec.qkv-write").inner_text()
        np.testing.assert_allclose(_numbers(final), trace["y"].value[0], atol=TOLERANCE)
        assert "z_final" in p.locator(".qkv-stepper .qkv-stepbody").inner_text()
        assert page.errors == []
    finally:
        page.close()


def test_group_meeting_parts_are_named_and_what_if_moves_lots_weight(browser_context, example_folder):  # noqa: F811
    trace = qkv.examples.run("group-meeting")
    page = example_page(browser_context, example_folder, "group-meeting", "ko")
    try:
        p = page.page
        names = p.locator(".qkv-ov-row").all_inner_texts()
        assert len(names) == 3 and len(set(names)) == 3 and not any("헤드 0" in n for n in names)
        assert names[0].startswith("조모임 1") and names[1].startswith("조모임 2")
        thumbs = p.evaluate("() => Array.from(document.querySelectorAll('.qkv-thumb')).map(b => b.title)")
        assert len(set(thumbs)) == 3 and not any(t.strip() in ("헤드 0", "head 0") for t in thumbs)
        # what-if: meeting 2 with the question's words scored s; lot keeps its score. Independent check:
        # a float64 softmax of the same scores.
        scores = trace["question/scores"].value.reshape(-1)
        slider = p.locator(".qkv-whatif-slider")
        assert p.get_attribute(".qkv-whatif", "data-score") == "1000"
        lot_weights = {}
        for position in range(int(slider.get_attribute("max")) + 1):
            slider.evaluate(f"(s) => {{ s.value = {position}; s.dispatchEvent(new Event('input')); }}")
            s = float(p.get_attribute(".qkv-whatif", "data-score"))
            changed = scores.copy()
            changed[:4] = s
            e = np.exp(changed - changed.max())
            expected = e / e.sum()
            shown = [float(t) for t in p.locator(".qkv-whatif tr:nth-child(3) td").all_inner_texts()]
            np.testing.assert_allclose(shown, expected, atol=TOLERANCE)
            lot_weights[s] = shown[-1]
        assert lot_weights[1] > 0.99 and lot_weights[1000] < 0.01            # lot's voice: heard, then lost
        assert page.errors == []
    finally:
        page.close()


def test_offline_pages_without_variants_say_what_if_needs_serve(browser_context, pages):  # noqa: F811
    page = OpenPage(browser_context, pages / "model.html")
    try:
        assert "qkv serve" in page.page.locator(".qkv-whatif").inner_text()
    finally:
        page.close()


@pytest.mark.parametrize("name", ["self-attention", "projection"])
def test_what_if_the_scores_were_scaled_differently(browser_context, example_folder, name):  # noqa: F811
    """The worked example's softmax at other scales, 0 … 4 (computed by qkv at build time); checked here
    against an independent float64 softmax of the recorded scores times each scale over the recorded one."""
    trace = qkv.examples.run(name)
    query, dk = trace.meta["query"], trace["q_heads"].value.shape[-1]
    scores = trace["scores"].value[:, query]                               # (H, Tk): q·k, before any scale
    page = example_page(browser_context, example_folder, name)
    try:
        p = page.page
        box = p.locator(".qkv-whatif")
        assert abs(float(box.get_attribute("data-scale")) - 1 / np.sqrt(dk)) < 1e-12     # opens as recorded
        slider = p.locator(".qkv-whatif-slider")
        seen = []
        for position in range(int(slider.get_attribute("max")) + 1):
            slider.evaluate(f"(s) => {{ s.value = {position}; s.dispatchEvent(new Event('input')); }}")
            scale = float(box.get_attribute("data-scale"))
            e = np.exp(scale * scores - (scale * scores).max(-1, keepdims=True))
            expected = e / e.sum(-1, keepdims=True)
            for h in range(scores.shape[0]):
                shown = [float(t) for t in box.locator(f"td[data-head='{h}']").all_inner_texts()]
                np.testing.assert_allclose(shown, expected[h], atol=TOLERANCE)
            seen.append(scale)
            if scale == 1.0:
                assert "without ÷ √d_k" in p.locator(".qkv-whatif-score").inner_text()
        assert 0.0 in seen and 1.0 in seen and max(seen) == 4.0                # uniform, no ÷√d_k, sharper
        assert "qkv serve" in box.inner_text()                                 # for the rest of what-if
        assert page.errors == []
    finally:
        page.close()


def test_docs_screenshots(browser_context, example_folder, pages, tmp_path):  # noqa: F811
    """Screenshots of each page kind (kept in $QKV_SCREENSHOTS when set, for a person to look at)."""
    for name, lang in (("self-attention", "en"), ("group-meeting", "ko"), ("multi-head", "en")):
        for size in WIDTHS:
            page = example_page(browser_context, example_folder, name, lang, viewport=size)
            try:
                shot(page.page, f"page-{name}-{lang}-{size[0]}", tmp_path)
            finally:
                page.close()


def test_not_blank_refuses_a_flat_jpeg(tmp_path):
    """not_blank is a real check on the JPEG screenshots: a flat page (white, or the corner's colour everywhere) saved
    as the screenshots are fails it; the same page with a dark block over 3 % of it passes."""
    from PIL import Image

    for colour in ((255, 255, 255), (238, 242, 247)):
        flat = Image.new("RGB", (1400, 1000), colour)
        flat.save(tmp_path / "flat.jpg", quality=SHOT["quality"])
        with pytest.raises(AssertionError):
            not_blank(tmp_path / "flat.jpg")
        flat.paste((20, 30, 40), (100, 100, 700, 170))           # 600 × 70 px: 3 % of the page
        flat.save(tmp_path / "block.jpg", quality=SHOT["quality"])
        not_blank(tmp_path / "block.jpg")


def test_the_equation_checker_rejects_what_is_not_true_as_printed():
    """The checker above is a real check: the issue's own false line fails, its true forms pass."""
    with pytest.raises(AssertionError):
        check_equation("z_final[0] = 0.893 × 0.40 + 1.020 × 0.35 + 0.640 × 0.25 = 0.8743")
    assert check_equation("z_final[0] = 0.893 × 0.40 + 1.020 × 0.35 + 0.640 × 0.25 = 0.3572 + 0.357 + 0.16 = 0.8742") == "products"
    with pytest.raises(AssertionError):
        check_equation("“love”: 0.7310 / 2.9565 = 0.2472")           # 0.24725… rounds to 0.2473
    assert check_equation("“love”: 0.7310 / 2.9565 ≈ 0.2472 (the recorded value, from unrounded numbers)") == "quotient"
    with pytest.raises(AssertionError):
        check_equation("“I”: 1.1580 ÷ √2 = 0.8190")
    with pytest.raises(AssertionError):
        check_equation("[0]: 0.5000 + −0.4750 = 0.0251")


def test_arrow_keys_step_only_the_view_last_touched(browser_context, tmp_path):  # noqa: F811
    """Two views on one page (a notebook): ← → move the one the reader last clicked, not both."""
    one, two = (qkv.examples.run(name) for name in ("self-attention", "cross-attention"))
    path = tmp_path / "two.html"
    path.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>" + trace_html(one, inline=True) +
                    trace_html(two, inline=True) + "</body></html>", encoding="utf-8")
    page = OpenPage(browser_context, path)
    try:
        p = page.page
        p.wait_for_function("() => document.querySelectorAll('.qkv-view[data-ready=\"1\"]').length === 2")
        steps = ".qkv-stepper"

        def where():
            return p.eval_on_selector_all(steps, "els => els.map(e => e.getAttribute('data-step'))")

        assert where() == ["x", "x"]
        p.keyboard.press("ArrowRight")
        assert where() == ["w", "x"]                                      # the first view, by default
        p.locator(".qkv-view").nth(1).locator("h3").first.click()
        p.keyboard.press("ArrowRight")
        p.keyboard.press("ArrowRight")
        assert where() == ["w", "qkv"]
        assert page.errors == []
    finally:
        page.close()


def test_step_through_of_a_longer_text_keeps_the_followed_row_in_view(browser_context, tmp_path):  # noqa: F811
    """20 tokens: the tables elide rows, but never the followed query's; per-key lines say when they are a few."""
    tokens = [f"t{i}" for i in range(20)]
    trace = qkv.Trace("twenty tokens", meta={"tokens": tokens, "kind": "self-attention", "query": 15})
    qkv.MultiHeadAttention.random(8, n_heads=2, seed=4)(np.random.default_rng(4).standard_normal((20, 8)),
                                                         causal=True, record=trace)
    path = tmp_path / "long.html"
    path.write_text(trace_html(trace, digits=DIGITS), encoding="utf-8")
    page = OpenPage(browser_context, path)
    try:
        p = page.page
        walked = all_steps(page)
        assert sum(1 for s in walked for line in s["lines"] if check_equation(line)) > 20
        p.evaluate("() => document.querySelector('.qkv-view').qkv.stepper.go(2)")      # q, k, v
        assert p.get_attribute(".qkv-stepper", "data-step") == "qkv"
        row = p.locator(".qkv-stepper table[data-step='q_heads'] tr", has=p.locator("td.qkv-write"))
        assert row.locator("th").inner_text() == "t15"
        np.testing.assert_allclose([float(t.replace("−", "-")) for t in row.locator("td").all_inner_texts()],
                                   trace["q_heads"].value[0, 15], atol=TOLERANCE)
        p.evaluate("() => document.querySelector('.qkv-view').qkv.stepper.go(4)")      # ÷ √d_k
        assert "of the 20 keys" in p.locator(".qkv-stepper .qkv-stepbody").inner_text()
        assert page.errors == []
    finally:
        page.close()


def test_matrix_labels_follow_the_part_shown(browser_context, example_folder):  # noqa: F811
    """Switching the group meeting's parts redraws the matrix labels with that part's tokens."""
    page = example_page(browser_context, example_folder, "group-meeting")
    try:
        p = page.page
        for part in range(p.locator(".qkv-part option").count()):
            p.select_option(".qkv-part", str(part))
            p.wait_for_selector('.qkv-view[data-ready="1"]')
            keys = p.locator(".qkv-right .qkv-tok").all_inner_texts()
            assert p.locator(".qkv-mx-col").all_inner_texts() == keys
        assert page.errors == []
    finally:
        page.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_meetings_question_has_its_tokens_number_on_the_page(browser_context, example_folder, lang):  # noqa: F811
    """“query 1 'lot'” on the page against “lot is token 4” in the text: every label of a meeting's query row
    (the token's aria-label, the line under the matrix, the derivation's title) names lot by its place in the
    sentence, read from the example's TOML (token_base and the scene's tokens), as its key is named."""
    import tomllib

    doc = tomllib.loads((Path(qkv.examples.__file__).parent / "group-meeting.toml").read_text(encoding="utf-8"))
    word = {"en": "query", "ko": "Query"}[lang]
    page = example_page(browser_context, example_folder, "group-meeting", lang)
    try:
        p = page.page
        for index, scene in enumerate(doc["scenes"]):
            p.select_option(".qkv-part", str(index))
            p.wait_for_selector('.qkv-view[data-ready="1"]')
            number = len(scene["tokens"]) - 1 - scene["tokens"][::-1].index(scene["query"]) + doc["token_base"]
            said = f"{word} {number} “{scene['query']}”"
            assert p.locator(".qkv-left .qkv-tok").first.get_attribute("aria-label") == said
            keys = [k.get_attribute("aria-label") for k in p.locator(".qkv-right .qkv-tok").all()]
            assert f"{number} “{scene['query']}”" in keys[number - doc["token_base"]], keys
            p.locator(".qkv-left .qkv-tok").first.click()
            p.locator(".qkv-right .qkv-tok").last.click()
            text = " ".join(p.locator(".qkv-cell h3").all_inner_texts() + p.locator(".qkv-info").all_inner_texts())
            assert said in text and not re.search(rf"{word} (?!{number}\b)\d+ “{scene['query']}”", text), text
        assert page.errors == []
    finally:
        page.close()



@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_scale_of_1_is_no_step(browser_context, example_folder, lang):  # noqa: F811
    """The group meeting applies softmax to its scores as given (“여기서는 √d_k로 나누지 않는다”): its step-through
    showed a step “the scale: scaled scores … (Q·Kᵀ · 1)” and its cells a “scaled” row repeating the scores.
    A scale of 1 has no step and no row; the self-attention example keeps its ÷√d_k step."""
    def step_ids(page):
        return [step["id"] for step in all_steps(page)]

    meeting = example_page(browser_context, example_folder, "group-meeting", lang)
    try:
        ids = step_ids(meeting)
        assert "scale" not in ids and ids[0] == "dot" and "softmax" in ids, ids
        point = meeting.page.evaluate("() => document.querySelector('.qkv-view').qkv.cellPoint(0, 0)")
        meeting.page.mouse.click(point["x"], point["y"])
        assert meeting.page.locator('.qkv-cell tr[data-step="scores"]').count() == 1
        assert meeting.page.locator('.qkv-cell tr[data-step="scaled_scores"]').count() == 0
        assert meeting.errors == []
    finally:
        meeting.close()
    love = example_page(browser_context, example_folder, "self-attention", lang)
    try:
        assert "scale" in step_ids(love)
    finally:
        love.close()
