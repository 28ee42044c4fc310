"""The lenses (explain/lenses.js) in Chromium: the next token and the heads that moved the last token, in `qkv serve`
and in the offline page `qkv.show` writes — every printed number is the library's (qkv.models.next_token), the
temperature slider is reached and moved by keyboard and shows the probabilities the library computed at that
temperature, text contrast reaches WCAG AA, no sideways scroll at 390 px, English and Korean."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import qkv
from qkv import models, serve

from browser_support import OpenPage, browser_context, low_contrast_text  # noqa: F401  (fixture)

TEXT = "The cat sat on the mat"
DIGITS = 4


@pytest.fixture(scope="module")
def decoders(tmp_path_factory):
    from model_fixtures import build_checkpoint

    root = tmp_path_factory.mktemp("lens-models")
    return {name: models.load(build_checkpoint(root, name)) for name in ("gpt2", "llama-gqa")}


@pytest.fixture(scope="module")
def server(decoders):
    loaded = dict(decoders)
    sock = serve.listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    runner = serve.server(serve.create_app(loaded), sock)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not runner.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    runner.should_exit = True
    thread.join(10)
    sock.close()


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
