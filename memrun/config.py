"""Typed schemas for every config group (Hydra structured configs).

The YAML files under ``conf/`` hold the values a reviewer reads; the dataclasses here
hold the types. Each built-in group option starts its defaults list with its schema
(``/schema/<group>/<name>@_here_``), so a typo such as ``arm.top_kk=5`` or a string
where an int belongs fails while the config is composed, before any work starts.
A user's own arm or benchmark config (``_target_`` plus its parameters) needs no schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

import re

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf


class Axis(str, Enum):
    """What a run measures. The two axes never mix in one number."""

    recall = "recall"
    accuracy = "accuracy"


# Keys memrun reads itself from a group node; the rest go to the ``_target_`` class.
ARM_RESERVED_KEYS = ("name", "top_k")
BENCHMARK_RESERVED_KEYS = ("name", "ks", "slice", "sample", "limit", "corrections")


# -- selection: every benchmark (see memrun.benchmarks.selection) -----------------------


@dataclass
class SliceConfig:
    """``benchmark.slice``: keep items by category and/or id (None: no constraint)."""

    category: Optional[List[str]] = None
    question_type: Optional[List[str]] = None  # the same as category (LongMemEval's name)
    ids: Optional[List[str]] = None
    ids_file: Optional[str] = None


@dataclass
class SampleConfig:
    """``benchmark.sample``: n items drawn under a seed (n None: no sampling)."""

    n: Optional[int] = None
    seed: int = 0


@dataclass
class SelectionConfig:
    """Keys every benchmark schema carries; memrun reads them, the loader never sees them."""

    ks: Optional[List[int]] = None  # the benchmark's default cut-offs (top-level ks wins)
    slice: SliceConfig = field(default_factory=SliceConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)
    limit: Optional[int] = None
    corrections: Optional[str] = None


@dataclass
class LocomoConfig(SelectionConfig):
    """``benchmark=locomo``: LoCoMo (Maharana et al., ACL 2024), locomo10.json."""

    _target_: str = "memrun.benchmarks.locomo.LoCoMo"
    name: str = "locomo"
    split: str = MISSING
    file: str = MISSING
    url: Optional[str] = MISSING
    sha256: Optional[str] = MISSING
    path: Optional[str] = None
    categories: Dict[int, str] = MISSING
    expected_counts: Dict[int, int] = field(default_factory=dict)
    comparable_categories: List[int] = field(default_factory=list)


@dataclass
class SyntheticConfig(SelectionConfig):
    """``benchmark=synthetic``: the author-written smoke set shipped inside memrun."""

    _target_: str = "memrun.benchmarks.synthetic.Synthetic"
    name: str = "synthetic"
    split: str = "smoke"
    smoke_test: bool = True


@dataclass
class LongMemEvalFileConfig:
    """One LongMemEval file: cleaned name, original release name, address, pinned sha256."""

    file: str = MISSING
    original: Optional[str] = None
    url: Optional[str] = None
    sha256: Optional[str] = None


@dataclass
class LongMemEvalConfig(SelectionConfig):
    """``benchmark=longmemeval``: LongMemEval (Wu et al., ICLR 2025), splits s, m, oracle."""

    _target_: str = "memrun.benchmarks.longmemeval.LongMemEval"
    name: str = "longmemeval"
    split: str = "s"
    files: Dict[str, LongMemEvalFileConfig] = MISSING
    path: Optional[str] = None
    roles: List[str] = field(default_factory=lambda: ["user", "assistant"])
    cluster_by: str = "question_type"
    categories: Dict[str, str] = MISSING
    expected_counts: Dict[str, int] = field(default_factory=dict)


@dataclass
class JsonlConfig(SelectionConfig):
    """``benchmark=jsonl``: a team's own benchmark in memrun's JSON Lines format."""

    _target_: str = "memrun.benchmarks.jsonl.JsonlBenchmark"
    name: str = "jsonl"
    path: Optional[str] = None
    split: Optional[str] = None
    gold_match: str = "key"
    categories: Dict[str, str] = field(default_factory=dict)
    comparable_categories: List[str] = field(default_factory=list)
    task_averaged: bool = False


@dataclass
class BM25Params:
    """BM25 parameters, shared by ``arm=bm25`` and ``arm=hybrid``'s ``bm25`` node."""

    method: str = "lucene"
    k1: float = 1.5
    b: float = 0.75
    stopwords: Optional[str] = "en"


@dataclass
class BM25ArmConfig(BM25Params):
    """``arm=bm25``: in-process BM25 (bm25s) over one history's records."""

    _target_: str = "memrun.arms.bm25.BM25Arm"
    name: str = "bm25"
    top_k: int = 10


# -- arms beyond bm25 (see docs/arms.md) ---------------------------------------------


@dataclass
class OpenAIEmbedderConfig:
    """``arm/embedder=openai``: an OpenAI-compatible embeddings endpoint."""

    _target_: str = "memrun.arms.embedders.OpenAIEmbedder"
    model: str = "text-embedding-3-small"
    base_url: str = "https://api.openai.com/v1"
    api_key_env: Optional[str] = "OPENAI_API_KEY"
    dimensions: Optional[int] = None
    batch_size: int = 256
    timeout_s: float = 60.0


@dataclass
class LocalEmbedderConfig:
    """``arm/embedder=minilm``: a sentence-transformers model on this machine."""

    _target_: str = "memrun.arms.embedders.LocalEmbedder"
    model: str = "all-MiniLM-L6-v2"
    device: str = "cpu"
    batch_size: int = 64
    normalize: bool = True


@dataclass
class DenseArmConfig:
    """``arm=dense``: cosine top-k over cached embeddings."""

    _target_: str = "memrun.arms.dense.DenseArm"
    name: str = "dense"
    top_k: int = 10
    embedder: Any = MISSING
    cache_dir: Optional[str] = None
    use_cache: bool = True


@dataclass
class HybridArmConfig:
    """``arm=hybrid``: reciprocal rank fusion of bm25 and dense."""

    _target_: str = "memrun.arms.hybrid.HybridArm"
    name: str = "hybrid"
    top_k: int = 10
    embedder: Any = MISSING
    weights: Dict[str, float] = field(default_factory=lambda: {"lexical": 1.0, "vector": 1.0})
    rrf_k: float = 60.0
    depth: Optional[int] = None
    bm25: BM25Params = field(default_factory=BM25Params)
    cache_dir: Optional[str] = None
    use_cache: bool = True


@dataclass
class FullContextArmConfig:
    """``arm=full_context``: the whole history, truncated under a recorded policy."""

    _target_: str = "memrun.arms.full_context.FullContextArm"
    name: str = "full_context"
    top_k: int = 10
    max_records: Optional[int] = None
    max_chars: Optional[int] = None
    keep: str = "last"


@dataclass
class OracleArmConfig:
    """``arm=oracle``: only the gold evidence (turns or sessions)."""

    _target_: str = "memrun.arms.oracle.OracleArm"
    name: str = "oracle"
    top_k: int = 10
    level: str = "turn"


@dataclass
class AnswersFileArmConfig:
    """``arm=answers_file``: answers already produced elsewhere (accuracy axis)."""

    _target_: str = "memrun.arms.answers_file.AnswersFileArm"
    name: str = "answers_file"
    top_k: int = 10
    path: str = MISSING
    format: str = "auto"
    id_column: Optional[str] = None
    answer_column: Optional[str] = None


@dataclass
class HttpOperationConfig:
    """One request of ``arm=http``: Jinja2 templates in, a JMESPath ``result`` out."""

    method: str = "POST"
    path: str = MISSING
    body: Any = None
    result: Optional[str] = None
    record: Any = None


@dataclass
class HttpArmConfig:
    """``arm=http``: a memory server described per operation."""

    _target_: str = "memrun.arms.http.HttpArm"
    name: str = "http"
    top_k: int = 10
    base_url: str = MISSING
    health: Optional[HttpOperationConfig] = None
    create: Optional[HttpOperationConfig] = None
    ingest: HttpOperationConfig = MISSING
    search: HttpOperationConfig = MISSING
    erase: Optional[HttpOperationConfig] = None
    auth_token_env: Optional[str] = None
    auth_header: str = "Authorization"
    auth_scheme: str = "Bearer"
    headers: Dict[str, str] = field(default_factory=dict)
    namespace_prefix: str = "memrun-"
    keep_namespaces: bool = False
    ledger_dir: Optional[str] = None
    eval_flags: Dict[str, Any] = field(default_factory=dict)
    crediting_flags: Dict[str, Any] = field(default_factory=dict)
    crediting: bool = False
    require_real_providers: bool = False
    ingest_batch_size: int = 100
    timeout_s: float = 30.0
    attempts: int = 4


@dataclass
class NoJudgeConfig:
    """``judge=none``: no judge (the retrieval axis needs none)."""

    name: str = "none"
    model: Optional[str] = None


# -- accuracy axis: reader and judges (memrun/llm, memrun/judges) -----------------------


@dataclass
class ReaderPin:
    """The reader (and judge) a benchmark's published numbers used."""

    model: str = MISSING
    prompt: str = MISSING
    judge: Optional[str] = None


@dataclass
class ReaderConfig:
    """``reader=default``: an OpenAI-compatible chat model (see memrun.llm.reader)."""

    name: str = "default"
    model: Optional[str] = None
    prompt: Optional[str] = None
    pins: Dict[str, ReaderPin] = field(default_factory=dict)
    base_url: Optional[str] = None
    base_url_env: Optional[str] = "OPENAI_BASE_URL"
    api_key_env: str = "OPENAI_API_KEY"
    provider: Optional[str] = None
    temperature: float = 0.0
    max_tokens: int = 256
    max_context_tokens: Optional[int] = None
    overflow: str = "truncate"
    chars_per_token: float = 4.0


@dataclass
class LLMJudgeConfig:
    """``judge=gpt41|gpt4o|claude``: an LLM judge (memrun.judges.llm.LLMJudge)."""

    _target_: str = "memrun.judges.llm.LLMJudge"
    name: str = MISSING
    model: str = MISSING
    prompts: Dict[str, str] = field(default_factory=lambda: {"default": "default", "abstention": "abstention"})
    abstention_categories: List[str] = field(default_factory=list)
    base_url: Optional[str] = None
    base_url_env: Optional[str] = "OPENAI_BASE_URL"
    api_key_env: str = "OPENAI_API_KEY"
    provider: Optional[str] = None
    temperature: float = 0.0
    max_tokens: int = 256


@dataclass
class ExactJudgeConfig:
    """``judge=exact``: normalized answer == normalized gold."""

    _target_: str = "memrun.judges.lexical.ExactJudge"
    name: str = "exact"
    abstention_categories: List[str] = field(default_factory=lambda: ["adversarial"])
    abstention_phrases: List[str] = field(default_factory=lambda: ["no information available", "not mentioned"])


@dataclass
class SubstringJudgeConfig(ExactJudgeConfig):
    """``judge=substring``: the normalized gold occurs in the normalized answer."""

    _target_: str = "memrun.judges.lexical.SubstringJudge"
    name: str = "substring"


@dataclass
class F1JudgeConfig(ExactJudgeConfig):
    """``judge=f1``: token F1 with a ``variant`` (locomo | mem0), CORRECT at ``threshold``."""

    _target_: str = "memrun.judges.lexical.F1Judge"
    name: str = "f1"
    variant: str = "locomo"
    threshold: float = 0.5
    multi_answer_categories: List[str] = field(default_factory=lambda: ["multi-hop"])
    first_answer_categories: List[str] = field(default_factory=lambda: ["open-domain"])


class Denominator(str, Enum):
    """Which accuracy the run's verdicts read (recorded in the instrument)."""

    accuracy_abstain_wrong = "accuracy_abstain_wrong"  # correct / (correct + wrong + abstained)
    accuracy = "accuracy"  # correct / (correct + wrong)


@dataclass
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
    stale_check: bool = False
    progress: bool = True
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
    text = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", str(name)).strip(".")
    return text or "_"


def register() -> None:
    """Register the schemas with Hydra's ConfigStore and memrun's resolvers (idempotent)."""
    if not OmegaConf.has_resolver("memrun_path"):
        OmegaConf.register_new_resolver("memrun_path", path_safe)
    cs = ConfigStore.instance()
    cs.store(name="memrun_schema", node=RunConfig)
    cs.store(group="schema/benchmark", name="locomo", node=LocomoConfig)
    cs.store(group="schema/benchmark", name="synthetic", node=SyntheticConfig)
    cs.store(group="schema/benchmark", name="longmemeval", node=LongMemEvalConfig)
    cs.store(group="schema/benchmark", name="jsonl", node=JsonlConfig)
    cs.store(group="schema/arm", name="bm25", node=BM25ArmConfig)
    for name, node in (("dense", DenseArmConfig), ("hybrid", HybridArmConfig), ("full_context", FullContextArmConfig),
                       ("oracle", OracleArmConfig), ("answers_file", AnswersFileArmConfig), ("http", HttpArmConfig)):
        cs.store(group="schema/arm", name=name, node=node)
    cs.store(group="schema/embedder", name="openai", node=OpenAIEmbedderConfig)
    cs.store(group="schema/embedder", name="local", node=LocalEmbedderConfig)
    cs.store(group="schema/judge", name="none", node=NoJudgeConfig)
    cs.store(group="schema/judge", name="llm", node=LLMJudgeConfig)
    cs.store(group="schema/judge", name="exact", node=ExactJudgeConfig)
    cs.store(group="schema/judge", name="substring", node=SubstringJudgeConfig)
    cs.store(group="schema/judge", name="f1", node=F1JudgeConfig)
    cs.store(group="schema/reader", name="default", node=ReaderConfig)
