"""Helpers of the ``memrun view`` tests: a served folder of real runs, page checks, screenshots."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from accuracy.helpers import gold_judge, is_judge
from report.browser import Page, watched
from servers.openai_server import prompt_text

WIDTHS = (1400, 390)
"""Desktop and phone widths every page is checked at (no horizontal page scroll)."""


def screenshot_dir(fallback: Path) -> Path:
    """``$MEMRUN_SCREENSHOTS`` (CI keeps it as an artifact), else ``fallback``."""
    folder = Path(os.environ.get("MEMRUN_SCREENSHOTS") or fallback)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class RepeatingReader:
    """A loopback LLM: the judge grades against the gold; the reader's n-th call with one
    prompt replies ``answer <n> to: <question>`` so each repeat has its own reply."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        text = prompt_text(body)
        if is_judge(text):
            return gold_judge(text)
        with self.lock:
            self.seen[text] += 1
            n = self.seen[text]
        question = text.split("Question:", 1)[-1].split("\n", 1)[0].strip()
        return f"answer {n} to: {question}"


@contextmanager
def serving(root: Path) -> Iterator[str]:
    """``memrun view``'s app on a free 127.0.0.1 port, in a thread; yields its base URL."""
    from memrun.view.app import bind, server

    sock = bind(0)
    srv = server(root, sock)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(1200):  # up to 60 s on a loaded machine
        if srv.started:
            break
        threading.Event().wait(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        srv.should_exit = True
        thread.join(10)
        sock.close()


def open_url(browser: Any, url: str, width: int = 1400) -> Page:
    """Open ``url`` (loopback only; any other request is aborted and recorded), errors recorded."""
    loaded = watched(browser, "http://127.0.0.1:", width)
    loaded.page.goto(url)
    loaded.page.wait_for_selector("body[data-ready='1']")  # browser.WAIT_MS
    return loaded


def check_fits(page: Page, shots: Path, name: str) -> None:
    """At each of :data:`WIDTHS`: no horizontal page scroll; a full-page screenshot saved."""
    for width in WIDTHS:
        page.page.set_viewport_size({"width": width, "height": 900})
        sizes = page.page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        page.page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
        assert sizes[0] <= sizes[1], f"{name} at {width} px scrolls sideways: {sizes}"
    page.page.set_viewport_size({"width": 1400, "height": 900})
