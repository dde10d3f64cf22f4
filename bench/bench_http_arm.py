"""arm=http against a memory server of known latency: memrun vs the ideal vs a plain asyncio script.

A loopback server (asyncio, HTTP/1.1 keep-alive, its own process) answers memrun's
reference memory API (conf/arm/http.yaml); every ingest request takes ``--ingest-ms``,
every other request ``--search-ms``. For each workload and ``arm.concurrency`` the bench
alternates, in pairs of whole processes (bench/_pairs.py):

* memrun: ``python -m memrun benchmark=... arm=http arm.concurrency=C axis=recall``;
* peer: this file's ``--peer`` mode, a plain asyncio + aiohttp script (no memrun import)
  that sends the same requests (per history: create, ingest batches of 100 in order,
  every question's search at once, erase; up to C histories open, C requests in flight),
  read from a plan file the bench writes beforehand with memrun's own loader.

Two figures per row: the whole process, start to exit (what a user waits for; memrun's
start-up, imports, config and dataset load included, the peer's few imports included), and
the span after start-up that the server itself measures (its first request after
``/v1/health`` to its last reply), so that start-up and the request path can be read
apart; ``start s`` (process start to the first request) and ``exit s`` (last reply to
exit) are what lies outside that span, memrun/peer. CPU s is user + system seconds of
each side's process.

The ideal is the server's time alone: max(total request time / C, the longest history's
chain create + ingests + ceil(questions / C) searches + erase). Workloads: LoCoMo
(``$MEMRUN_DATA_DIR/locomo10.json``) and a LongMemEval-S-shaped file
(``memrun datasets synth --size s``: 500 histories of ~50 sessions; ``--lme-questions``
takes fewer); the bench's own load of it leaves memrun's scan of the file in its cache, as
a user's first run does, and prints what that first scan costs. A last pair runs with a
zero-latency server and compares the search latency p50 that memrun records with the one
the peer measures around its requests.

    nice -n 10 python bench/bench_http_arm.py [--search-ms 50 --ingest-ms 200] [--pairs 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import ROOT, Child, alternate, run_child  # noqa: E402
from memrun.benchmarks import lme_scan  # noqa: E402

BATCH = 100
NS = re.compile(rb"^/v1/namespaces/[^/]+/(memories|search)$")


# -- the server ----------------------------------------------------------------------------

WINDOW: dict[str, float] = {}  # the server's busy span: first request after health -> last reply


async def _serve_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, search_s: float,
                        ingest_s: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            method, path = head.split(b" ", 2)[:2]
            length = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if length:
                await reader.readexactly(int(length.group(1)))
            if path == b"/bench/window":  # read and reset by the bench between runs
                body = json.dumps({"seconds": WINDOW.get("last", 0.0) - WINDOW.get("first", 0.0),
                                   "first": WINDOW.get("first", 0.0), "last": WINDOW.get("last", 0.0)}).encode()
                WINDOW.clear()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(body), body))
                continue
            if path != b"/v1/health":
                WINDOW.setdefault("first", time.perf_counter())
            kind = NS.match(path)
            if kind and kind.group(1) == b"memories":
                await asyncio.sleep(ingest_s)
                body = b'{"added": 1}'
            else:
                if search_s:
                    await asyncio.sleep(search_s)
                body = (b'{"results": [], "took_ms": 0}' if kind else
                        b'{"build": "bench", "model": "none", "providers": {}, "embedder": {"name": "none", "dim": 0}}'
                        if path == b"/v1/health" else b'{"ok": true}')
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(body), body))
            WINDOW["last"] = time.perf_counter()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def serve(port: int, search_ms: float, ingest_ms: float) -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: _serve_client(r, w, search_ms / 1000, ingest_ms / 1000),
                                            "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def start_server(search_ms: float, ingest_ms: float) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--search-ms", str(search_ms),
                             "--ingest-ms", str(ingest_ms)])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}"


# -- the plain asyncio peer ------------------------------------------------------------------

async def peer(plan_file: str, url: str, concurrency: int) -> dict[str, float]:
    import aiohttp

    plan = json.loads(Path(plan_file).read_text())
    slots = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    async with aiohttp.ClientSession(url, connector=aiohttp.TCPConnector(limit=0)) as client:
        async def call(method: str, path: str, body: object = None, timed: bool = False) -> None:
            async with slots:
                t0 = time.perf_counter()
                async with client.request(method, path, json=body) as response:
                    response.raise_for_status()
                    await response.json()
                if timed:
                    latencies.append((time.perf_counter() - t0) * 1000)

        async def history(i: int, h: dict) -> None:
            ns = f"peer-{i}"
            await call("POST", "/v1/namespaces", {"namespace": ns})
            records = [{"id": r[0], "content": r[1], "metadata": {"session": r[2], "timestamp": r[3]}}
                       for r in h["records"]]
            for start in range(0, len(records), BATCH):
                await call("POST", f"/v1/namespaces/{ns}/memories", {"memories": records[start:start + BATCH]})
            await asyncio.gather(*(call("POST", f"/v1/namespaces/{ns}/search", {
                "query": q, "limit": 10, "options": {"reinforce": False, "scope": "pinned"}}, timed=True)
                for q in h["questions"]))
            await call("DELETE", f"/v1/namespaces/{ns}")

        await call("GET", "/v1/health")
        pending: set[asyncio.Task] = set()
        for i, h in enumerate(plan):
            if len(pending) >= concurrency:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            pending.add(asyncio.create_task(history(i, h)))
        await asyncio.gather(*pending)
    return {"search_p50_ms": statistics.median(latencies), "searches": len(latencies)}


# -- the bench -------------------------------------------------------------------------------

def write_plan(benchmark: list[str], out: Path) -> list[dict]:
    """Each history's records and questions, as memrun's loader gives them."""
    from hydra import compose, initialize_config_dir

    from memrun.benchmarks.download import data_dir
    from memrun.config import BENCHMARK_RESERVED_KEYS, register
    from memrun.core.paths import conf_dir
    from memrun.core.plugins import build

    register()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("config", overrides=benchmark)
    dataset = build(cfg.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark").load(data_dir(cfg.data_dir))
    plan = [{"records": [[r.key, r.text, r.session, r.timestamp] for r in g.records],
             "questions": [i.question for i in g.items]} for g in dataset.groups]
    out.write_text(json.dumps(plan))
    return plan


def ideal_seconds(plan: list[dict], concurrency: int, search_s: float, ingest_s: float) -> float:
    """max(all requests' time / C, the longest history chain); health counted once."""
    work, chain = search_s, 0.0
    for h in plan:
        batches, n_q = math.ceil(len(h["records"]) / BATCH), len(h["questions"])
        work += 2 * search_s + batches * ingest_s + n_q * search_s
        chain = max(chain, 2 * search_s + batches * ingest_s + math.ceil(n_q / concurrency) * search_s)
    return search_s + max(work / concurrency, chain)


def memrun_cmd(benchmark: list[str], url: str, concurrency: int, tmp: Path) -> list[str]:
    run = tmp / f"run-{time.monotonic_ns()}"
    return ["memrun", *benchmark, "arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp / 'ledger'}",
            f"arm.concurrency={concurrency}", "axis=recall", "progress=false", f"hydra.run.dir={run}"]


def latency_p50(stdout_dir: Path) -> float:
    summaries = sorted(stdout_dir.glob("run-*/summary.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(summaries[-1].read_text())["search_latency_ms"]["p50"]


def window(url: str) -> dict[str, float]:
    """The server's busy span for the run that just ended: ``first`` request after health and
    ``last`` reply (perf_counter, the machine's monotonic clock, shared with this process)
    and ``seconds`` between them; resets the server's window."""
    with urllib.request.urlopen(f"{url}/bench/window") as response:
        return json.loads(response.read())


def timed(cmd: list[str], url: str) -> Child:
    """:func:`run_child`, with ``served`` (the server's busy span for this run), ``startup``
    (process start to its first request) and ``shutdown`` (last reply to exit), in seconds."""
    window(url)  # a fresh window
    start = time.perf_counter()
    child = run_child(cmd)
    end = time.perf_counter()
    span = window(url)
    child.served = span["seconds"]  # type: ignore[attr-defined]
    child.startup, child.shutdown = span["first"] - start, end - span["last"]  # type: ignore[attr-defined]
    return child


def bench_workload(name: str, benchmark: list[str], levels: list[int], args: argparse.Namespace, tmp: Path) -> None:
    """One workload at each concurrency: whole-process wall time (what a user waits) and, after
    start-up, the server's busy span, for memrun and the peer, beside the ideal."""
    plan_file = tmp / f"{name}.plan.json"
    plan = write_plan(benchmark, plan_file)
    n_req = sum(3 + math.ceil(len(h["records"]) / BATCH) + len(h["questions"]) for h in plan)
    print(f"\n{name}: {len(plan)} histories, {sum(len(h['questions']) for h in plan)} searches, {n_req} requests; "
          f"server {args.search_ms:g} ms per request, {args.ingest_ms:g} ms per ingest")
    print(f"{'':>21}{'-- whole process (what a user waits) --':^48}{'-- after start-up --':^30}"
          f"{'-- outside it, m/p --':^22}")
    print(f"{'concurrency':>12}{'ideal s':>9}{'memrun s':>10}{'peer s':>9}{'vs ideal':>10}{'vs peer':>9}"
          f"{'CPU s m/p':>10}{'memrun s':>10}{'peer s':>9}{'vs ideal':>10}{'vs peer':>9}"
          f"{'start s':>11}{'exit s':>11}{'memrun MiB':>12}{'peer MiB':>10}")
    server, url = start_server(args.search_ms, args.ingest_ms)
    try:
        for c in levels:
            pairs = alternate(lambda: timed(memrun_cmd(benchmark, url, c, tmp), url),  # noqa: B023 (called within the iteration)
                              lambda: timed([__file__, "--peer", str(plan_file), url, str(c)], url), args.pairs)  # noqa: B023
            ideal = ideal_seconds(plan, c, args.search_ms / 1000, args.ingest_ms / 1000)
            mem_served = statistics.median(x.served for x in pairs.a)  # type: ignore[attr-defined]
            peer_served = statistics.median(x.served for x in pairs.b)  # type: ignore[attr-defined]
            served_ratio = statistics.median(x.served / y.served for x, y in zip(pairs.a, pairs.b))  # type: ignore[attr-defined]
            cpu = f"{pairs.median_cpu('a'):.1f}/{pairs.median_cpu('b'):.1f}"
            start = "/".join(f"{statistics.median(x.startup for x in side):.2f}"  # type: ignore[attr-defined]
                             for side in (pairs.a, pairs.b))
            end = "/".join(f"{statistics.median(x.shutdown for x in side):.2f}"  # type: ignore[attr-defined]
                           for side in (pairs.a, pairs.b))
            print(f"{c:>12}{ideal:>9.2f}{pairs.median('a'):>10.2f}{pairs.median('b'):>9.2f}"
                  f"{pairs.median('a') / ideal:>10.2f}{pairs.ratio:>9.2f}{cpu:>10}"
                  f"{mem_served:>10.2f}{peer_served:>9.2f}{mem_served / ideal:>10.2f}{served_ratio:>9.2f}"
                  f"{start:>11}{end:>11}{pairs.peak('a'):>12.0f}{pairs.peak('b'):>10.0f}")
    finally:
        server.terminate()
        server.wait()


def bench_latency(benchmark: list[str], args: argparse.Namespace, tmp: Path) -> None:
    """Zero-latency server: search latency p50, memrun's recorded vs the peer's measured."""
    plan_file = tmp / "latency.plan.json"
    write_plan(benchmark, plan_file)
    server, url = start_server(0, 0)
    print("\nzero-latency server: search latency p50 (ms)")
    print(f"{'concurrency':>12}{'memrun':>9}{'peer':>9}{'ratio':>8}")
    try:
        for c in (1, 16):
            mem, peer_p50 = [], []
            for _ in range(args.pairs):
                run_child(memrun_cmd(benchmark, url, c, tmp))
                mem.append(latency_p50(tmp))
                out = run_child([__file__, "--peer", str(plan_file), url, str(c)]).stdout
                peer_p50.append(json.loads(out.strip().splitlines()[-1])["search_p50_ms"])
            m, p = statistics.median(mem), statistics.median(peer_p50)
            print(f"{c:>12}{m:>9.2f}{p:>9.2f}{m / p:>8.2f}")
    finally:
        server.terminate()
        server.wait()


def server_alone(tmp: Path) -> float:
    """Requests per second the zero-latency server answers to a plain aiohttp client at 64 in flight."""
    server, url = start_server(0, 0)
    try:
        async def flood() -> float:
            import aiohttp

            async with aiohttp.ClientSession(url, connector=aiohttp.TCPConnector(limit=64)) as client:
                slots = asyncio.Semaphore(64)

                async def one() -> None:
                    async with slots, client.post("/v1/namespaces/x/search", json={"query": "q"}) as response:
                        response.raise_for_status()
                        await response.read()

                t0 = time.perf_counter()
                await asyncio.gather(*(one() for _ in range(3000)))
                return 3000 / (time.perf_counter() - t0)

        return asyncio.run(flood())
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--peer", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--search-ms", type=float, default=50.0)
    parser.add_argument("--ingest-ms", type=float, default=200.0)
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--levels", default="1,16,64", help="arm.concurrency values (LoCoMo)")
    parser.add_argument("--lme-levels", default="16,64", help="arm.concurrency values (LongMemEval-S shape)")
    parser.add_argument("--lme-questions", type=int, default=500)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, args.search_ms, args.ingest_ms)
    if args.peer:
        print(json.dumps(asyncio.run(peer(args.peer[0], args.peer[1], int(args.peer[2])))))
        return None
    data = os.environ.get("MEMRUN_DATA_DIR")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        print(f"server alone: {server_alone(tmp):.0f} requests/s (zero latency, aiohttp client, 64 in flight; the bench's client, not the server, may be the limit)")
        if data and (Path(data) / "locomo10.json").is_file():
            locomo = ["benchmark=locomo", f"data_dir={data}"]
            bench_workload("LoCoMo", locomo, [int(c) for c in args.levels.split(",")], args, tmp)
        else:
            locomo = []
            print("LoCoMo: skipped (set MEMRUN_DATA_DIR to a folder holding locomo10.json)")
        lme = tmp / "lme_s.json"
        subprocess.run([sys.executable, "-m", "memrun", "datasets", "synth", str(lme), "--size", "s", "--reuse", "0",
                        "--questions", str(args.lme_questions), "--quiet"], check=True, cwd=ROOT)
        bench_workload(f"LongMemEval-S shape ({args.lme_questions} histories)",
                       ["benchmark=longmemeval", f"benchmark.path={lme}"],
                       [int(c) for c in args.lme_levels.split(",")], args, tmp)
        t0 = time.perf_counter()
        lme_scan.scan_index(lme)
        print(f"(memrun's runs above reuse its scan of the file, kept in its cache by the first load; a first run "
              f"over a new file also scans it: +{time.perf_counter() - t0:.2f} s, the same in every row)")
        bench_latency(locomo or ["benchmark=synthetic"], args, tmp)
    return None


if __name__ == "__main__":
    main()
