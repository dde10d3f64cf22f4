"""One MCP client session (official ``mcp`` SDK), as coroutines.

:class:`McpSession` opens a session over stdio (memrun starts the server as a
subprocess, its stderr captured so errors can quote its tail) or over streamable HTTP,
runs the initialize handshake and lists the tools. Its methods are coroutines, awaited on
the event loop that opened the session (the run's loop: ``arm=mcp`` is an async arm);
many calls may be in flight over one session. The SDK's transports are async context
managers that must be entered and left in one task, so a *holder* task owns them for the
session's lifetime. :func:`memrun.core.background.run_blocking` runs set-up and clean-up coroutines
from plain code.

Every failure is an :class:`memrun.errors.ArmError` in one line, except a tool that
answers with ``isError`` (:class:`ToolError`, a per-item error the run records).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memrun.core.http_policy import http_client_logging
from memrun.core.masking import command_label, fingerprint
from memrun.core.url_secrets import redact_urls, url_identity
from memrun.errors import ArmError, ToolError
from memrun.lazy import lazy

http_client_logging()  # the SDK's streamable HTTP transport is httpx: one INFO line per call otherwise

# The MCP SDK loads when a server is reached (memrun.lazy).
if TYPE_CHECKING:
    import mcp
    import mcp_types
    from mcp.client import stdio as mcp_stdio
    from mcp.client import streamable_http as mcp_http
    from mcp.shared import _httpx_utils as mcp_httpx
else:
    mcp = lazy("mcp")
    mcp_http = lazy("mcp.client.streamable_http")
    mcp_httpx = lazy("mcp.shared._httpx_utils")
    mcp_stdio = lazy("mcp.client.stdio")
    mcp_types = lazy("mcp_types")

STDERR_TAIL_LINES = 6


@dataclass(frozen=True)
class ServerSpec:
    """How to reach a server: ``command`` (+ args, env, cwd) for stdio, or ``url`` (+ headers)
    for streamable HTTP. ``label`` names it in errors."""

    command: str | None = None
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The server in messages: its URL without user info, or its command line with every
        value after a flag masked (:func:`memrun.core.masking.command_label`); env is never shown."""
        return redact_urls(self.url) if self.url else command_label(self.command, self.args)

    @property
    def identity(self) -> str:
        """The server in the namespace ledger, the same for the same server across runs: the
        label and a fingerprint of every argument and variable it is handed (:func:`memrun.core.masking.fingerprint`)."""
        values = [f"{k}={v}" for k, v in sorted(self.env.items())] + [str(a) for a in self.args]
        if self.url:
            return url_identity(self.url)  # two URLs differing only in a masked value differ here
        return f"{self.label} [{fingerprint(values)}]" if values else self.label


class McpSession:
    """An open MCP client session (see the module docstring). Build with :meth:`open`.

    ``server_info`` ({name, version}) comes from the initialize handshake, ``tools`` maps
    each tool name to its ``mcp.types.Tool``.
    """

    def __init__(self, spec: ServerSpec, timeout_s: float) -> None:
        self.spec, self.timeout_s = spec, timeout_s
        self.server_info: dict[str, str] = {}
        self.tools: dict[str, Any] = {}
        self._session: Any = None
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") if spec.command else None
        self._closing: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None

    @classmethod
    async def open(cls, spec: ServerSpec, timeout_s: float, start_timeout_s: float) -> McpSession:
        """Start or reach the server, initialize, list its tools; ``timeout_s`` then bounds each
        call. Raises ArmError (with the server's stderr tail) when it cannot be started or does
        not complete the handshake within ``start_timeout_s``."""
        self = cls(spec, timeout_s)
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._holder = asyncio.create_task(self._hold(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), start_timeout_s)
        except TimeoutError:
            message = (f"MCP server {spec.label} did not complete the initialize handshake within "
                       f"{start_timeout_s:g} s{self.stderr_note()}; check the command (or raise arm.start_timeout_s)")
            await self.aclose()
            raise ArmError(message) from None
        except BaseException as exc:
            message = self._start_failure(exc)
            await self.aclose()
            raise ArmError(message) from exc
        return self

    def _start_failure(self, exc: BaseException) -> str:
        if isinstance(exc, FileNotFoundError):
            return (f"MCP server command {self.spec.command!r} was not found (PATH, or give its full path in "
                    "arm.command)")
        if isinstance(exc, ArmError):
            return str(exc)
        return f"MCP server {self.spec.label} failed to start: {describe_exception(exc)}{self.stderr_note()}"

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(mcp.ClientSession(read, write))
                init = await session.initialize()
                info = init.server_info
                self.server_info = {"name": str(info.name), "version": str(info.version)}
                self.tools = {t.name: t for t in await self._all_tools(session)}
                self._session = session
                ready.set_result(None)
                assert self._closing is not None
                await self._closing.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            self._failure = exc
            if not ready.done():
                ready.set_exception(exc)
        finally:
            self._session = None

    @staticmethod
    async def _all_tools(session: Any) -> list[Any]:
        tools, cursor = [], None
        while True:
            page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
            tools.extend(page.tools)
            cursor = getattr(page, "next_cursor", None)
            if not cursor:
                return tools

    def _transport(self) -> Any:
        spec = self.spec
        if spec.url:
            client = mcp_httpx.create_mcp_http_client(headers=dict(spec.headers))
            return mcp_http.streamable_http_client(spec.url, http_client=client)
        command, args = with_parent_death(str(spec.command), [str(a) for a in spec.args])
        params = mcp_stdio.StdioServerParameters(command=command, args=args,
                                                 env={str(k): str(v) for k, v in spec.env.items()}, cwd=spec.cwd)
        return mcp_stdio.stdio_client(params, errlog=self._errlog or sys.stderr)  # opened for a command: __init__

    def stderr_tail(self) -> str:
        """The last lines the server printed on stderr, joined with `` | `` ('' for none)."""
        if self._errlog is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [line.strip() for line in self._errlog.read().splitlines() if line.strip()]
            self._errlog.seek(0, 2)
            return " | ".join(lines[-STDERR_TAIL_LINES:])[-600:]
        return ""

    def stderr_note(self) -> str:
        tail = self.stderr_tail()
        return f"; its stderr ended with: {tail}" if tail else "; it printed nothing on stderr"

    async def call(self, tool: str, arguments: Mapping[str, Any], where: str) -> Any:
        """Call ``tool``; the ``CallToolResult``. Raises ArmError when the call times out
        (``timeout_s``) or the connection is gone (the server exited), ToolError when the
        tool reports an error."""
        session = self._session
        if session is None:
            raise ArmError(f"{where}: the MCP server {self.spec.label} is gone ({self._gone()}){self.stderr_note()}")
        try:
            result = await session.call_tool(tool, dict(arguments), read_timeout_seconds=self.timeout_s)
        except Exception as exc:  # noqa: BLE001 - the SDK's transport and protocol errors
            if getattr(exc, "code", None) == _request_timeout():
                raise ArmError(f"{where}: tool {tool!r} did not answer within {self.timeout_s:g} s "
                               f"(arm.timeout_s); the server {self.spec.label} hangs or is too slow, so the run "
                               "stops here") from None
            if self._holder is not None:  # a closed connection ends the holder soon after
                await asyncio.wait({self._holder}, timeout=2)
            closed = "connection closed" in str(exc).lower()
            if closed or self._session is None or self._holder is None or self._holder.done():
                raise ArmError(f"{where}: the MCP server {self.spec.label} closed the connection during tool "
                               f"{tool!r} (it exited or crashed){self.stderr_note()}") from exc
            raise ToolError(f"{where}: tool {tool!r} failed: {describe_exception(exc)}") from exc
        if getattr(result, "is_error", False):
            raise ToolError(f"{where}: tool {tool!r} reported an error: {' '.join(result_text(result).split())[:300]}")
        return result

    def _gone(self) -> str:
        return describe_exception(self._failure) if self._failure else "session closed"

    async def aclose(self) -> None:
        """Leave the session and stop the server (idempotent)."""
        if self._closing is not None:
            self._closing.set()
        if self._holder is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._holder, 10)
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None


class TransportFaults(logging.Filter):
    """What the SDK's stdio transport logs with a traceback, one record per fault (a line on
    the server's stdout that is not JSON-RPC, a failed read): each record is counted by kind
    and kept off the screen; :meth:`lines` says each kind once, with its count, for the arm
    to warn (:meth:`memrun.arms.mcp.McpArm.close`). Installed on ``mcp.client.stdio``."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}
        self.first: dict[str, str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        kind = str(record.msg)
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind not in self.first and record.exc_info and record.exc_info[1] is not None:
            self.first[kind] = _what_was_read(record.exc_info[1])
        return False

    def snapshot(self) -> dict[str, int]:
        """The counts so far (to tell one arm's faults from an earlier arm's in this process)."""
        return dict(self.counts)

    def lines(self, since: dict[str, int], label: str) -> list[str]:
        """One line per kind of fault counted after ``since`` (:meth:`snapshot`), with its count
        and diagnosis; ``label`` names the server."""
        out = []
        for kind, total in self.counts.items():
            n = total - since.get(kind, 0)
            if n <= 0:
                continue
            first = self.first.get(kind, "")
            if kind.startswith("Failed to parse JSONRPC message"):
                out.append(f"the MCP server {label} printed {n} lines on its stdout that are not JSON-RPC messages "
                           f"(the first: {first}); stdout carries the protocol, so a server must write its logs to "
                           "stderr; memrun skipped those lines and the calls were answered")
            else:
                out.append(f"the MCP server {label}'s stdio transport: {kind} ({n} times; the first: {first})")
        return out


def _what_was_read(exc: BaseException) -> str:
    """The offending input of a parse error (pydantic's ``input_value=...``), else its first line."""
    text = str(exc)
    at = text.find("input_value=")
    if at >= 0:
        return text[at + len("input_value="):].split(", input_type=")[0][:120]
    return describe_exception(exc)[:120]


TRANSPORT_FAULTS = TransportFaults()
logging.getLogger("mcp.client.stdio").addFilter(TRANSPORT_FAULTS)


def with_parent_death(command: str, args: list[str]) -> tuple[str, list[str]]:
    """The command line that starts a stdio server so that it dies with memrun.

    The SDK starts a server in a session of its own (so memrun's process group does not
    reach it), and a server learns that memrun is gone only from the end of its input,
    which some ignore: after ``kill -9`` of memrun they would run on. On Linux the server
    is started through util-linux's ``setpriv --pdeathsig KILL``, so the kernel kills it
    when memrun dies. Unchanged elsewhere, without ``setpriv``, or for a command that is
    not found (the SDK then reports it as not found)."""
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    if setpriv is None or shutil.which(command) is None:
        return command, args
    return setpriv, ["--pdeathsig", "KILL", "--", command, *args]


def _request_timeout() -> int:
    return int(mcp_types.REQUEST_TIMEOUT)


def describe_exception(exc: BaseException) -> str:
    """``Type: first line`` of an exception, unwrapping exception groups to their first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def result_text(result: Any) -> str:
    """The text content blocks of a tool result, joined."""
    return "\n".join(str(getattr(c, "text", "")) for c in (result.content or []) if getattr(c, "type", "") == "text")
