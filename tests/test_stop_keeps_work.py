"""A stop keeps every search the server answered (issue: a SIGTERM at concurrency 16 kept
0 of 406 answered searches, because rows were written only for whole histories).

memrun runs as a user runs it (the command line) against the loopback memory server,
which logs each search it answered with the time it sent the reply; SIGTERM lands at
seeded random points of the searches, and every search answered before the signal must
have its row, once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import memrun_exe

from servers import memory_server


def _rows(run: Path) -> list[dict]:
    items = run / "items.parquet"
    files = [items] if items.exists() else sorted((run / "items.parts").glob("*.parquet"))
    return [r for f in files for r in pq.read_table(f, columns=["item_id", "repeat", "question", "error"]).to_pylist()]


@pytest.mark.slow
def test_sigterm_at_random_points_keeps_every_answered_search(tmp_path):
    rng = random.Random(30)
    state = memory_server.MemoryState(search_delay_s=0.25)
    server = memory_server.serve(state)
    port = server.server_address[1]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    kept = []
    try:
        for trial in range(4):
            run = tmp_path / f"t{trial}"
            with state.lock:
                state.answered.clear()
            proc = subprocess.Popen(
                [*memrun_exe(), "arm=http", f"arm.base_url=http://127.0.0.1:{port}", "arm.concurrency=4",
                 "progress=false", f"hydra.run.dir={run}"],
                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 120
            while not state.answered and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 1.2))
            signalled = time.time()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 130, err
            with state.lock:
                before = [query for _, query, at in state.answered if at < signalled]
            rows = _rows(run)
            assert not [k for k, n in Counter((r["item_id"], r["repeat"]) for r in rows).items() if n > 1]
            missing = Counter(before) - Counter(r["question"] for r in rows)
            assert not missing, f"trial {trial}: answered before the signal but no row: {sorted(missing)}"
            assert len(rows) < 30, "the signal came after the run's last search: no stop was tested"
            kept.append(len(rows))
    finally:
        server.shutdown()
    assert any(0 < n for n in kept), kept
