"""The servers ``arm=mcp`` talks to, and its sessions with them.

A stdio config names a command memrun starts (``command``, ``args``, ``env``, ``cwd``),
a streamable HTTP config a ``url``. A server is reached one of two ways:

- shared: ``arm.sessions`` sessions per event loop, each opened on first use; each
  history's calls go to one of them (its ``slot``, handed out round robin in ingest
  order), for a server that answers one call at a time per session;
- fresh-process: when ``args``, ``env`` or ``cwd`` mention ``{{ namespace_dir }}``, every
  history starts a server of its own on its own folder (:meth:`McpServers.open` with the
  folder), for a server that keeps one global store.

Every session opened after set-up must list the tools set-up recorded
(:meth:`McpServers.record_tools`): a server whose tools' input schemas changed mid-run
stops the run, since the instrument would no longer describe it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memrun.arms.http_templates import JsonTemplate
from memrun.arms.mcp_client import McpSession, ServerSpec
from memrun.arms.mcp_ops import schema_hash
from memrun.errors import ArmError


class McpServers:
    """How ``arm=mcp`` reaches its server(s) (see the module docstring).

    command, args, env, cwd (stdio) or url, headers (streamable HTTP); sessions: shared
    sessions per event loop; timeout_s: per call; start_timeout_s: start and handshake.
    Raises ArmError for both or neither of command and url, a ``sessions`` that is not a
    positive integer, or ``sessions`` > 1 in the fresh-process mode.
    """

    def __init__(self, *, command: str | None, args: Sequence[str], env: Mapping[str, str] | None, cwd: str | None,
                 url: str | None, headers: Mapping[str, str], sessions: int, timeout_s: float,
                 start_timeout_s: float) -> None:
        if bool(command) == bool(url):
            raise ArmError("arm=mcp: give either arm.command (a server memrun starts over stdio) or arm.url "
                           "(a streamable HTTP endpoint)")
        if isinstance(sessions, bool) or not isinstance(sessions, int) or sessions < 1:
            raise ArmError(f"arm.sessions={sessions!r}: must be a positive integer (sessions to a shared server)")
        self._template = JsonTemplate({"args": list(args), "env": dict(env or {}), "cwd": cwd}, "arm")
        self.per_process = bool(command) and "namespace_dir" in json.dumps([list(args), dict(env or {}), cwd])
        if self.per_process and sessions > 1:
            raise ArmError("arm.sessions > 1 is for a shared server; with {{ namespace_dir }} every open history "
                           "already has a server and a session of its own: drop arm.sessions")
        self.base = ServerSpec(command=command, args=tuple(args), env=dict(env or {}), url=url, headers=dict(headers))
        self.n_sessions, self.timeout_s, self.start_timeout_s = sessions, float(timeout_s), float(start_timeout_s)
        self.schemas: str | None = None  # the hash set-up recorded (record_tools)
        self._hashed: list[str] = []
        self._shared: list[McpSession | None] = []  # the running loop's shared sessions
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None
        self._slots_used = 0

    def spec(self, namespace_dir: Path | None = None) -> ServerSpec:
        """The server to start: args, env and cwd rendered with ``namespace_dir`` (if any)."""
        rendered = self._template.render(**({"namespace_dir": str(namespace_dir)} if namespace_dir else {}))
        return ServerSpec(command=self.base.command, args=[str(a) for a in rendered["args"]],
                          env={str(k): str(v) for k, v in rendered["env"].items()}, cwd=rendered["cwd"],
                          url=self.base.url, headers=self.base.headers)

    def record_tools(self, tools: Mapping[str, Any], names: list[str]) -> str:
        """Record the hash of the named tools' input schemas (the instrument's); return it."""
        self._hashed, self.schemas = list(names), schema_hash(tools, list(names))
        return self.schemas

    async def open(self, namespace_dir: Path | None = None, check_tools: bool = True) -> McpSession:
        """A new session (a new server, over stdio). Raises ArmError when the server does not
        start, or (``check_tools``, once set-up recorded them) when its tools changed."""
        session = await McpSession.open(self.spec(namespace_dir), self.timeout_s, self.start_timeout_s)
        if check_tools and self.schemas is not None and schema_hash(session.tools, self._hashed) != self.schemas:
            await session.aclose()
            raise ArmError(f"arm=mcp: the tools of {session.spec.label} changed since the run started (their input "
                           "schemas differ from the ones recorded in the instrument); rerun against one server version")
        return session

    def next_slot(self) -> int:
        """The shared session the next history's calls go to (round robin)."""
        self._slots_used += 1
        return (self._slots_used - 1) % self.n_sessions

    async def shared(self, slot: int = 0) -> McpSession:
        """The running loop's shared session number ``slot`` (opened on first use; a new
        loop gets new ones)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._shared, self._loop, self._opening = [None] * self.n_sessions, loop, asyncio.Lock()
        assert self._opening is not None
        async with self._opening:
            if self._shared[slot] is None:
                self._shared[slot] = await self.open()
        return self._shared[slot]  # type: ignore[return-value]

    def take_shared(self) -> list[McpSession]:
        """The open shared sessions, forgotten here (the caller closes them: the loop ends)."""
        shared, self._shared, self._loop = self._shared, [], None
        return [s for s in shared if s is not None]
