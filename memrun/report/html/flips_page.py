"""The flips of two runs as a page: ``memrun view``'s ``/flips`` and the items table of the
comparison page (``memrun report A B``, ``memrun view``'s ``/compare``).

The flips are :mod:`memrun.comparison.flips`' (the comparison's own pairing, B-wins first,
then B-losses); each row opens to a side-by-side of what A and B retrieved (or answered)
for the question, the gold marked, from the texts the runs recorded. The table sorts on any
column and filters by side, category and cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memrun.errors import MemrunError
from memrun.lazy import lazy
from memrun.report.evidence import FOLD_CHARS, cut, gold_state
from memrun.report.html.common import embed_json, render

if TYPE_CHECKING:
    from memrun.commands import compare as commands_compare
    from memrun.comparison import api as comparison_api
    from memrun.comparison import flips as compare_flips
else:
    commands_compare = lazy("memrun.commands.compare")
    comparison_api = lazy("memrun.comparison.api")
    compare_flips = lazy("memrun.comparison.flips")

TABLE = {
    "columns": [["side", "B", "label"], ["id", "item"], ["cat", "category"], ["cluster", "cluster"],
                ["q", "question"], ["gold", "gold answer"], ["a", "A", "num"], ["b", "B", "num"],
                ["a_keys", "A hits (gold in bold)", "keys"], ["b_keys", "B hits (gold in bold)", "keys"]],
    "filters": [["side", "B"], ["cat", "category"], ["cluster", "cluster"]],
    "detail": [["q", "question"], ["gold", "gold answer"], ["sides", "side by side", "sides"]],
    "search": ["id", "cat", "cluster", "q", "gold", "a_keys", "b_keys"],
    "page": 50,
    "fold": FOLD_CHARS,
}
"""The flips table's configuration (``table.js``)."""


def _side(side: Mapping[str, Any], score: float) -> dict[str, Any]:
    return {
        "score": score, "label": side.get("label"), "answers": side.get("answers") or [],
        "error": side.get("error"), "rank": side.get("first_gold_rank"),
        "gold": [{"key": g["key"], "state": gold_state(g["rank"]), "found": g["rank"] is not None,
                  "text": cut(g["text"])} for g in side["gold_records"]],
        "hits": [{"rank": h["rank"], "key": h["key"], "score": h["score"], "gold": h["gold"], "text": cut(h["text"])}
                 for h in side["retrieved"]],
    }


def flip_rows(flips: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One table row per flip (:func:`memrun.comparison.flips.side_by_side`): ``side`` (``win``
    or ``loss``, B's), ``id``, ``cat``, ``cluster``, ``q``, ``gold``, ``a``/``b`` (scores),
    ``a_keys``/``b_keys`` (each run's top five hits, gold marked) and ``sides`` (A's and
    B's hits, gold records and answers, for the side-by-side)."""
    rows = []
    for f in flips:
        cat, label = str(f["category"]), f.get("category_label")
        rows.append({
            "side": "win" if f["side"] == compare_flips.B_WINS else "loss", "id": f["item_id"],
            "cat": cat if not label or label == cat else f"{cat} {label}", "cluster": f.get("cluster"),
            "q": f.get("question"), "gold": f.get("gold"), "a": f["a"], "b": f["b"],
            **{f"{s.lower()}_keys": [[h["key"], int(h["gold"])] for h in f[s]["retrieved"][:5]] for s in ("A", "B")},
            "sides": {"A": _side(f["A"], f["a"]), "B": _side(f["B"], f["b"])},
        })
    return rows


def flips_of(result: Any, a: str, b: str) -> list[dict[str, Any]]:
    """The flips of a comparison (``Comparison`` from ``memrun compare``'s code) with their
    side-by-side, read from the runs at ``a`` and ``b``."""
    if result is None or result.paired is None:
        return []
    return compare_flips.side_by_side(compare_flips.flip_list(result.paired), a, b)


def flips_context(a: str, b: str, options: Sequence[str] = (), compare_link: str | None = None) -> dict[str, Any]:
    """The flips page's context: the comparison made by ``memrun compare``'s code with
    ``options``; a refusal gives a page with its reason and no rows."""
    try:
        args = commands_compare.build_parser().parse_args([a, b, *options])
    except SystemExit:
        raise MemrunError(f"bad compare options: {' '.join(options)}") from None
    # the pairing alone: no bootstrap needed
    paired, code, refusal, request = comparison_api.paired_items(commands_compare.request_from(args))
    flips = [] if paired is None else compare_flips.side_by_side(compare_flips.flip_list(paired), a, b)
    rows = flip_rows(flips)
    wins = sum(r["side"] == "win" for r in rows)
    notes: list[str] = []
    metric = request.metric if paired is None or paired.a_label[:1].tolist() in ([], [-1]) \
        else "majority label (correct = 1)"
    if paired is None:
        notes = [f"no flips: {(refusal or '').splitlines()[0]} (exit code {code})"]
        title, summary = "memrun flips", ""
    else:
        summary = (f"B wins {wins}, B loses {len(rows) - wins} on {metric}, of {paired.n} items compared "
                   "(the comparison's own pairing).")
        title = f"memrun flips: {a} vs {b}"
        if getattr(args, "allow_noncomparable", False):
            notes.append("NON-COMPARABLE if the runs differ: shown with --allow-noncomparable; no gate passes on it")
    return {"title": title, "notes": notes, "summary": summary, "metric": metric, "compare_link": compare_link,
            "items_title": "Flips", "n_rows": len(rows), "rows": embed_json(rows), "table": embed_json(TABLE)}


def render_flips(a: str, b: str, options: Sequence[str] = ()) -> str:
    """The flips page as one HTML string."""
    return render("flips.html.j2", **flips_context(a, b, options))
