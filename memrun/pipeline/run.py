"""One run as a pipeline of named stages: resolve the spec -> build the parts -> load and
select -> the instrument -> ingest and search / answer and judge -> finish -> summarize
and write; then say the result and decide how the run ends.

The flow is one way: the benchmark yields groups; the arm ingests each group's history
once and searches with each item's question; hits are matched against gold and scored;
rows stream to :class:`memrun.io.writer.ItemsWriter`; the summary is computed from the
rows at the end. An error on one item is recorded in its row (``error``) and excluded
from every metric; Ctrl-C or a crash still leaves the finished rows readable. The stages
live in :mod:`memrun.pipeline.outer_stages` and :mod:`memrun.pipeline.item_stages` and print nothing; this module
times them, shows the result (:func:`show`) and turns it into an exception (:func:`verdict`).
"""

from __future__ import annotations

import gc
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.arms import Arm, describe
from memrun.config.build_spec import build_spec
from memrun.core import signals
from memrun.core.background import in_background
from memrun.core.instrument import Instrument
from memrun.core.provenance import commits
from memrun.core.run_warnings import RunWarnings
from memrun.core.status import RunStatus
from memrun.errors import ConfigError, MemrunError, RunDegraded, RunFailed, RunTableError
from memrun.io.live import LiveStatus
from memrun.io.writer import SHA256_KEY, SUMMARY_FILE, ItemsWriter
from memrun.lazy import lazy
from memrun.pipeline import item_stages, many_histories, outer_stages
from memrun.pipeline.checks import cutoff_warning, refuse_unmeasured
from memrun.pipeline.spec import RunSpec
from memrun.records import Dataset

if TYPE_CHECKING:
    from rich.console import Console

    from memrun.io import schema as io_schema
    from memrun.pipeline import resume
    from memrun.report import accuracy_summary as accuracy_report
    from memrun.report import run_summary
else:
    run_summary = lazy("memrun.report.run_summary")  # rich: loaded to print the table, after the items
    accuracy_report = lazy("memrun.report.accuracy_summary")  # the accuracy axis only (memrun.lazy)
    io_schema = lazy("memrun.io.schema")  # with pyarrow, on the writer's thread (memrun.io.writer)
    resume = lazy("memrun.pipeline.resume")  # a resumed run only: it reads the earlier run's rows with pyarrow


@dataclass
class RunResult:
    """What a run produced: its spec, the summary written to ``summary.json``, its rows
    (redacted) and its instrument, the load counts the summary table shows, and how it
    ended: ``status`` (:class:`memrun.core.status.RunStatus`, which maps it to an exit code)
    and ``error``, why it failed or degraded (one line), else None. The instrument records
    the same status; this is where the run's own code reads it."""

    spec: RunSpec
    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    instrument: Instrument
    load_counts: dict[str, int]
    status: RunStatus = RunStatus.COMPLETE
    error: str | None = None


def execute(cfg: Any, out_dir: Path, console: Console | None = None, config_folder: Path | None = None,
            warnings: RunWarnings | None = None, resume_from: Path | None = None,
            container: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run one composed config, writing ``items.parquet`` and ``summary.json`` to ``out_dir``;
    ``console``: where the table (and a terminal's progress bar) goes (None: stdout's,
    :func:`memrun.report.run_summary.stdout_console`, made when first printed to).

    ``warnings``: the run's (:mod:`memrun.core.run_warnings`; those it holds already, e.g. from
    claiming the folder, are saved with the run); every warning said while it runs is
    printed and saved, and the config's secrets are redacted from what it writes
    (:mod:`memrun.core.redaction`). ``resume_from``: an unfinished run of this configuration whose
    rows this run takes over, running only the rest (:mod:`memrun.pipeline.resume`).
    ``container``: ``cfg`` resolved and checked for secrets already (a Hydra job's), else None
    (:func:`memrun.config.build_spec.build_spec`).

    Returns the summary dict. Raises ConfigError / DataError / ArmError before any item
    runs when the config, data or arm is unusable; KeyboardInterrupt propagates after
    the finished rows were written (status ``interrupted``). After the rows and summary
    are written, raises RunFailed when every item failed, ArmError when the retrieval
    metrics of a recall run are not measurable and DataError when an arm that answers
    itself covers less than ``min_coverage`` of the items (:mod:`memrun.pipeline.checks`).
    """
    warnings = warnings or RunWarnings()
    with warnings.active():
        result = run(cfg, out_dir, console, config_folder, warnings, resume_from, container)
        if not result.rows:  # no table of dashes, nor "wrote" a folder that goes: the reason alone (a shard may own none)
            verdict(result, out_dir)
        show(result, console or run_summary.stdout_console(), out_dir)
        verdict(result, out_dir)
    return result.summary


def run(cfg: Any, out_dir: Path, console: Console | None, config_folder: Path | None,
        warnings: RunWarnings, resume_from: Path | None = None, container: dict[str, Any] | None = None) -> RunResult:
    """The stages of :func:`execute`, printing nothing but the progress bar and the warnings."""
    t_start = time.perf_counter()
    commit = in_background(lambda: commits(config_folder))  # git processes: waited for while the data loads
    spec, nodes = build_spec(cfg, container)
    redactor = warnings.redactor.add_config(spec.config)  # one redactor for the run's rows, lines and files
    parts = outer_stages.build_parts(spec, nodes)
    warnings.warn(*spec.warnings)
    if parts.setup:  # the API keys in use, and the config's secrets for the rows the answer stage redacts
        redactor.extend(parts.setup.redactor)
        parts.setup.redactor.extend(redactor)
        warnings.warn(*parts.setup.warnings)
    loaded = outer_stages.load(spec, parts.benchmark)
    arm_fields = describe(parts.arm)
    search_mode = arm_fields.get("search_mode")
    if not spec.accuracy and search_mode == "none":
        raise ConfigError(f"arm={spec.arm} retrieves nothing (search_mode=none): run it with axis=accuracy")
    warnings.warn(*loaded.dataset.warnings, cutoff_warning(list(spec.ks), spec.top_k, search_mode))
    instrument = outer_stages.build_instrument(spec, loaded, arm_fields, parts.setup.instrument if parts.setup else None,
                                         run_id=outer_stages.new_run_id(spec), commit=commit.result(),
                                         warnings=warnings.lines)
    out_dir.mkdir(parents=True, exist_ok=True)
    ks = list(spec.ks)
    writer = ItemsWriter(out_dir, lambda: io_schema.items_schema(ks), instrument)
    n_items = loaded.dataset.n_items
    llm = parts.setup.llm if parts.setup else None  # the accuracy axis's calls in flight
    live = LiveStatus(out_dir, {"run_id": instrument.run_id, "benchmark": instrument.benchmark, "arm": instrument.arm,
                                "axis": instrument.axis},
                      None if n_items is None else n_items * (spec.repeats if spec.accuracy else 1),
                      (lambda: llm.in_flight) if llm is not None else many_histories.calls_in_flight)
    sink = item_stages.RowSink(spec, loaded.dataset, instrument, writer, redactor, search_mode, live)
    todo, done = _resumed(resume_from, spec, loaded, instrument, sink, warnings, out_dir)
    stopped: str | None = None
    status, error = RunStatus.RUNNING, None
    # What start-up built (modules, config, dataset, arm) lives until the run ends: frozen, it
    # is not walked again by each collection while the items allocate their rows and requests.
    gc.freeze()
    gc.enable()  # the CLI kept it off during start-up (memrun.cli); the items allocate
    try:
        with item_stages.make_progress(console, spec.progress, calls=spec.accuracy) as progress:
            if parts.setup:
                stopped = item_stages.answer_and_judge(spec, parts.setup, todo, parts.arm, sink, progress, done)
            else:
                item_stages.ingest_and_search(spec, todo, parts.arm, sink, progress)
        status = RunStatus.STOPPED if stopped else RunStatus.COMPLETE
    except KeyboardInterrupt:
        status = RunStatus.INTERRUPTED
        raise
    except BaseException as exc:
        status, error = RunStatus.FAILED, redactor.text(_reason(exc))  # kept with the rows
        raise
    finally:
        try:
            # Finishing the table is never interrupted: a signal now is honoured after it (memrun.core.signals).
            with signals.shielded():
                status, error, coverage, caveats = outer_stages.finish(
                    spec, loaded, parts, sink.rows, sink.checks, instrument, warnings, _close(parts.arm), status, error)
                try:
                    live.close()
                    if parts.setup:
                        redactor.files(out_dir)
                    # items.parquet is encoded and written while the summary is computed. Not before the
                    # file work above: the rows' conversion holds the GIL throughout (Arrow's C++), and each
                    # file call that released it waited for the whole conversion to get it back (20-200 ms).
                    writer.start_close()
                    # The rows are final: frozen too, so that the summary's many small allocations do not
                    # start a full collection walking them (0.1-0.4 s once the rows number ~10^5 objects);
                    # and no collection at all while it runs: its lists, tuples and dicts hold no cycles
                    # (freed by their counts), and at the default threshold it started ~35 young-generation
                    # collections (10-40 ms of a cached re-run's summary) to find none.
                    gc.freeze()
                    gc.disable()
                    summary = outer_stages.summarize(spec, loaded, parts.setup, sink.rows, instrument, sink.checks,
                                                     stopped=stopped, coverage=coverage,
                                                     seconds=time.perf_counter() - t_start,
                                                     warnings=warnings.lines, caveats=caveats)
                finally:
                    gc.enable()
                    writer.close()  # started above, or here when something before it raised
                summary[SHA256_KEY] = writer.sha256  # the key summarize placed
                (out_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
        finally:
            gc.unfreeze()
    return RunResult(spec, summary, sink.rows, instrument, loaded.dataset.counts, status, error)


def _resumed(folder: Path | None, spec: RunSpec, loaded: outer_stages.Loaded, instrument: Instrument,
             sink: item_stages.RowSink, warnings: RunWarnings, out_dir: Path) -> tuple[Dataset, set[tuple[str, int]]]:
    """The items left to run and the (item_id, repeat) pairs already done: with an earlier
    unfinished run (``folder``) made under this run's ``instrument``, its rows that did not
    fail are emitted as this run's and only the rest is left (:mod:`memrun.pipeline.resume`);
    else every item."""
    if folder is None:
        return loaded.dataset, set()
    try:
        earlier = resume.Resumed.read(folder)
    except RunTableError as exc:
        warnings.warn(f"an earlier unfinished run of this configuration, {folder}, cannot be read ({exc}); "
                      "this run starts over")
        return loaded.dataset, set()
    if changes := resume.instrument_changes(earlier.instrument, instrument):
        warnings.warn(f"an earlier unfinished run of this configuration, {folder}, was made under another "
                      f"instrument ({'; '.join(changes)}): its rows are not taken over and this run starts over "
                      "(remove that folder when done)")
        return loaded.dataset, set()
    for row in earlier.rows:
        sink.emit({**row, "run_id": sink.run_id})
    instrument.served_models = dict(earlier.instrument.served_models)  # what answered the kept rows
    todo = earlier.remaining(loaded.dataset, spec.repeats, sink.checks)
    kept = f"{len(earlier.rows)} rows are kept"
    if earlier.failed:
        kept = f"{kept} and its {earlier.failed} failed rows run again"
    warnings.warn(f"resuming {folder}, an earlier run of this configuration that did not finish: its "
                  f"{kept}, with the items without a row; they were made by the code that ran then "
                  "(after a change to the arm's code, resume=false starts over)")
    resume.mark(folder, out_dir)
    return todo, earlier.done


def show(result: RunResult, console: Console, out_dir: Path) -> None:
    """Print the run's summary table (retrieval or accuracy axis)."""
    spec = result.spec
    if spec.accuracy:
        accuracy_report.print_accuracy_summary(console, result.summary, title=f"{spec.label} (accuracy axis)",
                                               out_dir=str(out_dir))
    else:
        run_summary.print_retrieval_summary(console, result.summary, ks=list(spec.ks), title=f"{spec.label} (retrieval axis)",
                                load_counts=result.load_counts, out_dir=str(out_dir))


def verdict(result: RunResult, out_dir: Path) -> None:
    """How a finished run ends: RunFailed when every item failed; ArmError / DataError for
    unmeasurable retrieval or too little answer coverage (:func:`memrun.pipeline.checks.refuse_unmeasured`);
    then RunDegraded when more than ``max_error_share`` of the rows failed. None: exit 0."""
    if failed := outer_stages.all_failed(result.rows, result.spec, str(result.instrument.split)):
        raise RunFailed(failed)
    refuse_unmeasured(result.spec.arm, result.summary, out_dir)
    if result.status is RunStatus.DEGRADED:  # after the more specific refusals above
        raise RunDegraded(result.error or "degraded")


def _reason(exc: BaseException) -> str:
    """The first line of why the items stopped: a memrun error's message, else its type too."""
    reason = str(exc).splitlines()[0] if str(exc) else ""
    return reason if isinstance(exc, MemrunError) else f"{type(exc).__name__}: {reason}".rstrip(": ")


def _close(arm: Arm) -> str | None:
    """Close the arm; a failure to close must not cost the rows, so it becomes a warning."""
    try:
        arm.close()
    except Exception as exc:  # noqa: BLE001
        return f"arm.close() raised {type(exc).__name__}: {exc}"
    return None
