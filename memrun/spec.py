"""What one run is, as typed, frozen values: :class:`RunSpec` and its parts.

Built once from the composed Hydra config by :func:`memrun.config.spec.build_spec`, with
every default applied and every check made there; the stages of a run
(:mod:`memrun.stages`), ``memrun plan`` and the instrument read these fields, never the
raw config. Plugins built with ``_target_`` (benchmark, arm, judges) still get their own
config node, as Hydra intends: :class:`PluginNodes` carries them, unread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memrun.benchmarks.selection import Selection
from memrun.retrieval_flow import FlowSettings

SelectionSpec = Selection
"""Which items of the benchmark a run keeps (slice, sample, limit, corrections)."""

RECALL, ACCURACY = "recall", "accuracy"


@dataclass(frozen=True)
class ShardSpec:
    """``shard``: this process runs the groups shard ``index`` of ``count`` owns (1: no sharding)."""

    count: int = 1
    index: int = 0


@dataclass(frozen=True)
class PluginNodes:
    """The config nodes of the plugins a run builds with ``_target_`` (:func:`memrun.plugins.build`).

    Opaque here: each plugin reads its own node. ``root`` is the whole config, for the
    accuracy axis's reader and judges (:func:`memrun.accuracy.setup.build_setup`)."""

    benchmark: Any
    arm: Any
    root: Any


@dataclass(frozen=True)
class RunSpec:
    """One run: benchmark x arm on an axis, with every setting checked and defaulted.

    ``ks``: retrieval cut-offs, sorted and distinct; ``top_k``: hits asked of the arm per
    search (``arm.top_k``, else :func:`memrun.config.default_top_k`); ``repeats``: answers
    per item (accuracy axis; 1 on recall); ``min_coverage`` / ``max_error_share``: shares
    in [0, 1] (:mod:`memrun.checks`); ``flow``: ``arm.concurrency`` and ``arm.warmup``
    (:class:`memrun.retrieval_flow.FlowSettings`); ``config``: the
    resolved config as plain dicts (its secrets are redacted where it is written);
    ``warnings``: what the checks found worth saying before any work.
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
    config: Mapping[str, Any] = field(repr=False)
    warnings: tuple[str, ...] = ()

    @property
    def accuracy(self) -> bool:
        """True on the accuracy axis (reader and judge), False on recall."""
        return self.axis == ACCURACY

    @property
    def label(self) -> str:
        """``<benchmark> x <arm>``: how the progress bar and the summary's title name the run."""
        return f"{self.benchmark} x {self.arm}"
