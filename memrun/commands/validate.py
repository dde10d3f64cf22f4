"""``memrun validate FILE``: check a benchmark file without running anything.

    memrun validate my_bench.jsonl                  # memrun's JSONL format
    memrun validate longmemeval_s_cleaned.json      # a LongMemEval-schema file
    memrun validate locomo10.json                   # a LoCoMo-format file

Prints every error as ``file:line: field: problem`` (up to ``--max-errors``) and exits
2 when there is one; otherwise prints what the file holds and exits 0. The format is
taken from the extension unless ``--format`` names it: ``.jsonl`` is memrun's JSONL; a
``.json`` file is LoCoMo-format when its first object has a ``qa`` or ``conversation``
key before any ``question_id``, else LongMemEval-schema.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrun.benchmarks.jsonl import MAX_ERRORS, ParsedFile, parse_file
from memrun.benchmarks.longmemeval import LongMemEval
from memrun.commands.usage import Parser, at_least
from memrun.errors import ConfigError, DataError
from memrun.lazy import lazy
from memrun.pipeline.one_history import gold_reach
from memrun.records import Dataset, GoldMatch, Group

if TYPE_CHECKING:
    from memrun.benchmarks import locomo as benchmarks_locomo
else:
    benchmarks_locomo = lazy("memrun.benchmarks.locomo")

FORMATS = ("jsonl", "longmemeval", "locomo")
SNIFF_BYTES = 1 << 20  # how much of a .json file the format is told from


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="memrun validate", description="Check a benchmark file without running.")
    parser.add_argument("file", help="a .jsonl file in memrun's format, or a LongMemEval-schema or LoCoMo-format .json file")
    parser.add_argument("--format", choices=FORMATS, default=None, help="default: from the file's extension and keys")
    parser.add_argument("--gold-match", choices=("auto", "key", "substring"), default="auto",
                        help="jsonl: how gold keys match hits (key: they must name turns; substring: phrases a turn "
                             "must contain; auto: key when every gold key names a turn, else substring)")
    parser.add_argument("--max-errors", type=at_least(1), default=MAX_ERRORS, help="jsonl: errors to list at most")
    return parser


def main(argv: Sequence[str]) -> int:
    """Entry point of ``memrun validate``. Returns 0 when valid; raises DataError otherwise."""
    args = _parser().parse_args(list(argv))
    path = Path(args.file).expanduser()
    if path.is_dir():
        raise ConfigError(f"validate: {path} is a folder; name the benchmark file")
    if not path.is_file():
        raise ConfigError(f"validate: {path}: no such file")
    fmt = args.format or ("jsonl" if path.suffix == ".jsonl" else _json_format(path) if path.suffix == ".json" else None)
    if fmt is None:
        raise ConfigError(f"validate: cannot tell the format of {path.name} from its extension; pass --format")
    if fmt == "jsonl":
        parsed, gold_match = _parse_jsonl(path, args.gold_match, args.max_errors)
        for error in parsed.errors:
            sys.stdout.write(error + "\n")
        if parsed.n_errors:
            shown = "" if parsed.n_errors <= len(parsed.errors) else f" (first {len(parsed.errors)} shown)"
            raise DataError(f"{path}: {parsed.n_errors} error{'s' if parsed.n_errors > 1 else ''}{shown}")
        groups: Iterable[Group] = parsed.groups
        counts: dict[str, int] = {"gold_unreachable": _unreachable(path, parsed.groups, gold_match)}
        if args.gold_match == "auto" and gold_match == "substring":
            sys.stdout.write(f"{path}: gold_keys name no turn, so they are read as phrases (gold_match=substring); "
                             "pass --gold-match key to require turn keys\n")
    else:
        dataset = _locomo(path) if fmt == "locomo" else _longmemeval(path)
        groups, counts = dataset.groups, dataset.counts
    sys.stdout.write(_describe(path, fmt, groups, counts) + "\n")
    return 0


def _parse_jsonl(path: Path, gold_match: str, max_errors: int) -> tuple[ParsedFile, GoldMatch]:
    """The file parsed under ``gold_match``; ``auto`` tries ``key`` and, when it fails only
    because gold names no turn, ``substring`` (then what it found unreachable is listed)."""
    if gold_match in ("key", "substring"):
        chosen: GoldMatch = "key" if gold_match == "key" else "substring"
        return parse_file(path, chosen, max_errors=max_errors), chosen
    parsed = parse_file(path, "key", max_errors=max_errors)
    if not parsed.n_errors or not all("names no turn of this history" in e for e in parsed.errors):
        return parsed, "key"
    return parse_file(path, "substring", max_errors=max_errors), "substring"


def _unreachable(path: Path, groups: Iterable[Group], gold_match: GoldMatch) -> int:
    """Print every item whose gold no turn of its history can match (unreachable: every arm
    misses it, and a run counts it); the number of such items."""
    n = 0
    for group in groups:
        reach = gold_reach(group, gold_match)
        for item in group.items:
            missing = reach(item)
            if missing:
                n += missing == len(item.gold_keys)
                sys.stdout.write(f"{path}: item {item.item_id}: {missing} of {len(item.gold_keys)} gold_keys appear "
                                 "in no turn of its history (unreachable: every arm misses them)\n")
    return n


def _json_format(path: Path) -> str:
    """``locomo`` when the file's start shows one of LoCoMo's keys (``qa``, ``conversation``)
    before any of LongMemEval's ``question_id``; else ``longmemeval``. One key is enough: a
    LoCoMo file cut short after ``"qa"`` (its first key) was read as LongMemEval-schema and
    refused 'after 0 questions'."""
    with path.open("rb") as f:
        head = f.read(SNIFF_BYTES)
    question_id = head.find(b'"question_id"')
    locomo_keys = [at for at in (head.find(b'"qa"'), head.find(b'"conversation"')) if at >= 0]
    if locomo_keys and (question_id < 0 or question_id > min(locomo_keys)):
        return "locomo"
    return "longmemeval"


def _locomo(path: Path) -> Dataset:
    locomo = benchmarks_locomo.LoCoMo(split="file", file=path.name, url=None, sha256=None, categories={}, path=str(path))
    return locomo.load(path.parent)


def _longmemeval(path: Path) -> Dataset:
    loader = LongMemEval(split="file", files={"file": {"file": path.name}}, categories={}, path=str(path))
    return loader.load(path.parent)


LOCOMO_ADVERSARIAL = "5"
"""LoCoMo's adversarial category (questions the conversations cannot answer), as the loader keeps it."""


def _describe(path: Path, fmt: str, groups: Iterable[Group], counts: dict[str, int]) -> str:
    """One paragraph: histories, items, records, categories and non-zero load counts."""
    n_groups = n_records = n_gold = n_abstention = 0
    categories: Counter[str] = Counter()
    for group in groups:  # a LongMemEval file is streamed here, question by question
        n_groups += 1
        n_records += len(group.records)
        for item in group.items:
            categories[item.category] += 1
            n_gold += bool(item.gold_keys)
            n_abstention += item.abstention
    n_items = sum(categories.values())
    lines = [
        f"{path}: valid {fmt}: {n_groups} histories, {n_items} items ({n_gold} with retrieval gold, "
        f"{n_abstention} marked abstention in the file), {n_records} records",
        "categories: " + ", ".join(f"{c} {n}" for c, n in sorted(categories.items())),
    ]
    if fmt == "locomo" and categories.get(LOCOMO_ADVERSARIAL):
        # LoCoMo marks no item: its adversarial questions are abstention items by category (the judges' setting)
        lines.append(f"category {LOCOMO_ADVERSARIAL} (adversarial, {categories[LOCOMO_ADVERSARIAL]} items) is graded "
                     "as abstention by a judge whose abstention_categories names it, as the shipped LoCoMo judges' do")
    nonzero = {k: v for k, v in counts.items() if v}
    if nonzero:
        lines.append("load: " + ", ".join(f"{k} {v}" for k, v in nonzero.items()))
    return "\n".join(lines)
