"""Schemas of the accuracy axis: the ``reader``, ``judge`` and ``judge2`` groups."""

from __future__ import annotations

from dataclasses import field
from typing import Dict, List, Optional

from omegaconf import MISSING

from memrun.config.schema import schema


@schema
class NoJudgeConfig:
    """``judge=none``: no judge (the retrieval axis needs none)."""

    name: str = "none"
    model: Optional[str] = None


# -- accuracy axis: reader and judges (memrun/llm, memrun/judges) -----------------------


@schema
class ReaderPin:
    """The reader (and judge) a benchmark's published numbers used."""

    model: str = MISSING
    prompt: str = MISSING
    judge: Optional[str] = None


@schema
class ReaderConfig:
    """``reader=default``: an OpenAI-compatible chat model (see memrun.llm.reader)."""

    name: str = "default"
    model: Optional[str] = None
    prompt: Optional[str] = None
    pins: Dict[str, ReaderPin] = field(default_factory=dict)
    base_url: Optional[str] = None
    base_url_env: Optional[str] = "OPENAI_BASE_URL"
    api_key_env: Optional[str] = "OPENAI_API_KEY"  # null: a keyless server (base_url must be set)
    provider: Optional[str] = None
    temperature: float = 0.0
    max_tokens: int = 256
    max_context_tokens: Optional[int] = None
    overflow: str = "truncate"
    chars_per_token: float = 4.0


@schema
class JudgeEndpointConfig:
    """The keys every LLM judge takes: where its chat model is and how it is asked."""

    base_url: Optional[str] = None
    base_url_env: Optional[str] = "OPENAI_BASE_URL"
    api_key_env: Optional[str] = "OPENAI_API_KEY"  # null: a keyless server (base_url must be set)
    provider: Optional[str] = None
    temperature: float = 0.0
    max_tokens: int = 256


@schema
class LLMJudgeConfig(JudgeEndpointConfig):
    """``judge=gpt41|gpt4o|claude``: an LLM judge (memrun.judges.llm.LLMJudge)."""

    _target_: str = "memrun.judges.llm.LLMJudge"
    name: str = MISSING
    model: str = MISSING
    prompts: Dict[str, str] = field(default_factory=lambda: {"default": "default", "abstention": "abstention"})
    abstention_categories: List[str] = field(default_factory=list)


@schema
class RubricJudgeConfig(JudgeEndpointConfig):
    """``judge=beam_rubric``: a rubric judge with fractional scores (memrun.judges.rubric.RubricJudge)."""

    _target_: str = "memrun.judges.rubric.RubricJudge"
    name: str = MISSING
    model: str = MISSING
    prompt: str = "beam_rubric"
    equivalence_prompt: str = "beam_equivalence"
    max_tokens: int = 512


@schema
class ExactJudgeConfig:
    """``judge=exact``: normalized answer == normalized gold."""

    _target_: str = "memrun.judges.lexical.ExactJudge"
    name: str = "exact"
    abstention_categories: List[str] = field(default_factory=lambda: ["adversarial"])
    abstention_phrases: List[str] = field(default_factory=lambda: ["no information available", "not mentioned"])


@schema
class SubstringJudgeConfig(ExactJudgeConfig):
    """``judge=substring``: the normalized gold occurs in the normalized answer."""

    _target_: str = "memrun.judges.lexical.SubstringJudge"
    name: str = "substring"


@schema
class F1JudgeConfig(ExactJudgeConfig):
    """``judge=f1``: token F1 with a ``variant`` (locomo | mem0), CORRECT at ``threshold``."""

    _target_: str = "memrun.judges.lexical.F1Judge"
    name: str = "f1"
    variant: str = "locomo"
    threshold: float = 0.5
    multi_answer_categories: List[str] = field(default_factory=lambda: ["multi-hop"])
    first_answer_categories: List[str] = field(default_factory=lambda: ["open-domain"])
