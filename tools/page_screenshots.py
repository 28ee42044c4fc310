"""Retake the docs' screenshots of the worked examples' offline pages (the ones python -m qkv.viz.gallery --pages
does not take): ``python tools/page_screenshots.py docs``, then look at each file.

Each page is what ``qkv example NAME --format html --lang L`` writes, opened in Debian's Chromium (Playwright,
headless, offline, as tests/browser_support.py launches it):

  page-steps-{1..4}-1280.png        self-attention (en): the step-through at q·k, ÷ √d_k, softmax and z
  page-steps-ko-390.png             self-attention (ko) on a phone, scrolled to the step-through at q·k
  page-multi-head-1280.png          multi-head (en): the top of the page
  page-group-meeting-ko-{1280,390}  group meeting (ko): the top of the page
  page-whatif-ko-{1280,390}.png     group meeting (ko): its what-if panel
  page-whatif-scale-1280.png        self-attention (en): the score-scale what-if panel
  page-whatif-scale-ko-390.png      self-attention (ko) on a phone: the same panel
  page-cross-attention-ko-390.png   cross-attention (ko) on a phone: the top of the page
  page-practice-ko-390.png          projection (ko) on a phone: the practice panel after three wrong answers

Prints each file it writes. The four page kinds of python -m qkv.viz.gallery docs --pages (example, model,
model cell, 512 tokens) are that module's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

DESKTOP, PHONE = (1280, 800), (390, 844)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-extensions"]


def example_html(name: str, lang: str, folder: Path) -> Path:
    """The offline page `qkv example NAME --format html --lang LANG` writes (the command itself, so the
    screenshot is of what a reader gets)."""
    path = folder / f"{name}-{lang}.html"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "qkv", "example", name, "--format", "html", "--lang", lang,
                        "--out", str(path)], check=True)
    return path


def take(out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        folder = Path(tmp)
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)

        def page_of(name: str, lang: str, size: tuple[int, int]):
            page = browser.new_page(viewport={"width": size[0], "height": size[1]})
            page.goto(example_html(name, lang, folder).as_uri())
            page.wait_for_selector('.qkv-view[data-ready="1"]', timeout=120_000)
            return page

        def shot(target, file: str, *, element: bool = True) -> None:
            path = out / file
            if element:
                target.scroll_into_view_if_needed()
                target.screenshot(path=str(path))
            else:
                target.screenshot(path=str(path), full_page=False)
            written.append(path)

        def step_to(page, step_id: str) -> None:
            stepper = page.locator(".qkv-stepper").first
            for _ in range(20):
                if stepper.get_attribute("data-step") == step_id:
                    return
                stepper.locator(".qkv-next").click()
            raise RuntimeError(f"the step-through has no step {step_id!r}")

        page = page_of("self-attention", "en", DESKTOP)
        for n, step in enumerate(("dot", "scale", "softmax", "z"), 1):
            step_to(page, step)
            shot(page.locator(".qkv-stepper").first, f"page-steps-{n}-1280.png")
        shot(page.locator(".qkv-whatif").first, "page-whatif-scale-1280.png")
        page.close()

        page = page_of("self-attention", "ko", PHONE)
        step_to(page, "dot")
        page.locator(".qkv-stepper").first.evaluate("(e) => e.scrollIntoView()")
        shot(page, "page-steps-ko-390.png", element=False)
        shot(page.locator(".qkv-whatif").first, "page-whatif-scale-ko-390.png")
        page.close()

        page = page_of("multi-head", "en", DESKTOP)
        shot(page, "page-multi-head-1280.png", element=False)
        page.close()

        for size in (DESKTOP, PHONE):
            page = page_of("group-meeting", "ko", size)
            shot(page, f"page-group-meeting-ko-{size[0]}.png", element=False)
            shot(page.locator(".qkv-whatif").first, f"page-whatif-ko-{size[0]}.png")
            page.close()

        page = page_of("cross-attention", "ko", PHONE)
        shot(page, "page-cross-attention-ko-390.png", element=False)
        page.close()

        page = page_of("projection", "ko", PHONE)
        box = page.locator(".qkv-practice").first
        for typed in ("2", "2", "2"):                       # three wrong answers: the slip named, the answer shown
            box.locator(".qkv-pr-input").fill(typed)
            box.locator(".qkv-pr-check").click()
        shot(box, "page-practice-ko-390.png")
        page.close()
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where the PNG files go (docs/)")
    for path in take(parser.parse_args(argv).folder):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
