"""Dataset statistics a publisher reports, computed from the files (``kind: statistics``).

``beam_chat_statistics``: BEAM's README table ("Dataset Statistics", averages per chat of
each size): user messages, assistant messages, "answer assistant questions" (user
messages whose ``question_type`` is ``answer_ai_question``), follow-up questions
(``followup_question``) and turns (the entries of each batch's ``turns``), read from
``chats/<size>/<n>/chat.json`` as the BEAM repository holds them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from memrun.benchmarks import beam_files
from memrun.errors import DataError

CELLS = ("user_messages", "assistant_messages", "answer_assistant_questions", "followup_questions", "turns")
README_SIZES = {"128K": "100K", "500K": "500K", "1M": "1M", "10M": "10M"}


def beam_chat_statistics(data_dir: Path) -> dict[str, float]:
    """``<README size>.<cell>`` -> the mean per chat, for every size whose chats are under
    ``data_dir/beam/chats`` (sizes absent are left out). Raises DataError for a malformed chat."""
    out: dict[str, float] = {}
    for readme, folder in README_SIZES.items():
        chats = sorted((data_dir / "beam" / "chats" / folder).glob("*/chat.json"))
        if not chats or folder not in beam_files.SIZES or folder == "10M":  # 10M chats hold plans, not batches
            continue
        totals = dict.fromkeys(CELLS, 0)
        for chat in chats:
            try:
                batches = json.loads(chat.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise DataError(f"{chat}: cannot read the chat ({exc})") from exc
            for batch in batches:
                turns = batch.get("turns") or []
                totals["turns"] += len(turns)
                for message in (m for turn in turns for m in turn):
                    if message.get("role") == "user":
                        totals["user_messages"] += 1
                        kind = message.get("question_type")
                        totals["answer_assistant_questions"] += kind == "answer_ai_question"
                        totals["followup_questions"] += kind == "followup_question"
                    else:
                        totals["assistant_messages"] += 1
        out.update({f"{readme}.{cell}": totals[cell] / len(chats) for cell in CELLS})
    return out


STATISTICS: dict[str, Callable[[Path], dict[str, float]]] = {"beam_chat_statistics": beam_chat_statistics}
