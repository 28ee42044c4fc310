"""`qkv serve` in a real browser (Debian's Chromium, headless, Playwright): a learner's walk through the
page at a desktop and a phone width, every number of a clicked cell checked against the library's
Trace, no request leaving the server's origin, no console error (a CSP violation logs one)."""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from qkv import serve
from qkv.cli import main as cli_main

from browser_support import browser_context  # noqa: F401  (fixture)
from test_serve import tiny_bert

TEXT = "The cat sat on the mat."
DIGITS = 4


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`qkv serve`'s app with MiniLM, a tiny BERT and a tiny Llama (GQA, RoPE) under uvicorn on 127.0.0.1."""
    import uvicorn

    from model_fixtures import build_checkpoint

    root = tmp_path_factory.mktemp("models")
    models = serve.load_models([tiny_bert(root / "tiny-bert"), build_checkpoint(root, "llama-gqa")])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    translator, why = serve.load_translator()
    assert translator is not None, why
    config = uvicorn.Config(serve.create_app(models, translator=translator), host="127.0.0.1", port=port,
                            log_level="warning")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not runner.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", dict(models, translator=translator)
    runner.should_exit = True
    thread.join(10)


class Walk:
    """One page, recording its requests and its errors."""

    def __init__(self, context, base: str, width: int, height: int):
        self.base, self.requests, self.errors = base, [], []
        self.page = context.new_page()
        self.page.set_viewport_size({"width": width, "height": height})
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)

    def ready(self, **attributes) -> None:
        selector = '#app[data-ready="1"]' + "".join(f'[data-{k}="{v}"]' for k, v in attributes.items())
        self.page.wait_for_selector(selector, timeout=60_000)

    def no_sideways_scroll(self, where: str) -> None:
        width = self.page.evaluate("document.documentElement.scrollWidth")
        inner = self.page.evaluate("window.innerWidth")
        assert width <= inner, f"{where}: the page is {width} px wide in a {inner} px window"

    def state(self) -> dict:
        return {k: v[0] for k, v in parse_qs(urlparse(self.page.url).query).items()}

    def click_cell(self, i: int, j: int, pane: str = ".qkv-model-pane") -> None:
        canvas = self.page.locator(f"{pane} .qkv-matrix-canvas").first
        canvas.scroll_into_view_if_needed()
        left, top, cell, tq, tk = (float(v) for v in canvas.get_attribute("data-geometry").split(","))
        assert i < tq and j < tk
        canvas.click(position={"x": left + (j + 0.5) * cell, "y": top + (i + 0.5) * cell})


def numbers(page, step: str, pane: str = ".qkv-model-pane") -> np.ndarray:
    """The full-precision values and the printed texts of one derivation row."""
    row = page.locator(f'{pane} .qkv-derivation-cell tr[data-step="{step}"] .qkv-num')
    values = np.array([float(v) for v in row.evaluate_all("els => els.map(e => e.dataset.value)")])
    shown = np.array([float(t.replace("−", "-")) for t in row.evaluate_all("els => els.map(e => e.textContent)")])
    np.testing.assert_allclose(shown, values, atol=0.5 * 10 ** -DIGITS + 1e-12, rtol=0)   # printed to 4 decimals
    return values


def check_cell_against_trace(page, trace, i: int, j: int) -> None:
    """Every row of the cell's derivation equals the library's Trace (float32 run in the server: rtol 1e-6)."""
    rotated = {name: trace[name].value[0, i if name == "q_rotated" else j]
               for name in ("q_rotated", "k_rotated") if name in trace}
    expected = {**rotated, "q_heads": trace["q_heads"].value[0, i], "k_heads": trace["k_heads"].value[0, j],
                "scores": trace["scores"].value[0, i, j], "scaled_scores": trace["scaled_scores"].value[0, i, j],
                "weights": trace["weights"].value[0, i, j], "v_heads": trace["v_heads"].value[0, j],
                "out": trace["out"].value[0, i]}
    for step, want in expected.items():
        got = numbers(page, step)
        assert got.size == np.size(want), step
        np.testing.assert_allclose(got, np.ravel(want), rtol=1e-6, atol=1e-9, err_msg=step)
    assert page.locator(".qkv-model-pane .qkv-missing").count() == 0


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_a_learners_walk(browser_context, server, tmp_path, capsys, width, height):  # noqa: F811
    base, models = server
    walk = Walk(browser_context, base, width, height)
    page = walk.page
    page.goto(base + "/")
    walk.ready()
    walk.no_sideways_scroll("start")

    # type a sentence → the overview of every layer × head
    page.fill("#qkv-text", TEXT)
    page.click(".qkv-run")
    walk.ready(view="overview")
    assert page.locator(".qkv-thumb").count() == 6 * 12
    walk.no_sideways_scroll("overview")

    # switch model: the tiny BERT has 2 layers × 2 heads; back to MiniLM
    page.select_option("#qkv-model", "tiny-bert")
    page.wait_for_selector('.qkv-overview h2:has-text("tiny-bert")')
    walk.ready(view="overview")
    assert page.locator(".qkv-thumb").count() == 2 * 2
    assert walk.state()["model"] == "tiny-bert" and walk.state()["text"] == TEXT
    page.select_option("#qkv-model", "minilm")
    page.wait_for_selector('.qkv-overview h2:has-text("minilm")')
    walk.ready(view="overview")
    assert page.locator(".qkv-thumb").count() == 6 * 12
    page.screenshot(path=str(tmp_path / f"overview-{width}.png"), full_page=True)

    # open a head, click a cell: its derivation equals the library's Trace
    page.click('.qkv-thumb[data-layer="2"][data-head="5"]')
    walk.ready(view="head")
    assert walk.state()["layer"] == "2" and walk.state()["head"] == "5"
    trace = models["minilm"].trace(TEXT, layer=2, head=5)
    walk.click_cell(2, 3)
    page.wait_for_selector('.qkv-cell[data-cell="2,3"]')
    walk.ready(view="head")
    check_cell_against_trace(page, trace, 2, 3)
    assert walk.state()["cell"] == "2,3"
    assert page.locator(".qkv-steps .qkv-derivation").count() == 1        # the library's explanation
    walk.no_sideways_scroll("head")
    page.screenshot(path=str(tmp_path / f"head-{width}.png"), full_page=True)

    # back and forward walk through the views; the permalink brings the same view back
    page.go_back()
    walk.ready(view="overview")
    page.go_forward()
    walk.ready(view="head")
    page.goto(page.url)
    walk.ready(view="head")
    page.wait_for_selector('.qkv-cell[data-cell="2,3"]')
    check_cell_against_trace(page, trace, 2, 3)

    # Korean
    page.click('button[data-lang="ko"]')
    walk.ready(view="head", lang="ko")
    page.wait_for_selector('.qkv-steps .qkv-derivation[lang="ko"]')
    assert "헤드" in page.locator("h1").text_content() and walk.state()["lang"] == "ko"
    assert "계산 과정" in page.locator(".qkv-model-pane .qkv-cell h3").text_content()
    check_cell_against_trace(page, trace, 2, 3)
    walk.no_sideways_scroll("head in Korean")

    # a worked example, then an uploaded file with a mistake: the CLI's line
    page.click('button[data-tab="example"]')
    page.select_option("#qkv-example", "self-attention")
    walk.ready(tab="example")
    page.wait_for_selector(".qkv-example .qkv-matrix-canvas")
    walk.click_cell(1, 2, ".qkv-example-pane")
    page.wait_for_selector('.qkv-example-pane .qkv-cell[data-cell="1,2"]')
    example = __import__("qkv.examples", fromlist=["run"]).run("self-attention")
    np.testing.assert_allclose(numbers(page, "weights", ".qkv-example-pane"), [example["weights"].value[0, 1, 2]], rtol=1e-12)
    walk.no_sideways_scroll("example")
    bad = b'tokens = ["a", "b"]\nx = [[1.0, 2.0], [3.0]]\n'
    (tmp_path / "bad.toml").write_bytes(bad)
    assert cli_main(["explain", str(tmp_path / "bad.toml")]) == 2
    cli_line = capsys.readouterr().err.strip()
    page.set_input_files("#qkv-upload", files=[{"name": "bad.toml", "mimeType": "text/plain", "buffer": bad}])
    page.wait_for_selector(".qkv-example-error:not(:empty)")
    shown = page.locator(".qkv-example-error").text_content()
    assert shown.split(": ", 1)[1] == cli_line.removeprefix("qkv: error: ").replace(str(tmp_path / "bad.toml"), "bad.toml")
    walk.no_sideways_scroll("upload error")
    page.screenshot(path=str(tmp_path / f"upload-{width}.png"), full_page=True)

    outside = [url for url in walk.requests if not url.startswith((base + "/", "data:", "blob:"))]
    assert outside == []
    expected = "Failed to load resource: the server responded with a status of 400 (Bad Request)"   # the bad upload
    assert [e for e in walk.errors if e != expected] == [] and walk.errors.count(expected) == 1
    page.close()


def test_a_decoder_head_shows_its_mask_and_rope(browser_context, server, tmp_path):  # noqa: F811
    """A causal Llama head opened from its permalink at phone width: masked cells print as masked, an
    allowed cell's derivation (q and k before and after RoPE included) equals the Trace."""
    base, models = server
    walk = Walk(browser_context, base, 390, 844)
    page = walk.page
    page.goto(f"{base}/?model=llama-gqa&text=The+cat+sat+on+the+mat.&view=head&layer=1&head=3&cell=5,2")
    walk.ready(view="head")
    page.wait_for_selector('.qkv-cell[data-cell="5,2"]')
    trace = models["llama-gqa"].trace(TEXT, layer=1, head=3)
    assert trace.meta["kv_head"] == 1 and "q_rotated" in trace
    check_cell_against_trace(page, trace, 5, 2)
    assert page.locator('.qkv-derivation-cell tr[data-step="q_rotated"] .qkv-num').count() == 24
    walk.click_cell(2, 5)                                    # above the diagonal: masked
    page.wait_for_selector('.qkv-cell[data-cell="2,5"]')
    assert page.locator('tr[data-step="weights"] .qkv-masked').count() == 1
    assert page.locator('tr[data-step="weights"] .qkv-num').count() == 0
    assert trace["weights"].value[0, 2, 5] == 0 and trace["mask"].value[0, 2, 5] == -np.inf
    walk.ready(view="head")
    walk.no_sideways_scroll("decoder head")
    page.screenshot(path=str(tmp_path / "decoder-390.png"), full_page=True)
    assert [url for url in walk.requests if not url.startswith((base + "/", "data:", "blob:"))] == []
    assert walk.errors == []
    page.close()


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_translators_cross_attention(browser_context, server, tmp_path, width, height):  # noqa: F811
    """Translate, open a cross-attention head, click a cell: the derivation equals the translator's Trace."""
    from qkv.translator.explain import cross_attention_trace

    base, models = server
    translator = models["translator"]
    walk = Walk(browser_context, base, width, height)
    page = walk.page
    page.goto(base + "/")
    walk.ready()
    page.click('button[data-tab="translate"]')
    text = "my big dog saw the cat in the park"
    page.fill("#qkv-source", text)
    page.select_option("#qkv-to", "ja")
    page.click(".qkv-translate-pane .qkv-run")
    walk.ready(tab="translate")
    page.wait_for_selector(".qkv-translate-pane .qkv-thumb")
    expected = translator.translate(text, "ja")
    assert page.locator(".qkv-translated").text_content() == f"{text} → {' '.join(expected.target)}"
    assert page.locator(".qkv-translate-pane .qkv-thumb").count() == len(translator.decoder) * translator.config.n_heads
    walk.no_sideways_scroll("translator overview")
    page.click('.qkv-translate-pane .qkv-thumb[data-layer="1"][data-head="2"]')
    walk.ready(tab="translate", view="head")
    walk.click_cell(3, 1, ".qkv-translate-pane")
    page.wait_for_selector('.qkv-translate-pane .qkv-cell[data-cell="3,1"]')
    page.wait_for_selector(".qkv-translate-pane .qkv-steps .qkv-derivation")
    walk.ready(tab="translate", view="head")
    trace = cross_attention_trace(translator, expected, word=4, layer=1)
    pane = ".qkv-translate-pane"
    for step, want in (("q_heads", trace["q_heads"].value[2, 3]), ("k_heads", trace["k_heads"].value[2, 1]),
                       ("scores", [trace["scores"].value[2, 3, 1]]), ("weights", [trace["weights"].value[2, 3, 1]]),
                       ("v_heads", trace["v_heads"].value[2, 1]), ("out", trace["out"].value[2, 3])):
        np.testing.assert_allclose(numbers(page, step, pane), want, rtol=1e-6, atol=1e-9, err_msg=step)
    assert walk.state()["tab"] == "translate" and walk.state()["cell"] == "3,1"
    walk.no_sideways_scroll("translator head")
    page.screenshot(path=str(tmp_path / f"translator-{width}.png"), full_page=True)
    assert [url for url in walk.requests if not url.startswith((base + "/", "data:", "blob:"))] == []
    assert walk.errors == []
    page.close()
