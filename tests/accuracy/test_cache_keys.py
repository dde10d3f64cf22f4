"""The call cache's key index: absent keys cost no query, and it never hides a stored reply."""

from __future__ import annotations

import sqlite3
import time

from memrun.llm.cache import CallCache
from memrun.llm.cache_keys import RECHECK_S, KeyIndex
from memrun.llm.client import ChatResult

REPLY = ChatResult("answer", 12, 3, 34.5, "stop", "m")


def traced(cache: CallCache) -> list[str]:
    """The statements the cache's connection runs from now on."""
    statements: list[str] = []
    cache._db.set_trace_callback(statements.append)
    return statements


def lookups(statements: list[str]) -> list[str]:
    return [s for s in statements if s.startswith("SELECT key,")]


def test_once_a_lookup_missed_absent_keys_cost_no_query(tmp_path):
    with CallCache(tmp_path) as cache:
        cache.put("stored", REPLY)
        assert cache.get_many(["stored", "absent-1"]) == {"stored": REPLY}  # the miss reads the index
        statements = traced(cache)
        assert cache.get_many(["absent-2", "absent-3"]) == {}
        assert cache.get_many(["absent-4"]) == {}
        assert lookups(statements) == []
        assert cache.get_many(["stored", "absent-5"]) == {"stored": REPLY}  # a key it holds is read
        assert len(lookups(statements)) == 1


def test_a_rerun_that_finds_every_reply_never_reads_the_index(tmp_path):
    with CallCache(tmp_path) as cache:
        for i in range(3):
            cache.put(f"k{i}", REPLY)
    with CallCache(tmp_path) as cache:
        statements = traced(cache)
        assert cache.get_many(["k0", "k1", "k2"]) == {f"k{i}": REPLY for i in range(3)}
        assert not [s for s in statements if "data_version" in s or s.startswith("SELECT key FROM")]


def test_what_this_connection_writes_or_deletes_is_read_back_through_the_index(tmp_path):
    with CallCache(tmp_path) as cache:
        assert cache.get("k") is None  # index read: empty
        cache.put("k", REPLY)  # settled into sqlite, no longer held
        assert cache.get("k") == REPLY
        cache.delete("k")
        assert cache.get("k") is None
        cache.hold("k", REPLY)
        cache.commit()
        assert cache.get("k") == REPLY  # held
        cache.close()
    with CallCache(tmp_path) as cache:
        assert cache.get("k") == REPLY


def test_another_processes_commit_is_seen_within_the_recheck_time(tmp_path):
    """Another connection (another run sharing cache_dir) writes a reply after this one's
    index was read: ``PRAGMA data_version`` tells, asked at most every RECHECK_S."""
    with CallCache(tmp_path) as mine, CallCache(tmp_path) as theirs:
        assert mine.get("shared") is None  # index read without the key
        theirs.put("shared", REPLY)
        statements = traced(mine)
        assert mine.get("shared") is None  # within RECHECK_S of the read: no query at all
        assert statements == []
        time.sleep(RECHECK_S)
        assert mine.get("shared") == REPLY
        theirs.put("other", REPLY)
        time.sleep(RECHECK_S)
        assert mine.get_many(["other", "none"]) == {"other": REPLY}


def test_above_its_size_the_index_is_given_up_and_every_lookup_queries(tmp_path):
    db = sqlite3.connect(tmp_path / "t.sqlite", isolation_level=None)
    db.execute("CREATE TABLE replies (key TEXT PRIMARY KEY) WITHOUT ROWID")
    db.executemany("INSERT INTO replies VALUES (?)", [("a",), ("b",)])
    small = KeyIndex(db, max_keys=2)
    small.missed()
    assert small.active and small.may_hold(["a", "z"]) == ["a"]
    small.added(["c"])  # three keys: more than it keeps
    assert not small.active and small.may_hold(["a", "z"]) == ["a", "z"]
    small.missed()  # not read again
    assert not small.active
    large = KeyIndex(db, max_keys=1)
    large.missed()
    assert not large.active and large.may_hold(["z"]) == ["z"]
