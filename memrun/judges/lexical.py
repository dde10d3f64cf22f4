"""Lexical judges (no LLM) and the optional lexical scores shown beside any judge.

Judges (label from a string rule; ``score`` is the rule's number):

- ``exact``: the normalized answer equals a normalized gold string (score 1/0);
- ``substring``: a normalized gold string occurs in the normalized answer (1/0);
- ``f1``: token F1 against the gold, labelled CORRECT at ``threshold`` or above.
  Published LoCoMo numbers use incompatible F1 definitions, so ``variant`` picks one
  and is recorded in the instrument (``judge_model = "f1/<variant>"``):

  * ``locomo``: as LoCoMo's official evaluation computes it (snap-research/LoCoMo,
    ``task_eval/evaluation.py``, ``f1_score`` / ``f1`` / ``eval_question_answering``):
    lower-case, strip punctuation, commas and the words a/an/the/and, Porter-stem each
    token (NLTK), F1 over the multiset overlap. Per category: multi-hop answers are
    split on commas and scored as the mean over gold parts of the best-matching answer
    part; open-domain gold keeps only the part before the first ``;``; adversarial
    (abstention) items score 1 when the answer contains "no information available" or
    "not mentioned", else 0.
  * ``mem0``: as mem0's LoCoMo evaluation computes it (mem0ai/mem0,
    ``evaluation/metrics/utils.py``, ``calculate_metrics``): lower-case, replace
    ``. , ! ?`` with spaces, split on whitespace, F1 over the *set* overlap, no
    stemming, no per-category rules.

Normalization for ``exact`` and ``substring`` is SQuAD's (Rajpurkar et al. 2016):
lower-case, strip punctuation and articles, collapse whitespace. Gold strings are the
item's answer plus, for a benchmark whose gold keys are answer phrases (gold match
``substring``), those keys.

Abstention: on an abstention item an answer containing one of ``abstention_phrases`` is
CORRECT and any other answer WRONG; on other items such an answer is an ABSTAIN.

Lexical scores (``lexical_scores: true``): :func:`lexical_scores` adds ``token_f1``
(SQuAD's multiset token F1), ``bleu1`` (NLTK ``sentence_bleu``, unigram weights,
smoothing method 1) and ``rouge_l`` (the ``rouge`` package's ROUGE-L F-measure, the
library LoCoMo's own evaluation uses), each on SQuAD-normalized text, against the gold.
They never replace the judge.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from memrun.errors import ConfigError
from memrun.judges import Case, JudgeVerdict
from memrun.lazy import lazy
from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, WRONG

if TYPE_CHECKING:
    import rouge
    from nltk import stem as nltk_stem
    from nltk.translate import bleu_score
else:
    nltk_stem = lazy("nltk.stem")
    bleu_score = lazy("nltk.translate.bleu_score")
    rouge = lazy("rouge")

DEFAULT_ABSTENTION_PHRASES = ("no information available", "not mentioned")
F1_VARIANTS = ("locomo", "mem0")
_PUNCT = set(string.punctuation)


def squad_normalize(text: str) -> str:
    """SQuAD normalization: lower-case, drop punctuation and a/an/the, collapse spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def locomo_normalize(text: str) -> str:
    """LoCoMo's ``normalize_answer``: drop commas, lower-case, drop punctuation, a/an/the/and."""
    text = "".join(ch for ch in text.replace(",", "").lower() if ch not in _PUNCT)
    return " ".join(re.sub(r"\b(a|an|the|and)\b", " ", text).split())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    return nltk_stem.PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


def _f1(common: int, n_pred: int, n_gold: int) -> float:
    if common == 0 or n_pred == 0 or n_gold == 0:
        return 0.0
    precision, recall = common / n_pred, common / n_gold
    return 2 * precision * recall / (precision + recall)


def locomo_f1_score(prediction: str, gold: str) -> float:
    """LoCoMo's ``f1_score``: stemmed multiset token F1 after :func:`locomo_normalize`."""
    pred = [_stem(w) for w in locomo_normalize(prediction).split()]
    ref = [_stem(w) for w in locomo_normalize(gold).split()]
    return _f1(sum((Counter(pred) & Counter(ref)).values()), len(pred), len(ref))


def locomo_multi_f1(prediction: str, gold: str) -> float:
    """LoCoMo's ``f1`` for multi-hop: mean over comma-separated gold parts of the best answer part."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(locomo_f1_score(p, g) for p in preds) for g in golds) / len(golds)


def mem0_f1(prediction: str, gold: str) -> float:
    """mem0's token F1: set overlap of ``simple_tokenize`` tokens, no stemming."""

    def tokens(text: str) -> set[str]:
        return set(re.sub(r"[.,!?]", " ", str(text).lower()).split())

    pred, ref = tokens(prediction), tokens(gold)
    return _f1(len(pred & ref), len(pred), len(ref))


def squad_token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1: multiset overlap of :func:`squad_normalize` tokens."""
    pred, ref = squad_normalize(prediction).split(), squad_normalize(gold).split()
    return _f1(sum((Counter(pred) & Counter(ref)).values()), len(pred), len(ref))


def lexical_scores(prediction: str, gold: str | None) -> dict[str, float | None]:
    """``token_f1``, ``bleu1`` and ``rouge_l`` of ``prediction`` against ``gold`` (None without gold)."""
    if gold is None:
        return {"token_f1": None, "bleu1": None, "rouge_l": None}

    pred_tokens = squad_normalize(prediction).split()
    gold_tokens = squad_normalize(gold).split()
    bleu = (
        float(bleu_score.sentence_bleu([gold_tokens], pred_tokens, weights=(1, 0, 0, 0),
                                       smoothing_function=bleu_score.SmoothingFunction().method1))
        if pred_tokens and gold_tokens
        else 0.0
    )
    return {"token_f1": squad_token_f1(prediction, gold), "bleu1": bleu, "rouge_l": _rouge_l(prediction, gold)}


@lru_cache(maxsize=1)
def _rouge() -> Any:
    return rouge.Rouge(metrics=["rouge-l"])


def _rouge_l(prediction: str, gold: str) -> float:
    pred, ref = squad_normalize(prediction), squad_normalize(gold)
    if not pred or not ref:
        return 0.0  # the library raises on an empty side
    return float(_rouge().get_scores(pred, ref)[0]["rouge-l"]["f"])


class _LexicalJudge:
    """Shared parts: gold strings, abstention handling, the verdict."""

    kind = "lexical"

    def __init__(
        self,
        *,
        llm: Any = None,
        where: str = "judge",
        abstention_categories: Sequence[str] = (),
        abstention_phrases: Sequence[str] = DEFAULT_ABSTENTION_PHRASES,
    ) -> None:
        self.abstention_categories = tuple(abstention_categories)
        self.abstention_phrases = tuple(p.lower() for p in abstention_phrases)

    def describe(self) -> dict[str, Any]:
        return {"judge_model": self.kind, "judge_prompt_sha256": None, "fake": False, "endpoint": None}

    def abstains(self, answer: str) -> bool:
        low = answer.lower()
        return any(p in low for p in self.abstention_phrases)

    def score(self, case: Case, golds: list[str]) -> tuple[float, bool]:
        """(score, passed) for a non-abstention item with at least one gold string."""
        raise NotImplementedError

    async def grade(self, case: Case, repeat: int) -> JudgeVerdict:
        if case.abstention:
            ok = self.abstains(case.answer)
            why = "the answer abstains" if ok else "the answer does not abstain on an unanswerable question"
            return JudgeVerdict(CORRECT if ok else WRONG, 1.0 if ok else 0.0, why, None)
        golds = [g for g in ([case.gold] if case.gold is not None else []) + list(case.gold_keys) if g.strip()]
        if not golds:
            return JudgeVerdict(ERROR, None, "no gold answer to compare against", None)
        score, passed = self.score(case, golds)
        if not passed and self.abstains(case.answer):
            return JudgeVerdict(ABSTAIN, score, "the answer abstains", None)
        return JudgeVerdict(CORRECT if passed else WRONG, score, f"{self.kind} score {score:.3f}", None)


class ExactJudge(_LexicalJudge):
    """``judge=exact``: the normalized answer equals a normalized gold string."""

    kind = "exact"

    def score(self, case: Case, golds: list[str]) -> tuple[float, bool]:
        answer = squad_normalize(case.answer)
        hit = any(answer == squad_normalize(g) for g in golds)
        return float(hit), hit


class SubstringJudge(_LexicalJudge):
    """``judge=substring``: a normalized gold string occurs in the normalized answer."""

    kind = "substring"

    def score(self, case: Case, golds: list[str]) -> tuple[float, bool]:
        answer = squad_normalize(case.answer)
        hit = any((n := squad_normalize(g)) and n in answer for g in golds)
        return float(hit), hit


class F1Judge(_LexicalJudge):
    """``judge=f1``: token F1 (``variant`` locomo | mem0), CORRECT at ``threshold`` or above.

    multi_answer_categories / first_answer_categories: category labels for LoCoMo's
    per-category rules (variant ``locomo`` only; see the module docstring).
    """

    def __init__(
        self,
        *,
        variant: str = "locomo",
        threshold: float = 0.5,
        multi_answer_categories: Sequence[str] = ("multi-hop",),
        first_answer_categories: Sequence[str] = ("open-domain",),
        where: str = "judge",
        **kwargs: Any,
    ) -> None:
        if variant not in F1_VARIANTS:
            raise ConfigError(f"{where}.variant={variant!r}: choose one of {', '.join(F1_VARIANTS)}")
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"{where}.threshold={threshold}: must be in [0, 1]")
        super().__init__(where=where, **kwargs)
        self.variant = variant
        self.threshold = threshold
        self.multi = tuple(multi_answer_categories)
        self.first = tuple(first_answer_categories)
        self.kind = f"f1/{variant}"

    def score(self, case: Case, golds: list[str]) -> tuple[float, bool]:
        gold = golds[0]
        if self.variant == "mem0":
            value = mem0_f1(case.answer, gold)
        elif case.category_label in self.multi:
            value = locomo_multi_f1(case.answer, gold)
        else:
            if case.category_label in self.first:
                gold = gold.split(";")[0].strip()
            value = locomo_f1_score(case.answer, gold)
        return value, value >= self.threshold
