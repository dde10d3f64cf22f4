"""The synthetic smoke set shipped inside memrun (``benchmark=synthetic``).

Author-written: 5 short conversations, 30 questions, no third-party text. Gold keys
are phrases a correct memory must contain; a hit matches when its key or text contains
one, case-folded, underscores read as spaces. One question is 3.3 points, so the set
catches a collapse, never a ranking between close arms. Needs no download: it is the
offline default (``memrun`` with no arguments).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

from memrun.records import Dataset, Group, Item, Record

CATEGORIES = {"single-hop": "single-hop", "multi-hop": "multi-hop", "temporal": "temporal"}


class Synthetic:
    """Loader for ``memrun/benchmarks/data/synthetic.json``."""

    def __init__(self, *, split: str = "smoke", smoke_test: bool = True) -> None:
        self.split = split

    def load(self, data_dir: Path) -> Dataset:
        """Parse the packaged file; ``data_dir`` is unused (nothing to download)."""
        blob = resources.files("memrun.benchmarks").joinpath("data/synthetic.json").read_bytes()
        raw = json.loads(blob)
        groups = []
        for conv in raw["conversations"]:
            cid = conv["conversation_id"]
            records = [
                Record(key=f"{cid}:{i}", text=f"{turn['role']}: {turn['content']}", timestamp=conv.get("date"))
                for i, turn in enumerate(conv["conversation"])
            ]
            items = [
                Item(
                    item_id=f"{cid}:{row}",
                    history_id=cid,
                    cluster=cid,
                    category=q["category"],
                    question=q["question"],
                    answer=q["answer"],
                    answer_raw=json.dumps(q["answer"]),
                    gold_keys=tuple(q["gold_keys"]),
                    gold_keys_raw=tuple(q["gold_keys"]),
                )
                for row, q in enumerate(conv["questions"])
            ]
            groups.append(Group(history_id=cid, records=records, items=items))
        return Dataset(
            split=self.split,
            sha256=hashlib.sha256(blob).hexdigest(),
            groups=groups,
            categories=dict(CATEGORIES),
            comparable_categories=None,
            gold_match="substring",
        )
