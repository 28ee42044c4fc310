"""The lenses (explain/lenses.js) in Chromium: the next token and the heads that moved the last token, in `qkv serve`
and in the offline page `qkv.show` writes — every printed number is the library's (qkv.models.next_token), the
temperature slider is reached and moved by keyboard and shows the probabilities the library computed at that
temperature, text contrast reaches WCAG AA, no sideways scroll at 390 px, English and Korean."""

from __future__ import annotations


import numpy as np
import pytest

import qkv
from qkv import models, serve

from browser_support import OpenPage, browser_context, low_contrast_text, serving  # noqa: F401  (fixture)

TEXT = "The cat sat on the mat"
DIGITS = 4


@pytest.fixture(scope="module")
def decoders():
    from model_fixtures import built        # the run's shared checkpoints: read, never changed

    return {name: models.load(built(name)) for name in ("gpt2", "llama-gqa", "mistral")}


@pytest.fixture(scope="module")
def server(decoders):
    loaded = dict(decoders)
    with serving(serve.create_app(loaded)) as url:
        yield url


def _page(context, url: str, width: int):
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(url)
    return page, errors


def _shown(page, selector: str) -> list[float]:
    return [float(t.replace("−", "-")) for t in page.locator(selector).all_inner_texts()]


def _check_next(page, found, lang: str) -> None:
    """The panel prints the library's numbers, and the slider, moved by keyboard, shows those at each temperature."""
    panel = page.locator(".qkv-nexttoken")
    tokens = panel.locator(".qkv-next-token").all_inner_texts()
    assert tokens == list(found.top_tokens)
    np.testing.assert_allclose(_shown(page, ".qkv-next-table td.qkv-n"), found.logits[found.top], atol=0.5e-4 + 1e-9)
    temps = list(found.temperatures)
    slider = panel.locator("input[type=range]")
    slider.focus()
    assert page.evaluate("document.activeElement.classList.contains('qkv-next-temperature')")
    start = temps.index(1.0)
    for move, key in ((start, None), (start + 1, "ArrowRight"), (start + 2, "ArrowRight"), (0, "Home")):
        if key:
            page.keyboard.press(key)
        assert float(panel.get_attribute("data-temperature")) == temps[move]
        np.testing.assert_allclose(_shown(page, ".qkv-next-p"), found.top_probabilities(temps[move]), atol=0.5e-4 + 1e-9)
        rest = 1 - found.top_probabilities(temps[move]).sum()
        assert panel.locator(".qkv-next-rest").inner_text().endswith(f"{rest:.4f}")
    # which heads moved the last token: every cell's ‖c_h‖ and share, and the three named first
    moves = page.locator(".qkv-moves")
    np.testing.assert_allclose(_shown(page, ".qkv-move-n"), found.head_norms.ravel(), atol=0.5e-4 + 1e-9)
    np.testing.assert_allclose(_shown(page, ".qkv-move-s"), found.head_shares.ravel(), atol=0.5e-4 + 1e-9)
    l, h, _ = found.ranking()[0]
    named = moves.locator(".qkv-moves-most").inner_text()
    assert (f"layer {l} head {h}" if lang == "en" else f"층 {l} 헤드 {h}") in named
    if lang == "ko":
        assert "다음 토큰" in panel.inner_text() and "temperature" not in panel.inner_text()


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("width", [1366, 390])
def test_serve_next_token(browser_context, server, decoders, lang, width):  # noqa: F811
    page, errors = _page(browser_context, f"{server}/?tab=model&model=llama-gqa&text={TEXT}&view=overview&lang={lang}",
                         width)
    page.wait_for_selector(".qkv-moves", timeout=60_000)
    page.wait_for_selector('#app[data-ready="1"]', timeout=60_000)
    _check_next(page, models.next_token(decoders["llama-gqa"], TEXT), lang)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert low_contrast_text(page) == []
    assert errors == []
    page.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_show_next_token_offline(browser_context, decoders, tmp_path, lang):  # noqa: F811
    path = qkv.notebook.view(decoders["gpt2"], text=TEXT, lang=lang).save(tmp_path / f"gpt2-{lang}.html")
    for width in (1366, 390):
        opened = OpenPage(browser_context, path, (width, 900))
        _check_next(opened.page, models.next_token(decoders["gpt2"], TEXT), lang)
        assert opened.overflow() <= 0 and opened.outside_requests() == [] and opened.errors == []
        assert low_contrast_text(opened.page) == []
        opened.close()


# ------------------------------------------------------------------ several heads at once, text colour, neuron view
def _check_several_heads(page, weights: np.ndarray, query: int, head: int, tokens: list[str]) -> None:
    """weights (H, T, T) of the layer the page shows: the overlay's table and lines, its toggles by keyboard, the
    coloured text's numbers; every number the library's."""
    overlay = page.locator(".qkv-overlay")
    assert int(overlay.get_attribute("data-query")) == query
    rows = overlay.locator(".qkv-overlay-weights tr[data-head]")
    heads = weights.shape[0]
    assert rows.count() == heads
    for h in range(heads):
        shown = rows.nth(h).locator("td").all_inner_texts()
        live = [j for j, t in enumerate(shown) if t not in ("masked", "마스크")]
        assert live == list(range(query + 1)) or len(live) == weights.shape[-1]
        np.testing.assert_allclose([float(shown[j]) for j in live], weights[h, query, live], atol=0.5e-4 + 1e-9)
        lines = overlay.locator(f"line[data-head='{h}']")
        assert lines.count() == int(np.sum(weights[h, query, live] > 0.002))
    # each toggle is a checkbox reached by Tab and switched by Space; its head's lines and row go with it
    first = overlay.locator("input[type=checkbox][data-head='1']")
    first.focus()
    page.keyboard.press("Space")
    assert overlay.get_attribute("data-heads") == ",".join(str(h) for h in range(heads) if h != 1)
    assert overlay.locator("line[data-head='1']").count() == 0 and rows.count() == heads - 1
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.getAttribute('data-head')") == "0"
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    assert overlay.get_attribute("data-heads") == ",".join(str(h) for h in range(heads))
    for h in range(heads):       # a text label per head, not colour alone
        assert overlay.locator(".qkv-toggle-name").nth(h).inner_text().endswith(str(h))
    coloured = page.locator(".qkv-colourtext")
    assert coloured.locator(".qkv-ct-text").all_inner_texts() == tokens
    numbers = coloured.locator(".qkv-ct-w").all_inner_texts()
    live = [j for j, t in enumerate(numbers) if t not in ("masked", "마스크")]
    np.testing.assert_allclose([float(numbers[j]) for j in live], weights[head, query, live], atol=0.5e-4 + 1e-9)


def _check_neuron(page, found: dict, digits: int = DIGITS) -> None:
    neuron = page.locator(".qkv-neuron")
    printed = np.array([float(t.replace("−", "-")) for t in neuron.locator(".qkv-term").all_inner_texts()])
    np.testing.assert_allclose(printed, found["terms"], atol=0.5 * 10 ** -digits + 1e-9)
    line = neuron.locator(".qkv-neuron-sum").inner_text()
    assert f"{found['sum']:.{digits}f}".replace("-", "−") in line and f"{found['score']:.{digits}f}".replace("-", "−") in line
    assert ("They are equal" in line or "같다" in line) == (round(found["sum"], digits) == round(found["score"], digits))


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("width", [1366, 390])
def test_serve_several_heads_and_neuron(browser_context, server, decoders, lang, width):  # noqa: F811
    from qkv.analysis import score_terms

    model, layer, head = decoders["llama-gqa"], 1, 3
    page, errors = _page(browser_context, f"{server}/?tab=model&model=llama-gqa&text={TEXT}&view=head&layer={layer}"
                                          f"&head={head}&lang={lang}", width)
    page.wait_for_selector(".qkv-neuron", timeout=60_000)
    page.wait_for_selector('#app[data-ready="1"]', timeout=60_000)
    tokens = model.tokens(TEXT)
    weights = model.attention_weights(TEXT)[layer]
    last = len(tokens) - 1
    _check_several_heads(page, weights, last, head, tokens)
    trace = model.trace(TEXT, layer=layer, head=head)
    strongest = int(np.argmax(weights[head, last]))
    assert page.locator(".qkv-neuron").get_attribute("data-pair") == f"{last},{strongest}"
    _check_neuron(page, score_terms(trace, query=last, key=strongest))
    # a clicked cell: the overlay and the coloured text follow its query, the neuron view shows its pair
    canvas = page.locator(".qkv-model-pane .qkv-matrix-canvas").first
    canvas.scroll_into_view_if_needed()
    left, top, cell, _, _ = (float(v) for v in canvas.get_attribute("data-geometry").split(","))
    canvas.click(position={"x": left + 1.5 * cell, "y": top + 3.5 * cell})
    page.wait_for_selector(".qkv-neuron[data-pair='3,1']", timeout=60_000)
    _check_neuron(page, score_terms(trace, query=3, key=1))
    assert page.locator(".qkv-overlay").get_attribute("data-query") == "3"
    assert page.locator(".qkv-colourtext").get_attribute("data-query") == "3"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert low_contrast_text(page) == []
    assert errors == []
    page.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_show_several_heads_and_neuron_offline(browser_context, decoders, tmp_path, lang):  # noqa: F811
    from qkv.analysis import score_terms

    model = decoders["llama-gqa"]
    path = qkv.notebook.view(model, text=TEXT, lang=lang, layer=2, query=4).save(tmp_path / f"llama-{lang}.html")
    trace = model.trace(TEXT, derivation=True)
    tokens = model.tokens(TEXT)
    weights = model.attention_weights(TEXT)[2]
    for width in (1366, 390):
        opened = OpenPage(browser_context, path, (width, 900))
        page = opened.page
        page.wait_for_selector(".qkv-neuron", timeout=60_000)
        _check_several_heads(page, weights, 4, 0, tokens)
        strongest = int(np.argmax(weights[0, 4]))
        assert page.locator(".qkv-neuron").get_attribute("data-pair") == f"4,{strongest}"
        _check_neuron(page, score_terms(trace, query=4, key=strongest, head=0, prefix="layer 2/"))
        page.select_option(".qkv-head", "2")             # the page's head picker: the lenses follow it
        page.wait_for_function("() => document.querySelector('.qkv-colourtext .qkv-note').textContent.includes('2')")
        strongest = int(np.argmax(weights[2, 4]))
        page.wait_for_selector(f".qkv-neuron[data-pair='4,{strongest}']", timeout=60_000)
        _check_neuron(page, score_terms(trace, query=4, key=strongest, head=2, prefix="layer 2/"))
        assert opened.overflow() <= 0 and opened.outside_requests() == [] and opened.errors == []
        assert low_contrast_text(page) == []
        opened.close()


def test_a_long_view_leaves_the_neuron_view_out_and_says_so(browser_context, decoders, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(qkv.notebook, "NEURON_NUMBERS", 100)
    path = qkv.notebook.view(decoders["gpt2"], text=TEXT).save(tmp_path / "gpt2-long.html")
    opened = OpenPage(browser_context, path, (1366, 900))
    note = opened.page.locator(".qkv-neuron-box .qkv-note").inner_text()
    assert "left out" in note and "qkv serve" in note and opened.page.locator(".qkv-neuron").count() == 0
    assert opened.page.locator(".qkv-overlay").count() == 1 and opened.errors == []
    opened.close()


def test_serve_masks_are_the_models_own(browser_context, server, decoders):  # noqa: F811
    """Mistral's sliding window (6 keys) is shorter than the text: the keys it hides from the last query are said
    masked in the overlay's table and the coloured text — the library's recorded mask, not a causal rule."""
    model = decoders["mistral"]
    tokens = model.tokens(TEXT)
    window = model.window_mask(len(tokens), len(tokens), 0)
    assert window is not None and not window[-1].all()
    page, errors = _page(browser_context, f"{server}/?tab=model&model=mistral&text={TEXT}&view=head&layer=0&head=0",
                         1366)
    page.wait_for_selector(".qkv-colourtext", timeout=60_000)
    page.wait_for_selector('#app[data-ready="1"]', timeout=60_000)
    shown = page.locator(".qkv-colourtext .qkv-ct-w").all_inner_texts()
    assert [t == "masked" for t in shown] == [not allowed for allowed in window[-1]]
    first_row = page.locator(".qkv-overlay-weights tr[data-head='0'] td").all_inner_texts()
    assert [t == "masked" for t in first_row] == [not allowed for allowed in window[-1]]
    assert errors == []
    page.close()
