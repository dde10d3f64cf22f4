"""Speed of the full LoCoMo retrieval run (issue: foundation) beside bm25s alone.

Prints, in one run on the same machine:
  1. wall time of `memrun benchmark=locomo arm=bm25` as a user runs it (process start-up
     included), target < 5 s;
  2. memrun's own pipeline time (composed config -> written Parquet, measured inside
     the process and stored in summary.json as pipeline_seconds);
  3. the peer: bm25s indexing and searching the same records directly in one Python
     process (tokenize + index each conversation once, score every question);
and the ratio of 2 to 3 (target <= 3x). Each figure is the median of --repeats runs.

    MEMRUN_DATA_DIR=../shared/datasets python bench/bench_locomo_bm25.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def peer_seconds(data_file: Path) -> float:
    """bm25s directly: the same records (speaker: text [image]), same tokenizer and top 10."""
    import bm25s
    import numpy as np

    from memrun.benchmarks.locomo import _records  # the same record texts memrun indexes

    raw = json.loads(data_file.read_text())
    t0 = time.perf_counter()
    from collections import Counter

    for conv in raw:
        records = _records(conv["conversation"], Counter())
        corpus = bm25s.tokenize([r.text for r in records], stopwords="en", return_ids=False, show_progress=False)
        index = bm25s.BM25(method="lucene")
        index.index(corpus, show_progress=False)
        for qa in conv["qa"]:
            tokens = bm25s.tokenize([qa["question"]], stopwords="en", return_ids=False, show_progress=False)[0]
            if tokens:
                scores = index.get_scores(tokens)
                np.argsort(-scores, kind="stable")[:10]
    return time.perf_counter() - t0


def memrun_run(data_dir: Path) -> tuple[float, float]:
    """(wall seconds of the console script, pipeline seconds it reported)."""
    exe = Path(sys.executable).parent / "memrun"
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        done = subprocess.run(
            [str(exe), "benchmark=locomo", "arm=bm25", "progress=false"],
            cwd=tmp, env={**os.environ, "MEMRUN_DATA_DIR": str(data_dir)}, capture_output=True, text=True,
        )
        wall = time.perf_counter() - t0
        if done.returncode:
            sys.exit(done.stderr)
        (summary,) = Path(tmp).rglob("summary.json")
        return wall, json.loads(summary.read_text())["pipeline_seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    data_dir = Path(os.environ.get("MEMRUN_DATA_DIR", "../shared/datasets")).resolve()
    data_file = data_dir / "locomo10.json"
    peer = [peer_seconds(data_file) for _ in range(args.repeats)]
    runs = [memrun_run(data_dir) for _ in range(args.repeats)]
    wall = statistics.median(r[0] for r in runs)
    pipeline = statistics.median(r[1] for r in runs)
    peer_s = statistics.median(peer)
    print(f"LoCoMo retrieval run, 1,986 questions, median of {args.repeats}")
    print(f"{'figure':<44}{'seconds':>10}{'target':>16}")
    print(f"{'memrun wall (process start-up included)':<44}{wall:>10.2f}{'< 5 s':>16}")
    print(f"{'memrun pipeline (config -> Parquet)':<44}{pipeline:>10.3f}")
    print(f"{'bm25s directly (index + search)':<44}{peer_s:>10.3f}")
    print(f"{'ratio pipeline / bm25s':<44}{pipeline / peer_s:>10.2f}{'<= 3x':>16}")


if __name__ == "__main__":
    main()
