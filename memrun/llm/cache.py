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
commits). A commit appends the turn's replies to the process's own side file,
``calls.sqlite-<pid>-<token>.log`` (one JSON line a reply, one write), and every
``SETTLE_ROWS`` replies, and at :meth:`CallCache.close`, they are written into sqlite in
one transaction, sorted by key, and the side file is emptied. A sqlite commit per turn
(~9 replies at 128 calls in flight) cost ~29 us of CPU a reply, 0.35 s of the bench's
12,000-call cold run (random keys: each reply dirtied a page of its own, written to the
WAL at each commit); the appends cost ~6 us a reply there and the sorted transactions ~5
(0.14 s in all). Reads see held and logged
replies, and closing the cache writes them, so a stop (Ctrl-C, SIGTERM, an error) keeps
every answered call. A kill (SIGKILL) keeps what was appended, every turn but the one it
lands in, which no row holds yet either: the next :class:`CallCache` opened on the folder
(any process) replays a side file whose process is gone (it holds an exclusive
``flock`` on it while it lives) into sqlite, stopping at a torn last line, and removes
it. Like sqlite's WAL at ``synchronous=NORMAL``, the side file is not fsynced: a power
loss may lose the last replies. Other processes see a run's replies once they are settled,
within :data:`memrun.llm.cache_keys.RECHECK_S` (they are seen by the process that made them
at once). Without ``fcntl`` (Windows) each
commit writes sqlite, as before.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memrun.errors import CacheError, ConfigError
from memrun.llm.cache_keys import KeyIndex
from memrun.llm.client import ChatRequest, ChatResult, _orjson

try:
    import fcntl
except ImportError:  # Windows: no flock, no side file (each commit writes sqlite)
    fcntl = None  # type: ignore[assignment]

CACHE_FILE = "calls.sqlite"
WAL_CHECKPOINT_PAGES = 16_384
SIDE_GLOB = f"{CACHE_FILE}-*.log"  # a process's side file (:meth:`CallCache.commit`): calls.sqlite-<pid>-<token>.log
SETTLE_ROWS = 2048  # logged replies written into sqlite together (~10 ms of the event loop's time)
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
        key = memo[(base_url, repeat)] = hashlib.sha256(_key_head(base_url, repeat) + request.digest).hexdigest()
    return key


@functools.lru_cache(maxsize=1024)
def _key_head(base_url: str, repeat: int) -> bytes:
    """What :func:`call_key` hashes before the request's digest (the same for each call of
    an endpoint and repeat index; ~0.7 us a key spelled each time)."""
    return f"memrun-call-v{KEY_VERSION}\0{base_url}\0{int(repeat)}\0".encode()


class CallCache:
    """Get and put replies by key. :meth:`put` writes sqlite at once; :meth:`hold` keeps a
    reply for the next :meth:`commit` (the side file) and the next settle (sqlite, at
    :meth:`close` at the latest), and reads see it meanwhile (module docstring).

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
        # key -> (reply, time held): every reply not yet in sqlite, logged or not (get_many answers them)
        self._held: dict[str, tuple[ChatResult, float]] = {}
        self._unlogged: dict[str, None] = {}  # keys held since the last commit (not in the side file yet)
        self._side: int | None = None  # the side file's descriptor (flock'd), opened at the first commit
        self._side_path = self.path.with_name(f"{CACHE_FILE}-{os.getpid()}-{os.urandom(4).hex()}.log")
        self._side_size = 0  # bytes of whole lines in the side file
        self._keys = KeyIndex(self._db)  # the keys sqlite holds, once a lookup missed (memrun.llm.cache_keys)
        if columns != [*OLD_COLUMNS, "model"]:
            self._db.close()
            raise ConfigError(
                f"cache_dir={folder}: {self.path.name} has a table 'replies' that memrun did not write "
                f"(columns {', '.join(columns)}); point cache_dir at another folder"
            )
        try:
            self._replay_orphans()
        except (OSError, sqlite3.Error) as exc:
            self._db.close()
            raise ConfigError(
                f"cache_dir={folder}: cannot replay the replies a killed run left in it ({exc}); "
                "point cache_dir at a writable folder"
            ) from exc

    def get(self, key: str) -> ChatResult | None:
        """The reply stored under ``key``, or None."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, ChatResult]:
        """The replies stored under any of ``keys`` (key -> reply; absent keys are missing).

        One query per ``LOOKUP_CHUNK`` keys the table may hold: each query hands the GIL to
        whatever other thread runs (the arm retrieving the next group) and waits to get it
        back. Keys the table lacks cost no query once a lookup missed
        (:mod:`memrun.llm.cache_keys`).
        """
        found: dict[str, ChatResult] = {}
        unique = list(dict.fromkeys(keys))
        if self._held:
            found = {key: self._held[key][0] for key in unique if key in self._held}
            unique = [key for key in unique if key not in found]
        if not unique:
            return found
        asked = unique = self._keys.may_hold(unique)
        before = len(found)
        for start in range(0, len(unique), LOOKUP_CHUNK):
            chunk = unique[start:start + LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, {REPLY_COLUMNS} FROM replies WHERE key IN ({marks})"
            for row in self._db.execute(query, chunk):
                found[row[0]] = ChatResult(*row[1:])
        if len(found) - before < len(asked):
            self._keys.missed()
        return found

    def lacks(self, key: str) -> bool:
        """True when the cache surely holds no reply under ``key``, known without a query once
        a lookup missed (:mod:`memrun.llm.cache_keys`); False when it holds one or may."""
        if key in self._held or not self._keys.active:
            return False
        return not self._keys.may_hold([key])

    def put(self, key: str, result: ChatResult) -> None:
        """Store ``result`` under ``key`` in sqlite at once (replacing an existing entry),
        with every reply held or logged before it; other connections see it (within
        :data:`memrun.llm.cache_keys.RECHECK_S`).

        Raises CacheError when the file cannot be written (a full disk, a damaged file).
        """
        self.hold(key, result)
        self._settle()

    def hold(self, key: str, result: ChatResult) -> None:
        """Keep ``result`` under ``key`` for the next :meth:`commit` (replacing what is there);
        :meth:`get_many` answers it meanwhile. Writes nothing: never raises."""
        self._held[key] = (result, time.time())
        self._unlogged[key] = None

    @property
    def held(self) -> int:
        """Replies held for the next :meth:`commit` (not yet on disk)."""
        return len(self._unlogged)

    def commit(self) -> None:
        """Make every held reply survive a kill of this process: append them to the side
        file in one write (none held: nothing happens), and write sqlite once
        ``SETTLE_ROWS`` replies are logged (module docstring).

        Raises CacheError when the file cannot be written (a full disk, a damaged file);
        the replies stay held then, so that :meth:`close` tries them once more.
        """
        if not self._unlogged:
            return
        if fcntl is None:
            self._settle()
            return
        held = self._held
        try:
            data = b"".join([_line(key, *held[key]) for key in self._unlogged])
            self._append(data)
        except OSError as exc:
            raise self._failed("write to", exc) from exc
        self._unlogged.clear()
        if len(held) >= SETTLE_ROWS:
            self._settle()

    def _append(self, data: bytes) -> None:
        """Append whole lines to the side file (opened and locked at the first call); a
        write that fails is cut back, so the file never keeps half a line. Raises OSError."""
        if self._side is None:
            fd = os.open(self._side_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)  # umask: as sqlite's
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a name of its own: never held by another
            self._side = fd
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._side, view):]
        except OSError:
            os.ftruncate(self._side, self._side_size)
            raise
        self._side_size += len(data)

    def _settle(self) -> None:
        """Write every reply not yet in sqlite in one transaction (sorted by key: each page
        of the table written once), then empty the side file. Raises CacheError; the
        replies stay held then."""
        if not self._held:
            return
        rows = [(key, r.text, r.prompt_tokens, r.completion_tokens, r.latency_ms, r.finish_reason, created, r.model)
                for key, (r, created) in sorted(self._held.items())]
        try:
            self._insert(rows)
        except sqlite3.Error as exc:
            raise self._failed("write to", exc) from exc
        self._held.clear()
        self._unlogged.clear()
        if self._side is not None and self._side_size:
            try:
                os.ftruncate(self._side, 0)  # O_APPEND: the next line goes to offset 0
            except OSError as exc:  # its replies are in sqlite: replaying them again changes nothing
                raise self._failed("write to", exc) from exc
            self._side_size = 0

    def _insert(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """INSERT OR REPLACE ``rows`` (the table's columns, in order) in one transaction."""
        with self._db:  # one transaction: committed, or rolled back on an error
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        self._keys.added(row[0] for row in rows)

    def _replay_orphans(self) -> None:
        """Write the replies of side files whose process is gone (a kill) into sqlite and
        remove the files. A file another process holds (its lock) is live: left alone.
        Stops at the first line that is not a whole record (a torn last write)."""
        if fcntl is None:
            return
        for path in sorted(self.path.parent.glob(SIDE_GLOB)):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:  # replayed by another process meanwhile
                continue
            except PermissionError:  # another user's, in a shared folder: theirs to replay
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its process is running
                if os.fstat(fd).st_ino != os.stat(path).st_ino:
                    continue  # replayed and removed by another process before the lock was ours
                with os.fdopen(os.dup(fd), "rb") as handle:
                    replies = _read_side(handle.read())
                if replies:
                    self._insert(sorted((key, *fields) for key, fields in replies.items()))
                os.unlink(path)
            except FileNotFoundError:
                continue
            finally:
                os.close(fd)

    def delete(self, key: str) -> None:
        """Remove the entry under ``key``, held, logged or written (none: nothing happens).
        Raises CacheError like :meth:`put`."""
        logged = key in self._held and key not in self._unlogged
        self._held.pop(key, None)
        self._unlogged.pop(key, None)
        try:
            if logged:  # a replay of the side file must not bring it back
                self._append(_tombstone(key))
            self._db.execute("DELETE FROM replies WHERE key = ?", (key,))
            self._keys.removed(key)
        except (OSError, sqlite3.Error) as exc:
            raise self._failed("write to", exc) from exc

    def _failed(self, verb: str, exc: OSError | sqlite3.Error) -> CacheError:
        return CacheError(f"cannot {verb} the call cache {self.path} ({exc}); the run stops, keeping its rows: "
                          "free disk space there or point cache_dir at another folder, then run the same command "
                          "again (the calls already cached are reused)")

    def __len__(self) -> int:
        self._settle()
        return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Write the held and logged replies into sqlite and close the file; raises
        CacheError (the file closed all the same, and the side file kept for the next
        open to replay) when they cannot be written."""
        try:
            self.commit()
            self._settle()
            if self._side is not None:
                with contextlib.suppress(OSError):  # left behind, it is empty: the next open removes it
                    os.unlink(self._side_path)  # settled
        finally:
            if self._side is not None:
                side, self._side = self._side, None
                os.close(side)  # releases the lock: a later open replays what is left
            self._db.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _line(key: str, result: ChatResult, created: float) -> bytes:
    """One reply as a line of the side file: a JSON array of the table's columns, in order."""
    record = [key, result.text, result.prompt_tokens, result.completion_tokens, result.latency_ms,
              result.finish_reason, created, result.model]
    try:
        return _orjson().dumps(record) + b"\n"
    except TypeError:  # what orjson refuses (a lone surrogate in a text): json escapes it
        return json.dumps(record).encode() + b"\n"


def _tombstone(key: str) -> bytes:
    """The side file's line that deletes ``key`` (a reply its reader could not use)."""
    return json.dumps([key]).encode() + b"\n"


def _read_side(data: bytes) -> dict[str, tuple[Any, ...]]:
    """The replies a side file holds, in order (a later line replaces or, when it is a
    tombstone, removes a key's reply): key -> the table's other columns. Stops at the
    first line that is not a whole record; the bytes after the last newline are a torn write."""
    replies: dict[str, tuple[Any, ...]] = {}
    for line in data.split(b"\n")[:-1]:
        try:
            record = json.loads(line)
        except ValueError:
            break
        if not (isinstance(record, list) and record and isinstance(record[0], str)):
            break
        if len(record) == 1:
            replies.pop(record[0], None)
        elif len(record) == 8 and isinstance(record[1], str) and all(
                isinstance(record[i], (int, float)) and not isinstance(record[i], bool) for i in (4, 6)):
            replies[record[0]] = tuple(record[1:])
        else:
            break
    return replies
