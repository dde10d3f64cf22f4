"""memrun view in a browser: the runs table of 500 run folders and an item's drill-down.

    python bench/bench_view.py [--runs 500] [--repeats 7]

Makes a folder of runs: one synthetic retrieval run copied into ``--runs`` run folders,
plus one synthetic accuracy run (repeats=2, a second judge) whose reader and judge are
the loopback server (tests/servers/openai_server.py, its own process; no real API).
Starts ``memrun view`` on it (its own process, as a user would) and drives Debian's
headless Chromium (Playwright):

* runs table: navigation start until the table is drawn (``body[data-ready]``). The first
  load ever (a fresh user cache) reads every run's footer (its sealed key-value bytes)
  and summary.json; later loads re-list the folder and re-read only changed runs (median
  of ``--repeats``); a new session starts from the runs index memrun view kept;
* drill-down: from pressing ``j`` on an item page until the next item's page is ready,
  with its reader and judge prompts and replies rebuilt and looked up in the call cache
  (median over ``--repeats`` steps; the run's first drill-down, which loads the
  benchmark and opens the cache, is shown apart).

Peer: the file system as the index (what a user has without memrun view): Python's
``http.server`` listing the folder of the same 500 runs, in the same browser.
Targets (issue 24): runs table < 1 s, drill-down < 200 ms.

When BEAM 500K is under ``$MEMRUN_DATA_DIR`` (``beam/chats/500K``), also: the benchmark
groups a first drill-down reads (:class:`memrun.view.calls.ItemGroups`: up to the item's
conversation) beside reading every group (what the view did before), for the first and
the last item, in this process.
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


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **(extra or {})}


def make_outputs(folder: Path, n: int) -> Path:
    """``n`` retrieval run folders and one accuracy run under ``folder/outputs``."""
    out = folder / "outputs"
    first = out / "synthetic" / "bm25" / "0000"
    subprocess.run([sys.executable, "-m", "memrun", "progress=false", f"hydra.run.dir={first}"], env=_env(),
                   check=True, capture_output=True)
    for i in range(1, n):
        shutil.copytree(first, out / "synthetic" / "bm25" / f"{i:04d}")
    server = subprocess.Popen([sys.executable, str(ROOT / "tests/servers/openai_server.py")], stdout=subprocess.PIPE,
                              text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        env = _env({"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "sk-bench-loopback-0000"})
        subprocess.run([sys.executable, "-m", "memrun", "axis=accuracy", "judge=gpt41", "judge2=gpt41", "repeats=2",
                        "progress=false", f"cache_dir={folder / 'cache'}",
                        f"hydra.run.dir={out / 'synthetic' / 'bm25' / 'accuracy'}"], env=env, check=True,
                       capture_output=True)
    finally:
        server.terminate()
        server.wait()
    return out


def start(cmd: list[str], marker: str) -> tuple[subprocess.Popen, str]:
    """Start a server process; returns it and the first stdout line holding ``marker``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=_env())
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"{cmd[:3]} exited before serving")
        if marker in line:
            return proc, line


READY = "performance.getEntriesByName('memrun-ready')[0].startTime / 1000"
"""Seconds from the page's navigation start to its table drawn (a mark table.js sets)."""


def page_ready(page, url: str) -> float:
    """Load ``url``; seconds from navigation start to the page drawn, as the browser measured it."""
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    return page.evaluate(READY)


def loaded(page) -> float:
    """Seconds from navigation start to the load event of the page now shown (the peer has no mark)."""
    return page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd / 1000")


def beam_groups(split: str = "500K") -> None:
    """Seconds to the first and the last item's records of BEAM ``split``: its groups read
    up to the item's (memrun view) beside every group read (the view before)."""
    data = Path(os.environ.get("MEMRUN_DATA_DIR", ""))
    if not (data / "beam" / "chats" / split).is_dir():
        print(f"BEAM {split}: not under MEMRUN_DATA_DIR ({data}); skipped")
        return
    sys.path.insert(0, str(ROOT))
    from memrun.benchmarks.selection import selection_from_config
    from memrun.config import BENCHMARK_RESERVED_KEYS
    from memrun.config.compose import compose
    from memrun.core.plugins import build
    from memrun.pipeline.outer_stages import load_dataset
    from memrun.view.calls import ItemGroups

    cfg = compose(["benchmark=beam", f"benchmark.split={split}", f"data_dir={data}"])
    t = time.perf_counter()
    dataset, _, _ = load_dataset(build(cfg.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark"),
                                 selection_from_config(cfg.benchmark), str(data))
    loaded = time.perf_counter() - t
    print(f"BEAM {split} drill-down, the benchmark's records (files checked against their pins: {loaded:.2f} s):")
    for which, item_id in (("first", dataset.index[0][0]), ("last", dataset.index[-1][0])):
        t = time.perf_counter()
        groups = ItemGroups(dataset.groups)
        groups.find(item_id)
        mine = time.perf_counter() - t
        t = time.perf_counter()
        every, n_groups = {}, 0
        for g in dataset.groups:
            n_groups += 1
            every.update({item.item_id: {r.key: r for r in g.records} for item in g.items})
        found = item_id in every
        del every  # freed inside the timing, as ItemGroups frees the groups it drops
        peer = time.perf_counter() - t
        assert found
        print(f"  {which} item: up to its group {mine:6.2f} s ({groups.produced} of {n_groups} groups read)"
              f"  every group {peer:6.2f} s  -> {mine / peer:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="bench-view-"))
    try:
        t = time.perf_counter()
        outputs = make_outputs(tmp, args.runs)
        print(f"made {args.runs} retrieval runs and 1 accuracy run in {time.perf_counter() - t:.1f} s")
        os.environ["XDG_CACHE_HOME"] = str(tmp / "user-cache")  # memrun view keeps its runs index there
        view, line = start([sys.executable, "-m", "memrun", "view", str(outputs)], "http://")
        url = line.split("at ", 1)[1].split()[0]
        peer = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1", "-d",
                                 str(outputs / "synthetic" / "bm25")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        peer_line = peer.stdout.readline()
        peer_url = f"http://127.0.0.1:{peer_line.split('port ')[1].split()[0]}/"
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                            args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                time.sleep(3)  # memrun view imports the drill-down's modules in the background at start
                cold = page_ready(page, url)
                rows = page.locator("#items tbody tr.row").count()
                total = page.text_content("#count")
                warm = statistics.median(page_ready(page, url) for _ in range(args.repeats))
                page.goto(peer_url)
                page.wait_for_load_state("load")
                peer_first = loaded(page)
                peer_warm = []
                for _ in range(args.repeats):
                    page.goto(peer_url)
                    page.wait_for_load_state("load")
                    peer_warm.append(loaded(page))
                view.terminate()
                view.wait()
                view, line = start([sys.executable, "-m", "memrun", "view", str(outputs)], "http://")
                url = line.split("at ", 1)[1].split()[0]
                time.sleep(3)
                restarted = page_ready(page, url)
                item_url = url + "item/synthetic/bm25/accuracy?id=01-billing:0"
                first_item = page_ready(page, item_url)
                steps, walls = [], []
                for i in range(args.repeats * 3):
                    want = f"item {i + 2} of"
                    t = time.perf_counter()
                    page.keyboard.press("j")
                    page.wait_for_selector(f"#position:has-text('{want}')")
                    page.wait_for_selector("body[data-ready='1']")
                    walls.append(time.perf_counter() - t)
                    steps.append(page.evaluate(READY))
                prompts = page.locator("pre.prompt").count()
                browser.close()
        finally:
            view.terminate()
            peer.terminate()
            view.wait()
            peer.wait()
        print(f"runs table: {total} runs listed ({rows} rows drawn on the first page of 100)")
        print("  (browser-measured: navigation start to the table drawn)")
        print(f"  memrun view, first load ever (every footer and summary read): {1000 * cold:7.0f} ms")
        print(f"  memrun view, reload (median of {args.repeats}):                   {1000 * warm:7.0f} ms (target < 1000)")
        print(f"  memrun view, a new session (runs index from its cache):     {1000 * restarted:7.0f} ms (target < 1000)")
        print(f"  peer, http.server listing the same {args.runs} folders (first / median): "
              f"{1000 * peer_first:.0f} / {1000 * statistics.median(peer_warm):.0f} ms"
              f"  -> memrun view reload / peer = {warm / statistics.median(peer_warm):.2f}x")
        print(f"item drill-down ({prompts} prompts on the last page):")
        print(f"  first item of the run (benchmark loaded, cache opened): {1000 * first_item:7.0f} ms")
        print(f"  next item by keyboard, median of {len(steps)}:            {1000 * statistics.median(steps):7.0f} ms "
              f"(max {1000 * max(steps):.0f}; target < 200; browser-measured, navigation start to drawn)")
        print(f"  the same, key press to drawn as Playwright sees it:   {1000 * statistics.median(walls):7.0f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    beam_groups()


if __name__ == "__main__":
    main()
