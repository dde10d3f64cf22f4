"""Rubric judging, BEAM's own: the judge scores each rubric item of a question, the
question's score is their mean, a fraction in [0, 1] rather than a label.

Source: ``src/evaluation/compute_metrics.py`` (``evaluate_*``: one judge call per rubric
item with ``unified_llm_judge_base_prompt`` from ``src/prompts.py``; the mean of the
item scores) and ``src/evaluation/run_evaluation.py`` of GitHub ``mohammadtavakoli78/BEAM``
at commit ``b2a3ee8b``. The prompts are the dataset's own, kept as files
(``prompts/beam_rubric.md``, ``prompts/beam_equivalence.md``) and hashed into the
instrument. Where memrun differs from the official code, on purpose:

- the prompt's ``QUESTION`` is filled in (the official code leaves the literal
  ``<question>`` placeholder in the prompt);
- a 0.5 counts 0.5 (the prompt's scale; the official code adds ``int(score)``, which
  turns 0.5 into 0, for every ability but event ordering);
- replies are parsed strictly (:func:`parse_rubric_reply`): one JSON object (a Markdown
  code fence allowed) whose ``score`` is the JSON number 0, 0.5 or 1. Anything else makes
  the item an error, never a zero (the official code repairs broken JSON instead).

Event ordering (category ``event_ordering``) adds the official tau_norm x F1 score
(:mod:`memrun.metrics.event_order`): the answer's lines are aligned to the rubric's
events with the dataset's equivalence prompt, one call per (line, event) pair asked, a
reply parsed strictly as YES or NO (the official code reads any reply containing
"yes" as yes). Rows carry ``rubric_scores`` and, for event ordering, ``order_f1``,
``order_tau_norm`` and ``order_score``.

The verdict's ``score`` is the rubric mean; its label is ``correct`` when every rubric
item scored 1 and ``wrong`` otherwise (the summary's ``accuracy`` is then the share of
questions fully met; the headline is the mean score).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

from memrun.errors import ConfigError, JudgeReplyUnparseable
from memrun.judges import Case, JudgeVerdict
from memrun.judges.retry import RETRIED_COLUMN, RETRY_POLICY, ask_parsed
from memrun.llm.client import ChatRequest
from memrun.llm.endpoint import resolve_endpoint
from memrun.llm.prompts import Prompt, combined_sha256, load_prompt
from memrun.llm.service import LLMService
from memrun.metrics.event_order import align, order_score, system_events
from memrun.stats.labels import CORRECT, ERROR, WRONG

RUBRIC_FIELDS = ("question", "rubric_item", "answer")
EQUIVALENCE_FIELDS = ("first", "second")
USER_MARK = "<!-- user -->"
SCORES = (0.0, 0.5, 1.0)
ORDER_CATEGORY = "event_ordering"
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


def parse_rubric_reply(text: str) -> tuple[float, str]:
    """``(score, reason)`` from a rubric judge reply, or raise :class:`JudgeReplyUnparseable`.

    Accepted: one JSON object, optionally in a Markdown code fence, whose ``score`` is a
    JSON number equal to 0, 0.5 or 1 (``1.0`` too); ``reason`` an optional string.
    """
    body = text.strip()
    if m := _FENCE.match(body):
        body = m.group(1).strip()
    if not body:
        raise JudgeReplyUnparseable("empty reply")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        raise JudgeReplyUnparseable(f"not one JSON object ({exc.msg}): {body[:60]!r}") from None
    if not isinstance(obj, dict):
        raise JudgeReplyUnparseable("the JSON reply is not an object")
    score = obj.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or float(score) not in SCORES:
        raise JudgeReplyUnparseable(f"'score' is {score!r}, not the number 0, 0.5 or 1")
    reason = obj.get("reason", "")
    return float(score), " ".join(str(reason).split())


def parse_equivalence(text: str) -> bool:
    """True for a reply that is YES, False for NO (case, spaces, ``*`` and a final period
    ignored); raise :class:`JudgeReplyUnparseable` for anything else."""
    word = text.strip().strip("*`\"' .").upper()
    if word in ("YES", "NO"):
        return word == "YES"
    raise JudgeReplyUnparseable(f"equivalence reply {text.strip()[:40]!r} is neither YES nor NO")


class RubricJudge:
    """Scores a reader's answer rubric item by rubric item (see the module docstring).

    Built by :func:`memrun.judges.build_judge`. model: the judge model. prompt: the
    rubric prompt (built-in name or file path; needs ``{{question}}``,
    ``{{rubric_item}}``, ``{{answer}}``). equivalence_prompt: event ordering's alignment
    prompt (``{{first}}``, ``{{second}}``; the text before a line ``<!-- user -->`` is the
    system message). The item's rubric is ``item.extra["rubric"]``.
    """

    fractional = True  # scores are fractions; the summary's headline is their mean
    plan_note = ("event-ordering items also ask one equivalence call per (reference event, answer line) pair "
                 "the alignment tries; those depend on the answers and are not counted")

    def __init__(self, *, llm: LLMService | None, where: str = "judge", model: str, prompt: str = "beam_rubric",
                 equivalence_prompt: str = "beam_equivalence", base_url: str | None = None,
                 base_url_env: str | None = "OPENAI_BASE_URL", api_key_env: str | None = "OPENAI_API_KEY",
                 provider: str | None = None, temperature: float = 0.0, max_tokens: int = 512) -> None:
        self.llm, self.model = llm, model
        self.prompt = load_prompt("memrun.judges", prompt, f"{where}.prompt", RUBRIC_FIELDS)
        self.equivalence = load_prompt("memrun.judges", equivalence_prompt, f"{where}.equivalence_prompt",
                                       EQUIVALENCE_FIELDS)
        if self.equivalence.text.count(USER_MARK) > 1:
            raise ConfigError(f"{where}.equivalence_prompt: more than one '{USER_MARK}' line")
        self.endpoint = resolve_endpoint(where, model=model, base_url=base_url, base_url_env=base_url_env,
                                         api_key_env=api_key_env, provider=provider)
        self.params = {"temperature": float(temperature), "max_tokens": int(max_tokens)}

    def describe(self) -> dict[str, Any]:
        return {
            "judge_model": self.model,
            "judge_prompt_sha256": combined_sha256([self.prompt, self.equivalence]),
            "fake": self.endpoint.fake,
            "endpoint": self.endpoint,
            "judge_retry": RETRY_POLICY,
        }

    def _request(self, prompt: Prompt, values: dict[str, str]) -> ChatRequest:
        system, mark, user = prompt.render(values).partition(USER_MARK)
        messages = ({"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}) if mark \
            else ({"role": "user", "content": system},)
        return ChatRequest(self.model, messages, self.params)

    def requests(self, case: Case) -> list[ChatRequest]:
        """The calls :meth:`grade` asks for ``case`` whatever the answer says: one per rubric
        item (``memrun plan`` counts and prices them; event ordering's alignment calls,
        which depend on the answer, are not among them). Empty for an item without a rubric."""
        return [self._request(self.prompt, {"question": case.item.question, "rubric_item": r, "answer": case.answer})
                for r in _rubric(case) or []]

    async def _ask(self, prompt: Prompt, values: dict[str, str], repeat: int,
                   parse: Any) -> tuple[Any, bool, int, bool]:
        """(parsed reply, cached, tokens, retried) of one call, an unparseable reply asked
        again once with the parse error shown (:func:`memrun.judges.retry.ask_parsed`)."""
        assert self.llm is not None, "RubricJudge needs the run's LLM service"
        return await ask_parsed(self.llm, self.endpoint, self._request(prompt, values), repeat, parse)

    async def grade(self, case: Case, repeat: int) -> JudgeVerdict:
        """Score every rubric item (and, for event ordering, the order); an unparseable
        reply makes the verdict an ERROR. Raises CallError / BudgetExhausted for a failed call."""
        rubric = _rubric(case)
        if rubric is None:
            return JudgeVerdict(ERROR, None, "the item has no rubric (extra.rubric): rubric judges grade BEAM-style items",
                           self.prompt.name)
        try:
            replies = await asyncio.gather(*(
                self._ask(self.prompt, {"question": case.item.question, "rubric_item": r, "answer": case.answer},
                          repeat, parse_rubric_reply) for r in rubric))
            details: dict[str, Any] = {"rubric_scores": [s for (s, _), _, _, _ in replies]}
            cached, tokens = all(c for _, c, _, _ in replies), sum(t for _, _, t, _ in replies)
            retried = any(r for _, _, _, r in replies)
            if case.item.category == ORDER_CATEGORY:
                calls: list[tuple[bool, int, bool]] = []

                async def equivalent(event: str, line: str) -> bool:
                    same, was_cached, used, again = await self._ask(
                        self.equivalence, {"first": event, "second": line}, repeat, parse_equivalence)
                    calls.append((was_cached, used, again))
                    return same

                aligned = await align(rubric, system_events(case.answer), equivalent)
                order = order_score(rubric, aligned)
                details.update(order_f1=order.f1, order_tau_norm=order.tau_norm, order_score=order.score)
                cached, tokens = cached and all(c for c, _, _ in calls), tokens + sum(t for _, t, _ in calls)
                retried = retried or any(r for _, _, r in calls)
            if retried:
                details[RETRIED_COLUMN] = True
        except JudgeReplyUnparseable as exc:
            return JudgeVerdict(ERROR, None, f"judge reply unparseable after a retry: {exc}", self.prompt.name, False, None)
        scores = details["rubric_scores"]
        mean = sum(scores) / len(scores)
        explanation = " | ".join(f"[{i + 1}] {s:g}: {reason}" for i, ((s, reason), _, _, _) in enumerate(replies))
        return JudgeVerdict(CORRECT if mean == 1.0 else WRONG, mean, explanation, self.prompt.name, cached, tokens,
                       details)


def _rubric(case: Case) -> Sequence[str] | None:
    rubric = case.item.extra.get("rubric")
    if not isinstance(rubric, list) or not rubric or not all(isinstance(r, str) for r in rubric):
        return None
    return rubric
