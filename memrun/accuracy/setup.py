"""From the composed config to the accuracy axis's parts: reader, judges, LLM service.

Everything here runs before any item: a missing API key, a literal key in the config,
an unknown prompt, a bad judge or reader setting is a one-line ConfigError. Pins: the
reader model and prompt (and the judge) default to what the benchmark's published
numbers used (``reader.pins``); overriding one adds a comparability warning, printed
before the run and kept in the instrument.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from memrun.errors import ConfigError
from memrun.instrument import DENOMINATOR_ABSTAIN_WRONG, DENOMINATOR_EXCLUDE_ABSTAIN, DENOMINATOR_MEAN_SCORE
from memrun.http_policy import HttpPolicy
from memrun.judges import Judge, build_judge
from memrun.llm.cache import CallCache
from memrun.llm.endpoint import Endpoint, resolve_endpoint
from memrun.redaction import Redactor
from memrun.llm.prompts import load_prompt
from memrun.llm.reader import OVERFLOW_POLICIES, READER_FIELDS, Reader
from memrun.llm.service import LLMService
from memrun.paths import configured_or_cache
from memrun.records import Dataset

JUDGES = "gpt41, gpt4o, claude, beam_rubric, exact, substring, f1"
# config ``denominator`` (the summary's ratio) -> the instrument's denominator (what compare reads)
DENOMINATORS = {"accuracy_abstain_wrong": DENOMINATOR_ABSTAIN_WRONG, "accuracy": DENOMINATOR_EXCLUDE_ABSTAIN,
                "mean_judge_score": DENOMINATOR_MEAN_SCORE}
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


def build_reader(cfg: Any, llm: LLMService | None, benchmark: str, warnings: list[str],
                 endpoint: Endpoint | None = None) -> Reader:
    """The reader ``cfg.reader`` describes (its pin for ``benchmark`` applied; warnings appended).

    endpoint: None resolves it from the config and environment (a run); ``memrun view``
    passes the run's recorded one, as it only rebuilds requests and needs no key.
    Raises ConfigError."""
    node = cfg.reader
    pin = node.pins.get(benchmark) if node.pins else None
    model = node.model or (pin.model if pin else None)
    prompt_name = node.prompt or (pin.prompt if pin else None)
    if not model or not prompt_name:
        raise ConfigError(
            f"reader: benchmark {benchmark} pins no reader; set reader.model=... and reader.prompt=default "
            "(or add a pin under reader.pins)"
        )
    if pin is not None:
        for key, chosen, pinned in (("model", model, pin.model), ("prompt", prompt_name, pin.prompt)):
            if chosen != pinned:
                warnings.append(
                    f"reader.{key}={chosen} overrides {benchmark}'s pinned {pinned}: "
                    "accuracy does not compare with runs or papers that used the pin"
                )
    if node.overflow not in OVERFLOW_POLICIES:
        raise ConfigError(f"reader.overflow={node.overflow}: choose one of {', '.join(OVERFLOW_POLICIES)}")
    if node.max_context_tokens is not None and node.max_context_tokens < 1:
        raise ConfigError("reader.max_context_tokens must be a positive number of tokens, or null")
    if node.chars_per_token <= 0:
        raise ConfigError("reader.chars_per_token must be positive")
    endpoint = endpoint or resolve_endpoint(
        "reader", model=model, base_url=node.base_url, base_url_env=node.base_url_env,
        api_key_env=node.api_key_env, provider=node.provider,
    )
    prompt = load_prompt("memrun.llm", prompt_name, "reader.prompt", READER_FIELDS)
    return Reader(
        llm, endpoint, model=model, prompt=prompt, temperature=node.temperature, max_tokens=node.max_tokens,
        max_context_tokens=node.max_context_tokens, overflow=node.overflow, chars_per_token=node.chars_per_token,
    )


def whole_history(reader: Reader, arm: Any, warnings: list[str]) -> None:
    """An arm that hands the reader the whole history (``search_mode`` ``full_context``) is
    never cut to fit the reader's context behind its back: over ``reader.max_context_tokens``
    an item is a ``context_overflow`` error that says so (``overflow: skip``), and the run
    warns once. Cutting on purpose is the arm's own policy (``arm.max_chars``, ``arm.keep``)."""
    describe = getattr(arm, "describe", None)
    mode = (describe() if callable(describe) else {}).get("search_mode")
    if mode != "full_context" or reader.max_context_tokens is None:
        return
    reader.overflow_hint = (" (the whole history: arm=full_context is not cut to fit; "
                            "set arm.max_chars and arm.keep to truncate on purpose)")
    if reader.overflow != "skip":
        reader.overflow = "skip"
        warnings.append(f"arm=full_context with reader.max_context_tokens={reader.max_context_tokens}: a history "
                        "over the limit makes its items errors (context_overflow), not a silently cut context "
                        "(reader.overflow=skip); arm.max_chars and arm.keep truncate on purpose")


def build_setup(cfg: Any, arm: Any) -> AccuracySetup:
    """Build reader, judges and the LLM service for ``cfg`` (axis=accuracy). Raises ConfigError.

    An arm with a callable ``answer_for(item) -> str | None`` answers itself: no reader
    is built and the instrument's reader_model is ``arm:<arm name>``.
    """
    benchmark = str(cfg.benchmark.name)
    if int(cfg.repeats) < 1:
        raise ConfigError(f"repeats={cfg.repeats}: must be at least 1")
    if int(cfg.concurrency) < 1:
        raise ConfigError(f"concurrency={cfg.concurrency}: must be at least 1")
    if cfg.max_tokens_total is not None and int(cfg.max_tokens_total) < 1:
        raise ConfigError("max_tokens_total must be a positive number of tokens, or null")
    if cfg.judge2_sample is not None and int(cfg.judge2_sample) < 1:
        raise ConfigError(f"judge2_sample={cfg.judge2_sample}: must be at least 1, or null for every item")
    if int(cfg.http_attempts) < 1:
        raise ConfigError(f"http_attempts={cfg.http_attempts}: must be at least 1")
    if not float(cfg.request_timeout_s) > 0:
        raise ConfigError(f"request_timeout_s={cfg.request_timeout_s}: must be a positive number of seconds")
    if cfg.judge.name == "none":
        pin = cfg.reader.pins.get(benchmark) if cfg.reader.pins else None
        hint = f"judge={pin.judge} (pinned for {benchmark})" if pin is not None and pin.judge else "judge=gpt41"
        raise ConfigError(f"axis=accuracy needs a judge; add {hint}, or choose one of {JUDGES}")

    cache = CallCache(configured_or_cache(cfg.cache_dir, "llm"))
    llm = LLMService(
        cache,
        concurrency=int(cfg.concurrency),
        policy=HttpPolicy(attempts=int(cfg.http_attempts)),
        timeout=float(cfg.request_timeout_s),
        max_tokens_total=cfg.max_tokens_total,
    )
    warnings: list[str] = []
    from memrun.cache_files import network_warning

    if shared := network_warning(cache.path.parent, "cache_dir"):
        warnings.append(shared)
    arm_answers = callable(getattr(arm, "answer_for", None))
    reader = None if arm_answers else build_reader(cfg, llm, benchmark, warnings)
    if reader is not None:
        whole_history(reader, arm, warnings)
    judge = build_judge(cfg.judge, "judge", llm)
    judge2 = build_judge(cfg.judge2, "judge2", llm) if cfg.judge2.name != "none" else None
    pin = cfg.reader.pins.get(benchmark) if cfg.reader.pins else None
    if pin is not None and pin.judge and cfg.judge.name != pin.judge:
        warnings.append(
            f"judge={cfg.judge.name} is not {benchmark}'s pinned judge ({pin.judge}): "
            "labels do not compare with runs or papers that used the pin"
        )

    headline = cfg.denominator.value if hasattr(cfg.denominator, "value") else str(cfg.denominator)
    if getattr(judge, "fractional", False):  # a rubric's mean: the mean over items of their mean over repeats
        headline = FRACTIONAL_HEADLINE
    redactor = llm.redactor
    described = [judge.describe()] + ([judge2.describe()] if judge2 else [])
    endpoint_of = {"reader": reader.endpoint} if reader else {}  # role -> endpoint (LLM judges only)
    endpoint_of.update({role: d["endpoint"] for role, d in zip(("judge", "judge2"), described)
                        if d.get("endpoint") is not None})
    endpoints = list(endpoint_of.values())
    llm.open(endpoints)  # registers the keys with the redactor; the clients build meanwhile
    fake = any(e.fake for e in endpoints)
    instrument = {
        "reader_model": reader.model if reader else f"arm:{cfg.arm.name}",
        "reader_prompt_sha256": reader.prompt.sha256 if reader else None,
        "judge_model": described[0]["judge_model"],
        "judge_prompt_sha256": described[0]["judge_prompt_sha256"],
        "denominator": DENOMINATORS[headline],
        "fake_providers": fake,
        "context_policy": reader.context_policy if reader else None,
        "judge2_model": described[1]["judge_model"] if judge2 else None,
        "judge2_prompt_sha256": described[1]["judge_prompt_sha256"] if judge2 else None,
        # where the calls went (no credentials): the same model name elsewhere may be another model
        "llm_endpoints": {role: e.public_url for role, e in endpoint_of.items()},
    }
    return AccuracySetup(
        llm=llm, reader=reader, judge=judge, judge2=judge2, repeats=int(cfg.repeats), headline=headline,
        judge2_sample=None if cfg.judge2_sample is None else int(cfg.judge2_sample), seed=int(cfg.seed),
        lexical_scores=bool(cfg.lexical_scores), stale_check=bool(cfg.get("stale_check")), redactor=redactor, instrument=instrument, warnings=warnings,
    )
