"""Finding unfinished runs near a new one costs the same with 5 or 500 finished runs beside it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memrun.jobs import past_runs


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _run(folder: Path, status: str = "complete", parts: bool = False, table: bool = True) -> Path:
    folder.mkdir(parents=True)
    (folder / ".hydra").mkdir()
    if table:
        (folder / "items.parquet").write_bytes(b"PAR1")
        (folder / "summary.json").write_text(json.dumps({"n_items": 3, "status": status}, indent=2))
    if parts:
        (folder / "items.parts").mkdir()
        (folder / "items.parts" / "part-00000.parquet").write_bytes(b"PAR1")
    return folder


def _history(tmp_path: Path, n_finished: int) -> tuple[Path, Path, Path, Path]:
    """``n_finished`` finished runs, a killed one and an interrupted one beside a new run, and a
    killed job in a sweep beside (the folders two levels up are searched too)."""
    beside = tmp_path / "outputs" / "locomo" / "bm25" / "recall"
    for i in range(n_finished):
        _run(beside / f"2026-01-01_00-00-00.{i:06d}")
    killed = _run(beside / "killed", parts=True, table=False)
    interrupted = _run(beside / "interrupted", status="interrupted")
    elsewhere = _run(beside.parent / "accuracy" / "killed", parts=True, table=False)
    return beside / "new", killed, interrupted, elsewhere


def _reads(monkeypatch) -> list[Path]:
    """Every summary.json the search reads from now on."""
    read: list[Path] = []
    original = past_runs._interrupted

    def counting(summary: Path) -> bool:
        read.append(summary)
        return original(summary)

    monkeypatch.setattr(past_runs, "_interrupted", counting)
    return read


@pytest.mark.parametrize("n_finished", [5, 500])
def test_finished_runs_are_read_once_then_skipped(tmp_path, monkeypatch, n_finished):
    new, killed, interrupted, elsewhere = _history(tmp_path, n_finished)
    read = _reads(monkeypatch)
    assert past_runs.candidates(new) == [killed, interrupted, elsewhere]
    assert len(read) == n_finished + 3  # the first start reads every folder once
    read.clear()
    assert past_runs.candidates(new) == [killed, interrupted, elsewhere]
    assert sorted(read) == sorted(f / "summary.json" for f in (killed, interrupted, elsewhere))  # flat in n_finished


def test_a_finished_folder_that_changes_or_is_replaced_is_examined_again(tmp_path, monkeypatch):
    new, killed, interrupted, elsewhere = _history(tmp_path, 3)
    past_runs.candidates(new)
    first, second = sorted(p for p in new.parent.iterdir() if p.name.startswith("2026"))[:2]
    (first / "items.parts").mkdir()  # its entries changed: its mtime with them
    shutil.rmtree(second)
    _run(second, parts=True, table=False)  # a new run of the same name (hydra.run.dir=...)
    read = _reads(monkeypatch)
    found = past_runs.candidates(new)
    assert first in found and second in found and {first / "summary.json", second / "summary.json"} <= set(read)


def test_without_a_usable_cache_every_folder_is_examined(tmp_path, monkeypatch):
    new, killed, interrupted, elsewhere = _history(tmp_path, 4)
    past_runs.candidates(new)
    cache = next((tmp_path / "cache").rglob("*.json"))
    cache.write_text("{not json")
    read = _reads(monkeypatch)
    assert past_runs.candidates(new) == [killed, interrupted, elsewhere] and len(read) == 4 + 3


def test_the_cache_keeps_the_most_recent_roots_only(tmp_path, monkeypatch):
    """One cache file per searched root, and roots come and go (a test's or a bench's temp
    folder): the cache folder keeps the MAX_ROOTS most recently written, not all of them."""
    import os

    monkeypatch.setattr(past_runs, "MAX_ROOTS", 3)
    roots = []
    for i in range(6):
        new, *_ = _history(tmp_path / f"root{i}", 1)
        past_runs.candidates(new)  # notes the finished run under its root
        roots.append(new.parent.parent)
        cache = past_runs._cache_file(roots[-1])
        os.utime(cache, ns=(i * 10**9, i * 10**9))  # written in this order
    kept = sorted(p.name for p in cache.parent.iterdir())
    assert kept == sorted(past_runs._cache_file(r).name for r in roots[-3:])
    assert past_runs._read_cache(roots[-1])  # the newest root is still served from its cache


def test_a_folder_reached_through_a_link_too_is_listed_once_without_the_link(tmp_path):
    """pytest's ``<name>current`` link, a user's ``latest``: a link beside the run folders leads to
    the same runs a second time. Each is listed once, spelled without the link; a folder only a
    link leads to is still listed."""
    new, killed, interrupted, elsewhere = _history(tmp_path, 2)
    (new.parent.parent / "latest").symlink_to(new.parent.name)  # beside 'recall', to it
    outside = _run(tmp_path / "archive" / "killed", parts=True, table=False)
    (new.parent.parent / "archived").symlink_to(outside.parent)
    found = past_runs.candidates(new)
    assert found == [killed, interrupted, elsewhere, new.parent.parent / "archived" / "killed"] or \
        found == [killed, interrupted, new.parent.parent / "archived" / "killed", elsewhere]  # directory order
