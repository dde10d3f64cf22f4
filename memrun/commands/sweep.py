"""``memrun sweep DIR``: the table of a finished (or running) sweep, and its rows as one table.

Exit code: the worst job's (0 all complete, 2 a job failed or recorded nothing, 130 a
job was interrupted); 2 for a folder that is not a sweep.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from memrun.errors import MemrunError
from memrun.lazy import lazy

io_writer = lazy("memrun.io.writer")
report_sweep_table = lazy("memrun.report.sweep_table")
memrun_sweep = lazy("memrun.jobs.sweep")
io_combine = lazy("memrun.io.combine")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memrun sweep", description="The jobs of a sweep as one table.")
    parser.add_argument("dir", type=Path, help="a sweep folder (outputs/multirun/<time>)")
    parser.add_argument("--format", choices=("text", "markdown", "json", "csv"), default="text")
    parser.add_argument("--out", type=Path, metavar="FILE.parquet",
                        help="also write every job's rows as one Parquet table (union of columns, "
                             "the instrument's key fields as columns)")
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
    args = build_parser().parse_args(list(argv))
    try:
        rows = memrun_sweep.sweep_rows(args.dir)
    except FileNotFoundError:
        raise MemrunError(f"{args.dir}: no such folder") from None
    if not rows:
        raise MemrunError(f"{args.dir}: no job of a memrun sweep here (expected outputs/multirun/<time>)")
    sys.stdout.write(report_sweep_table.render(rows, args.format, title=f"sweep {args.dir}"))
    if args.out:
        _check_out(args.out)
        folders = dict.fromkeys(Path(r.run_dir) for r in rows if r.status != "refused" and r.n_items)
        n = io_combine.combine_runs(list(folders), args.out)
        sys.stderr.write(f"wrote {n} rows of {len(rows)} jobs to {args.out}\n")
    return memrun_sweep.worst_exit_code(rows)
