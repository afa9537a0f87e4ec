"""Real-browser tests: Debian's headless Chromium driven by Playwright (never a downloaded browser).

The ``browser_page`` fixture (registered in ``tests/conftest.py``) yields a :class:`BrowserPage`: a fresh
1400×900 page in its own browser context, with every console error, uncaught page error and failed
request collected in ``console_errors``. Every request that is not ``file:``, ``data:``, ``blob:`` or
``about:`` is aborted and recorded there too, so a page that reaches for a CDN or any other URL fails
its test (the reports are meant to be self-contained files).

The browser is ``$ARGUS_CHROMIUM``, else ``chromium`` on the PATH (Debian: ``apt-get install chromium``;
``.ci/run`` installs it and sets ``ARGUS_CHROMIUM``). Without one the tests are skipped, except under CI
(``CI`` set), where a missing browser fails them.

    def test_page(browser_page, tmp_path):
        browser_page.open(tmp_path / "page.html")
        browser_page.screenshot("page")
        assert browser_page.console_errors == []
        assert browser_page.page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

VIEWPORT = {"width": 1400, "height": 900}
"""The page size every browser test sees."""

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
"""URL schemes a page may load; anything else (http, https, ws, …) is aborted and recorded."""

LAUNCH_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
"""Chromium flags for running as root in a container (no user namespaces, a small /dev/shm)."""

TIMEOUT_MS = 15_000
"""Playwright's default timeout for each action on the page."""


@dataclass
class BrowserPage:
    """One browser page of a test, its collected errors and its screenshot folder."""

    page: Page
    console_errors: list[str]
    shots: Path

    def open(self, path: Path) -> None:
        """Load a local file and wait for its ``load`` event (images included)."""
        self.page.goto(Path(path).resolve().as_uri(), wait_until="load")

    def screenshot(self, name: str) -> Path:
        """A full-page PNG of the current page as ``shots/<name>.png``; returns its path."""
        self.shots.mkdir(parents=True, exist_ok=True)
        out = self.shots / (name if name.endswith(".png") else f"{name}.png")
        self.page.screenshot(path=str(out), full_page=True)
        return out


def chromium_path() -> str | None:
    """``$ARGUS_CHROMIUM`` when it names an existing file (or a command on the PATH), else ``chromium`` on the PATH."""
    named = os.environ.get("ARGUS_CHROMIUM")
    if named:
        return named if Path(named).is_file() else shutil.which(named)
    return shutil.which("chromium")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI installs it: see .ci/run)", pytrace=False)
    pytest.skip(reason)


def _watch(page: Page, errors: list[str]) -> None:
    def on_console(msg) -> None:
        if msg.type == "error":
            loc = msg.location or {}
            where = f" ({loc.get('url')}:{loc.get('lineNumber')})" if loc.get("url") else ""
            errors.append(f"console error: {msg.text}{where}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("requestfailed", lambda req: errors.append(f"request failed: {req.method} {req.url} ({req.failure})"))


@pytest.fixture
def browser_page(tmp_path):
    """A fresh :class:`BrowserPage` in headless Chromium; closed after the test."""
    exe = chromium_path()
    if exe is None:
        named = os.environ.get("ARGUS_CHROMIUM")
        _unavailable(f"no Chromium: ARGUS_CHROMIUM={named!r} is not a file" if named else
                     "no Chromium on the PATH (apt-get install chromium) and ARGUS_CHROMIUM not set")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -r requirements.lock)")

    errors: list[str] = []

    def guard(route) -> None:
        url = route.request.url
        if url.startswith(LOCAL_SCHEMES):
            route.continue_()
        else:
            errors.append(f"blocked network request: {route.request.method} {url}")
            route.abort("blockedbyclient")

    def guard_socket(ws) -> None:
        errors.append(f"blocked web socket: {ws.url}")
        ws.close()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=LAUNCH_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            context.route("**/*", guard)
            context.route_web_socket("**/*", guard_socket)
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            _watch(page, errors)
            yield BrowserPage(page=page, shots=tmp_path / "screenshots", console_errors=errors)
            context.close()
        finally:
            browser.close()
