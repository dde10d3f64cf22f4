"""Judges: grade a reader's answer against an item's gold.

A judge is any class named by ``_target_`` in ``conf/judge/<name>.yaml``. memrun builds
it with the config's keys except ``name`` plus ``llm=`` (the run's
:class:`memrun.llm.service.LLMService`; lexical judges ignore it), and calls

- ``describe() -> dict``: its instrument fields (``judge_model``, ``judge_prompt_sha256``);
- ``async grade(case: Case, repeat: int) -> JudgeVerdict``;

and, when it has them, its optional hooks (:data:`JUDGE_HOOKS`, read through
:func:`judge_hooks`): ``request(case)`` / ``requests(case)`` (the chat requests it sends,
for ``memrun plan``, the cache prefetch and ``memrun view``), ``abstention_categories``,
``fractional`` (its scores are fractions: the headline is their mean), ``plan_note`` (said
by ``memrun plan``) and ``endpoint``. :func:`build_judge` holds the judge to them, one line
naming a missing or mistyped hook.

Built in: LLM judges (:mod:`memrun.judges.llm`; ``gpt4o``, ``gpt41``, ``claude``), the
rubric judge (:mod:`memrun.judges.rubric`; ``beam_rubric``: fractional scores) and
lexical judges needing no LLM (:mod:`memrun.judges.lexical`; ``exact``, ``substring``,
``f1`` with its ``locomo`` / ``mem0`` variants).

Abstention items (the right answer is "this cannot be known"): an item whose category
label is in the judge's ``abstention_categories`` (LoCoMo: ``adversarial``) or that the
benchmark marks ``Item.abstention`` (LongMemEval's ``_abs`` questions). Judges grade
them with the abstention rule.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from hydra.errors import InstantiationException

from memrun.core.hooks import VALUE, Hook, bind, check
from memrun.core.plugins import locate_class
from memrun.core.plugins import params as plugin_params
from memrun.errors import ConfigError, MemrunError
from memrun.records import Item
from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, WRONG

JUDGE_RESERVED_KEYS = ("name",)
LABELS = (CORRECT, WRONG, ABSTAIN, ERROR)


@dataclass(frozen=True)
class Case:
    """What a judge grades: the item, its category label, the answer, and the gold strings.

    gold: the gold answer as text (None when the item has none, e.g. LoCoMo adversarial
    rows). gold_keys: extra acceptable strings (an author-written set's gold phrases).
    abstention: True when the right answer is to say it cannot be known.
    """

    item: Item
    category_label: str
    answer: str
    gold: str | None
    gold_keys: tuple[str, ...] = ()
    abstention: bool = False


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge's output for one answer.

    label: correct | wrong | abstain | error. score: 1.0/0.0 for LLM judges, the
    lexical score (e.g. F1 in [0, 1]) for lexical judges, the mean of the rubric item
    scores for rubric judges (:mod:`memrun.judges.rubric`), None on error.
    explanation: the judge's reason (or why it is an error). prompt: the prompt file used.
    cached: the call came from the cache. tokens: tokens the call used, as reported.
    details: further row columns the judge fills (rubric judges: ``rubric_scores``,
    ``order_f1``, ``order_tau_norm``, ``order_score``; see :mod:`memrun.io.schema`).
    """

    label: str
    score: float | None
    explanation: str
    prompt: str | None = None
    cached: bool = True
    tokens: int | None = None
    details: Mapping[str, Any] | None = None


@runtime_checkable
class Judge(Protocol):
    """What the run needs from a judge."""

    def describe(self) -> dict[str, Any]:
        """``judge_model``, ``judge_prompt_sha256`` (None without a prompt), ``fake`` (a fake
        provider) and ``endpoint`` (its :class:`memrun.llm.endpoint.Endpoint`, None without one)."""
        ...

    async def grade(self, case: Case, repeat: int) -> JudgeVerdict:
        """Grade one answer. Raises CallError / BudgetExhausted for a failed call."""
        ...


JUDGE_HOOKS: tuple[Hook, ...] = (
    Hook("describe", required=True, sync=True),
    Hook("grade", ("case", "repeat"), required=True),
    Hook("request", ("case",), sync=True),
    Hook("requests", ("case",), sync=True),
    Hook("abstention_categories", kind=VALUE, types=(tuple, list)),
    Hook("fractional", kind=VALUE, types=(bool,)),
    Hook("plan_note", kind=VALUE, types=(str, type(None))),
    Hook("endpoint", kind=VALUE, types=(object,)),
)
"""The judge contract as the run checks it (module docstring): one :class:`~memrun.core.hooks.Hook`
per method or attribute the run may call or read."""
CONTRACT = "memrun.judges (docs/accuracy.md)"


@dataclass(frozen=True)
class JudgeHooks:
    """A judge's optional hooks as the run reads them: ``request`` / ``requests`` bound (None
    when absent), the values defaulted (no abstention categories, not fractional, no note,
    no endpoint)."""

    request: Any
    requests: Any
    abstention_categories: tuple[str, ...]
    fractional: bool
    plan_note: str | None
    endpoint: Any


def judge_hooks(judge: object) -> JudgeHooks:
    """``judge``'s optional hooks (:class:`JudgeHooks`), looked up as :data:`JUDGE_HOOKS` declares them."""
    bound = bind(judge, JUDGE_HOOKS)
    return JudgeHooks(request=bound["request"], requests=bound["requests"],
                      abstention_categories=tuple(bound["abstention_categories"] or ()),
                      fractional=bound["fractional"] is True, plan_note=bound["plan_note"] or None,
                      endpoint=bound["endpoint"])


def is_abstention(item: Item, category_label: str, abstention_categories: Sequence[str]) -> bool:
    """True when ``item`` is an abstention item (see the module docstring)."""
    return item.abstention or category_label in abstention_categories


def build_judge(node: Any, where: str, llm: Any) -> Judge:
    """Instantiate the judge config ``node`` (at config key ``where``) and hold it to
    :data:`JUDGE_HOOKS`. Raises ConfigError (one line naming the key, or the hook)."""
    if "_target_" not in node:
        raise ConfigError(f"{where}: no _target_ key; name the class that implements the judge")
    params = plugin_params(node, JUDGE_RESERVED_KEYS)
    target = params.pop("_target_")
    try:
        cls = locate_class(target)
    except (ImportError, InstantiationException, ValueError) as exc:
        raise ConfigError(f"{where}._target_={target}: cannot import ({exc})".splitlines()[0]) from exc
    try:
        sig = inspect.signature(cls)
        sig.bind(llm=llm, where=where, **params)
    except TypeError as exc:
        raise ConfigError(f"{where}: {target} does not take these keys ({exc})") from exc
    judge = cls(llm=llm, where=where, **params)
    check(judge, JUDGE_HOOKS, where, CONTRACT, ConfigError, name=target)
    if inspect.iscoroutinefunction(judge.describe) or not inspect.iscoroutinefunction(judge.grade):
        raise ConfigError(f"{where}: {target}.grade must be async def and describe a plain def "
                          f"(memrun awaits grade, and calls describe); the judge contract is {CONTRACT}")
    if not cls.__module__.startswith("memrun.judges."):  # a class of the user's: its verdicts checked
        return CheckedJudge(judge, target)  # a Judge: describe, grade and the rest (the judge's own)
    return judge


class CheckedJudge:
    """A judge class of the user's own (``judge._target_=pkg.Class``) held to what ``grade``
    returns, as an arm's hits and a benchmark's data are (:func:`memrun.pipeline.one_history.check_hits`,
    :mod:`memrun.benchmarks.checked`): a verdict of the wrong shape (not a JudgeVerdict, a label
    not in :data:`LABELS`, a str score) is one ConfigError line naming the class and the field,
    not a traceback at the row or the Parquet writer; an exception other than a MemrunError
    (a failed LLM call is one) fails that item, its reason on the row, as an arm's ``search``
    raising does. Every other attribute is the judge's own. memrun's judges are not wrapped."""

    def __init__(self, judge: Any, target: str) -> None:
        self._judge, self._target = judge, target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._judge, name)

    def describe(self) -> Any:
        """The judge's own ``describe()``."""
        return self._judge.describe()

    async def grade(self, case: Case, repeat: int) -> JudgeVerdict:
        """The judge's verdict, checked (:func:`check_verdict`)."""
        try:
            verdict = await self._judge.grade(case, repeat)
        except MemrunError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's code: this item fails, the run goes on
            return JudgeVerdict(ERROR, None, f"{self._target}.grade raised {type(exc).__name__}: {exc}")
        return check_verdict(verdict, self._target)


def check_verdict(verdict: Any, target: str) -> JudgeVerdict:
    """``verdict`` when it is a JudgeVerdict a row can hold; ConfigError naming the field otherwise."""
    def bad(what: str) -> ConfigError:
        return ConfigError(f"judge: {target}.grade returned {what}; the judge contract is {CONTRACT}")

    if not isinstance(verdict, JudgeVerdict):
        raise bad(f"{type(verdict).__name__} {verdict!r:.40}; it must return a memrun.judges.JudgeVerdict")
    if verdict.label not in LABELS:
        raise bad(f"the label {verdict.label!r:.40}; labels are {', '.join(LABELS)}")
    score = verdict.score
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise bad(f"a score of type {type(score).__name__} ({score!r:.40}); a score is a number or None")
    for field in ("explanation", "prompt"):
        value = getattr(verdict, field)
        if value is not None and not isinstance(value, str):
            raise bad(f"an {field} of type {type(value).__name__}; it is text or None")
    return verdict
