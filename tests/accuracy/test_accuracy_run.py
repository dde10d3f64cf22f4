"""End-to-end accuracy runs (memrun in-process) against the loopback server."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from accuracy.helpers import KEY, execute_run, field, gold_judge, is_judge, rows, run_memrun, summary
from memrun.benchmarks.synthetic import Synthetic
from memrun.cli import main
from memrun.errors import RunFailed
from memrun.io.reader import read_run
from servers.openai_server import Reply, prompt_text

GOLD = {item.question: item.answer for item in Synthetic().load(Path(".")).items()}
N_ITEMS = len(GOLD)


def gold_reader(body: dict) -> str:
    """Judge prompts get a gold-based verdict; reader prompts get the gold answer."""
    text = prompt_text(body)
    return gold_judge(text) if is_judge(text) else str(GOLD.get(field(text, "Question") or "", "no idea"))


@pytest.fixture
def server(llm_env):
    llm_env.responder = gold_reader
    return llm_env


def test_rows_instrument_and_a_free_second_run(server, tmp_path, capsys):
    out, printed = execute_run(tmp_path, "judge=gpt41", "repeats=2")
    table = rows(out)
    assert len(table) == 2 * N_ITEMS and {r["repeat"] for r in table} == {0, 1}
    assert all(r["label"] == "correct" and r["reader_answer"] == r["answer"] for r in table)
    assert all(r["context_tokens"] == 10 and r["completion_tokens"] == 5 and r["answer_latency_ms"] > 0 for r in table)
    assert server.count() == 4 * N_ITEMS  # reader + judge per item x repeat
    inst = read_run(out).instrument
    prompt = resources.files("memrun.llm").joinpath("prompts/default.md").read_bytes()
    assert inst.status == "complete" and inst.axis == "accuracy" and inst.repeats == 2
    assert inst.reader_model == "gpt-4.1-mini" and inst.reader_prompt_sha256 == hashlib.sha256(prompt).hexdigest()
    assert inst.judge_model == "gpt-4.1" and len(inst.judge_prompt_sha256) == 64
    assert inst.denominator == "correct+wrong+abstained" and inst.fake_providers is False
    assert inst.llm_endpoints == {"reader": server.base_url, "judge": server.base_url}  # where the calls went
    s = summary(out)
    assert s["overall_all"]["accuracy"] == 1.0 and s["calls"]["made"] == 4 * N_ITEMS

    again, printed = execute_run(tmp_path, "judge=gpt41", "repeats=2", name="again")
    assert server.count() == 4 * N_ITEMS  # nothing new at the server
    assert all(r["reader_cache_hit"] and r["judge_cache_hit"] for r in rows(again))
    assert summary(again)["calls"] == {**summary(again)["calls"], "made": 0, "cached": 4 * N_ITEMS}
    # memrun compare reads the labels and the denominator of two accuracy runs
    assert main(["compare", str(out), str(again)]) == 2  # identical arms: unresolved, inside the null band
    assert "denominator correct+wrong+abstained" in capsys.readouterr().out

    # One more repeat and a second judge: only the new calls are made.
    more, printed = execute_run(tmp_path, "judge=gpt41", "repeats=3", "judge2=gpt4o", "judge2_sample=10", name="more")
    assert server.count() == 4 * N_ITEMS + 2 * N_ITEMS + 3 * 10
    j2 = summary(more)["judge2"]
    assert j2["n_rows"] == 30 and j2["agreement"] == 1.0


def test_missing_key_fails_in_one_line_before_any_call(server, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY")
    rc, out = run_memrun(tmp_path, "judge=gpt41")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "$OPENAI_API_KEY (reader.api_key_env) is not set" in err[0]
    assert "$OPENAI_BASE_URL" in err[0]  # where that key would go
    assert server.count() == 0 and not (out / "items.parquet").exists()


def test_no_judge_names_the_pinned_one(server, tmp_path, capsys):
    rc, _ = run_memrun(tmp_path, "benchmark=synthetic")
    assert rc == 2 and "judge=gpt41 (pinned for synthetic)" in capsys.readouterr().err


def test_the_key_is_written_nowhere(server, tmp_path):
    # A gateway that echoes the key into replies and error bodies.
    server.responder = lambda body: f"echo {KEY} " + gold_reader(body)
    server.script(Reply.error(400, f"invalid key {KEY}"), Reply.error(404, f"key {KEY} may not use this model"))
    rc, out = run_memrun(tmp_path, "judge=exact")
    assert rc == 0
    table = rows(out)
    assert sum(r["label"] == "error" for r in table) == 2 and any("***" in (r["error"] or "") for r in table)
    assert any("***" in (r["reader_answer"] or "") for r in table)
    for folder in (out, tmp_path / "cache"):
        for path in folder.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in json.dumps(table)


USER_ARM = """_target_: memrun.arms.bm25.BM25Arm
name: mine
headers:
  Authorization: Bearer tok-in-a-yaml-file-0123
"""


@pytest.mark.parametrize(("flags", "overrides", "literal", "message"), [
    ([], ["data_dir=/data/sk-live-abcdefghijklmnopqrstuvwxyz123456"], "sk-live-abcdefghijklmnopqrstuvwxyz123456",
     "data_dir: a literal key or token"),
    ([], ["+arm.headers.X-Api-Key=k3y"], "k3y", "arm.headers.X-Api-Key: a credential in a header"),
    (["-m"], ["+arm.headers.cookie=session-abc"], "session-abc", "arm.headers.cookie: a credential in a header"),
    (["--config-dir", "CONF"], ["arm=mine"], "tok-in-a-yaml-file-0123", "arm.headers.Authorization: a credential"),
])
def test_a_literal_key_in_the_config_is_refused_and_scrubbed(server, tmp_path, capsys, flags, overrides, literal,
                                                              message):
    conf = tmp_path / "conf"
    (conf / "arm").mkdir(parents=True)
    (conf / "arm" / "mine.yaml").write_text(USER_ARM)
    runs = tmp_path / "runs"
    rc = main([*(str(conf) if f == "CONF" else f for f in flags), "axis=accuracy", "judge=gpt41", "progress=false",
               f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={runs / 'run'}", f"hydra.sweep.dir={runs / 'sweep'}",
               *overrides])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and message in err[-1], err
    assert "auth_token_env" in err[-1] or "api_key_env" in err[-1]
    assert server.count() == 0
    for path in runs.rglob("*"):  # the run folder, a sweep's multirun.yaml: every file
        if path.is_file():
            assert literal.encode() not in path.read_bytes(), path


def test_request_errors_are_counted_and_excluded(server, tmp_path):
    server.script(
        Reply.rate_limited(retry_after="0.2"), Reply.server_error(), Reply.malformed(), Reply.error(400, "bad request")
    )
    out, printed = execute_run(tmp_path, "judge=gpt41", "http_attempts=2")
    table = rows(out)
    errors = [r for r in table if r["label"] == "error"]
    assert len(errors) == 2 and all(r["error"].startswith(("reader: ", "judge: ")) for r in errors)
    s = summary(out)
    o = s["overall_all"]
    assert o["errors"] == 2 and o["correct"] == N_ITEMS - 2 and o["accuracy"] == 1.0
    assert s["calls"]["rate_limit_waits"] == 1 and s["calls"]["server_error_retries"] == 1
    assert s["success_rate"] == pytest.approx((N_ITEMS - 2) / N_ITEMS)


def test_unparseable_verdicts_are_errors_not_misses(server, tmp_path):
    server.responder = lambda body: "INCORRECT-ish" if is_judge(prompt_text(body)) else "x"
    with pytest.raises(RunFailed, match="every item failed .* the first error: .*INCORRECT-ish"):
        execute_run(tmp_path, "judge=gpt41")  # nothing was measured: a failed run, its rows kept
    s = summary(tmp_path / "run")
    assert s["overall_all"]["errors"] == N_ITEMS and s["overall_all"]["wrong"] == 0
    assert s["overall_all"]["accuracy"] is None
    assert s["status"] == read_run(tmp_path / "run").instrument.status == "failed"  # not 'complete'
    assert s["error"].startswith("every item failed") and "INCORRECT-ish" in s["error"]

    import io

    from rich.console import Console

    from memrun.report.accuracy_summary import print_accuracy_summary

    printed = io.StringIO()
    print_accuracy_summary(Console(file=printed, width=200), s, title="t", out_dir="o")
    assert "on overall_all: - |" in printed.getvalue() and "-%" not in printed.getvalue()


def test_token_budget_stops_cleanly_and_a_rerun_continues(server, tmp_path):
    out, printed = execute_run(tmp_path, "judge=gpt41", "max_tokens_total=300", "concurrency=2")
    done = rows(out)
    assert 0 < len(done) < N_ITEMS and read_run(out).instrument.status == "stopped"
    assert summary(out)["stopped"].startswith("max_tokens_total=300")
    first_calls = server.count()
    assert first_calls <= 300 // 15 + 2  # 15 tokens per call; at most the calls in flight overshoot

    rest, printed = execute_run(tmp_path, "judge=gpt41", name="rest")
    assert len(rows(rest)) == N_ITEMS
    assert server.count() == 2 * N_ITEMS  # every call made exactly once over both runs


def test_fake_providers_are_recorded_and_loud(server, tmp_path):
    out, printed = execute_run(tmp_path, "judge=exact", "reader.provider=fake")
    assert read_run(out).instrument.fake_providers is True
    assert summary(out)["fake_providers"] is True
    assert "FAKE PROVIDERS" in printed


def test_an_arm_that_answers_replaces_the_reader(server, tmp_path):
    # five of 30 items unanswered: 83% < min_coverage=0.95 would be a partial headline (exit 2)
    out, printed = execute_run(tmp_path, "judge=gpt41", "arm._target_=accuracy.answering_arm.AnsweringArm",
                               "min_coverage=0.8")
    assert summary(out)["coverage"]["answered"] == N_ITEMS - 5 and not summary(out)["headline"]["partial"]
    table = rows(out)
    assert all(r["answer_source"] == "arm" for r in table)
    assert server.count() == N_ITEMS - 5  # judge only; five items (':0') have no answer
    missing = [r for r in table if r["item_id"].endswith(":0")]
    assert len(missing) == 5 and all(r["label"] == "error" and "no answer" in r["error"] for r in missing)
    assert read_run(out).instrument.reader_model == "arm:bm25"


def test_context_overflow_skip_and_truncate(server, tmp_path):
    # nearly every item is skipped here: accept that share of errors (else the run ends degraded)
    out, printed = execute_run(tmp_path, "judge=exact", "reader.max_context_tokens=3", "reader.overflow=skip",
                               "max_error_share=1")
    table = rows(out)
    skipped = [r for r in table if (r["error"] or "").startswith("context_overflow")]
    assert skipped and all(r["label"] == "error" for r in skipped)
    assert server.count() == N_ITEMS - len(skipped)
    assert read_run(out).instrument.context_policy.startswith("skip over 3 tokens")

    out, printed = execute_run(tmp_path, "judge=exact", "reader.max_context_tokens=12", name="truncated")
    table = rows(out)
    assert any(r["context_dropped"] for r in table) and not any(r["label"] == "error" for r in table)
    emptied = sum(1 for r in table if r["repeat"] == 0 and r["n_retrieved"] and r["context_dropped"] == r["n_retrieved"])
    warnings = [w for w in read_run(out).instrument.warnings if "dropped every retrieved hit" in w]
    assert emptied and warnings == [
        f"reader.max_context_tokens=12 dropped every retrieved hit of {emptied} item(s): "
        "their answers saw no memories; raise the limit or lower arm.top_k"]

    out, _ = execute_run(tmp_path, "judge=exact", "reader.max_context_tokens=100000", name="roomy")
    assert not any("dropped every" in w for w in read_run(out).instrument.warnings)


def test_pinned_reader_override_warns_and_is_recorded(server, tmp_path, capsys):
    out, _ = execute_run(tmp_path, "judge=gpt4o", "reader.model=gpt-4o-mini-2024-07-18")
    warned = capsys.readouterr().err  # warnings go to stderr, results to stdout
    assert "overrides synthetic's pinned gpt-4.1-mini" in warned and "not synthetic's pinned judge" in warned
    inst = read_run(out).instrument
    assert inst.reader_model == "gpt-4o-mini-2024-07-18" and any("overrides" in w for w in inst.warnings)


def test_retrieval_stays_just_ahead_of_the_answers(server, tmp_path):
    from accuracy.answering_arm import INGESTED

    server.latency = 0.05
    INGESTED.clear()
    execute_run(tmp_path, "judge=gpt41", "concurrency=2", "arm._target_=accuracy.answering_arm.RecordingArm")
    requests = sorted(e.t for e in server.log)
    assert len(INGESTED) == 5 and len(requests) == 2 * N_ITEMS
    # Five histories of six items: the next one is ingested once fewer than two items
    # wait for a slot, so only the first was ingested before any call, and the last
    # not before most of the earlier items' calls were made.
    assert sum(t < requests[0] for t in INGESTED) == 1
    assert sum(t < INGESTED[-1] for t in requests) >= 2 * (N_ITEMS - 6 - 2) - 2


def test_a_rerun_retrieves_and_rows_match(server, tmp_path):
    first, _ = execute_run(tmp_path, "judge=gpt41", "repeats=2", name="first")
    made = server.count()
    second, _ = execute_run(tmp_path, "judge=gpt41", "repeats=2", name="second")
    assert server.count() == made
    key = ("item_id", "repeat", "label", "reader_answer", "retrieved_keys", "rr")
    assert sorted(tuple(str(r[k]) for k in key) for r in rows(first)) == sorted(tuple(str(r[k]) for k in key) for r in rows(second))
    assert all(r["reader_cache_hit"] and r["judge_cache_hit"] for r in rows(second))


def test_unusable_cache_folders_and_timeouts_are_config_errors(server, tmp_path):
    import sqlite3

    from memrun.errors import ConfigError

    (tmp_path / "afile").write_text("x")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with sqlite3.connect(foreign / "calls.sqlite") as db:
        db.execute("CREATE TABLE replies (key TEXT PRIMARY KEY, value TEXT)")
    cases = [
        (f"cache_dir={tmp_path / 'afile'}", "is a file; point cache_dir at a folder"),
        (f"cache_dir={foreign}", "has a table 'replies' that memrun did not write (columns key, value)"),
        ("request_timeout_s=-1", "request_timeout_s=-1.0: must be a positive number of seconds"),
        ("request_timeout_s=0", "request_timeout_s=0.0: must be a positive number of seconds"),
    ]
    for override, message in cases:
        with pytest.raises(ConfigError, match=re.escape(message)):
            execute_run(tmp_path, "judge=gpt41", override)
    assert server.count() == 0


def test_a_second_judge_that_mostly_errors_is_counted_and_its_agreement_withheld(server, tmp_path):
    """judge2 answers nothing it can parse on 27 of 30 items: the agreement on the 3 left
    read 100% with the run complete and no warning. The second judge never changes a label,
    so its errors are not the headline's (the run stays complete, exit 0), but they are
    counted apart from the first judge's, with their denominator, and past max_error_share
    the agreement is not reported."""
    ok = set(list(GOLD)[:3])

    def replies(body: dict) -> str:
        text = prompt_text(body)
        if is_judge(text) and str(body.get("model")).startswith("gpt-4o") and not any(q in text for q in ok):
            return "I would rather not say."  # unparseable, and again when re-asked
        return gold_reader(body)

    server.responder = replies
    out, printed = execute_run(tmp_path, "judge=gpt41", "judge2=gpt4o", "judge2_sample=null")
    s = summary(out)
    j2 = s["judge2"]
    assert (j2["n_rows"], j2["n_compared"], j2["n_errors"], j2["n_first_judge_errors"]) == (30, 3, 27, 0)
    assert j2["agreement"] is None and j2["cohen_kappa"] is None and "27 of 30" in j2["withheld"]
    assert s["status"] == "complete" and s["overall_all"]["accuracy"] == 1.0  # the headline is the first judge's
    assert "second judge errored on 27 of 30 rows (90%)" in printed and "max_error_share=0.1" in printed
    assert "agreement not reported" in printed
    assert any("second judge errored on 27 of 30 rows" in w for w in read_run(out).instrument.warnings)

    # within max_error_share the agreement is reported, on its denominator
    again, printed = execute_run(tmp_path, "judge=gpt41", "judge2=gpt4o", "judge2_sample=null", "max_error_share=0.95",
                                 name="lenient")
    j2 = summary(again)["judge2"]
    assert j2["agreement"] == 1.0 and j2.get("withheld") is None
    assert "agreement 100.0% on 3 of 30 rows (27 errored: second judge 27, first judge 0)" in printed
