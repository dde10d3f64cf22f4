"""What one run is, as typed, frozen values: :class:`RunSpec` and its parts.

Built once from the composed Hydra config by :func:`memrun.config.build_spec.build_spec`, with
every default applied and every check made there; the stages of a run
(:mod:`memrun.pipeline.outer_stages`), ``memrun plan`` and the instrument read these fields, never the
raw config. Plugins built with ``_target_`` (benchmark, arm, judges) still get their own
config node, as Hydra intends: :class:`PluginNodes` carries them, unread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memrun.benchmarks.selection import Selection
from memrun.pipeline.many_histories import FlowSettings

SelectionSpec = Selection
"""Which items of the benchmark a run keeps (slice, sample, limit, corrections)."""

RECALL, ACCURACY = "recall", "accuracy"
OVERFLOW_POLICIES = ("truncate", "skip")  # reader.overflow: what a context over max_context_tokens does


@dataclass(frozen=True)
class ShardSpec:
    """``shard``: this process runs the groups shard ``index`` of ``count`` owns (1: no sharding)."""

    count: int = 1
    index: int = 0


@dataclass(frozen=True)
class ReaderSpec:
    """``reader``: the chat model that answers each item from the arm's hits (axis=accuracy),
    its benchmark pin applied (:func:`memrun.config.build_spec.reader_spec`).

    ``prompt``: a prompt name in ``memrun/llm/prompts/`` or a file path; ``max_tokens``: the
    answer's token budget; ``max_context_tokens``: None for no limit, else the context's
    budget estimated as characters / ``chars_per_token``; ``overflow``: ``truncate`` (drop
    the lowest-ranked hits) or ``skip`` (the item is a ``context_overflow`` error);
    ``warnings``: an overridden pin (reader.model / reader.prompt), said before the run.
    """

    model: str
    prompt: str
    base_url: str | None
    base_url_env: str | None
    api_key_env: str | None
    provider: str | None
    temperature: float
    max_tokens: int
    max_context_tokens: int | None
    overflow: str
    chars_per_token: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeSpec:
    """``judge`` / ``judge2``: a judge named ``name`` in config key ``role``, built with
    ``_target_`` from its own config ``node`` (:func:`memrun.judges.build_judge`), unread here."""

    role: str
    name: str
    node: Any = field(repr=False, compare=False)


@dataclass(frozen=True)
class LLMCallSpec:
    """How a run's LLM calls are made: ``concurrency`` calls in flight, ``http_attempts``
    tries per call (>= 1), ``request_timeout_s`` seconds per call, ``max_tokens_total`` the
    run's token budget (None: no limit), ``cache_dir`` the call cache's folder (None: the
    user cache). Read by :func:`memrun.accuracy.setup.build_llm`."""

    concurrency: int
    http_attempts: int
    request_timeout_s: float
    max_tokens_total: int | None
    cache_dir: str | None


@dataclass(frozen=True)
class AccuracySpec:
    """The accuracy axis's reader, judges and LLM-call settings, checked (axis=accuracy only).

    ``reader``: None when the arm answers itself (its class has ``answer_for``);
    ``judge2``: None for ``judge2=none``; ``calls``: how the LLM calls are made;
    ``judge2_sample``: items the second judge re-grades (None: all); ``denominator``: the
    config's headline ratio (``accuracy_abstain_wrong`` | ``accuracy`` | ``mean_judge_score``);
    ``lexical_scores``: add lexical scores beside the judge's; ``judge_warning``: the judge
    is not the benchmark's pinned one.
    """

    reader: ReaderSpec | None
    judge: JudgeSpec
    judge2: JudgeSpec | None
    calls: LLMCallSpec
    judge2_sample: int | None
    denominator: str
    lexical_scores: bool
    judge_warning: str | None = None


@dataclass(frozen=True)
class PluginNodes:
    """The config nodes of the plugins a run builds with ``_target_`` (:func:`memrun.core.plugins.build`).

    Opaque here: each plugin reads its own node (the judges' nodes are in
    :class:`JudgeSpec`)."""

    benchmark: Any
    arm: Any


@dataclass(frozen=True)
class RunSpec:
    """One run: benchmark x arm on an axis, with every setting checked and defaulted.

    ``ks``: retrieval cut-offs, sorted and distinct; ``top_k``: hits asked of the arm per
    search (``arm.top_k``, else :func:`memrun.config.default_top_k`); ``repeats``: answers
    per item (accuracy axis; 1 on recall); ``min_coverage`` / ``max_error_share``: shares
    in [0, 1] (:mod:`memrun.pipeline.checks`); ``flow``: ``arm.concurrency`` and ``arm.warmup``
    (:class:`memrun.pipeline.many_histories.FlowSettings`); ``answering``: the reader, judges and
    LLM-call settings on the accuracy axis (None on recall); ``config``: the
    resolved config as plain dicts (its secrets are redacted where it is written);
    ``saved_config``: the config as the instrument keeps it (secrets redacted, ``env`` and
    flag values masked, ``${oc.env:NAME}`` as spelled: :func:`memrun.config.compose.saved`;
    empty: redact ``config``); ``warnings``: what the checks found worth saying before any work.
    """

    axis: str
    benchmark: str
    arm: str
    arm_target: str
    ks: tuple[int, ...]
    top_k: int
    repeats: int
    seed: int
    data_dir: str | None
    selection: SelectionSpec
    shard: ShardSpec
    min_coverage: float
    max_error_share: float
    stale_check: bool
    judge: str | None
    progress: bool
    flow: FlowSettings
    answering: AccuracySpec | None
    config: Mapping[str, Any] = field(repr=False)
    warnings: tuple[str, ...] = ()
    saved_config: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def accuracy(self) -> bool:
        """True on the accuracy axis (reader and judge), False on recall."""
        return self.axis == ACCURACY

    @property
    def label(self) -> str:
        """``<benchmark> x <arm>``: how the progress bar and the summary's title name the run."""
        return f"{self.benchmark} x {self.arm}"
