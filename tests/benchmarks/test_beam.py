"""The BEAM loader: on the real 100K and 500K files, and on small hand-made cases."""

import json
import os
import subprocess
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import memrun_exe
from memrun.benchmarks import beam_files, download
from memrun.benchmarks.beam import COUNT_KEYS, Beam, question_item, read_chat
from memrun.errors import ConfigError, DataError
from memrun.records import Record

CONF = Path(__file__).resolve().parents[2] / "conf" / "benchmark" / "beam.yaml"
CATS = yaml.safe_load(CONF.read_text())["categories"]
ABILITIES = list(CATS)

# Every quirk of the published files, counted by hand from the raw JSON (see docs/benchmarks.md).
EXPECTED_COUNTS = {
    "100K": dict(answer_from_ideal_response=40, answer_from_ideal_answer=40, answer_from_ideal_summary=40,
                 answer_from_expected_compliance=80, gold_list=240, gold_dict_updated_only=40,
                 gold_updated_info_empty=1, gold_dict_both=80, gold_nested=7, gold_repeated=13, gold_empty=6,
                 abstention_no_evidence=40, time_anchor_from_message=82),
    "500K": dict(answer_from_ideal_response=70, answer_from_ideal_answer=70, answer_from_ideal_summary=70,
                 answer_from_expected_compliance=140, gold_list=420, gold_dict_updated_only=69,
                 gold_updated_info_empty=3, gold_dict_both=140, gold_missing=1, gold_nested=95, gold_repeated=17, gold_empty=4,
                 abstention_no_evidence=70, time_anchor_from_message=350),
}
CONVERSATIONS = {"100K": 20, "500K": 35}


def loader(split, **kw):
    return Beam(split=split, url="http://127.0.0.1:9/none", categories=CATS, **kw)


@pytest.fixture(scope="module", params=["100K", "500K"])
def loaded(request, beam_dir):
    ds = loader(request.param).load(beam_dir)
    return request.param, ds, list(ds.groups)


def _credited(ability, raw):
    """The rule written out independently: knowledge_update credits updated_info, other dicts both halves."""
    if raw is None or ability == "abstention":
        return set()
    if isinstance(raw, dict):
        raw = raw["updated_info"] if ability == "knowledge_update" else [i for v in raw.values() for i in v]
    flat = []
    for i in raw:
        flat.extend(i if isinstance(i, list) else [i])
    return {str(i) for i in flat}


@pytest.mark.realdata
def test_counts_per_size_and_ability_equal_the_official_statistics(loaded):
    size, ds, groups = loaded
    assert len(groups) == CONVERSATIONS[size]
    assert all(len(g.items) == 20 for g in groups)
    assert Counter(i.category for g in groups for i in g.items) == {a: 2 * CONVERSATIONS[size] for a in ABILITIES}
    assert ds.warnings == []
    assert [(i.item_id, i.category) for g in groups for i in g.items] == ds.index
    assert len({i.item_id for g in groups for i in g.items}) == 20 * CONVERSATIONS[size]


@pytest.mark.realdata
def test_every_quirk_is_counted(loaded):
    size, ds, _ = loaded
    assert ds.counts == {**dict.fromkeys(COUNT_KEYS, 0), **EXPECTED_COUNTS[size]}


@pytest.mark.realdata
def test_retrieval_gold_is_resolved_for_every_question_with_evidence(loaded, beam_dir):
    size, _, groups = loaded
    for conv, group in zip(beam_files.conversations(size), groups):
        raw = json.loads((beam_dir / "beam" / conv.questions.path).read_text())
        keys = {r.key for r in group.records}
        for item in group.items:
            _, ability, index = item.item_id.split(":")
            expected = _credited(ability, raw[ability][int(index)].get("source_chat_ids"))
            assert set(item.gold_keys) == expected, item.item_id
            assert set(item.gold_keys) <= keys
            assert item.abstention == (ability == "abstention")
            assert item.answer and item.extra["rubric"]


@pytest.mark.realdata
def test_records_and_the_truncated_chat(beam_dir):
    ds = loader("100K").load(beam_dir)
    groups = {g.history_id: g for g in ds.groups}
    # conversation 10 has a chat_trunecated.json (286 messages; chat.json has 344): the official run reads it
    assert len(groups["10"].records) == 286
    first = groups["1"].records[0]
    assert first.key == "0" and first.text.startswith("user: I'm working on a project") and first.timestamp == "March-15-2024"
    assert first.session == "batch_1"


@pytest.mark.realdata
def test_a_full_recall_run_with_bm25(beam_dir, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([*memrun_exe(), "benchmark=beam", "arm=bm25", f"hydra.run.dir={out}", "progress=false"],
                          capture_output=True, text=True, env={**os.environ, "MEMRUN_DATA_DIR": str(beam_dir)})
    assert proc.returncode == 0, proc.stderr
    assert "gold_nested 7" in proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_items"] == 400
    assert set(summary["per_category"]) >= set(ABILITIES) - {"abstention"}


# -- small hand-made cases -------------------------------------------------------------


def _msg(mid, role, content, **kw):
    return {"role": role, "id": mid, "content": content, **kw}


def test_a_batch_is_dated_by_its_first_message_and_ids_are_checked(tmp_path):
    chat = [{"batch_number": 1, "time_anchor": None, "turns": [
        [_msg(0, "user", "hi", time_anchor="May-1-2024"), _msg(1, "assistant", "hello")],
        [_msg(2, "user", "  "), _msg(1, "assistant", "again")]]},
        {"batch_number": 2, "time_anchor": "June-2-2024", "turns": [[_msg(3, "user", "x")]]}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(chat))
    counts = Counter()
    records = read_chat(path, counts)
    assert [(r.key, r.text, r.timestamp, r.session) for r in records] == [
        ("0", "user: hi", "May-1-2024", "batch_1"), ("1", "assistant: hello", "May-1-2024", "batch_1"),
        ("3", "user: x", "June-2-2024", "batch_2")]
    assert counts == {"time_anchor_from_message": 1, "messages_empty": 1, "ids_repeated": 1}


def test_the_10m_shape_is_a_list_of_plans(tmp_path):
    chat = [{"plan-0": [{"batch_number": 1, "time_anchor": "a", "turns": [[_msg(0, "user", "p0")]]}]},
            {"plan-1": [{"batch_number": 1, "time_anchor": "b", "turns": [[_msg(1, "user", "p1")]]}]}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(chat))
    records = read_chat(path, Counter())
    assert [(r.key, r.session, r.timestamp) for r in records] == [("0", "plan-0/batch_1", "a"), ("1", "plan-1/batch_1", "b")]


def _ten_m_chat(path, plans, batches=6, turns=8, chars=400):
    """A 10M-shaped chat (a list of plans) of ``plans`` equal plans, messages as published
    (role, id, time_anchor, index, question_type, content); returns its size in bytes."""
    out, mid = [], 0
    for p in range(plans):
        batch_list = []
        for b in range(batches):
            rows = []
            for t in range(turns):
                rows.append([_msg(mid + j, role, f"m{mid + j} " + "x" * chars, time_anchor="May-1-2024",
                                  index=f"{b},{t}", question_type="main_question")
                             for j, role in enumerate(("user", "assistant"))])
                mid += 2
            batch_list.append({"batch_number": b + 1, "time_anchor": None, "turns": rows})
        out.append({f"plan-{p}": batch_list})
    path.write_text(json.dumps(out))
    return path.stat().st_size


def _transient_bytes(read):
    """Python memory the call allocated and let go again (tracemalloc peak minus what it still
    holds afterwards): the parse, not the records it returns."""
    tracemalloc.start()
    try:
        kept = read()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - current, len(kept)


def test_a_10m_chat_streams_one_plan_at_a_time(tmp_path):
    """Memory held while reading a 10M-shaped chat is its records plus one plan's parse: six
    times the plans adds almost nothing beyond the records, where json.load adds the whole tree."""
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    growth = _ten_m_chat(big, 12) - _ten_m_chat(small, 2)

    def loaded(path):  # the non-streaming reading, for scale: the whole tree, then the same records
        data = json.loads(path.read_text())
        return [Record(str(m["id"]), f"{m['role']}: {m['content']}", None, f"{name}/batch_{b['batch_number']}")
                for plan in data for name, batches in plan.items() for b in batches for t in b["turns"] for m in t]

    read_chat(small, Counter())  # first-call costs (imports, caches) out of the way
    stream_small, n_small = _transient_bytes(lambda: read_chat(small, Counter()))
    stream_big, n_big = _transient_bytes(lambda: read_chat(big, Counter()))
    assert (n_small, n_big) == (192, 1152)  # every message of every plan was read
    assert stream_big - stream_small < 0.2 * growth, (stream_small, stream_big, growth)
    whole_small, _ = _transient_bytes(lambda: loaded(small))
    whole_big, _ = _transient_bytes(lambda: loaded(big))
    assert whole_big - whole_small > 1.0 * growth, (whole_small, whole_big, growth)  # the measure sees a tree


@pytest.mark.parametrize("chat, needle", [
    ([{"turns": "x"}], "'turns' list"),
    ([{"turns": [[{"role": "user", "content": "x", "id": True}]]}], "'id' must be a message id"),
    ([7], "expected a batch object"),
    ("[{", "not valid JSON"),
])
def test_a_malformed_chat_is_one_clear_error(tmp_path, chat, needle):
    path = tmp_path / "chat.json"
    path.write_text(chat if isinstance(chat, str) else json.dumps(chat))
    with pytest.raises(DataError, match=needle):
        read_chat(path, Counter())


def _q(**kw):
    return {"question": "q?", "rubric": ["r1"], **kw}


def test_gold_rules_for_lists_and_dicts():
    known = {str(i) for i in range(10)}
    counts = Counter()
    ku = question_item("1", "knowledge_update", 0, _q(answer="new", source_chat_ids={"original_info": [1], "updated_info": [2]}), known, counts, "w")
    assert ku.gold_keys == ("2",) and ku.extra["original_info_ids"] == ["1"]
    assert ku.gold_keys_raw == ("original_info:1", "updated_info:2")
    tr = question_item("1", "temporal_reasoning", 0, _q(answer="a", source_chat_ids={"first_event": [3], "second_event": [4, 3]}), known, counts, "w")
    assert tr.gold_keys == ("3", "4")
    eo = question_item("1", "event_ordering", 0, _q(answer="a", source_chat_ids=[5, [6, 7], 5, 99]), known, counts, "w")
    assert eo.gold_keys == ("5", "6", "7")
    ab = question_item("1", "abstention", 0, _q(ideal_response="no info"), known, counts, "w")
    assert ab.abstention and ab.gold_keys == () and ab.answer == "no info"
    odd = question_item("1", "summarization", 0, _q(ideal_summary="s", source_chat_ids={"a": [8], "b": [9]}), known, counts, "w")
    assert odd.gold_keys == ("8", "9")
    missing = question_item("1", "knowledge_update", 1, _q(answer="a"), known, counts, "w")  # as 500K/1 has one
    assert missing.gold_keys == () and not missing.abstention
    assert counts == {"gold_dict_updated_only": 1, "gold_dict_both": 1, "gold_list": 1, "gold_nested": 1,
                      "gold_repeated": 2, "gold_dangling": 1, "abstention_no_evidence": 1,
                      "answer_from_ideal_response": 1, "answer_from_ideal_summary": 1, "gold_dict_other": 1,
                      "gold_missing": 1, "gold_empty": 1}


def test_sizes_know_their_conversations_and_pins():
    assert [len(beam_files.conversations(s)) for s in beam_files.SIZES] == [20, 35, 35, 10]
    one_m = beam_files.conversations("1M")[0]
    assert one_m.chat.sha256 is None and len(one_m.chat.git_blob) == 40
    assert beam_files.conversations("100K")[9].chat.path == "chats/100K/10/chat_trunecated.json"
    with pytest.raises(ConfigError, match=r"choose one of 100K \(or 128K, the README's name\), 500K, 1M, 10M"):
        loader("2M")


def test_a_file_differing_from_its_git_blob_pin_is_refused(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"[]\n")
    blob = download.git_blob_sha1(path)
    assert blob == subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True).stdout.strip()
    assert download.resolve("f.json", url=None, sha256=None, folder=tmp_path, git_blob=blob)[0] == path
    with pytest.raises(DataError, match="git blob id"):
        download.resolve("f.json", url=None, sha256=None, folder=tmp_path, git_blob="0" * 40)


def test_a_missing_file_names_where_to_put_it(tmp_path):
    with pytest.raises(Exception, match="chats/100K/1/"):
        loader("100K").load(tmp_path)
