"""The call cache's side file: what a commit appends survives a kill, and the next open
replays it (memrun.llm.cache's module docstring)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memrun.llm.cache import SETTLE_ROWS, SIDE_GLOB, CallCache
from memrun.llm.cache_keys import RECHECK_S
from memrun.llm.client import ChatResult

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no flock: each commit writes sqlite")

# Holds replies as fast as it can, commits every 7th and says so on stdout once commit()
# returned; deletes every 50th committed one again (a tombstone in the side file).
WRITER = r"""
import sys
from pathlib import Path
from memrun.llm.cache import CallCache
from memrun.llm.client import ChatResult
cache = CallCache(Path(sys.argv[1]))
i = 0
while True:
    cache.hold(f"k{i}", ChatResult(f"reply {i} \u2014 \n", i, 2, 1.5, "stop", "m"))
    if i % 7 == 6:
        cache.commit()
        print(f"committed {i}", flush=True)
    if i % 50 == 49:
        cache.delete(f"k{i - 10}")
        print(f"deleted {i - 10}", flush=True)
    i += 1
"""


def _reply(i: int) -> ChatResult:
    return ChatResult(f"reply {i} \u2014 \n", i, 2, 1.5, "stop", "m")


@pytest.mark.parametrize("kill_after", [40, SETTLE_ROWS - 30, 3 * SETTLE_ROWS + 5])
def test_a_kill_during_writes_keeps_every_committed_reply(tmp_path, kill_after):
    """SIGKILL lands while the writer appends, settles or deletes; the next open finds every
    reply committed before the kill, none it deleted, and no side file left."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
    committed, deleted = -1, set()

    def note(line: str) -> None:
        nonlocal committed
        verb, number = line.split()
        if verb == "committed":
            committed = int(number)
        else:
            deleted.add(int(number))

    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            note(line)
            if committed >= kill_after:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert proc.stdout is not None
    for line in proc.stdout.read().splitlines():  # what it said before the kill landed
        note(line)
    # the delete after its last line may have been written before the kill, or not
    after = committed + 1
    next_delete = {i - 10 for i in range(after, after + 50) if i % 50 == 49}
    with CallCache(tmp_path) as cache:
        assert not list(tmp_path.glob(SIDE_GLOB))  # replayed and removed at the open
        found = cache.get_many([f"k{i}" for i in range(committed + 1)])
        numbers = {int(k[1:]) for k in found}
        assert not numbers & deleted and set(range(committed + 1)) - deleted - numbers <= next_delete
        assert all(reply == _reply(int(k[1:])) for k, reply in found.items())


def test_a_dead_side_file_is_replayed_up_to_its_last_whole_line(tmp_path):
    CallCache(tmp_path).close()
    lines = [json.dumps(["a", "first", 1, 2, 3.0, "stop", 100.0, "m"]),
             json.dumps(["b", "second", None, None, 4.0, None, 101.0, None]),
             json.dumps(["a"]),  # a, deleted again
             json.dumps(["b", "second, again", 5, 6, 7.0, "stop", 102.0, "m2"])]
    side = tmp_path / "calls.sqlite-999999-dead.log"
    side.write_text("\n".join(lines) + '\n["c", "torn in the mid')
    with CallCache(tmp_path) as cache:
        assert not side.exists()
        assert cache.get_many(["a", "b", "c"]) == {"b": ChatResult("second, again", 5, 6, 7.0, "stop", "m2")}
        assert len(cache) == 1


def test_a_live_side_file_is_left_to_its_process(tmp_path):
    """A second cache on the folder (another process, or this one) does not take a side
    file whose writer is alive; the writer's close settles it, and then every reader sees it
    (within RECHECK_S, once that reader has read its key index: memrun.llm.cache_keys)."""
    writer = CallCache(tmp_path)
    writer.hold("k", ChatResult("mine", 1, 1, 1.0))
    writer.commit()
    sides = list(tmp_path.glob(SIDE_GLOB))
    assert len(sides) == 1
    with CallCache(tmp_path) as reader:
        assert sides[0].exists() and reader.get("k") is None  # not settled yet: the writer's own
        assert writer.get("k") == ChatResult("mine", 1, 1, 1.0)
        writer.close()
        time.sleep(RECHECK_S)
        assert not sides[0].exists() and reader.get("k") == ChatResult("mine", 1, 1, 1.0)


def test_a_failed_append_leaves_only_whole_lines_and_keeps_the_replies_held(tmp_path, monkeypatch):
    """A full disk mid-write: the half line written is cut off again, commit raises
    CacheError and keeps the replies held; once there is room, the next commit appends them
    and a replay (after a kill) finds every one."""
    import errno

    from memrun.errors import CacheError
    from memrun.llm import cache as cache_module

    real_write = os.write
    full = []

    def write(fd: int, data: bytes) -> int:
        if full:
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(cache_module.os, "write", write)
    cache = CallCache(tmp_path)
    cache.hold("a", _reply(1))
    cache.commit()
    full.append(True)
    cache.hold("b", _reply(2))
    with pytest.raises(CacheError, match="No space left"):
        cache.commit()
    side = next(tmp_path.glob(SIDE_GLOB))
    assert side.read_bytes().count(b"\n") == 1 and side.read_bytes().endswith(b"\n") and cache.held == 1
    full.clear()
    cache.commit()
    assert cache.held == 0
    copy = tmp_path / "calls.sqlite-1-killed.log"  # as a kill would leave it: the writer's lock gone
    copy.write_bytes(side.read_bytes())
    cache._held.clear()  # the replies exist in the copy only (the writer never settles them)
    cache.close()
    with CallCache(tmp_path) as reopened:
        assert reopened.get_many(["a", "b"]) == {"a": _reply(1), "b": _reply(2)}
