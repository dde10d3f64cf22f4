"""The context of an item's drill-down page in ``memrun view``: one item of a run with
every repeat, the retrieved records (gold marked) and the LLM calls behind each repeat."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrun.io.reader import RunTable
from memrun.report.evidence import FOLD_CHARS, cut, evidence, gold_state
from memrun.report.html.common import as_int, plain


def item_context(run: RunTable, indices: Sequence[int], calls: Any) -> dict[str, Any]:
    """Everything ``view_item.html.j2`` needs for the rows ``indices`` (an item's repeats)
    of ``run``; ``calls`` is the run's :class:`memrun.view.calls.RunCalls`.

    Keys: ``title``, ``facts`` (field, value pairs), ``gold`` (``key``, ``text``, ``rank``,
    ``state``: retrieved at rank N or missed), ``retrieved`` (``rank``, ``key``, ``gold``,
    ``score``, ``text``; :func:`memrun.report.evidence.evidence`), ``fold`` (characters
    shown before a long text folds), ``repeats`` (``repeat``, ``fields``, ``calls``: role ->
    call dict or None), ``calls_problem`` (why no prompt can be shown, or None).
    """
    # slices, not Table.take: take builds an index array, and pyarrow then imports pandas (seconds)
    rows = [{k: plain(v) for k, v in run.table.slice(i, 1).to_pylist()[0].items()} for i in indices]
    first, inst = rows[0], run.instrument
    accuracy = inst.axis == "accuracy"
    shown = evidence(first, inst.gold_match)
    retrieved = [{**h, "text": cut(h["text"])} for h in shown["retrieved"]]
    gold = [{**g, "text": cut(g["text"]), "state": gold_state(g["rank"])} for g in shown["gold"]]
    category = first.get("category_label") or first.get("category")
    facts = [("question", first.get("question")), ("gold answer", first.get("answer")),
             ("category", category), ("question date", first.get("question_date")),
             ("gold keys", ", ".join(map(str, first.get("gold_keys") or [])) or None),
             ("first gold rank", as_int(first.get("first_gold_rank"))), ("cluster", first.get("cluster"))]
    calls_of = calls.repeats(rows) if accuracy else [{} for _ in rows]
    repeats = []
    for row, found in zip(rows, calls_of):
        fields = [("answer", row.get("reader_answer")), ("label", row.get("label")),
                  ("judge explanation", row.get("judge_explanation")),
                  ("second judge", row.get("judge2_label")), ("second judge's explanation", row.get("judge2_explanation")),
                  ("failure stage", row.get("failure_stage")), ("error", row.get("error")),
                  ("answer latency ms", None if row.get("answer_latency_ms") is None else round(float(row["answer_latency_ms"]), 1)), ("context tokens", as_int(row.get("context_tokens")))]
        repeats.append({"repeat": as_int(row.get("repeat")), "label": row.get("label"),
                        "fields": [(k, v) for k, v in fields if v is not None],
                        "calls": [(role, found.get(role)) for role in ("reader", "judge", "judge2")
                                  if found.get(role) is not None],
                        "problem": found.get("problem")})
    if not accuracy:
        first_row = rows[0]
        facts.append(("error", first_row.get("error")))
    return {"title": f"{inst.benchmark} x {inst.arm} ({inst.axis}): item {first.get('item_id')}",
            "item_id": first.get("item_id"), "notes": [], "facts": [(k, v) for k, v in facts if v is not None],
            "gold": gold, "gold_phrases": inst.gold_match == "substring", "retrieved": retrieved, "fold": FOLD_CHARS, "repeats": repeats, "accuracy": accuracy,
            "calls_problem": getattr(calls, "problem", None) if accuracy else None}
