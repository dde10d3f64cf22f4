"""Render an accuracy run's summary (from :func:`memrun.metrics.accuracy.summarize_accuracy`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from memrun.metrics.accuracy import judge2_text
from memrun.report.model import slices
from memrun.report.run_summary import caveat_lines, conventions, pct, percent


def _ms(block: Mapping[str, Any]) -> str:
    p50, p95 = block.get("p50"), block.get("p95")
    return "-" if p50 is None else f"p50 {p50:.0f} p95 {p95:.0f}"


def coverage_line(coverage: Mapping[str, Any]) -> str:
    """The answer coverage of an arm that answers itself, in one line (see :func:`memrun.pipeline.checks.answer_coverage`)."""
    line = (f"answers for {coverage['answered']} of {coverage['items']} items ({percent(coverage['share'])}; "
            f"min_coverage {percent(coverage['min_coverage'])})")
    if coverage["partial"]:
        line += ": [bold red]partial[/], the unanswered items are errors"
    if coverage["unknown_ids"]:
        line += (f" | {coverage['unknown_ids']} answer ids name no item (e.g. "
                 f"{escape(', '.join(coverage['unknown_id_examples']))})")
    return line


def accuracy_table(summary: Mapping[str, Any], title: str) -> Table:
    """A rich Table: one row per overall slice and category; ratios in percent."""
    table = Table(title=title, title_justify="left", caption_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  collapse_padding=True)
    # Short headers (explained in the caption) keep the table within 80 columns.
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("slice", "left"), ("n", "right"), ("correct", "right"), ("wrong", "right"), ("abst", "right"),
        ("err", "right"), ("acc", "right"), ("acc_aw", "right"), ("flip", "right"))
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True)
    scored = any(b.get("mean_judge_score") is not None for b in summary["per_category"].values())
    if scored:
        table.add_column("score", justify="right", no_wrap=True)
    legend = ["abst: abstained", "err: errors (excluded)", "acc: accuracy %", "acc_aw: accuracy % with abstentions wrong",
              "flip: flip rate %"] + (["score: mean judge score"] if scored else [])

    for s in slices(summary):
        block = s.block
        cells = [
            s.name, str(block["n_items"]), str(block["correct"]), str(block["wrong"]), str(block["abstained"]),
            str(block["errors"]), pct(block["accuracy"]), pct(block["accuracy_abstain_wrong"]), pct(block["flip_rate"]),
        ]
        if scored:
            score = block.get("mean_judge_score")
            cells.append("-" if score is None else f"{score:.3f}")
        table.add_row(*cells, style="bold" if s.bold else None)
    if "overall_comparable" in summary:
        legend.append("overall_comparable: categories " + ", ".join(summary.get("comparable_categories", [])))
    table.caption = "; ".join(legend)
    return table


def print_accuracy_summary(console: Console, summary: Mapping[str, Any], *, title: str, out_dir: str) -> None:
    """Print the table, the headline the verdicts read, errors, latency, tokens, calls and warnings."""
    if summary.get("fake_providers"):
        console.print("[bold red]FAKE PROVIDERS: a reader or judge is a fake/stub; these scores are meaningless.[/]")
    console.print(accuracy_table(summary, title))
    head = summary["headline"]
    partial = " [bold red]PARTIAL[/]" if head.get("partial") else ""
    console.print(
        f"verdicts read {head['metric']} on {head['slice']}: [bold]{percent(head['value'])}[/]{partial}"
        f"{escape(conventions.credited_note(summary.get('caveats') or {}, 'accuracy'))} | "
        f"score {summary['score']} (accuracy / p50 search ms / mean context tokens)"
    )
    if summary.get("coverage"):
        console.print(coverage_line(summary["coverage"]))
    tokens = summary["context_tokens"]
    mean_tokens = "-" if tokens["mean"] is None else f"{tokens['mean']:.0f}"
    console.print(
        f"items {summary['n_items']} x repeats {summary.get('repeats', 1)} | errors (excluded) "
        f"{summary['overall_all']['errors']} items, {summary['n_row_errors']} rows | success rate "
        f"{percent(summary['success_rate'])} | search ms {_ms(summary['search_latency_ms'])} | answer ms "
        f"{_ms(summary['answer_latency_ms'])} | context tokens mean {mean_tokens} ({tokens['n_reported']} reported)"
    )
    for line in caveat_lines(summary):
        console.print(line)
    if summary.get("identical_retrieval_share") is not None:
        console.print(f"identical retrieval across repeats: {percent(summary['identical_retrieval_share'])} of items")
    if summary.get("failure_stages"):
        console.print("failure stages: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["failure_stages"].items())))
    if summary.get("judge2"):
        console.print(judge2_text(summary["judge2"]), markup=False, soft_wrap=True)
    averaged = summary.get("category_averaged") or {}
    if averaged.get("mean_judge_score") is not None:
        console.print(f"mean over categories (each weighing the same): score {averaged['mean_judge_score']:.3f}")
    ordered = [(s.name, s.block) for s in slices(summary) if s.block.get("mean_order_score") is not None]
    if ordered:
        console.print("event ordering (tau_norm x F1, BEAM's metric): " + ", ".join(
            f"{name} {b['mean_order_score']:.3f} (n={b['n_order_scored']})" for name, b in ordered))
    if summary.get("stale"):
        st = summary["stale"]
        console.print(f"stale check: {st['n_stale']} of {st['n_checked']} wrong knowledge-update answers gave the superseded value")
    if summary.get("lexical"):
        values = {k: "-" if v is None else f"{v:.3f}" for k, v in summary["lexical"].items()}
        console.print("lexical (beside the judge): " + ", ".join(f"{k} {v}" for k, v in values.items()))
    calls = summary.get("calls")
    if calls:
        console.print(
            f"calls made {calls['made']} (failed {calls['failed']}), from cache {calls['cached']} | tokens "
            f"{calls['prompt_tokens'] + calls['completion_tokens']} | 429 waits {calls['rate_limit_waits']}, "
            f"5xx retries {calls['server_error_retries']}"
        )
    if summary.get("stopped"):
        console.print(f"[yellow]stopped early:[/] {escape(str(summary['stopped']))}; finished rows kept, re-run to continue")
    if summary.get("fake_providers"):
        console.print("[bold red]FAKE PROVIDERS: scores are meaningless.[/]")
    console.print(f"wrote {escape(str(out_dir))}")
