"""``arm=oracle``: only the gold evidence goes to the reader (the upper bound).

For each item the arm returns the history's records that the dataset's gold rule
(:func:`memrun.records.gold_matches`) matches against the item's gold keys, in history
order: ``level=turn`` returns those records, ``level=session`` every record of the
sessions they belong to and of the item's ``gold_sessions`` (LongMemEval's
``answer_session_ids``); records without a session count as their own session. An
item without retrieval gold gets no records. The run calls
:meth:`OracleArm.search_item` (see :class:`memrun.arms.ItemSearcher`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrun.errors import ArmError
from memrun.records import GoldMatch, Hit, Item, Record, gold_matches

LEVELS = ("turn", "session")


class OracleArm:
    """The gold records of each item (see the module docstring).

    level: ``turn`` or ``session``. Hit scores are 1.0. Raises ArmError for a bad level,
    and from :meth:`search`, which cannot know the gold.
    """

    def __init__(self, *, level: str = "turn") -> None:
        if level not in LEVELS:
            raise ArmError(f"arm.level={level!r}: use turn or session")
        self.level = level
        self._records: Sequence[Record] = ()

    def describe(self) -> dict[str, Any]:
        return {"search_mode": "oracle"}

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self._records = records

    def search(self, query: str, k: int) -> list[Hit]:
        raise ArmError("arm=oracle needs the item's gold: the run calls search_item(), not search()")

    def search_item(self, item: Item, k: int, gold_match: GoldMatch) -> list[Hit]:
        if gold_match == "key":  # the common rule, as a set lookup
            wanted = set(item.gold_keys)
            gold = [i for i, r in enumerate(self._records) if r.key in wanted]
        else:
            gold = [
                i for i, r in enumerate(self._records)
                if gold_matches(Hit(key=r.key, score=1.0, text=r.text), item.gold_keys, gold_match)
            ]
        if self.level == "session":
            turns = set(gold)
            sessions = ({self._records[i].session for i in turns} | set(item.gold_sessions)) - {None}
            gold = [
                i for i, r in enumerate(self._records)
                if (r.session in sessions if r.session is not None else i in turns)
            ]
        return [Hit(key=self._records[i].key, score=1.0, text=self._records[i].text) for i in gold]

    def close(self) -> None:
        self._records = ()
