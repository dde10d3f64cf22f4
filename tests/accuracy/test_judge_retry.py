"""Issue 31, point 2: a judge reply that cannot be parsed is re-asked once with the parse error
shown (a comparability field of the instrument), labels read from the retry are counted, and
a reply still unparseable is an error of the judge stage that counts against max_error_share."""

from __future__ import annotations

import zlib

import pytest

from accuracy.helpers import execute_run, field, gold_judge, is_judge, rows, summary
from memrun.errors import MemrunError
from memrun.io.reader import read_run
from servers.openai_server import prompt_text

MESSY = "Verdict: correct-ish, mostly right I'd say"


def _messy_half(body: dict, stubborn: bool) -> str:
    """Judge prompts of about half the questions get a messy first reply; the retry (which
    shows the parse error) gets a clean verdict unless ``stubborn``. Readers echo the question."""
    text = prompt_text(body)
    if not is_judge(text):
        return "no idea"
    messy = zlib.crc32((field(text, "Question") or "").encode()) % 2 == 0
    if messy and ("could not be read" not in text or stubborn):
        return MESSY
    return gold_judge(text)


def test_an_unparseable_reply_is_asked_again_once_and_counted(llm_env, tmp_path) -> None:
    llm_env.responder = lambda body: _messy_half(body, stubborn=False)
    out, printed = execute_run(tmp_path, "judge=gpt41")
    table = rows(out)
    retried = [r for r in table if r["judge_retried"]]
    assert retried and len(retried) < len(table) and all(r["error"] is None for r in table)
    retries = [e.body for e in llm_env.log if e.body and "could not be read" in prompt_text(e.body)]
    assert len(retries) == len(retried)
    assert "no verdict in reply" in prompt_text(retries[0])  # the parse error is shown to the judge
    assert MESSY in prompt_text(retries[0])  # ... after its own reply
    s = summary(out)
    assert s["caveats"]["judge_retried"] == len(retried) and s["caveats"]["judge_unparseable"] == 0
    assert f"judge: {len(retried)} labels from a retry, 0 unparseable after it" in printed
    inst = read_run(out).instrument
    assert inst.judge_retry == "once, showing the parse error" and "judge_retry" in inst.comparability_fields()
    assert inst.status == "complete"


def test_a_reply_unparseable_after_the_retry_is_a_judge_error_that_degrades_the_run(llm_env, tmp_path) -> None:
    llm_env.responder = lambda body: _messy_half(body, stubborn=True)
    with pytest.raises(MemrunError, match="rows failed .* more than max_error_share=0.1"):
        out, _ = execute_run(tmp_path, "judge=gpt41")
    out = tmp_path / "run"
    table = rows(out)
    failed = [r for r in table if r["error"]]
    assert failed and all(r["error"].startswith("judge: judge reply unparseable after a retry") for r in failed)
    assert all(r["label"] == "error" for r in failed)
    s = summary(out)
    assert s["status"] == "degraded" and s["caveats"]["judge_unparseable"] == len(failed)
    assert s["overall_all"]["errors"] == len(failed)  # out of the means, counted
