"""``arm=http``: a team's own memory server, described declaratively in the config.

Per operation (``health``, ``create``, ``ingest``, ``search``, ``erase``) the config
gives the HTTP method, the path and the JSON body as templates, and for ``health`` and
``search`` a JMESPath ``result`` saying where the answer sits in the response (see
:mod:`memrun.arms.http_templates`; the reference API and a worked config are in
``docs/arms.md`` and ``conf/arm/http.yaml``).

Lifecycle: at start the arm erases namespaces that dead runs left (the ledger, see
:mod:`memrun.arms.namespaces`) and reads ``health`` (copied into the instrument;
``require_real_providers`` refuses a fake or stub provider). Each history gets a fresh
namespace ``<namespace_prefix><run token>-<history id>``, recorded in the ledger, then
created and filled; it is erased by ``release`` once the history's searches are done,
and whatever is left at ``close`` (also on Ctrl-C, SIGTERM and SIGHUP), unless
``keep_namespaces`` keeps and lists them.

The arm is async (:mod:`memrun.pipeline.many_histories`): ``ingest``, ``search`` and ``release`` are
coroutines, several histories are open at once (``search`` takes ``history_id``) and
memrun keeps up to ``arm.concurrency`` calls in flight. How a request is sent (the pooled
aiohttp session per event loop, set-up's and ``close``'s requests each on a loop of its own,
the HTTP policy, the shared rate gate) is :mod:`memrun.arms.http_client`'s.
Templates are compiled once, at construction.
A server that indexes asynchronously (it acknowledges a write before the write is
searchable) gets an optional ``ready`` operation, polled after each history's ingest
until its ``result`` equals ``equals`` (or is true), and/or a fixed ``settle_s`` wait.
Searches send ``eval_flags`` (no reinforcement, pinned scope) unless ``crediting`` is
set, when they send ``crediting_flags``; the instrument records ``crediting``.
Every request goes through the HTTP policy (429 waits; 408, 5xx and, for idempotent
operations, transport errors retried; a 429 holds every request in flight to the server,
and ``max_rps`` caps the rate); a request that still fails is recorded on the item by the
run, never as a miss; a 401/403 stops the run.
Warnings (failed erases, leftovers, kept namespaces) are the run's (:mod:`memrun.core.run_warnings`:
printed and saved), with a total at the end of the run. The user info of ``base_url`` is
never printed or written (:mod:`memrun.core.redaction`).
"""

from __future__ import annotations

import asyncio
import atexit
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.arms.embedders import api_key_from_env
from memrun.arms.http_client import ServerClient
from memrun.arms.http_templates import (
    CONTEXT,
    Operation,
    await_ready,
    describe_shape,
    encode_body,
    hits_from_result,
    sample_context,
)
from memrun.arms.namespaces import (
    ISOLATED,
    UNSAFE,
    NamespaceLedger,
    TerminationGuard,
    check_isolation,
    default_ledger_dir,
    orphaned_ledgers,
    safe_name,
)
from memrun.core.instrument import Instrument
from memrun.core.redaction import Redactor
from memrun.core.run_warnings import warn
from memrun.core.url_join import root_url_error
from memrun.core.url_secrets import url_identity
from memrun.errors import ArmError
from memrun.lazy import lazy
from memrun.records import Hit, Record

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy("httpx")  # its error types, read when a request failed (memrun.arms.http_async)

OPERATIONS = ("health", "create", "ingest", "ready", "search", "erase")
HEALTH_FIELDS = (*Instrument.server_fields(), "providers")
"""What a health result may report: the instrument's server fields, and the providers it runs."""
MIN_RPS = 1 / 60  # arm.max_rps: a slower cap is a typo (1e-9 would wait 30 years between requests)
FAKE_PROVIDER = re.compile(r"fake|stub|mock|dummy", re.IGNORECASE)


def provider_names(value: Any) -> list[str]:
    """Every string inside a JSON value (the health response's providers)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in provider_names(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in provider_names(v)]
    return []


def health_fields(fields: Any) -> tuple[dict[str, Any], list[str]]:
    """What a ``health`` result path found (``fields``, of ``arm=http`` or ``arm=mcp``): its
    non-null fields, and the names of the fake or stub providers it lists. Raises ArmError
    when it is not an object with keys among :data:`HEALTH_FIELDS`."""
    if not isinstance(fields, Mapping) or set(fields) - set(HEALTH_FIELDS):
        raise ArmError(f"arm.health.result must give an object with keys among {', '.join(HEALTH_FIELDS)}; "
                       f"got {describe_shape(fields)}")
    fake = sorted({n for n in provider_names(fields.get("providers")) if FAKE_PROVIDER.search(n)})
    return {k: v for k, v in fields.items() if v is not None}, fake


class HttpArm:
    """A memory server over HTTP (see the module docstring for the lifecycle).

    base_url: the server's root URL. health, create, ingest, search, erase: operations,
    each ``{method, path, body, result}`` (``ingest`` also ``record``: the template of
    one record in ``records``). auth_token_env: environment variable with the token
    (sent as ``<auth_header>: <auth_scheme> <token>``). headers: extra headers, whose values
    are secret (redacted from every file and line) unless the config's ``arm.public_headers``
    names them (read by :mod:`memrun.core.redaction`, not passed here).
    namespace_prefix, keep_namespaces, ledger_dir: namespaces (module docstring).
    eval_flags / crediting_flags / crediting: the ``flags`` search templates see.
    require_real_providers: refuse a server whose health names a fake/stub provider.
    ingest_batch_size: records per ingest request. timeout_s, attempts: per request.
    max_rps: at most this many requests per second to the server (None: no cap).
    Raises ArmError for a bad config, a missing token, an unreachable server or a fake
    provider (when refused), before any item runs.
    """

    def __init__(
        self,
        *,
        base_url: str,
        ingest: Mapping[str, Any],
        search: Mapping[str, Any],
        health: Mapping[str, Any] | None = None,
        create: Mapping[str, Any] | None = None,
        erase: Mapping[str, Any] | None = None,
        ready: Mapping[str, Any] | None = None,
        settle_s: float = 0.0,
        auth_token_env: str | None = None,
        auth_header: str = "Authorization",
        auth_scheme: str = "Bearer",
        headers: Mapping[str, str] | None = None,
        namespace_prefix: str = "memrun-",
        keep_namespaces: bool = False,
        isolation: str = ISOLATED,
        ledger_dir: str | None = None,
        eval_flags: Mapping[str, Any] | None = None,
        crediting_flags: Mapping[str, Any] | None = None,
        crediting: bool = False,
        require_real_providers: bool = False,
        ingest_batch_size: int = 100,
        timeout_s: float = 30.0,
        attempts: int = 4,
        max_rps: float | None = None,
    ) -> None:
        if ready is not None and ready.get("path") is None and ready.get("result") is None:
            ready = None  # the schema's node, left empty: no readiness check
        specs = {"health": health, "create": create, "ingest": ingest, "ready": ready, "search": search, "erase": erase}
        self.ops = {name: Operation(name, spec, crediting) for name, spec in specs.items() if spec}
        hits_path = self.ops["search"].result
        if hits_path is None:
            raise ArmError("arm.search.result is not set; give the JMESPath of the hits, e.g. "
                           "results[].{key: id, score: score, text: content}")
        self._hits_path = hits_path
        if ingest_batch_size < 1:
            raise ArmError(f"arm.ingest_batch_size={ingest_batch_size}: must be at least 1")
        if not timeout_s > 0:
            raise ArmError(f"arm.timeout_s={timeout_s}: must be a positive number of seconds")
        if attempts < 1:
            raise ArmError(f"arm.attempts={attempts}: must be at least 1")
        if max_rps is not None and not MIN_RPS <= max_rps < float("inf"):
            raise ArmError(f"arm.max_rps={max_rps}: give requests per second from {MIN_RPS:g} (one a minute) up, "
                           "or null for no cap")
        if not settle_s >= 0:
            raise ArmError(f"arm.settle_s={settle_s}: must be a number of seconds >= 0")
        if not UNSAFE.sub("", namespace_prefix):
            raise ArmError(f"arm.namespace_prefix={namespace_prefix!r}: give a prefix with letters or digits")
        if problem := root_url_error(base_url, "arm.base_url"):
            raise ArmError(problem)
        token = api_key_from_env(auth_token_env, "arm.auth_token_env")
        self.auth_hint = (f"the server refused the token in ${auth_token_env}; check it" if auth_token_env else
                          "the server wants credentials; set arm.auth_token_env (and arm.auth_header)")
        self._redactor = Redactor([token] if token else [])
        all_headers = dict(headers or {})
        if token:
            all_headers[auth_header] = f"{auth_scheme} {token}".strip()
        self.server = ServerClient(base_url, all_headers, timeout_s, attempts, max_rps, self.auth_hint, self._redactor)
        self.base_url, self.public_url = self.server.base_url, self.server.public_url
        self.crediting = crediting
        self.flags = dict((crediting_flags if crediting else eval_flags) or {})
        self.batch_size = ingest_batch_size
        self.settle_s = float(settle_s)
        self._ever_ready = False  # a ready timeout before any history was ready is a config problem
        self.created = 0  # namespaces this run created
        self.erase_failures = 0
        self._erase_exc: Exception | None = None
        self._erase_error: str | None = None
        self.prefix = f"{namespace_prefix}{secrets.token_hex(4)}-"
        self._check_templates()
        self.isolation = check_isolation("http", isolation, ingest, search)
        if "erase" not in self.ops and not keep_namespaces and self.isolation == ISOLATED:
            raise ArmError("arm.erase is not configured, so memrun cannot remove the namespaces it creates; "
                           "configure erase or set arm.keep_namespaces=true")
        # a shared store without erase keeps what the run wrote (the server has nothing per history to erase)
        self.keep_namespaces = keep_namespaces or (self.isolation != ISOLATED and "erase" not in self.ops)
        self.health: dict[str, Any] = {}
        self._live: dict[str, str] = {}  # history id -> its namespace, while open
        self._current: str | None = None  # the last history ingested: search's default
        self._closed = False
        self.ledger = NamespaceLedger(Path(ledger_dir).expanduser() if ledger_dir else default_ledger_dir(),
                                      url_identity(self.base_url), self.prefix.rstrip("-"))
        self._guard = TerminationGuard()
        try:
            self.erased_leftovers = self._erase_leftovers()
            if "health" in self.ops:
                self.health = self._read_health(require_real_providers)
        except BaseException:
            self.ledger.close()
            raise
        self._guard.install()
        atexit.register(self.close)

    # -- set-up ----------------------------------------------------------------------

    def _check_templates(self) -> None:
        """Render every template once with sample values, so a typo fails before any work."""
        for name, op in self.ops.items():
            context = sample_context(name, CONTEXT[name], op.record, self.prefix, self.flags)
            for template in (op.path, op.equals):
                if template is not None:
                    template.render(**context)
            if op.body is not None:  # and its encoding fits what it renders to
                encode_body(op.body.render(**context), op.encoding, f"arm.{name}")

    async def disconnect(self) -> None:
        """Close the event loop's pooled connections (memrun awaits it when its loop ends)."""
        await self.server.disconnect()

    def _read_health(self, require_real: bool) -> dict[str, Any]:
        op = self.ops["health"]
        try:
            response = self.server.request(op, flags=self.flags)
        except httpx.HTTPStatusError as exc:
            raise ArmError(self._redactor.text(f"arm.health: memory server at {self.public_url} refused the health "
                                               f"check: {exc}; check arm.base_url, arm.health and the server's "
                                               "credentials")) from exc
        except httpx.HTTPError as exc:
            raise ArmError(self._redactor.text(f"arm.health: memory server at {self.public_url} did not answer: {exc}")) from exc
        if op.result is None:
            return {}
        fields, fake = health_fields(self.server.result(op, response))
        if fake and require_real:
            raise ArmError(f"memory server at {self.public_url} reports fake or stub providers ({', '.join(fake)}); "
                           "refusing to run because arm.require_real_providers=true")
        return {**fields, "fake_providers": bool(fake)}

    # -- namespaces ----------------------------------------------------------------------

    def _erase(self, name: str) -> bool:
        """Erase one namespace (blocking); True when it is gone (a 404 counts as gone)."""
        try:
            self.server.request(self.ops["erase"], namespace=name, flags=self.flags)
        except (httpx.HTTPError, ArmError) as exc:  # ArmError: the server refused the token
            return self._erase_failed(name, exc)
        return True

    async def _aerase(self, name: str) -> bool:
        """:meth:`_erase` on the event loop."""
        try:
            await self.server.arequest(self.ops["erase"], namespace=name, flags=self.flags)
        except (httpx.HTTPError, ArmError) as exc:
            return self._erase_failed(name, exc)
        return True

    def _erase_failed(self, name: str, error: Exception) -> bool:
        """True for a 404 (gone already); else count the failure and keep its reason for the
        end-of-run total (the first one is a warning) and return False."""
        if isinstance(error, httpx.HTTPStatusError) and error.response.status_code == 404:
            return True
        self._erase_exc, self._erase_error = error, f"{type(error).__name__}: {error}"
        self.erase_failures += 1
        if self.erase_failures == 1:
            warn(f"could not erase namespace {name} on {self.public_url} ({self._erase_error}); "
                 "memrun tries again at the end of the run")
        return False

    def _erase_leftovers(self) -> int:
        """Erase what dead runs' ledgers list for this server; the number erased."""
        if "erase" not in self.ops:
            return 0
        erased = {True: 0, False: 0}  # by whether the earlier run ended itself (and failed to erase)
        for leftover in orphaned_ledgers(self.ledger.folder, self.ledger.base_url):
            left = [n for n in leftover.names if not self._erase(n)]
            erased[leftover.unerased is not None] += len(leftover.names) - len(left)
            if left:
                warn(f"{len(left)} namespaces listed in {leftover.path} could not be erased; the next run tries again")
            else:
                leftover.path.unlink(missing_ok=True)
        self.erase_failures, self._erase_error = 0, None  # this run's own total starts now
        if erased[False]:
            warn(f"erased {erased[False]} namespaces left on {self.public_url} by an earlier run that was killed")
        if erased[True]:
            warn(f"erased {erased[True]} namespaces on {self.public_url} that an earlier run could not erase "
                 "before it ended (the server failed or was unreachable then)")
        return erased[False] + erased[True]

    def namespace_for(self, history_id: str) -> str:
        """This run's namespace for ``history_id``: unsafe characters become ``-``, and then a
        short hash of the id keeps two ids that differ only there apart."""
        return self.prefix + safe_name(history_id)

    async def release(self, history_id: str) -> None:
        """Erase ``history_id``'s namespace (its searches are done); a failed erase is left
        to ``close``, which tries again. Kept namespaces stay."""
        name = self._live.pop(history_id, None)
        if self._current == history_id:
            self._current = None
        if name is not None and not self.keep_namespaces and await self._aerase(name):
            await self.ledger.discard_async(name)

    # -- the Arm protocol ----------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        fields = {k: v for k, v in self.health.items() if k != "providers"}
        return {"search_mode": "server", **fields, "crediting": self.crediting, "isolation": self.isolation}

    async def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        """Create ``history_id``'s namespace and send its records, batch after batch, then
        wait until it is ready (``ready``, ``settle_s``)."""
        if self._closed:
            raise ArmError("arm=http: ingest after close")
        name = self.namespace_for(history_id)
        await self.ledger.add_async(name)  # on disk before the server has it: a crash from here on is repaired
        self.created += 1
        self._live[history_id], self._current = name, history_id
        context = {"namespace": name, "history_id": history_id, "flags": self.flags}
        if "create" in self.ops:
            await self.server.arequest(self.ops["create"], **context)
        op = self.ops["ingest"]
        rows = [{"key": r.key, "text": r.text, "timestamp": r.timestamp, "session": r.session, "index": i}
                for i, r in enumerate(records)]
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start : start + self.batch_size]
            rendered = op.record.render_each("record", batch, **context) if op.record else batch
            await self.server.arequest(op, **context, records=rendered)
        if "ready" in self.ops:
            await self._await_ready(self.ops["ready"], {**context, "n_records": len(rows)})
        if self.settle_s:
            await asyncio.sleep(self.settle_s)

    async def _await_ready(self, op: Operation, context: dict[str, Any]) -> None:
        """:func:`memrun.arms.http_templates.await_ready` over ``op``'s requests."""
        async def read() -> Any:
            return self.server.result(op, await self.server.arequest(op, **context), missing_ok=True)

        await await_ready(op, context, read, self._ever_ready)
        self._ever_ready = True

    async def search(self, query: str, k: int, history_id: str | None = None) -> list[Hit]:
        """The top ``k`` hits for ``query`` in ``history_id``'s namespace (None: the last history ingested)."""
        name = self._live.get(history_id if history_id is not None else self._current or "")
        if name is None:
            raise ArmError(f"arm=http: search before ingest of history {history_id!r} (no namespace yet)")
        op = self.ops["search"]
        response = await self.server.arequest_json(op, namespace=name, query=query, k=k, flags=self.flags)
        return hits_from_result(self.server.result(op, response), self._hits_path)

    def close(self) -> None:
        """Erase this run's namespaces (or keep and list them); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._guard.uninstall()
        atexit.unregister(self.close)
        try:
            if self.keep_namespaces:
                kept = self.ledger.keep()
                if kept:
                    warn(f"kept {len(self.ledger.names)} namespaces on {self.public_url}: "
                         f"{', '.join(self.ledger.names)} (listed in {kept})")
            else:
                self._live.clear()
                self._erase_all()
        finally:
            self.ledger.close()

    def _erase_all(self) -> None:
        """Erase every namespace the ledger lists; when some stay, mark the ledger (the next
        run then says the server, not a kill, left them) and print the total."""
        names = list(self.ledger.names)
        for name in names:
            if self._erase(name):
                self.ledger.discard(name)
            elif isinstance(self._erase_exc, (httpx.TransportError, ArmError)):
                break  # the server does not answer or refuses the token: so it would for the rest
        if self.ledger.names:
            self.ledger.mark_unerased(self._erase_error or "unknown error")
            warn(f"could not erase {len(self.ledger.names)} of the {self.created} namespaces "
                 f"this run created on {self.public_url} (last error: {self._erase_error}); they are listed in "
                 f"{self.ledger.path}, and the next arm=http run against this server on this host erases them")
