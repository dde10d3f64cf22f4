"""``arm=full_context``: no retrieval; every record of the history, in history order.

The long-context baseline: the reader gets the whole history. When a history exceeds a
limit (``max_records`` records or ``max_chars`` characters of record text, whichever
binds first), the truncation policy ``keep`` decides which end survives: ``last`` keeps
the most recent records (the question is asked after the history), ``first`` the
oldest. The policy is in the run's config; :meth:`FullContextArm.describe` also reports
it, and ``truncated_histories`` / ``dropped_records`` count what it cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrun.core.run_warnings import warn
from memrun.errors import ArmError
from memrun.records import Hit, Record

KEEP = ("last", "first")


def truncate(records: Sequence[Record], *, max_records: int | None, max_chars: int | None,
             keep: str) -> Sequence[Record]:
    """The records kept under the policy, in history order (the input when no limit binds)."""
    ordered = list(records) if keep == "first" else list(reversed(records))
    kept: list[Record] = []
    chars = 0
    for record in ordered:
        if max_records is not None and len(kept) >= max_records:
            break
        if max_chars is not None and chars + len(record.text) > max_chars:
            break
        kept.append(record)
        chars += len(record.text)
    return kept if keep == "first" else kept[::-1]


class FullContextArm:
    """Returns the whole (possibly truncated) history for every query; see the module docstring.

    max_records, max_chars: limits (None: no limit). keep: ``last`` or ``first``.
    Hit scores are 0.0: there is no ranking. Raises ArmError for a bad policy.
    """

    def __init__(self, *, max_records: int | None = None, max_chars: int | None = None, keep: str = "last") -> None:
        if keep not in KEEP:
            raise ArmError(f"arm.keep={keep!r}: use last (most recent records) or first")
        for key, value in (("max_records", max_records), ("max_chars", max_chars)):
            if value is not None and value < 1:
                raise ArmError(f"arm.{key}={value}: must be at least 1, or null for no limit")
        self.max_records, self.max_chars, self.keep = max_records, max_chars, keep
        self.truncated_histories = 0
        self.dropped_records = 0
        self._hits: list[Hit] = []

    def policy(self) -> str:
        """The truncation policy in words, e.g. ``keep last, max_chars=60000``."""
        limits = [f"{k}={v}" for k, v in (("max_records", self.max_records), ("max_chars", self.max_chars)) if v]
        return f"keep {self.keep}, " + ", ".join(limits) if limits else "none (whole history)"

    def describe(self) -> dict[str, Any]:
        return {"search_mode": "full_context", "truncation": self.policy()}

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        kept = truncate(records, max_records=self.max_records, max_chars=self.max_chars, keep=self.keep)
        if len(kept) < len(records):
            self.truncated_histories += 1
            self.dropped_records += len(records) - len(kept)
        self._hits = [Hit(key=r.key, score=0.0, text=r.text) for r in kept]

    def search(self, query: str, k: int) -> list[Hit]:
        return list(self._hits)

    def close(self) -> None:
        if self.truncated_histories:
            warn(f"full_context truncated {self.truncated_histories} histories ({self.dropped_records} records "
                 f"dropped) under policy: {self.policy()}")
        self._hits = []
