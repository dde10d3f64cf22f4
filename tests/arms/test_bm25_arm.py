import pytest

from memrun.arms import Arm
from memrun.arms.bm25 import BM25Arm
from memrun.errors import ArmError
from memrun.records import Record

RECORDS = [
    Record("r0", "The invoices go out on the third of each month"),
    Record("r1", "Late fees are two percent"),
    Record("r2", "Invoices and late fees are handled by finance"),
    Record("r3", "The garden has tomatoes"),
]


def test_implements_protocol_and_ranks_by_bm25():
    arm = BM25Arm()
    assert isinstance(arm, Arm)
    arm.ingest("h", RECORDS)
    hits = arm.search("when do invoices go out", 10)
    assert hits[0].key == "r0"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert "r3" not in {h.key for h in hits}  # zero score: not returned
    assert hits[0].text == RECORDS[0].text


def test_top_k_and_reingest_replaces_history():
    arm = BM25Arm()
    arm.ingest("h1", RECORDS)
    assert len(arm.search("invoices late fees", 1)) == 1
    arm.ingest("h2", [Record("x", "tomatoes everywhere")])
    assert [h.key for h in arm.search("invoices tomatoes", 5)] == ["x"]


def test_stopwords_setting_changes_what_matches():
    with_stop, without = BM25Arm(stopwords="en"), BM25Arm(stopwords=None)
    for arm in (with_stop, without):
        arm.ingest("h", RECORDS)
    assert with_stop.search("the", 5) == []
    assert len(without.search("the", 5)) == 2


def test_ties_break_by_record_order_deterministically():
    arm = BM25Arm()
    arm.ingest("h", [Record(f"k{i}", "same words here") for i in range(5)])
    assert [h.key for h in arm.search("same words", 5)] == ["k0", "k1", "k2", "k3", "k4"]


def test_empty_history_and_empty_query():
    arm = BM25Arm()
    arm.ingest("h", [])
    assert arm.search("anything", 3) == []
    arm.ingest("h", RECORDS)
    assert arm.search("", 3) == []


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ArmError, match="arm.method='bm99' is not a bm25s method"):
        BM25Arm(method="bm99")


@pytest.mark.parametrize("stopwords", ["en", "german", None])
def test_tokens_are_bm25s_tokenize_on_real_text(data_dir, stopwords):
    import json

    import bm25s

    texts = [turn["text"] for conv in json.loads((data_dir / "locomo10.json").read_text())
             for key, session in conv["conversation"].items() if key.startswith("session_") and isinstance(session, list)
             for turn in session]
    texts += ["", "a I x", "Ünïcödé CAFÉ's 3rd-place 2023-05-08 e-mail", "THE the The", "snake_case and tabs\tand\nlines"]
    arm = BM25Arm(stopwords=stopwords)
    expected = bm25s.tokenize(texts, stopwords=stopwords, return_ids=False, show_progress=False)
    assert arm._tokens(texts) == expected and len(texts) > 5000


def test_unknown_stopword_list_is_an_arm_error():
    with pytest.raises(ArmError, match="arm.stopwords='klingon' is not a stopword list bm25s knows") as caught:
        BM25Arm(stopwords="klingon")
    assert "en, de," in str(caught.value) and "null" in str(caught.value)  # what to write instead


@pytest.mark.parametrize("setting,match", [
    ({"k1": -1.0}, r"arm.k1=-1.0: must be a finite number >= 0"),
    ({"k1": float("inf")}, r"arm.k1=inf: must be a finite number >= 0"),
    ({"b": 5}, r"arm.b=5: must be between 0 and 1"),
    ({"b": -0.1}, r"arm.b=-0.1: must be between 0 and 1"),
    ({"k1": "x"}, r"arm.k1='x'"),
])
def test_parameters_outside_bm25s_range_are_arm_errors(setting, match):
    with pytest.raises(ArmError, match=match):
        BM25Arm(**setting)
    BM25Arm(k1=0.0, b=0.0), BM25Arm(k1=2.0, b=1.0)  # the ends of the ranges are fine


@pytest.mark.parametrize("method", ["bm25l", "bm25+"])
def test_methods_on_the_bm25s_index_log_nothing(method, caplog):
    import logging

    logging.getLogger("bm25s").setLevel(logging.DEBUG)  # what importing bm25s leaves it at
    caplog.set_level(logging.DEBUG)
    arm = BM25Arm(method=method)
    for history in ("h1", "h2"):
        arm.ingest(history, [Record("a", "tomatoes grow red"), Record("b", "pears grow green")])
        assert [h.key for h in arm.search("red tomatoes", 2)] == ["a", "b"]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("bm25s")] == []
