"""LLM judges: a chat model grades an answer with a prompt chosen by question type.

Prompts are files (``memrun/judges/prompts/*.md`` or a path) selected per item:
abstention items use ``prompts.abstention``; otherwise the item's category label picks
``prompts.<label>`` when present, else ``prompts.default``. The instrument's
``judge_prompt_sha256`` covers every prompt the judge may use.

Verdicts are parsed strictly (:func:`parse_verdict`): the reply must be one JSON object
whose ``verdict`` is exactly one of CORRECT, WRONG (or INCORRECT), ABSTAIN, or a bare
reply that is exactly one of those words. ``INCORRECT`` never passes as CORRECT, a
JSON string ``"false"`` or ``"true"`` is no verdict, and an empty, ambiguous or
unparseable reply is asked again once with the parse error shown (:mod:`memrun.judges.retry`),
then an ERROR, never WRONG and never CORRECT.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from memrun.errors import ConfigError, JudgeReplyUnparseable
from memrun.judges import Case, JudgeVerdict
from memrun.judges.retry import RETRIED_COLUMN, RETRY_POLICY, ask_parsed
from memrun.llm.client import ChatRequest
from memrun.llm.endpoint import resolve_endpoint
from memrun.llm.prompts import Prompt, combined_sha256, load_prompt
from memrun.llm.service import LLMService
from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, WRONG

JUDGE_FIELDS = ("question", "gold", "answer", "question_date_line")
_WORDS = {"CORRECT": CORRECT, "WRONG": WRONG, "INCORRECT": WRONG, "ABSTAIN": ABSTAIN}
REQUEST_MEMO = 1024  # judge requests kept for reuse by later repeats
PARSE_MEMO = 4096  # parsed judge replies kept, by reply text (parse_verdict)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


@functools.lru_cache(maxsize=PARSE_MEMO)
def parse_verdict(text: str) -> tuple[str, str]:
    """``(label, explanation)`` from a judge reply, or raise :class:`JudgeReplyUnparseable`.

    A pure function of ``text``: the last :data:`PARSE_MEMO` readable replies are kept, so
    the same reply text (an item's repeats at temperature 0, a cached re-run's thousands)
    is decoded once; an unreadable one raises every time.

    Accepted: a JSON object (optionally in a Markdown code fence) with ``verdict`` a
    string equal, after trimming and upper-casing, to CORRECT, WRONG, INCORRECT or
    ABSTAIN, and optional ``explanation`` (string) and ``score`` (the JSON number 0 or 1,
    which must agree with the verdict); or a bare reply that is exactly one such word
    (surrounding quotes, spaces and a final period allowed).
    """
    body = text.strip()
    if not body:
        raise JudgeReplyUnparseable("empty reply")
    if m := _FENCE.match(body):
        body = m.group(1).strip()
    if body.startswith("{"):
        try:
            obj = json.loads(body)
        except json.JSONDecodeError as exc:
            raise JudgeReplyUnparseable(f"not valid JSON ({exc.msg})") from None
        return _from_object(obj)
    word = body.strip("\"'` .").upper()
    if word in _WORDS:
        return _WORDS[word], ""
    raise JudgeReplyUnparseable(f"no verdict in reply {body[:80]!r}")


def _from_object(obj: Any) -> tuple[str, str]:
    if not isinstance(obj, dict):
        raise JudgeReplyUnparseable("the JSON reply is not an object")
    verdict = obj.get("verdict")
    if not isinstance(verdict, str):
        raise JudgeReplyUnparseable(f"'verdict' is {type(verdict).__name__}, not one of CORRECT, WRONG, ABSTAIN")
    word = verdict.strip().upper()
    if word not in _WORDS:
        raise JudgeReplyUnparseable(f"'verdict' is {verdict[:40]!r}, not one of CORRECT, WRONG, ABSTAIN")
    label = _WORDS[word]
    if "score" in obj:
        score = obj["score"]
        if isinstance(score, bool) or score not in (0, 1):
            raise JudgeReplyUnparseable(f"'score' is {score!r}, not 0 or 1")
        if (score == 1) != (label == CORRECT):
            raise JudgeReplyUnparseable(f"'score' {score} contradicts verdict {word}")
    explanation = obj.get("explanation", "")
    if not isinstance(explanation, str):
        explanation = json.dumps(explanation, ensure_ascii=False)
    return label, " ".join(explanation.split())


class LLMJudge:
    """Grades with a chat model (see the module docstring). Built by :func:`memrun.judges.build_judge`.

    model: the judge model. prompts: name -> built-in prompt name or file path; must
    hold ``default`` (and ``abstention`` when the benchmark has abstention items).
    abstention_categories: category labels graded as abstention items.
    """

    def __init__(
        self,
        *,
        llm: LLMService | None,
        where: str = "judge",
        model: str,
        prompts: Mapping[str, str],
        abstention_categories: Sequence[str] = (),
        base_url: str | None = None,
        base_url_env: str | None = "OPENAI_BASE_URL",
        api_key_env: str | None = "OPENAI_API_KEY",
        provider: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
    ) -> None:
        if "default" not in prompts:
            raise ConfigError(f"{where}.prompts has no 'default' entry; add default: default")
        self.llm = llm
        self.model = model
        self.abstention_categories = tuple(abstention_categories)
        self.prompts: dict[str, Prompt] = {
            key: load_prompt("memrun.judges", value, f"{where}.prompts.{key}", JUDGE_FIELDS) for key, value in prompts.items()
        }
        self.endpoint = resolve_endpoint(
            where, model=model, base_url=base_url, base_url_env=base_url_env, api_key_env=api_key_env, provider=provider
        )
        self.params = {"temperature": float(temperature), "max_tokens": int(max_tokens)}
        # repeats of an item are graded close together: a small memo finds them
        self._request = functools.lru_cache(maxsize=REQUEST_MEMO)(self._build_request)

    def describe(self) -> dict[str, Any]:
        return {
            "judge_model": self.model,
            "judge_prompt_sha256": combined_sha256({p.name: p for p in self.prompts.values()}.values()),
            "fake": self.endpoint.fake,
            "endpoint": self.endpoint,
            "judge_retry": RETRY_POLICY,
        }

    def prompt_for(self, case: Case) -> Prompt:
        """The prompt for ``case`` (abstention, then category label, then default)."""
        return self.prompts[self._prompt_key(case)]

    def _prompt_key(self, case: Case) -> str:
        if case.abstention and "abstention" in self.prompts:
            return "abstention"
        return case.category_label if case.category_label in self.prompts else "default"

    def request(self, case: Case) -> tuple[Prompt, ChatRequest]:
        """The prompt chosen for ``case`` and the request that asks it. Cases that render the
        same text (an item's repeats with the same answer) share one request object, so its
        text is rendered and hashed once (the memo's key names the prompt by its key in
        :attr:`prompts`: a str's hash is kept, a Prompt's is computed from its fields each time)."""
        key = self._prompt_key(case)
        return self.prompts[key], self._request(key, case.item.question, case.gold, case.answer, case.item.question_date)

    def _build_request(self, key: str, question: str, gold: str | None, answer: str, date: str | None) -> ChatRequest:
        text = self.prompts[key].render(
            {
                "question": question,
                "gold": gold if gold is not None else "(none: the conversation does not contain the answer)",
                "answer": answer,
                "question_date_line": f"\nDate of the question: {date}\n" if date else "",
            }
        )
        return ChatRequest(self.model, ({"role": "user", "content": text},), self.params)

    async def grade(self, case: Case, repeat: int) -> JudgeVerdict:
        """Ask the judge model (or the cache); an unparseable reply is asked again once with
        the parse error shown (:mod:`memrun.judges.retry`), and an ERROR if still unreadable."""
        assert self.llm is not None, "LLMJudge needs the run's LLM service"
        prompt, request = self.request(case)
        try:
            (label, explanation), cached, tokens, retried = await ask_parsed(
                self.llm, self.endpoint, request, repeat, parse_verdict)
        except JudgeReplyUnparseable as exc:
            return JudgeVerdict(ERROR, None, f"judge reply unparseable after a retry: {exc}", prompt.name, False, None)
        return JudgeVerdict(label, 1.0 if label == CORRECT else 0.0, explanation, prompt.name, cached, tokens or None,
                       {RETRIED_COLUMN: True} if retried else None)
