"""Prompt files: placeholders rendered exactly once, errors named."""

from __future__ import annotations

import pytest

from memrun.errors import ConfigError
from memrun.llm.prompts import Prompt, load_prompt


def test_render_replaces_every_placeholder_and_nothing_else():
    prompt = Prompt("p", "{{question}} asks; {{ gold }} is gold.\n{{question}}{{answer}}", "sha")
    values = {"question": "Q?", "gold": r"a \1 {{answer}}", "answer": ""}
    # a value is inserted as is: backslashes and braces in it are not expanded again
    assert prompt.render(values) == "Q? asks; a \\1 {{answer}} is gold.\nQ?"
    assert Prompt("p", "no placeholder", "sha").render({}) == "no placeholder"
    assert prompt.fields == {"question", "gold", "answer"}
    with pytest.raises(KeyError):
        prompt.render({"question": "Q?"})


def test_load_prompt_names_the_key_and_the_missing_placeholder(tmp_path):
    path = tmp_path / "mine.md"
    path.write_text("Answer {{question}}")
    assert load_prompt("memrun.llm", str(path), "reader.prompt", ["question"]).render({"question": "x"}) == "Answer x"
    with pytest.raises(ConfigError, match=r"reader.prompt=.*lacks \{\{context\}\}"):
        load_prompt("memrun.llm", str(path), "reader.prompt", ["question", "context"])
    with pytest.raises(ConfigError, match="no such built-in prompt"):
        load_prompt("memrun.llm", "nope", "reader.prompt")


def test_context_lines_memo_gives_the_lines_made_without_it():
    """A history's memo of context lines (one per (key, text) of a hit) changes no line: an
    empty hit text takes the record's, an unknown key stands for itself, dates as they are."""
    from memrun.llm.reader import context_lines
    from memrun.records import Hit, Record

    records = {"a": Record("a", "alpha  text\nhere", "2023-05-08"), "b": Record("b", "beta", None)}
    asks = [[Hit("a", 1.0, ""), Hit("b", 0.5, "b  own\ttext")], [Hit("b", 2.0, ""), Hit("a", 1.0, "")],
            [Hit("z", 1.0, ""), Hit("a", 1.0, "other text"), Hit("b", 0.1, "b  own\ttext")]]
    memo: dict[tuple[str, str], str] = {}
    for hits in asks:
        assert context_lines(hits, records, memo) == context_lines(hits, records)
    assert context_lines(asks[2], records) == ["z", "[2023-05-08] other text", "b own text"]
    assert memo[("a", "")] == "[2023-05-08] alpha text here" and len(memo) == 5
