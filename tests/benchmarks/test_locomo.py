"""The LoCoMo loader on the real file, and on malformed copies of it."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from memrun.benchmarks.locomo import LoCoMo
from memrun.errors import DataError

SHA = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EXPECTED = {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}


def loader(**kw):
    args = dict(split="locomo10", file="locomo10.json", url=None, sha256=SHA, categories=CATS,
                expected_counts=EXPECTED, comparable_categories=[1, 2, 3, 4])
    args.update(kw)
    return LoCoMo(**args)


@pytest.fixture(scope="module")
def dataset(data_dir):
    return loader().load(data_dir)


@pytest.mark.realdata
def test_counts_per_category_and_groups(dataset):
    assert dataset.n_items == 1986
    assert len(dataset.groups) == 10
    assert Counter(i.category for i in dataset.items()) == {str(k): v for k, v in EXPECTED.items()}
    assert dataset.warnings == []
    assert dataset.sha256 == SHA
    assert sum(len(g.records) for g in dataset.groups) == 5882
    assert dataset.comparable_categories == ["1", "2", "3", "4"]


@pytest.mark.realdata
def test_item_ids_are_stable_and_unique(dataset):
    ids = [i.item_id for i in dataset.items()]
    assert len(set(ids)) == len(ids)
    assert ids[0] == "conv-26:0" and ids[-1].startswith("conv-50:")
    assert all(i.cluster == i.history_id == i.item_id.split(":")[0] for i in dataset.items())


@pytest.mark.realdata
def test_integer_answers_are_text_with_raw_kept(dataset):
    item = next(i for i in dataset.items() if i.item_id == "conv-26:1")
    assert item.answer == "2022" and item.answer_raw == "2022"
    assert dataset.counts["answer_int"] == 6


@pytest.mark.realdata
def test_adversarial_rows_keep_adversarial_answer(dataset):
    adversarial = [i for i in dataset.items() if i.category == "5"]
    assert len(adversarial) == 446
    missing = [i for i in adversarial if i.answer is None]
    assert len(missing) == 444 == dataset.counts["answer_missing"]
    assert all(i.answer_raw == "null" and i.extra["adversarial_answer"] for i in missing)
    both = [i for i in adversarial if i.answer is not None]
    assert {i.item_id for i in both} == {"conv-26:167", "conv-26:178"}


@pytest.mark.realdata
def test_evidence_normalization_counts(dataset):
    c = dataset.counts
    assert (c["evidence_split"], c["evidence_reformatted"], c["evidence_unparseable"], c["evidence_dangling"]) == (4, 2, 1, 2)
    assert c["gold_empty"] == 4
    assert c["questions_repeated"] == 12
    assert c["sessions_empty"] == 16 and c["turns_empty"] == 0
    by_id = {i.item_id: i for i in dataset.items()}
    assert "D:11:26" in by_id["conv-43:18"].gold_keys_raw and "D11:26" in by_id["conv-43:18"].gold_keys
    assert by_id["conv-42:88"].gold_keys == ("D1:18", "D1:20")  # "D" dropped, the rest kept
    assert by_id["conv-50:69"].gold_keys == ("D30:5",)
    split = [i for i in dataset.items() if "D8:6; D9:17" in i.gold_keys_raw]
    assert split and set(split[0].gold_keys) >= {"D8:6", "D9:17"}


@pytest.mark.realdata
def test_records_carry_session_date_and_image_caption(dataset):
    records = dataset.groups[0].records
    first = records[0]
    assert first.key == "D1:1" and first.text.startswith("Caroline: ")
    assert first.timestamp == "1:56 pm on 8 May, 2023" and first.session == "session_1"
    assert any("[image: " in r.text for r in records)


@pytest.mark.realdata
def test_warns_when_category_counts_differ(data_dir):
    ds = loader(expected_counts={**EXPECTED, 3: 95}).load(data_dir)
    assert len(ds.warnings) == 1 and "3: 96 (expected 95)" in ds.warnings[0]


def write(tmp_path: Path, content) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize(
    "content,needle",
    [
        ("{not json", "not valid JSON"),
        ({"a": 1}, "expected a list of conversations"),
        ([{"sample_id": "x"}], "conversation 0: expected an object with a 'conversation' object"),
        ([{"sample_id": "x", "conversation": {}, "qa": [{"answer": 1}]}], "(x) qa row 0: expected an object with a 'question' string"),
        ([], "the file holds no conversation"),
        ([{"sample_id": "x", "conversation": {"session_1": "hi"}, "qa": []}], "x session_1: expected a list of turn objects"),
        ([{"sample_id": "x", "conversation": {}}], "(x): has no 'qa' key; each LoCoMo conversation lists its questions there"),
        ([{"sample_id": "x", "conversation": {}, "qa": None}], "conversation 0 (x): 'qa' must be a list of questions, got null"),
        ('[{"sample_id": "x" "qa": []}]', "locomo10.json:1: not valid JSON (Expecting ',' delimiter at column 20)"),
        ([{"sample_id": "x", "conversation": {}, "qa": []}] * 2, "sample_id 'x' names two conversations"),
    ],
)
def test_malformed_file_is_one_clear_error(tmp_path, content, needle):
    write(tmp_path, content)
    with pytest.raises(DataError) as err:
        loader(sha256=None).load(tmp_path)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_cut_short_file_is_named_as_such_and_errors_name_the_whole_path(tmp_path):
    whole = json.dumps([{"sample_id": "x", "conversation": {"session_1": []}, "qa": []}] * 3, indent=1)
    for cut in (len(whole) // 2, len(whole) - 1, whole.index('"x"') + 1):  # mid-value, the last ']', in a string
        path = write(tmp_path, whole[:cut])
        with pytest.raises(DataError, match=r"^" + re.escape(f"{path}:") + r"\d+: not valid JSON: the text ends in the "
                           r"middle of a value, so it was cut short \(an interrupted download or copy\?\); fetch or "
                           r"copy the file again \("):
            loader(sha256=None).load(tmp_path)
    write(tmp_path, [{"sample_id": "x", "conversation": {}}])
    with pytest.raises(DataError, match=r"^" + re.escape(f"{tmp_path / 'locomo10.json'}: conversation 0 (x)")):
        loader(sha256=None).load(tmp_path)


def test_checksum_mismatch_names_the_file(tmp_path):
    write(tmp_path, [])
    with pytest.raises(DataError, match=r"locomo10.json has sha256 [0-9a-f]{64} but the config pins 79fa.*or the pin is "
                       r"wrong.*a file of your own .* runs unpinned: benchmark.sha256=null benchmark.expected_counts=null$"):
        loader().load(tmp_path)


@pytest.mark.parametrize("text", ["", " \n\t\n"])
def test_an_empty_file_is_called_empty_not_cut_short(tmp_path, text):
    (tmp_path / "locomo10.json").write_text(text)
    with pytest.raises(DataError, match=r"but the config pins 79fa.*: the file is empty .*; replace it$"
                       if not text else r"^\S+ has sha256"):
        loader().load(tmp_path)
    with pytest.raises(DataError, match=r"locomo10.json:\d: not valid JSON: the file is empty \(or only white space"):
        loader(sha256=None).load(tmp_path)


def test_messy_rows_are_normalized_not_dropped(tmp_path):
    conv = {
        "sample_id": "c1",
        "conversation": {
            "speaker_a": "A", "speaker_b": "B",
            "session_1_date_time": "1 May 2023", "session_1": [
                {"speaker": "A", "dia_id": "D1:1", "text": "hello there"},
                {"speaker": "A", "text": "no id"},
                {"speaker": "B", "dia_id": "D1:2", "text": ""},
                {"speaker": "B", "dia_id": "D1:3", "text": "", "blip_caption": "a dog"},
            ],
            "session_2_date_time": "2 May 2023",
        },
        "qa": [
            {"question": "q1", "answer": 7, "evidence": ["D1:1; D1:3"], "category": 4},
            {"question": "q1", "adversarial_answer": "x", "evidence": ["D", "D9:9"], "category": 5},
            {"question": "q2", "answer": "y", "evidence": ["D1:1"]},
        ],
    }
    write(tmp_path, [conv])
    ds = loader(sha256=None, expected_counts={}).load(tmp_path)
    assert [r.key for r in ds.groups[0].records] == ["D1:1", "D1:3"]
    assert ds.groups[0].records[1].text == "B:  [image: a dog]"
    items = ds.groups[0].items
    assert items[0].answer == "7" and items[0].gold_keys == ("D1:1", "D1:3")
    assert items[1].answer is None and items[1].gold_keys == ()
    assert ds.counts["turns_empty"] == 1 and ds.counts["sessions_empty"] == 1 and ds.counts["turns_without_id"] == 1
    assert items[2].category == "unknown" and ds.counts["category_missing"] == 1
    assert ds.counts["evidence_unparseable"] == 1 and ds.counts["evidence_dangling"] == 1
    assert ds.counts["questions_repeated"] == 1 and ds.counts["gold_empty"] == 1


def test_a_bad_turn_field_names_its_index_and_dia_id_and_a_number_is_text(tmp_path):
    turns = [{"speaker": "A", "dia_id": "D1:1", "text": "hello"}, {"speaker": "B", "dia_id": "D1:2", "text": 0}]
    conv = {"sample_id": "c1", "conversation": {"session_1": turns}, "qa": []}
    write(tmp_path, [conv])
    ds = loader(sha256=None, expected_counts={}).load(tmp_path)
    assert [r.text for r in ds.groups[0].records] == ["A: hello", "B: 0"]  # 0 is a number said, not an empty turn
    turns[1]["text"] = ["a list"]
    write(tmp_path, [conv])
    with pytest.raises(DataError) as err:
        loader(sha256=None, expected_counts={}).load(tmp_path)
    assert "c1 session_1[1] (D1:2): 'text' must be a string (or a number), got a list" in str(err.value)


def test_a_split_name_other_than_locomo10_needs_a_file_of_ones_own():
    """``benchmark=locomo benchmark.split=x`` was accepted and recorded as split x: a
    mislabelled instrument for the published file."""
    from memrun.errors import ConfigError

    with pytest.raises(ConfigError, match=r"benchmark.split=x: .* benchmark.sha256=null"):
        loader(split="x")
    assert loader(split="mine", sha256=None).split == "mine"  # a LoCoMo-format file of one's own


@pytest.mark.parametrize("expected_counts", [None, {1: 1, 6: 2, 7: 1}])
def test_a_category_the_config_does_not_name_is_said_whatever_the_expected_counts(tmp_path, expected_counts):
    """A LoCoMo-format file of one's own (expected_counts=null) with categories 6 and 7 loaded
    without a word: their rows were kept under the raw value, unlabeled and outside
    overall_comparable, and nothing said why the table grew rows named 6 and 7."""
    turns = [{"speaker": "A", "dia_id": "D1:1", "text": "I adopted a cat"}]
    qa = [{"question": f"q{i}", "answer": "a cat", "evidence": ["D1:1"], "category": c}
          for i, c in enumerate([1, 6, "6", 7])]
    write(tmp_path, [{"sample_id": "c1", "conversation": {"session_1": turns}, "qa": qa}])
    ds = loader(sha256=None, expected_counts=expected_counts).load(tmp_path)
    assert [i.category for i in ds.items()] == ["1", "6", "6", "7"]  # kept, under the raw value
    assert ds.warnings == ["LoCoMo category 6 (2 rows), 7 (1 row): not in benchmark.categories (1 multi-hop, "
                           "2 temporal, 3 open-domain, 4 single-hop, 5 adversarial); kept under the raw value, with no "
                           "label and outside overall_comparable; if they are yours, name them: "
                           "'+benchmark.categories={6: <label>, 7: <label>}'"]
