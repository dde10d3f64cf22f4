"""Orchestration of one run: load -> ingest/search per group -> score -> write.

The flow is one way: the benchmark yields groups; the arm ingests each group's history
once and searches with each item's question; hits are matched against gold and scored;
rows stream to :class:`memrun.io.writer.ItemsWriter`; the summary is computed from the
rows at the end. An error on one item is recorded in its row (``error``) and excluded
from every metric; Ctrl-C or a crash still leaves the finished rows readable.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import memrun
from memrun.accuracy.setup import AccuracySetup, LiteralSecretError, build_setup, check_no_secrets
from memrun.accuracy.stage import AnswerStage, Retrieved
from memrun.arms import BYPASS_MODES, Arm, describe
from memrun.benchmarks import Benchmark
from memrun.benchmarks.download import data_dir
from memrun.benchmarks.selection import select, selection_from_config
from memrun.config import ARM_RESERVED_KEYS, BENCHMARK_RESERVED_KEYS, Axis
from memrun.errors import ArmError, ConfigError, MemrunError
from memrun.instrument import DENOMINATOR_RETRIEVAL, Instrument
from memrun.io.schema import items_schema
from memrun.io.writer import ItemsWriter
from memrun.llm.endpoint import Redactor
from memrun.metrics.accuracy import summarize_accuracy
from memrun.metrics.by_category import summarize_by_granularity
from memrun.metrics.retrieval import DEFAULT_KS, SESSION_PREFIX, item_columns, score_item, score_sessions
from memrun.records import Dataset, GoldMatch, Group, Hit, Item, gold_matches
from memrun.report.accuracy_summary import print_accuracy_summary
from memrun.report.run_summary import print_retrieval_summary

SUMMARY_FILE = "summary.json"


def _build(node: DictConfig, reserved: Sequence[str], group: str) -> Any:
    """Instantiate a group's ``_target_`` with its keys minus the ones memrun reads."""
    if "_target_" not in node:
        raise ConfigError(f"{group}: no _target_ key; name the class that implements the {group}")
    params = {k: v for k, v in node.items() if k not in reserved}
    try:
        return instantiate(OmegaConf.create(params), _convert_="all")
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        kind = type(cause) if isinstance(cause, MemrunError) else ArmError  # keep DataError a DataError
        text = " ".join(str(cause).split())  # Hydra spreads one message over several lines
        if isinstance(cause, ImportError):
            text += f"; {group}._target_ must name a class whose package is importable (installed or on PYTHONPATH)"
        raise kind(f"{group}: could not build {node['_target_']}: {text}") from exc


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _git_commit() -> str | None:
    """The checkout's commit when memrun runs from one (``+dirty`` with local changes)."""
    root = Path(memrun.__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if sha.returncode:
        return None
    return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _row(run_id: str, item: Item, dataset: Dataset, hits: list[Hit] | None, latency_ms: float | None,
         error: str | None, ks: Sequence[int], session_of: dict[str, str | None]) -> dict[str, Any]:
    scores = session_scores = None
    if hits is not None and item.gold_keys:
        matches = [gold_matches(h, item.gold_keys, dataset.gold_match) for h in hits]
        scores = score_item(matches, len(set(item.gold_keys)), ks)
    if hits is not None and item.gold_sessions:
        session_scores = score_sessions([h.key for h in hits], session_of, item.gold_sessions, ks)
    return {
        "run_id": run_id,
        "item_id": item.item_id,
        "repeat": 0,
        "cluster": item.cluster,
        "category": item.category,
        "category_label": dataset.categories.get(item.category, item.category),
        "question": item.question,
        "question_date": item.question_date,
        "answer": item.answer,
        "answer_raw": item.answer_raw,
        "gold_keys": list(item.gold_keys),
        "gold_keys_raw": list(item.gold_keys_raw),
        "extra": json.dumps(item.extra, ensure_ascii=False) if item.extra else None,
        "retrieved_keys": None if hits is None else [h.key for h in hits],
        "retrieved_scores": None if hits is None else [h.score for h in hits],
        "n_retrieved": None if hits is None else len(hits),
        "search_latency_ms": latency_ms,
        "error": error,
        "gold_sessions": list(item.gold_sessions),
        "abstention": item.abstention,
        **item_columns(scores, ks),
        **item_columns(session_scores, ks, SESSION_PREFIX),
    }


def arm_checks(rows: Sequence[dict[str, Any]], history_sizes: Mapping[str, int], top_k: int,
               search_mode: str | None) -> tuple[dict[str, int], list[str]]:
    """Count the items whose ranking is not a top-k retrieval, and say so once each.

    rows: the run's rows (repeat 0 is counted); history_sizes: item_id -> records in its
    history (items missing from it are not counted there).
    ``over_top_k``: items whose arm returned more than ``top_k`` hits.
    ``history_within_top_k``: items whose history has at most ``top_k`` records, so
    retrieval is bypassed (any arm may return the whole history). Arms whose
    ``search_mode`` is in :data:`memrun.arms.BYPASS_MODES` get one line saying so instead.
    Errored rows are not counted. Returns (counts, warning lines).
    """
    done = [r for r in rows if r.get("error") is None and not r.get("repeat")]
    counts = {
        "over_top_k": sum(1 for r in done if (r["n_retrieved"] or 0) > top_k),
        "history_within_top_k": sum(1 for r in done if history_sizes.get(r["item_id"], top_k + 1) <= top_k),
    }
    if search_mode in BYPASS_MODES:
        return counts, [f"search_mode={search_mode} does not rank: its retrieval figures are not a retrieval result"]
    warnings = []
    if counts["over_top_k"]:
        warnings.append(f"the arm returned more than top_k={top_k} hits on {counts['over_top_k']} of {len(done)} items")
    if counts["history_within_top_k"]:
        warnings.append(
            f"top_k={top_k} >= the number of records in the history for {counts['history_within_top_k']} of "
            f"{len(done)} items: retrieval is bypassed there"
        )
    return counts, warnings


def _progress(console: Console, enabled: bool, calls: bool = False) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors {task.fields[errors]}"),
        *([TextColumn("{task.fields[calls]}")] if calls else []),
        TimeElapsedColumn(),
        console=console,
        disable=not enabled,
        transient=True,
    )


def _sessions(group: Group) -> dict[str, str | None]:
    """Record key -> session, when an item of the group has session gold (else empty)."""
    return {r.key: r.session for r in group.records} if any(i.gold_sessions for i in group.items) else {}


def _ingest(arm: Arm, group: Group) -> str | None:
    """Ingest one history; the error text (recorded on each of its items) or None."""
    try:
        arm.ingest(group.history_id, group.records)
    except ArmError:
        raise  # the arm is misconfigured or broke its protocol: stop, not an item error
    except Exception as exc:  # noqa: BLE001 - recorded per item, never a miss
        return f"ingest: {type(exc).__name__}: {exc}"
    return None


def _search(arm: Arm, item: Item, top_k: int, gold_match: GoldMatch) -> tuple[list[Hit] | None, float | None, str | None]:
    """(hits, latency ms, error) of one search (``search_item`` for arms that have it, e.g. oracle)."""
    t0 = time.perf_counter()
    search_item = getattr(arm, "search_item", None)
    try:
        if callable(search_item):
            hits = list(search_item(item, top_k, gold_match))
        else:
            hits = list(arm.search(item.question, top_k))
    except ArmError:
        raise
    except Exception as exc:  # noqa: BLE001
        return None, None, f"search: {type(exc).__name__}: {exc}"
    return hits, (time.perf_counter() - t0) * 1000.0, None


def _retrieve_group(arm: Arm, group: Group, top_k: int, gold_match: GoldMatch) -> list[Retrieved]:
    """Ingest a group and search each item (and take the arm's own answer when it has one)."""
    ingest_error = _ingest(arm, group)
    session_of = _sessions(group)
    answer_for = getattr(arm, "answer_for", None)
    out = []
    for item in group.items:
        hits, latency, error = (None, None, ingest_error) if ingest_error else _search(arm, item, top_k, gold_match)
        answer = None
        if error is None and callable(answer_for):
            try:
                answer = answer_for(item)
            except Exception as exc:  # noqa: BLE001
                error = f"answer_for: {type(exc).__name__}: {exc}"
        out.append(Retrieved(item, hits, latency, error, answer, session_of))
    return out


def _run_accuracy(
    setup: AccuracySetup, dataset: Dataset, arm: Arm, top_k: int, make_row: Any, emit: Any, progress: Progress, label: str
) -> str | None:
    """Run the answer stage to the end; returns why it stopped early (token budget) or None."""
    stats = setup.llm.stats
    t0 = time.perf_counter()
    errors = 0

    def on_row(row: dict[str, Any]) -> None:
        nonlocal errors
        emit(row)
        errors += row.get("label") == "error"
        rate = stats.made / max(time.perf_counter() - t0, 1e-9)
        progress.update(task, advance=1, errors=errors,
                        calls=f"calls {stats.made} ({rate:.1f}/s) cached {stats.cached} tokens {stats.tokens}")

    stage = AnswerStage(setup, dataset, make_row, on_row)
    task = progress.add_task(label, total=stage.total, errors=0, calls="calls 0")

    async def main() -> None:
        try:
            await stage.run(lambda group: _retrieve_group(arm, group, top_k, dataset.gold_match))
        finally:
            await setup.llm.aclose()

    asyncio.run(main())
    return stage.stopped


def execute(cfg: DictConfig, out_dir: Path, console: Console) -> dict[str, Any]:
    """Run one composed config, writing ``items.parquet`` and ``summary.json`` to ``out_dir``.

    Returns the summary dict. Raises ConfigError / DataError / ArmError before any item
    runs when the config, data or arm is unusable; KeyboardInterrupt propagates after
    the finished rows were written (status ``interrupted``).
    """
    t_start = time.perf_counter()
    accuracy = cfg.axis == Axis.accuracy
    try:
        check_no_secrets(cfg)
    except LiteralSecretError as exc:
        Redactor(exc.values).files(out_dir)  # Hydra saved the composed config before we ran
        raise
    if cfg.get("stale_check") and not accuracy:
        raise ConfigError("stale_check=true labels judged answers; it needs axis=accuracy")
    raw_ks = cfg.ks if cfg.get("ks") is not None else (cfg.benchmark.get("ks") or DEFAULT_KS)
    ks = sorted({int(k) for k in raw_ks})
    if not ks or ks[0] < 1:
        raise ConfigError(f"ks={list(raw_ks)}: cut-offs must be positive integers")
    top_k = int(cfg.arm.get("top_k", max(ks)))
    selection = selection_from_config(cfg.benchmark)
    benchmark: Benchmark = _build(cfg.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark")
    arm: Arm = _build(cfg.arm, ARM_RESERVED_KEYS, "arm")
    for method in ("ingest", "search", "close"):
        if not callable(getattr(arm, method, None)):
            raise ArmError(f"arm: {cfg.arm._target_} has no {method}() method; see memrun.arms.Arm")
    if top_k < max(ks):
        console.print(
            f"[yellow]warning:[/] arm.top_k={top_k} < max(ks)={max(ks)}: metrics @K for K > {top_k} see only "
            f"{top_k} hits (and fewer sessions); set arm.top_k={max(ks)} or ks=[...] up to {top_k}"
        )
    setup = build_setup(cfg, arm) if accuracy else None  # API keys, prompts, judges: before any work
    for warning in setup.warnings if setup else []:
        console.print(f"[yellow]warning:[/] {warning}")

    dataset = select(benchmark.load(data_dir(cfg.data_dir)), selection)
    for warning in dataset.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    n_warned = len(dataset.warnings)
    run_id = f"{cfg.benchmark.name}-{cfg.arm.name}-{datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    arm_fields = describe(arm)
    if not accuracy and arm_fields.get("search_mode") == "none":
        raise ConfigError(f"arm={cfg.arm.name} retrieves nothing (search_mode=none): run it with axis=accuracy")
    instrument = Instrument(
        axis=cfg.axis.value,
        benchmark=cfg.benchmark.name,
        split=dataset.split,
        slice=selection.describe(),
        dataset_sha256=dataset.sha256,
        corrections_sha256=selection.corrections.sha256 if selection.corrections else None,
        denominator=DENOMINATOR_RETRIEVAL,
        run_id=run_id,
        arm=cfg.arm.name,
        gold_match=dataset.gold_match,
        categories=dict(dataset.categories),
        comparable_categories=dataset.comparable_categories,
        ks=ks,
        repeats=int(cfg.repeats),
        seed=int(cfg.seed),
        load_counts=dict(dataset.counts),
        warnings=list(dataset.warnings) + (setup.warnings if setup else []),
        n_items=dataset.n_items,
        memrun_version=memrun.__version__,
        git_commit=_git_commit(),
        started_at=_now(),
        config=OmegaConf.to_container(cfg, resolve=True),  # type: ignore[arg-type]
        **{k: v for k, v in arm_fields.items() if k in Instrument.comparability_fields()},
    )
    if setup:
        for key, value in setup.instrument.items():
            setattr(instrument, key, value)
    instrument.fake_providers = instrument.fake_providers or bool(arm_fields.get("fake_providers"))  # arm=http
    out_dir.mkdir(parents=True, exist_ok=True)
    writer = ItemsWriter(out_dir, items_schema(ks), instrument)
    rows: list[dict[str, Any]] = []
    history_sizes: dict[str, int] = {}  # item_id -> records in its history (retrieval axis), for arm_checks
    stopped: str | None = None

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        writer.add(row)
        if row.get("error"):
            instrument.n_errors += 1

    label = f"{cfg.benchmark.name} x {cfg.arm.name}"
    try:
        with _progress(console, bool(cfg.progress), calls=accuracy) as progress:
            if setup:
                def make_row(r: Retrieved) -> dict[str, Any]:
                    return _row(run_id, r.item, dataset, r.hits, r.latency_ms, r.error, ks, r.session_of)

                stopped = _run_accuracy(setup, dataset, arm, top_k, make_row, emit, progress, label)
            else:
                task = progress.add_task(label, total=dataset.n_items, errors=0)
                for group in dataset.groups:
                    session_of = _sessions(group)
                    ingest_error = _ingest(arm, group)
                    for item in group.items:
                        history_sizes[item.item_id] = len(group.records)
                        hits, latency, error = (
                            (None, None, ingest_error) if ingest_error else _search(arm, item, top_k, dataset.gold_match))
                        emit(_row(run_id, item, dataset, hits, latency, error, ks, session_of))
                        progress.update(task, advance=1, errors=instrument.n_errors)
        instrument.status = "stopped" if stopped else "complete"
    except KeyboardInterrupt:
        instrument.status = "interrupted"
        raise
    except BaseException:
        instrument.status = "failed"
        raise
    finally:
        arm.close()
        instrument.finished_at = _now()
        instrument.n_rows = len(rows)
        # Lazy groups finish their counts and warnings while they are produced.
        instrument.load_counts = dict(dataset.counts)
        instrument.warnings = list(dataset.warnings) + (setup.warnings if setup else [])
        if instrument.n_items is None and instrument.status == "complete":
            instrument.n_items = len({r["item_id"] for r in rows})  # accuracy: rows are item x repeat
        check_counts, check_warnings = arm_checks(rows, history_sizes, top_k, instrument.search_mode)
        instrument.warnings.extend(check_warnings)
        writer.close()
        if setup:
            summary = _accuracy_summary(rows, setup, dataset, ks, instrument, stopped)
            setup.redactor.files(out_dir)
        else:
            summary = summarize_by_granularity(
                rows, ks=ks, categories=dataset.categories, comparable_categories=dataset.comparable_categories,
                task_averaged=dataset.task_averaged,
            )
        summary.update(
            run_id=run_id,
            status=instrument.status,
            benchmark=cfg.benchmark.name,
            arm=cfg.arm.name,
            axis=cfg.axis.value,
            slice=instrument.slice,
            corrections_sha256=instrument.corrections_sha256,
            load_counts=dataset.counts,
            pipeline_seconds=time.perf_counter() - t_start,
            arm_checks=check_counts,
            warnings=check_warnings,
        )
        (out_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    for warning in [*dataset.warnings[n_warned:], *check_warnings]:
        console.print(f"[yellow]warning:[/] {warning}")
    if setup:
        print_accuracy_summary(console, summary, title=f"{label} (accuracy axis)", out_dir=str(out_dir))
        return summary
    print_retrieval_summary(
        console, summary, ks=ks, title=f"{label} (retrieval axis)",
        load_counts=dataset.counts, out_dir=str(out_dir),
    )
    return summary


def _accuracy_summary(
    rows: list[dict[str, Any]], setup: AccuracySetup, dataset: Dataset, ks: list[int], instrument: Instrument,
    stopped: str | None,
) -> dict[str, Any]:
    """The accuracy summary, plus retrieval metrics over each item's first repeat."""
    summary = summarize_accuracy(
        rows, categories=dataset.categories, comparable_categories=dataset.comparable_categories,
        denominator=setup.headline,
    )
    # Retrieval is done once per item: score it on repeat 0, excluding only failed retrievals.
    first = [{**r, "error": None if r["retrieved_keys"] is not None else r["error"]} for r in rows if r["repeat"] == 0]
    summary["retrieval"] = summarize_by_granularity(
        first, ks=ks, categories=dataset.categories, comparable_categories=dataset.comparable_categories,
        task_averaged=dataset.task_averaged,
    )
    summary.update(
        repeats=setup.repeats, calls=setup.llm.stats.to_dict(), fake_providers=instrument.fake_providers,
        stopped=stopped, instrument={k: getattr(instrument, k) for k in setup.instrument},
    )
    return summary
