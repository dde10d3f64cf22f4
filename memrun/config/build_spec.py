"""The composed Hydra config -> :class:`memrun.pipeline.spec.RunSpec`: every default applied and
every run-wide check made here, once, before any work (the only place a run reads its
settings off the raw config)."""

from __future__ import annotations

import inspect
from typing import Any

from hydra.errors import InstantiationException
from omegaconf import OmegaConf, open_dict

from memrun.arms.contract import class_answers
from memrun.benchmarks.selection import selection_from_config
from memrun.config import Axis, cutoffs
from memrun.config.compose import resolved, saved
from memrun.config.embedder_use import NO, REQUIRED, ignored_note, use_of
from memrun.config.values import check_llm_calls, check_sampling, check_settings
from memrun.core.plugins import locate_class
from memrun.core.redaction import check_no_secrets
from memrun.core.status import MAX_ERROR_SHARE
from memrun.errors import ConfigError
from memrun.jobs import shards
from memrun.metrics.beam_official import OFFICIAL_SCORE
from memrun.pipeline.many_histories import FlowSettings
from memrun.pipeline.spec import (
    ACCURACY,
    OVERFLOW_POLICIES,
    AccuracySpec,
    JudgeSpec,
    LLMCallSpec,
    PluginNodes,
    ReaderSpec,
    RunSpec,
    ShardSpec,
)

JUDGES = "gpt41, gpt4o, claude, beam_rubric, exact, substring, f1"


def arm_name(cfg: Any) -> str:
    """The arm's ``name`` (run folders, tables, the instrument and compare name the arm by it).
    Raises ConfigError when the arm's config has none (a user's arm file without ``name:``)."""
    arm = cfg.arm
    name = None if "name" not in arm or OmegaConf.is_missing(arm, "name") else arm.get("name")
    if name in (None, ""):
        raise ConfigError("arm: its config has no name; add 'name: <a short name>' to the arm's config file "
                          "(run folders, tables and memrun compare name the arm by it)")
    return str(name)


def reader_spec(node: Any, benchmark: str) -> ReaderSpec:
    """The reader config ``node`` describes for ``benchmark``: its pin (``reader.pins``) fills
    an unset model or prompt, and overriding a pin is a warning (the accuracy then does not
    compare with runs or papers that used it). Raises ConfigError for no model or prompt,
    max_tokens or temperature out of range (:func:`check_sampling`), an unknown overflow
    policy, a non-positive max_context_tokens or chars_per_token."""
    pin = node.pins.get(benchmark) if node.pins else None
    if node.api_key_env is None and not node.model and node.provider != "fake":
        # the pins name OpenAI's models; a keyless server of one's own serves its own
        raise ConfigError("reader.model: a keyless server (reader.api_key_env=null, reader=local) serves its own "
                          "models, not the pinned one; set reader.model=<the name your server serves>")
    model = node.model or (pin.model if pin else None)
    prompt = node.prompt or (pin.prompt if pin else None)
    if not model or not prompt:
        raise ConfigError(
            f"reader: benchmark {benchmark} pins no reader; set reader.model=... and reader.prompt=default "
            "(or add a pin under reader.pins)"
        )
    warnings = []
    if pin is not None:
        for key, chosen, pinned in (("model", model, pin.model), ("prompt", prompt, pin.prompt)):
            if chosen != pinned:
                warnings.append(
                    f"reader.{key}={chosen} overrides {benchmark}'s pinned {pinned}: "
                    "accuracy does not compare with runs or papers that used the pin"
                )
    check_sampling("reader", node)
    if node.overflow not in OVERFLOW_POLICIES:
        raise ConfigError(f"reader.overflow={node.overflow}: choose one of {', '.join(OVERFLOW_POLICIES)}")
    if node.max_context_tokens is not None and node.max_context_tokens < 1:
        raise ConfigError("reader.max_context_tokens must be a positive number of tokens, or null")
    if node.chars_per_token <= 0:
        raise ConfigError("reader.chars_per_token must be positive")
    return ReaderSpec(
        model=str(model), prompt=str(prompt), base_url=node.base_url, base_url_env=node.base_url_env,
        api_key_env=node.api_key_env, provider=node.provider, temperature=node.temperature,
        max_tokens=node.max_tokens, max_context_tokens=node.max_context_tokens, overflow=node.overflow,
        chars_per_token=node.chars_per_token, warnings=tuple(warnings),
    )


def answers_itself(target: str) -> bool:
    """True when the arm class ``target`` answers items itself (``answer_for``): it needs no
    reader. A target that does not import is False here; building the arm says why."""
    try:
        return class_answers(locate_class(target))
    except (ImportError, InstantiationException, ValueError):
        return False


def embeds(target: str) -> str | None:
    """What the arm class ``target`` does with an ``embedder``: ``"required"`` (a parameter
    without a default: dense, hybrid), ``"accepts"`` (one with a default, or ``**kwargs``),
    ``"no"`` (no such parameter: :func:`memrun.config.embedder_use.use_of`); None when it does
    not import (building it says why)."""
    try:
        parameters = inspect.signature(locate_class(target)).parameters
    except (ImportError, InstantiationException, ValueError, TypeError):
        return None
    return use_of((p.name, p.default is not inspect.Parameter.empty, p.kind is inspect.Parameter.VAR_KEYWORD)
                  for p in parameters.values())


def check_embedder(cfg: Any) -> str | None:
    """The arm's ``embedder`` against what the arm does with one, before any work.

    An embedder composed into an arm that does not embed (the bm25 job of
    ``memrun -m arm=bm25,dense,hybrid arm/embedder=minilm``) is set to null, so that the run
    records what it used, and the returned warning says it was ignored. Returns None when
    there is nothing to say. Raises ConfigError when an arm that embeds has none
    (``arm=dense arm/embedder=null``).
    """
    unset = "embedder" in cfg.arm and OmegaConf.is_missing(cfg.arm, "embedder")  # ~arm/embedder on dense
    node, arm = None if unset else cfg.arm.get("embedder"), cfg.arm.get("name")
    uses = embeds(str(cfg.arm.get("_target_")))
    if uses == REQUIRED and node is None and "embedder" in cfg.arm:
        raise ConfigError(f"arm={arm} embeds its records and has no embedder: add arm/embedder=minilm "
                          "(on this machine, no key) or arm/embedder=openai")
    if uses != NO or node is None:
        return None
    with open_dict(cfg.arm):
        cfg.arm.embedder = None
    return ignored_note(arm)


def llm_call_spec(cfg: Any) -> LLMCallSpec:
    """How the LLM calls of ``cfg`` are made (:class:`memrun.pipeline.spec.LLMCallSpec`), checked
    before any work (:func:`memrun.config.values.check_llm_calls`). Raises ConfigError for a
    value out of range, naming the key."""
    check_llm_calls(cfg)
    return LLMCallSpec(
        concurrency=int(cfg.concurrency), http_attempts=int(cfg.http_attempts),
        request_timeout_s=float(cfg.request_timeout_s),
        max_tokens_total=None if cfg.max_tokens_total is None else int(cfg.max_tokens_total), cache_dir=cfg.cache_dir,
    )


def accuracy_spec(cfg: Any, benchmark: str) -> AccuracySpec:
    """The reader, judges and LLM-call settings of an axis=accuracy run ``cfg``
    (``benchmark=beam benchmark.preset=official``: the pin ``beam_official`` and the
    headline ``official_score``, :mod:`memrun.metrics.beam_official`)
    (:class:`memrun.pipeline.spec.AccuracySpec`). Raises ConfigError: a bad LLM setting
    (:func:`llm_call_spec`), ``judge=none`` (naming the benchmark's pinned judge), or
    a bad reader (:func:`reader_spec`; not built for an arm that answers itself)."""
    calls = llm_call_spec(cfg)
    preset = cfg.benchmark.get("preset")
    official = benchmark == "beam" and preset == "official"
    if official:  # the official reader prompt and scoring (docs/reproducing.md)
        benchmark = "beam_official"
    pin = cfg.reader.pins.get(benchmark) if cfg.reader.pins else None
    if cfg.judge.name == "none":
        hint = f"judge={pin.judge} (pinned for {benchmark})" if pin is not None and pin.judge else "judge=gpt41"
        raise ConfigError(f"axis=accuracy needs a judge; add {hint}, or choose one of {JUDGES}")
    reader = None if answers_itself(str(cfg.arm.get("_target_"))) else reader_spec(cfg.reader, benchmark)
    for role in ("judge", "judge2"):  # a judge whose model is ??? (judge=local, judge=claude): say so before any call
        node = cfg.get(role)
        if node is not None:
            check_sampling(role, node)
        if node is not None and "model" in node.keys() and OmegaConf.is_missing(node, "model"):
            raise ConfigError(f"{role}.model has no value: set {role}.model=<the model {role}={node.name} should "
                              "call> (a local server: the name it serves)")
    if cfg.judge2.name == "none" and cfg.judge2.get("model") is not None:  # no second judge ran, exit 0
        raise ConfigError(f"judge2.model={cfg.judge2.model}: judge2=none is no judge, so no answer would be "
                          f"re-graded; choose the second judge: judge2=gpt41 judge2.model={cfg.judge2.model} "
                          f"(or one of {JUDGES})")
    judge_warning = None
    if pin is not None and pin.judge and cfg.judge.name != pin.judge:
        judge_warning = (f"judge={cfg.judge.name} is not {benchmark}'s pinned judge ({pin.judge}): "
                         "labels do not compare with runs or papers that used the pin")
    denominator = cfg.denominator.value if hasattr(cfg.denominator, "value") else str(cfg.denominator)
    if official:
        denominator = OFFICIAL_SCORE
    return AccuracySpec(
        reader=reader, judge=JudgeSpec("judge", str(cfg.judge.name), cfg.judge),
        judge2=JudgeSpec("judge2", str(cfg.judge2.name), cfg.judge2) if cfg.judge2.name != "none" else None,
        calls=calls, judge2_sample=None if cfg.judge2_sample is None else int(cfg.judge2_sample),
        denominator=denominator, lexical_scores=bool(cfg.lexical_scores), judge_warning=judge_warning,
    )


def build_spec(cfg: Any, container: dict[str, Any] | None = None) -> tuple[RunSpec, PluginNodes]:
    """The run ``cfg`` describes, and the config nodes of its plugins. ``container``: ``cfg``
    resolved and checked for literal secrets already (a Hydra job did so before saving it:
    :func:`memrun.jobs.launch.job`), else None to resolve and check it here.

    Checks, in this order: the cut-offs ``ks`` (first: the arms' ``${memrun_top_k:}``
    reads them), literal secrets (:func:`memrun.core.redaction.check_no_secrets`, which also
    scrubs what Hydra wrote for the job), the run-wide settings (:func:`check_settings`),
    the selection (:func:`memrun.benchmarks.selection.selection_from_config`), the shard, and
    on the accuracy axis the reader, judges and LLM-call settings (:func:`accuracy_spec`).
    Raises ConfigError (LiteralSecretError for a key in the config) in one line.
    """
    axis = cfg.axis.value if isinstance(cfg.axis, Axis) else str(cfg.axis)
    accuracy = axis == ACCURACY
    ks = cutoffs(cfg)
    ignored_embedder = check_embedder(cfg)  # before the config is saved: it records the null
    container = check_no_secrets(resolved(cfg)) if container is None else container
    top_k = check_settings(cfg, accuracy)
    selection = selection_from_config(cfg.benchmark)
    shard_node = cfg.get("shard") or {}  # configs built by hand may leave it out: no sharding
    count, index = shards.check(shard_node.get("count", 1), shard_node.get("index", 0))
    judge = (cfg.get("judge") or {}).get("name")
    warnings = [ignored_embedder] if ignored_embedder else []
    if not accuracy and judge not in (None, "none"):
        warnings.append(f"judge={judge} is not used: axis=recall scores retrieval without a judge; "
                        "axis=accuracy runs the reader and the judge")
    answering = accuracy_spec(cfg, str(cfg.benchmark.name)) if accuracy else None
    if not accuracy and "concurrency" in cfg:  # composed from conf/ (a hand-made recall config may hold no LLM key)
        llm_call_spec(cfg)  # unused here, but a value no run could use (concurrency=0) is refused on either axis
    spec = RunSpec(
        axis=axis, benchmark=str(cfg.benchmark.name), arm=arm_name(cfg), arm_target=str(cfg.arm.get("_target_")),
        ks=tuple(ks), top_k=top_k, repeats=int(cfg.repeats), seed=int(cfg.seed), data_dir=cfg.get("data_dir"),
        selection=selection, shard=ShardSpec(count, index),
        min_coverage=float(cfg.get("min_coverage", 0.95)), max_error_share=cfg.get("max_error_share", MAX_ERROR_SHARE),
        stale_check=bool(cfg.get("stale_check")), judge=judge, progress=bool(cfg.get("progress", True)),
        flow=FlowSettings.from_config(cfg.arm), answering=answering,
        config=container, warnings=tuple(warnings), saved_config=saved(cfg, container),
    )
    return spec, PluginNodes(benchmark=cfg.benchmark, arm=cfg.arm)
