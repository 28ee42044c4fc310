"""Draw every figure of docs/pictures.md: ``python -m qkv.viz.gallery docs`` (or ``make pictures``).

Writes PNG files into the folder given, from the shipped worked examples, the causal user example
(examples/my-example.toml, when run from the repository), and MiniLM when it is installed. With
``--pages`` it also opens the interactive pages in Chromium (Playwright) and saves screenshots at
1280 × 800 and 390 × 844. Prints each file it writes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

__all__ = ["draw_figures", "screenshot_pages", "main"]


def _example(name: str):
    import qkv.examples

    return qkv.examples.run(name)


def _user_example(path: Path):
    from ..examples.runner import trace_spec
    from ..spec import parse_spec, read_document

    return trace_spec(parse_spec(read_document(path), source=str(path), base=path.parent))


def draw_figures(folder: Path, repo: Path | None = None) -> list[Path]:
    """Every kind of figure, as PNG in ``folder``; returns the paths written."""
    from . import attention_grid, save_figure, write_figure

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("self-attention", "cross-attention", "multi-head", "projection", "group-meeting"):
        written.append(save_figure(_example(name), folder / f"pictures-{name}.png"))
    for name in ("self-attention", "cross-attention", "multi-head", "group-meeting"):
        written.append(save_figure(_example(name), folder / f"pictures-{name}-ko.png", lang="ko"))
    from ..translator import explain as translator_explain, model as translator_model

    translation = translator_model.load().translate("I love you", "ja")
    written.append(write_figure(translator_explain.alignment_figure(translation), folder / "pictures-translator.png"))
    user = (repo or Path.cwd()) / "examples" / "my-example.toml"
    if user.is_file():                      # two heads, causal mask: the whole layer with the mask hatched
        written.append(save_figure(_user_example(user), folder / "pictures-causal-two-heads.png"))
    try:
        import qkv.models

        model = qkv.models.load("minilm")
    except Exception as error:              # MiniLM is an optional extra: say so, draw the rest
        print(f"skipping the MiniLM figures: {error}", file=sys.stderr)
    else:
        text = "The cat sat on the mat because it was warm."
        written.append(save_figure(model.trace(text, layer=2, head=5, query="cat"), folder / "pictures-minilm-l2-h5.png"))
        grid = attention_grid(model.attention_weights(text), model.tokens(text), title="MiniLM: every layer × head")
        written.append(write_figure(grid, folder / "pictures-minilm-grid.png"))
    return written


def screenshot_pages(folder: Path) -> list[Path]:
    """The example page, a model page and a 512-token page at 1280 × 800 and 390 × 844 (Chromium)."""
    import numpy as np
    from playwright.sync_api import sync_playwright

    import qkv
    from ..explain import render
    from ..explain.page import attention_page, trace_html

    trace = qkv.Trace("two heads, causal", meta={"tokens": ["I", "love", "machine", "learning", "!"],
                                                 "kind": "self-attention", "query": 1})
    qkv.MultiHeadAttention.random(8, n_heads=2, seed=3)(np.random.default_rng(3).standard_normal((5, 8)),
                                                        causal=True, record=trace)
    # the page of `qkv inspect "The cat sat on the mat." --query cat --format html`: MiniLM, every step recorded
    from ..models import load

    model = load("minilm").trace("The cat sat on the mat.", query="cat", derivation=True)
    model.title = "minilm — “The cat sat on the mat.”"
    logits = 2.0 * np.random.default_rng(2).standard_normal((1, 2, 512, 512))
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    pages = {"example": render(trace, "html"), "model": trace_html(model),
             "tokens512": attention_page(weights, [f"token{i}" for i in range(512)], title="512 tokens")}
    written = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--headless"])
        for name, html in pages.items():
            path = Path(tmp) / f"{name}.html"
            path.write_text(html, encoding="utf-8")
            for width, height in ((1280, 800), (390, 844)):
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(path.as_uri())
                page.wait_for_selector('.qkv-view[data-ready="1"]', timeout=120_000)
                if name == "model":
                    page.click(".qkv-left .qkv-tok[data-index='5']")
                    page.evaluate("() => document.querySelector('.qkv-view').qkv.showCell(2, 1)")
                    cell = folder / f"page-model-cell-{width}.png"
                    page.locator(".qkv-cell").screenshot(path=str(cell))
                    written.append(cell)
                page.evaluate("() => window.scrollTo(0, 0)")
                target = folder / f"page-{name}-{width}.png"
                page.screenshot(path=str(target), full_page=False)
                written.append(target)
                page.close()
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qkv.viz.gallery", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where the PNG files go (docs/)")
    parser.add_argument("--pages", action="store_true", help="also screenshot the interactive pages (Chromium)")
    args = parser.parse_args(argv)
    written = draw_figures(args.folder)
    if args.pages:
        written += screenshot_pages(args.folder)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
