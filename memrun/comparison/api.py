"""``memrun.compare``: a :class:`CompareRequest` in, a :class:`CompareOutcome` out.

The whole compare flow from Python, with no argparse and nothing printed::

    outcome = memrun.compare(CompareRequest(a="outputs/bm25", b="outputs/dense"))
    outcome.status        # "compared" or "refused"
    outcome.exit_code     # 0 pass, 1 fail, 2 unresolved, 3 refused (memrun.stats.ExitCode)
    outcome.comparison    # the Comparison (None when refused): .to_dict(), .verdict, .overall
    outcome.warnings      # what makes the runs read differently, said while reading them

A usage error (an unreadable run, a bad metric, nothing to pair, no baseline found) raises
:class:`memrun.errors.MemrunError` (exit code 4 on the command line). ``memrun compare``,
``memrun null-band``, ``memrun report A B``, ``memrun view``'s compare page and
``memrun plan --pilot`` all go through :func:`compare`.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import numbers
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from memrun.comparison.analysis import Comparison, Settings, analyze, category_order
from memrun.comparison.baseline import find_baseline
from memrun.comparison.design import cluster_supply, design_notes, evidence_sensitivity
from memrun.comparison.fitness import DataThresholds, unfinished_hold
from memrun.comparison.pairing import Paired, pair, read_for_compare, shared_items
from memrun.core.background import in_background
from memrun.core.instrument import NEVER_TREATMENTS, Difference, Instrument
from memrun.errors import CompareUsageError, MemrunError
from memrun.io.reader import RunTable, read_instrument
from memrun.lazy import lazy
from memrun.metrics.by_category import raw_category
from memrun.metrics.intervals import retrieval_headline_metric
from memrun.metrics.retrieval import depth_read, item_column_for
from memrun.stats import DEFAULT_BAND, ExitCode, JudgeCalibration

if TYPE_CHECKING:
    from memrun.comparison import gates as compare_gates
else:
    compare_gates = lazy("memrun.comparison.gates")

_LIMITS = DataThresholds()
DEFAULTS = {"metric": "recall@5", "gate_min_delta": 0.0, "gate_band": 100 * DEFAULT_BAND,
            "max_error_share": _LIMITS.max_error_share, "max_error_gap": _LIMITS.max_error_gap,
            "min_paired_share": _LIMITS.min_paired_share}
"""What a setting left unset by the caller and by the gate file becomes."""

Say = Callable[[str], None]


@dataclass(frozen=True)
class CompareRequest:
    """What to compare and how: ``memrun compare``'s options as values (docs/reproducing.md).

    ``a``: run A, the baseline (a run folder or items.parquet); None (or left out) with
    ``baseline="auto"``, which finds it among the runs under ``runs_dir``. ``b``: run B, the
    change (required: left out, CompareUsageError says so).
    Settings left None are read from the ``gate`` file (``conf/gates/NAME.yaml`` or a YAML
    path), else :data:`DEFAULTS` (``metric``: run A's headline metric, recall@5 when A
    measures it: :func:`resolve`). Intervals and gates are in percentage points (pp; for
    ``mrr`` and ``ndcg@K`` hundredths of the score). ``same_configuration``: the null band's
    check, refusing two runs whose configurations differ.
    """

    a: str | None = None  # defaults given so that a missing a or b is CompareUsageError, not a bare TypeError
    b: str = ""
    metric: str | None = None
    cluster_by: str = "cluster"
    stratify_by: str = "auto"
    categories: str | None = None
    allow_fake: bool = False
    resamples: int = 10_000
    seed: int = 7
    baseline: str | None = None
    runs_dir: str = "outputs"
    gate: str | None = None
    treatments: tuple[str, ...] = ()
    allow_noncomparable: bool = False
    gate_min_delta: float | None = None
    gate_band: float | None = None
    max_error_share: float | None = None
    max_error_gap: float | None = None
    min_paired_share: float | None = None
    effect: float | None = None
    judge_calibration: Path | None = None
    same_configuration: bool = False
    max_false_pass: float = 3.0  # the design check's level, percent (docs/statistics.md)
    check_replications: int = 2000  # the design check's simulated null comparisons per scenario, at least
    metric_given: bool | None = None  # whether the caller named the metric (resolve() records it, once)

    def __post_init__(self) -> None:
        """Checks each field's type as a script may pass it wrong (the command line's parser
        already has): CompareUsageError naming the field, not an AttributeError or a
        TypeError deep in the comparison. A path may be a str or a path object (kept as
        str); ``treatments`` a tuple, a list or one comma-separated str (not its letters)."""
        for name, what in _PATHS.items():
            value = getattr(self, name)
            if isinstance(value, os.PathLike):
                object.__setattr__(self, name, os.fspath(value) if name != "judge_calibration" else Path(value))
            elif not (isinstance(value, str) or (value is None and name in _OPTIONAL)):
                raise CompareUsageError(f"CompareRequest.{name}: {what} (str or Path), "
                                        f"not {type(value).__name__} {value!r:.60}")
        if isinstance(self.treatments, str) or (
                isinstance(self.treatments, (list, tuple)) and all(isinstance(t, str) for t in self.treatments)):
            object.__setattr__(self, "treatments", tuple(treatments_of(
                [self.treatments] if isinstance(self.treatments, str) else self.treatments)))
        else:
            raise CompareUsageError(f"CompareRequest.treatments: comparability field names (a tuple of str), not "
                                    f"{type(self.treatments).__name__} {self.treatments!r:.60}")
        for name, kinds in _FIELD_KINDS.items():
            value = getattr(self, name)
            if value is None and name in _OPTIONAL:
                continue
            if isinstance(value, bool) != (kinds == (bool,)) or not isinstance(value, kinds) or (
                    kinds is _NUMBER and not math.isfinite(float(value))):  # type: ignore[arg-type]
                what = {(bool,): "True or False", _INT: "an int", (str,): "a str"}.get(kinds, "a finite number")
                raise CompareUsageError(f"{_flag(name)}: {what}" + (" or None" if name in _OPTIONAL else "")
                                        + f", not {type(value).__name__} {value!r:.60}")
        for name in ("cluster_by", "stratify_by", "metric", "runs_dir"):
            if getattr(self, name) == "":  # --cluster-by= read as no clusters, past --cluster-by none's refusal
                fix = "name a column, or none" if name in ("cluster_by", "stratify_by") else "name one"
                raise CompareUsageError(f"{_flag(name)} is empty; {fix}")
        if self.b == "":
            raise CompareUsageError("CompareRequest.b: run B (the change) is not given; pass its run folder or "
                                    "items.parquet path, e.g. CompareRequest(a='runs/bm25', b='runs/dense')")
        if self.baseline not in (None, "auto"):  # any other word was read as 'auto'
            raise CompareUsageError(f"CompareRequest.baseline (--baseline): 'auto' or None, not {self.baseline!r:.60}")
        if self.a is None and self.baseline is None:
            raise CompareUsageError("CompareRequest: a is None and no baseline; give run A's path, or baseline='auto' "
                                    "to find it under runs_dir")


def _flag(name: str) -> str:
    """A CompareRequest field as both its callers know it: ``CompareRequest.gate_band (--gate-band)``."""
    return f"CompareRequest.{name} (--{name.replace('_', '-')})"


_PATHS = {"a": "a run folder or items.parquet path", "b": "a run folder or items.parquet path",
          "judge_calibration": "a JSON file path (memrun calibrate-judge writes it)",
          "gate": "a gate name or a YAML file path", "runs_dir": "a folder path"}
"""CompareRequest's path fields: a str or a path object (kept as a str; judge_calibration as a Path)."""
_NUMBER: tuple[type, ...] = (numbers.Real,)
_INT: tuple[type, ...] = (numbers.Integral,)
_FIELD_KINDS: dict[str, tuple[type, ...]] = {
    "metric": (str,), "cluster_by": (str,), "stratify_by": (str,), "categories": (str,), "allow_fake": (bool,),
    "resamples": _INT, "seed": _INT, "baseline": (str,),
    "allow_noncomparable": (bool,), "gate_min_delta": _NUMBER, "gate_band": _NUMBER, "max_error_share": _NUMBER,
    "max_error_gap": _NUMBER, "min_paired_share": _NUMBER, "effect": _NUMBER, "same_configuration": (bool,),
    "max_false_pass": _NUMBER, "check_replications": _INT, "metric_given": (bool,)}
"""CompareRequest's fields past its paths (:data:`_PATHS`) and treatments, and the types each takes."""
_OPTIONAL = frozenset({"a", "judge_calibration", "metric", "categories", "baseline", "gate", "gate_min_delta", "gate_band", "max_error_share",
                       "max_error_gap", "min_paired_share", "effect", "metric_given"})


@dataclass(frozen=True)
class CompareOutcome:
    """The result of :func:`compare`.

    ``request``: the request as resolved (A found, the gate and the defaults applied).
    ``status``: ``"compared"`` (``comparison`` set; with ``allow_noncomparable`` and differing
    runs its exit code is still 3) or ``"refused"`` (``refusal`` says why, every differing
    field at once). ``warnings``: what was said while reading the runs (unfinished, partial,
    a shard, different LLM endpoints); the comparison's own warnings (which begin with
    these) are in ``comparison.warnings``. ``notes``: how the request was resolved (the
    baseline found). ``exit_code``: :class:`memrun.stats.ExitCode`.
    """

    request: CompareRequest
    status: str
    exit_code: int
    comparison: Comparison | None = None
    refusal: str | None = None
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())


def treatments_of(values: Any) -> list[str]:
    """``["a", "b,c"]`` -> ``["a", "b", "c"]`` (``--treatment`` repeated or comma-separated)."""
    return [t.strip() for value in values for t in value.split(",") if t.strip()]


def resolve(request: CompareRequest) -> tuple[CompareRequest, list[str]]:
    """(the request with the gate file's settings, the defaults and A filled in, notes).

    Raises MemrunError for a bad gate file, a missing run or no baseline that fits.
    """
    filled: dict[str, Any] = {}
    if request.metric_given is None:  # a request resolved twice keeps what its caller gave
        filled["metric_given"] = request.metric is not None
    if request.gate:
        for dest, value in compare_gates.load_gate(request.gate).items():
            if getattr(request, dest) is None:
                filled[dest] = value
    notes = []
    if request.baseline is not None and request.a is None:
        folder, why = find_baseline(request.b, request.runs_dir, treatments_of(request.treatments),
                                    filled.get("metric", request.metric))
        filled["a"] = str(folder)
        notes.append(why)
    if filled.get("metric", request.metric) is None:
        filled["metric"] = _headline_metric(filled.get("a", request.a))
    for dest, value in DEFAULTS.items():
        if filled.get(dest, getattr(request, dest)) is None:
            filled[dest] = value
    return dataclasses.replace(request, **filled), notes


def _headline_metric(a: str | None) -> str:
    """The metric a comparison reads when none is named: run A's headline
    (:func:`memrun.metrics.intervals.retrieval_headline_metric`: recall@5 when its cut-offs
    hold 5 and its arm.top_k reaches it, else recall@10, recall@1, mrr), the one its summary, report and sweep table
    show; :data:`DEFAULTS`' recall@5 when A cannot be read (the reading says why, later)."""
    try:
        inst = read_instrument(a) if a is not None else None
    except MemrunError:
        inst = None
    ks = inst.ks if inst is not None else None
    return retrieval_headline_metric(ks, inst.top_k) if inst is not None and ks else str(DEFAULTS["metric"])


@dataclass
class _Prepared:
    """What a comparison reads and how, before pairing (:func:`_prepare`)."""

    run_a: RunTable
    run_b: RunTable
    cluster_by: str | None
    stratify_by: str | None
    settings: Settings
    differences: list[Difference]
    categories: list[str] | None
    chosen: str

    def pair(self) -> Paired:
        """The items both runs scored, paired (:func:`memrun.comparison.pairing.pair`)."""
        return pair(self.run_a, self.run_b, metric=self.settings.metric, cluster_by=self.cluster_by,
                    stratify_by=self.stratify_by, categories=self.categories)


def compare(request: CompareRequest, on_warning: Say | None = None) -> CompareOutcome:
    """Pair two runs' items and decide with the paired clustered bootstrap.

    ``on_warning`` is called with each reading warning as it is found (``memrun compare``
    prints them at once); they are in the outcome's ``warnings`` either way.
    Raises MemrunError for a usage error (unreadable runs, bad settings, nothing to pair).
    """
    if not isinstance(request, CompareRequest):
        raise CompareUsageError(f"memrun.compare takes a memrun.CompareRequest(a=..., b=...), not "
                                f"{type(request).__name__} {request!r:.60}")
    in_background(lambda: importlib.import_module("scipy.special"))  # the gate's t quantiles; overlaps the reading
    request, notes = resolve(request)
    said: list[str] = []
    prepared = _prepare(request, _collect(said, on_warning))
    if isinstance(prepared, str):
        return CompareOutcome(request, "refused", int(ExitCode.REFUSAL), refusal=prepared, warnings=tuple(said),
                              notes=tuple(notes))
    if request.metric_given and prepared.run_a.instrument.axis == "accuracy":
        _collect(said, on_warning)(f"--metric {request.metric} is not read on the accuracy axis: the gate reads each item's "
                                   "majority label (correct 1, else 0 under the run's denominator)")
    result = _analyze(request, prepared, said)
    return CompareOutcome(request, "compared", result.exit_code, comparison=result, warnings=tuple(said),
                          notes=tuple(notes))


def paired_items(request: CompareRequest, on_warning: Say | None = None
                 ) -> tuple[Paired | None, int, str | None, CompareRequest]:
    """The comparison's pairing alone, no statistics: (paired items, 0, None, the resolved
    request), or (None, exit code, refusal, request) as :func:`compare` refuses. What the
    flips page reads (:mod:`memrun.comparison.flips`). Raises MemrunError as compare does."""
    request, _ = resolve(request)
    prepared = _prepare(request, _collect([], on_warning))
    if isinstance(prepared, str):
        return None, int(ExitCode.REFUSAL), prepared, request
    return prepared.pair(), 0, None, request


def _collect(said: list[str], on_warning: Say | None) -> Say:
    def warn(line: str) -> None:
        said.append(line)
        if on_warning is not None:
            on_warning(line)
    return warn


def _prepare(request: CompareRequest, warn: Say) -> _Prepared | str:
    """Read both runs and check them and the settings: what to pair, or the refusal.
    Raises MemrunError for a usage error."""
    assert request.a is not None and request.metric is not None  # resolve() filled them
    _check_metric(request.metric)
    cluster_by = None if request.cluster_by == "none" else request.cluster_by
    run_a = _load(request.a, request.metric, cluster_by, request.stratify_by, warn)
    run_b = _load(request.b, request.metric, cluster_by, request.stratify_by, warn)
    same_id = run_a.instrument.run_id and run_a.instrument.run_id == run_b.instrument.run_id
    if same_id or run_a.path.resolve() == run_b.path.resolve():
        raise MemrunError(f"{request.a} and {request.b} are the same run; "
                          + ("a null band needs two runs of one configuration (run it twice)"
                             if request.same_configuration else
                             "compare two runs (for the noise floor, two runs of one config with memrun null-band)"))
    treatments = treatments_of(request.treatments)
    differences, refusal = _refusal(run_a.instrument, run_b.instrument, treatments, request, _apart(run_a, run_b))
    if refusal:
        return refusal
    for line in _endpoint_warnings(run_a.instrument, run_b.instrument):
        warn(line)
    if request.same_configuration and (changed := run_a.instrument.configuration_diff(run_b.instrument)):
        lines = [f"refused: a null band needs two runs of one configuration; {len(changed)} key(s) differ:"]
        lines += [f"  {key}: A={va!r} B={vb!r}" for key, va, vb in changed]
        lines.append("  their difference is the change itself, not noise: compare them with memrun compare")
        return "\n".join(lines)
    _check_counts(request)
    calibration, refusal = _calibration(request, run_a.instrument.axis)
    if refusal:
        return refusal
    assert request.gate_min_delta is not None and request.gate_band is not None
    stratify_by = _stratify_by(request.stratify_by, run_a.instrument)
    if cluster_by and cluster_by == stratify_by:
        raise MemrunError(f"--cluster-by {cluster_by} with --stratify-by {stratify_by} (the run's design strata): "
                          "each stratum would be one cluster redrawn within itself, a zero-width interval; cluster "
                          "by a finer key (--cluster-by cluster, or evidence) or pass --stratify-by none")
    try:
        thresholds = DataThresholds(*_filled(request.max_error_share, request.max_error_gap, request.min_paired_share))
    except ValueError as exc:
        raise MemrunError(str(exc)) from None
    settings = Settings(
        metric=request.metric, cluster_by=cluster_by, resamples=request.resamples, seed=request.seed,
        min_delta=request.gate_min_delta / 100, band=request.gate_band / 100,
        treatments=tuple(treatments), calibration=calibration, stratify_by=stratify_by, thresholds=thresholds,
        effect=None if request.effect is None else abs(request.effect) / 100,
        check_replications=_check_replications(request.check_replications),
        max_false_pass=_max_false_pass(request.max_false_pass),
    )
    categories, chosen = _categories(request.categories, run_a)
    return _Prepared(run_a, run_b, cluster_by, stratify_by, settings, differences, categories, chosen)


def _analyze(request: CompareRequest, prepared: _Prepared, read_warnings: list[str]) -> Comparison:
    """Pair, bootstrap and annotate (the reading warnings first, then design notes, evidence
    sensitivity, cluster supply)."""
    run_a, stratify_by, cluster_by = prepared.run_a, prepared.stratify_by, prepared.cluster_by
    assert request.a is not None  # resolve() filled it
    paired = prepared.pair()
    try:
        result = analyze(paired, prepared.settings, run_a=request.a, run_b=request.b, axis=run_a.instrument.axis,
                         denominator=run_a.instrument.denominator, differences=prepared.differences,
                         unfinished=unfinished_hold(run_a, prepared.run_b))
    except ValueError as exc:
        if stratify_by and "stratum" in str(exc):
            # the run's design strata (LongMemEval: question types), not named on this command line
            named = " (the run's design strata)" if request.stratify_by == "auto" else ""
            raise MemrunError(f"--stratify-by {stratify_by}{named}: "
                              f"a cluster (column {cluster_by}) holds items of several {stratify_by} values; strata "
                              "must contain whole clusters (stratify by a coarser column, or pass --stratify-by "
                              "none)") from exc
        raise MemrunError(str(exc)) from exc
    result.warnings[:0] = read_warnings
    result.categories = {"read": sorted(paired.category_names, key=category_order), "chosen": prepared.chosen}
    result.warnings.extend(design_notes(result, run_a.instrument, stratify_by))
    result.warnings.extend(evidence_sensitivity(result))
    cluster_supply(result, run_a.instrument)
    return result


def _filled(*values: float | None) -> list[float]:
    """Settings :func:`resolve` filled (never None after it)."""
    assert all(v is not None for v in values)
    return [v for v in values if v is not None]


def _load(path: str, metric: str, cluster_by: str | None, stratify: str, warn: Say) -> RunTable:
    """Read only the columns the comparison needs (the instrument first, to know the axis);
    what makes the run read differently (unfinished, partial, one shard) goes to ``warn``."""
    instrument = read_instrument(path)
    run = read_for_compare(path, instrument.axis, metric, cluster_by, _stratify_by(stratify, instrument))
    for reason in run.unfinished():  # the verdict is held on them too (analyze's unfinished)
        warn(f"{path} {reason}; comparing the {run.table.num_rows} rows it wrote")
    if run.instrument.status == "degraded":
        warn(f"{path} ended degraded; comparing the rows it wrote")
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


def _refusal(a: Instrument, b: Instrument, treatments: list[str], request: CompareRequest,
             apart: str | None = None) -> tuple[list[Difference], str | None]:
    """(differences, refusal message or None). The message lists every differing field
    at once and the exact flags that would name them all as treatments; when the runs share
    no item (``apart``, :func:`_apart`), it says that no treatment pairs them instead."""
    assert request.metric is not None  # resolve() filled it
    try:
        differences = a.diff(b, treatments, reads_to=depth_read(request.metric))
    except ValueError as exc:
        raise MemrunError(str(exc)) from exc
    unmeasurable = [f"{p}: {inst.retrieval_not_measurable}" for p, inst in ((request.a, a), (request.b, b))
                    if inst.retrieval_not_measurable and inst.axis != "accuracy"]
    if unmeasurable:  # its metric columns hold zeros that measure nothing
        return [], "refused: a run's retrieval metrics are not measurable:\n  " + "\n  ".join(unmeasurable)
    fake = [str(p) for p, inst in ((request.a, a), (request.b, b)) if inst.fake_providers]
    if fake and not request.allow_fake:
        return differences, (f"refused: {' and '.join(fake)} ran with fake or stub providers; their scores "
                             "measure nothing (pass --allow-fake to compare anyway)")
    if differences and not request.allow_noncomparable:
        flags = " ".join(f"--treatment {d.field}" for d in differences)
        lines = [f"refused: the runs are not comparable ({len(differences)} field(s) differ):"]
        lines += [f"  {d.field}: A={d.a!r} B={d.b!r}: {d.why}" for d in differences]
        if apart:  # naming the fields could never pair them: say so instead of offering the flags
            lines.append(f"  {apart}: no --treatment pairs them; compare two runs of one benchmark and dataset")
            return differences, "\n".join(lines)
        if never := [d.field for d in differences if d.field in NEVER_TREATMENTS]:  # --treatment axis is refused
            lines.append(f"  {', '.join(never)} cannot be a treatment ({NEVER_TREATMENTS[never[0]]}): no flag "
                         f"pairs them; compare two runs on one {never[0]}")
            return differences, "\n".join(lines)
        lines.append(f"  if the comparison is meant to vary these, name them: {flags}")
        lines += _depth_fix(differences, a.axis)
        lines.append("  or pass --allow-noncomparable to see the numbers labelled NON-COMPARABLE")
        return differences, "\n".join(lines)
    return differences, None


def _apart(run_a: RunTable, run_b: RunTable) -> str | None:
    """``the runs share no item (A: n items, B: m)`` when no item id of B is one of A's, else None."""
    n_a, n_b, both = shared_items(run_a, run_b)
    return None if both else f"the runs share no item (A: {n_a} items, B: {n_b}, none of them A's)"


def _depth_fix(differences: list[Difference], axis: str | None) -> list[str]:
    """The line saying how to compare two retrieval runs of different depths without naming
    the depth as the change: at a cut-off both rankings reach. Empty otherwise."""
    depths = [d for d in differences if d.field in Instrument.depth_fields()]
    if not depths or axis == "accuracy":
        return []
    reached = [v for d in depths for v in (d.a, d.b) if isinstance(v, int) and not isinstance(v, bool)]
    if not reached:
        return []
    k = min(reached)
    return [f"  or compare at a depth both runs reach: --metric recall@K, ndcg@K or another metric @K with "
            f"K <= {k} (mrr reads each whole ranking)"]


MIN_RESAMPLES = 1000
"""The fewest bootstrap resamples a comparison reads: a 95% percentile interval's bounds
are its resamples' 2.5% tails, 25 resamples each at 1,000. With 3 resamples ``--resamples 3``
printed the interval [+1.0, +1.1] pp (the tails were single draws) and, with enough
clusters for the bootstrap to decide alone, gated on it."""


def _check_counts(request: CompareRequest) -> None:
    """--gate-band at least 0, --resamples at least :data:`MIN_RESAMPLES`."""
    if (request.gate_band or 0) < 0:
        raise MemrunError(f"--gate-band {request.gate_band}: must be >= 0 pp")
    if request.resamples < MIN_RESAMPLES:
        raise MemrunError(f"--resamples {request.resamples}: must be at least {MIN_RESAMPLES:,} (a 95% interval's "
                          f"bounds are the resamples' 2.5% tails; fewer make them a few draws); the default is 10,000")


def _calibration(request: CompareRequest, axis: str | None) -> tuple[JudgeCalibration | None, str | None]:
    """(the judge calibration file or None, the refusal (exit 3) or None): refused when it
    was measured with a fake judge. Raises MemrunError off the accuracy axis or for a file
    that cannot be read."""
    path = request.judge_calibration
    if not path:
        return None, None
    if axis != "accuracy":
        raise MemrunError(f"--judge-calibration: the runs are on the {axis} axis, which has no judge; "
                          "a judge calibration corrects judged accuracy only (axis=accuracy)")
    try:
        data = json.loads(Path(path).read_text())
        calibration = JudgeCalibration.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MemrunError(f"--judge-calibration {path}: {exc}") from exc
    if data.get("fake_providers") and not request.allow_fake:
        return None, (f"refused: --judge-calibration {path} was measured with a fake or stub judge; its rates "
                      "measure nothing (pass --allow-fake to use it anyway)")
    return calibration, None


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
    present = (set(pc.unique(run.table.column("category").cast(pa.string())).drop_null().to_pylist())
               if "category" in run.table.column_names else set())
    if arg in present:  # a category holding a comma ('a,b'): the list's separator would split its name
        return [arg]
    trimmed = {c.strip(): c for c in present if c != c.strip()}  # ' spaced ': a name with spaces at its ends
    named = [trimmed.get(c, raw_category(run.instrument.categories or {}, c))
             for c in (c.strip() for c in arg.split(",")) if c]
    if not named:  # "," or " , ": an empty list reached the pairing as an Arrow type error
        raise CompareUsageError(f"--categories {arg!r} names no category; list them comma-separated (e.g. 1,2), "
                                "or give comparable or all")
    return named


def _check_metric(metric: str) -> None:
    """One error for an unknown --metric on both axes (the accuracy axis reads the majority
    label, but a misspelt metric must not pass unnoticed there either)."""
    try:
        item_column_for(metric)
    except ValueError as exc:
        raise MemrunError(f"--metric {metric}: {exc}") from None


def _check_replications(value: int) -> int:
    """--check-replications (default 2000); MemrunError below 100."""
    if value < 100:
        raise MemrunError(f"--check-replications {value}: must be at least 100 (a 97.5% quantile needs them)")
    return int(value)


def _max_false_pass(value: float) -> float:
    """--max-false-pass in percent -> a fraction; MemrunError outside (0, 100)."""
    if not 0 < value < 100:
        raise MemrunError(f"--max-false-pass {value}: a percentage between 0 and 100 (default 3)")
    return value / 100

