"""`qkv serve` in a real browser (Debian's Chromium, headless, Playwright): a learner's walk through the
page at a desktop and a phone width, every number of a clicked cell checked against the library's
Trace, no request leaving the server's origin, no console error (a CSP violation logs one)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from qkv import serve
from qkv.cli import main as cli_main

from browser_support import browser_context, keep_screenshot, serving  # noqa: F401  (fixture)
from test_serve import tiny_bert

TEXT = "The cat sat on the mat."
DIGITS = 4


def texts_ko(key: str) -> str:
    from qkv.explain import texts

    return texts.text("ko", key)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`qkv serve`'s app with MiniLM, a tiny BERT and a tiny Llama (GQA, RoPE) on 127.0.0.1, served as
    `qkv serve` serves it (serve.listen, serve.server: its protocol, deadlines and same-origin check)."""
    from model_fixtures import built        # the run's shared checkpoint: read, never changed

    root = tmp_path_factory.mktemp("models")
    models = serve.load_models([tiny_bert(root / "tiny-bert"), built("llama-gqa")])
    translator, why = serve.load_translator()
    assert translator is not None, why
    with serving(serve.create_app(models, translator=translator)) as url:
        yield url, dict(models, translator=translator)


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
    """The printed numbers of one row of the clicked cell's derivation (the shared views print 4 decimals)."""
    row = page.locator(f'{pane} .qkv-derivation-cell tr[data-step="{step}"] .qkv-n')
    return np.array([float(t.replace("−", "-")) for t in row.evaluate_all("els => els.map(e => e.textContent)")])


def assert_printed(shown: np.ndarray, want, err_msg: str = "") -> None:
    """Printed to 4 decimals: each shown number is the recorded one rounded (float32 in the server: + 1e-6 relative)."""
    want = np.ravel(want).astype(np.float64)
    assert shown.size == want.size, err_msg
    np.testing.assert_allclose(shown, want, atol=0.5 * 10 ** -DIGITS + 1e-6 * np.abs(want).max() + 1e-12, rtol=0,
                               err_msg=err_msg)


def check_cell_against_trace(page, trace, i: int, j: int) -> None:
    """Every row of the cell's derivation prints the library's Trace's value."""
    rotated = {name: trace[name].value[0, i if name == "q_rotated" else j]
               for name in ("q_rotated", "k_rotated") if name in trace}
    expected = {**rotated, "q_heads": trace["q_heads"].value[0, i], "k_heads": trace["k_heads"].value[0, j],
                "scores": trace["scores"].value[0, i, j], "scaled_scores": trace["scaled_scores"].value[0, i, j],
                "weights": trace["weights"].value[0, i, j], "v_heads": trace["v_heads"].value[0, j],
                "out": trace["out"].value[0, i]}
    for step, want in expected.items():
        assert_printed(numbers(page, step), want, step)
    assert page.locator(".qkv-model-pane .qkv-missing").count() == 0


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_a_learners_walk(browser_context, server, tmp_path, capsys, width, height):  # noqa: F811
    base, models = server
    walk = Walk(browser_context, base, width, height)
    page = walk.page
    page.goto(base + "/")
    walk.ready()
    walk.no_sideways_scroll("start")

    # the page opens on the worked examples; "Your text" is a tab: an empty submit says what to type
    page.click('button[data-tab="model"]')
    walk.ready(tab="model")
    page.click(".qkv-run")
    message = page.locator(".qkv-model-error")
    assert message.is_visible() and "The cat sat on the mat." in message.text_content()
    assert walk.state()["tab"] == "model" and "text" not in walk.state()

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
    keep_screenshot(page, f"overview-{width}", full_page=True)

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
    assert page.locator(".qkv-model-pane .qkv-steps .qkv-derivation").count() == 1        # the library's explanation
    walk.no_sideways_scroll("head")
    keep_screenshot(page, f"head-{width}", full_page=True)

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
    page.wait_for_selector('.qkv-model-pane .qkv-steps .qkv-derivation[lang="ko"]')
    assert page.locator("h1").text_content() == texts_ko("serve.ui.title") and walk.state()["lang"] == "ko"
    assert "계산 과정" in page.locator(".qkv-model-pane .qkv-cell h3").text_content()
    check_cell_against_trace(page, trace, 2, 3)
    walk.no_sideways_scroll("head in Korean")

    # a worked example, then an uploaded file with a mistake: the CLI's line
    page.click('button[data-tab="example"]')
    page.click('.qkv-ex-item[data-example="cross-attention"]')
    walk.ready(tab="example")
    page.click('.qkv-ex-item[data-example="self-attention"]')
    walk.ready(tab="example")
    page.wait_for_selector(".qkv-example .qkv-matrix-canvas")
    walk.click_cell(1, 2, ".qkv-example-pane")
    page.wait_for_selector('.qkv-example-pane .qkv-cell[data-cell="1,2"]')
    example = __import__("qkv.examples", fromlist=["run"]).run("self-attention")
    assert_printed(numbers(page, "weights", ".qkv-example-pane"), [example["weights"].value[0, 1, 2]])
    walk.no_sideways_scroll("example")
    bad = b'tokens = ["a", "b"]\nx = [[1.0, 2.0], [3.0]]\n'
    (tmp_path / "bad.toml").write_bytes(bad)
    lang = walk.state().get("lang", "en")          # the page's language: its error line is the CLI's in that language
    assert cli_main(["explain", str(tmp_path / "bad.toml"), "--lang", lang]) == 2
    cli_line = capsys.readouterr().err.strip()
    page.set_input_files("#qkv-upload", files=[{"name": "bad.toml", "mimeType": "text/plain", "buffer": bad}])
    page.wait_for_selector(".qkv-example-error:not(:empty)")
    shown = page.locator(".qkv-example-error").text_content()
    prefix = "qkv: 오류: " if lang == "ko" else "qkv: error: "
    assert shown.split(": ", 1)[1] == cli_line.removeprefix(prefix).replace(str(tmp_path / "bad.toml"), "bad.toml")
    walk.no_sideways_scroll("upload error")
    keep_screenshot(page, f"upload-{width}", full_page=True)

    outside = [url for url in walk.requests if not url.startswith((base + "/", "data:", "blob:"))]
    assert outside == []
    expected = "Failed to load resource: the server responded with a status of 400 (Bad Request)"   # the bad upload
    assert [e for e in walk.errors if e != expected] == [] and walk.errors.count(expected) == 1
    page.close()


def test_a_decoder_head_shows_its_mask_and_rope(browser_context, server):  # noqa: F811
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
    assert page.locator('.qkv-derivation-cell tr[data-step="q_rotated"] .qkv-n').count() == 24
    walk.click_cell(2, 5)                                    # above the diagonal: masked
    page.wait_for_selector('.qkv-cell[data-cell="2,5"]')
    masked_word = page.evaluate("qkvServe.data.words.views.en.masked")
    assert page.locator('.qkv-derivation-cell tr[data-step="weights"] td').text_content() == masked_word
    assert page.locator('.qkv-derivation-cell tr[data-step="weights"] .qkv-n').count() == 0   # the word, no number
    assert trace["weights"].value[0, 2, 5] == 0 and trace["mask"].value[0, 2, 5] == -np.inf
    legend = page.locator(".qkv-model-pane .qkv-info + .qkv-legend")  # the heatmap's legend (not the coloured text's): it names masked cells
    assert legend.locator(".qkv-masked-swatch").count() == 1
    assert legend.locator(".qkv-legend-label").text_content() == page.evaluate("qkvServe.data.words.page.en.legend")
    walk.ready(view="head")
    walk.no_sideways_scroll("decoder head")
    keep_screenshot(page, "decoder-390", full_page=True)
    assert [url for url in walk.requests if not url.startswith((base + "/", "data:", "blob:"))] == []
    assert walk.errors == []
    page.close()


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_translators_cross_attention(browser_context, server, width, height):  # noqa: F811
    """Translate, open a cross-attention head, click a cell: the derivation equals the translator's Trace."""
    from qkv.translator.explain import cross_attention_trace

    base, models = server
    translator = models["translator"]
    walk = Walk(browser_context, base, width, height)
    page = walk.page
    page.goto(base + "/")
    walk.ready()
    page.click('button[data-tab="translate"]')
    # a word the translator does not know: the line under the box says the problem, not the API's "text:"
    page.fill("#qkv-source", "my big dog saw the elephant")
    page.click(".qkv-translate-pane .qkv-run")
    page.wait_for_selector(".qkv-translate-error:not(:empty)")
    assert page.locator(".qkv-translate-error").text_content().startswith("error: unknown word 'elephant'")
    walk.errors.clear()                                             # the 400 the browser logged
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
        assert_printed(numbers(page, step, pane), want, step)
    assert walk.state()["tab"] == "translate" and walk.state()["cell"] == "3,1"
    # row t is word t of the translation, as in qkv translate's figure; its query is the state at the token before
    rows = page.locator(f"{pane} .qkv-mx-row").evaluate_all("els => els.map(e => e.textContent)")
    assert rows == list(expected.target)
    assert trace.meta["tokens"][3] == expected.target[2] and trace.meta["query"] == 3
    title = page.locator(f"{pane} .qkv-cell h3").text_content()
    assert f"word 4 “{expected.target[3]}”" in title and f"“{expected.target[2]}”" in title
    walk.no_sideways_scroll("translator head")
    keep_screenshot(page, f"translator-{width}", full_page=True)
    assert [url for url in walk.requests if not url.startswith((base + "/", "data:", "blob:"))] == []
    assert walk.errors == []
    page.close()


# ------------------------------------------------------------------ the worked examples first, and what-if
def softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("width, height, lang", [(1280, 800, "en"), (390, 844, "en"), (1280, 800, "ko"), (390, 844, "ko")])
def test_serve_opens_on_the_worked_examples(browser_context, server, width, height, lang):  # noqa: F811
    """The first view lists the five examples under their posts' titles and opens self-attention's “love”:
    its matrix, the derivation of love's strongest key and the step-through, no text box to fill first."""
    import qkv.examples
    from qkv.explain import texts

    base, _ = server
    walk = Walk(browser_context, base, width, height)
    page = walk.page
    page.goto(base + ("/?lang=ko" if lang == "ko" else "/"))
    walk.ready(tab="example", lang=lang)
    assert page.locator(".qkv-model-pane").is_hidden() and page.locator("#qkv-text").is_hidden()
    items = page.locator(".qkv-ex-item")
    assert items.evaluate_all("els => els.map(e => e.dataset.example)") == qkv.examples.names()
    assert items.evaluate_all("els => els.map(e => e.textContent)") == [texts.text(lang, f"title.{n}") for n in qkv.examples.names()]
    posts = page.locator(".qkv-ex-post").evaluate_all("els => els.map(e => e.textContent)")
    assert len(posts) == 3 and all(texts.text(lang, f"post.{p}") in line for p, line in zip(("001", "000", "002"), posts))
    assert page.locator('.qkv-ex-item.qkv-on').get_attribute("data-example") == "self-attention"
    # love (row 1) is followed: its strongest key's derivation is open; the numbers are the example's
    example = qkv.examples.run("self-attention")
    love = example["weights"].value[0, 1]
    page.wait_for_selector(f'.qkv-example-pane .qkv-cell[data-cell="1,{int(np.argmax(love))}"]')
    assert_printed(numbers(page, "weights", ".qkv-example-pane"), [love.max()])
    assert_printed(numbers(page, "q_heads", ".qkv-example-pane"), example["q_heads"].value[0, 1])
    assert page.locator(".qkv-example-pane .qkv-stepper").count() == 1
    shown = page.locator('.qkv-compare-table tr[data-row="now"] td').evaluate_all("els => els.map(e => +e.dataset.value)")
    np.testing.assert_array_equal(shown, love)
    if lang == "ko":
        visible = page.locator(".qkv-whatif").inner_text() + page.locator(".qkv-ex-side").inner_text()
        for english in ("What if", "score factor", "From the post", "Edit", "back to", "Choose File"):
            assert english not in visible, english
    walk.no_sideways_scroll(f"examples {lang} {width}")
    # nothing is masked in self-attention's matrix: its legend names no hatching
    legend = page.locator(".qkv-example-pane .qkv-trace .qkv-legend")
    assert legend.locator(".qkv-masked-swatch").count() == 0
    assert legend.locator(".qkv-legend-label").text_content() == texts.text(lang, "serve.ui.legendPlain")
    # each matrix caption of the explanation on one line ("W_Q (2 × 2)" broke after "×" in a narrow table)
    lines = page.locator(".qkv-example-pane .qkv-steps caption").evaluate_all(
        "els => els.map(c => c.getBoundingClientRect().height / parseFloat(getComputedStyle(c).lineHeight))")
    assert len(lines) >= 4 and max(lines) < 1.5, lines
    page.click(".qkv-ex-item[data-example='cross-attention']")             # its step-through: X and memory
    walk.ready(tab="example", lang=lang)
    page.wait_for_selector(".qkv-example-pane .qkv-stepper caption")
    lines = page.locator(".qkv-example-pane .qkv-stepper caption").evaluate_all(     # line-height "normal" here:
        "els => els.map(c => c.getBoundingClientRect().height / parseFloat(getComputedStyle(c).fontSize))")
    assert len(lines) == 2 and max(lines) < 2.0, lines                                # one line ≈ 1.2 em, two ≥ 2.3
    keep_screenshot(page, f"examples-{lang}-{width}", full_page=True)
    assert [url for url in walk.requests if not url.startswith((base + "/", "data:", "blob:"))] == []
    assert walk.errors == []
    page.close()


def set_slider(page, selector: str, value: float) -> None:
    page.eval_on_selector(selector, "(s, v) => { s.value = String(v); s.dispatchEvent(new Event('input')); }", value)


def lot_weights(page) -> dict:
    return {s: float(page.locator(f'.qkv-readout[data-scene="{s}"]').get_attribute("data-value")) for s in ("lot", "question")}


def test_the_question_score_slider_moves_lots_weight(browser_context, server):  # noqa: F811
    """The group meeting: the question words' score from 1000 (as given) to 1 moves lot's weight in the second
    meeting from ~0 to ~1; every number is the server's recomputation, equal to a float64 softmax here."""
    base, _ = server
    walk = Walk(browser_context, base, 1280, 800)
    page = walk.page
    page.goto(base + "/?example=group-meeting")
    walk.ready(tab="example")
    page.wait_for_selector('.qkv-readout[data-scene="question"][data-value]')
    given = np.array([1000.0] * 4 + [1, 1, 1, 100])
    assert lot_weights(page)["question"] == pytest.approx(softmax_rows(given)[7], abs=1e-300)   # e^-900: 0
    seen = []
    for position, score in ((2.0, 100), (1.9, 79), (3.0, 1000), (0.0, 1)):
        set_slider(page, "#qkv-question-score", position)
        scores = np.array([score] * 4 + [1, 1, 1, 100], dtype=np.float64)
        expected = softmax_rows(scores)[7]
        page.wait_for_function("(want) => { const e = document.querySelector('.qkv-readout[data-scene=\"question\"]');"
                               " return e && Math.abs(+e.dataset.value - want) <= 1e-12 * Math.max(1, want); }", arg=expected)
        walk.ready(tab="example")
        got = lot_weights(page)
        assert got["question"] == pytest.approx(expected, rel=1e-12, abs=1e-300)
        assert got["lot"] == pytest.approx(softmax_rows(np.array([1.0, 1, 1, 100]))[3], rel=1e-12)   # untouched
        seen.append(got["question"])
        assert f"{score}" in page.locator("label.qkv-slider").first.text_content()
    assert seen[0] == pytest.approx(0.2) and seen[1] > seen[0] and seen[2] < 1e-300 and seen[3] > 0.9999
    # the matrix shows the meeting the slider moves, with the recomputed weights
    assert page.locator(".qkv-pick-part").input_value() == "1"
    state = walk.state()
    assert "whatif" in state and '"question"' in state["whatif"]
    page.goto(page.url)                                                     # the permalink holds the what-if
    walk.ready(tab="example")
    page.wait_for_selector('.qkv-readout[data-scene="question"][data-value]')
    assert lot_weights(page)["question"] == pytest.approx(seen[3], abs=1e-300)
    page.click(".qkv-reset")
    walk.ready(tab="example")
    page.wait_for_selector('.qkv-readout[data-scene="question"][data-value]')
    assert "whatif" not in walk.state()
    assert walk.errors == []
    page.close()


def test_whatif_factor_sqrt_dk_and_an_edited_cell(browser_context, server):  # noqa: F811
    """Self-attention: √d_k off, the factor at 2, X[love][0] = 2.5: love's weights in the matrix, the derivation
    and the comparison table equal softmax(Q·Kᵀ·scale)·V computed here in float64 from the edited inputs."""
    import qkv.examples

    base, _ = server
    walk = Walk(browser_context, base, 390, 844)
    page = walk.page
    page.goto(base + "/?lang=ko")
    walk.ready(tab="example", lang="ko")
    doc = qkv.examples.load("self-attention")
    x, w_q, w_k, w_v = (np.array(doc[m], dtype=np.float64) for m in ("x", "w_q", "w_k", "w_v"))

    def expected(scale: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        w = softmax_rows(q @ k.T * scale)
        return w, w @ v

    def now() -> np.ndarray:
        return np.array(page.locator('.qkv-compare-table tr[data-row="now"] td').evaluate_all(
            "els => els.map(e => +e.dataset.value)"))

    page.uncheck("#qkv-sqrt-dk")
    walk.ready(tab="example")
    page.wait_for_function("() => document.getElementById('app').dataset.whatif === '1'")
    walk.ready(tab="example")
    np.testing.assert_allclose(now(), expected(1.0, x)[0][1], rtol=1e-12)
    set_slider(page, "#qkv-factor", 2)
    page.wait_for_function("() => /sqrt_dk%22%3Afalse/.test(location.search) && /factor%22%3A2[%,]/.test(location.search)")
    walk.ready(tab="example")
    page.wait_for_timeout(300)
    walk.ready(tab="example")
    np.testing.assert_allclose(now(), expected(2.0, x)[0][1], rtol=1e-12)
    page.click(".qkv-editor summary")
    cell = page.locator('.qkv-edit-table[data-matrix="x"] tr').nth(1).locator("input").first   # X[1][0] (love)
    cell.fill("2.5")
    cell.press("Enter")
    edited = x.copy()
    edited[1, 0] = 2.5
    weights, out = expected(2.0, edited)
    page.wait_for_function("(w) => { const td = document.querySelector('.qkv-compare-table tr[data-row=\"now\"] td');"
                           " return td && Math.abs(+td.dataset.value - w) < 1e-12; }", arg=float(weights[1, 0]))
    walk.ready(tab="example")
    np.testing.assert_allclose(now(), weights[1], rtol=1e-12)
    j = int(page.locator(".qkv-example-pane .qkv-cell").get_attribute("data-cell").split(",")[1])
    assert_printed(numbers(page, "weights", ".qkv-example-pane"), [weights[1, j]])
    assert_printed(numbers(page, "out", ".qkv-example-pane"), out[1])
    changed = page.locator(".qkv-changed").text_content()
    assert "바꾼 것" in changed, changed
    # the cell named as `qkv example --what-if` reads it: love's row is token 2, as the post numbers it
    # (the example's token_base), the column counted from 0; the API's own key x[1,0] is not shown
    love = 1 + int(doc.get("token_base", 0))
    assert f"x[{love},0] = 2.5" in changed and "x[1,0]" not in changed, changed
    walk.no_sideways_scroll("what-if at 390 px")
    keep_screenshot(page, "whatif-ko-390", full_page=True)
    # a bad number: said at once in the reader's words (the matrix, the row's token, the column), never as the
    # API's path ("cells.x[0]: expected a finite number"); the box is marked invalid
    cell.fill("abc")
    cell.press("Enter")
    page.wait_for_selector(".qkv-whatif-error:not(:empty)")
    said = page.locator(".qkv-whatif-error").text_content()
    assert "X, 행 love, 열 0" in said and "수가 아닌 값(“abc”)" in said and "cells" not in said, said
    assert cell.get_attribute("aria-invalid") == "true"
    # a number out of range: the server's Korean line, its field read back to the cell it names
    cell.fill("1e9")
    cell.press("Enter")
    page.wait_for_function("() => /범위/.test(document.querySelector('.qkv-whatif-error').textContent)")
    said = page.locator(".qkv-whatif-error").text_content()
    assert "X, 행 love, 열 0: " in said and "cells" not in said and "[" not in said, said
    assert cell.get_attribute("aria-invalid") is None
    # the projection example's 8-column matrices fit the phone's editor: no number hidden past its right edge
    page.goto(base + "/?example=projection&lang=ko")
    walk.ready(tab="example", lang="ko")
    page.click(".qkv-editor summary")
    over = page.locator(".qkv-edit-table").evaluate_all(
        "ts => ts.map(t => t.getBoundingClientRect().right - t.closest('.qkv-editor-tables').getBoundingClientRect().right)")
    assert len(over) == 5 and max(over) <= 0, over
    clipped = page.locator(".qkv-edit").evaluate_all("es => es.filter(e => e.scrollWidth > e.clientWidth).map(e => e.value)")
    assert page.locator(".qkv-edit").count() == 3 * 8 + 4 * 64 and clipped == [], clipped    # each number whole
    # its post counts tokens from 1 and names them 토큰 1…3: the cell of token 3 → token 1 says so, v[1] its value row
    page.wait_for_selector(".qkv-example .qkv-matrix-canvas")
    walk.click_cell(2, 0, pane=".qkv-example-pane")
    page.wait_for_selector('.qkv-example-pane .qkv-cell[data-cell="2,0"]')
    derivation = page.locator('.qkv-example-pane .qkv-cell[data-cell="2,0"]')
    title = derivation.locator("h3").text_content()               # 토큰 3 is not glossed by its own number
    assert "Query 3 → Key 1" in title and "“토큰" not in title
    assert "v[1]" in derivation.locator('tr[data-step="v_heads"]').text_content()
    assert "token" not in page.locator(".qkv-example-pane").inner_text().lower()
    # the meetings' score tables: each caption on one line, inside the panel
    page.goto(base + "/?example=group-meeting&lang=ko")
    walk.ready(tab="example", lang="ko")
    page.click(".qkv-editor summary")
    lines = page.locator(".qkv-whatif caption").evaluate_all(
        "els => els.map(c => c.getBoundingClientRect().height / parseFloat(getComputedStyle(c).fontSize))")
    assert len(lines) == 2 and max(lines) < 2.0, lines
    over = page.locator(".qkv-edit-table").evaluate_all(
        "ts => ts.map(t => t.getBoundingClientRect().right - t.closest('.qkv-editor-tables').getBoundingClientRect().right)")
    assert len(over) == 2 and max(over) <= 0, over
    walk.no_sideways_scroll("the meetings' editor at 390 px")
    assert [e for e in walk.errors if "400" not in e] == []
    page.close()


def test_the_step_through_follows_the_arrow_keys(browser_context, server):  # noqa: F811
    base, _ = server
    walk = Walk(browser_context, base, 1280, 800)
    page = walk.page
    page.goto(base + "/")
    walk.ready(tab="example")
    stepper = page.locator(".qkv-example-pane .qkv-stepper")
    stepper.wait_for()
    assert stepper.get_attribute("data-step") == "x"
    seen = ["x"]
    for _ in range(7):
        page.keyboard.press("ArrowRight")
        seen.append(stepper.get_attribute("data-step"))
    assert seen == ["x", "w", "qkv", "dot", "scale", "softmax", "weighted", "z"]
    page.keyboard.press("ArrowLeft")
    assert stepper.get_attribute("data-step") == "weighted"
    # the matrix by keyboard: Tab reaches it, the arrows move the chosen cell (love → its strongest key is
    # "learning", cell 1,3), not the step-through; its derivation prints the example's weight
    import qkv.examples

    weights = qkv.examples.run("self-attention")["weights"].value[0]
    canvas = page.locator(".qkv-example-pane .qkv-matrix-canvas")
    assert canvas.get_attribute("tabindex") == "0" and canvas.get_attribute("aria-label")
    canvas.focus()
    cell = page.locator(".qkv-example-pane .qkv-cell")
    assert cell.get_attribute("data-cell") == f"1,{int(np.argmax(weights[1]))}" == "1,3"
    for key, want in (("ArrowDown", "2,3"), ("ArrowLeft", "2,2"), ("ArrowLeft", "2,1"), ("ArrowUp", "1,1"),
                      ("ArrowRight", "1,2"), ("ArrowDown", "2,2"), ("ArrowDown", "3,2"), ("ArrowDown", "3,2")):
        page.keyboard.press(key)
        assert cell.get_attribute("data-cell") == want, key
        i, j = (int(v) for v in want.split(","))
        assert_printed(numbers(page, "weights", ".qkv-example-pane"), [weights[i, j]], want)
    assert stepper.get_attribute("data-step") == "weighted"
    assert walk.state().get("cell") == "3,2"                                # the permalink holds it
    # a query token's label follows that query (the step-through's hint says so): its strongest key
    page.locator(".qkv-example-pane .qkv-mx-row[data-index='2']").click()
    assert cell.get_attribute("data-cell") == f"2,{int(np.argmax(weights[2]))}"
    assert_printed(numbers(page, "weights", ".qkv-example-pane"), [weights[2].max()])
    page.click(".qkv-ex-item[data-example='multi-head']")                  # heads → concat → W_O as steps
    walk.ready(tab="example")
    flow = page.locator(".qkv-example-pane .qkv-stepper")
    flow.wait_for()
    ids = [flow.get_attribute("data-step")]
    for _ in range(2):
        page.keyboard.press("ArrowRight")
        ids.append(flow.get_attribute("data-step"))
    assert ids == ["heads", "concat", "wo"]
    assert walk.errors == []
    page.close()


def test_a_long_text_keeps_its_labels(browser_context, server):  # noqa: F811
    """About 200 tokens: every row and column keeps its token label (the matrix scrolls inside its box)."""
    base, models = server
    text = " ".join(["the cat sat on the mat"] * 33)
    count = len(models["minilm"].tokens(text))
    assert 190 <= count <= 256
    walk = Walk(browser_context, base, 1280, 800)
    page = walk.page
    page.goto(f"{base}/?tab=model&model=minilm&text={text.replace(' ', '+')}&view=head&layer=0&head=0")
    walk.ready(view="head")
    page.wait_for_selector(".qkv-model-pane .qkv-mx-row")
    assert page.locator(".qkv-model-pane .qkv-mx-row").count() == count
    assert page.locator(".qkv-model-pane .qkv-mx-col").count() == count
    walk.no_sideways_scroll("200 tokens")
    walk.click_cell(150, 40)
    page.wait_for_selector('.qkv-model-pane .qkv-cell[data-cell="150,40"]')
    assert walk.errors == []
    page.close()


def test_korean_typed_into_minilm_is_said_to_be_unread(browser_context, server):  # noqa: F811
    """MiniLM takes Hangul apart into jamo and [UNK]: the overview says so (in the page's language), with the
    counts from the tokenizer's own output, and names a model that reads Korean; English text gets no note."""
    from qkv import models
    from qkv.models.reading import READS_KOREAN

    base, _ = server
    tokenizer = models.load("minilm").tokenizer
    text = "고양이가 매트 위에 앉았다."
    encoding = tokenizer.encode(text)
    pieces = [t for t, special in zip(encoding.tokens, encoding.special_tokens_mask) if not special]
    # independently of qkv.models.reading: a piece is unread when it is [UNK] or a Hangul jamo (U+1100–U+11FF)
    unknown = [t for t in pieces if t == "[UNK]"]
    jamo = [t for t in pieces if t != "[UNK]" and any("\u1100" <= c <= "\u11ff" for c in t)]
    unread = unknown + jamo
    assert unknown and jamo and len(unread) <= len(pieces)
    # each kind counted apart (tests/test_korean_serve.py: the note said “{n}개가 [UNK]이거나 쪼개진 조각이다”)
    for lang, words in (("en", ("does not read Korean", f"of the {len(pieces)} pieces", f"{len(unknown)} are [UNK]",
                                f"{len(jamo)} are letters taken apart into jamo")),
                        ("ko", ("한국어를 읽지 못한다", f"조각 {len(pieces)}개(특수 토큰 제외) 가운데",
                                f"[UNK](모르는 조각)이 {len(unknown)}개", f"자모로 쪼개진 글자가 {len(jamo)}개"))):
        walk = Walk(browser_context, base, 390, 844)
        page = walk.page
        page.goto(base + f"/?tab=model&model=minilm&view=overview&lang={lang}&text=" + text)
        walk.ready(view="overview")
        note = page.locator(".qkv-reading")
        assert note.count() == 1 and note.get_attribute("role") == "note"
        said = note.text_content()
        assert all(w in said for w in words) and READS_KOREAN in said and "--model" in said, said
        assert note.get_attribute("data-unread") == str(len(unread))
        walk.no_sideways_scroll(f"the Korean note ({lang})")
        page.goto(base + f"/?tab=model&model=minilm&view=overview&lang={lang}&text={TEXT}")
        walk.ready(view="overview")
        page.wait_for_selector(".qkv-thumb")
        assert page.locator(".qkv-reading").count() == 0
        assert walk.errors == []
        page.close()


def test_serve_pages_reach_four_and_a_half_to_one(browser_context, server):  # noqa: F811
    """Every text of serve's worked-example page and of a model's head (en, ko) against its background; every
    canvas labelled."""
    from browser_support import low_contrast_text, matrix_number_contrasts

    base, _ = server
    for lang in ("en", "ko"):
        walk = Walk(browser_context, base, 1366, 900)
        page = walk.page
        page.goto(base + f"/?lang={lang}")
        walk.ready(tab="example", lang=lang)
        page.wait_for_selector(".qkv-example .qkv-matrix-canvas")
        page.wait_for_timeout(200)
        bad = low_contrast_text(page)
        numbers = matrix_number_contrasts(page)
        assert numbers and all(r >= 4.5 for r, _ in numbers), [n for n in numbers if n[0] < 4.5]
        page.goto(base + f"/?tab=model&model=minilm&view=head&layer=2&head=5&lang={lang}&text={TEXT}")
        walk.ready(view="head")
        page.wait_for_selector(".qkv-matrix-canvas")
        bad += low_contrast_text(page)
        assert sorted(set(bad)) == [], lang
        # every canvas is a labelled image, or hidden inside a labelled button (the overview's thumbnails)
        page.goto(base + f"/?tab=model&model=minilm&view=overview&lang={lang}&text={TEXT}")
        walk.ready(view="overview")
        page.wait_for_selector(".qkv-thumb canvas")
        canvases = page.evaluate("""() => Array.from(document.querySelectorAll("canvas")).map((c) => {
          const b = c.closest("button"); return { named: c.getAttribute("role") === "img" && !!c.getAttribute("aria-label"),
            inside: c.getAttribute("aria-hidden") === "true" && !!(b && b.getAttribute("aria-label")) }; })""")
        assert len(canvases) > 72 and all(c["named"] or c["inside"] for c in canvases)
        page.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_meetings_question_is_named_by_its_tokens_number(browser_context, server, lang):  # noqa: F811
    """serve's group meeting named lot's query row “query 1 'lot'” (its row in Q) where the text says
    “lot is token 4”: the cell of each meeting's question → its last key names the question by its
    place in the sentence, read from the example's TOML (token_base and the scene's tokens)."""
    import tomllib
    from pathlib import Path

    import qkv.examples

    doc = tomllib.loads((Path(qkv.examples.__file__).parent / "group-meeting.toml").read_text(encoding="utf-8"))
    base, _ = server
    walk = Walk(browser_context, base, 1280, 800)
    page = walk.page
    word = {"en": "query", "ko": "Query"}[lang]
    for index, scene in enumerate(doc["scenes"]):
        page.goto(base + f"/?example=group-meeting&lang={lang}")
        walk.ready(tab="example", lang=lang)
        page.select_option(".qkv-pick-part", str(index))
        walk.ready(tab="example", lang=lang)
        page.wait_for_selector(".qkv-example .qkv-matrix-canvas")
        last = len(scene["tokens"]) - 1
        walk.click_cell(0, last, pane=".qkv-example-pane")
        page.wait_for_selector(f'.qkv-example-pane .qkv-cell[data-cell="0,{last}"]')
        title = page.locator(f'.qkv-example-pane .qkv-cell[data-cell="0,{last}"] h3').text_content()
        number = last - scene["tokens"][::-1].index(scene["query"]) + doc["token_base"]
        assert f"{word} {number} “{scene['query']}”" in title, title
    assert walk.errors == []
    page.close()
