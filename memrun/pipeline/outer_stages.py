"""The stages of one run before and after its items (docs/architecture.md).

A run is: resolve the spec (:func:`memrun.config.build_spec.build_spec`) -> :func:`build_parts`
(benchmark, arm, the accuracy axis's reader and judges) -> :func:`load` (load, select,
shard) -> :func:`build_instrument` -> ingest and search / answer and judge
(:mod:`memrun.pipeline.item_stages`) -> :func:`finish` (status, warnings, summary) -> write.
Each stage takes typed values and returns typed values; none prints (warnings go to the
run's :class:`memrun.core.run_warnings.RunWarnings`, which says and saves them).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import memrun
from memrun.arms import DESCRIBE_KEYS, Arm
from memrun.arms.contract import check_arm
from memrun.benchmarks import Benchmark, check_benchmark
from memrun.benchmarks.checked import checked_load
from memrun.benchmarks.download import data_dir
from memrun.benchmarks.selection import Selection, apply_selection
from memrun.config import ARM_RESERVED_KEYS, BENCHMARK_RESERVED_KEYS
from memrun.core.instrument import DENOMINATOR_RETRIEVAL, Instrument
from memrun.core.plugins import build
from memrun.core.provenance import Commits
from memrun.core.redaction import redact_config
from memrun.core.run_warnings import RunWarnings
from memrun.core.status import RunStatus
from memrun.errors import DataError
from memrun.io.writer import SHA256_KEY
from memrun.jobs import shards
from memrun.lazy import lazy
from memrun.metrics.conventions import caveat_warnings, run_counts
from memrun.metrics.retrieval_official import LME_OFFICIAL_PRESET, session_cut_warning
from memrun.pipeline.checks import HitChecks, coverage_warnings
from memrun.pipeline.one_history import retrieval_conventions
from memrun.pipeline.spec import PluginNodes, RunSpec
from memrun.records import Dataset

# The accuracy axis's modules load only when it runs (memrun.lazy).
if TYPE_CHECKING:
    from memrun.accuracy import setup as accuracy_setup
    from memrun.accuracy.setup import AccuracySetup
    from memrun.llm import reader as llm_reader
    from memrun.metrics import accuracy as metrics_accuracy
    from memrun.metrics import run_level
else:
    accuracy_setup = lazy("memrun.accuracy.setup")
    llm_reader = lazy("memrun.llm.reader")
    metrics_accuracy = lazy("memrun.metrics.accuracy")
    # The run-level metrics (their intervals: the statistics, numpy) load when the items are done.
    run_level = lazy("memrun.metrics.run_level")


@dataclass
class Parts:
    """What a run builds before loading data: the plugins and, on the accuracy axis, the
    reader, judges and LLM service (None on recall)."""

    benchmark: Benchmark
    arm: Arm
    setup: AccuracySetup | None


@dataclass
class Loaded:
    """The run's dataset (selected, then this shard's groups), the selection as applied,
    every item id of the benchmark before selection (None when lazy groups come without an
    index), the instrument's ``shard`` facts, and how many load warnings were said already."""

    dataset: Dataset
    selection: Selection
    benchmark_ids: list[str] | None
    shard: dict[str, Any] | None
    n_warned: int = 0


def build_parts(spec: RunSpec, nodes: PluginNodes) -> Parts:
    """Build the benchmark and the arm, each from its own config node (:func:`memrun.core.plugins.build`),
    and on the accuracy axis the reader, judges and LLM service (API keys, prompts: checked here).
    Raises ConfigError, or ArmError for an arm that breaks the arm contract (a hook missing or
    mistyped, async and plain methods mixed: :func:`memrun.arms.contract.check_arm`)."""
    benchmark = check_benchmark(build(nodes.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark"),
                                str(nodes.benchmark.get("_target_")))
    arm: Arm = build(nodes.arm, ARM_RESERVED_KEYS, "arm")
    check_arm(arm, spec.arm_target)  # every hook as memrun.arms.contract declares it, before any work
    setup = accuracy_setup.build_setup(spec, arm) if spec.accuracy else None
    return Parts(benchmark, arm, setup)


def load_dataset(benchmark: Benchmark, selection: Selection, data_dir_setting: str | None,
                 ) -> tuple[Dataset, Selection, list[str] | None]:
    """The selected dataset, the selection as applied, and every item id of the benchmark
    before selection (None when its lazy groups come without an index). ``data_dir_setting``:
    the config's ``data_dir`` (:func:`memrun.benchmarks.download.data_dir`)."""
    loaded = checked_load(benchmark, data_dir(data_dir_setting))  # a class of the user's: its data checked
    index = loaded.item_index()
    dataset, selection = apply_selection(loaded, selection)
    return dataset, selection, None if index is None else [item_id for item_id, _ in index]


def no_item(benchmark: str, split: str) -> str:
    """The one line for a benchmark that gives no item (an empty file, LongMemEval's ``[]``, a
    class of one's own), whether :func:`load` sees it or, for lazy groups, :func:`all_failed`
    after the run: one condition, one message."""
    return (f"benchmark={benchmark}: {split} holds no item, so a run of it measures nothing; check the file "
            "(or the benchmark's load) it reads")


def load(spec: RunSpec, benchmark: Benchmark) -> Loaded:
    """Load and select the benchmark's items, then keep this shard's groups (:mod:`memrun.jobs.shards`).
    Raises DataError (:func:`no_item`) when the benchmark gives no item."""
    dataset, selection, ids = load_dataset(benchmark, spec.selection, spec.data_dir)
    if dataset.n_items == 0:  # an empty file (LongMemEval's [], a class of one's own): a run would measure nothing
        raise DataError(no_item(spec.benchmark, dataset.split))
    facts = shards.shard_facts(dataset, spec.shard.count, spec.shard.index)
    dataset = shards.take_shard(dataset, spec.shard.count, spec.shard.index)
    return Loaded(dataset, selection, ids, facts, n_warned=len(dataset.warnings))


def now() -> str:
    """The current UTC time, ISO 8601 to the second (the instrument's started_at/finished_at)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id(spec: RunSpec) -> str:
    """``<benchmark>-<arm>-<local time>-<6 hex>``: unique per run, readable in a listing."""
    return f"{spec.benchmark}-{spec.arm}-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def build_instrument(spec: RunSpec, loaded: Loaded, arm_fields: dict[str, Any],
                     setup_fields: dict[str, Any] | None = None, *, run_id: str | None = None,
                     commit: Commits | None = None, warnings: list[str] | None = None) -> Instrument:
    """The instrument (:class:`memrun.core.instrument.Instrument`) of the run ``spec`` describes, on
    ``loaded``'s data, with the arm's description (:func:`memrun.arms.describe`) and the accuracy
    setup's fields. The one place its fields are assembled: a run and ``memrun plan`` read it."""
    dataset, selection = loaded.dataset, loaded.selection
    instrument = Instrument(
        axis=spec.axis, benchmark=spec.benchmark, split=dataset.split, slice=selection.describe(),
        dataset_sha256=dataset.sha256,
        corrections_sha256=selection.corrections.sha256 if selection.corrections else None,
        denominator=DENOMINATOR_RETRIEVAL, **retrieval_conventions(dataset),
        run_id=run_id, arm=spec.arm, gold_match=dataset.gold_match, categories=dict(dataset.categories),
        comparable_categories=dataset.comparable_categories, stratify_by=dataset.stratify_by,
        task_averaged=dataset.task_averaged, shard=loaded.shard, ks=list(spec.ks), top_k=spec.top_k, repeats=spec.repeats,
        seed=spec.seed, load_counts=dict(dataset.counts), warnings=list(warnings or []), n_items=dataset.n_items,
        memrun_version=memrun.__version__, memrun_commit=commit.memrun if commit else None,
        git_commit=commit.configs if commit else None, started_at=now(),
        config=dict(spec.saved_config) or redact_config(spec.config),
        **{k: v for k, v in arm_fields.items() if k in DESCRIBE_KEYS and k != "fake_providers"},
        arm_info={k: v for k, v in arm_fields.items() if k not in DESCRIBE_KEYS},
    )
    for key, value in (setup_fields or {}).items():
        setattr(instrument, key, value)
    instrument.fake_providers = instrument.fake_providers or bool(arm_fields.get("fake_providers"))  # arm=http
    return instrument


def all_failed(rows: list[dict[str, Any]], spec: RunSpec, split: str) -> str | None:
    """Why a run measured nothing: every one of its rows failed, or (the whole dataset, one
    shard) its benchmark produced no item at all; else None. Lazy groups are counted only as
    they are produced, so :func:`load`'s check cannot see that they hold none: a generator
    of no group ran as a complete run of 0 items, exit 0. A shard may own no history."""
    if not rows and spec.shard.count == 1:
        return no_item(spec.benchmark, split)
    if rows and all(r.get("error") for r in rows):
        return f"every item failed ({len(rows)} rows, kept in the run folder); the first error: {rows[0]['error']}"
    return None


def empty_shard_warning(rows: list[dict[str, Any]], spec: RunSpec, status: RunStatus) -> str | None:
    """:func:`memrun.jobs.shards.owns_no_history` for a shard that completed with no row,
    so its 0 items are said, not silent; None otherwise."""
    if rows or spec.shard.count == 1 or status is not RunStatus.COMPLETE:
        return None
    return shards.owns_no_history(spec.shard.count, spec.shard.index, spec.benchmark)


def degraded(rows: list[dict[str, Any]], max_share: float) -> tuple[RunStatus, str] | None:
    """(DEGRADED, why) when more than ``max_share`` of the rows failed, else None."""
    n_errors = sum(1 for r in rows if r.get("error"))
    if rows and n_errors / len(rows) > max_share:
        return RunStatus.DEGRADED, (f"{n_errors} of {len(rows)} rows failed ({n_errors / len(rows):.0%}), more than "
                            f"max_error_share={max_share:g}: the headline leaves them out and is biased if they "
                            "differ from the rest; fix the cause and run again")
    return None


def failed_rows_warning(rows: list[dict[str, Any]]) -> str | None:
    """The warning for rows that failed (the first error), unless none or every one did
    (then the run failed: :func:`all_failed`)."""
    errors = [r["error"] for r in rows if r.get("error")]
    if not errors or len(errors) == len(rows):
        return None
    return f"{len(errors)} of {len(rows)} rows failed and are excluded from every ratio; the first error: {errors[0]}"


def finish(spec: RunSpec, loaded: Loaded, parts: Parts, rows: list[dict[str, Any]], checks: HitChecks,
           instrument: Instrument, warnings: RunWarnings, close_error: str | None, status: RunStatus,
           error: str | None) -> tuple[RunStatus, str | None, dict[str, Any] | None, dict[str, Any]]:
    """Settle the run once the items are over: its final ``status`` and ``error`` (failed when
    every row failed, degraded past ``max_error_share``; else as the items ended), recorded in
    the instrument with its counts, warnings (load, arm checks, context, coverage, failed
    rows) and ``retrieval_not_measurable``. Returns (status, error, the answer coverage of an
    arm that answers itself (:meth:`memrun.pipeline.checks.HitChecks.coverage`), else None,
    the rows' caveat counts (:func:`memrun.metrics.conventions.run_counts`, which the summary
    holds too))."""
    dataset, setup = loaded.dataset, parts.setup
    instrument.finished_at = now()
    instrument.n_rows = len(rows)
    if status is RunStatus.COMPLETE and (failed := all_failed(rows, spec, dataset.split)):
        status, error = RunStatus.FAILED, failed  # nothing measured: the run failed
    warnings.warn(empty_shard_warning(rows, spec, status))
    instrument.load_counts = dict(dataset.counts)  # lazy groups finish their counts while they are produced
    if instrument.n_items is None and status is RunStatus.COMPLETE:
        instrument.n_items = len({r["item_id"] for r in rows})  # accuracy: rows are item x repeat
    warnings.warn(*dataset.warnings[loaded.n_warned:], close_error, *checks.warnings())
    if dataset.preset == LME_OFFICIAL_PRESET or dataset.session_cut == "sessions":
        warnings.warn(session_cut_warning([r for r in rows if r["repeat"] == 0], list(spec.ks), spec.top_k))
    caveats = run_counts(rows)
    warnings.warn(*caveat_warnings(caveats))
    coverage = None
    if setup and setup.reader is None:  # the arm answers itself
        ids = loaded.benchmark_ids if loaded.benchmark_ids is not None else {r["item_id"] for r in rows}
        coverage = checks.coverage(parts.arm, ids, spec.min_coverage)
    if setup and setup.judge2 and (block := metrics_accuracy.judge2_block(rows, spec.max_error_share)):
        warnings.warn(block["withheld"])  # not the headline's errors: the run's status stays as it is
    if setup and setup.reader:
        warnings.warn(llm_reader.emptied_context_warning(rows, setup.reader.max_context_tokens),
                      llm_reader.overflow_warning(rows, setup.reader.max_context_tokens))
    warnings.warn(*(coverage_warnings(coverage) if coverage else []))
    if status is RunStatus.COMPLETE and coverage is None:  # an answering arm: min_coverage governs
        status, error = degraded(rows, spec.max_error_share) or (RunStatus.COMPLETE, None)
    instrument.status, instrument.error = status.value, error  # the instrument records how the run ended
    warnings.warn(failed_rows_warning(rows))
    if setup:  # the models of the rows this run resumed (already on the instrument) and of its own calls
        instrument.served_models, mixed = setup.served_models(instrument.served_models)
        warnings.warn(*mixed)
    instrument.warnings = list(warnings.lines)
    instrument.retrieval_not_measurable = checks.not_measurable()  # compare refuses such a run
    return status, error, coverage, caveats


def metrics(rows: list[dict[str, Any]], instrument: Instrument, max_error_share: float,
            caveats: dict[str, Any], headline: str | None = None) -> dict[str, Any]:
    """The run's metrics from its rows (:func:`memrun.metrics.run_level.summarize_rows`;
    ``caveats``: the rows' counts :func:`finish` returned)."""
    return run_level.summarize_rows(
        rows, axis=str(instrument.axis), ks=instrument.ks, categories=instrument.categories,
        comparable_categories=instrument.comparable_categories, task_averaged=instrument.task_averaged,
        headline=headline, unmeasurable=instrument.retrieval_not_measurable, max_error_share=max_error_share,
        caveats=caveats, top_k=instrument.top_k,
    )


def summarize(spec: RunSpec, loaded: Loaded, setup: AccuracySetup | None, rows: list[dict[str, Any]],
              instrument: Instrument, checks: HitChecks, *, stopped: str | None, coverage: dict[str, Any] | None,
              seconds: float, warnings: list[str], caveats: dict[str, Any]) -> dict[str, Any]:
    """``summary.json``: the metrics (on the accuracy axis with the calls, repeats and, for an
    arm that answers itself, its coverage; a partial headline says so) and the run's facts.
    ``seconds``: the pipeline's wall time; ``caveats``: the rows' counts :func:`finish` returned.
    The sha256 of ``items.parquet`` (the reader checks it) has its key, None: the caller fills it
    once the file is written, which goes on while this runs."""
    if setup:
        summary = metrics(rows, instrument, spec.max_error_share, caveats, setup.headline)
        if coverage is not None:
            summary["coverage"] = coverage
            summary["headline"]["partial"] = coverage["partial"]
        summary.update(
            repeats=setup.repeats, calls=setup.llm.stats.to_dict(), fake_providers=instrument.fake_providers,
            stopped=stopped, instrument={k: getattr(instrument, k) for k in setup.instrument},
        )
    else:
        summary = metrics(rows, instrument, spec.max_error_share, caveats)
    summary.update(
        run_id=instrument.run_id, status=instrument.status, error=instrument.error, benchmark=spec.benchmark,
        arm=spec.arm, axis=spec.axis, slice=instrument.slice, corrections_sha256=instrument.corrections_sha256,
        load_counts=loaded.dataset.counts, pipeline_seconds=seconds, arm_checks=dict(checks.counts),
        warnings=list(warnings), **{SHA256_KEY: None},
    )
    return summary
