"""``memrun compare A B``: the command line's options -> :class:`memrun.comparison.api.CompareRequest`,
:func:`memrun.compare`'s outcome -> text, markdown or JSON (``memrun null-band``: :mod:`memrun.commands.null_band`).

Exit codes (:class:`memrun.stats.ExitCode`), for CI gates:

| code | meaning |
|---|---|
| 0 | pass: the interval's lower bound clears ``--gate-min-delta`` |
| 1 | fail: the upper bound is below it |
| 2 | unresolved: the interval straddles it (inside the null band, or under-powered) |
| 3 | refused: the runs are not comparable (or made with fake providers) |
| 4 | usage error: bad arguments, unreadable run, nothing to pair |

``null-band`` exits 0 when it printed a band, 3 or 4 like ``compare`` otherwise (it
refuses two runs of different configurations: their difference is not noise).

Every failure, an unexpected one included, is one ``memrun: error:`` line on stderr
and exit 4; with ``--format json`` stdout always holds a JSON document (``outcome``
``refused`` or ``usage_error`` with ``reason``, when there is no comparison), and with
``--format markdown`` a markdown document for every outcome
(:mod:`memrun.report.compare_pr`: the sticky-comment marker, the runs by id and config).

``memrun compare A B C ...`` (more than one arm against the baseline A) compares every arm
with A and reads them as one family (:mod:`memrun.comparison.family`): a table of each
arm's own gate and Holm's step-down over the arms' one-sided gate p-values, a winner only
when both pass (2.5% family-wise false PASS). Exit code 0 when an arm is a winner, else 3
when an arm could not be compared, 1 when every arm failed, 2 otherwise.

``--gate NAME`` reads ``conf/gates/NAME.yaml`` (:mod:`memrun.comparison.gates`; flags win);
``--baseline auto B`` finds A among the runs under ``--runs-dir``
(:mod:`memrun.comparison.baseline`; none found: exit 4).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memrun.commands.compare_options import build_parser
from memrun.comparison.api import CompareRequest, compare, resolve, treatments_of
from memrun.errors import MemrunError, UsageExit
from memrun.lazy import lazy
from memrun.report.compare_report import render_json, render_markdown, render_text
from memrun.stats import ExitCode

__all__ = ["build_parser", "request_from", "print_warning", "main"]  # build_parser: memrun.commands.compare_options

if TYPE_CHECKING:
    from memrun.comparison import family as comparison_family
    from memrun.comparison import flips as compare_flips
    from memrun.report import compare_pr as report_compare_pr
    from memrun.report import family_table as report_family_table
    from memrun.report import flips as report_flips
else:
    compare_flips = lazy("memrun.comparison.flips")
    report_flips = lazy("memrun.report.flips")
    report_compare_pr = lazy("memrun.report.compare_pr")
    report_family_table = lazy("memrun.report.family_table")
    comparison_family = lazy("memrun.comparison.family")

def request_from(args: argparse.Namespace) -> CompareRequest:
    """The parsed options as a :class:`CompareRequest` (``--baseline auto B``: B is the one run given)."""
    names = ("metric", "cluster_by", "stratify_by", "categories", "allow_fake", "resamples", "seed", "baseline",
             "runs_dir", "gate", "allow_noncomparable", "gate_min_delta", "gate_band", "max_error_share",
             "max_error_gap", "min_paired_share", "effect", "judge_calibration", "max_false_pass", "check_replications")
    given = {n: getattr(args, n) for n in names if hasattr(args, n)}
    a, b = (None, args.a) if getattr(args, "baseline", None) is not None else (args.a, args.b)
    return CompareRequest(a=a, b=b, treatments=tuple(treatments_of(getattr(args, "treatment", []))), **given)


def print_warning(line: str) -> None:
    """A warning said while reading the runs, as ``memrun compare`` prints it (stderr)."""
    sys.stderr.write(f"memrun: warning: {line}\n")


def _format(argv: Sequence[str]) -> str:
    """The --format asked for in ``argv`` (read before parsing, so that a bad argument still
    gets a JSON or markdown document)."""
    argv = list(argv)
    for i, a in enumerate(argv):
        if a.startswith("--format="):
            return a.partition("=")[2]
        if a == "--format" and i + 1 < len(argv):
            return argv[i + 1]
    return "text"


def _fail(code: int, reason: str, fmt: str, paths: tuple[str | None, str | None] = (None, None)) -> int:
    """Print why there is no comparison on stderr; with --format json or markdown, also a
    document on stdout (markdown: the sticky-comment marker and the runs, as far as readable)."""
    sys.stderr.write(f"{reason}\n")
    return _document(code, reason, fmt, paths)


def _document(code: int, reason: str, fmt: str, paths: tuple[str | None, str | None] = (None, None)) -> int:
    """The --format json / markdown document of an outcome without a comparison (stdout only)."""
    sys.stdout.write(report_compare_pr.render_no_comparison(fmt, code, reason, paths))
    return code


def _guarded(argv: Sequence[str], parser: argparse.ArgumentParser, body, check=None) -> int:
    """Parse ``argv`` and run ``body(args)``; every failure becomes one line and an exit code.

    MemrunError -> exit 4 (usage); any other exception is a bug, reported in one line
    naming it, and exit 4 too: CI must never read a crash as a FAIL (1).
    """
    fmt = _format(argv)
    try:
        args = parser.parse_args(list(argv))
        if check is not None:
            check(parser, args)
    except UsageExit as exc:  # argparse printed the usage and the reason on stderr
        _document(int(ExitCode.USAGE_ERROR), f"memrun: error: {exc.message}", fmt)
        raise
    try:
        return body(args)
    except MemrunError as exc:
        return _fail(int(ExitCode.USAGE_ERROR), f"memrun: error: {exc}", fmt, _paths(args))
    except Exception as exc:  # noqa: BLE001 - a bug must not exit 1 (FAIL) with a traceback
        return _fail(int(ExitCode.USAGE_ERROR),
                     f"memrun: error: {parser.prog} failed unexpectedly: {type(exc).__name__}: {exc} "
                     "(a bug in memrun: please report it with the two run files)", fmt, _paths(args))


def _paths(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(A, B) as far as known (with --baseline auto, A may not be found yet)."""
    a, b = getattr(args, "a", None), getattr(args, "b", None)
    return (None, a) if b is None else (a, b)


def main(argv: Sequence[str]) -> int:
    """``memrun compare A B [options]``; returns the exit code in the module docstring."""
    def body(args: argparse.Namespace) -> int:
        if args.more:
            return _family(args)
        request, notes = resolve(request_from(args))
        for note in notes:
            sys.stderr.write(f"memrun: {note}\n")
        args.a, args.b = request.a, request.b  # A found: error documents name both runs
        outcome = compare(request, on_warning=print_warning)
        result = outcome.comparison
        if result is None:
            return _fail(outcome.exit_code, outcome.refusal or "", args.format, (args.a, args.b))
        d = result.to_dict()
        if args.format != "text":
            d["runs"] = report_compare_pr.run_context(args.a, args.b)
            d["runs"]["baseline"] = args.baseline  # "auto": A was found, not given
        if args.flips:
            d["flips"] = compare_flips.side_by_side(compare_flips.flip_list(result.paired), args.a, args.b)
        render = {"text": render_text, "markdown": render_markdown, "json": render_json}[args.format]
        sys.stdout.write(render(d))
        if args.flips and args.format == "text":
            sys.stdout.write("\n".join(["", *report_flips.flips_text(d["flips"], d["metric"])]) + "\n")
        elif args.flips and args.format == "markdown":
            sys.stdout.write("\n".join(["", *report_flips.flips_markdown(d["flips"], d["metric"])]) + "\n")
        return outcome.exit_code

    return _guarded(argv, build_parser(), body, _check_runs)


def _family(args: argparse.Namespace) -> int:
    """``memrun compare A B C ...``: every arm against A, read as one family
    (:mod:`memrun.comparison.family`); the family's exit code."""
    base = request_from(args)
    arms = [comparison_family.Arm(run, "-", dataclasses.replace(base, b=run)) for run in (args.b, *args.more)]
    family = comparison_family.compare_family(args.a, "-", arms)
    sys.stdout.write(report_family_table.render(family, args.format))
    return comparison_family.family_exit_code(family)


def _check_runs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Two runs or more, or one with --baseline auto: else a usage error (exit 4)."""
    if args.more and (args.baseline is not None or args.flips):
        parser.error("--baseline auto and --flips compare two runs: give A and B only, or drop them for a family "
                     "of arms (A B C ...)")
    if args.baseline is None and args.b is None:
        parser.error("give two runs, A (the baseline) and B (the change), or --baseline auto B")
    if args.baseline is not None and args.b is not None:
        parser.error("--baseline auto finds A itself: give only B")
    if args.baseline not in (None, "auto"):
        parser.error(f"--baseline {args.baseline}: only 'auto' is known (or give A and B)")
