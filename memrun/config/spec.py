"""The composed Hydra config -> :class:`memrun.spec.RunSpec`: every default applied and
every run-wide check made here, once, before any work (the only place a run reads its
settings off the raw config)."""

from __future__ import annotations

from typing import Any

from memrun import shards
from memrun.benchmarks.selection import selection_from_config
from memrun.config import Axis, cutoffs, default_top_k
from memrun.config.compose import resolved
from memrun.errors import ConfigError
from memrun.redaction import check_no_secrets
from memrun.retrieval_flow import FlowSettings
from memrun.spec import ACCURACY, PluginNodes, RunSpec, ShardSpec


def positive_int(value: Any, key: str) -> int:
    """``value`` as an int >= 1, else ConfigError naming ``key`` (user configs have no schema)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or (isinstance(value, float) and not value.is_integer()):
        raise ConfigError(f"{key}={value!r}: must be a positive integer")
    return number


def check_settings(cfg: Any, accuracy: bool) -> int:
    """Check the run-wide settings before any work; return ``arm.top_k``.

    ``arm.top_k`` unset or null takes :func:`memrun.config.default_top_k`. Raises
    ConfigError for a non-positive top_k or repeats, repeats > 1 on axis=recall (a
    search is made and scored once per item, so repeats would be recorded and
    ignored), a min_coverage outside [0, 1], and stale_check off the accuracy axis.
    """
    if cfg.get("stale_check") and not accuracy:
        raise ConfigError("stale_check=true labels judged answers; it needs axis=accuracy")
    repeats = positive_int(cfg.get("repeats", 1), "repeats")
    if repeats > 1 and not accuracy:
        raise ConfigError(
            f"repeats={repeats}: axis=recall searches and scores each item once, so repeats would be ignored; "
            "repeats is for axis=accuracy (reader and judge). Drop it, or run the two axes as separate commands"
        )
    coverage = cfg.get("min_coverage", 0.95)
    if not isinstance(coverage, (int, float)) or not 0 <= coverage <= 1:
        raise ConfigError(f"min_coverage={coverage}: must be a share between 0 and 1 (0.95: 95% of the items)")
    share = cfg.get("max_error_share", 0.1)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ConfigError(f"max_error_share={share}: must be a share between 0 and 1 (0.1: 10% of the rows)")
    top_k = cfg.arm.get("top_k")
    return default_top_k(cfg) if top_k is None else positive_int(top_k, "arm.top_k")


def build_spec(cfg: Any) -> tuple[RunSpec, PluginNodes]:
    """The run ``cfg`` describes, and the config nodes of its plugins.

    Checks, in this order: the cut-offs ``ks`` (first: the arms' ``${memrun_top_k:}``
    reads them), literal secrets (:func:`memrun.redaction.check_no_secrets`, which also
    scrubs what Hydra wrote for the job), the run-wide settings (:func:`check_settings`),
    the selection (:func:`memrun.benchmarks.selection.selection_from_config`) and the shard.
    Raises ConfigError (LiteralSecretError for a key in the config) in one line.
    """
    axis = cfg.axis.value if isinstance(cfg.axis, Axis) else str(cfg.axis)
    accuracy = axis == ACCURACY
    ks = cutoffs(cfg)
    container = check_no_secrets(resolved(cfg))
    top_k = check_settings(cfg, accuracy)
    selection = selection_from_config(cfg.benchmark)
    shard_node = cfg.get("shard") or {}  # configs built by hand may leave it out: no sharding
    count, index = shards.check(shard_node.get("count", 1), shard_node.get("index", 0))
    judge = (cfg.get("judge") or {}).get("name")
    warnings = []
    if not accuracy and judge not in (None, "none"):
        warnings.append(f"judge={judge} is not used: axis=recall scores retrieval without a judge; "
                        "axis=accuracy runs the reader and the judge")
    spec = RunSpec(
        axis=axis, benchmark=str(cfg.benchmark.name), arm=str(cfg.arm.name), arm_target=str(cfg.arm.get("_target_")),
        ks=tuple(ks), top_k=top_k, repeats=int(cfg.repeats), seed=int(cfg.seed), data_dir=cfg.get("data_dir"),
        selection=selection, shard=ShardSpec(count, index),
        min_coverage=float(cfg.get("min_coverage", 0.95)), max_error_share=cfg.get("max_error_share", 0.1),
        stale_check=bool(cfg.get("stale_check")), judge=judge, progress=bool(cfg.get("progress", True)),
        flow=FlowSettings.from_config(cfg.arm),
        config=container, warnings=tuple(warnings),
    )
    return spec, PluginNodes(benchmark=cfg.benchmark, arm=cfg.arm, root=cfg)
