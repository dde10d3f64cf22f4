"""``memrun gallery``: published memory-retrieval numbers, re-derived and checked.

    memrun gallery list                       the entries: kind, benchmark, source, what each needs here
    memrun gallery run [NAME ...]             run them; published vs memrun vs tolerance, a status each
        [--out DIR] [--reuse] [--ci] [--format text|json]

``run`` prints, per entry, its status (PASS, FAIL, NOT-REPRODUCIBLE with the reason,
NEEDS-DATA with what is missing, ERROR with the run's last line), each value as
published, as memrun measures it and the tolerance (with why, in the entry), and for an
entry with the publisher's per-item file how many items agree and the first that do not.
``--reuse`` reads runs already in ``--out`` (default ``gallery-runs``) instead of running
them again; ``--ci`` keeps the entries marked ``ci: true``. Exit code 1 when an entry
FAILs or ERRORs, else 0 (entries needing absent data do not fail). Data: ``$MEMRUN_DATA_DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from memrun.commands.usage import Parser
from memrun.errors import MemrunError
from memrun.gallery.check import ERROR, FAIL, EntryResult, execute_entry, missing
from memrun.gallery.entries import Entry, load_entries


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="memrun gallery", description="Published numbers re-derived and checked.")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="the entries and what each needs here")
    run = sub.add_parser("run", help="run entries and check their values")
    run.add_argument("names", nargs="*", help="entries to run (default: all)")
    run.add_argument("--out", default="gallery-runs", help="folder for the entries' runs (default: gallery-runs)")
    run.add_argument("--reuse", action="store_true", help="read finished runs in --out instead of running again")
    run.add_argument("--ci", action="store_true", help="only the entries marked ci: true")
    run.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def _data_dir() -> Path | None:
    value = os.environ.get("MEMRUN_DATA_DIR")
    return Path(value).expanduser() if value else None


def _source(entry: Entry) -> str:
    s = entry.source
    return "; ".join(part for part in (s.get("publisher"), s.get("where"), s.get("version")) if part)


def list_entries(entries: list[Entry]) -> str:
    """``memrun gallery list``'s text: one block per entry."""
    data_dir = _data_dir()
    lines = []
    for e in entries:
        here = "documented non-reproduction" if e.kind == "not_reproducible" else (missing(e, data_dir) or "runnable here")
        lines.append(f"{e.name}  [{e.kind}, {e.benchmark}{', ci' if e.ci else ''}]  {e.title}")
        lines.append(f"    source: {_source(e)}")
        lines.append(f"    {here}" + (f": {e.reason}" if e.kind == "not_reproducible" else ""))
    return "\n".join(lines)


def _number(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def render(results: list[EntryResult]) -> str:
    """The text ``memrun gallery run`` prints (see the module docstring)."""
    lines: list[str] = []
    for r in results:
        lines.append(f"{r.entry.name}  {r.status}  {r.entry.title}")
        lines.append(f"    source: {_source(r.entry)}")
        if r.reason:
            lines.append(f"    {r.reason}")
        if r.values:
            lines.append(f"    {'metric':<40} {'published':>9} {'memrun':>9} {'tolerance':>10}  status")
        for v in r.values:
            tol = "ceil" if v.value.rounding == "ceil" else f"±{v.value.tolerance:.4f}"
            note = f"  ({v.note})" if v.note else ""
            lines.append(f"    {v.value.metric:<40} {v.value.published:>9.4f} {_number(v.memrun):>9} {tol:>10}  {v.status}{note}")
        if r.per_item is not None:
            lines.append("    " + per_item_line(r))
    lines.append("")
    width = max((len(r.entry.name) for r in results), default=10)
    for r in results:
        lines.append(f"{r.entry.name:<{width}}  {r.status}")
    return "\n".join(lines)


def per_item_line(result: EntryResult) -> str:
    """One line on the publisher's per-item file: agreement and the first disagreements."""
    p, spec = result.per_item or {}, result.entry.per_item
    assert spec is not None
    if "error" in p:
        return f"per-item {spec.name}: {p['error']}"
    pin = f"sha256 {spec.sha256[:12]}…" if spec.sha256 else f"git blob {(spec.blob or '')[:12]}…"
    text = f"per-item {spec.name} ({pin}): {spec.column} equal on {p['values_equal']}/{p['n']}"
    if p.get("rankings_equal") is not None:
        text += f", top-{spec.k} rankings equal on {p['rankings_equal']}/{p['n']}"
    if p.get("missing"):
        text += f", {p['missing']} published items not in the run"
    if p["first"]:
        text += "; first disagreements: " + ", ".join(
            f"{d['item_id']} published {_number(d['published'])} memrun {_number(d['memrun'])}"
            f"{' (same ranking)' if d['same_ranking'] else ''}" for d in p["first"])
    return text


def as_json(results: list[EntryResult]) -> list[dict[str, Any]]:
    """The results as plain data (``--format json``)."""
    return [{"name": r.entry.name, "status": r.status, "reason": r.reason, "run_dir": r.run_dir,
             "source": r.entry.source, "per_item": r.per_item,
             "values": [{"metric": v.value.metric, "published": v.value.published, "memrun": v.memrun,
                         "tolerance": v.value.tolerance, "why": v.value.why, "status": v.status, "note": v.note}
                        for v in r.values]} for r in results]


def main(argv: list[str]) -> int:
    """``memrun gallery list|run``; exit 1 when an entry fails or errors, 2 on a usage error."""
    args = _parser().parse_args(argv)
    try:
        entries = load_entries(names=getattr(args, "names", None) or None)
        if args.action == "list":
            print(list_entries(entries))
            return 0
        if args.ci:
            entries = [e for e in entries if e.ci]
        results = []
        for entry in entries:
            if args.format == "text":
                print(f"gallery: {entry.name} ...", file=sys.stderr, flush=True)
            results.append(execute_entry(entry, _data_dir(), Path(args.out), reuse=args.reuse))
    except MemrunError as exc:
        print(f"memrun gallery: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(as_json(results), indent=2) if args.format == "json" else render(results))
    return 1 if any(r.status in (FAIL, ERROR) for r in results) else 0
