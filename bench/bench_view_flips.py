"""memrun view's flips page for two real LoCoMo recall runs, after the runs table.

    MEMRUN_DATA_DIR=/work/shared/datasets python bench/bench_view_flips.py [--repeats 5]

Makes two LoCoMo recall runs (``arm=bm25`` and ``arm=bm25_nostop``), starts ``memrun view``
on them (its own process, as a user would) and drives Debian's headless Chromium
(Playwright): the runs table is loaded, the two runs ticked, and the "flips" button
clicked. Measured: from the click until the flips page is drawn (``body[data-ready]``),
wall clock in this process; the first flips page of the session (the comparison's modules
imported in the background at start-up, the runs read for the first time) apart from the
median of ``--repeats`` more (back to the runs table, click again).

Peer: the same flips from the command line, ``memrun compare A B --flips`` as a whole
process (imports, the comparison with its bootstrap, the flips listed), the way a user
without memrun view gets them; median of ``--repeats``. Target (issue 34): the first flips
page under 1 s after the runs table.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import run_child  # noqa: E402
from bench_view import _env, page_ready, start  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if not os.environ.get("MEMRUN_DATA_DIR"):
        raise SystemExit("set MEMRUN_DATA_DIR to the folder holding locomo10.json")
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="bench-flips-"))
    try:
        outputs = tmp / "outputs"
        rels = []
        for arm in ("bm25", "bm25_nostop"):
            folder = outputs / "locomo" / arm / "recall"
            subprocess.run([sys.executable, "-m", "memrun", "progress=false", "benchmark=locomo", f"arm={arm}",
                            f"hydra.run.dir={folder}"], env=_env(), check=True, capture_output=True)
            rels.append(folder.relative_to(outputs).as_posix())
        os.environ["XDG_CACHE_HOME"] = str(tmp / "user-cache")
        view, line = start([sys.executable, "-m", "memrun", "view", str(outputs)], "http://")
        url = line.split("at ", 1)[1].split()[0]
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                            args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                time.sleep(3)  # memrun view imports the pages' modules in the background at start

                def flips() -> tuple[float, int]:
                    table = page_ready(page, url)
                    for rel in rels:
                        page.locator(f"input[data-path='{rel}']").check()
                    t = time.perf_counter()
                    page.click("#flips")
                    page.wait_for_url("**/flips?**")
                    page.wait_for_selector("body[data-ready='1']")
                    return time.perf_counter() - t, page.locator("tbody tr.row").count() if table else 0

                first, rows = flips()
                total = page.text_content("#count")
                again = statistics.median(flips()[0] for _ in range(args.repeats))
                browser.close()
        finally:
            view.terminate()
            view.wait()
        a, b = (str(outputs / r) for r in rels)
        peer = [run_child(["memrun", "compare", a, b, "--flips"], ok=(0, 1, 2)).seconds for _ in range(args.repeats)]
        peer_s = statistics.median(peer)
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"flips of locomo bm25 vs bm25_nostop: {total} flips ({rows} rows drawn)")
        print(f"{'':44}{'memrun view':>12}{'compare --flips':>17}{'ratio':>8}")
        print(f"{'first flips page, click to drawn (s)':44}{first:>12.2f}{peer_s:>17.2f}{peer_s / first:>7.1f}x")
        print(f"{'later flips pages, median (s)':44}{again:>12.2f}{peer_s:>17.2f}{peer_s / again:>7.1f}x")
        print(f"first flips page under 1 s after the runs table: {'met' if first < 1 else 'MISSED'} ({first:.2f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
