"""Orchestration of one run: load -> ingest/search per group -> score -> write.

The flow is one way: the benchmark yields groups; the arm ingests each group's history
once and searches with each item's question; hits are matched against gold and scored;
rows stream to :class:`memrun.io.writer.ItemsWriter`; the summary is computed from the
rows at the end. An error on one item is recorded in its row (``error``) and excluded
from every metric; Ctrl-C or a crash still leaves the finished rows readable.
"""

from __future__ import annotations

import gc
import json
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import memrun
from memrun import shards, signals
from memrun.arms import DESCRIBE_KEYS, Arm, describe
from memrun.background import in_background
from memrun.benchmarks import Benchmark
from memrun.benchmarks.download import data_dir
from memrun.benchmarks.selection import Selection, apply_selection, selection_from_config
from memrun.checks import HitChecks, coverage_warnings, cutoff_warning, refuse_unmeasured
from memrun.config import ARM_RESERVED_KEYS, BENCHMARK_RESERVED_KEYS, Axis, cutoffs, default_top_k
from memrun.errors import ArmError, ConfigError, MemrunError, RunDegraded, RunFailed
from memrun.instrument import DENOMINATOR_RETRIEVAL, Instrument
from memrun.io.schema import items_schema
from memrun.io.writer import SHA256_KEY, SUMMARY_FILE, ItemsWriter
from memrun.metrics.retrieval_official import LME_OFFICIAL_PRESET, session_cut_warning
from memrun.redaction import check_no_secrets, redact_config
from memrun.metrics.run_level import summarize_rows
from memrun.plugins import build
from memrun.provenance import commits
from memrun.records import Dataset
from memrun.report.run_summary import print_retrieval_summary
from memrun.retrieval import Retrieved, make_row, retrieval_conventions
from memrun.retrieval_flow import FlowSettings, arm_kind, retrieve_all, retrieved_groups
from memrun.lazy import lazy
from memrun.run_warnings import RunWarnings

if TYPE_CHECKING:
    from memrun.accuracy.setup import AccuracySetup

# The accuracy axis's modules load only when it runs (memrun.lazy): a retrieval run
# never starts an event loop.
asyncio = lazy("asyncio")
accuracy_setup = lazy("memrun.accuracy.setup")
accuracy_stage = lazy("memrun.accuracy.stage")
llm_reader = lazy("memrun.llm.reader")
accuracy_report = lazy("memrun.report.accuracy_summary")
progress_lines = lazy("memrun.progress_lines")

PROGRESS_SECONDS = 0.1


def _close(arm: Arm) -> str | None:
    """Close the arm; a failure to close must not cost the rows, so it becomes a warning."""
    try:
        arm.close()
    except Exception as exc:  # noqa: BLE001
        return f"arm.close() raised {type(exc).__name__}: {exc}"
    return None


def _positive_int(value: Any, key: str) -> int:
    """``value`` as an int >= 1, else ConfigError naming ``key`` (user configs have no schema)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or (isinstance(value, float) and not value.is_integer()):
        raise ConfigError(f"{key}={value!r}: must be a positive integer")
    return number


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _thousands(n: int) -> str:
    """``n`` in at most 4 characters plus a unit: 950, 12k, 3.4M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k" if n < 9_950 else f"{round(n / 1000)}k"
    return f"{n / 1_000_000:.1f}M"


def _progress(console: Console, enabled: bool, calls: bool = False) -> Progress:
    # The accuracy axis adds a calls line (calls, rate, cached, tokens) and, to fit 80
    # columns, trades the elapsed time and half the bar for it. A stderr that is not a
    # terminal (CI logs, nohup) gets a plain line every few seconds instead of the bar.
    if enabled and not sys.stderr.isatty():
        return progress_lines.PlainProgress()  # type: ignore[return-value]
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(bar_width=10 if calls else 40),
        MofNCompleteColumn(),
        TextColumn("{task.fields[errors]} err"),
        *([TextColumn("{task.fields[calls]}")] if calls else [TimeElapsedColumn()]),
        console=console,
        disable=not enabled,
        transient=True,
    )


def _run_accuracy(
    setup: AccuracySetup, dataset: Dataset, arm: Arm, top_k: int, make_row: Any, emit: Any, progress: Progress, label: str,
    flow: FlowSettings,
) -> str | None:
    """Run the answer stage to the end; returns why it stopped early (token budget) or None."""
    stats = setup.llm.stats
    t0 = shown = time.perf_counter()
    rows = errors = 0

    def show() -> None:
        rate = stats.made / max(time.perf_counter() - t0, 1e-9)
        progress.update(task, completed=rows, errors=errors,
                        calls=f"{stats.made} calls {rate:.0f}/s {stats.cached} cached {_thousands(stats.tokens)} tok")

    def on_row(row: dict[str, Any]) -> None:
        nonlocal rows, errors, shown
        emit(row)
        rows += 1
        errors += row.get("label") == "error"
        if time.perf_counter() - shown >= PROGRESS_SECONDS:  # the bar redraws at 10 Hz; rows come faster
            shown = time.perf_counter()
            show()

    stage = accuracy_stage.AnswerStage(setup, dataset, make_row, on_row)
    task = progress.add_task(label, total=stage.total, errors=0, calls="0 calls")

    async def main() -> None:
        loop, me = asyncio.get_running_loop(), asyncio.current_task()
        assert me is not None
        try:
            # Ctrl-C / SIGTERM cancel this task on the loop, a safe point (memrun.signals).
            with signals.on_request(lambda: loop.call_soon_threadsafe(me.cancel)):
                await stage.run(retrieved_groups(arm, dataset.groups, top_k, dataset.gold_match, flow,
                                                 offload=lambda: setup.llm.in_flight))
        finally:
            await setup.llm.aclose()

    # Every in-flight call waits while the event loop is blocked, and a full collection
    # over the objects the imports and setup left (modules, configs, the arm's index)
    # blocks it for ~0.1 s. Freezing them keeps collections to what the stage allocates.
    gc.freeze()
    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        signals.check()  # cancelled because a stop was asked for: end as interrupted
        raise
    finally:
        gc.unfreeze()
        show()
    return stage.stopped


def execute(cfg: DictConfig, out_dir: Path, console: Console, config_folder: Path | None = None,
            warnings: RunWarnings | None = None) -> dict[str, Any]:
    """Run one composed config, writing ``items.parquet`` and ``summary.json`` to ``out_dir``.

    ``warnings``: the run's (:mod:`memrun.run_warnings`; those it holds already, e.g. from
    claiming the folder, are saved with the run); every warning said while it runs is
    printed and saved, and the config's secrets are redacted from what it writes
    (:mod:`memrun.redaction`).

    Returns the summary dict. Raises ConfigError / DataError / ArmError before any item
    runs when the config, data or arm is unusable; KeyboardInterrupt propagates after
    the finished rows were written (status ``interrupted``). After the rows and summary
    are written, raises RunFailed when every item failed, ArmError when the retrieval
    metrics of a recall run are not measurable and DataError when an arm that answers
    itself covers less than ``min_coverage`` of the items (:mod:`memrun.checks`).
    """
    warnings = warnings or RunWarnings()
    with warnings.active():
        return _execute(cfg, out_dir, console, config_folder, warnings)


def _execute(cfg: DictConfig, out_dir: Path, console: Console, config_folder: Path | None,
             warnings: RunWarnings) -> dict[str, Any]:
    t_start = time.perf_counter()
    commit = in_background(lambda: commits(config_folder))  # git processes: waited for while the data loads
    accuracy = cfg.axis == Axis.accuracy
    ks = cutoffs(cfg)  # first: the arms' ${memrun_top_k:} reads them
    container = check_no_secrets(cfg)  # it redacts what Hydra already wrote for this job itself
    redactor = warnings.redactor.add_config(container)  # one redactor for the run's rows, lines and files
    top_k = check_settings(cfg, accuracy)
    selection = selection_from_config(cfg.benchmark)
    benchmark: Benchmark = build(cfg.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark")
    arm: Arm = build(cfg.arm, ARM_RESERVED_KEYS, "arm")
    for method in ("ingest", "search", "close"):
        if not callable(getattr(arm, method, None)):
            raise ArmError(f"arm: {cfg.arm._target_} has no {method}() method; see memrun.arms.Arm")
    flow = FlowSettings.from_config(cfg.arm)
    arm_kind(arm)  # an async or thread-safe arm's search must take history_id: say so before any work
    judge = (cfg.get("judge") or {}).get("name")
    if not accuracy and judge not in (None, "none"):
        warnings.warn(f"judge={judge} is not used: axis=recall scores retrieval without a judge; "
                      "axis=accuracy runs the reader and the judge")
    setup = None
    if accuracy:  # API keys, prompts, judges: checked before any work
        setup = accuracy_setup.build_setup(cfg, arm)
        redactor.extend(setup.redactor)  # the API keys in use
        setup.redactor.extend(redactor)  # and the config's secrets, for the rows the answer stage redacts
        warnings.warn(*setup.warnings)
    dataset, selection, benchmark_ids = load_dataset(cfg, benchmark, selection)
    shard_cfg = cfg.get("shard") or {}  # configs built by hand may leave it out: no sharding
    n_shards, shard_index = shards.check(shard_cfg.get("count", 1), shard_cfg.get("index", 0))
    shard = shards.shard_facts(dataset, n_shards, shard_index)
    dataset = shards.take_shard(dataset, n_shards, shard_index)
    n_warned = len(dataset.warnings)
    run_id = f"{cfg.benchmark.name}-{cfg.arm.name}-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    arm_fields = describe(arm)
    search_mode = arm_fields.get("search_mode")
    if not accuracy and search_mode == "none":
        raise ConfigError(f"arm={cfg.arm.name} retrieves nothing (search_mode=none): run it with axis=accuracy")
    warnings.warn(*dataset.warnings, cutoff_warning(ks, top_k, search_mode))
    instrument = Instrument(
        axis=cfg.axis.value,
        benchmark=cfg.benchmark.name,
        split=dataset.split,
        slice=selection.describe(),
        dataset_sha256=dataset.sha256,
        corrections_sha256=selection.corrections.sha256 if selection.corrections else None,
        denominator=DENOMINATOR_RETRIEVAL,
        **retrieval_conventions(dataset),
        run_id=run_id,
        arm=cfg.arm.name,
        gold_match=dataset.gold_match,
        categories=dict(dataset.categories),
        comparable_categories=dataset.comparable_categories,
        stratify_by=dataset.stratify_by,
        task_averaged=dataset.task_averaged,
        shard=shard,
        ks=ks,
        repeats=int(cfg.repeats),
        seed=int(cfg.seed),
        load_counts=dict(dataset.counts),
        warnings=list(warnings.lines),
        n_items=dataset.n_items,
        memrun_version=memrun.__version__,
        memrun_commit=commit.result().memrun,
        git_commit=commit.result().configs,
        started_at=_now(),
        config=redact_config(container),
        **{k: v for k, v in arm_fields.items() if k in DESCRIBE_KEYS and k != "fake_providers"},
        arm_info={k: v for k, v in arm_fields.items() if k not in DESCRIBE_KEYS},
    )
    if setup:
        for key, value in setup.instrument.items():
            setattr(instrument, key, value)
    instrument.fake_providers = instrument.fake_providers or bool(arm_fields.get("fake_providers"))  # arm=http
    out_dir.mkdir(parents=True, exist_ok=True)
    writer = ItemsWriter(out_dir, items_schema(ks), instrument)
    rows: list[dict[str, Any]] = []
    checks = HitChecks(top_k, search_mode, dataset.gold_match)
    stopped: str | None = None

    def emit(row: dict[str, Any]) -> None:
        redactor.row(row, ("error",))
        rows.append(row)
        writer.add(row)
        if row.get("error"):
            instrument.n_errors += 1

    def item_row(r: Retrieved) -> dict[str, Any]:
        checks.observe(r)  # once per item, on both axes
        return make_row(run_id, r, dataset, ks, top_k, scored=search_mode != "none")

    label = f"{cfg.benchmark.name} x {cfg.arm.name}"
    try:
        with _progress(console, bool(cfg.progress), calls=accuracy) as progress:
            if setup:
                stopped = _run_accuracy(setup, dataset, arm, top_k, item_row, emit, progress, label, flow)
            else:
                _run_recall(dataset, arm, top_k, item_row, emit, progress, label, instrument, flow)
        instrument.status = "stopped" if stopped else "complete"
    except KeyboardInterrupt:
        instrument.status = "interrupted"
        raise
    except BaseException as exc:
        instrument.status = "failed"
        reason = str(exc).splitlines()[0] if str(exc) else ""
        reason = reason if isinstance(exc, MemrunError) else f"{type(exc).__name__}: {reason}".rstrip(": ")
        instrument.error = redactor.text(reason)  # kept with the rows: why they stop here
        raise
    finally:
        # Finishing the table is never interrupted: a signal now is honoured after it (memrun.signals).
        with signals.shielded():
            close_error = _close(arm)
            instrument.finished_at = _now()
            instrument.n_rows = len(rows)
            if instrument.status == "complete" and (failed := _all_failed(rows)):
                instrument.status, instrument.error = "failed", failed  # nothing measured: the run failed
            # Lazy groups finish their counts and warnings while they are produced.
            instrument.load_counts = dict(dataset.counts)
            if instrument.n_items is None and instrument.status == "complete":
                instrument.n_items = len({r["item_id"] for r in rows})  # accuracy: rows are item x repeat
            warnings.warn(*dataset.warnings[n_warned:], close_error, *checks.warnings())
            if dataset.preset == LME_OFFICIAL_PRESET:
                warnings.warn(session_cut_warning([r for r in rows if r["repeat"] == 0], ks, top_k))
            coverage = None
            if setup and setup.reader is None:  # the arm answers itself
                ids = benchmark_ids if benchmark_ids is not None else {r["item_id"] for r in rows}
                coverage = checks.coverage(arm, ids, float(cfg.get("min_coverage", 0.95)))
            if setup and setup.reader:
                warnings.warn(llm_reader.emptied_context_warning(rows, setup.reader.max_context_tokens),
                              llm_reader.overflow_warning(rows, setup.reader.max_context_tokens))
            warnings.warn(*(coverage_warnings(coverage) if coverage else []))
            if instrument.status == "complete" and coverage is None:  # an answering arm: min_coverage governs
                instrument.status, instrument.error = _degraded(rows, cfg.get("max_error_share", 0.1)) or ("complete", None)
            warnings.warn(_failed_rows_warning(rows))
            instrument.warnings = list(warnings.lines)
            instrument.retrieval_not_measurable = checks.not_measurable()  # compare refuses such a run
            writer.close()
            if setup:
                summary = _accuracy_summary(rows, setup, instrument, stopped, coverage)
                redactor.files(out_dir)
            else:
                summary = _metrics(rows, instrument)
            summary.update(
                run_id=run_id,
                status=instrument.status,
                error=instrument.error,
                benchmark=cfg.benchmark.name,
                arm=cfg.arm.name,
                axis=cfg.axis.value,
                slice=instrument.slice,
                corrections_sha256=instrument.corrections_sha256,
                load_counts=dataset.counts,
                pipeline_seconds=time.perf_counter() - t_start,
                arm_checks=dict(checks.counts),
                warnings=list(warnings.lines),
                **{SHA256_KEY: writer.sha256},  # the reader checks items.parquet against it
            )
            (out_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    if setup:
        accuracy_report.print_accuracy_summary(console, summary, title=f"{label} (accuracy axis)", out_dir=str(out_dir))
    else:
        print_retrieval_summary(
            console, summary, ks=ks, title=f"{label} (retrieval axis)",
            load_counts=dataset.counts, out_dir=str(out_dir),
        )
    _report_errors(rows)
    refuse_unmeasured(cfg.arm.name, summary, out_dir)
    if instrument.status == "degraded":  # after the more specific refusals above
        raise RunDegraded(instrument.error or "degraded")
    return summary


def check_settings(cfg: DictConfig, accuracy: bool) -> int:
    """Check the run-wide settings before any work; return ``arm.top_k``.

    ``arm.top_k`` unset or null takes :func:`memrun.config.default_top_k`. Raises
    ConfigError for a non-positive top_k or repeats, repeats > 1 on axis=recall (a
    search is made and scored once per item, so repeats would be recorded and
    ignored), a min_coverage outside [0, 1], and stale_check off the accuracy axis.
    """
    if cfg.get("stale_check") and not accuracy:
        raise ConfigError("stale_check=true labels judged answers; it needs axis=accuracy")
    repeats = _positive_int(cfg.get("repeats", 1), "repeats")
    if repeats > 1 and not accuracy:
        raise ConfigError(
            f"repeats={repeats}: axis=recall searches and scores each item once, so repeats would be ignored; "
            "repeats is for axis=accuracy (reader and judge). Drop it, or run the two axes as separate commands"
        )
    coverage = cfg.get("min_coverage", 0.95)
    if not isinstance(coverage, (int, float)) or not 0 <= coverage <= 1:
        raise ConfigError(f"min_coverage={coverage}: must be a share between 0 and 1 (0.95: 95% of the items)")
    share = cfg.get("max_error_share", 0.1)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ConfigError(f"max_error_share={share}: must be a share between 0 and 1 (0.1: 10% of the rows)")
    top_k = cfg.arm.get("top_k")
    return default_top_k(cfg) if top_k is None else _positive_int(top_k, "arm.top_k")


def load_dataset(cfg: DictConfig, benchmark: Benchmark, selection: Selection) -> tuple[Dataset, Selection, list[str] | None]:
    """The selected dataset, the selection as applied, and every item id of the benchmark
    before selection (None when its lazy groups come without an index)."""
    loaded = benchmark.load(data_dir(cfg.data_dir))
    index = loaded.item_index()
    dataset, selection = apply_selection(loaded, selection)
    return dataset, selection, None if index is None else [item_id for item_id, _ in index]


def _run_recall(dataset: Dataset, arm: Arm, top_k: int, item_row: Any, emit: Any, progress: Progress, label: str,
                instrument: Instrument, flow: FlowSettings) -> None:
    """The retrieval axis: ingest each group, search each item, emit its row (in dataset order)."""
    task = progress.add_task(label, total=dataset.n_items, errors=0)

    def on_item(r: Retrieved) -> None:
        emit(item_row(r))
        progress.update(task, advance=1, errors=instrument.n_errors)

    retrieve_all(arm, dataset.groups, top_k, dataset.gold_match, flow, on_item)  # Ctrl-C / SIGTERM: memrun.signals


def _all_failed(rows: list[dict[str, Any]]) -> str | None:
    """Why a run measured nothing, when every one of its rows failed; else None."""
    if rows and all(r.get("error") for r in rows):
        return f"every item failed ({len(rows)} rows, kept in the run folder); the first error: {rows[0]['error']}"
    return None


def _degraded(rows: list[dict[str, Any]], max_share: float) -> tuple[str, str] | None:
    """("degraded", why) when more than ``max_share`` of the rows failed, else None."""
    n_errors = sum(1 for r in rows if r.get("error"))
    if rows and n_errors / len(rows) > max_share:
        return "degraded", (f"{n_errors} of {len(rows)} rows failed ({n_errors / len(rows):.0%}), more than "
                            f"max_error_share={max_share:g}: the headline leaves them out and is biased if they "
                            "differ from the rest; fix the cause and run again")
    return None


def _report_errors(rows: list[dict[str, Any]]) -> None:
    """Say why items failed (the first error); raise RunFailed when every item failed
    (a degraded run is raised by the caller, after the more specific refusals)."""
    if failed := _all_failed(rows):
        raise RunFailed(failed)


def _failed_rows_warning(rows: list[dict[str, Any]]) -> str | None:
    """The warning for rows that failed (the first error), unless none or every one did
    (then the run failed: :func:`_all_failed`)."""
    errors = [r["error"] for r in rows if r.get("error")]
    if not errors or len(errors) == len(rows):
        return None
    return f"{len(errors)} of {len(rows)} rows failed and are excluded from every ratio; the first error: {errors[0]}"


def _metrics(rows: list[dict[str, Any]], instrument: Instrument, headline: str | None = None) -> dict[str, Any]:
    """The run's metrics from its rows (:func:`memrun.metrics.run_level.summarize_rows`)."""
    return summarize_rows(
        rows, axis=str(instrument.axis), ks=instrument.ks, categories=instrument.categories,
        comparable_categories=instrument.comparable_categories, task_averaged=instrument.task_averaged,
        headline=headline, unmeasurable=instrument.retrieval_not_measurable,
    )


def _accuracy_summary(
    rows: list[dict[str, Any]], setup: AccuracySetup, instrument: Instrument,
    stopped: str | None, coverage: dict[str, Any] | None,
) -> dict[str, Any]:
    """The accuracy summary (with retrieval over each item's first repeat) and, for an arm
    that answers itself, its answer coverage (a partial headline says so)."""
    summary = _metrics(rows, instrument, setup.headline)
    if coverage is not None:
        summary["coverage"] = coverage
        summary["headline"]["partial"] = coverage["partial"]
    summary.update(
        repeats=setup.repeats, calls=setup.llm.stats.to_dict(), fake_providers=instrument.fake_providers,
        stopped=stopped, instrument={k: getattr(instrument, k) for k in setup.instrument},
    )
    return summary
