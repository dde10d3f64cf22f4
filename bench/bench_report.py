"""memrun report on a 1,986-item accuracy run: render time (whole process) and time to interactive.

    python bench/bench_report.py [RUN] [--repeats 5]

Without RUN, makes one: LoCoMo (``$MEMRUN_DATA_DIR``, else ../shared/datasets) on the
accuracy axis with the BM25 arm, the reader and judge answered by the loopback server
(tests/servers/openai_server.py, its own process; no real API). Then:

* render: ``memrun report RUN`` as a fresh process, timed from start to exit (imports
  included), median of ``--repeats``; the page's size;
* interactive: Debian's headless Chromium (Playwright, every non-file request aborted)
  opens the page from disk, timed from navigation start until the table script has run
  (``body[data-ready]``, rows drawn and filters built), median of ``--repeats`` fresh pages.

Targets (issue 14): render < 2 s, interactive < 1 s, a 2,000-item page well under 5 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_run(folder: Path) -> Path:
    """A LoCoMo accuracy run against the loopback server; returns its folder."""
    data = os.environ.get("MEMRUN_DATA_DIR") or str((ROOT.parent / "shared" / "datasets").resolve())
    server = subprocess.Popen([sys.executable, str(ROOT / "tests/servers/openai_server.py")],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])  # "PORT <n>"
        env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
               "OPENAI_API_KEY": "sk-test-loopback-0123456789abcdef"}
        run = folder / "run"
        subprocess.run([sys.executable, "-m", "memrun", "axis=accuracy", "benchmark=locomo", "judge=gpt41",
                        f"data_dir={data}", "progress=false", f"cache_dir={folder / 'cache'}", f"hydra.run.dir={run}"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        return run
    finally:
        server.terminate()
        server.wait()


def render_seconds(run: Path, repeats: int) -> list[float]:
    """Wall time of ``memrun report RUN`` as a whole process, per repeat."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "memrun", "report", str(run)], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times


def interactive_seconds(page_file: Path, repeats: int) -> list[float]:
    """Seconds from navigation to a drawn, filterable table in headless Chromium, per fresh page."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("no chromium on PATH: apt-get install -y chromium")
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        for _ in range(repeats + 1):  # the first load warms the browser up and is not counted
            page = browser.new_page()
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
            t0 = time.perf_counter()
            page.goto(page_file.resolve().as_uri())
            page.wait_for_selector("body[data-ready='1']")
            times.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    return times[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", type=Path, help="an accuracy run folder (default: make one)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or make_run(Path(tmp))
        render = render_seconds(run, args.repeats)
        page = run / "report.html"
        interactive = interactive_seconds(page, args.repeats)
        rows = subprocess.run([sys.executable, "-c", "import sys, pyarrow.parquet as pq; "
                               "print(pq.read_metadata(sys.argv[1]).num_rows)", str(run / "items.parquet")],
                              check=True, capture_output=True, text=True).stdout.strip()
        print(f"run: {rows} rows; page {page.stat().st_size / 1e6:.2f} MB")
        print(f"memrun report (whole process): median {statistics.median(render):.2f} s "
              f"(min {min(render):.2f}, max {max(render):.2f}; target < 2 s)")
        print(f"time to interactive in Chromium: median {statistics.median(interactive):.2f} s "
              f"(min {min(interactive):.2f}, max {max(interactive):.2f}; target < 1 s)")


if __name__ == "__main__":
    main()
