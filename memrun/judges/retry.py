"""A judge reply that cannot be parsed is asked again once, with the parse error shown.

The policy (:data:`RETRY_POLICY`) is the instrument's ``judge_retry``, a comparability
field: a run that re-asks turns some errors into labels, so its numbers differ from a run
that does not. A label that came from the retry is marked on its row (``judge_retried``)
and counted in the summary; a reply still unparseable after the retry is an error of the
judge stage, counted against ``max_error_share`` like any other error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from memrun.llm.client import ChatRequest
from memrun.llm.endpoint import Endpoint
from memrun.llm.service import LLMService

T = TypeVar("T")
RETRY_POLICY = "once, showing the parse error"
"""What an LLM judge does with an unparseable reply (the instrument's ``judge_retry``)."""
RETRIED_COLUMN = "judge_retried"
"""The row column that marks a label read from the retry's reply."""


def reask(request: ChatRequest, reply: str, error: str) -> ChatRequest:
    """``request`` continued with the unparseable ``reply`` and a turn naming ``error``."""
    note = (f"Your reply could not be read: {error}. Reply again in exactly the format the instructions ask for, "
            "and nothing else.")
    messages = (*request.messages, {"role": "assistant", "content": reply}, {"role": "user", "content": note})
    return ChatRequest(request.model, messages, request.params)


async def ask_parsed(llm: LLMService, endpoint: Endpoint, request: ChatRequest, repeat: int,
                     parse: Callable[[str], T]) -> tuple[T, bool, int, bool]:
    """(parsed reply, cached, tokens, retried) of one judge call under :data:`RETRY_POLICY`.

    parse: raises ValueError (:class:`memrun.errors.JudgeReplyUnparseable`) for a reply it cannot read; the
    request is then asked again once with the error shown (:func:`reask`). A reply still
    unparseable raises that second ValueError, and both replies are dropped from the call
    cache (a re-run asks again). Raises CallError / BudgetExhausted for a failed call.
    """
    outcome = await llm.call(endpoint, request, repeat)
    tokens = _tokens(outcome.result)
    try:
        return parse(outcome.result.text), outcome.cached, tokens, False
    except ValueError as exc:
        again = reask(request, outcome.result.text, str(exc))
    second = await llm.call(endpoint, again, repeat)
    tokens += _tokens(second.result)
    try:
        return parse(second.result.text), outcome.cached and second.cached, tokens, True
    except ValueError:
        llm.forget(endpoint, request, repeat)
        llm.forget(endpoint, again, repeat)
        raise


def _tokens(result: Any) -> int:
    return (result.prompt_tokens or 0) + (result.completion_tokens or 0)
