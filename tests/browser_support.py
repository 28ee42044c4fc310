"""Chromium for the browser tests: Debian's /usr/bin/chromium driven by Playwright, headless, offline.

Playwright's own browser download does not work here, so the tests launch the system Chromium.
A missing Chromium is a failure with instructions, never a skip: `make test` installs it through
the Makefile's `browser` target.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

@contextlib.contextmanager
def serving(app):
    """`app` served by uvicorn on a free port of 127.0.0.1, as `qkv serve` runs it, in a thread; yields its address
    and stops it on the way out."""
    from qkv import serve

    sock = serve.listen("127.0.0.1", 0)
    runner = serve.server(app, sock)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not runner.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        runner.should_exit = True
        thread.join(10)
        sock.close()


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic", "--disable-extensions",
                 "--disable-default-apps", "--no-default-browser-check"]


def chromium_path() -> str:
    """The system Chromium; fails the test (not a skip) with what to run when it is missing."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium") or "", shutil.which("chromium-browser") or ""):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("Chromium is not installed, so the browser tests cannot run. Install it with `make browser` "
                "(apt-get install chromium) — `make test` does this first.", pytrace=False)


class _Chromium:
    """The one Playwright driver and Chromium of this process (an xdist worker), started by the first browser test
    that runs in it and closed when the session ends; each test file gets a fresh context of its own from it.

    Chromium's start-up cost ~3.4 CPU-s and Playwright's driver (a Node process) more, once per file before.
    Playwright's sync API marks its event loop as the thread's running loop between its calls (see
    playwright/_impl/_greenlets.py, wait_for_future), so while it lives `asyncio.run` in a later, non-browser test
    file of the same worker would refuse to start ("cannot be called from a running event loop"). The loop is
    therefore marked running only while a browser file runs: resumed when its context opens, cleared when it
    closes, as it was when each file started and stopped its own Playwright."""

    playwright = None
    browser = None

    @classmethod
    def resume(cls, config):
        if cls.browser is not None and cls.browser.is_connected():
            asyncio._set_running_loop(cls.playwright._loop)
            return cls.browser
        if cls.playwright is not None:          # Chromium went away (a crash): start a fresh one
            cls.close()
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            pytest.fail("the playwright Python package is missing; install the test extras: pip install -e '.[test]'",
                        pytrace=False)
        executable = chromium_path()
        cls.playwright = sync_playwright().start()
        if not getattr(config, "_qkv_chromium_cleanup", False):
            config._qkv_chromium_cleanup = True
            config.add_cleanup(cls.close)
        cls.browser = cls.playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        return cls.browser

    @staticmethod
    def pause():
        asyncio._set_running_loop(None)

    @classmethod
    def close(cls):
        playwright, browser, cls.playwright, cls.browser = cls.playwright, cls.browser, None, None
        if playwright is None:
            return
        asyncio._set_running_loop(playwright._loop)
        try:
            if browser is not None and browser.is_connected():
                browser.close()
        finally:
            playwright.stop()
            asyncio._set_running_loop(None)


VIEWPORT = {"width": 1400, "height": 1000}


def keep_screenshot(target, name: str, **options) -> None:
    """A screenshot of ``target`` (a page or a locator) for a person to look at, written to $QKV_SCREENSHOTS/NAME.png
    when that is set; nothing in the suite reads it, so a run without the variable takes none (a full-page capture of
    a 1400 × 4227 page and its PNG encoding cost Chromium ~0.46 CPU-s, 7 December). A screenshot a test checks (not
    blank, a colour read back) is taken by that test as before."""
    folder = os.environ.get("QKV_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        target.screenshot(path=str(Path(folder) / f"{name}.png"), **options)


class _Tab:
    """A Playwright Page handed out by _Tabs.new_page: the page itself for everything a test does with it, except that
    the listeners and routes the test adds are its own, and close() gives the tab back to its file instead of
    closing it: the test's listeners and routes are removed, the tab leaves the test's document for about:blank (its
    scripts and state unloaded), the mouse goes to (0, 0) and the window to the context's size, as a new tab has them."""

    def __init__(self, page, tabs):
        self._page, self._tabs, self._listeners = page, tabs, []

    def on(self, event, handler):
        self._listeners.append((event, handler))
        self._page.on(event, handler)

    def close(self, **_):
        page, self._page = self._page, None
        if page is None:
            return
        try:
            for event, handler in self._listeners:
                page.remove_listener(event, handler)
            page.unroute_all(behavior="ignoreErrors")
            page.goto("about:blank")
            page.mouse.move(0, 0)
            page.set_viewport_size(VIEWPORT)
        except Exception:                   # a tab in a state we cannot vouch for is closed, not handed out again
            page.close()
            raise
        self._tabs.free.append(page)

    def __getattr__(self, name):
        if self._page is None:
            raise RuntimeError(f"page.{name}: this tab was closed")
        return getattr(self._page, name)


class _Tabs:
    """A test file's browser context (Playwright's BrowserContext for everything else) whose new_page() reuses a tab
    that an earlier test of the file closed. A new tab costs Chromium a renderer's start (about 0.6 CPU-s more than
    opening the next page in a tab that exists, 7 December, load ~18); each test still gets a document of its own."""

    def __init__(self, context):
        self.context, self.free = context, []

    def new_page(self):
        return _Tab(self.free.pop() if self.free else self.context.new_page(), self)

    def __getattr__(self, name):
        return getattr(self.context, name)


@pytest.fixture(scope="module")
def browser_context(request):
    """A fresh headless Chromium context (its own storage, cache and permissions) for one test file, in the
    Chromium this worker shares between its browser files (_Chromium); its tabs are reused between the file's
    tests (_Tabs)."""
    browser = _Chromium.resume(request.config)
    try:
        context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
        try:
            yield _Tabs(context)
        finally:
            context.close()
    finally:
        _Chromium.pause()


class OpenPage:
    """A page opened from disk, recording every request it makes and every error it logs."""

    def __init__(self, context, path: Path, viewport: tuple[int, int] | None = None):
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page = context.new_page()
        if viewport is not None:
            self.page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_selector('.qkv-view[data-ready="1"]', timeout=120_000)

    def overflow(self) -> int:
        """How many pixels the document is wider than the window (0: no sideways scrolling)."""
        return int(self.page.evaluate("() => Math.max(document.documentElement.scrollWidth, "
                                      "document.body.scrollWidth) - window.innerWidth"))

    def outside_requests(self) -> list[str]:
        return [url for url in self.requests if not url.startswith(("file:", "data:", "blob:"))]

    def close(self) -> None:
        self.page.close()


# ---------------------------------------------------------------------------------------------- contrast
# What a reader sees as text: every visible element's own text (and the step list's "1." numbers, written by
# ::before), with its colour and the colour behind it, read from the page's computed styles. The backdrop is
# found by walking up to the first opaque background (translucent ones are blended over what is behind them);
# a gradient background (the hatched masked tokens) gives each of its colours, and the worst one counts.
# Disabled controls are left out: WCAG's contrast rule exempts inactive components. The records come back as one
# JSON string: Playwright checks every value of a structured result against its protocol in Python (about
# 200,000 checks for the ~1,100 texts of a practice page, most of the Python side's CPU time in a browser test).
_TEXT_COLOURS_JS = r"""
() => {
  const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const v = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const over = (top, under) => top[3] >= 1 ? top.slice(0, 3) : top.slice(0, 3).map((c, k) => c * top[3] + under[k] * (1 - top[3]));
  // what is behind each element, from the root down: an element's backdrop is its parent's with its own
  // background laid over it, kept per element so that a page's thousands of texts walk their chain once
  const behind = new Map();
  function backdrops(el) {
    if (!el || el.nodeType !== 1) return [[255, 255, 255]];
    if (behind.has(el)) return behind.get(el);
    const under = backdrops(el.parentElement);
    const st = getComputedStyle(el);
    const grads = (st.backgroundImage.match(/rgba?\([^)]+\)/g) || []).map(parse);
    const bg = parse(st.backgroundColor);
    let here = under;
    if (bg && bg[3] > 0) here = under.map((u) => over(bg, u));
    if (grads.length) here = grads.map((g) => over(g, here[0]));
    behind.set(el, here);
    return here;
  }
  const out = [];
  function visible(el) {
    const r = el.getBoundingClientRect(), st = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && st.visibility !== "hidden" && st.display !== "none" && !el.closest("[hidden]");
  }
  function add(el, text, colour) {
    const fg = parse(colour); if (!fg) return;
    for (const bg of backdrops(el)) out.push({ text: text.slice(0, 40), fg: over(fg, bg), bg: bg,
      where: (el.className && String(el.className)) || el.tagName.toLowerCase() });
  }
  for (const el of document.querySelectorAll("body *")) {
    if (["SCRIPT", "STYLE", "CANVAS", "NOSCRIPT"].includes(el.tagName)) continue;
    if (el.closest(":disabled")) continue;
    const own = Array.from(el.childNodes).filter((n) => n.nodeType === 3).map((n) => n.textContent).join("").trim();
    const field = (el.tagName === "INPUT" && ["text", "search", "number", ""].includes(el.type)) || el.tagName === "TEXTAREA" || el.tagName === "SELECT";
    const text = field ? (el.value || el.placeholder || "") : own;
    if (text && visible(el)) add(el, text, getComputedStyle(el).color);
    const before = getComputedStyle(el, "::before");
    if (before.content && before.content !== "none" && before.content !== "normal" && before.content !== '""' && visible(el))
      add(el, "::before " + before.content, before.color);
  }
  return JSON.stringify(out);
}
"""


def wcag_contrast(a, b) -> float:
    """WCAG 2.x contrast ratio of two sRGB colours (0…255 each), written out from the definition (relative
    luminance with the sRGB transfer curve), apart from qkv's own copies in style.py and views.js."""
    def lum(c):
        lin = [(x / 255) / 12.92 if x / 255 <= 0.04045 else ((x / 255 + 0.055) / 1.055) ** 2.4 for x in c[:3]]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    la, lb = lum(a), lum(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def low_contrast_text(page, ratio: float = 4.5) -> list[str]:
    """Every visible text on ``page`` whose colour contrasts less than ``ratio`` with what is behind it."""
    bad = []
    for item in json.loads(page.evaluate(_TEXT_COLOURS_JS)):
        r = wcag_contrast(item["fg"], item["bg"])
        if r < ratio:
            bad.append(f"{item['text']!r} ({item['where']}): {r:.2f}:1, text {[round(c) for c in item['fg']]} "
                       f"on {[round(c) for c in item['bg']]}")
    return sorted(set(bad))


_MATRIX_INKS_JS = r"""
() => Array.from(document.querySelectorAll("canvas.qkv-mx-cells")).filter((c) => c.qkvMatrix).map((c) => {
  const view = c.qkvMatrix, g = c.getContext("2d"), dpr = c.width / parseFloat(c.style.width), cell = view.geometry.cell;
  return view.inks.map((k) => { const x = Math.round((k.j * cell + 6) * dpr), y = Math.round((k.i * cell + 6) * dpr);
    return { i: k.i, j: k.j, ink: k.ink, fill: k.fill, pixel: Array.from(g.getImageData(x, y, 1, 1).data).slice(0, 3) }; });
}).map((v) => JSON.stringify(v))
"""


def matrix_number_contrasts(page) -> list[tuple[float, dict]]:
    """For every number the matrix views wrote on their canvases: (contrast of its text colour with the cell's
    colour as painted on the canvas, the record). The cell colour is read back from the canvas's pixels."""
    out = []
    for view in map(json.loads, page.evaluate(_MATRIX_INKS_JS)):
        for k in view:
            ink = (0, 0, 0) if k["ink"] in ("#000", "#000000") else (255, 255, 255) if k["ink"] in ("#fff", "#ffffff") else None
            assert ink is not None, k
            out.append((wcag_contrast(ink, k["pixel"]), k))
    return out
