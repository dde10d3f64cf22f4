"""Schemas of the ``arm`` group and its ``embedder`` subgroup."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Dict, List, Optional

from omegaconf import MISSING

from memrun.config.schema import schema


@schema
class ArmKeys:
    """Keys every arm has, read by memrun itself (:class:`memrun.pipeline.many_histories.FlowSettings`)."""

    concurrency: int = 16  # calls in flight to the arm (async or thread-safe arms); 1: one at a time
    warmup: bool = False  # search each query twice and time the second (the first warms caches)
    # arm/embedder=...: the arms that embed (dense, hybrid) require one; the others hold null and
    # ignore one a sweep composes into them (memrun.config.build_spec.check_embedder says so; --cfg job prints the null)
    embedder: Optional[Any] = None


@schema
class BM25Params:
    """BM25 parameters, shared by ``arm=bm25`` and ``arm=hybrid``'s ``bm25`` node."""

    method: str = "lucene"
    k1: float = 1.5
    b: float = 0.75
    stopwords: Optional[str] = "en"


@schema
class BM25ArmConfig(BM25Params, ArmKeys):
    """``arm=bm25``: in-process BM25 (bm25s) over one history's records."""

    _target_: str = "memrun.arms.bm25.BM25Arm"
    name: str = "bm25"
    top_k: int = 10


@schema
class OkapiParams:
    """rank_bm25 ``BM25Okapi`` parameters, shared by ``arm=okapi`` and ``arm=hybrid``'s ``okapi`` node."""

    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    tokenizer: str = "whitespace"  # whitespace | word_lower


@schema
class OkapiArmConfig(OkapiParams, ArmKeys):
    """``arm=okapi``: Okapi BM25 as rank_bm25 scores it (memrun.arms.okapi)."""

    _target_: str = "memrun.arms.okapi.OkapiArm"
    name: str = "okapi"
    top_k: int = 10


# -- arms beyond bm25 (see docs/arms.md) ---------------------------------------------


@schema
class OpenAIEmbedderConfig:
    """``arm/embedder=openai``: an OpenAI-compatible embeddings endpoint."""

    _target_: str = "memrun.arms.embedders.OpenAIEmbedder"
    model: str = "text-embedding-3-small"
    base_url: Optional[str] = None  # null: $OPENAI_BASE_URL, else OpenAI
    api_key_env: Optional[str] = "OPENAI_API_KEY"
    dimensions: Optional[int] = None
    batch_size: int = 256
    timeout_s: float = 60.0


@schema
class LocalEmbedderConfig:
    """``arm/embedder=minilm``: a sentence-transformers model on this machine (numpy or torch)."""

    _target_: str = "memrun.arms.embedders.LocalEmbedder"
    model: str = "all-MiniLM-L6-v2"
    backend: str = "numpy"  # numpy (no torch; BERT models) | sentence-transformers
    device: str = "cpu"
    batch_size: int = 64
    normalize: bool = True


@schema
class DenseArmConfig(ArmKeys):
    """``arm=dense``: cosine top-k over cached embeddings."""

    _target_: str = "memrun.arms.dense.DenseArm"
    name: str = "dense"
    top_k: int = 10
    embedder: Any = MISSING
    cache_dir: Optional[str] = None
    use_cache: bool = True


@schema
class HybridArmConfig(ArmKeys):
    """``arm=hybrid``: reciprocal rank fusion of bm25 and dense."""

    _target_: str = "memrun.arms.hybrid.HybridArm"
    name: str = "hybrid"
    top_k: int = 10
    embedder: Any = MISSING
    weights: Dict[str, float] = field(default_factory=lambda: {"lexical": 1.0, "vector": 1.0})
    rrf_k: float = 60.0
    depth: Optional[int] = None
    bm25: BM25Params = field(default_factory=BM25Params)
    lexical: str = "bm25"  # bm25 (bm25s, the bm25 node) | okapi (rank_bm25, the okapi node)
    ties: str = "record_order"  # record_order | first_seen (the lexical ranking's order first)
    okapi: OkapiParams = field(default_factory=OkapiParams)
    cache_dir: Optional[str] = None
    use_cache: bool = True


@schema
class FullContextArmConfig(ArmKeys):
    """``arm=full_context``: the whole history, truncated under a recorded policy."""

    _target_: str = "memrun.arms.full_context.FullContextArm"
    name: str = "full_context"
    top_k: int = 10
    max_records: Optional[int] = None
    max_chars: Optional[int] = None
    keep: str = "last"


@schema
class OracleArmConfig(ArmKeys):
    """``arm=oracle``: only the gold evidence (turns or sessions)."""

    _target_: str = "memrun.arms.oracle.OracleArm"
    name: str = "oracle"
    top_k: int = 10
    level: str = "turn"


@schema
class AnswersFileArmConfig(ArmKeys):
    """``arm=answers_file``: answers already produced elsewhere (accuracy axis)."""

    _target_: str = "memrun.arms.answers_file.AnswersFileArm"
    name: str = "answers_file"
    top_k: int = 10
    path: str = MISSING
    format: str = "auto"
    id_column: Optional[str] = None
    answer_column: Optional[str] = None


@schema
class HttpRequestKeys:
    """The keys of one request of ``arm=http`` (:class:`HttpOperationConfig`,
    :class:`HttpReadyConfig`): Jinja2 templates in, a JMESPath ``result`` out."""

    method: str = "POST"
    path: Optional[str] = None
    body: Any = None
    result: Optional[str] = None
    record: Any = None
    idempotent: Optional[bool] = None  # may a transport error be retried? null: the operation's default
    encoding: str = "json"  # how the body is sent: json, ndjson (bulk endpoints), form or text


@schema
class HttpOperationConfig(HttpRequestKeys):
    """One request of ``arm=http``: its ``path`` is required."""

    path: str = MISSING


@schema
class HttpReadyConfig(HttpRequestKeys):
    """``arm.ready``: polled after each history's ingest until the server has indexed it.
    Off while ``path`` and ``result`` are null (a node by default, so that command-line
    overrides such as ``arm.ready.path=...`` can fill it), or when it is null
    (``arm.ready=null`` turns a config's readiness poll off)."""

    method: str = "GET"
    path: Optional[str] = None
    equals: Any = None  # ready when ``result`` equals this template's value; null: when it is true
    timeout_s: float = 60.0
    interval_s: float = 0.5


@schema
class MemoryServerKeys(ArmKeys):
    """Keys ``arm=http`` and ``arm=mcp`` share: credentials, namespaces, evaluation flags."""

    auth_token_env: Optional[str] = None
    auth_header: str = "Authorization"
    auth_scheme: str = "Bearer"
    headers: Dict[str, str] = field(default_factory=dict)
    public_headers: List[str] = field(default_factory=list)  # memrun.core.redaction: values that may be saved
    namespace_prefix: str = "memrun-"
    keep_namespaces: bool = False
    isolation: str = "per_history"  # or shared: every history in the server's one store, on purpose (instrumented)
    ledger_dir: Optional[str] = None
    eval_flags: Dict[str, Any] = field(default_factory=dict)
    crediting_flags: Dict[str, Any] = field(default_factory=dict)
    crediting: bool = False
    ingest_batch_size: int = 100
    settle_s: float = 0.0
    timeout_s: float = 30.0


@schema
class HttpArmConfig(MemoryServerKeys):
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
    ready: Optional[HttpReadyConfig] = field(default_factory=HttpReadyConfig)
    require_real_providers: bool = False
    attempts: int = 4
    max_rps: Optional[float] = None  # at most this many requests per second to the server; null: no cap


@schema
class McpOperationConfig:
    """One tool call of ``arm=mcp``: the tool, its arguments as templates, a JMESPath ``result``."""

    tool: Optional[str] = None
    arguments: Any = None
    result: Optional[str] = None
    record: Any = None  # ingest: the template of one record in ``records``
    per_record: bool = False  # ingest: one call per record (its arguments see ``record``)


@schema
class McpReadyConfig(McpOperationConfig):
    """``arm.ready`` of ``arm=mcp``: polled after each history's ingest (off while ``tool`` is null)."""

    equals: Any = None
    timeout_s: float = 60.0
    interval_s: float = 0.5


@schema
class McpArmConfig(MemoryServerKeys):
    """``arm=mcp``: a memory server over the Model Context Protocol (stdio or streamable HTTP)."""

    _target_: str = "memrun.arms.mcp.McpArm"
    name: str = "mcp"
    top_k: int = 10
    command: Optional[str] = None
    args: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    health: Optional[McpOperationConfig] = field(default_factory=McpOperationConfig)
    create: Optional[McpOperationConfig] = field(default_factory=McpOperationConfig)  # result: the issued id
    ingest: McpOperationConfig = field(default_factory=McpOperationConfig)
    search: McpOperationConfig = field(default_factory=McpOperationConfig)
    erase: Optional[McpOperationConfig] = field(default_factory=McpOperationConfig)
    ready: Optional[McpReadyConfig] = field(default_factory=McpReadyConfig)
    search_mode: Optional[str] = None
    server_build: Optional[str] = None  # the server's own name and version (the handshake's may be its framework's)
    start_timeout_s: float = 60.0
    sessions: int = 1
