"""``memrun compare A B`` and ``memrun null-band A A2``.

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

``--gate NAME`` reads ``conf/gates/NAME.yaml`` (:mod:`memrun.comparison.gates`; flags win);
``--baseline auto B`` finds A among the runs under ``--runs-dir``
(:mod:`memrun.comparison.baseline`; none found: exit 4).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pyarrow as pa
import pyarrow.compute as pc

from memrun.comparison.analysis import Bounds, Comparison, Settings, analyze, category_order, metric_unit
from memrun.comparison.baseline import find_baseline
from memrun.comparison.design import cluster_supply, design_notes, evidence_sensitivity
from memrun.comparison.fitness import DataThresholds
from memrun.comparison.pairing import Paired, pair, read_for_compare
from memrun.core.background import in_background
from memrun.core.instrument import Instrument
from memrun.errors import MemrunError
from memrun.io.reader import RunTable, read_instrument
from memrun.lazy import lazy
from memrun.metrics.retrieval import item_column_for
from memrun.report.compare_report import render_json, render_markdown, render_text
from memrun.stats import DEFAULT_BAND, ExitCode, JudgeCalibration, band_from_null

compare_gates = lazy("memrun.comparison.gates")
compare_flips = lazy("memrun.comparison.flips")
report_flips = lazy("memrun.report.flips")
report_compare_pr = lazy("memrun.report.compare_pr")


_LIMITS = DataThresholds()
DEFAULTS = {"metric": "recall@5", "gate_min_delta": 0.0, "gate_band": 100 * DEFAULT_BAND,
            "max_error_share": _LIMITS.max_error_share, "max_error_gap": _LIMITS.max_error_gap,
            "min_paired_share": _LIMITS.min_paired_share}


class _BadArguments(SystemExit):
    """A usage error found by argparse (exit 4); ``message`` says which."""

    def __init__(self, message: str) -> None:
        super().__init__(int(ExitCode.USAGE_ERROR))
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors exit with ExitCode.USAGE_ERROR (2 means unresolved)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"memrun: error: {message}\n")
        raise _BadArguments(message)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metric", default="recall@5",
                        help="retrieval axis: recall@K (hit or not), recall_all@K, ndcg@K, precision@K or mrr "
                             "(default recall@5); the accuracy axis always uses the majority label")
    parser.add_argument("--cluster-by", default="cluster",
                        help="column whose values are resampled together (default: cluster, the benchmark's "
                             "cluster key); 'evidence': items sharing a gold session, one cluster (derived from "
                             "gold_sessions); 'none' resamples items")
    parser.add_argument("--stratify-by", default="auto", metavar="COLUMN",
                        help="resample clusters within each value of this column, keeping stratum sizes; "
                             "'auto' (default): the benchmark's design strata (LongMemEval: category, "
                             "its question type), 'none': no strata")
    parser.add_argument("--categories", metavar="LIST",
                        help="only these categories, comma-separated, 'comparable' for the benchmark's "
                             "published subset (LoCoMo: 1,2,3,4) or 'all'; default: the run's headline subset "
                             "when it names one (LoCoMo: 1,2,3,4), else every category")
    parser.add_argument("--allow-fake", action="store_true",
                        help="compare runs made with fake or stub providers (their scores measure nothing)")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="memrun compare", description="Decide whether run B beats run A (paired, clustered bootstrap).",
                     usage="memrun compare [options] A B  |  memrun compare [options] --baseline auto B  "
                           "(memrun compare --help lists the options)")
    parser.add_argument("a", nargs="?", help="run A (the baseline): a run folder or items.parquet")
    parser.add_argument("b", nargs="?", help="run B (the change)")
    _common(parser)
    parser.set_defaults(metric=None)  # filled from --gate, else recall@5 (:func:`_apply_gate`)
    parser.add_argument("--baseline", metavar="auto",
                        help="'auto': give only B; A is the newest finished run under --runs-dir comparable to B "
                             "except the --treatment fields, with another configuration")
    parser.add_argument("--runs-dir", default="outputs", metavar="DIR", help="where --baseline auto looks (default outputs)")
    parser.add_argument("--gate", metavar="NAME",
                        help="read metric, band, gate-min-delta and categories from conf/gates/NAME.yaml "
                             "(or a YAML file); flags given here override it")
    parser.add_argument("--treatment", action="append", default=[], metavar="FIELD[,FIELD...]",
                        help="instrument field(s) the comparison is meant to vary (repeatable or "
                             "comma-separated), e.g. search_mode or embedder,embedder_dim")
    parser.add_argument("--allow-noncomparable", action="store_true",
                        help="show the numbers anyway, every output line labelled NON-COMPARABLE; "
                             "the exit code stays 3 (refused) so that no gate passes on them")
    parser.add_argument("--gate-min-delta", type=float, default=None, metavar="PP",
                        help="pass when the lower bound is above this, in pp (default 0; negative: "
                             "non-inferiority); for mrr and ndcg@K in hundredths of the score (1 = 0.01)")
    parser.add_argument("--gate-band", type=float, default=None, metavar="PP",
                        help="null band (noise floor) in pp, default 4.0; measure yours with memrun null-band")
    parser.add_argument("--max-error-share", type=float, default=None, metavar="SHARE",
                        help="unresolved when an arm's errored items exceed this share of its items (default "
                             f"{_LIMITS.max_error_share:g})")
    parser.add_argument("--max-error-gap", type=float, default=None, metavar="SHARE",
                        help="unresolved when the arms' error shares differ by more (default "
                             f"{_LIMITS.max_error_gap:g})")
    parser.add_argument("--min-paired-share", type=float, default=None, metavar="SHARE",
                        help="unresolved when fewer of the items present in either run are in both (default "
                             f"{_LIMITS.min_paired_share:g})")
    parser.add_argument("--effect", type=float, default=None, metavar="PP",
                        help="an effect of interest for the power line: how many more clusters or items it "
                             "would need to pass in 80%% of runs (default: the null band)")
    parser.add_argument("--judge-calibration", type=Path, metavar="FILE",
                        help="JSON with tpr, fpr, n_pos, n_neg (memrun calibrate-judge): report delta / J")
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.add_argument("--flips", action="store_true",
                        help="also list the items the runs disagree on (B-wins first, then B-losses), each with what "
                             "A and B retrieved or answered and the gold marked; markdown embeds the top five each way")
    return parser


def _load(path: str, metric: str, cluster_by: str | None, stratify: str, warnings: list[str]) -> RunTable:
    """Read only the columns the comparison needs (the instrument first, to know the axis);
    what makes the run read differently (unfinished, partial, one shard) is printed on
    stderr and appended to ``warnings`` (the report's)."""
    instrument = read_instrument(path)
    run = read_for_compare(path, instrument.axis, metric, cluster_by, _stratify_by(stratify, instrument))
    said = []
    if not run.complete:
        said.append(f"{path} did not finish; comparing the {run.table.num_rows} rows it wrote")
    elif run.instrument.status != "complete":
        missing = (run.instrument.shard or {}).get("missing")
        shards = f" (shards {', '.join(map(str, missing))} missing)" if missing else ""
        said.append(f"{path} ended {run.instrument.status}{shards}; comparing the rows it wrote")
    shard = run.instrument.shard or {}
    if "index" in shard and "merged" not in shard:
        said.append(f"{path} is shard {shard['index']} of {shard['count']} of a run, not the whole run "
                    "(memrun merge the shards' folder to compare the whole)")
    for line in said:
        sys.stderr.write(f"memrun: warning: {line}\n")
    warnings.extend(said)
    return run


def _endpoint_warnings(a: Instrument, b: Instrument) -> list[str]:
    """One line per LLM role (reader, judge, judge2) whose calls went to different base URLs
    in the two runs: one model name on two servers may be two models, or two versions."""
    return [f"the {role} calls went to different endpoints (A: {a.llm_endpoints[role]}, B: {b.llm_endpoints[role]}); "
            "one model name on two servers may be two models or two versions"
            for role in ("reader", "judge", "judge2")
            if role in a.llm_endpoints and role in b.llm_endpoints and a.llm_endpoints[role] != b.llm_endpoints[role]]


def _stratify_by(arg: str, instrument: Instrument) -> str | None:
    if arg == "none":
        return None
    if arg == "auto":
        return instrument.stratify_by
    return arg


def treatments_of(values: list[str]) -> list[str]:
    """``--treatment a --treatment b,c`` -> ``[a, b, c]``."""
    return [t.strip() for value in values for t in value.split(",") if t.strip()]


def _refusal(a: Instrument, b: Instrument, treatments: list[str], allow_noncomparable: bool, allow_fake: bool,
             path_a: str, path_b: str) -> tuple[list, str | None]:
    """(differences, refusal message or None). The message lists every differing field
    at once and the exact flags that would name them all as treatments."""
    try:
        differences = a.diff(b, treatments)
    except ValueError as exc:
        raise MemrunError(str(exc)) from exc
    unmeasurable = [f"{p}: {inst.retrieval_not_measurable}" for p, inst in ((path_a, a), (path_b, b))
                    if inst.retrieval_not_measurable and inst.axis != "accuracy"]
    if unmeasurable:  # its metric columns hold zeros that measure nothing
        return [], "refused: a run's retrieval metrics are not measurable:\n  " + "\n  ".join(unmeasurable)
    fake = [p for p, inst in ((path_a, a), (path_b, b)) if inst.fake_providers]
    if fake and not allow_fake:
        return differences, (f"refused: {' and '.join(fake)} ran with fake or stub providers; their scores "
                             "measure nothing (pass --allow-fake to compare anyway)")
    if differences and not allow_noncomparable:
        flags = " ".join(f"--treatment {d.field}" for d in differences)
        lines = [f"refused: the runs are not comparable ({len(differences)} field(s) differ):"]
        lines += [f"  {d.field}: A={d.a!r} B={d.b!r}: {d.why}" for d in differences]
        lines.append(f"  if the comparison is meant to vary these, name them: {flags}")
        lines.append("  or pass --allow-noncomparable to see the numbers labelled NON-COMPARABLE")
        return differences, "\n".join(lines)
    return differences, None


def _calibration(args: argparse.Namespace, axis: str | None) -> JudgeCalibration | None:
    """The --judge-calibration file, or None; refused off the accuracy axis or when fake."""
    path = getattr(args, "judge_calibration", None)
    if not path:
        return None
    if axis != "accuracy":
        raise MemrunError(f"--judge-calibration: the runs are on the {axis} axis, which has no judge; "
                          "a judge calibration corrects judged accuracy only (axis=accuracy)")
    try:
        data = json.loads(path.read_text())
        calibration = JudgeCalibration.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MemrunError(f"--judge-calibration {path}: {exc}") from exc
    if data.get("fake_providers") and not args.allow_fake:
        raise _Refused(f"refused: --judge-calibration {path} was measured with a fake or stub judge; its rates "
                       "measure nothing (pass --allow-fake to use it anyway)")
    return calibration


class _Refused(Exception):
    """A refusal (exit 3) raised from inside the set-up."""


def _categories(arg: str | None, run: RunTable) -> tuple[list[str] | None, str]:
    """(categories to read or None for all, how they were chosen). Without --categories,
    the run's headline subset (what its summary and report read), when it names one."""
    if arg == "all":
        return None, "every category (--categories all)"
    if not arg:
        if run.instrument.comparable_categories:
            return _headline_subset(run)
        return None, "every category"
    return _named_categories(arg, run), "--categories"


def _headline_subset(run: RunTable) -> tuple[list[str] | None, str]:
    """The run's headline subset, less the categories none of its rows has (a slice of a
    benchmark may hold only some of them): its summary's headline reads the same items."""
    subset = list(run.instrument.comparable_categories or [])
    present = (set(pc.unique(run.table.column("category").cast(pa.string())).to_pylist())
               if "category" in run.table.column_names else set(subset))
    absent = [c for c in subset if c not in present]
    kept = [c for c in subset if c in present]
    if not kept:
        return None, (f"every category: the run holds none of its headline subset ({', '.join(subset)})")
    note = f" (no item of {', '.join(absent)} in this run)" if absent else ""
    return kept, f"the run's headline subset{note}; --categories all reads every category"


def _named_categories(arg: str, run: RunTable) -> list[str]:
    if arg == "comparable":
        if not run.instrument.comparable_categories:
            raise MemrunError(f"--categories comparable: {run.path} names no comparable subset; list the categories")
        return list(run.instrument.comparable_categories)
    return [c.strip() for c in arg.split(",") if c.strip()]


@dataclass
class _Prepared:
    """What a comparison reads and how, before pairing (:func:`_prepare`)."""

    run_a: RunTable
    run_b: RunTable
    cluster_by: str | None
    stratify_by: str | None
    settings: Settings
    differences: list
    read_warnings: list[str]
    categories: list[str] | None
    chosen: str

    def pair(self) -> Paired:
        """The items both runs scored, paired (:func:`memrun.comparison.pairing.pair`)."""
        return pair(self.run_a, self.run_b, metric=self.settings.metric, cluster_by=self.cluster_by,
                    stratify_by=self.stratify_by, categories=self.categories)


def _prepare(args: argparse.Namespace) -> _Prepared | tuple[None, int, str]:
    """Read both runs and check them and the settings: what to pair, or (None, exit code,
    refusal). Raises MemrunError for a usage error."""
    for dest, value in DEFAULTS.items():  # left unset by the flags and any --gate file
        if getattr(args, dest, None) is None:
            setattr(args, dest, value)
    _check_metric(args.metric)
    cluster_by = None if args.cluster_by == "none" else args.cluster_by
    read_warnings: list[str] = []
    run_a = _load(args.a, args.metric, cluster_by, args.stratify_by, read_warnings)
    run_b = _load(args.b, args.metric, cluster_by, args.stratify_by, read_warnings)
    same_id = run_a.instrument.run_id and run_a.instrument.run_id == run_b.instrument.run_id
    if same_id or run_a.path.resolve() == run_b.path.resolve():
        raise MemrunError(f"{args.a} and {args.b} are the same run; "
                          + ("a null band needs two runs of one configuration (run it twice)"
                             if getattr(args, "same_configuration", False) else
                             "compare two runs (for the noise floor, two runs of one config with memrun null-band)"))
    treatments = treatments_of(getattr(args, "treatment", []))
    allow_noncomparable = getattr(args, "allow_noncomparable", False)
    differences, refusal = _refusal(run_a.instrument, run_b.instrument, treatments,
                                    allow_noncomparable, args.allow_fake, args.a, args.b)
    if refusal:
        return None, int(ExitCode.REFUSAL), refusal
    for line in _endpoint_warnings(run_a.instrument, run_b.instrument):
        sys.stderr.write(f"memrun: warning: {line}\n")
        read_warnings.append(line)
    if getattr(args, "same_configuration", False):
        changed = run_a.instrument.configuration_diff(run_b.instrument)
        if changed:
            lines = [f"refused: a null band needs two runs of one configuration; {len(changed)} key(s) differ:"]
            lines += [f"  {key}: A={va!r} B={vb!r}" for key, va, vb in changed]
            lines.append("  their difference is the change itself, not noise: compare them with memrun compare")
            return None, int(ExitCode.REFUSAL), "\n".join(lines)
    for name in ("gate_band", "resamples"):
        if getattr(args, name, 0) < 0 or (name == "resamples" and args.resamples < 1):
            raise MemrunError(f"--{name.replace('_', '-')} {getattr(args, name)}: must be "
                              + ("at least 1" if name == "resamples" else ">= 0 pp"))
    try:
        calibration = _calibration(args, run_a.instrument.axis)
    except _Refused as exc:
        return None, int(ExitCode.REFUSAL), str(exc)
    stratify_by = _stratify_by(args.stratify_by, run_a.instrument)
    if cluster_by and cluster_by == stratify_by:
        raise MemrunError(f"--cluster-by {cluster_by} with --stratify-by {stratify_by} (the run's design strata): "
                          "each stratum would be one cluster redrawn within itself, a zero-width interval; cluster "
                          "by a finer key (--cluster-by cluster, or evidence) or pass --stratify-by none")
    try:
        thresholds = DataThresholds(args.max_error_share, args.max_error_gap, args.min_paired_share)
    except ValueError as exc:
        raise MemrunError(str(exc)) from None
    settings = Settings(
        metric=args.metric, cluster_by=cluster_by, resamples=args.resamples, seed=args.seed,
        min_delta=getattr(args, "gate_min_delta", 0.0) / 100, band=getattr(args, "gate_band", 100 * DEFAULT_BAND) / 100,
        treatments=tuple(treatments), calibration=calibration, stratify_by=stratify_by, thresholds=thresholds,
        effect=None if getattr(args, "effect", None) is None else abs(args.effect) / 100,
    )
    categories, chosen = _categories(args.categories, run_a)
    return _Prepared(run_a, run_b, cluster_by, stratify_by, settings, differences, read_warnings, categories, chosen)


def paired_items(args: argparse.Namespace) -> tuple[Paired | None, int, str | None]:
    """The comparison's pairing alone, no statistics: (paired items, 0, None), or (None, exit
    code, refusal) as :func:`compare` refuses. What the flips page reads
    (:mod:`memrun.comparison.flips`). Raises MemrunError as :func:`compare` does."""
    prepared = _prepare(args)
    if isinstance(prepared, tuple):
        return prepared
    return prepared.pair(), 0, None


def compare(args: argparse.Namespace) -> tuple[Comparison | None, int, str | None]:
    """Run a comparison from parsed arguments: (comparison, exit code, refusal text).

    Raises MemrunError (exit 4) for a usage error: bad arguments, unreadable runs,
    nothing to pair.
    """
    in_background(lambda: importlib.import_module("scipy.stats"))  # Wilcoxon's; ~1 s, overlaps the reading
    prepared = _prepare(args)
    if isinstance(prepared, tuple):
        return prepared
    run_a, settings, differences = prepared.run_a, prepared.settings, prepared.differences
    cluster_by, stratify_by, read_warnings = prepared.cluster_by, prepared.stratify_by, prepared.read_warnings
    chosen = prepared.chosen
    paired = prepared.pair()
    try:
        result = analyze(paired, settings, run_a=args.a, run_b=args.b, axis=run_a.instrument.axis,
                         denominator=run_a.instrument.denominator, differences=differences)
    except ValueError as exc:
        if stratify_by and "stratum" in str(exc):
            raise MemrunError(f"--stratify-by {stratify_by}: a cluster (column {cluster_by}) holds items of several "
                              f"{stratify_by} values; strata must contain whole clusters (stratify by a "
                              f"coarser column, or --cluster-by none)") from exc
        raise MemrunError(str(exc)) from exc
    result.warnings[:0] = read_warnings
    result.categories = {"read": sorted(paired.category_names, key=category_order), "chosen": chosen}
    result.warnings.extend(design_notes(result, run_a.instrument, stratify_by))
    result.warnings.extend(evidence_sensitivity(result))
    cluster_supply(result, run_a.instrument)
    return result, result.exit_code, None



def _check_metric(metric: str) -> None:
    """One error for an unknown --metric on both axes (the accuracy axis reads the majority
    label, but a misspelt metric must not pass unnoticed there either)."""
    try:
        item_column_for(metric)
    except ValueError as exc:
        raise MemrunError(f"--metric {metric}: {exc}") from None


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
    outcome = "refused" if code == ExitCode.REFUSAL else "usage_error"
    if fmt == "json":
        sys.stdout.write(json.dumps({"outcome": outcome, "exit_code": code, "reason": reason,
                                     "error": reason if outcome == "usage_error" else None}, indent=2) + "\n")
    elif fmt == "markdown":
        a, b = paths
        context = report_compare_pr.run_context(a, b or "")
        sys.stdout.write(report_compare_pr.render_outcome_markdown(outcome, code, reason, context))
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
    except _BadArguments as exc:  # argparse printed the usage and the reason on stderr
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
        _resolve_runs(args)
        result, code, refusal = compare(args)
        if result is None:
            return _fail(code, refusal or "", args.format, (args.a, args.b))
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
        return code

    return _guarded(argv, build_parser(), body, _check_runs)


def _check_runs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Two runs, or one with --baseline auto: else a usage error (exit 4)."""
    if args.baseline is None and args.b is None:
        parser.error("give two runs, A (the baseline) and B (the change), or --baseline auto B")
    if args.baseline is not None and args.b is not None:
        parser.error("--baseline auto finds A itself: give only B")
    if args.baseline not in (None, "auto"):
        parser.error(f"--baseline {args.baseline}: only 'auto' is known (or give A and B)")


def _resolve_runs(args: argparse.Namespace) -> None:
    """Apply --gate and --baseline: fill the settings the flags left unset, and find A.
    Raises MemrunError for a bad gate, a missing run or no baseline."""
    if args.gate:
        for dest, value in compare_gates.load_gate(args.gate).items():
            if getattr(args, dest, None) is None:
                setattr(args, dest, value)
    if args.baseline is None:
        return

    args.b = args.a
    folder, why = find_baseline(args.b, args.runs_dir, treatments_of(args.treatment))
    args.a = str(folder)
    sys.stderr.write(f"memrun: {why}\n")


def null_band_main(argv: Sequence[str]) -> int:
    """``memrun null-band A A2``: the gate band measured from two same-config runs.

    Refuses (exit 3) runs whose instruments differ or whose configurations differ
    (:meth:`memrun.core.instrument.Instrument.configuration_diff`): the band is the noise
    between two runs of one configuration.
    """
    parser = _Parser(prog="memrun null-band",
                     description="Measure the null band from two runs of the same configuration.")
    parser.add_argument("a", help="a run")
    parser.add_argument("b", metavar="a2", help="a second run of the same configuration")
    _common(parser)

    def body(args: argparse.Namespace) -> int:
        args.same_configuration = True
        result, code, refusal = compare(args)
        if result is None:
            return _fail(code, refusal or "", "text")
        if result.verdict.get("detail"):  # too few items or clusters: no interval to read a band from
            return _fail(int(ExitCode.USAGE_ERROR), f"memrun: error: no null band from these runs: "
                         f"{result.verdict['detail']}", "text")
        band = band_from_null(Bounds.of(result.overall))
        o = result.overall
        score = metric_unit(args.metric, result.axis) == "score"
        fmt = (lambda x: f"{x:+.3f}") if score else (lambda x: f"{100 * x:+.1f}")
        unit = "" if score else " pp"
        print(f"A2 - A: {fmt(o['delta'])}{unit} [{fmt(o['low'])}, {fmt(o['high'])}] over {o['n_items']} items "
              f"in {o['n_clusters']} clusters ({o['wins']}/{o['ties']}/{o['losses']})")
        print(f"null band (the interval's wider side): {100 * band:.1f}{unit or ' (hundredths of the score)'}")
        if result.discordance == 0:
            print("note: the two runs agree on every item (a deterministic arm?); the band is 0 and any "
                  "difference will look significant: measure noise where it exists (repeats, another seed)")
        print(f"pass it on: memrun compare A B --gate-band {100 * band:.1f}")
        return 0

    return _guarded(argv, parser, body)
