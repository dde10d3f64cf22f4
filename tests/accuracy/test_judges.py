"""Judges: strict verdict parsing, prompt choice by question type, lexical rules and variants."""

from __future__ import annotations

import asyncio
import json

import pytest

from memrun.judges import Case
from memrun.judges.lexical import (
    ExactJudge,
    F1Judge,
    SubstringJudge,
    lexical_scores,
    locomo_f1_score,
    locomo_multi_f1,
    mem0_f1,
)
from memrun.judges.llm import JudgeReplyUnparseable, LLMJudge, parse_verdict
from memrun.records import Item
from memrun.stats.labels import ABSTAIN, CORRECT, WRONG

PROMPTS = {"default": "default", "abstention": "abstention", "temporal": "temporal", "knowledge-update": "knowledge_update"}


def item(question: str = "When did Mel paint?", answer: str | None = "7 May 2023", **extra: object) -> Item:
    return Item("c:1", "c", "c", "2", question, answer, json.dumps(answer), (), extra=dict(extra))


def case(answer: str, gold: str | None = "7 May 2023", label: str = "single-hop", abstention: bool = False, **kw: object) -> Case:
    return Case(item=item(answer=gold, **kw), category_label=label, answer=answer, gold=gold, abstention=abstention)


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"verdict": "CORRECT", "explanation": "same date"}', "correct"),
        ('{"verdict": "wrong", "explanation": "x"}', "wrong"),
        ('{"verdict": "INCORRECT"}', "wrong"),
        ('{"verdict": "ABSTAIN", "explanation": "declined"}', "abstain"),
        ('```json\n{"verdict": "CORRECT", "score": 1}\n```', "correct"),
        ("CORRECT", "correct"),
        ('"WRONG."', "wrong"),
    ],
)
def test_parse_verdict_accepts_exact_labels(reply, label):
    assert parse_verdict(reply)[0] == label


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "The answer is INCORRECT",  # contains CORRECT; must not pass
        "CORRECT or WRONG",
        "false",
        '{"verdict": "false"}',  # a JSON string "false" is no verdict
        '{"correct": "false"}',
        '{"verdict": true}',
        '{"verdict": "CORRECT", "score": "1"}',
        '{"verdict": "CORRECT", "score": 0}',  # contradiction
        '{"verdict": "WRONG", "score": true}',
        '{"verdict": "CORRECT"',  # truncated JSON
        '["CORRECT"]',
    ],
)
def test_parse_verdict_rejects_everything_else(reply):
    with pytest.raises(JudgeReplyUnparseable):
        parse_verdict(reply)


def test_llm_judge_turns_an_unparseable_reply_into_error(openai_server, monkeypatch, tmp_path):
    from memrun.llm.cache import CallCache
    from memrun.llm.service import LLMService
    from servers.openai_server import Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
    # the first reply is re-asked once with the parse error shown, and is unparseable again
    openai_server.script(Reply.ok("I think it is INCORRECT"), Reply.ok("still INCORRECT, I think"),
                         Reply.ok(json.dumps({"verdict": "CORRECT", "explanation": "ok"})))

    async def go() -> list:
        llm = LLMService(CallCache(tmp_path))
        judge = LLMJudge(llm=llm, model="gpt-test", prompts=PROMPTS, base_url=openai_server.base_url)
        try:
            return [await judge.grade(case("7 May"), 0), await judge.grade(case("May 7th 2023"), 0)]
        finally:
            await llm.aclose()

    first, second = asyncio.run(go())
    assert first.label == "error" and first.score is None and "unparseable after a retry" in first.explanation
    assert second.label == "correct" and second.score == 1.0 and second.explanation == "ok" and not second.details

    # The unparseable replies were not kept: grading the first case again asks the judge again.
    openai_server.script(Reply.ok(json.dumps({"verdict": "WRONG", "explanation": "retried"})))

    async def again() -> tuple:
        llm = LLMService(CallCache(tmp_path))
        judge = LLMJudge(llm=llm, model="gpt-test", prompts=PROMPTS, base_url=openai_server.base_url)
        try:
            return await judge.grade(case("7 May"), 0), await judge.grade(case("May 7th 2023"), 0)
        finally:
            await llm.aclose()

    retried, cached = asyncio.run(again())
    assert (retried.label, retried.cached, retried.explanation) == ("wrong", False, "retried")
    assert (cached.label, cached.cached) == ("correct", True)
    assert openai_server.count() == 4


def test_llm_judge_prompt_by_question_type_and_dates(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
    judge = LLMJudge(llm=None, model="gpt-test", prompts=PROMPTS, abstention_categories=["adversarial"])
    assert judge.prompt_for(case("x", label="temporal")).name == "temporal"
    assert judge.prompt_for(case("x", label="knowledge-update")).name == "knowledge_update"
    assert judge.prompt_for(case("x", label="open-domain")).name == "default"
    assert judge.prompt_for(case("x", label="temporal", abstention=True)).name == "abstention"
    dated = Case(item=Item("c:2", "c", "c", "2", "How long ago?", "3 days", "", (), question_date="2023/05/30"),
                 category_label="temporal", answer="3 days", gold="3 days")
    text = judge.request(dated)[1].messages[0]["content"]
    assert "2023/05/30" in text and "off-by-one" in text and "3 days" in text
    assert judge.describe()["judge_prompt_sha256"] != LLMJudge(llm=None, model="gpt-test", prompts={"default": "default"}).describe()["judge_prompt_sha256"]


def test_llm_judge_shares_one_request_between_repeats_with_the_same_answer(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789")
    judge = LLMJudge(llm=None, model="gpt-test", prompts=PROMPTS)
    first = judge.request(case("7 May"))[1]
    assert judge.request(case("7 May"))[1] is first  # rendered and hashed once
    other = judge.request(case("8 May"))[1]
    assert other is not first and "8 May" in other.messages[0]["content"] and other.digest != first.digest
    temporal = judge.request(case("7 May", label="temporal"))
    assert temporal[0].name == "temporal" and temporal[1] is not first  # another prompt, another request
    no_gold = judge.request(case("7 May", gold=None))[1]
    assert no_gold is not first and "(none: the conversation does not contain the answer)" in no_gold.messages[0]["content"]


def test_locomo_f1_matches_the_official_definition():
    # normalize: drop commas, punctuation, a/an/the/and; Porter-stem; multiset overlap.
    assert locomo_f1_score("The painting, and a sunset.", "painting sunset") == 1.0
    assert locomo_f1_score("The painting of a sunset.", "painting sunset") == pytest.approx(0.8)  # P 2/3, R 1
    assert locomo_f1_score("running shoes", "run shoe") == 1.0  # stemming
    assert locomo_f1_score("a cat and a dog", "dog dog") == pytest.approx(2 * 0.5 * 0.5 / 1.0)  # multiset: 1 of 2 each
    assert locomo_f1_score("", "x") == 0.0
    # multi-hop: mean over gold parts of the best-matching answer part.
    assert locomo_multi_f1("hiking, painting", "painting, hiking, swimming") == pytest.approx(2 / 3)


def test_mem0_f1_uses_set_overlap_without_stemming():
    assert mem0_f1("dog dog cat", "dog") == pytest.approx(2 * 0.5 * 1.0 / 1.5)  # sets {dog, cat} vs {dog}
    assert mem0_f1("running", "run") == 0.0
    assert mem0_f1("Paris.", "paris") == 1.0


def grade(judge, c: Case):
    return asyncio.run(judge.grade(c, 0))


def test_f1_judge_variants_and_locomo_category_rules():
    locomo, mem0 = F1Judge(variant="locomo"), F1Judge(variant="mem0")
    assert locomo.describe()["judge_model"] == "f1/locomo" and mem0.describe()["judge_model"] == "f1/mem0"
    assert grade(locomo, case("runs daily", gold="run daily")).label == "correct"
    assert grade(mem0, case("runs daily", gold="run daily")).score == pytest.approx(0.5)
    # open-domain gold keeps the part before ';'
    od = grade(locomo, case("likely yes", gold="likely yes; she enjoys it", label="open-domain"))
    assert od.score == 1.0
    # adversarial (abstention) items: the official phrases decide.
    assert grade(locomo, case("Not mentioned in the conversation.", gold=None, abstention=True)).label == "correct"
    assert grade(locomo, case("In May.", gold=None, abstention=True)).label == "wrong"
    assert grade(locomo, case("Not mentioned in the conversation.", gold="7 May 2023")).label == "abstain"
    with pytest.raises(Exception, match="variant"):
        F1Judge(variant="squad")


def test_exact_and_substring_judges():
    assert grade(ExactJudge(), case("the 7 May 2023.", gold="7 May 2023")).label == "correct"
    assert grade(ExactJudge(), case("on 7 May 2023", gold="7 May 2023")).label == "wrong"
    assert grade(SubstringJudge(), case("It was on 7 May 2023!", gold="7 May 2023")).label == "correct"
    keyed = Case(item=item(), category_label="x", answer="at extension 4410", gold="Finance desk", gold_keys=("4410",))
    assert grade(SubstringJudge(), keyed).label == "correct"
    assert grade(SubstringJudge(), case("something", gold=None)).label == "error"


def test_lexical_scores_beside_the_judge():
    scores = lexical_scores("the cat sat on the mat", "the cat sat on the mat")
    assert scores == {"token_f1": 1.0, "bleu1": pytest.approx(1.0), "rouge_l": pytest.approx(1.0)}
    low = lexical_scores("a dog ran", "the cat sat on the mat")
    assert low["token_f1"] == 0.0 and low["bleu1"] < 0.2 and low["rouge_l"] == 0.0
    assert lexical_scores("x", None) == {"token_f1": None, "bleu1": None, "rouge_l": None}


def test_the_benches_varied_replies_are_readable_per_prompt_and_mixed():
    """bench_accuracy's server (--replies varied): every judge reply parses, the same prompt gets
    the same reply (temperature 0), and prompts get different answers and a mix of verdicts."""
    from servers.openai_server import varied_responder

    judge = [{"messages": [{"role": "user", "content": f'Question {i}. Reply as {{"verdict": ...}}'}]} for i in range(300)]
    verdicts = [parse_verdict(varied_responder(body))[0] for body in judge]
    assert set(verdicts) == {CORRECT, WRONG, ABSTAIN}
    assert varied_responder(judge[0]) == varied_responder(judge[0])
    answers = {varied_responder({"messages": [{"role": "user", "content": f"Question {i}"}]}) for i in range(50)}
    assert len(answers) == 50
