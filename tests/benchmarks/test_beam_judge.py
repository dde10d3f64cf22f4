"""BEAM's rubric judge and event-ordering score: hand-computed cases, strict parsing, and a
full 100K accuracy run against the loopback judge, compared on the continuous path."""

import asyncio
import itertools
import json
import math
import random
import re
import zlib

import pytest

from accuracy.helpers import execute_run, rows, summary
from memrun.cli import main
from memrun.io.reader import read_run
from memrun.judges.rubric import JudgeReplyUnparseable, parse_equivalence, parse_rubric_reply
from memrun.metrics.event_order import align, order_score, system_events
from servers.openai_server import prompt_text


def brute_tau_b(x, y):
    """Kendall tau-b from its definition (pair counts and the tie corrections), no scipy."""
    c = d = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx, sy = (x[i] > x[j]) - (x[i] < x[j]), (y[i] > y[j]) - (y[i] < y[j])
        if sx == 0 and sy == 0:
            continue
        if sx == 0:
            tx += 1
        elif sy == 0:
            ty += 1
        elif sx == sy:
            c += 1
        else:
            d += 1
    return (c - d) / math.sqrt((c + d + tx) * (c + d + ty))


@pytest.mark.parametrize("aligned, f1, tau_norm, score", [
    (["a", "b", "c"], 1.0, 1.0, 1.0),
    (["c", "b", "a"], 1.0, 0.0, 0.0),
    # tp 2, fp 1, fn 1: P = R = F1 = 2/3; ranks over [a, b, c, x]: ref 1 2 3 5, system 1 5 2 3;
    # concordant 4, discordant 2 of 6 pairs: tau_b 1/3, tau_norm 2/3, score 4/9
    (["a", "c", "x"], 2 / 3, 2 / 3, 4 / 9),
    # a blank line (an answer's trailing newline) is a system item the official evaluation counts: fp 1
    (["a", "b", "c", ""], 6 / 7, 1.0, 6 / 7),
])
def test_order_score_equals_hand_computed_values(aligned, f1, tau_norm, score):
    result = order_score(["a", "b", "c"], aligned)
    assert result.f1 == pytest.approx(f1) and result.tau_norm == pytest.approx(tau_norm)
    assert result.score == pytest.approx(score)


def test_an_undefined_tau_is_none_never_zero():
    result = order_score(["a"], ["a"])  # one event: every ranking is constant
    assert result.f1 == 1.0 and result.tau_b is None and result.score is None


def test_order_score_matches_the_definition_on_random_lists():
    rng = random.Random(5)
    for _ in range(200):
        ref = rng.sample("abcdefgh", rng.randint(2, 6))
        system = [rng.choice("abcdefghxyz") for _ in range(rng.randint(1, 7))]
        union = list(dict.fromkeys(ref + system))
        ranks = lambda seq: [{v: i + 1 for i, v in enumerate(seq)}.get(u, len(union) + 1) for u in union]  # noqa: B023 (called at once)
        result = order_score(ref, system)
        expected = brute_tau_b(ranks(ref), ranks(system))
        assert result.tau_b == pytest.approx(expected)
        assert result.score == pytest.approx((expected + 1) / 2 * result.f1)


def test_alignment_takes_the_first_unmatched_event_and_asks_in_order():
    asked = []

    async def same(event, line):
        asked.append((event, line))
        return event.lower() == line.strip().lower()

    aligned = asyncio.run(align(["A", "B", "C"], system_events("b\nb\nzz\na"), same))
    assert aligned == ["B", "b", "zz", "A"]  # the second "b" finds B used: it stays as it is
    assert asked[:2] == [("A", "b"), ("B", "b")]


@pytest.mark.parametrize("reply, score", [
    ('{"score": 0.5, "reason": "partly"}', 0.5),
    ('```json\n{"score": 1.0, "reason": "yes"}\n```', 1.0),
    ('{"score": 0}', 0.0),
])
def test_rubric_replies_that_parse(reply, score):
    assert parse_rubric_reply(reply)[0] == score


@pytest.mark.parametrize("reply", ['{"score": "1.0"}', '{"score": 0.7}', '{"score": true}', "1.0", "", '{"reason": "x"}',
                                   'Score: {"score": 1}'])
def test_unparseable_rubric_replies_raise(reply):
    with pytest.raises(JudgeReplyUnparseable):
        parse_rubric_reply(reply)


def test_equivalence_replies_are_yes_or_no_only():
    assert parse_equivalence("**YES**") and not parse_equivalence(" no. ")
    with pytest.raises(JudgeReplyUnparseable):
        parse_equivalence("Yes, they describe the same event")


# -- a full 100K accuracy run against the loopback judge -----------------------------------

_FIELD = re.compile(r"^- (QUESTION|RUBRIC CRITERION|RESPONSE TO EVALUATE)[^:]*: (.*)$", re.MULTILINE)


def item_score(rubric_item: str) -> float:
    """The loopback judge's score of a rubric item: a fixed function of its text."""
    return (0.0, 0.5, 1.0)[zlib.crc32(rubric_item.encode()) % 3]


def judge_reply(text: str) -> str | None:
    """The loopback judge's reply to a judge prompt (a rubric item's item_score, or YES/NO for
    equal snippets); None for a reader prompt."""
    if "RUBRIC CRITERION" in text:
        fields = dict(_FIELD.findall(text))
        return json.dumps({"score": item_score(fields["RUBRIC CRITERION"]), "reason": "loopback"})
    if "binary classifier" in text:
        first, second = re.search(r"First snippet: (.*?) \n\nSecond snippet: (.*)$", text, re.DOTALL).groups()
        return "YES" if first.strip() == second.strip() else "NO"
    return None


def beam_responder(rubrics):
    """Reader: event-ordering questions get their rubric's events in order, one a line;
    others a fixed answer. Judge: item_score; equivalence: YES when the snippets are equal."""

    def respond(body):
        text = prompt_text(body)
        judged = judge_reply(text)
        if judged is not None:
            return judged
        question = re.search(r"The user now asks: (.*)\n", text).group(1)
        return "\n".join(rubrics[question]) if question in rubrics else "loopback answer"

    return respond


@pytest.mark.realdata
def test_a_full_100k_accuracy_run_scores_rubrics_and_orderings(llm_env, beam_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMRUN_DATA_DIR", str(beam_dir))
    from benchmarks.test_beam import CATS
    from memrun.benchmarks.beam import Beam
    items = [i for g in Beam(split="100K", url="http://127.0.0.1:9", categories=CATS).load(beam_dir).groups for i in g.items]
    ordering = {i.question: i.extra["rubric"] for i in items if i.category == "event_ordering"}
    llm_env.responder = beam_responder(ordering)
    out, printed = execute_run(tmp_path, "benchmark=beam", "judge=beam_rubric", "concurrency=16")
    table = {r["item_id"]: r for r in rows(out)}
    assert len(table) == 400 and not any(r["error"] for r in table.values())
    for item in items:
        row = table[item.item_id]
        expected = [item_score(r) for r in item.extra["rubric"]]
        assert row["rubric_scores"] == expected
        assert row["judge_score"] == pytest.approx(sum(expected) / len(expected))
        assert row["label"] == ("correct" if min(expected) == 1.0 else "wrong")
        if item.category == "event_ordering":  # the reader gave the events in order: tau_norm 1, F1 1
            assert row["order_f1"] == 1.0 and row["order_score"] in (1.0, None)
    s = summary(out)
    mean = sum(r["judge_score"] for r in table.values()) / 400
    assert s["headline"]["metric"] == "mean_judge_score" and s["headline"]["value"] == pytest.approx(mean)
    assert s["per_category"]["event_ordering"]["mean_order_score"] == 1.0
    per_ability = [s["per_category"][a]["mean_judge_score"] for a in s["per_category"]]
    assert len(per_ability) == 10 and s["category_averaged"]["mean_judge_score"] == pytest.approx(sum(per_ability) / 10)
    assert s["intervals"]["metric"] == "mean_judge_score"  # the interval of the mean score, not of a label
    assert s["intervals"]["overall_all"]["mean"] == pytest.approx(mean)
    assert read_run(out).instrument.denominator == "mean_score"
    assert "event ordering (tau_norm x F1" in printed

    # a second run whose judge gives every rubric item 1: compare pairs the mean scores
    llm_env.responder = lambda body: (json.dumps({"score": 1}) if "RUBRIC CRITERION" in prompt_text(body)
                                      else beam_responder(ordering)(body))
    better, _ = execute_run(tmp_path, "benchmark=beam", "judge=beam_rubric", "concurrency=16", name="better", cache="c2")
    capsys.readouterr()
    code = main(["compare", str(out), str(better), "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    overall = result["overall"]
    assert overall["n_items"] == 400 and overall["n_clusters"] == 20
    assert overall["a_mean"] == pytest.approx(mean) and overall["b_mean"] == pytest.approx(1.0)
    assert overall["delta"] == pytest.approx(1.0 - mean)
    assert result["mcnemar"] is None  # the scores are not binary


class _Stub:
    """An LLM service that answers from a list of replies and records what it forgot."""

    def __init__(self, replies):
        self.replies, self.forgotten = list(replies), []

    async def call(self, endpoint, request, repeat):
        from types import SimpleNamespace
        text = self.replies.pop(0)
        return SimpleNamespace(result=SimpleNamespace(text=text, prompt_tokens=3, completion_tokens=2), cached=False)

    def forget(self, endpoint, request, repeat):
        self.forgotten.append(request)


def _case(category, rubric, answer="an answer"):
    from memrun.judges import Case
    from memrun.records import Item
    item = Item("1:x:0", "1", "1", category, "q?", "gold", '"gold"', (), extra={"rubric": rubric})
    return Case(item=item, category_label=category, answer=answer, gold="gold")


def _judge(replies, monkeypatch):
    from memrun.judges.rubric import RubricJudge
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-0123456789abcdef")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    stub = _Stub(replies)
    return RubricJudge(llm=stub, model="m"), stub


def test_the_rubric_mean_and_an_unparseable_reply_is_an_error_never_zero(monkeypatch):
    judge, _ = _judge(['{"score": 1}', '{"score": 0.5}', '{"score": 0}'], monkeypatch)
    verdict = asyncio.run(judge.grade(_case("knowledge_update", ["a", "b", "c"]), 0))
    assert verdict.score == pytest.approx(0.5) and verdict.label == "wrong"
    assert verdict.details == {"rubric_scores": [1.0, 0.5, 0.0]} and verdict.tokens == 15
    judge, stub = _judge(['{"score": 1}', 'The score is 1.', 'Still: the score is 1.'], monkeypatch)
    verdict = asyncio.run(judge.grade(_case("knowledge_update", ["a", "b"]), 0))
    assert verdict.label == "error" and verdict.score is None and "unparseable after a retry" in verdict.explanation
    assert len(stub.forgotten) == 2  # the reply and its retry: a re-run asks again
    judge, stub = _judge(['{"score": 1}', 'The score is 1.', '{"score": 1}'], monkeypatch)  # the retry parses
    verdict = asyncio.run(judge.grade(_case("knowledge_update", ["a", "b"]), 0))
    assert verdict.score == 1.0 and verdict.details == {"rubric_scores": [1.0, 1.0], "judge_retried": True}
    assert stub.forgotten == [] and stub.replies == []


def test_event_ordering_adds_tau_norm_times_f1(monkeypatch):
    # two rubric items scored 1; lines "second", "first": line 1 vs A? NO, vs B? YES; line 2 vs A? YES
    judge, stub = _judge(['{"score": 1}', '{"score": 1}', "NO", "YES", "YES"], monkeypatch)
    verdict = asyncio.run(judge.grade(_case("event_ordering", ["A", "B"], "second\nfirst"), 0))
    assert verdict.score == 1.0 and verdict.label == "correct"
    assert verdict.details["order_f1"] == 1.0 and verdict.details["order_tau_norm"] == 0.0  # reversed: tau_b -1
    assert verdict.details["order_score"] == 0.0 and stub.replies == []
