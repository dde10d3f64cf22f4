"""LongMemEval at full scale: memrun's time and peak memory beside their peers, as ratios.

Measures, each in a fresh interpreter (peak RSS = VmHWM from /proc/self/status, since
ru_maxrss would carry over the parent's peak through exec), on files generated in the
published schema (``memrun datasets synth``; the real files are not on these machines):

1. ``s``-size file (500 questions x 50 sessions x 10 turns, ~277 MB):
   - memrun's BM25 retrieval axis end to end (``memrun benchmark=longmemeval
     arm=bm25 arm.top_k=50``: load + index + search + Parquet), target under 3 minutes,
     beside a plain ``json.load`` of the same file (time and peak RSS);
   - memrun's load alone (every question streamed) beside the same ``json.load``;
2. ``m``-size file (500 x 500 sessions, ~2.8 GB; with ``--m``): memrun's load alone,
   target peak RSS under 2 GiB; ``json.load`` of it only with ``--m-json-load`` (it
   needs ~10 GB of memory);
3. one question's haystack (~500 records): memrun's bm25 arm (bm25s) index + search
   beside ``rank_bm25.BM25Okapi`` as LongMemEval's ``run_retrieval.py`` uses it
   (whitespace tokens, ``get_scores``, argsort), median over 5 questions.

Generated files go to ``--dir`` (default /tmp) and are deleted at the end unless
``--keep``. The machine is shared: run twice and read the spread.

    PYTHONPATH=$PWD python bench/bench_longmemeval.py            # s only, ~2-3 minutes
    PYTHONPATH=$PWD python bench/bench_longmemeval.py --m        # + m (~2.8 GB on disk)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 1 << 30

CHILD = r"""
import json, sys, time
from pathlib import Path

def peak():
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024

mode, path = sys.argv[1], Path(sys.argv[2])
extra = {}
if mode == "run":
    from memrun import cli
    out = Path(sys.argv[3])
    t0 = time.perf_counter()
    code = cli.main(["benchmark=longmemeval", f"benchmark.path={path}", "arm=bm25", "arm.top_k=50",
                     "progress=false", f"hydra.run.dir={out}"])
    seconds = time.perf_counter() - t0
    summary = json.loads((out / "summary.json").read_text())
    extra = {"code": code, "items": summary["n_items"], "recall@10": summary["overall_all"]["recall@10"],
             "session_recall@10": summary["session"]["overall_all"]["recall@10"]}
elif mode == "stream":
    from memrun.benchmarks.longmemeval import LongMemEval
    t0 = time.perf_counter()
    loader = LongMemEval(split="x", files={"x": {"file": path.name}}, categories={}, path=str(path))
    dataset = loader.load(path.parent)
    records = sum(len(g.records) for g in dataset.groups)
    seconds = time.perf_counter() - t0
    extra = {"questions": dataset.n_items, "records": records, "sessions_shared": dataset.counts["sessions_shared"]}
elif mode == "json":
    t0 = time.perf_counter()
    with path.open() as f:
        extra = {"questions": len(json.load(f))}
    seconds = time.perf_counter() - t0
elif mode == "haystack":
    import statistics
    import numpy as np
    from rank_bm25 import BM25Okapi
    from memrun.arms.bm25 import BM25Arm
    from memrun.benchmarks.longmemeval import LongMemEval
    loader = LongMemEval(split="x", files={"x": {"file": path.name}}, categories={}, path=str(path))
    ours, peer, sizes = [], [], []
    for i, group in enumerate(loader.load(path.parent).groups):
        if i == 5:
            break
        query, texts = group.items[0].question, [r.text for r in group.records]
        t0 = time.perf_counter()
        arm = BM25Arm()
        arm.ingest(group.history_id, group.records)
        arm.search(query, 50)
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        bm25 = BM25Okapi([t.split(" ") for t in texts])
        np.argsort(bm25.get_scores(query.split(" ")))[::-1][:50]
        peer.append(time.perf_counter() - t0)
        sizes.append(len(texts))
    seconds = statistics.median(ours)
    extra = {"peer_seconds": statistics.median(peer), "records": statistics.median(sizes)}
print(json.dumps({"seconds": seconds, "peak": peak(), **extra}))
"""


def measure(mode: str, *args: str) -> dict:
    """Run one measurement in a fresh interpreter; its JSON result."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, *args], capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(f"bench: {mode} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def generate(path: Path, size: str) -> float:
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "memrun", "datasets", "synth", str(path), "--size", size, "--quiet"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _fmt(r: dict) -> str:
    return f"{r['seconds']:7.1f} s  {r['peak'] / 2**20:7.0f} MiB"


def row(name: str, ours: dict, peer: dict | None, peer_name: str, note: str = "") -> None:
    ratio = "" if peer is None else (
        f"time {ours['seconds'] / peer['seconds']:5.2f}x  memory {ours['peak'] / peer['peak']:5.2f}x"
    )
    peer_text = f"{peer_name} {_fmt(peer)}" if peer else peer_name
    print(f"{name:<28} {_fmt(ours)}   {peer_text:<36} {ratio}  {note}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where generated files go (default /tmp)")
    parser.add_argument("--m", action="store_true", help="also generate and load an m-size file (~2.8 GB)")
    parser.add_argument("--m-json-load", action="store_true", help="also json.load the m file (~10 GB of memory)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    import ijson

    folder = Path(args.dir)
    s_file, m_file = folder / "memrun_bench_lme_s.json", folder / "memrun_bench_lme_m.json"
    print(f"ijson backend: {ijson.backend}; python {sys.version.split()[0]}; {os.cpu_count()} cores")
    try:
        took = generate(s_file, "s")
        print(f"s-size file: {s_file.stat().st_size / 1e6:.1f} MB, generated in {took:.1f} s\n")
        print(f"{'':<28} {'memrun':>7} {'time':>2}  {'peak':>11}   {'peer':<36} ratio (memrun / peer)")
        json_s = measure("json", str(s_file))
        with tempfile.TemporaryDirectory() as out:
            run = measure("run", str(s_file), str(Path(out) / "run"))
        row("s: BM25 end to end", run, json_s, "json.load",
            f"target < 180 s: {'met' if run['seconds'] < 180 else 'MISSED'}; recall@10 "
            f"{run['recall@10']:.3f} turn, {run['session_recall@10']:.3f} session")
        stream_s = measure("stream", str(s_file))
        row("s: load (stream all)", stream_s, json_s, "json.load",
            f"{stream_s['records']} records, {stream_s['sessions_shared']} sessions shared")
        hay = measure("haystack", str(s_file))
        ratio = hay["seconds"] / hay["peer_seconds"]
        print(f"{'one haystack: index+search':<28} {hay['seconds'] * 1000:7.1f} ms (bm25s arm)   "
              f"rank_bm25 {hay['peer_seconds'] * 1000:7.1f} ms{'':<17} time {ratio:5.2f}x  "
              f"median of 5, {hay['records']:.0f} records")
        if args.m:
            took = generate(m_file, "m")
            print(f"\nm-size file: {m_file.stat().st_size / 1e9:.2f} GB, generated in {took:.1f} s")
            stream_m = measure("stream", str(m_file))
            json_m = measure("json", str(m_file)) if args.m_json_load else None
            row("m: load (stream all)", stream_m, json_m, "json.load" if json_m else "json.load not run",
                f"target peak < 2 GiB: {'met' if stream_m['peak'] < 2 * GIB else 'MISSED'}; "
                f"{stream_m['records']} records")
    finally:
        if not args.keep:
            s_file.unlink(missing_ok=True)
            m_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
