"""``benchmark=beam benchmark.preset=official``: BEAM's score table (int(score) per rubric
item, tau_norm for event ordering, abilities averaged over chats, their ten-ability mean as
the headline), its reader prompt, and the README's size name 128K."""

import re

import pytest

from accuracy.helpers import execute_run, rows, summary
from benchmarks.test_beam import CATS
from benchmarks.test_beam_judge import item_score, judge_reply
from memrun.benchmarks.beam import Beam
from memrun.errors import ConfigError
from memrun.io.reader import read_run
from memrun.metrics.beam_official import official_item_score, official_table
from servers.openai_server import prompt_text


def row(item, ability, chat, scores, tau=None, label="wrong"):
    return {"item_id": item, "category": ability, "cluster": chat, "rubric_scores": scores, "order_tau_norm": tau,
            "label": label, "error": None, "repeat": 0}


def test_official_item_score_truncates_half_points_and_reads_tau_norm_for_event_ordering():
    assert official_item_score(row("a", "knowledge_update", "1", [1.0, 0.5, 0.5, 0.0])) == 0.25
    assert official_item_score(row("b", "event_ordering", "1", [0.5, 0.5], tau=0.75)) == 0.75
    assert official_item_score(row("c", "event_ordering", "1", [1.0], tau=None)) is None  # undefined tau: unscored
    assert official_item_score(row("d", "summarization", "1", [1.0], label="error")) is None


def test_the_table_averages_each_ability_over_chats_then_the_ten_abilities():
    data = [row("1:a", "summarization", "1", [1.0, 0.5]),     # chat 1: 0.5
            row("1:b", "summarization", "1", [1.0, 1.0]),     # chat 1: 1.0 -> chat mean 0.75
            row("2:a", "summarization", "2", [0.5]),          # chat 2: 0.0 (one question: a chat with fewer weighs the same)
            row("1:c", "event_ordering", "1", [0.0], tau=0.5)]
    table = official_table(data, ["summarization", "event_ordering"])
    assert table["per_ability"] == {"summarization": pytest.approx(0.375), "event_ordering": 0.5}
    assert table["ten_ability_mean"] == pytest.approx((0.375 + 0.5) / 2)
    assert table["n_rows_truncated"] == 2 and table["n_items"] == 4
    assert official_table([{"item_id": "x", "label": "correct"}], ["x"]) is None  # not a rubric run
    missing = official_table(data, ["summarization", "event_ordering", "abstention"])
    assert missing["ten_ability_mean"] is None  # an ability without a value: no mean of ten


def test_128k_is_the_100k_size_and_an_unknown_preset_is_one_line():
    assert Beam(split="128K", url="http://127.0.0.1:9", categories=CATS).split == "100K"
    with pytest.raises(ConfigError, match=r"^benchmark.preset=paper: choose one of memrun, official"):
        Beam(split="100K", url="http://127.0.0.1:9", categories=CATS, preset="paper")
    with pytest.raises(ConfigError) as err:
        Beam(split="64K", url="http://127.0.0.1:9", categories=CATS)
    message = str(err.value)  # every accepted name, the README's 128K included, in one line
    assert message.startswith("benchmark.split=64K: no such BEAM size") and "\n" not in message
    assert all(name in message for name in ("100K", "128K", "500K", "1M", "10M")), message


def official_responder(ordering):
    """Reader (BEAM's prompt): event-ordering questions get their events reversed, one a line,
    others a fixed answer. Judge: item_score of the criterion; equivalence: equal snippets."""

    def respond(body):
        text = prompt_text(body)
        judged = judge_reply(text)
        if judged is not None:
            return judged
        assert "STRICT INSTRUCTIONS" in text, "the official preset sends BEAM's reader prompt"
        question = re.search(r"QUESTION:\n(.*)\n", text).group(1)
        return "\n".join(reversed(ordering[question])) if question in ordering else "loopback answer"

    return respond


@pytest.mark.realdata
def test_an_official_run_reports_the_official_table_as_its_headline(llm_env, beam_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMRUN_DATA_DIR", str(beam_dir))
    items = [i for g in Beam(split="100K", url="http://127.0.0.1:9", categories=CATS).load(beam_dir).groups
             for i in g.items]
    ordering = {i.question: i.extra["rubric"] for i in items if i.category == "event_ordering"}
    llm_env.responder = official_responder(ordering)
    out, _ = execute_run(tmp_path, "benchmark=beam", "benchmark.split=128K", "benchmark.preset=official",
                         "judge=beam_rubric", "concurrency=16")
    table = {r["item_id"]: r for r in rows(out)}
    assert len(table) == 400 and not any(r["error"] for r in table.values())
    # the official values, from the rubric and the answers alone: int() of each item's score;
    # event ordering's reversed events: tau_b -1, tau_norm 0 (two or more events)
    expected: dict[str, dict[str, list[float]]] = {}
    for item in items:
        scores = [item_score(r) for r in item.extra["rubric"]]
        value = 0.0 if item.category == "event_ordering" else sum(int(s) for s in scores) / len(scores)
        expected.setdefault(item.category, {}).setdefault(item.cluster, []).append(value)
    per_ability = {a: sum(sum(v) / len(v) for v in chats.values()) / len(chats) for a, chats in expected.items()}
    s = summary(out)
    official = s["beam_official"]
    assert official["per_ability"] == pytest.approx(per_ability)
    assert official["ten_ability_mean"] == pytest.approx(sum(per_ability.values()) / 10)
    assert s["headline"] == {"metric": "official_score", "slice": "beam_official.ten_ability_mean",
                             "value": pytest.approx(official["ten_ability_mean"])}
    halves = sum(1 for i in items if i.category != "event_ordering" and 0.5 in [item_score(r) for r in i.extra["rubric"]])
    assert official["n_rows_truncated"] == halves > 0
    # memrun's own figures stay beside it: the mean judge score credits 0.5
    assert s["category_averaged"]["mean_judge_score"] != pytest.approx(official["ten_ability_mean"])
    instrument = read_run(out).instrument
    assert instrument.denominator == "beam_official" and instrument.split == "100K"
    assert s["intervals"]["metric"] == "official_score"
