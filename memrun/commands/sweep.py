"""``memrun sweep DIR``: the table of a finished (or running) sweep, and its rows as one table.

``--baseline JOB`` also compares every other completed job with that job (``memrun compare``
each, its flags after ``--``; a job that did not complete is listed as not compared, with
its error and where that is recorded) and reads them as one family: a job is marked a winner only
when its own gate passes *and* Holm's step-down over the arms' one-sided gate p-values
holds the family-wise false PASS at 2.5% (:mod:`memrun.stats.family`).

Exit code: the worst job's (0 all complete, 2 a job failed or recorded nothing, 130 a
job was interrupted); 2 for a folder that is not a sweep.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.commands.usage import Parser
from memrun.errors import MemrunError
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.commands import compare as commands_compare
    from memrun.comparison import family as comparison_family
    from memrun.io import combine as io_combine
    from memrun.io import writer as io_writer
    from memrun.jobs import launch as memrun_launch
    from memrun.jobs import sweep as memrun_sweep
    from memrun.report import family_table as report_family_table
    from memrun.report import sweep_table as report_sweep_table
else:
    io_writer = lazy("memrun.io.writer")
    report_sweep_table = lazy("memrun.report.sweep_table")
    memrun_sweep = lazy("memrun.jobs.sweep")
    memrun_launch = lazy("memrun.jobs.launch")
    io_combine = lazy("memrun.io.combine")
    comparison_family = lazy("memrun.comparison.family")
    report_family_table = lazy("memrun.report.family_table")
    commands_compare = lazy("memrun.commands.compare")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="memrun sweep", description="The jobs of a sweep as one table.")
    parser.add_argument("dir", type=Path, help="a sweep folder (outputs/multirun/<time>)")
    parser.add_argument("--format", choices=("text", "markdown", "json", "csv"), default="text")
    parser.add_argument("--out", type=Path, metavar="FILE.parquet",
                        help="also write every job's rows as one Parquet table (union of columns, "
                             "the instrument's key fields as columns)")
    parser.add_argument("--baseline", type=int, metavar="JOB",
                        help="compare every other completed job with job JOB as one family (Holm, family-wise "
                             "2.5%%): only a job passing both its own gate and the family's is marked a winner")
    parser.add_argument("compare_args", nargs="*", metavar="-- COMPARE_FLAGS",
                        help="with --baseline: flags for memrun compare (e.g. -- --metric mrr)")
    return parser


def _check_out(out: Path) -> None:
    """Refuse an --out that is not a new .parquet file outside every run folder (one line)."""
    if out.is_dir():
        raise MemrunError(f"--out {out} is a folder; name a file ending in .parquet")
    if out.suffix != ".parquet":
        raise MemrunError(f"--out {out}: the combined table is Parquet; name a file ending in .parquet")
    if out.exists():
        raise MemrunError(f"--out {out} exists; remove it first or name another file")
    if (out.name == io_writer.ITEMS_FILE or (out.parent / io_writer.SUMMARY_FILE).exists()
            or (out.parent / ".hydra").is_dir()):
        raise MemrunError(f"--out {out} would write into a run folder; name a file outside the runs")


def main(argv: Sequence[str]) -> int:
    """``memrun sweep DIR [--format F] [--out FILE]``; returns the worst job's exit code."""
    argv = list(argv)
    # memrun compare's flags are everything after the first '--', wherever the options stand:
    # argparse gave them to the positional only when --baseline came before DIR
    # ('memrun sweep DIR --baseline 0 -- --metric mrr' was "unrecognized arguments").
    cut = argv.index("--") if "--" in argv else len(argv)
    args = build_parser().parse_args(argv[:cut])
    args.compare_args = [*args.compare_args, *argv[cut + 1:]]
    try:
        rows = memrun_sweep.sweep_rows(args.dir)
    except FileNotFoundError:
        raise MemrunError(f"{args.dir}: no such folder") from None
    if not rows:
        raise MemrunError(f"{args.dir}: no job of a memrun sweep here (expected outputs/multirun/<time>)")
    sys.stdout.write(report_sweep_table.render(rows, args.format, title=f"sweep {args.dir}"))
    if args.baseline is not None:
        sys.stdout.write(report_family_table.render(family(rows, args.baseline, args.compare_args, args.dir),
                                                    "text" if args.format == "csv" else args.format))
    if args.out:
        _check_out(args.out)
        folders = dict.fromkeys(Path(r.run_dir) for r in rows if r.status != "refused" and r.n_items)
        n = io_combine.combine_runs(list(folders), args.out)
        sys.stderr.write(f"wrote {n} rows of {len(rows)} jobs to {args.out}\n")
    return memrun_sweep.worst_exit_code(rows)


def _not_compared(r: Any, sweep_dir: Path) -> str:
    """Why job ``r`` (not complete) is not compared (its first line: the table's cell), its
    error and where that is recorded."""
    record = sweep_dir / memrun_launch.OUTCOME_DIR / f"job-{r.job}.json"
    where = record if record.is_file() else Path(r.run_dir)
    reason = (r.error or "no error recorded").split("\n", 1)[0]
    return f"the job {r.status} (exit {r.exit_code})\n{reason} (recorded in {where})"


def family(rows: Sequence, baseline: int, compare_args: Sequence[str], sweep_dir: Path) -> dict:
    """Compare every other completed job with job ``baseline`` and read them as one family;
    a job that did not complete is listed with ``error`` (its status, its error and where
    that is recorded), not left out.

    Returns a JSON-ready dict: ``baseline``, ``k`` arms compared, ``alpha``, ``method`` and ``arms``
    (job, overrides, delta/low/high, own outcome, p_pass, holm_p, winner; or ``error``).
    Raises MemrunError when the baseline job is not a completed job of the sweep.
    """
    base = next((r for r in rows if r.job == baseline), None)
    if base is None or base.status != "complete":
        known = ", ".join(str(r.job) for r in rows if r.status == "complete")
        raise MemrunError(f"--baseline {baseline}: not a completed job of this sweep (completed: {known or 'none'})")
    arms = []
    for r in rows:
        if r.job == baseline:
            continue
        if r.status != "complete":
            arms.append(comparison_family.Arm(r.job, r.overrides, None, _not_compared(r, sweep_dir)))
            continue
        argv = [base.run_dir, r.run_dir, "--allow-noncomparable", *compare_args]
        request = commands_compare.request_from(commands_compare.build_parser().parse_args(argv))
        arms.append(comparison_family.Arm(r.job, r.overrides, request))
    # a sweep's jobs differ by their overrides on purpose: those are its treatments
    return comparison_family.compare_family(baseline, base.overrides, arms, need_comparable=False)

