"""From the run's spec to the accuracy axis's parts: reader, judges, LLM service.

Everything here runs before any item: a missing API key, an unknown prompt, a judge that
cannot be built is a one-line ConfigError (the settings themselves were checked by
:func:`memrun.config.build_spec.build_spec`). Pins: the reader model and prompt (and the judge)
default to what the benchmark's published numbers used (``reader.pins``); overriding one
adds a comparability warning, printed before the run and kept in the instrument.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memrun.arms.contract import arm_hooks
from memrun.core.cache_files import network_warning
from memrun.core.http_policy import HttpPolicy
from memrun.core.instrument import (
    DENOMINATOR_ABSTAIN_WRONG,
    DENOMINATOR_BEAM_OFFICIAL,
    DENOMINATOR_EXCLUDE_ABSTAIN,
    DENOMINATOR_MEAN_SCORE,
)
from memrun.core.paths import configured_or_cache
from memrun.core.redaction import Redactor
from memrun.errors import ConfigError
from memrun.judges import Judge, build_judge, judge_hooks
from memrun.llm.cache import CallCache
from memrun.llm.endpoint import Endpoint, resolve_endpoint
from memrun.llm.prompts import load_prompt
from memrun.llm.reader import READER_FIELDS, Reader
from memrun.llm.service import LLMService
from memrun.metrics.beam_official import OFFICIAL_SCORE
from memrun.records import Dataset

if TYPE_CHECKING:
    from memrun.pipeline.spec import AccuracySpec, LLMCallSpec, ReaderSpec, RunSpec

# config ``denominator`` (the summary's ratio) -> the instrument's denominator (what compare reads)
DENOMINATORS = {"accuracy_abstain_wrong": DENOMINATOR_ABSTAIN_WRONG, "accuracy": DENOMINATOR_EXCLUDE_ABSTAIN,
                "mean_judge_score": DENOMINATOR_MEAN_SCORE, OFFICIAL_SCORE: DENOMINATOR_BEAM_OFFICIAL}
FRACTIONAL_HEADLINE = "mean_judge_score"  # a judge whose scores are fractions (``fractional = True``)


@dataclass
class AccuracySetup:
    """The parts of an accuracy run (see :func:`build_setup`)."""

    llm: LLMService
    reader: Reader | None  # None: the arm answers itself (answer_for)
    judge: Judge
    judge2: Judge | None
    repeats: int
    headline: str  # the summary ratio verdicts read: accuracy_abstain_wrong | accuracy
    judge2_sample: int | None  # items re-graded by judge2 (None: all)
    seed: int
    lexical_scores: bool
    stale_check: bool
    redactor: Redactor
    instrument: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def served_models(self, kept: Mapping[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
        """Role (reader, judge, judge2) -> the model name its server reported in the replies
        this run read (made or cached); roles whose server reported none are left out.

        kept: what the earlier run whose rows this run resumed recorded (its instrument's
        ``served_models``): a role this run made no call for keeps it. Where the two differ
        (a local server that loaded another model in between), both are recorded, the kept
        rows' first, and the second value is a warning line saying the run mixes them."""
        asked: dict[str, tuple[Endpoint, str]] = {"reader": (self.reader.endpoint, self.reader.model)} \
            if self.reader else {}
        for role, judge in (("judge", self.judge), ("judge2", self.judge2)):
            described = judge.describe() if judge is not None else {}
            if described.get("endpoint") is not None:
                asked[role] = (described["endpoint"], str(described["judge_model"]))
        reported = {role: self.llm.reported.get((e.identity, model)) for role, (e, model) in asked.items()}
        served = {**(kept or {}), **{role: name for role, name in reported.items() if name}}
        lines = []
        for role, before in (kept or {}).items():
            if served[role] != before:
                lines.append(f"the {role}'s server answered as {before} in the rows resumed from an earlier run "
                             f"and as {served[role]} in this run's: the run mixes two models (resume=false starts over)")
                served[role] = f"{before} (resumed rows), {served[role]}"
        return served, lines

    def judge2_items(self, dataset: Dataset) -> frozenset[str] | None:
        """A seeded sample of ``judge2_sample`` item ids for the second judge; None when
        every item is re-graded or the dataset's lazy groups have no index (the stage then
        takes the first ``judge2_sample`` items it sees)."""
        if self.judge2 is None or self.judge2_sample is None:
            return None
        index = dataset.item_index()
        if index is None:
            return None
        ids = [item_id for item_id, _ in index]
        return frozenset(random.Random(self.seed).sample(ids, min(self.judge2_sample, len(ids))))


def build_reader(spec: ReaderSpec, llm: LLMService | None, endpoint: Endpoint | None = None) -> Reader:
    """The reader ``spec`` describes (:func:`memrun.config.build_spec.reader_spec` checked it).

    endpoint: None resolves it from the spec and the environment (a run); ``memrun view``
    passes the run's recorded one, as it only rebuilds requests and needs no key.
    Raises ConfigError for a missing API key or an unknown prompt."""
    endpoint = endpoint or resolve_endpoint(
        "reader", model=spec.model, base_url=spec.base_url, base_url_env=spec.base_url_env,
        api_key_env=spec.api_key_env, provider=spec.provider,
    )
    prompt = load_prompt("memrun.llm", spec.prompt, "reader.prompt", READER_FIELDS)
    return Reader(
        llm, endpoint, model=spec.model, prompt=prompt, temperature=spec.temperature, max_tokens=spec.max_tokens,
        max_context_tokens=spec.max_context_tokens, overflow=spec.overflow, chars_per_token=spec.chars_per_token,
    )


def whole_history(reader: Reader, arm: Any, warnings: list[str]) -> None:
    """An arm that hands the reader the whole history (``search_mode`` ``full_context``) is
    never cut to fit the reader's context behind its back: over ``reader.max_context_tokens``
    an item is a ``context_overflow`` error that says so (``overflow: skip``), and the run
    warns once. Cutting on purpose is the arm's own policy (``arm.max_chars``, ``arm.keep``)."""
    describe = arm_hooks(arm).describe
    mode = (describe() if describe is not None else {}).get("search_mode")
    if mode != "full_context":
        return
    # Said where memrun's estimate refuses a history and where the server refuses it
    # (reader.max_context_tokens null: the model's own window is the limit).
    reader.overflow_hint = (" (the whole history: arm=full_context is not cut to fit; "
                            "set arm.max_chars and arm.keep to truncate on purpose)")
    if reader.max_context_tokens is not None and reader.overflow != "skip":
        reader.overflow = "skip"
        warnings.append(f"arm=full_context with reader.max_context_tokens={reader.max_context_tokens}: a history "
                        "over the limit makes its items errors (context_overflow), not a silently cut context "
                        "(reader.overflow=skip); arm.max_chars and arm.keep truncate on purpose")


def build_setup(spec: RunSpec, arm: Any) -> AccuracySetup:
    """Build reader, judges and the LLM service of the axis=accuracy run ``spec``
    (``spec.answering``, checked by :func:`memrun.config.build_spec.build_spec`). Raises ConfigError
    for a missing API key, an unknown prompt or a judge that cannot be built.

    An arm with a callable ``answer_for(item) -> str | None`` answers itself: no reader
    is built and the instrument's reader_model is ``arm:<arm name>``.
    """
    acc = spec.answering
    assert acc is not None, "build_setup is for axis=accuracy"
    llm = build_llm(acc.calls)
    warnings: list[str] = []
    if llm.cache is not None and (shared := network_warning(llm.cache.path.parent, "cache_dir")):
        warnings.append(shared)
    reader = None
    if arm_hooks(arm).answer_for is None:
        reader_spec = needs_reader(acc)
        reader = build_reader(reader_spec, llm)
        warnings += reader_spec.warnings
        whole_history(reader, arm, warnings)
    judge = build_judge(acc.judge.node, acc.judge.role, llm)
    judge2 = build_judge(acc.judge2.node, acc.judge2.role, llm) if acc.judge2 else None
    if acc.judge_warning:
        warnings.append(acc.judge_warning)
    headline = acc.denominator
    if judge_hooks(judge).fractional and headline != OFFICIAL_SCORE:  # a rubric's mean: the mean over items of their mean over repeats
        headline = FRACTIONAL_HEADLINE
    return AccuracySetup(
        llm=llm, reader=reader, judge=judge, judge2=judge2, repeats=spec.repeats, headline=headline,
        judge2_sample=acc.judge2_sample, seed=spec.seed, lexical_scores=acc.lexical_scores,
        stale_check=spec.stale_check, redactor=llm.redactor,
        instrument=setup_instrument(spec.arm, llm, reader, judge, judge2, headline), warnings=warnings,
    )


def build_llm(calls: LLMCallSpec, token_budget: bool = True) -> LLMService:
    """The LLM service ``calls`` describes, on its call cache (``cache_dir``, else the user
    cache). ``token_budget`` False leaves ``max_tokens_total`` out (``memrun calibrate-judge``)."""
    return LLMService(
        CallCache(configured_or_cache(calls.cache_dir, "llm")), concurrency=calls.concurrency,
        policy=HttpPolicy(attempts=calls.http_attempts), timeout=calls.request_timeout_s,
        max_tokens_total=calls.max_tokens_total if token_budget else None,
    )


def needs_reader(acc: AccuracySpec) -> ReaderSpec:
    """``acc.reader``; ConfigError when the spec left it out (its arm class answers itself) but
    the built arm does not."""
    if acc.reader is None:
        raise ConfigError("reader: the arm's class has answer_for but the built arm has none; "
                          "give the arm answer_for as a method, or set reader.model and reader.prompt")
    return acc.reader


def setup_instrument(arm_name: str, llm: LLMService, reader: Reader | None, judge: Judge, judge2: Judge | None,
                     headline: str) -> dict[str, Any]:
    """The accuracy axis's instrument fields: the reader's and judges' models, prompts and
    endpoints, the denominator. Opens the LLM service on the endpoints (registering their
    keys with the redactor)."""
    described = [judge.describe()] + ([judge2.describe()] if judge2 else [])
    endpoint_of = {"reader": reader.endpoint} if reader else {}  # role -> endpoint (LLM judges only)
    endpoint_of.update({role: d["endpoint"] for role, d in zip(("judge", "judge2"), described)
                        if d.get("endpoint") is not None})
    endpoints = list(endpoint_of.values())
    llm.open(endpoints)  # registers the keys with the redactor; the clients build meanwhile
    return {
        "reader_model": reader.model if reader else f"arm:{arm_name}",
        "reader_prompt_sha256": reader.prompt.sha256 if reader else None,
        "judge_model": described[0]["judge_model"],
        "judge_prompt_sha256": described[0]["judge_prompt_sha256"],
        "judge_retry": described[0].get("judge_retry"),  # an LLM judge's policy for unparseable replies
        "denominator": DENOMINATORS[headline],
        "fake_providers": any(e.fake for e in endpoints),
        "context_policy": reader.context_policy if reader else None,
        "judge2_model": described[1]["judge_model"] if judge2 else None,
        "judge2_prompt_sha256": described[1]["judge_prompt_sha256"] if judge2 else None,
        # where the calls went (no credentials): the same model name elsewhere may be another model
        "llm_endpoints": {role: e.identity for role, e in endpoint_of.items()},
    }
