"""Plan a run's calls and cost without making them (``memrun plan``).

A plan reads the run's spec (:func:`memrun.config.build_spec.build_spec`) as a run does, loads the data, runs the retrieval (cheap and
local) and builds every reader and judge request exactly as the run would
(:func:`memrun.accuracy.stage.reader_request`, :func:`memrun.accuracy.stage.judge_case`),
then looks each one up in the call cache. No reader or judge request is sent; the
retrieval is the run's own (an arm that embeds through an API or asks a memory server
does so, as in the run).

A judge request depends on the reader's answer: when the reader call is cached, the
cached answer is graded (so the judge request is exact); when it is not, the judge call
is counted as needed and its size estimated with an answer as long as the cached ones
(else ``reader.max_tokens`` tokens).

Token estimates per endpoint: the prompt tokens and completion tokens the provider
reported for this plan's cached calls give the endpoint's characters per token and mean
completion; without any, characters / ``chars_per_token`` (``reader.chars_per_token``,
or ``--chars-per-token``) and ``max_tokens`` per completion (an upper bound). Either way
the figures are estimates, and say which.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memrun.arms import describe
from memrun.core.instrument import Instrument
from memrun.errors import ConfigError
from memrun.judges import judge_hooks
from memrun.lazy import lazy
from memrun.llm.endpoint import without_keys
from memrun.pipeline.many_histories import iter_retrieved
from memrun.pipeline.outer_stages import Loaded, build_instrument, build_parts, load
from memrun.pipeline.spec import PluginNodes, RunSpec

if TYPE_CHECKING:
    from memrun.accuracy import stage as accuracy_stage
    from memrun.llm import cache as llm_cache
    from memrun.llm.client import ChatRequest
else:
    accuracy_stage = lazy("memrun.accuracy.stage")
    llm_cache = lazy("memrun.llm.cache")


@dataclass
class EndpointPlan:
    """The calls one endpoint (a role's model at a URL) gets in a run, and what they cost."""

    role: str  # reader | judge | judge2
    model: str
    url: str
    fake: bool
    max_tokens: int
    calls: int = 0  # item x repeat calls the run asks for
    cached: int = 0  # answered by the cache
    repeated: int = 0  # asked twice in one run (the second one is then a cache hit)
    needed: int = 0  # calls the run will send
    needed_prompt_chars: int = 0
    reported_prompt_chars: int = 0  # cached calls with reported usage: their prompts' characters
    reported_prompt_tokens: int = 0
    reported_completion_tokens: int = 0
    reported_calls: int = 0
    unknown_answers: int = 0  # needed judge calls whose answer the reader has not given yet
    prompt_tokens: int = 0  # estimated for the needed calls (filled by finish())
    completion_tokens: int = 0
    estimate: str = ""
    cost_usd: float | None = None
    price: dict[str, Any] | None = None

    def finish(self, chars_per_token: float, answer_chars: float, prices: Mapping[str, Any]) -> None:
        """Estimate the needed calls' tokens and cost (see the module docstring)."""
        chars = self.needed_prompt_chars + self.unknown_answers * answer_chars
        if self.reported_calls and self.reported_prompt_tokens:
            ratio = self.reported_prompt_chars / self.reported_prompt_tokens
            completion = self.reported_completion_tokens / self.reported_calls
            self.estimate = (f"estimate from the reported usage of {self.reported_calls} cached call(s): "
                             f"{ratio:.2f} chars/token, {completion:.0f} completion tokens per call")
        else:
            ratio, completion = chars_per_token, float(self.max_tokens)
            self.estimate = (f"estimate: characters / {chars_per_token:g} chars_per_token; completion "
                             f"max_tokens={self.max_tokens} per call (an upper bound)")
        self.prompt_tokens = round(chars / ratio) if self.needed else 0
        self.completion_tokens = round(self.needed * completion)
        if self.fake:
            self.cost_usd = 0.0
            self.estimate += "; a fake provider costs nothing"
            return
        price = prices.get(self.model)
        if price is not None:
            self.price = dict(price)
            self.cost_usd = (self.prompt_tokens * float(price["input"])
                             + self.completion_tokens * float(price["output"])) / 1e6

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the reported-usage working figures left out)."""
        keep = ("role", "model", "url", "fake", "calls", "cached", "repeated", "needed", "prompt_tokens",
                "completion_tokens", "estimate", "cost_usd", "price")
        return {k: getattr(self, k) for k in keep}


@dataclass
class Plan:
    """What a run will do and cost (see the module docstring)."""

    benchmark: str
    arm: str
    axis: str
    items: int
    repeats: int
    retrieval_errors: int = 0
    endpoints: list[EndpointPlan] = field(default_factory=list)
    comparability: dict[str, Any] = field(default_factory=dict)
    fake_providers: bool = False
    prices: dict[str, Any] = field(default_factory=dict)  # file, checked
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready plan with totals over the endpoints."""
        eps = [e.to_dict() for e in self.endpoints]
        costs = [e["cost_usd"] for e in eps]
        totals = {k: sum(e[k] for e in eps) for k in ("calls", "cached", "needed", "prompt_tokens", "completion_tokens")}
        totals["cost_usd"] = sum(c for c in costs if c is not None)
        totals["cost_complete"] = all(c is not None for c in costs)
        return {
            "benchmark": self.benchmark, "arm": self.arm, "axis": self.axis, "items": self.items,
            "repeats": self.repeats, "item_repeats": self.items * self.repeats,
            "retrieval_errors": self.retrieval_errors, "endpoints": eps, "totals": totals,
            "fake_providers": self.fake_providers, "prices": self.prices,
            "comparability": self.comparability, "warnings": self.warnings, "network_calls": 0,
        }


def comparability(spec: RunSpec, loaded: Loaded, arm_fields: Mapping[str, Any],
                  setup_fields: Mapping[str, Any] | None) -> dict[str, Any]:
    """The comparability fields of the instrument the run will write (:func:`memrun.pipeline.outer_stages.build_instrument`)."""
    inst = build_instrument(spec, loaded, dict(arm_fields), dict(setup_fields or {}))
    return {name: getattr(inst, name) for name in Instrument.comparability_fields()}



class _Endpoints:
    """The EndpointPlans of a run, by (role, endpoint)."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, Any], EndpointPlan] = {}
        self.seen: set[str] = set()

    def get(self, role: str, endpoint: Any, model: str, max_tokens: int) -> EndpointPlan:
        key = (role, endpoint)
        if key not in self.by_key:
            self.by_key[key] = EndpointPlan(role, model, endpoint.public_url, endpoint.fake, max_tokens)
        return self.by_key[key]

    def count(self, plan: EndpointPlan, key: str, request: Any, found: Mapping[str, Any]) -> Any:
        """Count one call; returns its cached reply or None."""
        chars = sum(len(str(m.get("content", ""))) for m in request.messages)
        plan.calls += 1
        hit = found.get(key)
        if hit is not None:
            plan.cached += 1
            if hit.prompt_tokens:
                plan.reported_calls += 1
                plan.reported_prompt_chars += chars
                plan.reported_prompt_tokens += hit.prompt_tokens
                plan.reported_completion_tokens += hit.completion_tokens or 0
            return hit
        if key in self.seen:
            plan.repeated += 1
        else:
            self.seen.add(key)
            plan.needed += 1
            plan.needed_prompt_chars += chars
        return None


def _judges(setup: Any) -> list[tuple[str, Any]]:
    """(role, judge) for the judges that call an LLM (lexical judges make no call)."""
    out = []
    for role, judge in (("judge", setup.judge), ("judge2", setup.judge2)):
        if judge is None or judge.describe().get("endpoint") is None:
            continue
        hooks = judge_hooks(judge)
        if hooks.requests is None and hooks.request is None:
            raise ConfigError(f"{role}: {type(judge).__name__} calls an LLM but has neither a requests(case) nor a "
                              "request(case) method; memrun plan cannot build its requests")
        out.append((role, judge))
    return out


def judge_requests(judge: Any, case: Any) -> list[Any]:
    """The chat requests ``judge`` sends for ``case`` that are known before it answers:
    ``judge.requests(case)`` (a judge that asks several calls, such as the rubric judge's one
    per rubric item), else the one of ``judge.request(case)``."""
    hooks = judge_hooks(judge)
    if hooks.requests is not None:
        return list(hooks.requests(case))
    return [hooks.request(case)[1]]


def _plan_group(setup: Any, retrieved: Iterable[Any], records: Mapping[str, Any], categories: Mapping[str, str],
                substring_gold: bool, wants_judge2: Any, eps: _Endpoints, answers: list[int]) -> int:
    """Count one group's calls; returns its retrieval errors."""
    reader, cache, repeats = setup.reader, setup.llm.cache, setup.repeats
    judges = _judges(setup)
    abstention = judge_hooks(setup.judge).abstention_categories
    errors = 0
    todo: list[tuple[Any, ChatRequest | None]] = []  # (retrieved, the reader's request; None: the arm answers)
    for r in retrieved:
        if r.error is not None:
            errors += 1
            continue
        prepared = accuracy_stage.reader_request(reader, r, records)
        request = None if prepared is None else prepared.request
        if reader is not None and request is None:
            continue  # skipped as context_overflow: an error row, no call
        todo.append((r, request))
    reader_keys: dict[tuple[int, int], str] = {}
    if reader is not None:
        url = reader.endpoint.identity
        reader_keys = {(i, rep): llm_cache.call_key(url, request, rep) for i, (_, request) in enumerate(todo)
                       if request is not None for rep in range(repeats)}
    found = cache.get_many(list(reader_keys.values())) if reader_keys else {}
    pending = []  # (judge role, judge, case, repeat, answer known)
    for i, (r, request) in enumerate(todo):
        label = categories.get(r.item.category, r.item.category)
        for rep in range(repeats):
            if reader is not None and request is not None:
                ep = eps.get("reader", reader.endpoint, reader.model, int(reader.params["max_tokens"]))
                hit = eps.count(ep, reader_keys[(i, rep)], request, found)
                answer = None if hit is None else hit.text.strip()
                if answer is not None:
                    answers.append(len(answer))
            else:
                answer = r.arm_answer
                if answer is None:
                    continue  # an error row: the arm has no answer
            case = accuracy_stage.judge_case(r.item, str(label), answer or "", substring_gold, abstention)
            for role, judge in judges:
                if role == "judge2" and not wants_judge2(r.item.item_id):
                    continue
                pending.append((role, judge, case, rep, answer is not None))
    keyed = []
    for role, judge, case, rep, known in pending:
        for request in judge_requests(judge, case):
            key = llm_cache.call_key(judge.endpoint.identity, request, rep)
            keyed.append((role, judge, request, rep, known, key))
    found = cache.get_many([key for *_, known, key in keyed if known]) if keyed else {}
    for role, judge, request, _rep, known, key in keyed:
        ep = eps.get(role, judge.endpoint, judge.model, int(judge.params["max_tokens"]))
        if not known:  # the answer is not known yet: a call of its own, never in the cache
            key = f"unanswered-{len(eps.seen)}"
        eps.count(ep, key, request, found)
        if not known:
            ep.unknown_answers += 1
    return errors


def _judge2_chooser(setup: Any, dataset: Any) -> Any:
    """item id -> whether the second judge grades it (as the answer stage chooses)."""
    chosen = setup.judge2_items(dataset)
    first: set[str] = set()

    def wanted(item_id: str) -> bool:
        if setup.judge2_sample is None:
            return True
        if chosen is not None:
            return item_id in chosen
        if item_id not in first and len(first) < setup.judge2_sample:
            first.add(item_id)
        return item_id in first
    return wanted


def make_plan(spec: RunSpec, nodes: PluginNodes, prices: Mapping[str, Any], price_info: Mapping[str, Any],
              chars_per_token: float | None = None) -> Plan:
    """Plan the run ``spec`` describes, its plugins built from ``nodes`` (the pair
    :func:`memrun.config.build_spec.build_spec` returns; see the module docstring). Raises
    MemrunError subclasses for the same data and arm problems a run stops on; an API key
    that is not set is noted in the plan's warnings instead (no call is made)."""
    with without_keys() as missing_keys:
        parts = build_parts(spec, nodes)
    arm, setup = parts.arm, parts.setup
    try:
        loaded = load(spec, parts.benchmark)
        dataset = loaded.dataset
        arm_fields = describe(arm)
        plan = Plan(spec.benchmark, spec.arm, spec.axis, 0, spec.repeats, prices=dict(price_info))
        eps = _Endpoints()
        answers: list[int] = []  # the cached answers' lengths (characters)
        if setup is None:
            plan.items = dataset.n_items if dataset.n_items is not None else sum(len(g.items) for g in dataset.groups)
        else:
            wants_judge2 = _judge2_chooser(setup, dataset)
            substring = dataset.gold_match == "substring"
            for group, retrieved in iter_retrieved(arm, dataset.groups, spec.top_k, dataset.gold_match, spec.flow):
                records = {r.key: r for r in group.records}
                plan.items += len(retrieved)
                plan.retrieval_errors += _plan_group(setup, retrieved, records, dataset.categories, substring,
                                                     wants_judge2, eps, answers)
            plan.warnings = list(setup.warnings)
            plan.warnings += [f"{role}: {note}" for role, judge in _judges(setup)
                              if (note := judge_hooks(judge).plan_note)]
        plan.warnings += list(dataset.warnings) + missing_keys
        cpt = chars_per_token or (setup.reader.chars_per_token if setup and setup.reader else 4.0)
        reader_tokens = setup.reader.params["max_tokens"] if setup and setup.reader else 256
        answer_chars = sum(answers) / len(answers) if answers else reader_tokens * cpt
        for ep in eps.by_key.values():
            ep.finish(cpt, answer_chars, prices)
        plan.endpoints = list(eps.by_key.values())
        plan.comparability = comparability(spec, loaded, arm_fields, setup.instrument if setup else None)
        plan.fake_providers = bool((setup and setup.instrument.get("fake_providers")) or arm_fields.get("fake_providers"))
        return plan
    finally:
        arm.close()
        if setup is not None:
            asyncio.run(setup.llm.aclose())  # no call was made: closes the clients it built and the cache
