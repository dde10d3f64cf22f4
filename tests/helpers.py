"""Builders for hand-made LongMemEval files and a deterministic arm, shared by the tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memrun.benchmarks.longmemeval import LongMemEval
from memrun.records import Hit, Record

DATE = "2023/05/20 (Sat) 02:21"
FILES = {"s": {"file": "longmemeval_s_cleaned.json", "original": "longmemeval_s.json", "url": None, "sha256": None}}


def turn(role: str, content: str, has_answer: bool | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"role": role, "content": content}
    if has_answer is not None:
        t["has_answer"] = has_answer
    return t


def question(
    qid: str,
    sessions: Sequence[tuple[str, str, list[dict[str, Any]]]],
    answer_ids: Sequence[str],
    *,
    qtype: str = "single-session-user",
    answer: Any = "blue",
    text: str = "What colour is my car?",
    **extra: Any,
) -> dict[str, Any]:
    """One question object in the published schema; sessions are (id, date, turns)."""
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": text,
        "answer": answer,
        "question_date": DATE,
        "haystack_session_ids": [s[0] for s in sessions],
        "haystack_dates": [s[1] for s in sessions],
        "haystack_sessions": [s[2] for s in sessions],
        "answer_session_ids": list(answer_ids),
        **extra,
    }


def write_lme(path: Path, questions: Sequence[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(list(questions)))
    return path


def loader(path: Path, **kwargs: Any) -> LongMemEval:
    kwargs.setdefault("categories", {})
    return LongMemEval(split="s", files=FILES, path=str(path), **kwargs)


class ReverseArm:
    """Returns the ingested records last-first (a fixed, known ranking)."""

    def __init__(self) -> None:
        self.records: Sequence[Record] = ()

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self.records = records

    def search(self, query: str, k: int) -> list[Hit]:
        ranked = list(reversed(self.records))[:k]
        return [Hit(key=r.key, score=float(len(ranked) - i), text=r.text) for i, r in enumerate(ranked)]

    def close(self) -> None:
        self.records = ()
