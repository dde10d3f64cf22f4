"""``memrun report RUN | A B | SWEEP_DIR``: one self-contained static HTML page.

- one run folder (or items.parquet): the run page, written to ``RUN/report.html``;
- two runs: the comparison page (``memrun compare``'s figures, refusals included),
  written to ``B/report-compare.html`` unless ``--out``; compare's options
  (``--metric``, ``--treatment``, ``--gate-band``, ...) pass through;
- a sweep folder: the sweep page (``SWEEP/report.html``), plus each job's run page
  beside its rows, linked relatively.

The page opens offline from disk and makes no network request. Exit 0 when the page
was written (whatever the run or comparison says inside it); 2 (``memrun: error:``)
when there is nothing to report.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrun.commands.usage import Parser
from memrun.errors import MemrunError
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.commands import compare as commands_compare
    from memrun.jobs import launch as memrun_launch
    from memrun.report.html import compare_page as html_compare_page
    from memrun.report.html import run_page as html_run_page
    from memrun.report.html import sweep_page as html_sweep_page
else:
    memrun_launch = lazy("memrun.jobs.launch")
    html_compare_page = lazy("memrun.report.html.compare_page")
    commands_compare = lazy("memrun.commands.compare")
    html_sweep_page = lazy("memrun.report.html.sweep_page")
    html_run_page = lazy("memrun.report.html.run_page")

REPORT_FILE = "report.html"
COMPARE_FILE = "report-compare.html"


def build_parser() -> Parser:
    """``memrun report`` arguments; unknown options go to the comparison."""
    parser = Parser(prog="memrun report", description="Write a self-contained HTML report of a run, "
                     "a comparison of two runs, or a sweep.")
    parser.add_argument("paths", nargs="+", help="a run folder, two runs (A B), or a sweep folder")
    parser.add_argument("--out", type=Path, help=f"the HTML file to write (default: {REPORT_FILE} in the folder)")
    return parser


def _is_sweep(path: Path) -> bool:
    if not path.is_dir() or (path / "items.parquet").exists() or (path / "items.parts").is_dir():
        return False
    return (bool(memrun_launch.JobOutcome.read_all(path))
            or any((p / ".hydra").is_dir() for p in path.iterdir() if p.is_dir()))


def _write(out: Path, html: str) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise MemrunError(f"cannot write {out}: {exc.strerror or exc}") from exc


def _folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent


def main(argv: Sequence[str]) -> int:
    """``memrun report PATH [PATH] [--out FILE] [compare options]``; 0 when written."""
    parser = build_parser()
    args, rest = parser.parse_known_args(list(argv))
    paths = [Path(p) for p in args.paths]
    if len(paths) > 2:
        raise parser.usage_error(f"give one run, two runs (A B) or one sweep folder, not {len(paths)} paths")
    if rest and len(paths) != 2:
        raise parser.usage_error(f"unrecognized arguments: {' '.join(rest)} (compare options need two runs)")
    for p in paths:
        if not p.exists():
            raise MemrunError(f"{p}: no such file or folder")
    if len(paths) == 2:
        out = args.out or _folder(paths[1]) / COMPARE_FILE
        _write(out, html_compare_page.render_compare(str(paths[0]), str(paths[1]), rest,
                                                        on_warning=commands_compare.print_warning))
    elif _is_sweep(paths[0]):
        out = args.out or paths[0] / REPORT_FILE
        written = html_sweep_page.write_sweep(paths[0], out, REPORT_FILE)
        sys.stderr.write(f"wrote {written} job page(s)\n")
    else:
        out = args.out or _folder(paths[0]) / REPORT_FILE
        _write(out, html_run_page.render_run(paths[0]))
    sys.stdout.write(f"wrote {out}\n")
    return 0
