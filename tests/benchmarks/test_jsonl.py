"""memrun's JSONL benchmark format: the template, the records it makes, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrun.benchmarks.jsonl import JsonlBenchmark, parse_file
from memrun.errors import ConfigError, DataError

TEMPLATE = Path(__file__).parent.parent.parent / "conf" / "templates" / "benchmark.jsonl"


def _write(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "bench.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_template_loads_both_line_kinds() -> None:
    dataset = JsonlBenchmark(path=str(TEMPLATE)).load(Path("."))
    team, solo = dataset.groups
    assert dataset.split == "benchmark" and dataset.gold_match == "key"
    assert [r.key for r in team.records] == ["team-01:0", "team-01:1", "team-01:2"]
    assert team.records[2].session == "s2" and team.records[2].timestamp == "2024-05-20"
    q0, q1 = team.items
    assert q0.gold_keys == ("team-01:2",) and q0.gold_sessions == ("s2",) and q0.cluster == "team-01"
    assert q1.abstention and q1.gold_keys == ()
    (item,) = solo.items
    assert item.item_id == solo.history_id == "solo-01" and item.cluster == "infra"
    assert solo.records[0].key == "solo-01:0" and solo.records[0].text.startswith("user: The staging")


def test_defaults_for_ids_categories_and_substring_gold(tmp_path: Path) -> None:
    path = _write(tmp_path, {"conversation_id": "c", "history": [{"role": "user", "content": "invoices on the 3rd"}],
                             "questions": [{"question": "when?", "answer": 3, "gold_keys": ["3rd"]}]})
    dataset = JsonlBenchmark(path=str(path), gold_match="substring", split="mine").load(tmp_path)
    (item,) = dataset.groups[0].items
    assert (item.item_id, item.category, item.answer, dataset.split) == ("c:0", "uncategorized", "3", "mine")
    with pytest.raises(DataError, match=r"bench.jsonl:1: questions\[0\].gold_keys\[0\]: '3rd' names no turn"):
        JsonlBenchmark(path=str(path)).load(tmp_path)  # gold_match=key: gold must name a turn


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r":1: not valid JSON \(Expecting property name enclosed in double quotes at column 2\)"),
        ("[1, 2]", r":1: expected a JSON object, got a list"),
        ({"history": []}, r":1: expected a conversation \(conversation_id, history, questions\) or an item"),
        ({"item_id": "x", "history": [], "question": "q"}, r":1: history: must be a non-empty list of turns"),
        ({"item_id": "x", "history": [{"role": "user"}], "question": "q"}, r":1: history\[0\].content: is required"),
        ({"item_id": "x", "history": [{"role": "user", "content": "a", "ky": "k"}], "question": "q"},
         r":1: history\[0\].ky: unknown field; did you mean 'key'\?"),
        ({"item_id": "x", "history": [{"role": "user", "content": "a"}], "question": "q", "gold_key": ["x:0"]},
         r":1: gold_key: unknown field; did you mean 'gold_keys'\?"),
        ({"item_id": "x", "history": [{"role": "user", "content": "a", "key": "k"},
                                      {"role": "user", "content": "b", "key": "k"}], "question": "q"},
         r":1: history\[1\].key: 'k' repeats history\[0\].key"),
        ({"conversation_id": "c", "history": [{"role": "user", "content": "a"}], "questions": [{"question": "q",
          "gold_sessions": ["s1"]}]}, r":1: questions\[0\].gold_sessions\[0\]: 's1' names no session"),
        ({"item_id": "x", "history": [{"role": "user", "content": "a"}], "question": "q", "abstention": "yes"},
         r":1: abstention: must be true or false"),
        ({"item_id": "x", "history": [{"role": "user", "content": "a"}], "question": "q", "answer": [1]},
         r":1: answer: must be text or a number"),
        ('{"item_id": "x", "history": [{"role": "user", "content": "a"}], "question": "q", "gold_keys": ["x:0"], '
         '"gold_keys": []}', r":1: key 'gold_keys' is given twice in one object; JSON keeps only the last"),
        ('{"item_id": "x", "history": [{"role": "user", "content": "a", "content": "b"}], "question": "q"}',
         r":1: key 'content' is given twice"),
    ],
)
def test_errors_name_file_line_and_field(tmp_path: Path, line: object, message: str) -> None:
    path = _write(tmp_path, line)
    with pytest.raises(DataError, match=message) as err:
        JsonlBenchmark(path=str(path)).load(tmp_path)
    assert str(err.value).startswith(f"{path}:") and "\n" not in str(err.value)


def test_duplicate_ids_name_the_first_line_and_all_errors_are_collected(tmp_path: Path) -> None:
    item = {"item_id": "x", "history": [{"role": "user", "content": "a"}], "question": "q"}
    conv = {"conversation_id": "x2", "history": [{"role": "user", "content": "a"}],
            "questions": [{"item_id": "x", "question": "q"}]}
    path = _write(tmp_path, "// a comment", item, "", conv, "{bad", {"item_id": "x", **{k: v for k, v in item.items() if k != "item_id"}})
    parsed = parse_file(path)
    assert parsed.errors == [
        f"{path}:4: item_id 'x' already used on line 2",
        f"{path}:5: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
        f"{path}:6: history id 'x' already used on line 2",
    ]
    assert len(parsed.groups) == 1
    with pytest.raises(DataError, match=r"already used on line 2 \(and 2 more; memrun validate .* lists them\)"):
        JsonlBenchmark(path=str(path)).load(tmp_path)


@pytest.mark.parametrize("document", [
    [{"sample_id": "x", "conversation": {}, "qa": []}],  # LoCoMo-format: a list over many lines
    {"history_id": "h", "turns": []},  # one pretty-printed object
])
def test_a_whole_json_document_is_one_error_naming_the_right_benchmark(tmp_path: Path, document: object) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(document, indent=2))
    with pytest.raises(DataError) as err:
        JsonlBenchmark(path=str(path)).load(tmp_path)
    message = str(err.value)
    assert message.startswith(f"{path}:1: one JSON document over many lines, not JSON Lines")
    assert "benchmark=locomo" in message and "cut short" not in message and "more;" not in message
    assert len(parse_file(path).errors) == 1
    path.write_text('[{"history_id": "h", "turns": []}]\n')  # a whole list on one line: what is wrong with that line
    assert "one JSON document" not in parse_file(path).errors[0]


def test_missing_path_file_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"benchmark=jsonl needs benchmark.path=FILE"):
        JsonlBenchmark(path=None)
    with pytest.raises(DataError, match=r"benchmark.path=.*nope.jsonl: no such file"):
        JsonlBenchmark(path=str(tmp_path / "nope.jsonl")).load(tmp_path)
    path = _write(tmp_path, "// only a comment")
    with pytest.raises(DataError, match="no conversation or item lines"):
        JsonlBenchmark(path=str(path)).load(tmp_path)


def test_every_problem_of_a_line_is_listed_with_a_count_at_the_end(tmp_path: Path, capsys) -> None:
    from memrun.cli import main

    bad = {"conversation_id": "c", "extra": 1,
           "history": [{"role": "user"}, {"role": "user", "content": "a", "ky": "k"}, "turn"],
           "questions": [{"question": "q", "gold_keys": ["c:9"], "abstention": "yes"},
                         {"item_id": "c:0", "answer": [1]}]}
    path = _write(tmp_path, {"item_id": "fine", "history": [{"role": "user", "content": "a"}], "question": "q"}, bad)
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{path}:2: {problem}" for problem in [
        "extra: unknown field; fields here: conversation_id, history, questions",
        "history[0].content: is required",
        "history[1].ky: unknown field; did you mean 'key'? fields here: role, content, key, timestamp, session",
        "history[2]: expected an object with role and content",
        "questions[0].gold_keys[0]: 'c:9' names no turn of this history",
        "questions[0].abstention: must be true or false",
        "questions[1].question: is required",
        "questions[1].answer: must be text or a number",
        "questions[1].item_id: 'c:0' already used by questions[0]",
    ]]
    assert err == f"memrun: error: {path}: 9 errors\n"
    with pytest.raises(DataError, match=r"bench.jsonl:2: extra: unknown field; .* \(and 8 more; memrun validate"):
        JsonlBenchmark(path=str(path)).load(tmp_path)  # a run stops at the first, pointing at the rest


def test_a_problem_two_checks_meet_is_listed_once(tmp_path: Path) -> None:
    """A non-text item_id is read by the field check and again by the id check: it was printed twice."""
    path = _write(tmp_path, {"item_id": 5, "history": [{"role": "user", "content": "a"}], "question": "q"})
    assert parse_file(path).errors == [f"{path}:1: item_id: must be non-empty text, got 5"]


def test_a_broken_history_does_not_also_fail_every_gold_key(tmp_path: Path) -> None:
    path = _write(tmp_path, {"item_id": "x", "history": "none", "question": "q", "gold_keys": ["x:0"]})
    assert parse_file(path).errors == [f"{path}:1: history: must be a non-empty list of turns"]


@pytest.mark.parametrize("depth", [100, 100_000])
def test_a_deeply_nested_line_is_one_line_of_error_not_a_traceback(tmp_path: Path, depth: int) -> None:
    """Nested past the depth limit (and past what json can read at all): one error line naming
    the file and line; the other lines are still checked."""
    item = {"item_id": "x", "history": [{"role": "user", "content": "a"}], "question": "q"}
    deep = '{"item_id": "y", "history": [], "question": "q", "extra": ' + "[" * depth + "]" * depth + "}"
    path = _write(tmp_path, item, deep)
    parsed = parse_file(path)
    assert parsed.errors == [f"{path}:2: nests objects and lists deeper than 64 levels; a benchmark line needs a few"]
    with pytest.raises(DataError, match="deeper than 64 levels") as err:
        JsonlBenchmark(path=str(path)).load(tmp_path)
    assert "\n" not in str(err.value)
