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
from servers.openai_server import OpenAIServer, prompt_text

QUESTIONS: list[str] = []


@pytest.fixture(autouse=True, scope="module")
def _questions() -> None:
    """The synthetic benchmark's questions (what a judge prompt quotes)."""
    from memrun.config import BENCHMARK_RESERVED_KEYS
    from memrun.config.compose import compose
    from memrun.core.plugins import build

    cfg = compose([])
    bench = build(cfg.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark")
    QUESTIONS[:] = sorted({i.question for g in bench.load(None).groups for i in g.items}, key=len, reverse=True)


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

            # The same configuration again: it resumes, searching only the items without a row.
            with state.lock:
                state.requests.clear()
            again = subprocess.run(
                [*memrun_exe(), "arm=http", f"arm.base_url=http://127.0.0.1:{port}", "arm.concurrency=4",
                 "progress=false", f"hydra.run.dir={tmp_path / f't{trial}-again'}"],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert again.returncode == 0, again.stderr
            assert (f"its {len(rows)} rows are kept" in again.stderr) == bool(rows), again.stderr
            final = _rows(tmp_path / f"t{trial}-again")
            assert sorted((r["item_id"], r["repeat"]) for r in final) == sorted({(r["item_id"], r["repeat"]) for r in final})
            assert len(final) == 30 and state.requests.count("search") == 30 - len(rows)
            kept_ids = {r["item_id"] for r in rows}
            open_histories = {r["item_id"].split(":")[0] for r in final if r["item_id"] not in kept_ids}
            assert state.requests.count("create") == len(open_histories)  # histories whose items all have rows: not ingested
    finally:
        server.shutdown()
    assert any(0 < n for n in kept), kept


def _judged(server: OpenAIServer, before: float | None = None) -> Counter:
    """Questions of the judge requests (model gpt-4.1; the reader is gpt-4.1-mini) the
    server answered, before ``before`` (time.time()) when given."""
    with server._lock:
        answered = list(server.answered)
    return Counter(next(q for q in QUESTIONS if q in prompt_text(body)) for at, body in answered
                   if isinstance(body, dict) and body.get("model") == "gpt-4.1" and (before is None or at < before))


@pytest.mark.slow
def test_sigterm_in_an_accuracy_run_keeps_every_judged_item_and_a_rerun_answers_only_the_rest(tmp_path):
    rng = random.Random(31)
    with OpenAIServer(latency=0.3) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-loopback-0123456789abcdef",
               "XDG_CACHE_HOME": str(tmp_path / "xdg")}

        def accuracy(folder: str) -> list[str]:  # a call cache per trial, shared by its rerun
            return [*memrun_exe(), "axis=accuracy", "judge=gpt41", "repeats=2", "concurrency=4", "progress=false",
                    f"cache_dir={tmp_path / ('cache' + folder[:2])}", f"hydra.run.dir={tmp_path / folder}"]

        for trial in range(3):
            server.answered.clear()
            proc = subprocess.Popen(accuracy(f"a{trial}"), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 120
            while not _judged(server) and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 3.0))
            signalled = time.time()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 130, err
            rows = _rows(tmp_path / f"a{trial}")
            assert not [k for k, n in Counter((r["item_id"], r["repeat"]) for r in rows).items() if n > 1]
            missing = _judged(server, signalled) - Counter(r["question"] for r in rows)
            assert not missing, f"trial {trial}: judged before the signal but no row: {sorted(missing)}"
            assert len(rows) < 60, "the signal came after the last judgment: no stop was tested"

            time.sleep(1.0)  # the judge calls in flight at the signal are still answered into the void
            server.answered.clear()
            again = subprocess.run(accuracy(f"a{trial}-again"), cwd=tmp_path, env=env, capture_output=True, text=True,
                                   timeout=300)
            assert again.returncode == 0, again.stderr
            final = _rows(tmp_path / f"a{trial}-again")
            assert len(final) == 60 and len({(r["item_id"], r["repeat"]) for r in final}) == 60
            assert sum(_judged(server).values()) == 60 - len(rows)  # only the item x repeats without a row
