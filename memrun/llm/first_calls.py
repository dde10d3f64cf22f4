"""An LLM endpoint watched over its first calls, until one succeeds.

Watched per endpoint and model (:class:`memrun.llm.service.LLMService` keeps one
:class:`FirstCalls` per pair): a judge's model the gateway does not serve is found even
when the reader's calls to the same gateway succeed.

A wrong base URL (a web page, a path without ``/v1``), a model the server does not serve,
or a server without chat completions fails every call of a run the same way: HTTP 404,
405 or 501 to each, or a reply that is not a chat completion. Each such call used to be
one item's error, so the run went on through every item at full speed, 100% errors, for
minutes. :class:`FirstCalls` stops it instead, as a refused key (401/403,
:class:`memrun.errors.AuthError`) and an endpoint where nothing answers
(:class:`memrun.errors.EndpointUnreachable`) already did: when the first
:data:`FIRST_CALLS` calls to an endpoint all failed the same way (the same kind and HTTP
status) and none has succeeded, the next such failure raises
:class:`memrun.errors.EndpointFailed`, one line naming the endpoint, the status and the fix.

Nothing changes once a call has succeeded, or once the failures differ (then they are the
items' own errors, counted beside the rate). A context overflow is the item's own (its
prompt's length), neither a success nor a failure here.
"""

from __future__ import annotations

from memrun.errors import CallError, EndpointFailed
from memrun.llm.endpoint import Endpoint

FIRST_CALLS = 8
"""Failures in a row, all alike and before any success, that stop the run. Enough that an
endpoint failing some calls (a server refusing 30% of prompts) is not stopped by chance
(0.3^8 < 1e-4), few enough that a run at 16 in flight stops with its first batch."""


class FirstCalls:
    """One endpoint's calls until the first success (see the module docstring).
    ``settled``: a call succeeded or the failures differed; nothing more is watched."""

    __slots__ = ("endpoint", "failures", "settled", "way")

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.settled = False
        self.way: tuple[str, int | None] | None = None  # (kind, status) of the first failure
        self.failures = 0

    def failed(self, error: CallError, model: str) -> None:
        """Note a call to ``model`` that failed with ``error``; raises EndpointFailed when it
        is the :data:`FIRST_CALLS`-th failure, all alike, before any success."""
        if self.settled or error.kind == "context_overflow":
            return
        way = (error.kind, error.status)
        if self.way is None:
            self.way = way
        elif way != self.way:
            self.settled = True  # failing in more than one way: the items' own errors
            return
        self.failures += 1
        if self.failures >= FIRST_CALLS:
            self.settled = True
            raise EndpointFailed(
                f"the first {self.failures} calls to {self.endpoint.public_url} all failed the same way ({error}) and "
                f"none has succeeded, so the run stops here (the rows so far are kept): {_fix(error, self.endpoint, model)}"
            )


def url_source(endpoint: Endpoint) -> str:
    """Where ``endpoint``'s base URL was set, for a fix (``$OPENAI_BASE_URL``, ``reader.base_url``)."""
    if endpoint.url_from in (None, "the default"):
        return "OpenAI's API, the default"
    return str(endpoint.url_from)


def _fix(error: CallError, endpoint: Endpoint, model: str) -> str:
    """What to check for a failure every call met."""
    where = f"the base URL ({url_source(endpoint)})"
    status = error.status
    if error.kind == "malformed":
        return f"what answers there is not an OpenAI-compatible chat API: check {where}, the API's root (e.g. .../v1)"
    if error.kind == "transport":
        return "every connection to it breaks: check the server and any proxy in between"
    if status == 404:
        return f"check {where}, the API's root (e.g. .../v1), and that the server serves the model {model!r}"
    if status in (405, 501):
        return f"that server does not take POST .../chat/completions: check {where}, the API's root (e.g. .../v1)"
    if status == 429:
        return "the server keeps refusing for rate or quota: check the account's quota, then run the command again"
    if status is not None and status >= 500:
        return "the server fails every call: check it (its logs), then run the same command again (the run resumes)"
    return f"the server refuses the requests themselves: check the model name ({model!r}) and the parameters it takes"
