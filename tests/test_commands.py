"""The generator, ``memrun datasets synth``, ``memrun validate`` and the Hydra wiring of the new keys."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from helpers import loader
from memrun import cli
from memrun.benchmarks.lme_synth import TYPE_WEIGHTS, SynthSpec, generate
from memrun.io.reader import read_run

TINY = ["--questions", "12", "--sessions", "5", "--turns", "4", "--turn-chars", "120"]


def test_generator_plants_answers_in_known_turns() -> None:
    questions = list(generate(SynthSpec(questions=500, sessions=4, turns=2, turn_chars=30, seed=3)))
    assert Counter(q["question_type"] for q in questions) == Counter(TYPE_WEIGHTS)  # published proportions
    assert len({q["question_id"] for q in questions}) == 500
    assert 10 <= sum(q["question_id"].endswith("_abs") for q in questions) <= 60
    for q in questions:
        haystack = dict(zip(q["haystack_session_ids"], q["haystack_sessions"]))
        assert set(q["answer_session_ids"]) <= set(haystack)
        planted = [t["content"] for s in q["answer_session_ids"] for t in haystack[s] if t.get("has_answer")]
        assert len(planted) == len(q["answer_session_ids"])  # one marked turn per evidence session
        if q["question_type"] == "single-session-user" and not q["question_id"].endswith("_abs"):
            assert str(q["answer"]) in planted[0]
        if q["question_type"] == "knowledge-update" and not q["question_id"].endswith("_abs"):
            old, new = planted  # the superseded value is stated first, the answer later
            assert q["superseded_answer"] in old and str(q["answer"]) in new
        if q["question_type"] == "multi-session" and not q["question_id"].endswith("_abs"):
            assert q["answer"] == len(planted) and isinstance(q["answer"], int)


def test_generator_edge_case_knobs_reach_the_loader_counts(tmp_path: Path) -> None:
    path = tmp_path / "edge.json"
    assert cli.main(["datasets", "synth", str(path), *TINY, "--empty-sessions", "0.3",
                     "--repeated-sessions", "1.0", "--quiet"]) == 0
    dataset = loader(path).load(tmp_path)
    list(dataset.groups)
    assert dataset.counts["sessions_empty"] > 0
    assert dataset.counts["sessions_repeated"] >= 12


def test_datasets_synth_is_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    assert cli.main(["datasets", "synth", str(a), *TINY, "--seed", "5", "--quiet"]) == 0
    assert cli.main(["datasets", "synth", str(b), *TINY, "--seed", "5", "--quiet"]) == 0
    assert cli.main(["datasets", "synth", str(c), *TINY, "--seed", "6", "--quiet"]) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    assert f"wrote {a}: 12 questions x 5 sessions x 4 turns" in capsys.readouterr().out
    assert cli.main(["datasets", "synth", str(a), "--reuse", "1.5"]) == 2
    assert capsys.readouterr().err == "memrun: error: datasets synth: reuse=1.5: must be a share between 0 and 1\n"


def test_validate_reports_contents_or_every_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lme = tmp_path / "lme.json"
    cli.main(["datasets", "synth", str(lme), *TINY, "--quiet"])
    capsys.readouterr()
    assert cli.main(["validate", str(lme)]) == 0
    assert f"{lme}: valid longmemeval: 12 histories, 12 items" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "x", "history": [], "question": "q"}\n{oops\n')
    assert cli.main(["validate", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{bad}:1: history: must be a non-empty list of turns",
                                f"{bad}:2: not valid JSON (Expecting property name enclosed in double quotes at column 2)"]
    assert err == f"memrun: error: {bad}: 2 errors\n"
    truncated = tmp_path / "cut.json"
    truncated.write_text(lme.read_text()[:5000])
    assert cli.main(["validate", str(truncated)]) == 2
    assert "after 1 question: not valid JSON: the text ends in the middle of a value" in capsys.readouterr().err


def test_validate_tells_a_locomo_file_from_a_longmemeval_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = [{"speaker": "A", "dia_id": "D1:1", "text": "I moved to Oslo"}, {"speaker": "B", "dia_id": "D1:2", "text": "nice"}]
    conv = {"qa": [{"question": "Where did A move?", "answer": "Oslo", "evidence": ["D1:1"], "category": 4}],
            "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": turns}, "sample_id": "c1"}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([conv]))
    assert cli.main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}: valid locomo: 1 histories, 1 items (1 with retrieval gold, 0 marked abstention in the file), 2 records" in out
    assert "adversarial" not in out
    # LoCoMo marks no item abstention: its adversarial category is one by the judges' setting, and validate says so
    conv["qa"].append({"question": "Where did B move?", "adversarial_answer": "Paris", "evidence": [], "category": 5})
    path.write_text(json.dumps([conv]))
    assert cli.main(["validate", str(path)]) == 0
    assert ("category 5 (adversarial, 1 items) is graded as abstention by a judge whose abstention_categories names it"
            in capsys.readouterr().out)
    turns[0]["text"] = ["not text"]
    path.write_text(json.dumps([conv]))
    assert cli.main(["validate", str(path)]) == 2
    assert "c1 session_1[0] (D1:1): 'text' must be a string (or a number), got a list" in capsys.readouterr().err
    assert cli.main(["validate", str(path), "--format", "longmemeval"]) == 2  # asked for: read as LongMemEval


def test_validate_reads_a_locomo_file_cut_short_as_locomo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A LoCoMo file cut before its first 'conversation' key (LoCoMo's first key is 'qa') was
    read as LongMemEval-schema: 'after 0 questions: not valid JSON', naming the wrong format."""
    conv = {"qa": [{"question": "Where did A move?", "answer": "Oslo", "evidence": ["D1:1"], "category": 4}] * 40,
            "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": []}, "sample_id": "c1"}
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([conv])[:300])
    assert cli.main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "question" not in err.split("not valid JSON")[0] and "cut short" in err, err


def test_run_with_sample_and_corrections_records_the_instrument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    lme = tmp_path / "lme.json"
    cli.main(["datasets", "synth", str(lme), *TINY, "--quiet"])
    first_id = json.loads(lme.read_text())[0]["question_id"]
    fix = tmp_path / "fix.yaml"
    fix.write_text(f'"{first_id}": {{drop: true, reason: "test"}}\n')
    code = cli.main(["benchmark=longmemeval", f"benchmark.path={lme}", "arm.top_k=50", "benchmark.sample.n=5",
                     "benchmark.sample.seed=2", f"benchmark.corrections={fix}", "progress=false",
                     f"hydra.run.dir={tmp_path / 'run'}"])
    assert code == 0, capsys.readouterr().err
    run = read_run(tmp_path / "run")
    assert run.instrument.slice == "sample=5,seed=2"
    assert run.instrument.corrections_sha256 == hashlib.sha256(fix.read_bytes()).hexdigest()
    assert run.instrument.ks == [1, 3, 5, 10, 30, 50]
    assert run.instrument.load_counts["corrections_dropped"] == 1
    ids = run.table.column("item_id").to_pylist()
    assert len(ids) == 5 and first_id not in ids
    assert "session_hit_at_50" in run.table.column_names
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["slice"] == "sample=5,seed=2" and "task_averaged" in summary["session"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["benchmark.slice.categry=[x]"], "unknown config key 'benchmark.slice.categry'; did you mean 'category'?"),
        (["benchmark.sample.n=many"], "benchmark.sample.n=many: benchmark.sample.n is a whole number"),
        (["stale_check=true"], "stale_check=true labels judged answers; it needs axis=accuracy"),
        (["benchmark.split=xl"], "benchmark.split=xl: no such LongMemEval split; choose one of s, m, oracle"),
    ],
)
def test_malformed_config_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], overrides: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code = cli.main(["benchmark=longmemeval", "benchmark.path=/nonexistent.json", *overrides,
                     f"hydra.run.dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
