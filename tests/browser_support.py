"""Chromium for the browser tests: Debian's /usr/bin/chromium driven by Playwright, headless, offline.

Playwright's own browser download does not work here, so the tests launch the system Chromium.
A missing Chromium is a failure with instructions, never a skip: `make test` installs it through
the Makefile's `browser` target.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

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


@pytest.fixture(scope="module")
def browser_context():
    """A fresh headless Chromium profile (persistent context in a temporary --user-data-dir)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the playwright Python package is missing; install the test extras: pip install -e '.[test]'",
                    pytrace=False)
    executable = chromium_path()
    with tempfile.TemporaryDirectory(prefix="qkv-chromium-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            user_data_dir=profile, executable_path=executable, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
        try:
            yield context
        finally:
            context.close()


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
