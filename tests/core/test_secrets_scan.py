"""Credentials in every form stay off disk and off the screen (memrun.core.redaction).

Plants secrets in the forms memrun does not refuse (a password and a query value in
``arm.base_url``, a query value in a request path, a header whose name does not look like
a credential, the API key echoed by a gateway)
and in one it refuses (a password in ``reader.base_url``), runs memrun as a user would
(the command line, in a fresh working directory, with its caches inside the test's
folder), then reads back EVERY file any run wrote (Parquet decoded, metadata included)
and everything printed, for EVERY planted value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from conftest import run_dirs, run_memrun
from memrun.io.reader import read_run
from servers import memory_server

PASSWORD = "pw-Arm-7f3a9c2e"
USER = "admin-user"
SESSION = "sess-0c1d2e3f4a5b"
SESSION2 = "sess-9a8b7c6d5e4f"
READER_PASSWORD = "pw-Reader-55e1d0"
KEY = "sk-test-loopback-0123456789abcdef"
BASE_QUERY = "qkey-Base-4b7e1a9d"  # ?api_key= in arm.base_url (sent with every request)
SEARCH_QUERY = "qtok-Search-8c2f6e0a"  # ?token= in the search path (sent with every search)
PLANTED = (PASSWORD, f"{USER}:{PASSWORD}", SESSION, SESSION2, READER_PASSWORD, KEY, BASE_QUERY, SEARCH_QUERY)


@pytest.fixture
def memory() -> Iterator[tuple[memory_server.MemoryState, int]]:
    state = memory_server.MemoryState()
    server = memory_server.serve(state)
    yield state, server.server_address[1]
    server.shutdown()


def readable(path: Path) -> Iterator[bytes]:
    """The file's bytes and, for Parquet (compressed pages), its rows and metadata as text."""
    data = path.read_bytes()
    yield data
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        yield json.dumps(table.to_pylist(), default=str).encode()
        yield repr(table.schema.metadata).encode()


def leaks(root: Path, printed: list[str]) -> list[str]:
    """Where a planted value appears: file paths under ``root`` and printed streams."""
    found = []
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, root
    for path in files:
        for blob in readable(path):
            found += [f"{path}: {v}" for v in PLANTED if v.encode() in blob]
    for i, text in enumerate(printed):
        found += [f"output {i}: {v}" for v in PLANTED if v in text]
    return sorted(set(found))


def env(tmp_path: Path) -> dict[str, str]:
    """Every per-user folder memrun writes (call cache, namespace ledger) inside the test's folder."""
    return {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "MEMRUN_PROGRESS_SECONDS": "0.2"}


def test_secrets_in_urls_and_headers_reach_no_file_and_no_output(memory, llm_env, tmp_path):
    state, port = memory
    work = tmp_path / "work"
    work.mkdir()
    base = f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/?api_key={BASE_QUERY}&v=1"
    search = f"/v1/namespaces/{{{{ namespace }}}}/search?token={SEARCH_QUERY}"
    arm = ["arm=http", f"arm.base_url='{base}'", f"arm.search.path='{search}'", f"+arm.headers.X-Session={SESSION}",
           "+arm.headers.Accept=application/json", "arm.public_headers=[Accept]", "arm.attempts=1"]
    printed: list[str] = []

    # A recall run whose server fails one search and every erase: the errors and warnings name the URL.
    state.fail["search"] = [500]
    state.fail["erase"] = [500] * 100
    done = run_memrun([*arm, "progress=false"], work, env(tmp_path))
    printed += [done.stdout, done.stderr]
    assert done.returncode == 0, done.stderr
    assert any(SEARCH_QUERY in path for path in state.paths), "the search path's query was not sent"
    assert state.paths and all(f"api_key={BASE_QUERY}&v=1" in path for path in state.paths), "arm.base_url's query"
    (run,) = run_dirs(work / "outputs")
    assert "Accept: application/json" in (run / ".hydra" / "config.yaml").read_text()  # a public header is kept
    saved = yaml.safe_load((run / ".hydra" / "config.yaml").read_text())["arm"]
    assert saved["base_url"] == f"http://***@127.0.0.1:{port}/?api_key=***&v=***"  # names readable, values masked
    assert saved["search"]["path"] == "/v1/namespaces/{{ namespace }}/search?token=***"  # the template kept
    assert read_run(run).instrument.config["arm"]["masked_fingerprint"].startswith("pbkdf2:")
    assert "could not erase" in done.stderr and "1 of 30 rows failed" in done.stderr

    # A sweep over two session values (Hydra's multirun.yaml lists them both), plain-line progress.
    state.fail.clear()
    done = run_memrun(["-m", *arm[:3], f"+arm.headers.X-Session={SESSION},{SESSION2}"], work, env(tmp_path))
    printed += [done.stdout, done.stderr]
    assert done.returncode == 0, done.stderr

    # The accuracy axis through the http arm; the gateway echoes the API key.
    llm_env.responder = lambda body: f"echo {KEY} {PASSWORD}"
    done = run_memrun([*arm, "axis=accuracy", "judge=exact", "progress=false", f"cache_dir={tmp_path / 'cache'}"],
                      work, env(tmp_path))
    printed += [done.stdout, done.stderr]
    assert done.returncode == 0, done.stderr

    # A password in the reader's URL: refused in one line, before any call.
    reader = f"reader.base_url=http://{USER}:{READER_PASSWORD}@127.0.0.1:{llm_env.port}/v1"
    calls = llm_env.count()
    done = run_memrun([*arm, "axis=accuracy", "judge=exact", reader, f"cache_dir={tmp_path / 'cache'}"], work,
                      env(tmp_path))
    printed += [done.stdout, done.stderr]
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "reader.base_url" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and llm_env.count() == calls

    # A URL override Hydra cannot parse (its '=' unquoted): the error line quotes it, masked.
    done = run_memrun(["arm=http", f"arm.base_url={base}"], work, env(tmp_path))
    printed += [done.stdout, done.stderr]
    assert done.returncode == 2 and "cannot parse the override" in done.stderr and "api_key=***" in done.stderr

    assert len(run_dirs(work / "outputs")) == 4  # the refused run left no folder
    found = leaks(tmp_path, printed)
    assert not found, "\n".join(found)
