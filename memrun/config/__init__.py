"""Typed schemas for every config group (Hydra structured configs).

The root schema and the registration live here; each group's schemas live in the
module named after its package: :mod:`memrun.config.benchmarks`,
:mod:`memrun.config.arms`, :mod:`memrun.config.llm` (reader and judges).

The YAML files under ``conf/`` hold the values a reviewer reads; the dataclasses here
hold the types. Each built-in group option starts its defaults list with its schema
(``/schema/<group>/<name>@_here_``), so a typo such as ``arm.top_kk=5`` or a string
where an int belongs fails while the config is composed, before any work starts.
A user's own arm or benchmark config (``_target_`` plus its parameters) needs no schema.

The schema dataclasses are declared with :func:`memrun.config.schema.schema`: OmegaConf reads
their fields and defaults, nothing constructs, compares or prints them, and the generated
``__init__``, ``__repr__`` and ``__eq__`` (compiled from source for each of ~40 classes at
import) were most of the schema modules' import time in every ``memrun`` command's start.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from dataclasses import field
from enum import Enum
from typing import Any, List, Optional

from hydra import version as hydra_version
from hydra.core.config_store import ConfigNode, ConfigStore
from omegaconf import MISSING, OmegaConf

from memrun.config.arms import (
    AnswersFileArmConfig,
    BM25ArmConfig,
    DenseArmConfig,
    FullContextArmConfig,
    HttpArmConfig,
    HybridArmConfig,
    LocalEmbedderConfig,
    McpArmConfig,
    OkapiArmConfig,
    OpenAIEmbedderConfig,
    OracleArmConfig,
)
from memrun.config.benchmarks import BeamConfig, JsonlConfig, LocomoConfig, LongMemEvalConfig, SyntheticConfig
from memrun.config.conf_yaml import libyaml_for_conf
from memrun.config.interpolations import cached_parses
from memrun.config.llm import (
    ExactJudgeConfig,
    F1JudgeConfig,
    LLMJudgeConfig,
    NoJudgeConfig,
    ReaderConfig,
    RubricJudgeConfig,
    SubstringJudgeConfig,
)
from memrun.config.node_copies import metadata_copied_at_once
from memrun.config.schema import schema
from memrun.core.paths import conf_dir
from memrun.errors import ConfigError
from memrun.metrics.retrieval import DEFAULT_KS


class Axis(str, Enum):
    """What a run measures. The two axes never mix in one number."""

    recall = "recall"
    accuracy = "accuracy"


# Keys memrun reads itself from a group node; the rest go to the ``_target_`` class.
ARM_RESERVED_KEYS = ("name", "top_k", "public_headers", "concurrency", "warmup")  # public_headers: memrun.core.redaction;
# concurrency, warmup: memrun.pipeline.many_histories
BENCHMARK_RESERVED_KEYS = ("name", "ks", "slice", "sample", "limit", "corrections")


ACCURACY_TOP_K = 10
"""``arm.top_k`` on the accuracy axis when the config leaves it unset: the hits the reader
sees. It does not follow ``ks`` there, so that a reporting choice cannot change the answers."""


def cutoffs(cfg: Any) -> list[int]:
    """The run's retrieval cut-offs K, sorted and distinct: ``ks``, else ``benchmark.ks``,
    else :data:`memrun.metrics.retrieval.DEFAULT_KS`. Raises ConfigError unless they
    are positive integers."""
    raw = cfg.ks if cfg.get("ks") is not None else (cfg.benchmark.get("ks") or DEFAULT_KS)
    try:
        ks = sorted({int(k) for k in raw})
    except (TypeError, ValueError):
        ks = []
    if not ks or ks[0] < 1:
        raise ConfigError(f"ks={list(raw)}: cut-offs must be positive integers")
    return ks


def default_top_k(cfg: Any) -> int:
    """``arm.top_k`` when the config gives none: ``max(ks)`` on axis=recall (every cut-off
    measured), :data:`ACCURACY_TOP_K` on axis=accuracy. The built-in arms' YAML says
    ``top_k: ${memrun_top_k:}``, which resolves to this. Raises ConfigError for bad ks."""
    if str(getattr(cfg.axis, "value", cfg.axis)) == Axis.accuracy.value:
        return ACCURACY_TOP_K
    return max(cutoffs(cfg))


class Denominator(str, Enum):
    """Which accuracy the run's verdicts read (recorded in the instrument)."""

    accuracy_abstain_wrong = "accuracy_abstain_wrong"  # correct / (correct + wrong + abstained)
    accuracy = "accuracy"  # correct / (correct + wrong)


@schema
class ShardConfig:
    """``shard``: run only the groups shard ``index`` of ``count`` owns (memrun/jobs/shards.py)."""

    count: int = 1  # 1: no sharding
    index: int = 0


@schema
class RunConfig:
    """The root config: one benchmark x arm x judge, plus run-wide settings."""

    benchmark: Any = MISSING
    arm: Any = MISSING
    judge: Any = MISSING
    axis: Axis = Axis.recall
    repeats: int = 1
    seed: int = 7
    data_dir: Optional[str] = None
    ks: Optional[List[int]] = None  # None: the benchmark's ks, else DEFAULT_KS
    min_coverage: float = 0.95  # arms that answer themselves: least share of items answered
    max_error_share: float = 0.1  # memrun.core.status.MAX_ERROR_SHARE (not imported for --cfg job); more rows failed than this share: the run ends degraded (exit 2)
    stale_check: bool = False
    resume: bool = True  # an unfinished run of this configuration nearby: keep its rows, run the rest
    progress: bool = True
    shard: ShardConfig = field(default_factory=ShardConfig)
    # -- accuracy axis (see docs/accuracy.md) --
    reader: Any = MISSING
    judge2: Any = MISSING
    concurrency: int = 16
    max_tokens_total: Optional[int] = None
    cache_dir: Optional[str] = None
    denominator: Denominator = Denominator.accuracy_abstain_wrong
    judge2_sample: Optional[int] = 100
    lexical_scores: bool = False
    http_attempts: int = 4
    request_timeout_s: float = 120.0


def path_safe(name: object) -> str:
    """``name`` as one path segment: separators and other unsafe characters become ``_``.

    Used by the ``memrun_path`` resolver in ``hydra.run.dir`` so that an arm or benchmark
    name such as ``../x`` cannot place a run outside ``outputs/``.
    """
    text = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", str(getattr(name, "value", name))).strip(".")  # an Enum: its value
    return text or "_"


def job_dir(num: object, benchmark: object, arm: object, count: int | str, index: int | str) -> str:
    """A sweep job's folder name: ``<num>_<benchmark>_<arm>``, or ``shard-<i>-of-<n>`` for the
    shards of one run, so that they land side by side under one run folder (the sweep's)."""
    if int(count) > 1:
        return f"shard-{int(index)}-of-{int(count)}"
    return f"{num}_{path_safe(benchmark)}_{path_safe(arm)}"


def register() -> None:
    """Register the schemas with Hydra's ConfigStore and memrun's resolvers (idempotent)."""
    if not OmegaConf.has_resolver("memrun_path"):
        OmegaConf.register_new_resolver("memrun_path", path_safe)
    if not OmegaConf.has_resolver("memrun_job_dir"):
        OmegaConf.register_new_resolver("memrun_job_dir", job_dir)
    if not OmegaConf.has_resolver("memrun_top_k"):
        OmegaConf.register_new_resolver("memrun_top_k", lambda *, _root_: default_top_k(_root_))
    for group, name, cls in SCHEMAS:
        _store_lazily(group, name, cls)


def faster_compose() -> Callable[[], None]:
    """Until the returned undo is called, Hydra composes memrun's config with the same result,
    faster: the files under ``conf/`` parsed by libyaml (:mod:`memrun.config.conf_yaml`), each
    ``${...}`` string parsed once (:mod:`memrun.config.interpolations`), each node's metadata
    deep-copied in one step (:mod:`memrun.config.node_copies`), each version string Hydra
    compares its ``version_base`` with parsed once (:func:`_versions_parsed_once`) and the
    schemas Hydra's plugins store built when a compose loads them (:func:`_schemas_stored_lazily`).
    A run's compose (the command line) and an in-process one (:func:`memrun.config.compose.compose`)
    both use it; inside another such call nothing more is patched."""
    undos = (libyaml_for_conf(conf_dir()), cached_parses(), metadata_copied_at_once(), _versions_parsed_once(),
             _schemas_stored_lazily())

    def undo() -> None:
        for each in undos:
            each()

    return undo


def _versions_parsed_once() -> Callable[[], None]:
    """Until the returned undo is called, Hydra's ``version._get_version`` (a version string ->
    its major.minor ``packaging`` Version, an immutable value) parses each string once.

    ``version.base_at_least`` parses its argument twice on every call, and a compose calls it
    for each element of each defaults list: ~340 times, ~4 ms of memrun's compose, for a
    handful of distinct strings ("1.1", "1.2"). Inside another such call nothing more is patched."""
    original = hydra_version._get_version  # noqa: SLF001 (Hydra's module function, called by name)
    if getattr(original, "memrun_cached", False):
        return lambda: None
    cached = functools.lru_cache(maxsize=64)(original)
    cached.memrun_cached = True  # type: ignore[attr-defined]
    hydra_version._get_version = cached  # noqa: SLF001

    def undo() -> None:
        hydra_version._get_version = original  # noqa: SLF001

    return undo


def _schemas_stored_lazily() -> Callable[[], None]:
    """Until the returned undo is called, ``ConfigStore.store`` of a dataclass (a class, not
    an instance, whose values could still change) keeps it as memrun keeps its own schemas
    (:func:`_store_lazily`): built when a compose loads it, not when it is stored.

    Hydra's plugin scan imports every installed launcher's config module, each storing its
    schemas: the Ray launcher's ``ray_aws`` alone took ~22 ms to build, the plugins ~30 ms in
    all, in every run, ``--help`` and ``--cfg``, for launchers a run does not use. A stored
    node is only read through ``ConfigStore.load``, which deep-copies it (the build). A
    schema OmegaConf cannot build fails when it is loaded rather than when its plugin is
    scanned. Inside another such call nothing more is patched."""
    original = ConfigStore.store
    if getattr(original, "memrun_lazy", False):
        return lambda: None

    def store(self: ConfigStore, name: str, node: Any, group: str | None = None, package: str | None = None,
              provider: str | None = None) -> None:
        if isinstance(node, type) and dataclasses.is_dataclass(node):
            _store_lazily(group, name.removesuffix(".yaml"), node, package, provider)
        else:
            original(self, name=name, node=node, group=group, package=package, provider=provider)

    store.memrun_lazy = True  # type: ignore[attr-defined]
    ConfigStore.store = store  # type: ignore[method-assign]

    def undo() -> None:
        ConfigStore.store = original  # type: ignore[method-assign]

    return undo


# Every schema ConfigStore holds: (group, name, dataclass); the root's group is None.
SCHEMAS: tuple[tuple[str | None, str, type], ...] = (
    (None, "memrun_schema", RunConfig),
    ("schema/benchmark", "locomo", LocomoConfig),
    ("schema/benchmark", "synthetic", SyntheticConfig),
    ("schema/benchmark", "longmemeval", LongMemEvalConfig),
    ("schema/benchmark", "jsonl", JsonlConfig),
    ("schema/benchmark", "beam", BeamConfig),
    ("schema/arm", "bm25", BM25ArmConfig),
    ("schema/arm", "okapi", OkapiArmConfig),
    ("schema/arm", "dense", DenseArmConfig),
    ("schema/arm", "hybrid", HybridArmConfig),
    ("schema/arm", "full_context", FullContextArmConfig),
    ("schema/arm", "oracle", OracleArmConfig),
    ("schema/arm", "answers_file", AnswersFileArmConfig),
    ("schema/arm", "http", HttpArmConfig),
    ("schema/arm", "mcp", McpArmConfig),
    ("schema/embedder", "openai", OpenAIEmbedderConfig),
    ("schema/embedder", "local", LocalEmbedderConfig),
    ("schema/judge", "none", NoJudgeConfig),
    ("schema/judge", "llm", LLMJudgeConfig),
    ("schema/judge", "rubric", RubricJudgeConfig),
    ("schema/judge", "exact", ExactJudgeConfig),
    ("schema/judge", "substring", SubstringJudgeConfig),
    ("schema/judge", "f1", F1JudgeConfig),
    ("schema/reader", "default", ReaderConfig),
)


class _Schema:
    """A schema dataclass as ConfigStore holds it, built into a config when a compose loads it.

    ``ConfigStore.store`` builds ``OmegaConf.structured`` of its node at once, and
    ``ConfigStore.load`` hands the compose a deep copy of the node it asks for: memrun's 24
    schemas were built and copied in full before every run, ``--help`` and ``--cfg``. Here
    this node's deep copy *is* the build, so a compose builds only the schemas its config
    names (the root's and one per chosen group option) and gets the config a stored one
    would give. (A copy of the store shares its nodes: :class:`_SharedNodes`.)
    """

    def __init__(self, schema: type) -> None:
        self.schema = schema

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return OmegaConf.structured(self.schema)


class _SharedNodes(dict[str, Any]):  # ConfigStore.repo: folders (dicts) of ConfigNodes
    """ConfigStore's repository whose deep copy copies the folders and shares the stored nodes.

    Every compose deep-copies its config repository, which holds the store (Hydra's
    ``CachingConfigRepository``): Hydra's own configs and the launchers' (``hydra/config``,
    Ray's, submitit's, joblib's) were copied in full each time, ~8 ms of a run's compose and
    of ``--cfg job``'s. A stored node is only read: ``ConfigStore.load`` copies it
    shallowly and deep-copies its ``node`` before handing it out, so a copy of the store
    can share them. Nodes stored later (a plugin's, a user's) land in this same dict.
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> _SharedNodes:
        return _SharedNodes(_folders(self))


def _folders(folder: dict[str, Any]) -> dict[str, Any]:
    """``folder``'s tree of dicts copied, its other values (the stored ConfigNodes) shared."""
    return {key: _folders(value) if isinstance(value, dict) else value for key, value in folder.items()}


def _store_lazily(group: str | None, name: str, schema: type, package: str | None = None,
                  provider: str | None = None) -> None:
    """What ``ConfigStore.instance().store(name=name, node=schema, group=group, package=package,
    provider=provider)`` stores, with the node built at its first load (:class:`_Schema`), in a
    store whose copies share their nodes (:class:`_SharedNodes`)."""
    store = ConfigStore.instance()
    if type(store.repo) is not _SharedNodes:
        store.repo = _SharedNodes(store.repo)
    folder = store.repo
    for part in group.split("/") if group else ():
        folder = folder.setdefault(part, {})
    node: Any = _Schema(schema)  # what ConfigStore.load deep-copies: the built DictConfig
    folder[f"{name}.yaml"] = ConfigNode(name=f"{name}.yaml", node=node, group=group, package=package, provider=provider)
