"""Quiet by default: no HTTP client log lines unless ``--verbose``; the progress line says how
far ingest has gone (histories ingested, records/s) beside the items."""

from __future__ import annotations

import re

from conftest import run_memrun


def test_http_logging_only_with_verbose_and_progress_counts_ingest(memory, tmp_path) -> None:
    state, url = memory
    state.search_delay_s = 0.2  # the run lasts long enough for a few progress lines
    env = {"MEMRUN_PROGRESS_SECONDS": "0.3"}
    args = ["benchmark=synthetic", "arm=http", f"arm.base_url={url}", "arm.concurrency=2",
            f"arm.ledger_dir={tmp_path / 'ledger'}"]
    quiet = run_memrun([*args, f"hydra.run.dir={tmp_path / 'quiet'}"], tmp_path, env)
    assert quiet.returncode == 0, quiet.stderr
    assert "HTTP Request" not in quiet.stderr + quiet.stdout
    lines = [ln for ln in quiet.stderr.splitlines() if ln.startswith("progress: ")]
    assert lines, quiet.stderr
    ingested = [re.search(r"ingested (\d+)/(\d+) histories", ln) for ln in lines]
    assert all(ingested) and {m.group(2) for m in ingested if m} == {"5"}  # synthetic: 5 histories
    counts = [int(m.group(1)) for m in ingested if m]
    assert counts == sorted(counts) and counts[-1] >= 1  # it counts up as histories are ingested
    assert any(re.search(r"ingested \d+/\d+ histories \d+ records/s", ln) for ln in lines)

    verbose = run_memrun(["--verbose", *args, f"hydra.run.dir={tmp_path / 'verbose'}"], tmp_path, env)
    assert verbose.returncode == 0, verbose.stderr
    assert "HTTP Request" in verbose.stderr  # memrun's lines for the arm's requests (memrun.http), asked for
    assert re.search(r'memrun.http: HTTP Request: POST http://127.0.0.1:\d+/v1/namespaces/[^/]+/search "200 OK"',
                     verbose.stderr), verbose.stderr


def test_verbose_lasts_one_call_of_main(tmp_path, monkeypatch) -> None:
    """``memrun.cli.main(["--verbose", ...])`` left MEMRUN_VERBOSE=1 (and HYDRA_FULL_ERROR=1)
    in os.environ: every later in-process call logged each HTTP request, and so did the
    processes the caller started."""
    import logging
    import os

    from memrun.cli import main

    monkeypatch.delenv("MEMRUN_VERBOSE", raising=False)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    args = ["benchmark=synthetic", "arm=bm25", "progress=false"]
    assert main(["--verbose", *args, f"hydra.run.dir={tmp_path / 'a'}"]) == 0
    assert "MEMRUN_VERBOSE" not in os.environ and "HYDRA_FULL_ERROR" not in os.environ
    assert logging.getLogger("memrun.http").level == logging.WARNING  # the loggers as a call without it leaves them
    monkeypatch.setenv("MEMRUN_VERBOSE", "1")  # the caller's own setting is kept
    monkeypatch.setenv("HYDRA_FULL_ERROR", "0")
    assert main([*args, f"hydra.run.dir={tmp_path / 'b'}"]) == 0
    assert os.environ["MEMRUN_VERBOSE"] == "1" and os.environ["HYDRA_FULL_ERROR"] == "0"


def test_a_verbose_after_dash_dash_is_the_other_programs(monkeypatch) -> None:
    """'memrun arm init mcp -- server --verbose': the words after '--' are the server's
    command; its --verbose was dropped from it and turned memrun's HTTP logging on instead."""
    import os

    from memrun import cli
    from memrun.commands import arm_init

    seen: list[tuple[list[str], str | None]] = []
    monkeypatch.setattr(arm_init, "main", lambda argv: seen.append((list(argv), os.environ.get("MEMRUN_VERBOSE"))) or 0)
    monkeypatch.delenv("MEMRUN_VERBOSE", raising=False)
    assert cli.main(["arm", "init", "mcp", "--", "server", "--verbose"]) == 0
    assert cli.main(["--verbose", "arm", "init", "mcp", "--", "server", "--verbose"]) == 0
    assert seen == [(["init", "mcp", "--", "server", "--verbose"], None),
                    (["init", "mcp", "--", "server", "--verbose"], "1")]
