"""Speed of the local dense arm on the full LoCoMo retrieval run, and of hybrid's fusion.

    MEMRUN_DATA_DIR=/path/with/locomo10.json python bench/bench_dense.py [--repeats 3]

Prints, side by side as ratios:
1. embedding throughput of all-MiniLM-L6-v2 on this machine (records/s, model already
   loaded, cache off, over the records of the first conversations);
2. the full LoCoMo run (``benchmark=locomo arm=dense arm/embedder=minilm``) with an
   empty embedding cache, then again served from the cache (target: < 10 %);
3. hybrid's fusion step against the dense arm's search, per query, over every LoCoMo
   question with warm caches (target: < 5 %); repeated ``--repeats`` times.
Needs the local extra (``pip install 'memrun[local]'``). Uses a fresh temporary cache.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from rich.console import Console

from memrun.arms.embedders import LocalEmbedder
from memrun.arms.hybrid import HybridArm
from memrun.benchmarks.download import data_dir
from memrun.cli import conf_dir
from memrun.config import BENCHMARK_RESERVED_KEYS, register
from memrun.plugins import build
from memrun.run import execute


def compose_run(overrides: list[str]):
    register()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose("config", overrides=["progress=false", *overrides])


def timed_run(cache: str, out: Path) -> tuple[float, dict]:
    cfg = compose_run(["benchmark=locomo", "arm=dense", "arm/embedder=minilm", f"arm.cache_dir={cache}"])
    t0 = time.perf_counter()
    summary = execute(cfg, out, Console(file=io.StringIO()))
    return time.perf_counter() - t0, summary


def throughput(texts: list[str]) -> float:
    embedder = LocalEmbedder()
    embedder.embed(texts[:8])  # load the model outside the timing
    t0 = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - t0)


def fusion_ratio(dataset, cache: str, k: int = 10) -> tuple[float, float]:
    """(fusion seconds, dense search seconds) per query, summed over every question."""
    arm = HybridArm(embedder=LocalEmbedder(), cache_dir=cache)
    fusion = dense = 0.0
    for group in dataset.groups:
        arm.ingest(group.history_id, group.records)
        for item in group.items:
            t0 = time.perf_counter()
            arm.vector.search(item.question, k)
            t1 = time.perf_counter()
            lexical, vector = arm.lexical.rank(item.question)[0], arm.vector.rank(item.question)[0]
            t2 = time.perf_counter()
            arm.fuse(lexical, vector, k)
            t3 = time.perf_counter()
            dense += t1 - t0
            fusion += t3 - t2
    arm.close()
    n = sum(len(g.items) for g in dataset.groups)
    return fusion / n, dense / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the fusion measurement")
    parser.add_argument("--sample", type=int, default=2, help="conversations embedded for the throughput figure")
    args = parser.parse_args()
    cfg = compose_run(["benchmark=locomo"])
    dataset = build(cfg.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark").load(data_dir(None))
    n_records = sum(len(g.records) for g in dataset.groups)
    print(f"LoCoMo: {len(dataset.groups)} conversations, {n_records} records, {dataset.n_items} questions")

    sample = [r.text for g in dataset.groups[: args.sample] for r in g.records]
    rate = throughput(sample)
    print(f"embedding throughput (all-MiniLM-L6-v2, cpu, {len(sample)} records, cache off): {rate:.0f} records/s")

    with tempfile.TemporaryDirectory(prefix="memrun-bench-") as tmp:
        cache = str(Path(tmp) / "cache")
        cold, s1 = timed_run(cache, Path(tmp) / "run1")
        warm, s2 = timed_run(cache, Path(tmp) / "run2")
        same = s1["overall_all"] == s2["overall_all"]
        print(f"full LoCoMo dense run: cold cache {cold:.1f} s | from the cache {warm:.1f} s | "
              f"ratio {100 * warm / cold:.1f}% (target < 10%) | same metrics: {same}")
        print(f"  cold run end to end: {(n_records + dataset.n_items) / cold:.0f} texts/s "
              f"(records + questions, model load and index included)")
        ratios, fusions = [], []
        for _ in range(args.repeats):
            fusion, dense = fusion_ratio(dataset, cache)
            ratios.append(fusion / dense)
            fusions.append(fusion)
            print(f"hybrid fusion {1000 * fusion:.3f} ms/query | dense search, query vector cached "
                  f"{1000 * dense:.3f} ms/query | ratio {100 * fusion / dense:.1f}% (target < 5%)")
        print(f"fusion ratio over {args.repeats} repeats: min {100 * min(ratios):.1f}% max {100 * max(ratios):.1f}%")
        cold_search = s1["search_latency_ms"]["p50"]
        print(f"hybrid fusion {1000 * min(fusions):.3f} ms/query | dense search in the cold run (query embedded) "
              f"p50 {cold_search:.3f} ms | ratio {100 * 1000 * min(fusions) / cold_search:.2f}% (target < 5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
