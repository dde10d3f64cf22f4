"""The knobs that re-derive published retrieval numbers: record text, session documents,
gold_share@K, arm=okapi (rank_bm25's scores) and arm=hybrid over it."""

import json
import math
from pathlib import Path

import pytest

from memrun.arms.hybrid import HybridArm
from memrun.arms.okapi import OkapiArm
from memrun.benchmarks.locomo import LoCoMo
from memrun.errors import ArmError, ConfigError
from memrun.metrics.gold_share import gold_share_by_k
from memrun.records import Record

CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

CONV = {
    "sample_id": "c1",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1 May 2023", "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "", "blip_caption": "a dog on grass"},
        ],
        "session_2_date_time": "2 May 2023", "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I paint sunsets"},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "nice"},
        ],
    },
    "qa": [
        {"question": "who has a dog", "answer": "Ann", "evidence": ["D1:1", "D2:2"], "category": 4},
        {"question": "what does Bob paint", "answer": "sunsets", "evidence": ["D"], "category": 4},
    ],
}


def load(tmp_path: Path, **kw):
    (tmp_path / "locomo10.json").write_text(json.dumps([CONV]))
    return LoCoMo(split="locomo10", file="locomo10.json", url=None, sha256=None, categories=CATS, **kw).load(tmp_path)


def test_default_record_text_is_unchanged_and_not_in_the_instrument(tmp_path):
    ds = load(tmp_path)
    assert [r.text for r in ds.groups[0].records] == [
        "Ann: I adopted a dog", "Bob:  [image: a dog on grass]", "Bob: I paint sunsets", "Ann: nice"]
    assert ds.records is None and "turns_blank_under_template" not in ds.counts


def test_said_template_and_text_only_skip_image_only_turns_and_count_them(tmp_path):
    said = load(tmp_path, record_text="speaker_said")
    assert said.groups[0].records[0].text == 'Ann said, "I adopted a dog"'
    assert said.records == 'unit=turn; text={speaker} said, "{text}"'
    text = load(tmp_path, record_text="{text}")
    assert [r.text for r in text.groups[0].records] == ["I adopted a dog", "I paint sunsets", "nice"]
    assert text.counts["turns_blank_under_template"] == 1
    captioned = load(tmp_path, record_text="{text} {caption}")
    assert captioned.groups[0].records[1].text == " a dog on grass"


@pytest.mark.parametrize("spec,needle", [("{who}: {text}", "unknown field {who}"), ("plain", "no field"),
                                         ("{text", "not a template")])
def test_a_bad_template_is_one_line_naming_the_key_and_the_fields(tmp_path, spec, needle):
    with pytest.raises(ConfigError) as err:
        load(tmp_path, record_text=spec)
    message = str(err.value)
    assert message.startswith("benchmark.record_text=") and needle in message and "\n" not in message
    assert "speaker_said" in message


def test_session_granularity_makes_one_record_per_session_and_session_gold(tmp_path):
    ds = load(tmp_path, granularity="session", record_text="speaker_said")
    records = ds.groups[0].records
    assert [r.key for r in records] == ["session_1", "session_2"]
    assert records[1].text == 'Bob said, "I paint sunsets"\nAnn said, "nice"'
    assert records[0].timestamp == "1 May 2023"
    first, second = ds.groups[0].items
    assert first.gold_keys == ("session_1", "session_2") and first.gold_keys_raw == ("D1:1", "D2:2")
    assert second.gold_keys == ()
    assert ds.named_metrics == () and ds.records.startswith("unit=session;")
    with pytest.raises(ConfigError, match="benchmark.granularity=dialog: choose one of turn, session"):
        load(tmp_path, granularity="dialog")


def test_gold_share_is_the_share_of_distinct_gold_found_by_k():
    a, b = frozenset({"a"}), frozenset({"b"})
    matches = [frozenset(), a, a, b]
    assert gold_share_by_k(matches, 3, (1, 2, 4, 10)) == {1: 0.0, 2: 1 / 3, 4: 2 / 3, 10: 2 / 3}
    assert gold_share_by_k(matches, 0, (1,)) == {}


def _rank_bm25_reference(corpus_tokens, query_tokens, k1=1.5, b=0.75, epsilon=0.25):
    """BM25Okapi's definition, written out (Robertson idf, negative idf floored at
    epsilon x mean idf), independent of rank_bm25's code."""
    n = len(corpus_tokens)
    avgdl = sum(map(len, corpus_tokens)) / n
    df = {}
    for doc in corpus_tokens:
        for t in set(doc):
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log(n - f + 0.5) - math.log(f + 0.5) for t, f in df.items()}
    floor = epsilon * sum(idf.values()) / len(idf)
    idf = {t: (floor if v < 0 else v) for t, v in idf.items()}
    scores = []
    for doc in corpus_tokens:
        s = 0.0
        for q in query_tokens:
            f = doc.count(q)
            s += idf.get(q, 0.0) * f * (k1 + 1) / (f + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(s)
    return scores


TEXTS = ["Ann: the Dog ran", "Bob: a cat sat", "Ann: dog and dog", "Bob: the cat, the dog", "Cy: nothing here",
         "Dee: the the the"]


@pytest.mark.parametrize("tokenizer,split", [("whitespace", str.split),
                                             ("word_lower", lambda t: [w.lower() for w in
                                                                       __import__("re").findall(r"[A-Za-z0-9_]+", t)])])
def test_okapi_scores_and_ranks_as_bm25okapi_with_its_tokens(tokenizer, split):
    arm = OkapiArm(tokenizer=tokenizer)
    records = [Record(key=f"r{i}", text=t) for i, t in enumerate(TEXTS)]
    arm.ingest("h", records)
    query = "the dog"
    expected = _rank_bm25_reference([split(t) for t in TEXTS], split(query))
    hits = arm.search(query, len(TEXTS))
    assert [h.score for h in hits] == pytest.approx(sorted(expected, reverse=True), abs=1e-12)
    # ties in record order, zero scores returned too (k hits whenever k records exist)
    order = sorted(range(len(TEXTS)), key=lambda i: expected[i], reverse=True)
    assert [h.key for h in hits] == [f"r{i}" for i in order]
    assert arm.describe()["search_mode"] == "lexical"


def test_okapi_rejects_an_unknown_tokenizer_and_handles_an_empty_history():
    with pytest.raises(ArmError, match="arm.tokenizer='regex': use one of whitespace, word_lower"):
        OkapiArm(tokenizer="regex")
    arm = OkapiArm()
    arm.ingest("h", [])
    assert arm.search("anything", 3) == []


class _Constant:
    name, dim = "const", 2

    def embed(self, texts):
        return [[1.0, float(i)] for i, _ in enumerate(texts)]

    def close(self):
        pass


def test_hybrid_fuses_over_okapi_when_asked_and_names_the_choices():
    arm = HybridArm(embedder=_Constant(), lexical="okapi", okapi={"tokenizer": "word_lower"}, use_cache=False)
    assert isinstance(arm.lexical, OkapiArm) and arm.lexical.tokenizer == "word_lower"
    with pytest.raises(ArmError, match="arm.lexical='tfidf': use bm25"):
        HybridArm(embedder=_Constant(), lexical="tfidf", use_cache=False)


def test_session_gold_as_written_reads_each_evidence_string_as_locomo_does(tmp_path):
    conv = json.loads(json.dumps(CONV))
    conv["qa"][0]["evidence"] = ["D1:1; D2:1", "D:2:2", "D9:4"]  # split, reformatted, dangling
    (tmp_path / "locomo10.json").write_text(json.dumps([conv]))
    args = {"split": "locomo10", "file": "locomo10.json", "url": None, "sha256": None, "categories": CATS}
    normalized = LoCoMo(**args).load(tmp_path)
    written = LoCoMo(**args, session_gold="as_written").load(tmp_path)
    assert normalized.groups[0].items[0].gold_sessions == ("session_1", "session_2")
    assert written.groups[0].items[0].gold_sessions == ("session_1", "session_9")  # first id only; D:2:2 none
    assert normalized.records is None and written.records.endswith("session gold: as written")
    with pytest.raises(ConfigError, match="benchmark.session_gold=raw: choose one of normalized, as_written"):
        LoCoMo(**args, session_gold="raw")


def test_hybrid_first_seen_ties_follow_the_rankings_order_lexical_first():
    import numpy as np

    arm = HybridArm(embedder=_Constant(), use_cache=False, ties="first_seen")
    arm._records = [Record(key=f"r{i}", text="x") for i in range(5)]
    # rank 1 of each ranking ties (r4 lexical, r3 vector), and rank 2 (r1 lexical, r0 vector)
    lexical, vector = np.array([4, 1]), np.array([3, 0])
    assert [h.key for h in arm.fuse(lexical, vector, 4)] == ["r4", "r3", "r1", "r0"]
    arm.ties = "record_order"
    assert [h.key for h in arm.fuse(lexical, vector, 4)] == ["r3", "r4", "r0", "r1"]
    with pytest.raises(ArmError, match="arm.ties='random': use record_order"):
        HybridArm(embedder=_Constant(), use_cache=False, ties="random")
