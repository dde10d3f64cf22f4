"""memrun's fixed costs beside a bare ``@hydra.main`` app: ``--help``, ``--cfg job`` and the time to a run's first request.

    MEMRUN_DATA_DIR=/work/shared/datasets nice -n 10 python bench/bench_startup.py [--pairs 5]

Each row alternates whole processes in pairs (bench/_pairs.py), the figure being the
median of the pair ratios:

* ``--help``: ``python -m memrun --help`` (memrun's help: usage, every config group, the
  composed config) vs the bare app's ``--help`` (Hydra's own help of an app without
  configs); goal <= 1.5x.
* ``--cfg job``: ``python -m memrun --cfg job`` (compose conf/, print it redacted) vs the
  bare app's ``--cfg job``; goal <= 1.3x.
* first request: process start to the first request a loopback server (bench_http_arm's,
  no latency) receives. memrun runs ``benchmark=locomo benchmark.limit=1 arm=http`` (its
  first request after the health check: creating the history's namespace); the bare app
  imports aiohttp in its task and sends one POST. Goal: memrun <= the bare app + 0.2 s.

The bare app is a file of five lines written to a temporary folder: Hydra's import, its
plugin scan and argument parsing, and (for the first request) aiohttp, the same
libraries memrun loads before its first request.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import HEADER, alternate, line, run_child
from bench_http_arm import start_server, timed

BARE = '''
import hydra


@hydra.main(config_path=None, config_name=None, version_base=None)
def app(cfg):
    if "url" in cfg:
        import asyncio

        import aiohttp

        async def one():
            async with aiohttp.ClientSession() as session:
                async with session.post(cfg.url + "/v1/namespaces", json={"name": "bare"}) as reply:
                    await reply.read()

        asyncio.run(one())
    else:
        print(cfg)


if __name__ == "__main__":
    app()
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    data = os.environ.get("MEMRUN_DATA_DIR")
    if not data or not (Path(data) / "locomo10.json").is_file():
        raise SystemExit("the first-request row runs benchmark=locomo: set MEMRUN_DATA_DIR to the folder holding "
                         "locomo10.json (e.g. MEMRUN_DATA_DIR=/work/shared/datasets)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bare = work / "bare_app.py"
        bare.write_text(BARE)
        print(f"whole processes, {args.pairs} pairs each (A B A B), median of the pair ratios")
        print(HEADER)
        helps = alternate(lambda: run_child(["memrun", "--help"], cwd=work),
                          lambda: run_child([str(bare), "--help"], cwd=work), args.pairs)
        print(line("memrun --help / bare app", helps, "<= 1.5x", helps.ratio <= 1.5))
        cfgs = alternate(lambda: run_child(["memrun", "--cfg", "job"], cwd=work),
                         lambda: run_child([str(bare), "--cfg", "job"], cwd=work), args.pairs)
        print(line("memrun --cfg job / bare app", cfgs, "<= 1.3x", cfgs.ratio <= 1.3))
        server, url = start_server(0, 0)
        try:
            runs = iter(range(10**6))

            def memrun_run():
                return timed(["memrun", "benchmark=locomo", "benchmark.limit=1", "arm=http", f"arm.base_url={url}",
                              f"arm.ledger_dir={work / 'ledger'}", "axis=recall", "progress=false",
                              f"hydra.run.dir={work / f'run{next(runs)}'}"], url)

            firsts = alternate(memrun_run, lambda: timed([str(bare), f"+url={url}"], url), args.pairs)
        finally:
            server.terminate()
        m = statistics.median(c.startup for c in firsts.a)  # type: ignore[attr-defined]
        p = statistics.median(c.startup for c in firsts.b)  # type: ignore[attr-defined]
        extra = statistics.median(a.startup - b.startup for a, b in zip(firsts.a, firsts.b))  # type: ignore[attr-defined]
        print(f"{'first request s, memrun / bare app':34}{m:9.2f}{p:9.2f}{format(extra, '+.2f'):>8}"
              f"{'<= +0.20 s':>12}  {'met' if extra <= 0.2 else 'MISSED'}")
        print("first request s, memrun:", ", ".join(f"{c.startup:.2f}" for c in firsts.a),  # type: ignore[attr-defined]
              "| bare app:", ", ".join(f"{c.startup:.2f}" for c in firsts.b))  # type: ignore[attr-defined]
        print(f"(load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"{time.strftime('%H:%M:%S')})")


if __name__ == "__main__":
    main()
