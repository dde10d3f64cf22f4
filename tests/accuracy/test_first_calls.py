"""An endpoint whose first calls all fail the same way stops the run in one line
(memrun/llm/first_calls.py), as a refused key does; once a call has succeeded, failures are
the items' own. And while calls wait on a server, the progress line says so."""

from __future__ import annotations

import pytest

from accuracy.helpers import rows, run_memrun
from memrun.cli import main
from memrun.errors import CallError, EndpointFailed
from memrun.llm.endpoint import Endpoint
from memrun.llm.first_calls import FIRST_CALLS, FirstCalls
from servers.openai_server import Reply


def chat_requests(server) -> int:
    return len([e for e in server.log if e.path.endswith("/chat/completions")])


@pytest.mark.parametrize(("status", "fix"), [
    (404, "serves the model 'gpt-4.1-mini'"),
    (405, "does not take POST .../chat/completions"),
    (501, "does not take POST .../chat/completions"),
])
def test_an_endpoint_failing_every_call_alike_stops_the_run_in_one_line(llm_env, tmp_path, capsys, status, fix):
    llm_env.script(*[Reply.error(status, "The model `gpt-4.1-mini` does not exist", "model_not_found")] * 200)
    rc, out = run_memrun(tmp_path, "judge=exact", "concurrency=4", "http_attempts=2")
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning:")]
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"memrun: error: the first {FIRST_CALLS} calls to {llm_env.base_url} all failed "
                             f"the same way (HTTP {status}: ")
    assert "run stops here" in err[0] and fix in err[0] and "$OPENAI_BASE_URL" in err[0]
    # not one doomed call per item (30 items): the calls in flight when the 8th failed at most
    attempts = 2 if status >= 500 else 1
    assert chat_requests(llm_env) <= (FIRST_CALLS + 4) * attempts
    assert len(rows(out)) < 30


def test_failures_after_a_success_are_the_items_own(llm_env, tmp_path):
    llm_env.script(Reply.ok("an answer"), *[Reply.error(404, "gone")] * 20)  # then 9 answers
    rc, out = run_memrun(tmp_path, "judge=exact", "concurrency=1", "max_error_share=1.0")
    assert rc == 0
    final = rows(out)
    assert len(final) == 30 and sum(r["error"] is not None for r in final) == 20


def test_failing_in_more_than_one_way_or_by_overflow_is_not_a_broken_endpoint():
    watch = FirstCalls(Endpoint("http://127.0.0.1:9/v1", "k", url_from="$OPENAI_BASE_URL"))
    for _ in range(3 * FIRST_CALLS):  # a prompt too long is the item's own: not counted
        watch.failed(CallError("context_overflow", "HTTP 400: context_length_exceeded", 400), "m")
    for _ in range(FIRST_CALLS - 1):
        watch.failed(CallError("http", "HTTP 404: no", 404), "m")
    watch.failed(CallError("http", "HTTP 400: bad", 400), "m")
    assert watch.settled
    watch.failed(CallError("http", "HTTP 404: no", 404), "m")  # settled: nothing raised any more

    fresh = FirstCalls(Endpoint("http://127.0.0.1:9/v1", "k"))
    for _ in range(FIRST_CALLS - 1):
        fresh.failed(CallError("malformed", "unreadable reply: not JSON", None), "m")
    with pytest.raises(EndpointFailed, match="not an OpenAI-compatible chat API: check the base URL"):
        fresh.failed(CallError("malformed", "unreadable reply: not JSON", None), "m")


def test_calls_waiting_on_a_silent_server_show_in_the_progress_line(llm_env, tmp_path, capsys, monkeypatch):
    """A server that accepts and never replies in time: the line says the calls in flight (it
    said '0 calls' while they waited), and the first timeout stops the run, not retried."""
    monkeypatch.setenv("MEMRUN_PROGRESS_SECONDS", "0.2")
    llm_env.latency = 5.0
    rc = main(["axis=accuracy", "judge=exact", "concurrency=4", "request_timeout_s=1.5", "progress=true",
               f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err
    assert rc == 2 and "no complete reply within the request timeout" in err
    lines = [line for line in err.splitlines() if line.startswith("progress: ")]
    assert any("4 calls (4 in flight)" in line for line in lines), lines
    assert chat_requests(llm_env) == 4  # one attempt each: a retry would wait as long again


def test_a_judge_model_the_server_does_not_serve_stops_the_run_though_the_reader_answers(llm_env, tmp_path,
                                                                                         capsys):
    llm_env.routes["/v1/chat/completions"] = judge_missing(llm_env.routes["/v1/chat/completions"])
    rc, _ = run_memrun(tmp_path, "judge=gpt41", "concurrency=2")
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning:")]
    assert rc == 2 and len(err) == 1, err
    assert "all failed the same way (HTTP 404" in err[0] and "serves the model 'gpt-4.1'" in err[0]


def judge_missing(route):
    """The chat route, answering 404 to every request for the judge's model (gpt-4.1)."""
    def handle(body: dict) -> Reply:
        if body.get("model") == "gpt-4.1":
            return Reply.error(404, "The model `gpt-4.1` does not exist", "model_not_found")
        return route(body)
    return handle
