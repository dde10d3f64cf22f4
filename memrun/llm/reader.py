"""The reader: turn an item's retrieved hits into a prompt and ask the model for an answer.

Context = one line per hit in rank order, ``[<record date>] <hit text>`` (the date of
the record behind the hit, when the benchmark gives one). The question's date, when
the benchmark has one, goes into the prompt as ``Current date: ...``.

Context limit (``max_context_tokens``): the size is estimated *before* sending as
characters / ``chars_per_token`` (an estimate only used for this decision; token columns
hold what the API reported). Over the limit, ``overflow: truncate`` drops hits from the
bottom of the ranking until it fits, ``overflow: skip`` marks the item
``context_overflow`` (an error, excluded from ratios). A server that answers "context
length exceeded" also marks the item ``context_overflow``. The policy is part of the
instrument (:attr:`Reader.context_policy`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memrun.llm.client import ChatRequest
from memrun.llm.endpoint import Endpoint
from memrun.llm.prompts import Prompt
from memrun.llm.service import CallOutcome, LLMService
from memrun.records import Hit, Item, Record

READER_FIELDS = ("context", "question", "question_date_line")


@dataclass(frozen=True)
class Prepared:
    """A reader request ready to send, or why there is none.

    dropped: hits left out to fit the context limit. overflow: an error message when
    the item was skipped under ``overflow: skip``. context_chars: characters of context sent.
    """

    request: ChatRequest | None
    dropped: int = 0
    overflow: str | None = None
    context_chars: int = 0


def context_lines(hits: Sequence[Hit], records: Mapping[str, Record],
                  memo: dict[tuple[str, str], str] | None = None) -> list[str]:
    """One line per hit, dated with the record's timestamp when known.

    memo: the lines already made from ``records``, by (hit key, hit text), which a line is a
    function of (an item's hits are mostly records other items of its history retrieved too:
    a LoCoMo conversation's 200 questions x 10 hits read ~600 records); filled as lines are made.
    """
    lines = []
    for hit in hits:
        if memo is not None:
            line = memo.get((hit.key, hit.text))
            if line is not None:
                lines.append(line)
                continue
        record = records.get(hit.key)
        text = " ".join((hit.text or (record.text if record else hit.key)).split())
        date = record.timestamp if record is not None else None
        line = f"[{date}] {text}" if date else text
        if memo is not None:
            memo[(hit.key, hit.text)] = line
        lines.append(line)
    return lines


def overflow_warning(rows: Iterable[Mapping[str, Any]], max_context_tokens: int | None) -> str | None:
    """A warning when some items' context exceeded the reader's (``context_overflow``:
    estimated over ``max_context_tokens`` under ``overflow: skip``, or refused by the
    server), naming how many items and histories; else None. Each item counted once."""
    over = [r for r in rows if r.get("repeat") == 0 and str(r.get("error") or "").startswith("context_overflow")]
    if not over:
        return None
    histories = len({r.get("cluster") for r in over})
    limit = f"reader.max_context_tokens={max_context_tokens}" if max_context_tokens else "the reader model's context"
    return (f"{len(over)} item(s) in {histories} histories exceeded {limit}: they are errors (context_overflow), "
            "not answered from a cut context")


def emptied_context_warning(rows: Iterable[Mapping[str, Any]], max_context_tokens: int | None) -> str | None:
    """A warning when the context limit dropped every retrieved hit of some items (their
    reader answered from no memories at all), else None. rows: accuracy rows
    (``n_retrieved``, ``context_dropped``); each item counted once (repeat 0)."""
    emptied = sum(
        1 for r in rows
        if r.get("repeat") == 0 and (r.get("n_retrieved") or 0) > 0 and r.get("context_dropped") == r.get("n_retrieved")
    )
    if not emptied:
        return None
    return (f"reader.max_context_tokens={max_context_tokens} dropped every retrieved hit of {emptied} item(s): "
            "their answers saw no memories; raise the limit or lower arm.top_k")


class Reader:
    """Prompts the reader model with the retrieved context (see the module docstring).

    endpoint, model, prompt: where and what to ask. temperature, max_tokens: request
    parameters. max_context_tokens: None for no limit. llm: None for a reader that only
    prepares requests (``memrun view`` rebuilds a run's requests; it never answers).
    """

    def __init__(
        self,
        llm: LLMService | None,
        endpoint: Endpoint,
        *,
        model: str,
        prompt: Prompt,
        temperature: float = 0.0,
        max_tokens: int = 256,
        max_context_tokens: int | None = None,
        overflow: str = "truncate",
        chars_per_token: float = 4.0,
    ) -> None:
        self.llm = llm
        self.endpoint = endpoint
        self.model = model
        self.prompt = prompt
        self.params = {"temperature": float(temperature), "max_tokens": int(max_tokens)}
        self.max_context_tokens = max_context_tokens
        self.overflow = overflow
        self.chars_per_token = chars_per_token
        self.overflow_hint = ""  # appended to a context_overflow message (set for arm=full_context)

    @property
    def context_policy(self) -> str | None:
        """The overflow policy as recorded in the instrument, None without a limit."""
        if self.max_context_tokens is None:
            return None
        return f"{self.overflow} over {self.max_context_tokens} tokens (estimated {self.chars_per_token:g} chars/token)"

    def _fits(self, lines: Sequence[str]) -> bool:
        chars = sum(len(line) + 1 for line in lines)
        return self.max_context_tokens is None or math.ceil(chars / self.chars_per_token) <= self.max_context_tokens

    def prepare(self, item: Item, hits: Sequence[Hit], records: Mapping[str, Record],
                memo: dict[tuple[str, str], str] | None = None) -> Prepared:
        """Build the request for ``item`` from its hits (rank order); ``memo``: the context
        lines made so far from ``records`` (:func:`context_lines`), one for a history's items."""
        lines = context_lines(hits, records, memo)
        dropped = 0
        if not self._fits(lines):
            if self.overflow == "skip":
                estimate = math.ceil(sum(len(x) + 1 for x in lines) / self.chars_per_token)
                return Prepared(None, overflow=f"context_overflow: ~{estimate} tokens > max_context_tokens="
                                               f"{self.max_context_tokens}{self.overflow_hint}")
            while lines and not self._fits(lines):
                lines.pop()
                dropped += 1
        context = "\n".join(lines) if lines else "(no memories were retrieved)"
        text = self.prompt.render(
            {
                "context": context,
                "question": item.question,
                "question_date_line": f"\nCurrent date: {item.question_date}\n" if item.question_date else "",
            }
        )
        request = ChatRequest(self.model, ({"role": "user", "content": text},), self.params)
        return Prepared(request, dropped=dropped, context_chars=len(context))

    async def answer(self, prepared: Prepared, repeat: int) -> CallOutcome:
        """Ask the model (or the cache). Raises CallError / BudgetExhausted; RuntimeError for a
        reader built without an LLM service (it only prepares requests)."""
        assert prepared.request is not None
        if self.llm is None:
            raise RuntimeError("this reader was built without an LLM service: it prepares requests, never answers")
        return await self.llm.call(self.endpoint, prepared.request, repeat)
