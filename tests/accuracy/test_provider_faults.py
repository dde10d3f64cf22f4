"""Provider faults in whole accuracy runs (memrun in-process, loopback server only):
transport errors are retried, a refused key stops the run, a fake provider stays local."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from accuracy.helpers import KEY, rows, run_memrun, summary
from memrun.cli import main
from memrun.io.reader import read_run
from memrun.llm import endpoint
from servers.openai_server import Reply


def test_resets_truncations_and_timeouts_do_not_fail_items(llm_env, tmp_path):
    # 8 of the run's 30 reader calls meet a transport fault; each is retried and succeeds.
    # request_timeout_s 1.5: a loaded machine answers every other call within it
    llm_env.script(*[Reply.reset()] * 5, Reply.truncated(), Reply.ok("slow", delay=4.0), Reply.reset())
    rc, out = run_memrun(tmp_path, "judge=exact", "request_timeout_s=1.5", "concurrency=4")
    assert rc == 0
    assert all(r["error"] is None for r in rows(out))
    assert summary(out)["calls"]["transport_retries"] == 8


def test_a_refused_key_stops_the_run_at_the_first_refusal(llm_env, tmp_path, capsys):
    llm_env.script(*[Reply.ok("an answer")] * 6, Reply.error(401, "Incorrect API key provided"))
    rc, out = run_memrun(tmp_path, "judge=exact", "concurrency=2")
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning:")]
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith("memrun: error: HTTP 401") and "$OPENAI_API_KEY" in err[0] and "run stops" in err[0]
    assert llm_env.count() <= 6 + 1 + 2  # not one doomed call per item (30 items)
    run = read_run(out)
    # the rows so far are kept (and those of the calls already in flight, with concurrency=2)
    assert run.instrument.status == "failed" and 4 <= run.table.num_rows <= 6 + 2


def test_an_endpoint_nothing_answers_at_stops_the_run_in_one_line(openai_server, tmp_path, monkeypatch, capsys):
    base_url = openai_server.base_url
    openai_server.stop()  # a wrong port, or a server that is not running
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    rc, out = run_memrun(tmp_path, "judge=gpt41", "concurrency=4", "http_attempts=2")
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning:")]
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"memrun: error: cannot connect to {base_url}") and "run stops" in err[0]
    assert not out.exists()  # no item ran: the run leaves no folder behind (README, "Errors")


def test_an_endpoint_that_never_replies_in_time_stops_the_run_in_one_line(llm_env, tmp_path, capsys):
    llm_env.latency = 3.0  # accepts connections, replies to none within the timeout
    rc, out = run_memrun(tmp_path, "judge=gpt41", "concurrency=4", "http_attempts=2", "request_timeout_s=0.3")
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning:")]
    assert rc == 2 and len(err) == 1, err
    assert "no complete reply within the request timeout" in err[0] and "raise request_timeout_s" in err[0]
    assert not out.exists()  # no item ran: no folder is left
    # not one doomed call (with its retries) per item: the run ends with the calls in flight
    # when the first failed for good (4 calls in flight, 2 attempts each)
    assert len([e for e in llm_env.log if e.path.endswith("/chat/completions")]) <= 8


def test_a_fake_provider_without_a_local_address_refuses_to_start(openai_server, tmp_path, monkeypatch, capsys):
    # The default stands in for OpenAI's endpoint: even a regression must not reach a real API.
    monkeypatch.setattr(endpoint, "DEFAULT_BASE_URL", "https://api.example.invalid/v1")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    rc, out = run_memrun(tmp_path, "judge=exact", "reader.provider=fake")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "https://api.example.invalid/v1" in err[0] and "reader.base_url" in err[0]
    assert not out.exists()
    # A gateway named in the environment is not the fake server either.
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example.com/v1")
    rc, _ = run_memrun(tmp_path, "judge=exact", "reader.provider=fake")
    assert rc == 2 and "$OPENAI_BASE_URL" in capsys.readouterr().err


def test_a_fake_provider_never_sends_the_real_key(openai_server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    rc, out = run_memrun(tmp_path, "judge=exact", "reader.provider=fake", f"reader.base_url={openai_server.base_url}")
    assert rc == 0 and summary(out)["fake_providers"] is True
    assert openai_server.log and all(KEY not in json.dumps(e.headers) for e in openai_server.log)


@pytest.mark.parametrize(("overrides", "fake"), [(["judge.provider=fake"], True), ([], False)])
def test_calibrate_judge_says_when_its_judge_was_fake(llm_env, tmp_path, overrides, fake):
    target = tmp_path / "calib.json"
    args = ["calibrate-judge", "judge=gpt41", *overrides, f"cache_dir={tmp_path / 'cache'}", "progress=false",
            "--out", str(target), "--n", "4"]
    main(args)  # the loopback judge's verdicts make rates that may say it is useless: not the point here
    assert json.loads(target.read_text())["fake_providers"] is fake


def test_a_full_cache_disk_stops_the_run_in_one_line_keeping_its_rows(llm_env, tmp_path, capsys, monkeypatch):
    """SQLite's own 'database or disk is full' (max_page_count caps the file after 2 replies):
    the run stops with one line and exit 2; the rows finished before are kept."""
    from memrun.llm import cache as cache_module

    real_hold = cache_module.CallCache.hold
    held = []

    def hold_then_fill(self, key, result):
        held.append(key)
        if len(held) == 3:  # from here on the file can grow no more
            self.commit()
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            self._db.execute(f"PRAGMA max_page_count = {pages}")
        return real_hold(self, key, result)

    monkeypatch.setattr(cache_module.CallCache, "hold", hold_then_fill)
    code, out = run_memrun(tmp_path, "judge=gpt41", "concurrency=1", "repeats=3")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "Traceback" not in "\n".join(err)
    assert err[-1].startswith("memrun: error: cannot write to the call cache") and "full" in err[-1]
    kept = pq.read_table(out / "items.parquet")
    assert kept.num_rows >= 1 and read_run(out).instrument.status == "failed"
