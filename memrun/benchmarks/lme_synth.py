"""Generate files in the LongMemEval schema, of any size, with answers planted in known turns.

LongMemEval is too large for a test suite and not on every machine, so tests and speed
scripts run on files this module writes (``memrun datasets synth``). The schema is the
published one (see :mod:`memrun.benchmarks.longmemeval`); the text is pseudo-words, so
the files carry no third-party content.

What a file holds, per question (all deterministic under ``seed``):

- ``sessions`` haystack sessions of ``turns`` alternating user/assistant turns of about
  ``turn_chars`` characters each; a share ``reuse`` (default 0.8) of the filler sessions
  is drawn from a pool shared by all questions (same id and content, a date of this
  haystack), each pooled session recurring ``pool_uses`` times on average (default 8),
  the way the published S and M files draw their haystacks from a shared session pool
  with heavy reuse (what a per-run token cache must be measured against);
- evidence sessions (ids ``answer_<question>_<n>``) at random places, one turn of each
  stating the fact and carrying ``has_answer: true`` (the other turns of an evidence
  session carry ``has_answer: false``, filler turns carry no such key);
- the six question types in the published proportions; multi-session questions have
  integer answers; knowledge-update questions state an old value first and a new one
  later, and carry the old one as ``superseded_answer`` (a memrun extension field);
- a share ``abstention`` of questions whose id ends in ``_abs`` and whose fact was
  never stated (the haystack only mentions a neighbouring one);
- optional edge cases: ``empty_sessions`` (share of filler sessions with no turn) and
  ``repeated_sessions`` (share of haystacks in which one session id occurs twice, at
  two dates, as it does in the published files).

Size: about ``questions * sessions * turns * (turn_chars + 45)`` bytes; the defaults
(500 x 50 x 10 x 1,065) come to ~277 MB like ``longmemeval_s``; ``sessions=500``
gives an ``m``-size file (~2.8 GB; ``longmemeval_m`` is 2.7 GB).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

# Published question-type counts of the 500-question files.
TYPE_WEIGHTS = {
    "single-session-user": 70,
    "single-session-assistant": 56,
    "single-session-preference": 30,
    "multi-session": 133,
    "temporal-reasoning": 133,
    "knowledge-update": 78,
}
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
_CONSONANTS = "bcdfghjklmnprstvwz"
_VOWELS = "aeiou"


@dataclass(frozen=True)
class SynthSpec:
    """The shape of a generated file (see the module docstring for each knob)."""

    questions: int = 500
    sessions: int = 50
    turns: int = 10
    turn_chars: int = 1065
    reuse: float = 0.8
    pool_uses: int = 8
    abstention: float = 0.06
    empty_sessions: float = 0.0
    repeated_sessions: float = 0.0
    seed: int = 0

    def check(self) -> None:
        """Raise ValueError naming the first knob out of range."""
        for name in ("questions", "sessions", "turns", "turn_chars", "pool_uses"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)}: must be at least 1")
        if self.sessions < 4:
            raise ValueError(f"sessions={self.sessions}: a haystack needs at least 4 sessions (3 evidence + 1 filler)")
        for name in ("reuse", "abstention", "empty_sessions", "repeated_sessions"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}={getattr(self, name)}: must be a share between 0 and 1")


class _Text:
    """Pseudo-word sentences drawn from a Zipf-weighted vocabulary (fast, seeded)."""

    def __init__(self, rng: random.Random, n_words: int = 8000, n_sentences: int = 6000) -> None:
        words: set[str] = set()
        while len(words) < n_words:
            words.add("".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(rng.randint(1, 4))))
        self.words = sorted(words)
        cum_weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(n_words)))
        self.sentences = []
        for _ in range(n_sentences):
            sentence = " ".join(rng.choices(self.words, cum_weights=cum_weights, k=rng.randint(5, 18)))
            self.sentences.append(sentence[0].upper() + sentence[1:] + ".")
        self.mean_len = sum(len(s) + 1 for s in self.sentences) / n_sentences

    def paragraph(self, rng: random.Random, chars: int) -> str:
        """Whole sentences, ``chars`` characters long on average."""
        whole, part = divmod(chars / self.mean_len, 1.0)
        k = max(1, int(whole) + (rng.random() < part))
        return " ".join(rng.choices(self.sentences, k=k))


class _Generator:
    def __init__(self, spec: SynthSpec) -> None:
        spec.check()
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.text = _Text(self.rng)
        self.pool: list[tuple[str, list[dict[str, Any]]]] = []
        self.pool_size = max(1, int(spec.questions * spec.sessions * spec.reuse / spec.pool_uses))
        types = [t for t, w in TYPE_WEIGHTS.items() for _ in range(w)]
        self.types = [types[(i * len(types)) // spec.questions] for i in range(spec.questions)]
        self.rng.shuffle(self.types)

    # -- sessions -----------------------------------------------------------------

    def _turns(self) -> list[dict[str, Any]]:
        if self.rng.random() < self.spec.empty_sessions:
            return []
        return [
            {"role": "user" if i % 2 == 0 else "assistant", "content": self.text.paragraph(self.rng, self.spec.turn_chars)}
            for i in range(self.spec.turns)
        ]

    def _filler(self) -> tuple[str, list[dict[str, Any]]]:
        if self.spec.reuse and self.rng.random() < self.spec.reuse:
            if len(self.pool) < self.pool_size:
                self.pool.append((f"pool_{self.rng.getrandbits(40):010x}", self._turns()))
                return self.pool[-1]
            return self.rng.choice(self.pool)
        return f"filler_{self.rng.getrandbits(48):012x}", self._turns()

    def _evidence(self, statement: str, role: str = "user") -> list[dict[str, Any]]:
        turns = self._turns() or [
            {"role": "user", "content": self.text.paragraph(self.rng, self.spec.turn_chars)},
            {"role": "assistant", "content": self.text.paragraph(self.rng, self.spec.turn_chars)},
        ]
        slots = [i for i, t in enumerate(turns) if t["role"] == role] or [0]
        at = self.rng.choice(slots)
        for i, turn in enumerate(turns):
            turn["has_answer"] = i == at
        turns[at] = {**turns[at], "content": f"{turns[at]['content']} {statement}"}
        return turns

    # -- one question -------------------------------------------------------------

    def question(self, index: int) -> dict[str, Any]:
        rng, spec = self.rng, self.spec
        qtype = self.types[index]
        qid = f"{rng.getrandbits(32):08x}"
        abstain = rng.random() < spec.abstention
        attr = " ".join(rng.sample(self.text.words[20:400], 2))  # common words: fillers use them too
        value = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(4))
        facts, question, answer, superseded = self._plant(qtype, attr, value, index)
        if abstain:
            qid += "_abs"
            other = " ".join(rng.sample(self.text.words[20:400], 2))
            facts = [(f"My {other} is {value}.", "user")]
            question = f"What is my {attr}?"
            answer = f"The information provided is not enough. You did not mention your {attr}."
            superseded = None
        n_fill = spec.sessions - len(facts)
        sessions = [self._filler() for _ in range(n_fill)]
        positions = sorted(rng.sample(range(spec.sessions), len(facts)))
        evidence_ids = []
        for n, (pos, (statement, role)) in enumerate(zip(positions, facts), start=1):
            sid = f"answer_{qid.removesuffix('_abs')}_{n}"
            evidence_ids.append(sid)
            sessions.insert(pos, (sid, self._evidence(statement, role)))
        start = datetime(2023, 1, 1) + timedelta(days=rng.randint(0, 300))
        dates = []
        for _ in sessions:
            start += timedelta(hours=rng.randint(3, 60), minutes=rng.randint(0, 59))
            dates.append(start)
        if rng.random() < spec.repeated_sessions and n_fill:
            i = rng.choice([i for i, (sid, _) in enumerate(sessions) if not sid.startswith("answer_")])
            sessions.append(sessions[i])
            start += timedelta(hours=rng.randint(3, 60))
            dates.append(start)
        item: dict[str, Any] = {
            "question_id": qid,
            "question_type": qtype,
            "question": question,
            "answer": answer,
            "question_date": (start + timedelta(days=1)).strftime(DATE_FORMAT),
            "haystack_session_ids": [sid for sid, _ in sessions],
            "haystack_dates": [d.strftime(DATE_FORMAT) for d in dates],
            "haystack_sessions": [turns for _, turns in sessions],
            "answer_session_ids": evidence_ids,
        }
        if superseded is not None:
            item["superseded_answer"] = superseded
        return item

    def _plant(self, qtype: str, attr: str, value: str, index: int) -> tuple[list[tuple[str, str]], str, Any, str | None]:
        """(statements and the role that states each, question, answer, superseded value)."""
        if qtype == "single-session-assistant":
            return [(f"I recommend {value} for your {attr}.", "assistant")], f"What did you recommend for my {attr}?", value, None
        if qtype == "single-session-preference":
            return (
                [(f"I really enjoy {value} when it comes to {attr}.", "user")],
                f"Can you suggest something for my {attr}?",
                f"The user would prefer suggestions involving {value}.",
                None,
            )
        if qtype == "multi-session":
            n = self.rng.randint(2, 3)
            facts = [(f"I bought another {attr} today, number {i + 1}.", "user") for i in range(n)]
            return facts, f"How many {attr} did I buy?", n, None
        if qtype == "temporal-reasoning":
            return (
                [(f"I started {attr} {value} today.", "user"), (f"I finished {attr} {value} today.", "user")],
                f"Which did I do first with {attr} {value}, start or finish?",
                "start",
                None,
            )
        if qtype == "knowledge-update":
            old = value[::-1]
            return (
                [(f"My {attr} is {old}.", "user"), (f"Update: my {attr} is now {value}.", "user")],
                f"What is my {attr} now?",
                value,
                old,
            )
        return [(f"My {attr} is {value}.", "user")], f"What is my {attr}?", value, None


def generate(spec: SynthSpec) -> Iterator[dict[str, Any]]:
    """Yield ``spec.questions`` LongMemEval question objects (dicts), deterministic under the seed.

    Raises ValueError for a spec out of range (see :meth:`SynthSpec.check`).
    """
    gen = _Generator(spec)
    for i in range(spec.questions):
        yield gen.question(i)


def write(path: str | Path, spec: SynthSpec, progress: Callable[[], None] | None = None) -> int:
    """Write a LongMemEval-schema JSON array to ``path`` (via a ``.part`` file); return its size in bytes.

    progress: called after each question is written. Raises ValueError for a bad spec,
    OSError when the file cannot be written (no partial file is left behind).
    """
    path = Path(path)
    part = path.with_name(path.name + ".part")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with part.open("w", encoding="utf-8") as out:
            out.write("[")
            for i, question in enumerate(generate(spec)):
                out.write(("," if i else "") + "\n" + json.dumps(question, ensure_ascii=False))
                if progress is not None:
                    progress()
            out.write("\n]\n")
        part.replace(path)
    finally:
        part.unlink(missing_ok=True)
    return path.stat().st_size
