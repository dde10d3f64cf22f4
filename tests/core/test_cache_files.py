"""Caches across processes and machines: network filesystems are told apart, and per-shard
caches merge into one (insert or ignore by key)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from memrun.arms.embed_cache import EmbeddingCache
from memrun.cli import main
from memrun.core.cache_files import network_filesystem
from memrun.llm.cache import CallCache
from memrun.llm.client import ChatResult

MOUNTS = """\
/dev/sda1 / ext4 rw 0 0
server:/export/home /home nfs4 rw 0 0
/dev/nvme0n1 /home/user/scratch xfs rw 0 0
lustre@tcp:/fs /lustre lustre rw 0 0
"""


def test_network_filesystems_by_longest_mount_point(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text(MOUNTS)
    assert network_filesystem(tmp_path / "x", str(mounts)) is None  # /tmp is on / (ext4)
    assert network_filesystem("/home/user/.cache", str(mounts)) == "nfs4"
    assert network_filesystem("/home/user/scratch/cache", str(mounts)) is None  # a local disk mounted inside
    assert network_filesystem("/lustre/project", str(mounts)) == "lustre"
    assert network_filesystem("/home/user", str(tmp_path / "no-such-table")) is None


def _reply(text: str) -> ChatResult:
    return ChatResult(text, 10, 2, 100.0, "stop")


def test_cache_merge_inserts_or_ignores_by_key(tmp_path, capsys):
    a, b, dest = tmp_path / "node1", tmp_path / "node2", tmp_path / "dest"
    with CallCache(a) as cache:
        cache.put("k1", _reply("one"))
        cache.put("k2", _reply("two"))
    with CallCache(b) as cache:
        cache.put("k2", _reply("two, again"))
        cache.put("k3", _reply("three"))
    with CallCache(dest) as cache:
        cache.put("k1", _reply("dest keeps its own"))
    vectors = EmbeddingCache(a)
    vectors.put("minilm", [("sha1", np.ones(3, dtype=np.float32))])
    vectors.close()
    assert main(["cache", "merge", str(a), str(b), str(dest)]) == 0
    out = capsys.readouterr().out
    assert "calls.sqlite: 2 new of 4 entries read" in out and "embeddings.sqlite: 1 new of 1" in out
    with CallCache(dest) as cache:
        got = cache.get_many(["k1", "k2", "k3"])
    assert {k: r.text for k, r in got.items()} == {"k1": "dest keeps its own", "k2": "two", "k3": "three"}
    merged = EmbeddingCache(dest)
    assert merged.get("minilm", ["sha1"])["sha1"].tolist() == [1.0, 1.0, 1.0]
    merged.close()


def test_cache_merge_takes_the_replies_a_killed_shard_left_in_its_side_file(tmp_path, capsys):
    node, dest = tmp_path / "node", tmp_path / "dest"
    CallCache(node).close()
    (node / "calls.sqlite-4242-dead.log").write_text('["k9", "kept by the kill", 1, 2, 3.0, "stop", 10.0, "m"]\n')
    assert main(["cache", "merge", str(node), str(dest)]) == 0
    assert "calls.sqlite: 1 new of 1 entries read" in capsys.readouterr().out
    with CallCache(dest) as cache:
        assert cache.get("k9") == ChatResult("kept by the kill", 1, 2, 3.0, "stop", "m")


def test_cache_merge_refuses_what_is_not_a_cache(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["cache", "merge", str(tmp_path / "empty"), str(tmp_path / "dest")]) == 2
    assert "no memrun cache in" in capsys.readouterr().err
    bogus = tmp_path / "bogus"
    bogus.mkdir()
    sqlite3.connect(bogus / "calls.sqlite").execute("CREATE TABLE other (x)").connection.commit()
    assert main(["cache", "merge", str(bogus), str(tmp_path / "dest2")]) == 2
    assert "not a memrun cache" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["cache", "merge"])


def test_cache_merge_names_a_source_that_is_not_a_database(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "calls.sqlite").write_bytes(b"this is not sqlite" * 100)
    assert main(["cache", "merge", str(src), str(tmp_path / "dest")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a memrun cache" in err[0]
    assert main(["cache", "merge", str(src), "/proc/memrun-no"]) == 2
    assert "cannot create the cache folder /proc/memrun-no" in capsys.readouterr().err
