"""Which keys the call cache's sqlite table holds, known in memory, so that a lookup of a
key the table lacks costs no query.

A cold run asks the call cache (:class:`memrun.llm.cache.CallCache`) for every call before
making it, and nearly every key is absent: ~2,000 queries for the accuracy bench's 12,000
calls (a reader group's keys together, then each judge call as its reader answers). In a
run each query cost 60-100 us of CPU, though the same query repeated at once costs 17
(the query's code and pages are cold in the CPU's caches by then, and sqlite hands the GIL
to the run's other threads and takes it back), 0.1-0.2 s of the cold run in all.

The index is read from the table at the first lookup that misses (a re-run that finds
every reply never reads it) and grows with every write of this connection, so it never
hides a reply this process stored. Another connection's commits (a run in another process
sharing the folder) are seen within :data:`RECHECK_S`: a lookup with a key absent from the
index asks ``PRAGMA data_version`` at most that often, and reads the index again when it
changed. Asking it at every such lookup cost as much as the query it saved (it is a
query too, as cold). Another process's replies reach sqlite only every ~2,000 replies
anyway (:data:`memrun.llm.cache.SETTLE_ROWS`): the check's delay is small beside that one.
Above :data:`MAX_KEYS` keys the index is given up and every lookup queries the table, as
before (a large shared cache would cost more memory and reading than the queries it saves).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable

MAX_KEYS = 100_000
"""Keys the index holds at most (~15 MiB, read in ~40 ms); a larger table is queried."""
RECHECK_S = 0.1
"""Seconds between two checks for another connection's commits (module docstring)."""


class KeyIndex:
    """The set of keys in the ``replies`` table of ``db`` (module docstring).

    Call :meth:`missed` when a query found fewer keys than it asked for (it builds the
    index), :meth:`may_hold` before a query, :meth:`added` / :meth:`removed` after this
    connection writes. Raises sqlite3.Error as the connection does.
    """

    def __init__(self, db: sqlite3.Connection, max_keys: int = MAX_KEYS) -> None:
        self._db = db
        self._max_keys = max_keys
        self._keys: set[str] | None = None  # None: not read yet, or given up
        self._version = -1
        self._checked = 0.0  # time.monotonic() of the last check of data_version
        self._given_up = False

    @property
    def active(self) -> bool:
        """True once the index is read and still held (lookups filter through it)."""
        return self._keys is not None

    def missed(self) -> None:
        """A query found fewer keys than it asked for: read the index, if not read yet."""
        if self._keys is None and not self._given_up:
            self._read(self._data_version())

    def may_hold(self, keys: list[str]) -> list[str]:
        """The keys of ``keys`` the table may hold: all of them while the index is not active;
        else those in the index, read again first when another connection committed since
        (checked at most every :data:`RECHECK_S`, and only when a key is absent)."""
        keys_in = self._keys
        if keys_in is None:
            return keys
        present = [key for key in keys if key in keys_in]
        if len(present) < len(keys) and (now := time.monotonic()) - self._checked >= RECHECK_S:
            self._checked = now
            version = self._data_version()
            if version != self._version:
                self._read(version)
                if self._keys is None:
                    return keys
                present = [key for key in keys if key in self._keys]
        return present

    def added(self, keys: Iterable[str]) -> None:
        """This connection wrote ``keys`` into the table (committed)."""
        if self._keys is not None:
            self._keys.update(keys)
            if len(self._keys) > self._max_keys:
                self._give_up()

    def removed(self, key: str) -> None:
        """This connection deleted ``key`` from the table."""
        if self._keys is not None:
            self._keys.discard(key)

    def _data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _read(self, version: int) -> None:
        self._checked = time.monotonic()
        # The version is read before the keys: a commit between the two is in the keys, or
        # changes the version the next lookup sees (the index is read again then).
        rows = self._db.execute("SELECT key FROM replies LIMIT ?", (self._max_keys + 1,)).fetchall()
        if len(rows) > self._max_keys:
            self._give_up()
            return
        self._keys = {row[0] for row in rows}
        self._version = version

    def _give_up(self) -> None:
        self._keys = None
        self._given_up = True
