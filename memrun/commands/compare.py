"""``memrun compare A B`` and ``memrun null-band A A2``.

Exit codes (:class:`memrun.stats.ExitCode`), for CI gates:

| code | meaning |
|---|---|
| 0 | pass: the interval's lower bound clears ``--gate-min-delta`` |
| 1 | fail: the upper bound is below it |
| 2 | unresolved: the interval straddles it (inside the null band, or under-powered) |
| 3 | refused: the runs are not comparable (or made with fake providers) |
| 4 | usage error: bad arguments, unreadable run, nothing to pair |

``null-band`` exits 0 when it printed a band, 3 or 4 like ``compare`` otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from memrun.compare.analysis import Comparison, Settings, analyze
from memrun.compare.pairing import pair
from memrun.errors import MemrunError
from memrun.instrument import Instrument
from memrun.io.reader import RunTable, read_run
from memrun.report.compare_report import render_json, render_markdown, render_text
from memrun.stats import DEFAULT_BAND, ExitCode, JudgeCalibration, band_from_null


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors exit with ExitCode.USAGE_ERROR (2 means unresolved)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"memrun: error: {message}\n")
        raise SystemExit(int(ExitCode.USAGE_ERROR))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metric", default="recall@5",
                        help="retrieval axis: recall@K (hit or not), recall_all@K, ndcg@K, precision@K or mrr "
                             "(default recall@5); the accuracy axis always uses the majority label")
    parser.add_argument("--cluster-by", default="cluster",
                        help="column whose values are resampled together (default: cluster, the benchmark's "
                             "cluster key); 'none' resamples items")
    parser.add_argument("--categories", metavar="LIST",
                        help="only these categories, comma-separated, or 'comparable' for the benchmark's "
                             "published subset (LoCoMo: 1,2,3,4); default: every category")
    parser.add_argument("--allow-fake", action="store_true",
                        help="compare runs made with fake or stub providers (their scores measure nothing)")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="memrun compare", description="Decide whether run B beats run A (paired, clustered bootstrap).")
    parser.add_argument("a", help="run A (the baseline): a run folder or items.parquet")
    parser.add_argument("b", help="run B (the change)")
    _common(parser)
    parser.add_argument("--treatment", action="append", default=[], metavar="FIELD",
                        help="an instrument field the comparison is meant to vary (repeatable), e.g. search_mode")
    parser.add_argument("--allow-noncomparable", action="store_true",
                        help="show the numbers anyway, every output line labelled NON-COMPARABLE; "
                             "the exit code stays 3 (refused) so that no gate passes on them")
    parser.add_argument("--gate-min-delta", type=float, default=0.0, metavar="PP",
                        help="pass when the lower bound is above this, in pp (default 0; negative: non-inferiority)")
    parser.add_argument("--gate-band", type=float, default=100 * DEFAULT_BAND, metavar="PP",
                        help="null band (noise floor) in pp, default 4.0; measure yours with memrun null-band")
    parser.add_argument("--judge-calibration", type=Path, metavar="FILE",
                        help="JSON with tpr, fpr, n_pos, n_neg (memrun calibrate-judge): report delta / J")
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    return parser


def _load(path: str) -> RunTable:
    run = read_run(path)
    if not run.complete:
        sys.stderr.write(f"memrun: warning: {path} did not finish; comparing the {run.table.num_rows} rows it wrote\n")
    elif run.instrument.status != "complete":
        sys.stderr.write(f"memrun: warning: {path} ended {run.instrument.status}; comparing the rows it wrote\n")
    return run


def _refusal(a: Instrument, b: Instrument, treatments: list[str], allow_noncomparable: bool, allow_fake: bool,
             path_a: str, path_b: str) -> tuple[list, str | None]:
    """(differences, refusal message or None)."""
    try:
        differences = a.diff(b, treatments)
    except ValueError as exc:
        raise MemrunError(str(exc)) from exc
    fake = [p for p, inst in ((path_a, a), (path_b, b)) if inst.fake_providers]
    if fake and not allow_fake:
        return differences, (f"refused: {' and '.join(fake)} ran with fake or stub providers; their scores "
                             "measure nothing (pass --allow-fake to compare anyway)")
    if differences and not allow_noncomparable:
        lines = [f"refused: the runs are not comparable ({len(differences)} field(s) differ):"]
        lines += [f"  {d.field}: A={d.a!r} B={d.b!r}: {d.why}" for d in differences]
        lines.append("  name the fields the comparison is meant to vary with --treatment FIELD, "
                     "or pass --allow-noncomparable to see the numbers labelled NON-COMPARABLE")
        return differences, "\n".join(lines)
    return differences, None


def _categories(arg: str | None, run: RunTable) -> list[str] | None:
    if not arg:
        return None
    if arg == "comparable":
        if not run.instrument.comparable_categories:
            raise MemrunError(f"--categories comparable: {run.path} names no comparable subset; list the categories")
        return list(run.instrument.comparable_categories)
    return [c.strip() for c in arg.split(",") if c.strip()]


def compare(args: argparse.Namespace) -> tuple[Comparison | None, int, str | None]:
    """Run a comparison from parsed arguments: (comparison, exit code, refusal text)."""
    run_a, run_b = _load(args.a), _load(args.b)
    same_id = run_a.instrument.run_id and run_a.instrument.run_id == run_b.instrument.run_id
    if same_id or run_a.path.resolve() == run_b.path.resolve():
        raise MemrunError(f"{args.a} and {args.b} are the same run; compare two runs "
                          "(for the noise floor, two runs of one config with memrun null-band)")
    treatments = getattr(args, "treatment", [])
    allow_noncomparable = getattr(args, "allow_noncomparable", False)
    differences, refusal = _refusal(run_a.instrument, run_b.instrument, treatments,
                                    allow_noncomparable, args.allow_fake, args.a, args.b)
    if refusal:
        return None, int(ExitCode.REFUSAL), refusal
    for name in ("gate_band", "resamples"):
        if getattr(args, name, 0) < 0 or (name == "resamples" and args.resamples < 1):
            raise MemrunError(f"--{name.replace('_', '-')} {getattr(args, name)}: must be "
                              + ("at least 1" if name == "resamples" else ">= 0 pp"))
    calibration = None
    if getattr(args, "judge_calibration", None):
        try:
            calibration = JudgeCalibration.from_dict(json.loads(args.judge_calibration.read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MemrunError(f"--judge-calibration {args.judge_calibration}: {exc}") from exc
    cluster_by = None if args.cluster_by == "none" else args.cluster_by
    settings = Settings(
        metric=args.metric, cluster_by=cluster_by, resamples=args.resamples, seed=args.seed,
        min_delta=getattr(args, "gate_min_delta", 0.0) / 100, band=getattr(args, "gate_band", 100 * DEFAULT_BAND) / 100,
        treatments=tuple(treatments), calibration=calibration,
    )
    paired = pair(run_a, run_b, metric=args.metric, cluster_by=cluster_by,
                  categories=_categories(args.categories, run_a))
    try:
        result = analyze(paired, settings, run_a=args.a, run_b=args.b, axis=run_a.instrument.axis,
                         denominator=run_a.instrument.denominator, differences=differences)
    except ValueError as exc:
        raise MemrunError(str(exc)) from exc
    return result, result.exit_code, None


def _compare_or_exit_code(args: argparse.Namespace) -> tuple[Comparison, int] | int:
    """(comparison, exit code), or the exit code after printing why there is none.

    With ``--format json`` the reason is also written to stdout as JSON, so a machine
    reading stdout always gets a document.
    """
    try:
        result, code, refusal = compare(args)
        reason = refusal
    except MemrunError as exc:
        result, code, reason = None, int(ExitCode.USAGE_ERROR), f"memrun: error: {exc}"
    if result is None:
        sys.stderr.write(f"{reason}\n")
        if getattr(args, "format", None) == "json":
            outcome = "refused" if code == ExitCode.REFUSAL else "usage_error"
            sys.stdout.write(json.dumps({"outcome": outcome, "exit_code": code, "reason": reason}, indent=2) + "\n")
        return code
    return result, code


def main(argv: Sequence[str]) -> int:
    """``memrun compare A B [options]``; returns the exit code in the module docstring."""
    args = build_parser().parse_args(list(argv))
    outcome = _compare_or_exit_code(args)
    if isinstance(outcome, int):
        return outcome
    result, code = outcome
    render = {"text": render_text, "markdown": render_markdown, "json": render_json}[args.format]
    sys.stdout.write(render(result.to_dict()))
    return code


def null_band_main(argv: Sequence[str]) -> int:
    """``memrun null-band A A2``: the gate band measured from two same-config runs."""
    parser = _Parser(prog="memrun null-band",
                     description="Measure the null band from two runs of the same configuration.")
    parser.add_argument("a", help="a run")
    parser.add_argument("b", metavar="a2", help="a second run of the same configuration")
    _common(parser)
    outcome = _compare_or_exit_code(parser.parse_args(list(argv)))
    if isinstance(outcome, int):
        return outcome
    result = outcome[0]
    band = band_from_null(result.overall["bootstrap"])
    o = result.overall
    print(f"A2 - A: {100 * o['delta']:+.1f} pp [{100 * o['low']:+.1f}, {100 * o['high']:+.1f}] over {o['n_items']} items "
          f"in {o['n_clusters']} clusters ({o['wins']}/{o['ties']}/{o['losses']})")
    print(f"null band (the interval's wider side): {100 * band:.1f} pp")
    if result.discordance == 0:
        print("note: the two runs agree on every item (a deterministic arm?); the band is 0 and any "
              "difference will look significant: measure noise where it exists (repeats, another seed)")
    print(f"pass it on: memrun compare A B --gate-band {100 * band:.1f}")
    return 0
