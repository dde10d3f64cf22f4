"""The on-disk call cache: every finished reader and judge call, keyed by what determines it.

One sqlite file (``<cache_dir>/calls.sqlite``, WAL mode) maps a key to the reply (the
fields of :class:`memrun.llm.client.ChatResult`, one column each, in the table
``replies``; the table ``calls`` of key version 1 held them as JSON and is left as is).
The key is the sha256 of the endpoint's public URL, the model, the messages, the
parameters and the repeat index, so

- re-running a command (after a crash, Ctrl-C, or to completion) finds every finished
  call and makes none of them again; resume does not depend on the run folder;
- raising ``repeats`` or adding a second judge makes only the new calls;
- a different model, prompt, parameter or provider misses.

Failed calls are never stored, and a reply its reader cannot use (an unparseable
verdict) is removed again: a re-run retries both. API keys are not part of the
key and never stored.

A run's replies are held and committed together, once per turn of its event loop
(:meth:`CallCache.hold`, :meth:`CallCache.commit`; :class:`memrun.llm.service.LLMService`
commits): a reply committed alone cost ~35 us of CPU, one of a turn's 10-20 (at 128 calls
in flight) ~23 us, and 64 together ~15 us each. Reads see held replies, and closing
the cache commits them, so a stop (Ctrl-C, SIGTERM, an error) keeps every answered call;
only a kill (SIGKILL, power loss) can lose the replies of the turn it lands in, which no
row holds yet either.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memrun.errors import CacheError, ConfigError
from memrun.llm.client import ChatRequest, ChatResult

CACHE_FILE = "calls.sqlite"
WAL_CHECKPOINT_PAGES = 16_384
LOOKUP_CHUNK = 500  # keys per query (sqlite allows 32,766 parameters)
REPLY_COLUMNS = "text, prompt_tokens, completion_tokens, latency_ms, finish_reason, model"  # ChatResult's fields, in order
# A cache written before replies kept the model the server reported: its table gains the column.
OLD_COLUMNS = ["key", "text", "prompt_tokens", "completion_tokens", "latency_ms", "finish_reason", "created"]
KEY_VERSION = 2  # 2: sha256 over (version, URL, repeat, ChatRequest.digest); 1 hashed one JSON of all


def call_key(base_url: str, request: ChatRequest, repeat: int) -> str:
    """Hex sha256 of everything that determines a call's reply (see the module docstring);
    computed once per request, URL and repeat (:attr:`ChatRequest.call_keys`)."""
    memo = request.call_keys
    key = memo.get((base_url, repeat))
    if key is None:
        head = f"memrun-call-v{KEY_VERSION}\0{base_url}\0{int(repeat)}\0".encode()
        key = memo[(base_url, repeat)] = hashlib.sha256(head + request.digest).hexdigest()
    return key


class CallCache:
    """Get and put replies by key. :meth:`put` commits at once; :meth:`hold` keeps a reply
    for the next :meth:`commit` (or :meth:`close`), and reads see it meanwhile.

    folder: the cache directory (created). Raises ConfigError when it cannot be opened.
    """

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / CACHE_FILE
        if Path(folder).exists() and not Path(folder).is_dir():
            raise ConfigError(f"cache_dir={folder} is a file; point cache_dir at a folder")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # A checkpoint (WAL copied back and synced) blocks the committing call for
            # 5-60 ms, and that call runs on the event loop every in-flight request
            # waits on; at sqlite's default (1,000 pages, ~400 puts) a 3,000-call run
            # stalls ~7 times. 16,384 pages (64 MiB) is ~6,000 puts between stalls.
            self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER,"
                " completion_tokens INTEGER, latency_ms REAL NOT NULL, finish_reason TEXT, created REAL NOT NULL,"
                " model TEXT) WITHOUT ROWID"
            )
            columns = [row[1] for row in self._db.execute("PRAGMA table_info(replies)")]
            if columns == OLD_COLUMNS:
                self._db.execute("ALTER TABLE replies ADD COLUMN model TEXT")
                columns.append("model")
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"cache_dir={folder}: cannot open the call cache {self.path.name} ({exc}); "
                "point cache_dir at a writable folder, or remove a damaged cache file"
            ) from exc
        self._held: dict[str, tuple[ChatResult, float]] = {}  # key -> (reply, time held): hold() keeps for commit()
        if columns != [*OLD_COLUMNS, "model"]:
            self._db.close()
            raise ConfigError(
                f"cache_dir={folder}: {self.path.name} has a table 'replies' that memrun did not write "
                f"(columns {', '.join(columns)}); point cache_dir at another folder"
            )

    def get(self, key: str) -> ChatResult | None:
        """The reply stored under ``key``, or None."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, ChatResult]:
        """The replies stored under any of ``keys`` (key -> reply; absent keys are missing).

        One query per ``LOOKUP_CHUNK`` keys: each query hands the GIL to whatever other
        thread runs (the arm retrieving the next group) and waits to get it back.
        """
        found: dict[str, ChatResult] = {}
        unique = list(dict.fromkeys(keys))
        if self._held:
            found = {key: self._held[key][0] for key in unique if key in self._held}
            unique = [key for key in unique if key not in found]
        for start in range(0, len(unique), LOOKUP_CHUNK):
            chunk = unique[start:start + LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, {REPLY_COLUMNS} FROM replies WHERE key IN ({marks})"
            for key, *fields in self._db.execute(query, chunk):
                found[key] = ChatResult(*fields)
        return found

    def put(self, key: str, result: ChatResult) -> None:
        """Store ``result`` under ``key`` (committed at once; replaces an existing entry).

        Raises CacheError when the file cannot be written (a full disk, a damaged file).
        """
        self.hold(key, result)
        self.commit()

    def hold(self, key: str, result: ChatResult) -> None:
        """Keep ``result`` under ``key`` for the next :meth:`commit` (replacing what is there);
        :meth:`get_many` answers it meanwhile. Writes nothing: never raises."""
        self._held[key] = (result, time.time())

    @property
    def held(self) -> int:
        """Replies held for the next :meth:`commit`."""
        return len(self._held)

    def commit(self) -> None:
        """Write every held reply in one transaction (none held: nothing happens).

        Raises CacheError when the file cannot be written (a full disk, a damaged file);
        the replies stay held then, so that :meth:`close` tries them once more.
        """
        if not self._held:
            return
        try:
            with self._db:  # one transaction: committed, or rolled back on an error
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                    (key, r.text, r.prompt_tokens, r.completion_tokens, r.latency_ms, r.finish_reason, created, r.model)
                    for key, (r, created) in self._held.items()])
        except sqlite3.Error as exc:
            raise self._failed("write to", exc) from exc
        self._held.clear()

    def delete(self, key: str) -> None:
        """Remove the entry under ``key``, held or written (none: nothing happens). Raises
        CacheError like :meth:`put`."""
        self._held.pop(key, None)
        try:
            self._db.execute("DELETE FROM replies WHERE key = ?", (key,))
        except sqlite3.Error as exc:
            raise self._failed("write to", exc) from exc

    def _failed(self, verb: str, exc: sqlite3.Error) -> CacheError:
        return CacheError(f"cannot {verb} the call cache {self.path} ({exc}); the run stops, keeping its rows: "
                          "free disk space there or point cache_dir at another folder, then run the same command "
                          "again (the calls already cached are reused)")

    def __len__(self) -> int:
        self.commit()
        return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Commit the held replies and close the file; raises CacheError (the file closed
        all the same) when they cannot be written."""
        try:
            self.commit()
        finally:
            self._db.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
