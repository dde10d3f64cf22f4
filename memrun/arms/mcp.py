"""``arm=mcp``: a memory server reached over the Model Context Protocol.

memrun starts the server (stdio: ``command``, ``args``, ``env``, ``cwd``) or reaches it
(streamable HTTP: ``url``, a token from ``auth_token_env`` as in ``arm=http``). Per
operation (``ingest``, ``search``, optional ``ready``, ``erase``, ``health``) the config
names the tool and its ``arguments`` as templates, and a JMESPath ``result`` over the
tool's result (:mod:`memrun.arms.mcp_ops`). Worked configs: ``conf/arm/mcp_*.yaml``;
reference: ``docs/arms.md``, "Memory servers over MCP".

Isolation: each history gets a fresh namespace. A server with its own notion of one
(a project, a user id) gets it through a template argument (``{{ namespace }}``), erased
with the ``erase`` tool once the history's searches are done (``release``; what is left,
at ``close``). A server that makes namespaces with a tool of its own (a project it must
create first) gets a ``create`` call per history; when the server issues the namespace's id
(``create.result``: the JMESPath to it), later calls see it as ``{{ namespace_id }}``, and
``create``'s templates see ``{{ namespace_dir }}``, an empty folder of memrun's removed with
the namespace (a project's path on disk). A server with one global store gets a fresh process per history: when
``args``, ``env`` or ``cwd`` mention ``{{ namespace_dir }}``, every history starts its own
server on its own empty folder, stopped and removed when the history is done (the servers
and sessions: :mod:`memrun.arms.mcp_servers`). Both kinds are recorded in the namespace
ledger first (:mod:`memrun.arms.namespaces`), so Ctrl-C, SIGTERM and a killed run are
cleaned up (the next run erases what a dead one left).

``arm=mcp`` is an async arm: ``ingest``, ``search`` and ``release`` are coroutines awaited
on the run's event loop, many in flight over one ``ClientSession``
(:mod:`memrun.arms.mcp_client`; ``arm.sessions`` for several). Set-up (``__init__``) and
``close`` run on a short-lived loop of their own (``a``-prefixed methods).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import secrets
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrun.arms.embedders import api_key_from_env
from memrun.arms.http import health_fields
from memrun.arms.http_templates import await_ready, hits_from_result, sample_context
from memrun.arms.mcp_client import TRANSPORT_FAULTS, McpSession
from memrun.arms.mcp_ops import CONTEXT, ArgumentChecker, ToolOperation, check_tools, issued_id, map_result
from memrun.arms.mcp_servers import McpServers
from memrun.arms.namespaces import (
    ISOLATED,
    NamespaceLedger,
    TerminationGuard,
    check_isolation,
    default_ledger_dir,
    orphaned_ledgers,
    safe_name,
)
from memrun.core.background import run_blocking
from memrun.core.run_warnings import warn
from memrun.errors import ArmError
from memrun.records import Hit, Record

log = logging.getLogger(__name__)
DIR_LEDGER = "mcp-namespace-dirs"  # the ledger's "server" for per-history folders
ISSUED = " id="  # a ledger entry "<namespace> id=<the id the server issued>"


@dataclass
class _History:
    """An open history: its namespace (a name, or a folder in the fresh-process mode) and,
    in that mode, its own server's session."""

    namespace: str
    session: McpSession | None = None
    slot: int = 0  # which of the run's shared sessions serves it (arm.sessions)
    namespace_id: str = ""  # the id the server issued (arm.create.result), else the namespace
    ledger_entry: str = ""  # what the ledger holds for it: the namespace, with " id=<id>" when issued


class McpArm:
    """A memory server over MCP (see the module docstring).

    command, args, env, cwd: start the server over stdio; or url (+ auth_token_env,
    auth_header, auth_scheme, headers) for streamable HTTP. ingest, search, ready, erase,
    health, create: ``{tool, arguments, result, ...}`` (:class:`memrun.arms.mcp_ops.ToolOperation`;
    create's ``result``: the id the server issues, ``{{ namespace_id }}`` in later calls).
    search_mode: the instrument's search_mode (null: health's, else ``server``).
    server_build: the server's own name and version (``local-memory 0.2.0``), for servers whose
    handshake reports their MCP framework's (``memrun arm init mcp`` finds and writes it);
    null: health's, else the handshake's.
    namespace_prefix, keep_namespaces, ledger_dir, eval_flags, crediting_flags, crediting,
    ingest_batch_size, settle_s: as ``arm=http``. timeout_s: per call; start_timeout_s: the
    server's start and initialize handshake. sessions: sessions to a shared server, each
    history's calls on one of them (for a server that answers one call at a time per
    session over a store its processes share); the fresh-process mode has one per history.
    Raises ArmError for a bad config, a server that does not start, an unknown tool.
    """

    def __init__(
        self, *, ingest: Mapping[str, Any], search: Mapping[str, Any], command: str | None = None,
        args: Sequence[str] = (), env: Mapping[str, str] | None = None, cwd: str | None = None,
        url: str | None = None, auth_token_env: str | None = None, auth_header: str = "Authorization",
        auth_scheme: str = "Bearer", headers: Mapping[str, str] | None = None,
        ready: Mapping[str, Any] | None = None, erase: Mapping[str, Any] | None = None,
        health: Mapping[str, Any] | None = None, create: Mapping[str, Any] | None = None,
        search_mode: str | None = None, server_build: str | None = None,
        namespace_prefix: str = "memrun-", keep_namespaces: bool = False, isolation: str = ISOLATED,
        ledger_dir: str | None = None,
        eval_flags: Mapping[str, Any] | None = None, crediting_flags: Mapping[str, Any] | None = None,
        crediting: bool = False, ingest_batch_size: int = 100, settle_s: float = 0.0, timeout_s: float = 30.0,
        start_timeout_s: float = 60.0, sessions: int = 1,
    ) -> None:
        specs = {"health": health, "create": create, "ingest": ingest, "ready": ready, "search": search, "erase": erase}
        self.ops = {n: ToolOperation(n, s) for n, s in specs.items() if s and s.get("tool") is not None}
        for required in ("ingest", "search"):
            if required not in self.ops:
                raise ArmError(f"arm.{required}.tool is not set; give the name of the server's tool")
        if ingest_batch_size < 1 or not timeout_s > 0 or not start_timeout_s > 0 or not settle_s >= 0:
            raise ArmError("arm=mcp: ingest_batch_size must be >= 1, timeout_s and start_timeout_s > 0, settle_s >= 0")
        token = api_key_from_env(auth_token_env, "arm.auth_token_env")
        all_headers = dict(headers or {})
        if token:
            all_headers[auth_header] = f"{auth_scheme} {token}".strip()
        self.servers = McpServers(command=command, args=args, env=env, cwd=cwd, url=url, headers=all_headers,
                                  sessions=sessions, timeout_s=timeout_s, start_timeout_s=start_timeout_s)
        self.per_process, self.base = self.servers.per_process, self.servers.base
        self.isolation = check_isolation("mcp", isolation, ingest, search, self.per_process)
        if not self.per_process and "erase" not in self.ops and not keep_namespaces and self.isolation == ISOLATED:
            raise ArmError("arm.erase is not configured, so memrun cannot remove the namespaces it creates; "
                           "configure erase, use {{ namespace_dir }} in arm.args/env for a fresh server per "
                           "history, or set arm.keep_namespaces=true")
        # a shared store without erase keeps what the run wrote (the server has nothing per history to erase)
        keep_namespaces = keep_namespaces or (self.isolation != ISOLATED and "erase" not in self.ops)
        self.search_mode, self.crediting, self.keep_namespaces = search_mode, crediting, keep_namespaces
        self.server_build = server_build
        self.flags = dict((crediting_flags if crediting else eval_flags) or {})
        self.batch_size, self.settle_s = ingest_batch_size, float(settle_s)
        self.prefix = f"{namespace_prefix}{secrets.token_hex(4)}-"
        self.root = Path(tempfile.gettempdir()) / f"memrun-mcp-{self.prefix.rstrip('-')}"
        self.health: dict[str, Any] = {}
        self.server_info: dict[str, str] = {}
        self.tool_names: list[str] = []
        self._live: dict[str, _History] = {}  # history id -> its namespace (and server), while open
        self._current: str | None = None  # the last history ingested: search's default
        self._ever_ready, self._closed, self.erase_failures = False, False, 0
        ledger_key = DIR_LEDGER if self.per_process else f"mcp:{self.base.identity}"
        self.ledger = NamespaceLedger(Path(ledger_dir).expanduser() if ledger_dir else default_ledger_dir(),
                                      ledger_key, self.prefix.rstrip("-"))
        self._guard = TerminationGuard()
        self._faults_before = TRANSPORT_FAULTS.snapshot()  # said once per kind at close, with a count
        try:
            run_blocking(self._astart())
        except BaseException:
            if self.per_process:
                shutil.rmtree(self.root, ignore_errors=True)  # the probe server's folder
            raise
        self._guard.install()
        atexit.register(self.close)

    # -- set-up ----------------------------------------------------------------------

    async def _astart(self) -> None:
        """On a set-up session (per-process mode: a probe server on a scratch folder): check
        the configured tools, read health, erase what dead runs left; then close it."""
        probe = self.root / "probe" if self.per_process else None
        if probe:
            probe.mkdir(parents=True, exist_ok=True)
        session = await self.servers.open(probe)
        try:
            self.server_info, self.tool_names = session.server_info, sorted(session.tools)
            check_tools(self.ops, session.tools, session.spec.label)
            self._checker = ArgumentChecker(session.tools)
            self._schemas = self.servers.record_tools(session.tools, [op.tool for op in self.ops.values()])
            self._check_templates()
            if "health" in self.ops:
                self.health = await self._aread_health(session)
            await self._aerase_leftovers(session)
        finally:
            await session.aclose()
            if probe:
                shutil.rmtree(probe, ignore_errors=True)

    def _check_templates(self) -> None:
        """Render every operation's arguments once with sample values and check them against
        the tool's inputSchema, so a typo or a wrong type fails before any work."""
        for name, op in self.ops.items():
            context = sample_context(name, CONTEXT[name], op.record, self.prefix, self.flags)
            if name == "ingest":
                context["record"] = context["records"][0]
            self._checker.check(op, op.render(context))

    async def _acall(self, session: McpSession, name: str, context: Mapping[str, Any]) -> Any:
        op = self.ops[name]
        arguments = op.render(context)
        self._checker.check(op, arguments)
        return await session.call(op.tool, arguments, op.where)

    async def _aread_health(self, session: McpSession) -> dict[str, Any]:
        op = self.ops["health"]
        result = await self._acall(session, "health", {"flags": self.flags})
        if op.result is None:
            return {}
        fields, fake = health_fields(map_result(op, result))
        return {**{k: v for k, v in fields.items() if k != "providers"}, "fake_providers": bool(fake)}

    # -- sessions and namespaces -------------------------------------------------------

    async def _aerase(self, entry: str, session: McpSession | None) -> bool:
        """Erase one namespace (a folder: remove it; else the erase tool); True when gone.
        ``entry`` is what the ledger holds: the namespace, with `` id=<id>`` when the server issued one."""
        if self.per_process:
            shutil.rmtree(entry, ignore_errors=True)
            return not Path(entry).exists()
        name, _, issued = entry.partition(ISSUED)
        try:
            assert session is not None
            await self._acall(session, "erase", {"namespace": name, "namespace_id": issued or name, "history_id": name,
                                                 "flags": self.flags})
            shutil.rmtree(self._created_dir(name), ignore_errors=True)
            return True
        except Exception as exc:  # noqa: BLE001 - counted, warned once, listed in the ledger
            self.erase_failures += 1
            self._erase_error = f"{type(exc).__name__}: {exc}"
            if self.erase_failures == 1:
                warn(f"could not erase namespace {name} on {self.base.label} ({self._erase_error})")
            return False

    async def _aerase_leftovers(self, session: McpSession) -> None:
        if not self.per_process and "erase" not in self.ops:
            return
        erased = 0
        for leftover in orphaned_ledgers(self.ledger.folder, self.ledger.base_url):
            left = [n for n in leftover.names if not await self._aerase(n, session)]
            erased += len(leftover.names) - len(left)
            if not left:
                leftover.path.unlink(missing_ok=True)
        self.erase_failures = 0
        if erased:
            warn(f"erased {erased} namespaces left on {self.base.label} by an earlier run that did not end cleanly")

    async def release(self, history_id: str) -> None:
        """Erase ``history_id``'s namespace once its searches are done (fresh-process mode:
        stop its server, remove its folder); a failed erase is left to ``close``."""
        entry = self._live.pop(history_id, None)
        if self._current == history_id:
            self._current = None
        if entry is None:
            return
        if entry.session is not None:
            await entry.session.aclose()
        if not self.keep_namespaces:
            session = None if self.per_process else await self.servers.shared(entry.slot)
            erased = entry.ledger_entry or entry.namespace
            if await self._aerase(erased, session):
                await self.ledger.discard_async(erased)

    async def disconnect(self) -> None:
        """Stop the sessions of the running loop (memrun awaits it when its loop ends); the
        namespaces stay for ``release``/``close``."""
        sessions = [e.session for e in self._live.values() if e.session is not None]
        for entry in self._live.values():
            entry.session = None
        for session in [*sessions, *self.servers.take_shared()]:
            await session.aclose()

    # -- the arm protocol (async) --------------------------------------------------------

    async def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        """A fresh namespace for ``history_id`` (fresh-process mode: its own server on its own
        folder), then the records through the ingest tool, then ``ready``/``settle_s``."""
        if self._closed:
            raise ArmError("arm=mcp: ingest after close")
        if history_id in self._live:
            await self.release(history_id)
        name = str(self.root / (self.prefix + safe_name(history_id))) if self.per_process else self.prefix + safe_name(history_id)
        await self.ledger.add_async(name)  # on disk before it exists: a crash from here on is repaired
        entry = self._live[history_id] = _History(name, slot=self.servers.next_slot())
        self._current = history_id
        if self.per_process:
            Path(name).mkdir(parents=True, exist_ok=True)
            entry.session = await self.servers.open(Path(name))
        session = await self._session_of(history_id)
        context = {"namespace": name, "namespace_id": name, "history_id": history_id, "flags": self.flags}
        if "create" in self.ops:
            entry.namespace_id = context["namespace_id"] = await self._acreate(session, context)
            if entry.namespace_id != name:
                entry.ledger_entry = f"{name}{ISSUED}{entry.namespace_id}"
        op = self.ops["ingest"]
        rows = [{"key": r.key, "text": r.text, "timestamp": r.timestamp, "session": r.session, "index": i}
                for i, r in enumerate(records)]
        rendered = op.record.render_each("record", rows, **context) if op.record else rows
        if op.per_record:
            for row in rendered:
                await self._acall(session, "ingest", {**context, "record": row, "records": [row]})
        else:
            for start in range(0, len(rendered), self.batch_size):
                await self._acall(session, "ingest", {**context, "records": rendered[start : start + self.batch_size]})
        if "ready" in self.ops:
            await self._aawait_ready(session, {**context, "n_records": len(rows)})
        if self.settle_s:
            await asyncio.sleep(self.settle_s)

    def _created_dir(self, namespace: str) -> Path:
        """The folder ``create``'s templates see as ``{{ namespace_dir }}`` for ``namespace``."""
        return self.root / "created" / safe_name(Path(namespace).name)

    async def _acreate(self, session: McpSession, context: dict[str, Any]) -> str:
        """Make the namespace with the ``create`` tool; the id later calls use (the one the
        server issued, recorded in the ledger in place of the name, else the name)."""
        name = context["namespace"]
        folder = self._created_dir(name)
        folder.mkdir(parents=True, exist_ok=True)
        op = self.ops["create"]
        result = await self._acall(session, "create", {**context, "namespace_dir": str(folder)})
        if op.result is None:
            return str(name)
        issued = issued_id(op, result)
        if issued != name:  # erasing may need the server's id from here on (a crash after this is repaired)
            await self.ledger.add_async(f"{name}{ISSUED}{issued}")
            await self.ledger.discard_async(name)
        return issued

    async def _session_of(self, history_id: str) -> McpSession:
        entry = self._live.get(history_id)
        if entry is None:
            raise ArmError(f"arm=mcp: search before ingest of history {history_id!r} (no namespace yet)")
        if not self.per_process:
            return await self.servers.shared(entry.slot)
        if entry.session is None:
            raise ArmError(f"arm=mcp: the server of history {history_id!r} was stopped (disconnect) before its search")
        return entry.session

    async def _aawait_ready(self, session: McpSession, context: dict[str, Any]) -> None:
        """:func:`memrun.arms.http_templates.await_ready` over the ready tool's calls."""
        op = self.ops["ready"]

        async def read() -> Any:
            return map_result(op, await self._acall(session, "ready", context), missing_ok=True)

        await await_ready(op, context, read, self._ever_ready)
        self._ever_ready = True

    async def search(self, query: str, k: int, history_id: str | None = None) -> list[Hit]:
        """At most ``k`` hits for ``query`` in ``history_id``'s namespace (None: the last
        history ingested), best first."""
        history_id = history_id if history_id is not None else self._current or ""
        session = await self._session_of(history_id)
        op = self.ops["search"]
        entry = self._live[history_id]
        result = await self._acall(session, "search", {"namespace": entry.namespace, "query": query, "k": k,
                                                       "namespace_id": entry.namespace_id or entry.namespace,
                                                       "flags": self.flags})
        assert op.result is not None
        return hits_from_result(map_result(op, result), op.result)[:k]

    def close(self) -> None:
        """Erase every namespace this run created (or keep and list them); idempotent (also
        on Ctrl-C, SIGTERM, SIGHUP). Sessions still open belong to the run's loop
        (``disconnect``); the erases here use a session of their own."""
        if self._closed:
            return
        self._closed = True
        self._guard.uninstall()
        atexit.unregister(self.close)
        self._live.clear()
        try:
            if self.keep_namespaces:
                kept = self.ledger.keep()
                if kept:
                    warn(f"kept {len(self.ledger.names)} namespaces of {self.base.label} (listed in {kept})")
            elif self.ledger.names:
                run_blocking(self._aerase_all())
        finally:
            self.ledger.close()
            shutil.rmtree(self.root, ignore_errors=True)  # memrun's own folders (per history, create's)
            warn(*TRANSPORT_FAULTS.lines(self._faults_before, self.base.label))

    async def _aerase_all(self) -> None:
        session = None
        try:
            if not self.per_process:
                session = await self.servers.open(check_tools=False)
            for name in list(self.ledger.names):
                if await self._aerase(name, session):
                    self.ledger.discard(name)
        except ArmError as exc:  # the server does not start any more: the ledger keeps the names
            self._erase_error = str(exc)
        finally:
            if session is not None:
                await session.aclose()
        if self.ledger.names:
            self.ledger.mark_unerased(getattr(self, "_erase_error", "unknown error"))
            warn(f"could not erase {len(self.ledger.names)} namespaces on {self.base.label}; they are listed "
                 f"in {self.ledger.path}, and the next run against this server erases them")

    def describe(self) -> dict[str, Any]:
        """search_mode, server_build (server name, version and the configured tools' schema
        hash: a changed schema is a comparability change), crediting, and provenance."""
        fields = dict(self.health)
        name, version = self.server_info.get("name", "?"), self.server_info.get("version", "?")
        fields.setdefault("server_build", self.server_build or f"{name} {version}")
        fields["server_build"] = f"{fields['server_build']}; tools sha256:{self._schemas}"
        return {**fields, "search_mode": self.search_mode or self.health.get("search_mode") or "server",
                "crediting": self.crediting, "isolation": self.isolation, "mcp_server": f"{name} {version}", "mcp_tools": self.tool_names,
                "mcp_transport": "http" if self.base.url else "stdio"}
