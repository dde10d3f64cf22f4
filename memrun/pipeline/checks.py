"""Run-level checks: what changes how a run's numbers read, counted, said once and saved.

An arm can make its figures mean less than they seem without any item failing: it
returns more hits than asked, repeats a key, names records it was never given, or finds
nothing because its index was not ready. A configuration can too: cut-offs beyond the
hits asked for, or answers for a few of the items. Each check below counts what it
found; the run prints one warning line per finding (never one per item) and saves the
same lines in ``summary.json`` (``warnings``) and the instrument (``warnings``).

:class:`HitChecks` counts, over the run's *successful searches* (an item whose ingest
or search failed is an error, excluded), each item once also on the accuracy axis
(summary.json ``arm_checks``):

- ``n_searches``, ``n_hits``: the searches that returned and the hits they returned;
- ``over_top_k``: items with more than ``top_k`` hits;
- ``history_within_top_k``: items whose history holds at most ``top_k`` records, so
  retrieval is bypassed (any arm may return the whole history);
- ``duplicate_keys``: items whose hits repeat a key (every metric credits a key once,
  at its first rank; see :mod:`memrun.metrics.retrieval`);
- ``unknown_keys``: hits whose key names no record and no session of the item's
  history (a server answering with its own ids). A key equal to a session id of the
  history is known: some arms return sessions;
- ``empty_searches``: searches that returned no hit. Many memory servers index
  asynchronously; searching at once measures an empty index;
- ``textless_hits``: hits with no text. Under ``gold_match=substring`` a gold phrase is
  looked for in the hit's key and text, so such a hit can match only by its key: a
  Python arm returning ``Hit(key, score)`` scored 0 on every item without a word.

Thresholds: more than :data:`EMPTY_SEARCH_SHARE` (1%) of the searches empty is a warning (the
count itself is shown under every run's table).
When at least :data:`UNKNOWN_KEY_SHARE` of all hits name unknown keys and gold is
matched by key, the run's retrieval metrics are **not measurable**
(:meth:`HitChecks.not_measurable`): they are written as null with the reason, and a
recall-axis run exits 2 once its rows and summary are written (:func:`refuse_unmeasured`).

Arms that answer themselves (``answer_for``, e.g. ``arm=answers_file``) get an answer
coverage check (:func:`answer_coverage`): answered items / items asked; below
``min_coverage`` the headline is partial and the run exits 2.

:class:`memrun.core.run_warnings.RunWarnings` prints and keeps every warning line of a run,
in order, for stderr, the summary and the instrument alike.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrun.arms import BYPASS_MODES
from memrun.arms.contract import arm_hooks
from memrun.errors import ArmError, DataError
from memrun.pipeline.one_history import Retrieved
from memrun.records import GoldMatch

EMPTY_SEARCH_SHARE = 0.01
"""More than this share of successful searches returning no hit is a warning (the count is
shown under every run's table whatever the share: :mod:`memrun.metrics.conventions`)."""
UNKNOWN_KEY_SHARE = 0.95
"""At least this share of a run's hits naming no record of their history makes its
retrieval metrics not measurable (gold matched by key)."""
EXAMPLES = 5
"""Unknown answer ids spelled out in the summary and on screen."""

COUNTS = ("n_searches", "n_hits", "over_top_k", "history_within_top_k", "duplicate_keys", "unknown_keys",
          "empty_searches", "textless_hits")


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def cutoff_warning(ks: Sequence[int], top_k: int, search_mode: str | None) -> str | None:
    """The warning for cut-offs beyond ``top_k`` (their metrics are null), or None.

    Arms that retrieve nothing (``search_mode=none``) have no retrieval metrics to warn about.
    """
    beyond = [k for k in ks if k > top_k]
    if not beyond or search_mode == "none":
        return None
    at = ", ".join(f"@{k}" for k in beyond)
    return (f"arm.top_k={top_k} < K for {at}: an arm asked for {top_k} hits cannot be measured there, so those "
            f"metrics are null; set arm.top_k={max(ks)} (or leave it unset: it defaults to max(ks) on "
            f"axis=recall), or drop those cut-offs from ks")


@dataclass
class HitChecks:
    """Counts what an arm's hits say about the run (see the module docstring).

    top_k: hits asked for per search. search_mode: the arm's (``describe()``).
    gold_match: the dataset's rule; unknown keys make retrieval unmeasurable only when
    gold is matched by key (a ``substring`` rule also reads the hit's text).
    """

    top_k: int
    search_mode: str | None = None
    gold_match: GoldMatch = "key"
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    items: int = 0  # items observed, whatever their outcome
    answered: int = 0  # items the arm answered itself (answer_for)

    def observe(self, r: Retrieved) -> None:
        """Count one item's retrieval (called once per item, before its rows are made)."""
        self.observe_keys(None if r.hits is None else [h.key for h in r.hits], r.history, r.n_records,
                          r.arm_answer is not None, None if r.hits is None else [h.text for h in r.hits])

    def observe_keys(self, keys: list[str] | None, history: Collection[str], n_records: int, answered: bool,
                     texts: Sequence[str | None] | None = None) -> None:
        """:meth:`observe` from what a row keeps (a resumed run's rows: :mod:`memrun.pipeline.resume`):
        the hits' keys in rank order (None: ingest or search failed), the keys of the item's
        history, its number of records, whether the arm answered itself, the hits' texts
        (None: not known, not counted)."""
        self.items += 1
        self.answered += answered
        if keys is None:  # ingest or search failed: an error, excluded
            return
        c = self.counts
        c["n_searches"] += 1
        c["n_hits"] += len(keys)
        c["over_top_k"] += len(keys) > self.top_k
        c["history_within_top_k"] += n_records <= self.top_k
        c["duplicate_keys"] += len(set(keys)) < len(keys)
        c["unknown_keys"] += sum(1 for k in keys if k not in history)
        c["empty_searches"] += not keys
        if texts is not None:
            c["textless_hits"] += sum(1 for t in texts if not t)

    def warnings(self) -> list[str]:
        """One line per finding (see the module docstring)."""
        c = self.counts
        searches, hits = c["n_searches"], c["n_hits"]
        if self.search_mode == "none":  # retrieves nothing by design: nothing to check
            return []
        lines = []
        if self.search_mode in BYPASS_MODES:
            lines.append(f"search_mode={self.search_mode} does not rank: its retrieval figures are not a retrieval result")
        else:
            if c["over_top_k"]:
                lines.append(f"the arm returned more than top_k={self.top_k} hits on {c['over_top_k']} of {searches} items")
            if c["history_within_top_k"]:
                lines.append(
                    f"top_k={self.top_k} >= the number of records in the history for {c['history_within_top_k']} of "
                    f"{searches} items: retrieval is bypassed there"
                )
        if c["duplicate_keys"]:
            lines.append(
                f"the arm returned a key more than once on {c['duplicate_keys']} of {searches} items: metrics credit "
                "each key once, at its first rank (later repeats take no rank)"
            )
        unmeasurable = self.not_measurable()
        if unmeasurable:
            lines.append(f"retrieval metrics not measurable: {unmeasurable}")
        elif c["unknown_keys"]:
            match = "can never match gold" if self.gold_match == "key" else "match gold only by their text"
            lines.append(
                f"{c['unknown_keys']} of {hits} hits ({_share(c['unknown_keys'], hits)}) name no record or session of "
                f"their item's history, so they {match}: the arm must return the Record.key it ingested"
                " (arm=http: map the key memrun sent in arm.search.result)"
            )
        if self.gold_match == "substring" and c["textless_hits"]:
            lines.append(
                f"{c['textless_hits']} of {hits} hits ({_share(c['textless_hits'], hits)}) carry no text while gold "
                "is a phrase a hit must contain (gold_match=substring): such a hit matches gold only by its key, so "
                "it counts as a miss whatever it found; return each hit with its record's text "
                "(Hit(record.key, score, record.text))"
            )
        if searches and c["empty_searches"] > EMPTY_SEARCH_SHARE * searches:
            lines.append(
                f"{c['empty_searches']} of {searches} searches ({_share(c['empty_searches'], searches)}, more than "
                f"{EMPTY_SEARCH_SHARE:.0%}) returned no hit: they count as misses; a memory server that indexes "
                "asynchronously needs its index ready before the searches"
            )
        return lines

    def not_measurable(self) -> str | None:
        """Why the run's retrieval metrics are not measurable, or None when they are.

        Not measurable: gold matched by key and at least :data:`UNKNOWN_KEY_SHARE` of
        the hits (at least one) name no record or session of their item's history.
        """
        c = self.counts
        if self.gold_match != "key" or not c["n_hits"] or c["unknown_keys"] < UNKNOWN_KEY_SHARE * c["n_hits"]:
            return None
        return (f"{c['unknown_keys']} of {c['n_hits']} hits ({_share(c['unknown_keys'], c['n_hits'])}, at least "
                f"{UNKNOWN_KEY_SHARE:.0%}) name no record or session of their item's history: the arm answers with "
                "ids of its own, which can never match gold, so the metrics are null in summary.json; the arm must "
                "return the Record.key it ingested (arm=http: map the key memrun sent in arm.search.result)")

    def coverage(self, arm: object, benchmark_ids: Iterable[str], min_coverage: float) -> dict[str, Any]:
        """The answer coverage of an arm that answers itself (:func:`answer_coverage`).

        benchmark_ids: every item id of the benchmark before selection; the arm's answer
        ids naming none of them come from its optional ``unknown_ids(ids)``.
        """
        unknown_ids = arm_hooks(arm).unknown_ids
        unknown = list(unknown_ids(benchmark_ids)) if unknown_ids is not None else []
        return answer_coverage(self.answered, self.items, unknown, min_coverage)


def answer_coverage(answered: int, items: int, unknown_ids: Sequence[str], min_coverage: float) -> dict[str, Any]:
    """The answer coverage of an arm that answers itself.

    answered: items the arm had an answer for; items: items the run asked;
    unknown_ids: ids the arm has answers for that name no item of the benchmark;
    min_coverage: the least share (0-1) for a complete headline.
    Returns ``answered``, ``items``, ``share`` (None over no item), ``min_coverage``,
    ``partial`` (share below min_coverage), ``unknown_ids`` (count) and
    ``unknown_id_examples`` (the first :data:`EXAMPLES`, sorted).
    """
    share = answered / items if items else None
    return {
        "answered": answered,
        "items": items,
        "share": share,
        "min_coverage": min_coverage,
        "partial": share is not None and share < min_coverage,
        "unknown_ids": len(unknown_ids),
        "unknown_id_examples": sorted(unknown_ids)[:EXAMPLES],
    }


def coverage_warnings(coverage: dict[str, Any]) -> list[str]:
    """Lines for a partial coverage and for answer ids that name no item."""
    lines = []
    if coverage["partial"]:
        lines.append(
            f"the arm answered {coverage['answered']} of {coverage['items']} items "
            f"({_share(coverage['answered'], coverage['items'])}, below min_coverage={coverage['min_coverage']}): "
            "the headline is partial; the unanswered items are errors, excluded from every ratio"
        )
    if coverage["unknown_ids"]:
        lines.append(
            f"{coverage['unknown_ids']} answer ids name no item of the benchmark (e.g. "
            f"{', '.join(coverage['unknown_id_examples'])}): another split or id scheme?"
        )
    return lines


def refuse_unmeasured(arm_name: str, summary: Mapping[str, Any], out_dir: Path) -> None:
    """Raise when a written run's headline does not measure what it names (rows and summary stay).

    ArmError: the run's retrieval metrics are not measurable (summary ``not_measurable``,
    set on axis=recall only: an accuracy run's headline does not read them).
    DataError: an arm that answers itself covered less than ``min_coverage`` of the items.
    """
    if summary.get("not_measurable"):
        raise ArmError(
            f"arm={arm_name}: retrieval metrics are not measurable: {summary['not_measurable']}; "
            f"rows and summary kept in {out_dir}"
        )
    coverage = summary.get("coverage") or {}
    if coverage.get("partial"):
        raise DataError(
            f"arm={arm_name} answered {coverage['answered']} of {coverage['items']} items "
            f"({_share(coverage['answered'], coverage['items'])}, below min_coverage={coverage['min_coverage']}): "
            f"the headline is partial (rows and summary kept in {out_dir}); select the answered items with "
            "benchmark.slice.ids_file, or set min_coverage=0 to accept a partial run"
        )
