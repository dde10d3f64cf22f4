"""``memrun calibrate-judge``: measure a judge's TPR and FPR on probes built from a benchmark.

    memrun calibrate-judge benchmark=locomo judge=gpt41 --out gpt41-locomo.json [--n 200] [--seed 7]

Arguments other than the options are Hydra overrides of memrun's config (the same
``conf/`` as a run: benchmark, judge, data_dir, cache_dir, concurrency, ...). Calls go
through the call cache, so a second invocation is free. The JSON file holds ``tpr``,
``fpr``, ``n_pos``, ``n_neg`` (what ``memrun compare --judge-calibration`` reads) plus
provenance (judge, prompts' sha256, benchmark, dataset sha256, seed, errors) and
``fake_providers`` (true when the judge is a fake or stub provider: its rates mean nothing).
See :mod:`memrun.judges.calibration` for how probes are built.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memrun.commands.usage import Parser
from memrun.config import BENCHMARK_RESERVED_KEYS
from memrun.config.compose import compose, resolved
from memrun.core.plugins import build
from memrun.errors import ConfigError, MemrunError
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun import benchmarks as memrun_benchmarks
    from memrun import judges as memrun_judges
    from memrun.accuracy import setup as accuracy_setup
    from memrun.benchmarks import download as benchmarks_download
    from memrun.config import build_spec as config_spec
    from memrun.core import redaction as memrun_redaction
    from memrun.judges import calibration as judges_calibration
else:
    memrun_redaction = lazy("memrun.core.redaction")
    benchmarks_download = lazy("memrun.benchmarks.download")
    accuracy_setup = lazy("memrun.accuracy.setup")
    config_spec = lazy("memrun.config.build_spec")
    memrun_judges = lazy("memrun.judges")
    memrun_benchmarks = lazy("memrun.benchmarks")
    judges_calibration = lazy("memrun.judges.calibration")


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="memrun calibrate-judge",
        description="Measure a judge's true- and false-positive rates on probes built from a benchmark.",
    )
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. benchmark=locomo judge=gpt41")
    parser.add_argument("--out", required=True, type=Path, help="JSON file to write (tpr, fpr, n_pos, n_neg, provenance)")
    parser.add_argument("--n", type=int, default=100, help="items sampled; each gives one known-correct and one known-wrong probe")
    parser.add_argument("--seed", type=int, default=7, help="sampling seed")
    return parser


def main(argv: list[str]) -> int:
    """Entry point; returns the exit code. Raises MemrunError subclasses for user errors."""
    args = _parser().parse_args(argv)
    if args.n < 1:
        raise ConfigError(f"--n {args.n}: must be at least 1")
    cfg = compose(list(args.overrides))

    memrun_redaction.check_no_secrets(resolved(cfg))
    if cfg.judge.name == "none":
        raise ConfigError("calibrate-judge needs a judge; add judge=gpt41 (or gpt4o, claude, exact, substring, f1)")
    console = Console(stderr=True)
    llm = accuracy_setup.build_llm(config_spec.llm_call_spec(cfg), token_budget=False)
    cache = llm.cache
    judge = memrun_judges.build_judge(cfg.judge, "judge", llm)
    benchmark = memrun_benchmarks.check_benchmark(build(cfg.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark"),
                                                  str(cfg.benchmark.get("_target_")))
    dataset = benchmark.load(benchmarks_download.data_dir(cfg.data_dir))
    probes = judges_calibration.build_probes(dataset, n=args.n, seed=args.seed,
                                             abstention_categories=memrun_judges.judge_hooks(judge).abstention_categories)

    async def run() -> list[str]:
        with Progress(TextColumn("calibrating {task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, transient=True, disable=not cfg.progress) as progress:
            task = progress.add_task(str(cfg.judge.name), total=len(probes))
            try:
                return await judges_calibration.grade_probes(judge, probes, lambda: progress.advance(task))
            finally:
                await llm.aclose()

    labels = asyncio.run(run())
    if cache is not None:
        cache.close()
    try:
        calibration, counts = judges_calibration.calibration_from(probes, labels)
    except ValueError as exc:
        raise MemrunError(f"calibrate-judge: {exc}; check the judge's errors with a small run") from exc
    described = judge.describe()
    record = {
        **calibration.to_dict(),
        "youden_j": calibration.youden_j,
        "judge": str(cfg.judge.name),
        "judge_model": described["judge_model"],
        "judge_prompt_sha256": described["judge_prompt_sha256"],
        "fake_providers": bool(described.get("fake")),  # compare --judge-calibration refuses such rates
        "benchmark": str(cfg.benchmark.name),
        "dataset_sha256": dataset.sha256,
        "seed": args.seed,
        "n_items": args.n,
        **counts,
        "calls": llm.stats.to_dict(),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    console.print(
        f"{cfg.judge.name} on {cfg.benchmark.name}: TPR {calibration.tpr:.3f} (n={calibration.n_pos}), "
        f"FPR {calibration.fpr:.3f} (n={calibration.n_neg}), J {calibration.youden_j:.3f}, "
        f"errors {counts['n_errors']} | wrote {args.out}"
    )
    if calibration.youden_j <= 0:
        sys.stderr.write(f"memrun: warning: {cfg.judge.name} has Youden's J = {calibration.youden_j:.3f} <= 0 on "
                         "these probes: it cannot tell right answers from wrong ones; do not gate on it\n")
    return 0
