import json

import pytest

from memrun.core.instrument import Instrument


def test_comparability_fields_each_say_why():
    fields = Instrument.comparability_fields()
    for name in ("axis", "reader_model", "judge_model", "judge_prompt_sha256", "benchmark", "split", "slice",
                 "dataset_sha256", "search_mode", "embedder", "embedder_dim", "server_build", "index_revision",
                 "crediting", "denominator"):
        assert name in fields and len(fields[name]) > 10
    assert "run_id" not in fields and "started_at" not in fields


def test_diff_lists_differences_and_respects_treatments():
    a = Instrument(axis="recall", benchmark="locomo", search_mode="lexical", embedder=None, run_id="a")
    b = Instrument(axis="recall", benchmark="locomo", search_mode="vector", embedder="m", run_id="b")
    assert {d.field for d in a.diff(b)} == {"search_mode", "embedder"}  # run_id is provenance
    diff = a.diff(b, treatments=["search_mode"])
    assert [(d.field, d.a, d.b) for d in diff] == [("embedder", None, "m")]
    assert "similarity scale" in diff[0].why
    with pytest.raises(ValueError, match="--treatment run_id is not a comparability field"):
        a.diff(b, treatments=["run_id"])


def test_json_round_trip_ignores_unknown_keys():
    a = Instrument(axis="recall", ks=[1, 5], load_counts={"x": 1}, config={"arm": {"top_k": 10}})
    text = a.to_json()
    assert Instrument.from_json(text) == a
    assert Instrument.from_json(text[:-1] + ', "from_the_future": 1}') == a


def test_depth_counts_unless_the_metric_reads_only_a_top_k_both_rankings_reach():
    """arm.top_k (the field top_k): MRR reads each whole ranking, so 10 vs 20 differ; recall@5
    reads the same top 5 of both; recall@20 is beyond A's 10; a reader sees every hit."""
    a = Instrument(axis="recall", top_k=10)
    b = Instrument(axis="recall", top_k=20)
    assert [d.field for d in a.diff(b)] == ["top_k"] and "retrieval depth" in a.diff(b)[0].why
    assert a.diff(b, reads_to=5) == [] and a.diff(b, reads_to=10) == []
    assert [d.field for d in a.diff(b, reads_to=20)] == ["top_k"]
    assert a.diff(b, treatments=["top_k"]) == []
    acc_a, acc_b = Instrument(axis="accuracy", top_k=10), Instrument(axis="accuracy", top_k=20)
    assert [d.field for d in acc_a.diff(acc_b, reads_to=5)] == ["top_k"]
    assert Instrument(axis="recall", top_k=None).diff(b, reads_to=5)  # an unknown depth reaches nothing


def test_a_run_written_before_the_depth_was_recorded_reads_it_from_its_config():
    old = json.loads(Instrument(axis="recall", config={"arm": {"top_k": 20}}).to_json())
    del old["top_k"]
    assert Instrument.from_json(json.dumps(old)).top_k == 20
    old["config"] = {"arm": {"top_k": "x"}}
    assert Instrument.from_json(json.dumps(old)).top_k is None
