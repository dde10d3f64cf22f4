"""The on-disk embedding cache: one vector per (embedder name, sha256 of the text).

A record shared by many items, runs or arms is embedded once per embedder. The cache is
one SQLite file (default ``platformdirs.user_cache_dir("memrun")/embeddings.sqlite``,
config key ``arm.cache_dir``), safe for several runs at once (WAL journal) and for a
kill (a batch is one transaction). Vectors are stored as raw float32 bytes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from memrun.core.paths import configured_or_cache
from memrun.errors import ArmError
from memrun.lazy import lazy
from memrun.pipeline.progress_lines import ACTIVITY

if TYPE_CHECKING:
    from memrun.core import cache_files as memrun_cache_files
    from memrun.core import run_warnings as memrun_run_warnings
else:
    memrun_cache_files = lazy("memrun.core.cache_files")
    memrun_run_warnings = lazy("memrun.core.run_warnings")

CACHE_FILE = "embeddings.sqlite"
EMBEDDING = "embedding"  # the progress line's phase: records embedded / total, records/s
_SQL_VARS = 500  # keys per SELECT ... IN (...), under SQLite's variable limit


@runtime_checkable
class Embedder(Protocol):
    """What the dense and hybrid arms need from an embedding model.

    name: the model's identity (e.g. ``text-embedding-3-small``); it keys the cache and
        becomes the instrument's ``embedder``, so two embedders that can return
        different vectors for one text must have different names.
    """

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``: float32 array of shape (len(texts), dim)."""
        ...


def text_sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 text (the cache's content key)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors keyed by (embedder name, text sha256) in one SQLite file under ``folder``.

    Raises ArmError when the folder cannot be created or the file is not a cache.
    """

    def __init__(self, folder: str | Path | None = None) -> None:
        self.path = configured_or_cache(str(folder) if folder else None)
        self.path = self.path / CACHE_FILE
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # The arm is built on the main thread and used from the accuracy axis's worker
            # thread (one at a time), so the connection must not be pinned to its thread.
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, sha TEXT NOT NULL, "
                "dim INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, sha)) WITHOUT ROWID"
            )
        except (OSError, sqlite3.Error) as exc:
            raise ArmError(f"arm.cache_dir: cannot open the embedding cache {self.path}: {exc}") from exc

        memrun_run_warnings.warn(memrun_cache_files.network_warning(self.path.parent, "arm.cache_dir"))

    def get(self, model: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``shas`` (missing keys are absent from the result)."""
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(shas), _SQL_VARS):
            chunk = list(shas[start : start + _SQL_VARS])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT sha, vec FROM vectors WHERE model = ? AND sha IN ({marks})", [model, *chunk]
            )
            for sha, blob in rows:
                found[sha] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store (sha, vector) pairs for ``model`` in one transaction."""
        rows = [(model, sha, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for sha, v in items]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)

    def close(self) -> None:
        self._db.close()


class CachedEmbedder:
    """An :class:`Embedder` behind the cache: only texts never seen are embedded.

    cache: None embeds every text every time (``arm.use_cache=false``).
    Counts ``hits`` and ``misses`` (distinct texts) for reports and benchmarks.
    """

    # Embedded once to learn the dimension before the run starts (cached like any text).
    PROBE = "memrun embedding dimension probe"
    CHUNK = 256  # texts per embed() call and cache transaction when many are new

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None) -> None:
        if not callable(getattr(embedder, "embed", None)) or not isinstance(getattr(embedder, "name", None), str):
            raise ArmError(
                f"arm.embedder: {type(embedder).__name__} is not an embedder; name a class with "
                "a 'name' string and an embed(texts) method in arm.embedder._target_"
            )
        self.embedder = embedder
        self.cache = cache
        self.name = embedder.name
        self.hits = 0
        self.misses = 0
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """The embedding dimension (embeds :attr:`PROBE` once, through the cache)."""
        if self._dim is None:
            self._dim = int(self.embed([self.PROBE]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim) vectors; raises ArmError on a malformed embedder result."""
        shas = [text_sha256(t) for t in texts]
        unique = dict(zip(shas, texts))
        found = self.cache.get(self.name, list(unique)) if self.cache else {}
        todo = [s for s in unique if s not in found]
        self.hits += len(unique) - len(todo)
        self.misses += len(todo)
        if todo:
            found.update(self._embed_new(todo, unique))
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        dims = {v.shape[0] for v in found.values()}
        if len(dims) > 1:
            raise ArmError(f"embedder {self.name}: vectors of different sizes {sorted(dims)} (cache from another model?)")
        return np.stack([found[s] for s in shas])

    def _embed_new(self, todo: list[str], unique: dict[str, str]) -> dict[str, np.ndarray]:
        """Vectors for the texts never seen (sha -> text in ``unique``), embedded in chunks of
        :attr:`CHUNK`: each chunk is stored in the cache at once (a kill loses at most one),
        and more than one chunk shows on the run's progress line (records embedded/total, /s)."""
        new: dict[str, np.ndarray] = {}
        shown = len(todo) > self.CHUNK
        if shown:
            ACTIVITY.start(EMBEDDING, len(todo), "records")
        try:
            for start in range(0, len(todo), self.CHUNK):
                chunk = todo[start:start + self.CHUNK]
                vectors = np.asarray(self.embedder.embed([unique[s] for s in chunk]), dtype=np.float32)
                if vectors.ndim != 2 or vectors.shape[0] != len(chunk):
                    raise ArmError(
                        f"embedder {self.name}: returned shape {vectors.shape} for {len(chunk)} texts; "
                        "expected (n_texts, dim)"
                    )
                if self.cache:
                    self.cache.put(self.name, zip(chunk, vectors))
                new.update(zip(chunk, vectors))
                if shown:
                    ACTIVITY.advance(EMBEDDING, len(chunk))
        finally:
            if shown:
                ACTIVITY.end(EMBEDDING)
        return new

    def close(self) -> None:
        if self.cache:
            self.cache.close()
        close = getattr(self.embedder, "close", None)
        if callable(close):
            close()
