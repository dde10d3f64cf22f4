"""The comparison page of ``memrun report A B``: ``memrun compare``'s figures as a page.

The numbers come from :func:`memrun.comparison.api.compare` (``Comparison.to_dict()``)
and the text lines from :mod:`memrun.report.compare_report`, so the page, the terminal
and the JSON agree. A refusal still renders: the banner gives its reason and exit code,
the comparability table shows why; the discordant items need no verdict and are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memrun.core.instrument import Instrument
from memrun.errors import MemrunError
from memrun.gallery.overlay import published_beside_pair
from memrun.io.reader import RunTable, read_run
from memrun.lazy import lazy
from memrun.report import svg
from memrun.report.compare_report import CATEGORY_NOTE, HEADERS, category_rows, summary_lines
from memrun.report.html.common import Texts, embed_json, group_repeats, item_rows, render
from memrun.report.html.flips_page import TABLE as FLIPS_TABLE
from memrun.report.html.flips_page import flip_rows, flips_of
from memrun.report.html.run_page import load_summary

if TYPE_CHECKING:
    from memrun.commands import compare as commands_compare
    from memrun.comparison import api as comparison_api
    from memrun.comparison.analysis import Comparison
    from memrun.comparison.api import CompareRequest
    from memrun.metrics import retrieval as metrics_retrieval
else:
    commands_compare = lazy("memrun.commands.compare")
    comparison_api = lazy("memrun.comparison.api")
    metrics_retrieval = lazy("memrun.metrics.retrieval")


def _comparison(a: str, b: str, options: Sequence[str], on_warning: Callable[[str], None] | None
                ) -> tuple[dict[str, Any] | None, int, str | None, CompareRequest, Comparison | None]:
    """(Comparison dict or None, exit code, refusal text, the resolved request, the Comparison),
    by :func:`memrun.compare`."""
    try:
        args = commands_compare.build_parser().parse_args([a, b, *options])
    except SystemExit:  # compare's parser printed its usage line and the problem
        raise MemrunError(f"memrun report: bad compare options: {' '.join(options)}") from None
    outcome = comparison_api.compare(commands_compare.request_from(args), on_warning=on_warning)
    result = outcome.comparison
    return (result.to_dict() if result else None), outcome.exit_code, outcome.refusal, outcome.request, result


def comparability(a: Instrument, b: Instrument, treatments: Sequence[str]) -> list[dict[str, Any]]:
    """Every comparability field: both values, and whether it is the same, differs or is a treatment."""
    rows = []
    for name, why in Instrument.comparability_fields().items():
        va, vb = getattr(a, name), getattr(b, name)
        state = "treatment" if name in treatments else ("same" if va == vb else "differs")
        rows.append({"field": name, "a": "-" if va is None else str(va), "b": "-" if vb is None else str(vb),
                     "state": state, "why": why})
    return rows


def _by_item(run: RunTable, hit_column: str | None, texts: Texts) -> dict[str, dict[str, Any]]:
    """One page row per item: its first repeat's answer and hits, the majority label (accuracy)."""
    rows = item_rows(run, hit_column=hit_column, texts=texts)
    return {r["id"]: r for r in group_repeats(rows, run.instrument.axis == "accuracy")}


def discordant(run_a: RunTable, run_b: RunTable, hit_column: str | None, texts: Texts) -> list[dict[str, Any]]:
    """Items both runs have whose labels (accuracy: majority; retrieval: hit or miss) differ,
    in A's order, A's and B's answers and hits side by side."""
    a, b = _by_item(run_a, hit_column, texts), _by_item(run_b, hit_column, texts)
    good = {"correct": 2, "hit": 2, "abstain": 1}
    out = []
    for item_id, ra in a.items():
        rb = b.get(item_id)
        if rb is None or ra["label"] == rb["label"]:
            continue
        better = "B" if good.get(rb["label"], 0) > good.get(ra["label"], 0) else (
            "A" if good.get(ra["label"], 0) > good.get(rb["label"], 0) else "neither")
        out.append({"id": item_id, "cat": ra["cat"], "q": ra["q"], "gold": ra["gold"], "better": better,
                    "a_ans": ra["ans"], "a_label": ra["label"], "a_keys": ra["keys"], "a_texts": ra["texts"],
                    "b_ans": rb["ans"], "b_label": rb["label"], "b_keys": rb["keys"], "b_texts": rb["texts"]})
    return out


def forest_rows(d: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Overall and per-category deltas with their deciding intervals (fractions); a block
    with a figure not computed (None or NaN) or an interval that cannot be read
    (``unreadable``) is left out of the plot (the table says "-" or "no interval")."""
    blocks = [("overall", d["overall"])]
    blocks += [(cat if block["label"] == cat else f"{cat} {block['label']}", block)
               for cat, block in d["per_category"].items()]
    rows = []
    for name, block in blocks:
        values = {k: block.get(k) for k in ("delta", "low", "high")}
        if not block.get("unreadable") and all(v is not None and v == v for v in values.values()):  # v == v: not NaN
            rows.append({"name": name, **values})
    return rows


def forest_svg(d: Mapping[str, Any]) -> str:
    """The forest plot of a comparison's dict (:func:`memrun.report.svg.forest`); empty when
    no block has an interval."""
    rows, v = forest_rows(d), d["verdict"]
    if not rows:
        return ""
    return svg.forest(rows, band=v.get("band") or 0.0, min_delta=v.get("min_delta") or 0.0,
                      unit="score" if d.get("unit") == "score" else "pp")


def compare_context(a: str, b: str, options: Sequence[str] = (),
                    on_warning: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Everything the compare template needs. ``on_warning``: called with each warning said
    while reading the runs (``memrun report`` prints them; the page shows them either way)."""
    d, code, refusal, request, result = _comparison(a, b, options, on_warning)
    run_a, run_b = read_run(a), read_run(b)
    accuracy = run_a.instrument.axis == "accuracy"
    hit_column = None
    if not accuracy:
        hit_column = metrics_retrieval.item_column_for(request.metric or "")

    treatments = list(request.treatments)
    notes = [f"{name} {reason}" + (": read from items.parts/" if reason == "did not finish" else "")
             for name, r in (("A", run_a), ("B", run_b)) for reason in r.unfinished()]
    notes += [f"{name} ended degraded" for name, r in (("A", run_a), ("B", run_b)) if r.instrument.status == "degraded"]
    if d is None:
        reason = (refusal or "").removeprefix("refused: ")
        banner = {"outcome": "refused" if code == 3 else "error", "reason": reason, "exit_code": code}
    else:
        v = d["verdict"]
        outcome = "refused" if d["noncomparable"] else v["outcome"]
        reason = ("NON-COMPARABLE: shown with --allow-noncomparable; no gate passes on it"
                  if d["noncomparable"] else v["reason"].replace("_", " "))
        banner = {"outcome": outcome, "reason": reason, "exit_code": d["exit_code"]}
    same_axis = run_a.instrument.axis == run_b.instrument.axis
    texts = Texts()
    if result is not None:  # the flips of the comparison's own pairing, side by side (memrun.comparison.flips)
        items, table = flip_rows(flips_of(result, a, b)), FLIPS_TABLE
        items_title = f"Flips on {result.metric} (B-wins first)"
    else:  # refused: no pairing to read; the items whose labels differ, as the runs hold them
        items, table = (discordant(run_a, run_b, hit_column, texts) if same_axis else []), None
        items_title = "Discordant items"
    table = table or {
        "columns": [["id", "item"], ["cat", "category"], ["q", "question"], ["gold", "gold"],
                    ["better", "better"]]
                   + ([["a_ans", "A answer"]] if accuracy else []) + [["a_label", "A", "label"]]
                   + ([["b_ans", "B answer"]] if accuracy else []) + [["b_label", "B", "label"]]
                   + [["a_keys", "A hits", "keys"], ["b_keys", "B hits", "keys"]],
        "filters": [["cat", "category"], ["better", "better"], ["a_label", "A label"], ["b_label", "B label"]],
        "detail": [["q", "question"], ["gold", "gold"], ["a_ans", "A answer"], ["b_ans", "B answer"],
                   ["a_texts", "A retrieved"], ["b_texts", "B retrieved"]],
        "search": ["id", "cat", "q", "gold", "a_ans", "b_ans", "a_keys", "b_keys"],
        "page": 50,
    }
    context: dict[str, Any] = {
        "title": f"memrun compare: {run_a.instrument.benchmark} {run_a.instrument.arm} vs {run_b.instrument.arm}",
        "notes": notes, "banner": banner, "run_a": a, "run_b": b,
        "id_a": run_a.instrument.run_id, "id_b": run_b.instrument.run_id,
        "comparability": comparability(run_a.instrument, run_b.instrument, treatments),
        "lines": summary_lines(d) if d else [], "forest": "", "categories": [], "headers": HEADERS,
        "category_note": CATEGORY_NOTE, "items_title": items_title, "n_rows": len(items), "rows": embed_json(items), "table": embed_json(table),
        "texts": embed_json(texts.strings),
        "published": published_beside_pair((run_a.instrument, load_summary(run_a)[0]),
                                           (run_b.instrument, load_summary(run_b)[0])),
    }
    if d:
        context["forest"] = forest_svg(d)
        context["categories"] = category_rows(d)
    return context


def render_compare(a: str, b: str, options: Sequence[str] = (),
                   on_warning: Callable[[str], None] | None = None) -> str:
    """The comparison page as one HTML string (``on_warning``: as :func:`compare_context`)."""
    return render("compare.html.j2", **compare_context(a, b, options, on_warning))
