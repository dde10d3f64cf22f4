"""Render the flips of a comparison (:mod:`memrun.comparison.flips`): the terminal listing of
``memrun compare A B --flips`` and the markdown of the pull-request comment (the top five
each way). The HTML page is :mod:`memrun.report.html.flips_page`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memrun.report import md
from memrun.report.evidence import folded_lines, gold_state, markdown_text

TOP = 5
"""Flips each way the pull-request comment embeds."""

WINS, LOSSES = "B wins", "B loses"


def _score(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.3f}"


def _cat(f: Mapping[str, Any]) -> str:
    cat, label = str(f["category"]), f.get("category_label")
    return cat if not label or label == cat else f"{cat} {label}"


def _hits(side: Mapping[str, Any], n: int = 5) -> str:
    keys = [f"*{h['key']}*" if h["gold"] else h["key"] for h in side["retrieved"][:n]]
    return " ".join(keys) or "(nothing retrieved)"


def _answer(side: Mapping[str, Any]) -> str:
    if not side.get("labels"):
        return ""
    answer = side["answers"][0] if side.get("answers") else "-"
    return f" answered {answer!r} ({side['label']})"


def flips_text(flips: Sequence[Mapping[str, Any]], metric: str, limit: int | None = None) -> list[str]:
    """Lines of the terminal listing: per flip its item, category, cluster, A's and B's scores,
    question, gold records (with the rank each run retrieved them at) and each run's top hits
    (gold in ``*stars*``). ``limit``: flips shown each way (None: all)."""
    wins = [f for f in flips if f["side"] == WINS]
    losses = [f for f in flips if f["side"] != WINS]
    out = [f"flips on {metric}: B wins {len(wins)}, B loses {len(losses)} (B-wins first)"]
    for title, group in ((WINS, wins), (LOSSES, losses)):
        shown = group if limit is None else group[:limit]
        out.append(f"{title} ({len(shown)} of {len(group)} shown)")
        for f in shown:
            out.append(f"  {f['item_id']} [{_cat(f)}] cluster {f.get('cluster')}: A {_score(f['a'])} -> "
                       f"B {_score(f['b'])}  {f.get('question')}")
            out.append(f"    gold answer: {f.get('gold')}")
            ranks_a = {g["key"]: g["rank"] for g in f["A"]["gold_records"]}
            for g in f["B"]["gold_records"]:
                text = folded_lines(g["text"], 160) if g["text"] is not None else "(no text recorded)"
                out.append(f"    gold {g['key']}: A {gold_state(ranks_a.get(g['key']))}, B {gold_state(g['rank'])}: "
                           f"{text}")
            out.append(f"    A: {_hits(f['A'])}{_answer(f['A'])}")
            out.append(f"    B: {_hits(f['B'])}{_answer(f['B'])}")
    return out


def _md_side(name: str, side: Mapping[str, Any]) -> str:
    hits = ", ".join(f"**{md.inline(h['key'])}**" if h["gold"] else md.inline(h["key"]) for h in side["retrieved"][:5])
    answer = ""
    if side.get("labels"):
        answer = f"; answered {md.inline(side['answers'][0] if side.get('answers') else '-')} ({side['label']})"
    return f"  - {name}: {hits or '(nothing retrieved)'}{answer}"


def flips_markdown(flips: Sequence[Mapping[str, Any]], metric: str, link: str | None = None,
                   top: int = TOP) -> list[str]:
    """The comment's flips section: counts, ``link`` to the full page when given, and the
    top ``top`` flips each way with question, gold records (rank in A and B, text) and each
    run's top five hits (gold in bold)."""
    wins = [f for f in flips if f["side"] == WINS]
    losses = [f for f in flips if f["side"] != WINS]
    out = [f"#### Flips on {md.inline(metric)}: B wins {len(wins)}, B loses {len(losses)}", ""]
    if link:
        out += [f"Every flip, side by side: {md.inline(link)}", ""]
    for title, group in ((WINS, wins), (LOSSES, losses)):
        if not group:
            continue
        out += [f"**{title}** (top {min(top, len(group))} of {len(group)})", ""]
        for f in group[:top]:
            out.append(f"- {md.code_span(f['item_id'])} ({md.inline(_cat(f))}): {md.inline(f.get('question') or '-')} "
                       f"A {_score(f['a'])}, B {_score(f['b'])}; gold answer: {md.inline(f.get('gold') or '-')}")
            ranks_a = {g["key"]: g["rank"] for g in f["A"]["gold_records"]}
            for g in f["B"]["gold_records"]:
                text = markdown_text(g["text"], 200) if g["text"] is not None else "(no text recorded)"
                out.append(f"  - gold {md.inline(g['key'])} (A: {gold_state(ranks_a.get(g['key']))}, "
                           f"B: {gold_state(g['rank'])}): {text}")
            out += [_md_side("A", f["A"]), _md_side("B", f["B"])]
        out.append("")
    return out
