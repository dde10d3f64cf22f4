"""``memrun plan``: calls needed vs cached, token and cost estimates, no network call."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from accuracy.helpers import execute_run, summary
from accuracy.test_accuracy_run import gold_reader
from memrun.arms.bm25 import BM25Arm
from memrun.cli import main
from memrun.core.instrument import Instrument
from memrun.io.reader import read_run


def changed(query: str) -> bool:
    """The questions whose retrieval ShiftedArm changes (about a third)."""
    return hashlib.sha256(query.encode()).digest()[0] % 3 == 0


class ShiftedArm(BM25Arm):
    """BM25 whose ranking loses its last hit for the questions :func:`changed` picks."""

    def search(self, query, k):
        hits = super().search(query, k)
        return hits[:-1] if changed(query) else hits


@pytest.fixture
def server(llm_env):
    llm_env.responder = gold_reader
    return llm_env


def plan(tmp_path: Path, capsys, *overrides: str) -> dict:
    capsys.readouterr()
    assert main(["plan", "axis=accuracy", f"cache_dir={tmp_path / 'cache'}", *overrides, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def by_role(d: dict) -> dict:
    return {e["role"]: e for e in d["endpoints"]}


def test_b_pays_only_for_the_items_whose_retrieval_changed(server, tmp_path, capsys):
    a, _ = execute_run(tmp_path, "judge=gpt41", "repeats=2", name="a")
    made = server.count()
    items = [r for r in read_run(a).table.to_pylist() if r["repeat"] == 0]
    n, moved = len(items), sum(changed(r["question"]) and r["n_retrieved"] > 0 for r in items)
    assert 0 < moved < n

    # A again: every call cached, token estimates from the usage the server reported
    again = plan(tmp_path, capsys, "judge=gpt41", "repeats=2")
    assert server.count() == made  # plan makes no call
    assert again["items"] == n and again["item_repeats"] == 2 * n
    assert again["totals"]["needed"] == 0 and again["totals"]["cached"] == 4 * n
    assert again["totals"]["cost_usd"] == 0 and "reported usage" in by_role(again)["reader"]["estimate"]
    inst = read_run(a).instrument
    assert again["comparability"] == {k: getattr(inst, k) for k in Instrument.comparability_fields()}

    # B changes retrieval for `moved` items: only their reader calls (and judges, whose answer is not known yet)
    b_args = ["judge=gpt41", "repeats=2", "arm._target_=pipeline.test_plan.ShiftedArm"]
    b = plan(tmp_path, capsys, *b_args)
    reader, judge = by_role(b)["reader"], by_role(b)["judge"]
    assert server.count() == made
    assert (reader["needed"], reader["cached"]) == (2 * moved, 2 * (n - moved))
    assert (judge["needed"], judge["cached"]) == (2 * moved, 2 * (n - moved))
    # the server reports 10 prompt and 5 completion tokens per call; B's prompts lost a hit, so are shorter
    assert 0 < reader["prompt_tokens"] < 2 * moved * 10 and reader["completion_tokens"] == 2 * moved * 5
    price = reader["price"]
    assert reader["cost_usd"] == pytest.approx(
        (reader["prompt_tokens"] * price["input"] + reader["completion_tokens"] * price["output"]) / 1e6)

    # the run makes exactly the reader calls planned (its answers match A's, so the judges hit the cache)
    out, _ = execute_run(tmp_path, *b_args, name="b")
    assert summary(out)["calls"]["made"] == reader["needed"] == server.count() - made


def test_plan_without_cache_estimates_from_characters_and_prices_the_models(server, tmp_path, capsys):
    d = plan(tmp_path, capsys, "judge=gpt41", "reader.chars_per_token=2.0")
    reader = by_role(d)["reader"]
    assert server.count() == 0 and d["totals"]["needed"] == 2 * d["items"]
    assert "chars_per_token" in reader["estimate"] and "upper bound" in reader["estimate"]
    assert reader["completion_tokens"] == 256 * d["items"] and d["totals"]["cost_complete"]
    half = plan(tmp_path, capsys, "judge=gpt41", "reader.chars_per_token=2.0", "--chars-per-token", "4")
    assert by_role(half)["reader"]["prompt_tokens"] == pytest.approx(reader["prompt_tokens"] / 2, abs=1)


def test_plan_on_the_recall_axis_and_in_markdown(tmp_path, capsys):
    assert main(["plan", "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("<!-- memrun-plan: synthetic/bm25 -->") and "items 30" in text
    assert "no LLM calls" in text and "axis=recall" in text


def test_plan_needs_no_api_key_and_notes_it_is_missing(server, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    d = plan(tmp_path, capsys, "judge=gpt41")  # plan() asserts exit 0
    assert d["network_calls"] == 0 and by_role(d)["judge"]["needed"] > 0
    notes = [w for w in d["warnings"] if "$OPENAI_API_KEY (reader.api_key_env) is not set" in w
             or "$OPENAI_API_KEY (judge.api_key_env) is not set" in w]
    assert len(notes) == 2 and all("a run needs it" in w for w in notes)
    assert server.count() == 0


def test_lexical_judge_and_unknown_model_price(server, tmp_path, capsys):
    d = plan(tmp_path, capsys, "judge=exact", "reader.model=my-model")
    assert [e["role"] for e in d["endpoints"]] == ["reader"]
    assert d["endpoints"][0]["cost_usd"] is None and d["totals"]["cost_complete"] is False
    assert main(["plan", "axis=accuracy", "judge=exact", "reader.model=my-model"]) == 0
    assert "unknown" in capsys.readouterr().out


def test_an_arm_that_answers_needs_no_reader_and_its_judge_requests_are_exact(server, tmp_path, capsys):
    # 5 of its 30 items have no answer (errors): min_coverage=0 and max_error_share=1 accept them
    args = ["judge=gpt41", "arm._target_=accuracy.answering_arm.AnsweringArm", "min_coverage=0", "max_error_share=1"]
    d = plan(tmp_path, capsys, *args)
    judge = by_role(d)["judge"]
    assert [e["role"] for e in d["endpoints"]] == ["judge"] and d["comparability"]["reader_model"] == "arm:bm25"
    out, _ = execute_run(tmp_path, *args)
    assert server.count() == judge["needed"] == summary(out)["calls"]["made"]  # items without an answer: no call
    assert plan(tmp_path, capsys, *args)["totals"]["needed"] == 0


def test_a_bad_price_table_is_one_line(tmp_path, capsys):
    prices = tmp_path / "prices.yaml"
    prices.write_text("models: {gpt-4.1: {input: 2}}\n")
    assert main(["plan", "--prices", str(prices)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memrun: error: prices ") and len(err.strip().splitlines()) == 1


@pytest.mark.realdata
def test_the_rubric_judge_is_priced_one_call_per_rubric_item(llm_env, tmp_path, capsys, data_dir):
    """``memrun plan benchmark=beam judge=beam_rubric`` refused ("no request(case) method");
    it now counts the rubric judge's calls: one per rubric item of every item."""
    from hydra import compose, initialize_config_dir

    from memrun.benchmarks.beam import Beam
    from memrun.cli import conf_dir
    from memrun.config import BENCHMARK_RESERVED_KEYS, register

    register()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("config", overrides=["benchmark=beam"])
    spec = {k: v for k, v in dict(cfg.benchmark).items() if k not in {"_target_", "name", *BENCHMARK_RESERVED_KEYS}}
    dataset = Beam(**spec).load(data_dir)
    rubric_items = sum(len(i.extra["rubric"]) for g in dataset.groups for i in g.items)
    d = plan(tmp_path, capsys, "benchmark=beam", "judge=beam_rubric")
    judge = by_role(d)["judge"]
    assert judge["calls"] == rubric_items > d["items"]
    assert any("event-ordering items also ask" in w for w in d["warnings"])
