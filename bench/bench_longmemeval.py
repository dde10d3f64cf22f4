"""LongMemEval-S-size BM25 retrieval as whole processes: memrun beside a rank_bm25 pipeline.

    python bench/bench_longmemeval.py [--file lme_s.json] [--pairs 2] [--m lme_m.json]

On a file from ``memrun datasets synth --size s --reuse 0`` (written to ``--dir`` unless
``--file`` names one), alternating in pairs, each a fresh subprocess timed from start to
exit (imports included; peak RSS is the child's VmHWM):

* memrun: ``python -m memrun benchmark=longmemeval benchmark.path=FILE arm=bm25
  arm.top_k=50 progress=false`` (load, index, search, score, write Parquet + summary);
* peer: the official evaluation's library, ``rank_bm25``: ``json.load`` the file, one
  ``BM25Okapi`` per question over its user and assistant turns (whitespace tokens, as
  LongMemEval's run_retrieval.py), ``get_scores`` of the question, top 50 by argsort.

The headline file has no session reuse: every haystack session is drawn fresh, so
nothing memrun shares between haystacks (content-addressed sessions) gains from it. How much the real LongMemEval-S reuses sessions is not measured
here, so no speed-up from reuse is claimed; ``--reuse R`` adds one pair on a file with
that share of pooled sessions, printed apart as a sensitivity, not as the headline.

Targets: memrun < 60 s end to end (issue 15) and >= 2x faster than the peer (issue 37;
the median of the pair ratios peer / memrun), on the file without reuse. ``--m FILE`` adds one memrun run on an
M-size file (``--size m``): its time and peak RSS (target < 2 GiB); the peer is not run
there (``json.load`` of 2.8 GB needs ~10 GB of memory).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import alternate, run_child  # noqa: E402

PEER = r'''
import json, sys
import numpy as np
from rank_bm25 import BM25Okapi

data = json.load(open(sys.argv[1], encoding="utf-8"))
hits = 0
for q in data:
    texts = [f"{t['role']}: {t['content']}" for s in q["haystack_sessions"] for t in s
             if t.get("role") in ("user", "assistant")]
    if not texts:
        continue
    bm25 = BM25Okapi([t.split() for t in texts])
    top = np.argsort(bm25.get_scores(q["question"].split()))[::-1][:50]
    hits += len(top)
print("HITS", hits)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="an S-size file (default: generate one)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--m", type=Path, help="an M-size file: one memrun run, time and peak RSS")
    parser.add_argument("--reuse", type=float, help="also time one pair on a file with this share of pooled "
                        "sessions (e.g. 0.8, the generator's default): a sensitivity, not the headline")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)

        def synth(name: str, reuse: float) -> Path:
            out = work / name
            subprocess.run([sys.executable, "-m", "memrun", "datasets", "synth", str(out), "--size", "s",
                            "--reuse", str(reuse), "--quiet"], check=True)
            return out

        path = args.file or synth("lme_s.json", 0.0)
        peer = work / "peer.py"
        peer.write_text(PEER)
        runs = iter(range(10**6))

        def memrun(file: Path):
            return run_child(["memrun", "benchmark=longmemeval", f"benchmark.path={file}", "arm=bm25", "arm.top_k=50",
                              "progress=false", f"hydra.run.dir={work / 'runs' / f'run{next(runs)}'}"], cwd=work)

        pairs = alternate(lambda: memrun(path), lambda: run_child([str(peer), str(path)], cwd=work), args.pairs)
        speedup = statistics.median(b.seconds / a.seconds for a, b in zip(pairs.a, pairs.b))
        m_s = pairs.median("a")
        print(f"LongMemEval S-size ({path.stat().st_size / 1e6:.0f} MB), BM25 top 50, whole processes, "
              f"{args.pairs} pairs (A B A B)")
        print(f"{'':28}{'memrun':>10}{'rank_bm25':>11}")
        print(f"{'wall s (median)':28}{m_s:10.1f}{pairs.median('b'):11.1f}")
        print(f"{'peak RSS MiB (max)':28}{pairs.peak('a'):10.0f}{pairs.peak('b'):11.0f}")
        cpu = statistics.median(b.cpu_seconds / a.cpu_seconds for a, b in zip(pairs.a, pairs.b))
        print(f"{'CPU s, user+sys (median)':28}{pairs.median_cpu('a'):10.1f}{pairs.median_cpu('b'):11.1f}"
              f"   rank_bm25 / memrun {cpu:.2f}x (on a loaded machine the steadier figure)")
        print(f"memrun < 60 s: {'met' if m_s < 60 else 'MISSED'} ({m_s:.1f} s); speed-up over rank_bm25 "
              f"(median of pair ratios) {speedup:.2f}x, >= 2x: {'met' if speedup >= 2 else 'MISSED'}")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("memrun s:", ", ".join(f"{c.seconds:.1f}" for c in pairs.a),
              "| rank_bm25 s:", ", ".join(f"{c.seconds:.1f}" for c in pairs.b))
        if args.reuse is not None:
            reused = synth("lme_s_reuse.json", args.reuse)
            a, b = memrun(reused), run_child([str(peer), str(reused)], cwd=work)
            print(f"sensitivity, a file with {args.reuse:.0%} pooled sessions (one pair): memrun {a.seconds:.1f} s, "
                  f"rank_bm25 {b.seconds:.1f} s, {b.seconds / a.seconds:.2f}x (not the headline: the real "
                  "file's reuse is unknown here)")
        if args.m:
            child = memrun(args.m)
            print(f"M-size ({args.m.stat().st_size / 1e9:.2f} GB): memrun {child.seconds:.1f} s, peak RSS "
                  f"{child.peak_mib:.0f} MiB (< 2048: {'met' if child.peak_mib < 2048 else 'MISSED'})")


if __name__ == "__main__":
    main()
