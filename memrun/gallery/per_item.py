"""Publishers' per-item results files, read into ``item id -> (value, ranking)``.

Formats:

- ``mempalace_locomo``: MemPalace's ``locomo_bench.py`` output (``results_locomo_*.json``,
  github.com/MemPalace/mempalace): a list in the order of ``locomo10.json``'s QA rows, each
  with ``sample_id``, ``question``, ``retrieved_ids`` (top K) and ``recall`` (the share of
  the evidence set found). The n-th row of a ``sample_id`` is memrun's item
  ``<sample_id>:<n>``.
- ``mempalace_longmemeval``: MemPalace's ``longmemeval_bench.py`` output
  (``results_mempal_*_session_*.jsonl``): one JSON object a line, ``question_id`` (memrun's
  item id), ``retrieval_results.ranked_items`` (top 50, each a ``corpus_id``: the session id
  at session granularity) and ``retrieval_results.metrics.session`` (``recall_any@K``,
  ``ndcg_any@K``); the value read is ``recall_any@<k>`` of the entry's ``per_item.k``.

A kept file may be gzip-compressed (``.gz``); its pin is checked on the published
(decompressed) bytes, so it names the very file the publisher released. The pin is the
bytes' sha256, or git's object id of them (``git hash-object FILE``: sha1 of ``blob <size>\0``
and the bytes) when the publisher's repository is all that names the file; both when known.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrun.errors import DataError


@dataclass(frozen=True)
class PublishedItem:
    """One item of a publisher's file: its value, its ranking (None when the file has none), the question."""

    value: float
    ranking: tuple[str, ...] | None
    question: str | None = None


def git_blob_id(data: bytes) -> str:
    """git's object id of ``data`` as a file (what ``git hash-object`` prints): 40 hex digits."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def published_bytes(path: Path, sha256: str | None, git_blob: str | None = None) -> bytes:
    """The file's published bytes (gunzipped when ``.gz``), checked against every pin given:
    ``sha256`` (64 hex digits) and ``git_blob`` (:func:`git_blob_id`). Raises DataError when
    one does not match, or when neither is given (an unpinned file proves nothing)."""
    if not sha256 and not git_blob:
        raise DataError(f"{path}: no sha256 and no git blob id pins it; a per-item file is read only when pinned")
    raw = path.read_bytes()
    data = gzip.decompress(raw) if path.suffix == ".gz" else raw
    for name, want, have in (("sha256", sha256, lambda: hashlib.sha256(data).hexdigest()),
                             ("git blob id", git_blob, lambda: git_blob_id(data))):
        if want and (digest := have()) != want:
            raise DataError(f"{path}: its published bytes have {name} {digest}, not the pinned {want}")
    return data


def _mempalace_locomo(blob: bytes) -> dict[str, PublishedItem]:
    rows = json.loads(blob)
    seen: Counter[str] = Counter()
    out: dict[str, PublishedItem] = {}
    for row in rows:
        sample = str(row["sample_id"])
        out[f"{sample}:{seen[sample]}"] = PublishedItem(float(row["recall"]), tuple(row["retrieved_ids"]),
                                                        row.get("question"))
        seen[sample] += 1
    return out


def _mempalace_longmemeval(blob: bytes, k: int) -> dict[str, PublishedItem]:
    out: dict[str, PublishedItem] = {}
    for line in blob.decode("utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        results = row["retrieval_results"]
        ranking = tuple(str(r["corpus_id"]) for r in results["ranked_items"])[:k]  # memrun keeps the top k
        out[str(row["question_id"])] = PublishedItem(float(results["metrics"]["session"][f"recall_any@{k}"]), ranking,
                                                     row.get("question"))
    return out


FORMATS: dict[str, Callable[[bytes, int], dict[str, PublishedItem]]] = {
    "mempalace_locomo": lambda blob, _k: _mempalace_locomo(blob),
    "mempalace_longmemeval": _mempalace_longmemeval,
}


def read_per_item(path: Path, sha256: str | None, fmt: str, k: int = 10,
                  git_blob: str | None = None) -> dict[str, PublishedItem]:
    """Item id -> :class:`PublishedItem` of the file at ``path`` in format ``fmt`` (``k``: the
    cut-off whose value a format with several is read at), pinned by ``sha256`` and/or
    ``git_blob`` (:func:`published_bytes`).

    Raises DataError for an unknown format, a pin mismatch or a file not of that format.
    """
    if fmt not in FORMATS:
        raise DataError(f"per_item.format={fmt}: no reader; formats: {', '.join(FORMATS)}")
    try:
        return FORMATS[fmt](published_bytes(path, sha256, git_blob), k)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: not a {fmt} file ({type(exc).__name__}: {exc})") from exc


def agreement(published: dict[str, PublishedItem], ours: dict[str, tuple[float | None, Any]],
              limit: int = 3) -> dict[str, Any]:
    """How the publisher's items and memrun's agree: ``n`` compared (ids in both),
    ``values_equal`` (|difference| < 1e-9), ``rankings_equal`` (None when the file has no
    rankings), ``missing`` (published ids memrun lacks) and ``first`` disagreements
    (up to ``limit``: id, published, memrun, whether the rankings agree)."""
    both = [i for i in published if i in ours]
    equal = rankings = 0
    has_rankings = any(p.ranking is not None for p in published.values())
    first: list[dict[str, Any]] = []
    for item in both:
        theirs, (value, ranking) = published[item], ours[item]
        same_value = value is not None and abs(value - theirs.value) < 1e-9
        same_ranking = theirs.ranking is not None and ranking is not None and tuple(ranking) == theirs.ranking
        equal += same_value
        rankings += same_ranking
        if not same_value and len(first) < limit:
            first.append({"item_id": item, "published": theirs.value, "memrun": value, "same_ranking": same_ranking})
    return {"n": len(both), "values_equal": equal, "rankings_equal": rankings if has_rankings else None,
            "missing": len(published) - len(both), "first": first}
