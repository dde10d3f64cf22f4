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
