"""Record knobs beyond LoCoMo: ``record_text`` and ``granularity=session`` for LongMemEval (a
LongMemEval-shaped file) and BEAM (the real 100K files), ``session_gold=as_written`` for
LongMemEval; each an instrument field, the defaults unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import DATE, loader, question, turn, write_lme
from memrun import cli
from memrun.benchmarks.beam import Beam
from memrun.errors import ConfigError
from memrun.io.reader import read_run

CATS = {a: a for a in ("abstention", "contradiction_resolution", "event_ordering", "information_extraction",
                       "instruction_following", "knowledge_update", "multi_session_reasoning",
                       "preference_following", "summarization", "temporal_reasoning")}
D2 = "2023/06/01 (Thu) 10:00"


def lme_file(tmp_path: Path) -> Path:
    sessions = [
        ("filler_1", DATE, [turn("user", "hello there"), turn("assistant", "hi")]),
        ("assistant_only", DATE, [turn("assistant", "a lone reply")]),
        ("answer_q1_1", D2, [turn("user", "my car is blue", True), turn("assistant", "nice"),
                             turn("user", "and the bike red")]),
    ]
    abstention = [("filler_1", DATE, [turn("user", "hello there"), turn("assistant", "hi")]),
                  ("answer_q2_1", D2, [turn("user", "I own a boat", True)])]
    return write_lme(tmp_path / "lme.json", [question("q1", sessions, ["answer_q1_1"]),
                                             question("q2_abs", abstention, ["answer_q2_1"], text="Which boat do I own?")])


def test_longmemeval_default_records_are_unchanged_and_not_in_the_instrument(tmp_path):
    dataset = loader(lme_file(tmp_path)).load(tmp_path)
    first = next(iter(dataset.groups))
    assert [r.text for r in first.records][:2] == ["user: hello there", "assistant: hi"]
    assert first.records[0].key == "filler_1_1" and dataset.records is None


def test_longmemeval_sessions_as_documents_with_mempalace_text_and_gold_as_written(tmp_path):
    dataset = loader(lme_file(tmp_path), roles=["user"], record_text="text", granularity="session",
                     session_gold="as_written").load(tmp_path)
    q1, q2 = list(dataset.groups)
    # one record per session that has an indexed turn, its user turns joined by a newline
    assert [r.key for r in q1.records] == ["filler_1", "answer_q1_1"]
    assert q1.records[1].text == "my car is blue\nand the bike red" and q1.records[1].timestamp == D2
    assert q1.items[0].gold_keys == ("answer_q1_1",)
    # as written: the abstention question keeps its answer_session_ids as gold, as MemPalace scores it
    assert q2.items[0].abstention and q2.items[0].gold_keys == ("answer_q2_1",)
    assert dataset.records == "unit=session; text={text}; session gold: answer_session_ids as written"
    normalized = loader(lme_file(tmp_path), granularity="session", session_joiner=" ").load(tmp_path)
    n1, n2 = list(normalized.groups)
    assert n1.records[0].text == "user: hello there assistant: hi" and n2.items[0].gold_keys == ()  # memrun leaves it out
    assert normalized.records == "unit=session; text={role}: {text}; joined by ' '"


def test_longmemeval_templates_and_bad_knobs_are_one_line_errors(tmp_path):
    assert loader(lme_file(tmp_path), session_cut="turns").load(tmp_path).session_cut == "turns"  # memory-core-eval's K
    said = loader(lme_file(tmp_path), record_text="speaker_said").load(tmp_path)
    assert next(iter(said.groups)).records[0].text == 'user said, "hello there"'
    assert said.records == 'unit=turn; text={speaker} said, "{text}"'
    for kwargs, needle in (({"record_text": "{name}: {text}"}, "unknown field {name}"),
                           ({"granularity": "round"}, "benchmark.granularity=round: choose one of turn, session"),
                           ({"session_gold": "raw"}, "benchmark.session_gold=raw: choose one of normalized, as_written"),
                           ({"session_cut": "words"}, "benchmark.session_cut=words: choose one of sessions, turns")):
        with pytest.raises(ConfigError) as err:
            loader(lme_file(tmp_path), **kwargs)
        assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_longmemeval_run_at_session_granularity_scores_sessions_and_records_the_knobs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    lme = lme_file(tmp_path)
    code = cli.main(["benchmark=longmemeval", f"benchmark.path={lme}", "benchmark.granularity=session",
                     "benchmark.record_text=text", "benchmark.roles=[user]", "benchmark.session_gold=as_written",
                     "benchmark.expected_counts=null", "arm=bm25", "arm.stopwords=null", "arm.top_k=2", "ks=[1,2]",
                     "progress=false", f"hydra.run.dir={tmp_path / 'run'}"])
    assert code == 0, capsys.readouterr().err
    run = read_run(tmp_path / "run")
    assert run.instrument.records == "unit=session; text={text}; session gold: answer_session_ids as written"
    hits = dict(zip(run.table.column("item_id").to_pylist(), run.table.column("hit_at_2").to_pylist()))
    assert hits == {"q1": True, "q2_abs": True}  # the gold session is among the top 2 (abstention scored too)
    keys = run.table.column("retrieved_keys").to_pylist()
    assert all(set(k) <= {"filler_1", "answer_q1_1", "answer_q2_1"} for k in keys)


@pytest.mark.realdata
def test_beam_batches_as_documents_on_the_real_100k_files(beam_dir):
    default = Beam(split="100K", url="http://127.0.0.1:9", categories=CATS).load(beam_dir)
    first = next(iter(default.groups))
    assert default.records is None and first.records[0].text.startswith(("user: ", "assistant: "))
    assert all(not item.gold_sessions for item in first.items)  # the default adds no session gold
    by_batch = Beam(split="100K", url="http://127.0.0.1:9", categories=CATS, granularity="session",
                    record_text="text").load(beam_dir)
    assert by_batch.records == "unit=session; text={text}"
    sessions = next(iter(by_batch.groups))
    batches = {r.session for r in first.records}
    assert [r.key for r in sessions.records] == list(dict.fromkeys(r.session for r in first.records))
    assert len(sessions.records) == len(batches) and all(r.key.startswith("batch_") for r in sessions.records)
    texts = {r.key: r.text for r in sessions.records}
    one = sessions.records[0].key
    assert texts[one] == "\n".join(r.text.split(": ", 1)[1] for r in first.records if r.session == one)
    session_of = {r.key: r.session for r in first.records}
    for plain, whole in zip(first.items, sessions.items):
        assert whole.gold_keys == tuple(dict.fromkeys(session_of[k] for k in plain.gold_keys))
    assert any(item.gold_keys for item in sessions.items)
