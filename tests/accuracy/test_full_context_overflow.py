"""arm=full_context never cuts a history to fit the reader's context behind the user's back."""

from accuracy.helpers import rows, run_memrun, summary
from servers.openai_server import Reply, prompt_text


def test_a_history_over_the_readers_context_is_an_error_that_says_so(llm_env, tmp_path):
    rc, out = run_memrun(tmp_path, "arm=full_context", "judge=gpt41", "reader.max_context_tokens=60")
    table = rows(out)
    assert table and all(r["error"].startswith("context_overflow: ~") for r in table)
    assert all("arm=full_context is not cut to fit" in r["error"] for r in table)
    assert not any(r["context_dropped"] for r in table)  # nothing was silently dropped
    assert llm_env.count() == 0  # no reader call was made with a cut history
    s = summary(out)
    said = "\n".join(s["warnings"])
    assert "a history over the limit makes its items errors" in said
    assert f"{len(table)} item(s) in" in said and "exceeded reader.max_context_tokens=60" in said
    assert rc == 2  # every item failed: nothing was measured


def test_a_history_that_fits_is_answered_whole(llm_env, tmp_path):
    rc, out = run_memrun(tmp_path, "arm=full_context", "judge=gpt41", "reader.max_context_tokens=100000")
    table = rows(out)
    assert rc == 0 and not any(r["error"] for r in table)
    assert all(r["context_dropped"] == 0 for r in table)


def test_a_history_the_reader_model_refuses_says_it_was_sent_whole(llm_env, tmp_path):
    # reader.max_context_tokens null: no estimate, the model's own window refuses the prompt
    answer = llm_env.routes["/v1/chat/completions"]
    window = 400  # characters: the synthetic histories are longer, the judge's prompts shorter
    llm_env.routes["/v1/chat/completions"] = lambda body: (
        Reply.error(400, "This model's maximum context length is 128 tokens", "context_length_exceeded")
        if len(prompt_text(body)) > window else answer(body))
    rc, out = run_memrun(tmp_path, "arm=full_context", "judge=gpt41")
    table = rows(out)
    assert table and all(r["error"].startswith("context_overflow: HTTP 400") for r in table)
    assert all("the whole history: arm=full_context is not cut to fit" in r["error"] for r in table)
    said = "\n".join(summary(out)["warnings"])
    assert f"{len(table)} item(s) in" in said and "exceeded the reader model's context" in said
    assert rc == 2
