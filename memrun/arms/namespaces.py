"""Throwaway namespaces on a memory server: the local ledger and termination handling.

``arm=http`` gives every history its own namespace and erases it when done. To leave
nothing behind when a run dies, each process records a namespace in a *ledger* file
before creating it (``<ledger_dir>/<host>-<pid>-<token>.json``) and removes the file
once everything it lists is erased. A run that starts later erases what the ledgers of
dead processes on the same host list for the same server (:func:`orphaned_ledgers`),
so a SIGKILL, a power cut or a failed erase is repaired by the next run. A run that
ends with namespaces it could not erase (the server failed or died) marks its ledger
(``unerased``: the last error), so that the next run says so rather than blaming a kill. Kept
namespaces (``keep_namespaces=true``) move to ``kept-<...>.json`` and are never erased
automatically.

The ledger's file is written by one thread of its own, in the order of the changes: an
arm on the event loop awaits :meth:`NamespaceLedger.add_async` (the namespace is on disk
before the request that creates it goes out) without holding every other request in
flight while the file is written (~0.5 ms; a thousand writes in a LongMemEval-S run).

SIGINT already raises KeyboardInterrupt; :class:`TerminationGuard` makes SIGTERM and
SIGHUP do the same while an arm is open, so the run's ``finally`` closes the arm and
erases its namespaces. SIGKILL cannot be caught: the ledger is the remedy for it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from memrun.core import signals
from memrun.core.paths import user_cache
from memrun.core.run_warnings import current
from memrun.core.url_secrets import redact_urls
from memrun.errors import ArmError

ISOLATED, SHARED = "per_history", "shared"
"""``arm.isolation`` values (and the instrument's ``isolation``): every history in a store of
its own (the default), or every history in the server's one store, on purpose."""
_USES_NAMESPACE = re.compile(r"\{[{%][^}]*\bnamespace(_dir|_id)?\b")


def mentions_namespace(spec: Any) -> bool:
    """Whether a template spec (strings, lists, mappings, nested) uses ``{{ namespace }}``
    (or ``{{ namespace_dir }}``, or ``{{ namespace_id }}``: the id a server issued) anywhere."""
    if isinstance(spec, str):
        return bool(_USES_NAMESPACE.search(spec))
    if isinstance(spec, dict):
        return any(mentions_namespace(v) for v in spec.values())
    if isinstance(spec, (list, tuple)):
        return any(mentions_namespace(v) for v in spec)
    return False


def check_isolation(arm: str, isolation: str, ingest: Any, search: Any, per_process: bool = False) -> str:
    """The isolation a memory-server arm runs under: :data:`ISOLATED` or :data:`SHARED`.

    ingest, search: the operations' template specs; per_process: ``arm=mcp`` starts one
    server per history (``{{ namespace_dir }}``). Histories are isolated when the server is
    per history or both ingest and search name ``{{ namespace }}``. Raises ArmError for an
    unknown ``isolation``, for a server that would put every history into one store while
    ``isolation`` is the default (the histories would be searched together and the run
    would score hits from other histories), and for ``isolation=shared`` on a server the
    templates isolate. ``keep_namespaces`` has no say here: it keeps namespaces after a
    run, it never makes one store safe to share.
    """
    if isolation not in (ISOLATED, SHARED):
        raise ArmError(f"arm.isolation={isolation!r}: choose {ISOLATED} (the default) or {SHARED}")
    isolated = per_process or (mentions_namespace(ingest) and mentions_namespace(search))
    if isolated and isolation == SHARED:
        raise ArmError(f"arm={arm}: arm.isolation=shared, but every history gets a store of its own "
                       "(the templates name {{ namespace }}); drop arm.isolation")
    if not isolated and isolation == ISOLATED:
        where = ("their arguments, or {{ namespace_dir }} in arm.args/env/cwd for a fresh server per history"
                 if arm == "mcp" else "their path or body")
        raise ArmError(f"arm={arm}: arm.ingest and arm.search do not both use {{{{ namespace }}}}, so every history "
                       f"would go into the server's one store and be searched with the others; put "
                       f"{{{{ namespace }}}} in {where}, or set arm.isolation=shared to measure one shared store "
                       "on purpose (recorded in the instrument: such runs do not compare with isolated ones)")
    return isolation


LEDGER_GLOB = "*-*-*.json"
KEPT_PREFIX = "kept-"


def default_ledger_dir() -> Path:
    """``platformdirs.user_cache_dir("memrun")/namespaces`` (not created here)."""
    return user_cache("namespaces")


def _write_json(path: Path, data: dict[str, Any] | None) -> None:
    """Write ``data`` to ``path`` atomically; None removes the file."""
    if data is None:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(history_id: str) -> str:
    """``history_id`` as a namespace part: unsafe characters become ``-``, and then a short
    hash of the id keeps two ids that differ only there apart (``conv 1`` -> ``conv-1-3f2a9c``)."""
    safe = UNSAFE.sub("-", history_id).strip("-")
    if safe != history_id:
        safe = f"{safe or 'history'}-{hashlib.sha256(history_id.encode()).hexdigest()[:6]}"
    return safe

class NamespaceLedger:
    """The namespaces one arm instance created on ``base_url`` (see the module docstring)."""

    def __init__(self, folder: Path, base_url: str, token: str) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{socket.gethostname()}-{os.getpid()}-{token}.json"
        self.base_url = redact_urls(base_url)  # a password in the server's URL stays out of the file
        self.names: list[str] = []
        self.unerased: str | None = None
        self._started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._host = socket.gethostname()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memrun-ledger")  # in order

    def _store(self, path: Path | None = None, remove: bool = False) -> Future[None]:
        """Hand the list as it is now to the ledger's thread (None data: remove the file)."""
        data = None if remove else {"base_url": self.base_url, "host": self._host, "pid": os.getpid(),
                                    "started_at": self._started, "namespaces": list(self.names)}
        if data is not None and self.unerased is not None:
            data["unerased"] = self.unerased
        try:
            return self._writer.submit(_write_json, path or self.path, data)
        except RuntimeError:  # the interpreter is exiting (an arm closed by atexit): write here
            done: Future[None] = Future()
            _write_json(path or self.path, data)
            done.set_result(None)
            return done

    def close(self) -> None:
        """Wait for the pending writes and stop the ledger's thread (later writes happen in the caller's)."""
        self._writer.shutdown(wait=True)

    def add(self, name: str) -> None:
        """Record ``name`` (call before creating it on the server); returns once it is on disk."""
        self.names.append(name)
        self._store().result()

    async def add_async(self, name: str) -> None:
        """:meth:`add` on the event loop: the loop serves other requests while the file is written."""
        self.names.append(name)
        await asyncio.wrap_future(self._store())

    def _forget(self, name: str) -> Future[None]:
        if name in self.names:
            self.names.remove(name)
        return self._store(remove=not self.names)

    def discard(self, name: str) -> None:
        """Forget ``name`` (call after the server erased it); the file goes when empty."""
        self._forget(name).result()

    async def discard_async(self, name: str) -> None:
        """:meth:`discard` on the event loop."""
        await asyncio.wrap_future(self._forget(name))

    def mark_unerased(self, reason: str) -> None:
        """Record that the run ended with these namespaces still on the server (``reason``:
        the last erase error), so the next run does not report them as left by a kill."""
        if self.names:
            run = current()  # the reason quotes the server: the run's secrets stay out of the file
            self.unerased = run.redactor.text(reason) if run else reason
            self._store().result()

    def keep(self) -> Path | None:
        """Move the list to ``kept-<name>.json`` (never cleaned automatically); its path."""
        if not self.names:
            return None
        kept = self.folder / f"{KEPT_PREFIX}{self.path.name}"
        self._store(kept).result()
        self._store(remove=True).result()
        return kept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Leftover(NamedTuple):
    """A dead process's ledger: its file, the namespaces it lists, and ``unerased`` (the
    error its run ended with, when it ended itself; None when it was killed)."""

    path: Path
    names: list[str]
    unerased: str | None


def orphaned_ledgers(folder: Path, base_url: str) -> Iterator[Leftover]:
    """The ledgers left by dead processes of this host for ``base_url``.

    Unreadable files are skipped (a process may be writing one right now).
    """
    if not folder.is_dir():
        return
    host = socket.gethostname()
    for path in sorted(folder.glob(LEDGER_GLOB)):
        if path.name.startswith(KEPT_PREFIX):
            continue
        try:
            data = json.loads(path.read_text())
            names, pid = [str(n) for n in data["namespaces"]], int(data["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if data.get("host") == host and data.get("base_url") == redact_urls(base_url) and not _alive(pid):
            unerased = data.get("unerased")
            yield Leftover(path, names, None if unerased is None else str(unerased))


class TerminationGuard:
    """While installed, SIGTERM and SIGHUP stop the run like Ctrl-C, at a safe point
    (:func:`memrun.core.signals.handler`: the request is recorded and the run's loops stop
    there, so the namespaces are erased on the way out). Main thread only.

    Handlers someone else installed (the memrun command line installs that one) are left
    alone; :meth:`uninstall` restores the rest.
    """

    SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in self.SIGNALS:
            if signal.getsignal(sig) is signal.SIG_DFL:
                self._previous[sig] = signal.signal(sig, signals.handler)

    def uninstall(self) -> None:
        for sig, previous in self._previous.items():
            if signal.getsignal(sig) == signals.handler:
                signal.signal(sig, previous)
        self._previous.clear()
