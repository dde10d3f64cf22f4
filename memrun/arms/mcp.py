"""``arm=mcp``: a memory server reached over the Model Context Protocol.

memrun starts the server (stdio: ``command``, ``args``, ``env``, ``cwd``) or reaches it
(streamable HTTP: ``url``, a token from ``auth_token_env`` as in ``arm=http``). Per
operation (``ingest``, ``search``, optional ``ready``, ``erase``, ``health``) the config
names the tool and its ``arguments`` as templates, and a JMESPath ``result`` over the
tool's result (:mod:`memrun.arms.mcp_ops`). Worked configs: ``conf/arm/mcp_*.yaml``;
reference: ``docs/arms.md``, "Memory servers over MCP".

Isolation: each history gets a fresh namespace. A server with its own notion of one
(a project, a user id) gets it through a template argument (``{{ namespace }}``), erased
with the ``erase`` tool when the next history starts and at ``close``. A server with one
global store gets a fresh process per history: when ``args``, ``env`` or ``cwd`` mention
``{{ namespace_dir }}``, every history starts its own server on its own empty folder,
stopped and removed when the history is done. Both kinds are recorded in the namespace
ledger first (:mod:`memrun.arms.namespaces`), so Ctrl-C, SIGTERM and a killed run are
cleaned up (the next run erases what a dead one left).

The core is coroutines over one ``ClientSession`` (:mod:`memrun.arms.mcp_client`,
``a``-prefixed methods here); the synchronous arm protocol runs them on a private event
loop in a background thread.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memrun.arms.embedders import api_key_from_env
from memrun.arms.http import FAKE_PROVIDER, HEALTH_FIELDS, provider_names
from memrun.arms.http_templates import JsonTemplate, describe_shape, hits_from_result
from memrun.arms.mcp_client import LoopThread, McpSession, ServerSpec
from memrun.arms.mcp_ops import (CONTEXT, ArgumentChecker, ToolOperation, check_tools, map_result, schema_hash)
from memrun.arms.namespaces import NamespaceLedger, TerminationGuard, default_ledger_dir, orphaned_ledgers
from memrun.errors import ArmError
from memrun.records import Hit, Record
from memrun.run_warnings import warn

log = logging.getLogger(__name__)
DIR_LEDGER = "mcp-namespace-dirs"  # the ledger's "server" for per-history folders


def _safe(history_id: str) -> str:
    import hashlib
    import re

    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", history_id).strip("-")
    if safe != history_id:
        safe = f"{safe or 'history'}-{hashlib.sha256(history_id.encode()).hexdigest()[:6]}"
    return safe


class McpArm:
    """A memory server over MCP (see the module docstring).

    command, args, env, cwd: start the server over stdio; or url (+ auth_token_env,
    auth_header, auth_scheme, headers) for streamable HTTP. ingest, search, ready, erase,
    health: ``{tool, arguments, result, ...}`` (:class:`memrun.arms.mcp_ops.ToolOperation`).
    search_mode: the instrument's search_mode (null: health's, else ``server``).
    namespace_prefix, keep_namespaces, ledger_dir, eval_flags, crediting_flags, crediting,
    ingest_batch_size, settle_s: as ``arm=http``. timeout_s: per call; start_timeout_s: the
    server's start and initialize handshake.
    Raises ArmError for a bad config, a server that does not start, an unknown tool.
    """

    def __init__(
        self, *, ingest: Mapping[str, Any], search: Mapping[str, Any], command: str | None = None,
        args: Sequence[str] = (), env: Mapping[str, str] | None = None, cwd: str | None = None,
        url: str | None = None, auth_token_env: str | None = None, auth_header: str = "Authorization",
        auth_scheme: str = "Bearer", headers: Mapping[str, str] | None = None,
        ready: Mapping[str, Any] | None = None, erase: Mapping[str, Any] | None = None,
        health: Mapping[str, Any] | None = None, search_mode: str | None = None,
        namespace_prefix: str = "memrun-", keep_namespaces: bool = False, ledger_dir: str | None = None,
        eval_flags: Mapping[str, Any] | None = None, crediting_flags: Mapping[str, Any] | None = None,
        crediting: bool = False, ingest_batch_size: int = 100, settle_s: float = 0.0, timeout_s: float = 30.0,
        start_timeout_s: float = 60.0,
    ) -> None:
        if bool(command) == bool(url):
            raise ArmError("arm=mcp: give either arm.command (a server memrun starts over stdio) or arm.url "
                           "(a streamable HTTP endpoint)")
        specs = {"health": health, "ingest": ingest, "ready": ready, "search": search, "erase": erase}
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
        self._server = JsonTemplate({"args": list(args), "env": dict(env or {}), "cwd": cwd}, "arm")
        self.per_process = bool(command) and "namespace_dir" in json.dumps([list(args), dict(env or {}), cwd])
        if not self.per_process and "erase" not in self.ops and not keep_namespaces:
            raise ArmError("arm.erase is not configured, so memrun cannot remove the namespaces it creates; "
                           "configure erase, use {{ namespace_dir }} in arm.args/env for a fresh server per "
                           "history, or set arm.keep_namespaces=true")
        self.base = ServerSpec(command=command, args=tuple(args), url=url, headers=all_headers)
        self.search_mode, self.crediting, self.keep_namespaces = search_mode, crediting, keep_namespaces
        self.flags = dict((crediting_flags if crediting else eval_flags) or {})
        self.batch_size, self.settle_s, self.timeout_s = ingest_batch_size, float(settle_s), float(timeout_s)
        self.start_timeout_s = float(start_timeout_s)
        self.prefix = f"{namespace_prefix}{secrets.token_hex(4)}-"
        self.root = Path(tempfile.gettempdir()) / f"memrun-mcp-{self.prefix.rstrip('-')}"
        self.health: dict[str, Any] = {}
        self.server_info: dict[str, str] = {}
        self.tool_names: list[str] = []
        self._session: McpSession | None = None
        self._namespace: str | None = None
        self._ever_ready, self._closed, self.erase_failures = False, False, 0
        ledger_key = DIR_LEDGER if self.per_process else f"mcp:{self.base.label}"
        self.ledger = NamespaceLedger(Path(ledger_dir).expanduser() if ledger_dir else default_ledger_dir(),
                                      ledger_key, self.prefix.rstrip("-"))
        self._loop = LoopThread()
        self._guard = TerminationGuard()
        try:
            self._loop.run(self._astart())
        except BaseException:
            self._loop.run(self._aclose_session())
            self._loop.stop()
            if self.per_process:
                shutil.rmtree(self.root, ignore_errors=True)  # the probe server's folder
            raise
        self._guard.install()
        atexit.register(self.close)

    # -- set-up ----------------------------------------------------------------------

    def _spec(self, namespace_dir: Path | None) -> ServerSpec:
        context = {"namespace_dir": str(namespace_dir)} if namespace_dir else {}
        rendered = self._server.render(**context)
        return ServerSpec(command=self.base.command, args=[str(a) for a in rendered["args"]],
                          env={str(k): str(v) for k, v in rendered["env"].items()}, cwd=rendered["cwd"],
                          url=self.base.url, headers=self.base.headers)

    async def _astart(self) -> None:
        """Open the session (per-process mode: a probe server on a scratch folder), check the
        configured tools, read health, erase what dead runs left."""
        probe = self.root / "probe" if self.per_process else None
        if probe:
            probe.mkdir(parents=True, exist_ok=True)
        session = self._session = await McpSession.open(self._spec(probe), self.timeout_s, self.start_timeout_s)
        self.server_info, self.tool_names = session.server_info, sorted(session.tools)
        check_tools(self.ops, session.tools, session.spec.label)
        self._checker = ArgumentChecker(session.tools)
        self._schemas = schema_hash(session.tools, [op.tool for op in self.ops.values()])
        self._check_templates()
        if "health" in self.ops:
            self.health = await self._aread_health()
        await self._aerase_leftovers()
        if probe:
            await self._aclose_session()
            shutil.rmtree(probe, ignore_errors=True)

    def _check_templates(self) -> None:
        """Render every operation's arguments once with sample values and check them against
        the tool's inputSchema, so a typo or a wrong type fails before any work."""
        record = {"key": "D1:1", "text": "text", "timestamp": None, "session": "session_1", "index": 0}
        sample = {"namespace": f"{self.prefix}h", "history_id": "h", "flags": self.flags, "query": "q", "k": 1,
                  "n_records": 1}
        for name, op in self.ops.items():
            context = {k: sample[k] for k in CONTEXT[name] if k in sample}
            if name == "ingest":
                rendered = op.record.render(**context, record=record) if op.record else record
                context["records"] = [rendered]
                context["record"] = rendered
            self._checker.check(op, op.render(context))

    async def _acall(self, name: str, context: Mapping[str, Any]) -> Any:
        op = self.ops[name]
        arguments = op.render(context)
        self._checker.check(op, arguments)
        if self._session is None:
            raise ArmError(f"arm=mcp: {op.where} called with no server session (search before ingest?)")
        return await self._session.call(op.tool, arguments, op.where)

    async def _aread_health(self) -> dict[str, Any]:
        op = self.ops["health"]
        result = await self._acall("health", {"flags": self.flags})
        if op.result is None:
            return {}
        fields = map_result(op, result)
        if not isinstance(fields, Mapping) or set(fields) - set(HEALTH_FIELDS):
            raise ArmError(f"arm.health.result must give an object with keys among {', '.join(HEALTH_FIELDS)}; "
                           f"got {describe_shape(fields)}")
        fake = sorted({n for n in provider_names(fields.get("providers")) if FAKE_PROVIDER.search(n)})
        return {**{k: v for k, v in fields.items() if v is not None and k != "providers"}, "fake_providers": bool(fake)}

    # -- namespaces --------------------------------------------------------------------

    async def _aerase(self, name: str) -> bool:
        """Erase one namespace (a folder: remove it; else the erase tool); True when gone."""
        if self.per_process:
            shutil.rmtree(name, ignore_errors=True)
            return not Path(name).exists()
        try:
            await self._acall("erase", {"namespace": name, "history_id": name, "flags": self.flags})
            return True
        except Exception as exc:  # noqa: BLE001 - counted, warned once, listed in the ledger
            self.erase_failures += 1
            self._erase_error = f"{type(exc).__name__}: {exc}"
            if self.erase_failures == 1:
                warn(f"could not erase namespace {name} on {self.base.label} ({self._erase_error})")
            return False

    async def _aerase_leftovers(self) -> None:
        if not self.per_process and "erase" not in self.ops:
            return
        erased = 0
        for leftover in orphaned_ledgers(self.ledger.folder, self.ledger.base_url):
            left = [n for n in leftover.names if not await self._aerase(n)]
            erased += len(leftover.names) - len(left)
            if not left:
                leftover.path.unlink(missing_ok=True)
        self.erase_failures = 0
        if erased:
            warn(f"erased {erased} namespaces left on {self.base.label} by an earlier run that did not end cleanly")

    async def _arelease(self) -> None:
        """Erase the current history's namespace (per-process: stop its server, remove its folder)."""
        name, self._namespace = self._namespace, None
        if self.per_process:
            await self._aclose_session()
        if name is not None and not self.keep_namespaces and await self._aerase(name):
            self.ledger.discard(name)

    async def _aclose_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.aclose()

    # -- the arm, as coroutines ----------------------------------------------------------

    async def aingest(self, history_id: str, records: Sequence[Record]) -> None:
        """Fresh namespace for ``history_id``, then the records through the ingest tool."""
        await self._arelease()
        if self.per_process:
            folder = self.root / (self.prefix + _safe(history_id))
            name = str(folder)
            self.ledger.add(name)  # before it exists: a crash from here on is repaired
            self._namespace = name
            folder.mkdir(parents=True, exist_ok=True)
            self._session = await McpSession.open(self._spec(folder), self.timeout_s, self.start_timeout_s)
        else:
            name = self.prefix + _safe(history_id)
            self.ledger.add(name)
            self._namespace = name
        context = {"namespace": name, "history_id": history_id, "flags": self.flags}
        op = self.ops["ingest"]
        rows = [{"key": r.key, "text": r.text, "timestamp": r.timestamp, "session": r.session, "index": i}
                for i, r in enumerate(records)]
        rendered = [op.record.render(**context, record=r) for r in rows] if op.record else rows
        if op.per_record:
            for row in rendered:
                await self._acall("ingest", {**context, "record": row, "records": [row]})
        else:
            for start in range(0, len(rendered), self.batch_size):
                await self._acall("ingest", {**context, "records": rendered[start : start + self.batch_size]})
        if "ready" in self.ops:
            await self._aawait_ready({**context, "n_records": len(rows)})
        if self.settle_s:
            await asyncio.sleep(self.settle_s)

    async def _aawait_ready(self, context: dict[str, Any]) -> None:
        op = self.ops["ready"]
        expected = op.equals.render(**context) if op.equals is not None else None
        deadline = time.monotonic() + op.timeout_s
        while True:
            value = map_result(op, await self._acall("ready", context), missing_ok=True)
            if (value == expected or str(value) == str(expected)) if op.equals is not None else bool(value):
                self._ever_ready = True
                return
            if time.monotonic() + op.interval_s > deadline:
                break
            await asyncio.sleep(op.interval_s)
        message = (f"arm.ready: namespace {context['namespace']} not ready after {op.timeout_s:g} s: "
                   f"{op.result.expression!r} gave {value!r}")  # type: ignore[union-attr]
        if not self._ever_ready:
            raise ArmError(f"{message}; no history has been ready in this run: check arm.ready (or raise timeout_s)")
        raise TimeoutError(message)

    async def asearch(self, query: str, k: int) -> list[Hit]:
        """At most ``k`` hits for ``query`` in the current namespace, best first."""
        if self._namespace is None:
            raise ArmError("arm=mcp: search before ingest (no namespace yet)")
        op = self.ops["search"]
        result = await self._acall("search", {"namespace": self._namespace, "query": query, "k": k,
                                              "flags": self.flags})
        assert op.result is not None
        return hits_from_result(map_result(op, result), op.result)[:k]

    async def aclose(self) -> None:
        """Erase every namespace this run created (or keep and list them), stop the server."""
        try:
            if self.keep_namespaces:
                kept = self.ledger.keep()
                if kept:
                    warn(f"kept {len(self.ledger.names)} namespaces of {self.base.label} (listed in {kept})")
                return
            if self.per_process:
                await self._aclose_session()
            self._namespace = None
            for name in list(self.ledger.names):
                if await self._aerase(name):
                    self.ledger.discard(name)
            if self.ledger.names:
                self.ledger.mark_unerased(getattr(self, "_erase_error", "unknown error"))
                warn(f"could not erase {len(self.ledger.names)} namespaces on {self.base.label}; they are listed "
                     f"in {self.ledger.path}, and the next run against this server erases them")
        finally:
            await self._aclose_session()
            if self.per_process:
                shutil.rmtree(self.root, ignore_errors=True)

    # -- the synchronous arm protocol ------------------------------------------------------

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self._loop.run(self.aingest(history_id, records))

    def search(self, query: str, k: int) -> list[Hit]:
        return self._loop.run(self.asearch(query, k))

    def close(self) -> None:
        """Erase and stop (idempotent; also on Ctrl-C, SIGTERM, SIGHUP)."""
        if self._closed:
            return
        self._closed = True
        self._guard.uninstall()
        atexit.unregister(self.close)
        try:
            self._loop.run(self.aclose())
        finally:
            self._loop.stop()

    def describe(self) -> dict[str, Any]:
        """search_mode, server_build (server name, version and the configured tools' schema
        hash: a changed schema is a comparability change), crediting, and provenance."""
        fields = dict(self.health)
        name, version = self.server_info.get("name", "?"), self.server_info.get("version", "?")
        fields.setdefault("server_build", f"{name} {version}")
        fields["server_build"] = f"{fields['server_build']}; tools sha256:{self._schemas}"
        return {**fields, "search_mode": self.search_mode or self.health.get("search_mode") or "server",
                "crediting": self.crediting, "mcp_server": f"{name} {version}", "mcp_tools": self.tool_names,
                "mcp_transport": "http" if self.base.url else "stdio"}
