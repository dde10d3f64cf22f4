"""Content-addressed sessions: one copy of a session however many histories hold it.

LongMemEval places the same filler session in many questions' haystacks (in
``longmemeval_s`` about 24,000 session slots hold 19,000 distinct sessions), often at
another date each time. :class:`SessionStore` builds each session's
:class:`~memrun.records.Record` objects once and hands the same objects to every
history that holds the same session (same id, same turns, same date); the same turns
at another date get new records that share the text strings. A session is found by a
digest of its content, not by its id alone, so two different sessions under one id
never merge.

Memory stays bounded: the store holds sessions weakly, so a session lives only while
a history in memory holds it (:class:`HistoryRecords`, a history's records as a view
over its sessions), and a streamed file never accumulates. Arms see identical records (same key, same text) for a shared session;
an arm that caches embeddings by a hash of the record text therefore embeds each
distinct turn once per run, however many questions hold it.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import weakref
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, overload

from memrun.benchmarks.text import json_type
from memrun.errors import TurnError
from memrun.records import Record


class _Content:
    """The turns of one session, independent of its id and date."""

    __slots__ = ("texts", "answer_turns", "n_empty", "__weakref__")

    def __init__(self, texts: tuple[str | None, ...], answer_turns: tuple[int, ...], n_empty: int) -> None:
        self.texts = texts  # per turn: "role: content", None when not indexed or empty
        self.answer_turns = answer_turns  # turn indexes with has_answer true (any role)
        self.n_empty = n_empty


class Session:
    """One session at one date, as every history that holds it shares it.

    records: one Record per indexed, non-empty turn; key ``<session_id>_<turn number>``
        (1-based over all turns, LongMemEval's turn id), timestamp = the session date.
    answer_keys: keys of the turns marked ``has_answer`` (any role, indexed or not).
    gold_keys: the subset of ``answer_keys`` that are records (indexed roles).
    digest: hex digest of the turns (roles, contents, has_answer flags).
    n_empty: turns skipped because their content is empty.
    """

    __slots__ = (
        "session_id", "date", "digest", "records", "answer_keys", "gold_keys", "n_empty", "_content", "__weakref__"
    )

    def __init__(self, session_id: str, date: str | None, digest: str, content: _Content) -> None:
        self.session_id, self.date, self.digest = session_id, date, digest
        self.records = tuple([  # a list first: ~30% less than a generator for ~10^5 records a run
            Record(f"{session_id}_{i + 1}", text, date, session_id)  # key, text, timestamp, session
            for i, text in enumerate(content.texts)
            if text is not None
        ])
        self.answer_keys = tuple(f"{session_id}_{i + 1}" for i in content.answer_turns)
        self.gold_keys = tuple(
            f"{session_id}_{i + 1}" for i in content.answer_turns if content.texts[i] is not None
        )
        self.n_empty = content.n_empty
        self._content = content  # keeps the shared texts findable while the session lives


class HistoryRecords(Sequence[Record]):
    """A history's records: its sessions' records in order, without copying them.

    Holding the sessions keeps them (and so their sharing) alive as long as the history.
    """

    __slots__ = ("sessions", "_starts", "_len")

    def __init__(self, sessions: Sequence[Session]) -> None:
        self.sessions = tuple(sessions)
        sizes = [len(s.records) for s in self.sessions]
        self._starts = list(itertools.accumulate(sizes, initial=0))[:-1]
        self._len = sum(sizes)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...
    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("record index out of range")
        at = bisect.bisect_right(self._starts, index) - 1  # the last session starting at or before it
        return self.sessions[at].records[index - self._starts[at]]

    def __iter__(self) -> Iterator[Record]:
        for session in self.sessions:
            yield from session.records


class SessionStore:
    """Hands out :class:`Session` objects, sharing identical ones (see the module docstring).

    roles: the turn roles that become records (LongMemEval: ``user``, ``assistant``).
    keep_empty: turns with empty content become records too (counted in ``n_empty`` all
        the same), as LongMemEval's official evaluation indexes them; else they are skipped.
    render: ``(role, content) -> record text``; None: ``"<role>: <content>"``.
    """

    def __init__(self, roles: Collection[str], keep_empty: bool = False,
                 render: Callable[[str, str], str] | None = None) -> None:
        self.roles = frozenset(roles)
        self.keep_empty = keep_empty
        self.render = render or _role_colon
        self._sessions: weakref.WeakValueDictionary[tuple[str, str | None, str], Session] = weakref.WeakValueDictionary()
        self._contents: weakref.WeakValueDictionary[str, _Content] = weakref.WeakValueDictionary()
        self.shared = 0  # sessions whose turns were already in the store (texts shared)

    def session(self, session_id: str, date: str | None, turns: Sequence[Any]) -> Session:
        """The shared Session for these turns. Raises TurnError for a malformed turn."""
        digest = _digest(turns)
        key = (session_id, date, digest)
        found = self._sessions.get(key)
        if found is not None:
            self.shared += 1
        else:
            content = self._contents.get(digest)
            if content is None:
                content = self._content(turns)
                self._contents[digest] = content
            else:
                self.shared += 1
            found = Session(session_id, date, digest, content)
            self._sessions[key] = found
        return found

    def _content(self, turns: Sequence[Any]) -> _Content:
        texts: list[str | None] = []
        answers: list[int] = []
        n_empty = 0
        render = self.render
        for i, turn in enumerate(turns):
            role, content = turn["role"], turn["content"]
            if turn.get("has_answer") is True:
                answers.append(i)
            if not content.strip():
                n_empty += 1
                texts.append(render(role, content) if self.keep_empty and role in self.roles else None)
            else:
                texts.append(render(role, content) if role in self.roles else None)
        return _Content(tuple(texts), tuple(answers), n_empty)


def _role_colon(role: str, content: str) -> str:
    return f"{role}: {content}"


def _digest(turns: Sequence[Any]) -> str:
    """Digest of a session's turns; raises TurnError naming the first malformed turn.

    sha256, which this machine's CPUs compute in hardware (SHA-NI, ~1.5 GB/s here against
    blake2b's ~0.8 GB/s): every session of a LongMemEval file is digested, ~0.5 s of a
    no-reuse S-size run under blake2b. The digest lives only in the process (a key among sessions)."""
    h = hashlib.sha256()
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise TurnError(f"turn {i}: expected an object with 'role' and 'content', got {json_type(turn)}")
        role, content = turn.get("role"), turn.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            bad = "role" if not isinstance(role, str) else "content"
            raise TurnError(f"turn {i}: '{bad}' must be a string, got {json_type(turn.get(bad))}")
        flag = turn.get("has_answer")
        h.update(f"{role}\x1f{'1' if flag is True else '0'}\x1f".encode())
        h.update(content.encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()
