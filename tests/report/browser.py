"""A real headless Chromium (Debian's package) driven by Playwright, for the report pages.

Every request that is not a file: URL is aborted and recorded, and every console error
and page error is recorded: a test asserts both lists are empty. Under
MEMRUN_REQUIRE_DATA=1 (CI) a missing Chromium or Playwright fails instead of skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser")
WAIT_MS = 60_000
"""How long a page's waits (loading, clicks, selectors, expected counts) may take before
they fail: only against a hang, since a loaded CI machine can stall a browser for seconds."""


def chromium_path() -> str | None:
    """The Debian chromium binary, or None."""
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def _missing(why: str) -> None:
    if os.environ.get("MEMRUN_REQUIRE_DATA") == "1":
        pytest.fail(f"{why}; CI must run the browser tests (apt-get install -y chromium; pip install playwright)")
    pytest.skip(why)


@dataclass
class Page:
    """A loaded page with what it tried to fetch and what it logged as errors."""

    page: Any
    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def check_clean(self) -> None:
        assert self.blocked == [], f"the page made network requests: {self.blocked}"
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium shared by a module's tests."""
    path = chromium_path()
    if path is None:
        _missing("no chromium on PATH")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def watched(browser: Any, allow: str, width: int = 1280) -> Page:
    """A new page recording console errors and page errors; requests to URLs not starting
    with ``allow`` are aborted and recorded."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(WAIT_MS)
    loaded = Page(page)
    page.on("console", lambda m: loaded.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: loaded.errors.append(str(e)))

    def route(r: Any) -> None:
        if r.request.url.startswith(allow):
            r.continue_()
        else:
            loaded.blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return loaded


def open_page(browser: Any, html: Path) -> Page:
    """Open ``html`` from disk with every non-file request aborted; waits until the table script ran."""
    loaded = watched(browser, "file:")
    loaded.page.goto(html.resolve().as_uri())
    loaded.page.wait_for_selector("body[data-ready='1']")
    return loaded


def rows_shown(page: Page) -> int:
    return page.page.locator("tbody tr.row").count()


def wait_rows(page: Page, n: int) -> None:
    """Wait until the table shows ``n`` rows (the search box filters after a short pause)."""
    from playwright.sync_api import expect

    expect(page.page.locator("tbody tr.row")).to_have_count(n, timeout=WAIT_MS)
