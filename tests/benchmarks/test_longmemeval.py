"""LongMemEval loader: schema edge cases, gold at two granularities, content-addressed sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import DATE, FILES, loader, question, turn, write_lme
from memrun.benchmarks import lme_scan
from memrun.benchmarks.lme_scan import scan_index
from memrun.benchmarks.longmemeval import LongMemEval
from memrun.errors import ConfigError, DataError, DownloadError

D2 = "2023/06/01 (Thu) 10:00"


def _load(path: Path, **kwargs):
    dataset = loader(path, **kwargs).load(path.parent)
    groups = list(dataset.groups)
    return dataset, groups


def test_items_records_and_gold_at_both_granularities(tmp_path: Path) -> None:
    sessions = [
        ("filler_1", DATE, [turn("user", "hello there"), turn("assistant", "hi")]),
        ("answer_q1_1", D2, [turn("user", "my car is blue", True), turn("assistant", "nice", False)]),
    ]
    path = write_lme(tmp_path / "f.json", [question("q1", sessions, ["answer_q1_1"], superseded_answer="red")])
    dataset, groups = _load(path)
    (group,) = groups
    assert [r.key for r in group.records] == ["filler_1_1", "filler_1_2", "answer_q1_1_1", "answer_q1_1_2"]
    assert group.records[2].text == "user: my car is blue"
    assert group.records[2].timestamp == D2 and group.records[2].session == "answer_q1_1"
    (item,) = group.items
    assert item.item_id == item.history_id == "q1"
    assert item.category == "single-session-user" and item.cluster == "q1"  # questions are the units
    assert item.gold_keys == ("answer_q1_1_1",)
    assert item.gold_sessions == ("answer_q1_1",)
    assert item.extra["superseded_answer"] == "red"
    assert item.abstention is False
    assert dataset.index == [("q1", "single-session-user")] and dataset.n_items == 1
    assert dataset.task_averaged


def test_integer_answer_is_text_and_counted(tmp_path: Path) -> None:
    sessions = [("answer_q_1", DATE, [turn("user", "I have 3 cats", True)])]
    path = write_lme(tmp_path / "f.json", [question("q", sessions, ["answer_q_1"], answer=3, qtype="multi-session")])
    dataset, (group,) = _load(path)
    assert group.items[0].answer == "3" and group.items[0].answer_raw == "3"
    assert dataset.counts["answer_int"] == 1


def test_abstention_questions_have_no_retrieval_gold_and_are_counted(tmp_path: Path) -> None:
    sessions = [("answer_q_1", DATE, [turn("user", "my bike is green", True)])]
    path = write_lme(tmp_path / "f.json", [question("q_abs", sessions, ["answer_q_1"])])
    dataset, (group,) = _load(path)
    item = group.items[0]
    assert item.abstention and item.gold_keys == () and item.gold_sessions == ()
    assert item.gold_keys_raw == ("answer_q_1_1",)  # the published evidence is kept
    assert item.category == "single-session-user"  # counted in its type too
    assert dataset.counts["retrieval_excluded_abstention"] == 1


def test_empty_sessions_and_turns_without_has_answer(tmp_path: Path) -> None:
    sessions = [
        ("empty", DATE, []),
        ("answer_q_1", D2, [turn("user", "no label here"), turn("user", "   ")]),
    ]
    path = write_lme(tmp_path / "f.json", [question("q", sessions, ["answer_q_1"])])
    dataset, (group,) = _load(path)
    assert [r.key for r in group.records] == ["answer_q_1_1"]
    assert group.items[0].gold_keys == () and group.items[0].gold_sessions == ()
    assert dataset.counts["sessions_empty"] == 1
    assert dataset.counts["turns_empty"] == 1
    assert dataset.counts["retrieval_excluded_no_target_turn"] == 1


def test_user_only_roles_leave_assistant_evidence_without_target(tmp_path: Path) -> None:
    sessions = [("answer_q_1", DATE, [turn("user", "recommend a film", False), turn("assistant", "Heat", True)])]
    path = write_lme(tmp_path / "f.json", [question("q", sessions, ["answer_q_1"], qtype="single-session-assistant")])
    dataset, (group,) = _load(path, roles=["user"])
    assert [r.key for r in group.records] == ["answer_q_1_1"]
    assert group.items[0].gold_keys == ()
    assert dataset.counts["retrieval_excluded_no_target_turn"] == 1
    assert dataset.split == "s/user-turns"
    dataset, (group,) = _load(path)  # both roles: the assistant turn is the target
    assert group.items[0].gold_keys == ("answer_q_1_2",)


def test_repeated_session_id_keeps_the_first_occurrence(tmp_path: Path) -> None:
    sessions = [
        ("s1", DATE, [turn("user", "first copy")]),
        ("answer_q_1", DATE, [turn("user", "my car is blue", True)]),
        ("s1", D2, [turn("user", "first copy")]),
        ("s1", D2, [turn("user", "another text under the same id")]),
    ]
    path = write_lme(tmp_path / "f.json", [question("q", sessions, ["answer_q_1"])])
    dataset, (group,) = _load(path)
    s1 = [r for r in group.records if r.session == "s1"]
    assert [(r.text, r.timestamp) for r in s1] == [("user: first copy", DATE)]
    assert dataset.counts["sessions_repeated"] == 2
    assert dataset.counts["sessions_repeated_differ"] == 1


def test_dangling_answer_sessions_and_has_answer_outside_evidence(tmp_path: Path) -> None:
    sessions = [
        ("other", DATE, [turn("user", "labelled but not evidence", True)]),
        ("answer_q_1", D2, [turn("user", "my car is blue", True)]),
    ]
    path = write_lme(tmp_path / "f.json", [question("q", sessions, ["answer_q_1", "answer_q_9"])])
    dataset, (group,) = _load(path)
    assert group.items[0].gold_keys == ("answer_q_1_1",)
    assert group.items[0].gold_sessions == ("answer_q_1",)
    assert dataset.counts["answer_sessions_dangling"] == 1
    assert dataset.counts["has_answer_outside_evidence"] == 1


def test_duplicate_question_id_is_an_error_naming_both_positions(tmp_path: Path) -> None:
    sessions = [("answer_q_1", DATE, [turn("user", "x", True)])]
    path = write_lme(tmp_path / "f.json", [question("q", sessions, []), question("z", sessions, []), question("q", sessions, [])])
    with pytest.raises(DataError, match=r"question_id 'q' occurs twice \(questions 0 and 2\)"):
        loader(path).load(tmp_path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda q: q.update(haystack_dates=[]), r"q1\): haystack_session_ids, haystack_dates and haystack_sessions have 1, 0 and 1"),
        (lambda q: q.update(answer=None), r"q1\): 'answer' must be a string or a number"),
        (lambda q: q["haystack_sessions"][0].append({"role": "user"}), r"q1\): 'haystack_sessions\[0\]\[1\].content' is missing"),
        (lambda q: q.pop("question"), r"q1\): 'question' is missing"),
    ],
)
def test_malformed_question_is_one_line_naming_question_and_field(tmp_path: Path, mutate, message) -> None:
    q = question("q1", [("s", DATE, [turn("user", "x", True)])], ["s"])
    mutate(q)
    path = write_lme(tmp_path / "f.json", [q])
    with pytest.raises(DataError, match=message) as err:
        loader(path).load(tmp_path)  # before the run: no question is streamed
    assert "\n" not in str(err.value)


def test_broken_json_fails_before_any_question_is_produced(tmp_path: Path) -> None:
    good = json.dumps([question("q", [("s", DATE, [turn("user", "x", True)])], ["s"])] * 1)
    path = tmp_path / "f.json"
    path.write_text(good[:-30])  # truncated
    with pytest.raises(DataError, match=r"after 0 questions: not valid JSON: the text ends in the middle of a value, so it was cut short") as err:
        loader(path).load(tmp_path)
    assert "\n" not in str(err.value)  # yajl's arrow drawing is cut off
    path.write_text('{"question_id": "q"}')
    with pytest.raises(DataError, match="expected a JSON array"):
        scan_index(path)
    path.write_text("\n")
    with pytest.raises(DataError, match=r"after 0 questions: not valid JSON: the file is empty \(or only white space"):
        loader(path).load(tmp_path)


def test_shared_sessions_are_the_same_objects(tmp_path: Path) -> None:
    shared = ("pool_1", DATE, [turn("user", "a shared filler"), turn("assistant", "indeed")])
    moved = ("pool_1", D2, shared[2])
    evidence = ("answer_a_1", DATE, [turn("user", "my car is blue", True)])
    path = write_lme(tmp_path / "f.json", [
        question("a", [shared, evidence], ["answer_a_1"]),
        question("b", [shared, ("answer_b_1", DATE, [turn("user", "my car is red", True)])], ["answer_b_1"]),
        question("c", [moved, ("answer_c_1", DATE, [turn("user", "my car is grey", True)])], ["answer_c_1"]),
    ])
    dataset, (a, b, c) = _load(path)
    assert a.records[0] is b.records[0] and a.records[1] is b.records[1]  # same id, turns and date
    assert c.records[0] is not a.records[0] and c.records[0].timestamp == D2  # another date: new record ...
    assert c.records[0].text is a.records[0].text  # ... sharing the text
    assert dataset.counts["sessions_shared"] == 2


def test_original_file_name_is_used_when_only_it_is_present(tmp_path: Path) -> None:
    write_lme(tmp_path / "longmemeval_s.json", [question("q", [("s", DATE, [turn("user", "x", True)])], ["s"])])
    dataset = LongMemEval(split="s", files=FILES, categories={}).load(tmp_path)
    assert any("original release longmemeval_s.json" in w for w in dataset.warnings)
    assert len(list(dataset.groups)) == 1


def test_explicit_path_that_is_not_the_pinned_file_warns(tmp_path: Path) -> None:
    path = write_lme(tmp_path / "mine.json", [question("q", [("s", DATE, [turn("user", "x", True)])], ["s"])])
    files = {"s": {**FILES["s"], "sha256": "0" * 64}}
    dataset = LongMemEval(split="s", files=files, categories={}, path=str(path)).load(tmp_path)
    assert any("is not the published longmemeval_s_cleaned.json" in w for w in dataset.warnings)


def test_offline_download_is_one_line_naming_file_and_address(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/longmemeval_s_cleaned.json"  # nothing listens on port 9
    files = {"s": {**FILES["s"], "url": url}}
    with pytest.raises(DownloadError) as err:
        LongMemEval(split="s", files=files, categories={}).load(tmp_path / "data")
    assert "longmemeval_s_cleaned.json" in str(err.value) and url in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_split_roles_and_cluster_key_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="benchmark.split=x: no such LongMemEval split; choose one of s"):
        LongMemEval(split="x", files=FILES, categories={})
    with pytest.raises(ConfigError, match="benchmark.roles"):
        LongMemEval(split="s", files=FILES, categories={}, roles=["system"])
    with pytest.raises(ConfigError, match="benchmark.cluster_by"):
        LongMemEval(split="s", files=FILES, categories={}, cluster_by="session")


def test_questions_are_clusters_stratified_by_type(tmp_path: Path) -> None:
    """Each question has its own haystack: by default it is its own cluster and its type a
    stratum; cluster_by=question_type clusters by type and declares no strata."""
    path = write_lme(tmp_path / "f.json", [question("q", [("s", DATE, [turn("user", "x", True)])], ["s"])])
    dataset, (group,) = _load(path)
    assert group.items[0].cluster == "q" and dataset.stratify_by == "category"
    dataset, (group,) = _load(path, cluster_by="question_type")
    assert group.items[0].cluster == "single-session-user" and dataset.stratify_by is None


def test_history_records_index_like_a_list(tmp_path: Path) -> None:
    sessions = [
        ("e0", DATE, []),
        ("a", DATE, [turn("user", "one"), turn("assistant", "two")]),
        ("e1", DATE, []),
        ("answer_q_1", DATE, [turn("user", "three", True)]),
        ("e2", DATE, []),
    ]
    path = write_lme(tmp_path / "f.json", [question("q", sessions, ["answer_q_1"])])
    _, (group,) = _load(path)
    flat = list(group.records)
    assert [r.key for r in flat] == ["a_1", "a_2", "answer_q_1_1"]
    assert len(group.records) == 3
    assert [group.records[i] for i in range(-3, 3)] == flat + flat
    assert group.records[1:] == flat[1:]
    with pytest.raises(IndexError):
        group.records[3]


def test_a_second_load_of_the_same_bytes_reuses_the_scan(tmp_path: Path, monkeypatch) -> None:
    """The validating scan is kept under the file's sha256 in memrun's user cache: a second
    load of the same bytes does not scan again and gets the same index; other bytes, a
    damaged cache file or a malformed file are scanned (and a malformed one still fails)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    scans: list[Path] = []
    real = lme_scan.scan_index
    monkeypatch.setattr(lme_scan, "scan_index", lambda path: scans.append(path) or real(path))
    path = write_lme(tmp_path / "f.json", [question(f"q{i}", [("s", DATE, [turn("user", "x", True)])], ["s"])
                                           for i in range(3)])
    first, groups = _load(path)
    second, again = _load(path)
    assert len(scans) == 1 and second.index == first.index == [(f"q{i}", "single-session-user") for i in range(3)]
    assert [g.history_id for g in again] == [g.history_id for g in groups]
    (kept,) = (tmp_path / "cache" / "memrun" / "scans").iterdir()
    assert first.sha256 in kept.name
    kept.write_text("{damaged")
    assert _load(path)[0].index == first.index and len(scans) == 2
    write_lme(path, [question("other", [("s", DATE, [turn("user", "y", True)])], ["s"])])
    assert _load(path)[0].index == [("other", "single-session-user")] and len(scans) == 3
    path.write_text(path.read_text()[:-20])  # truncated: fails, and keeps failing
    for _ in range(2):
        with pytest.raises(DataError, match="not valid JSON"):
            loader(path).load(tmp_path)
    assert len(scans) == 5
