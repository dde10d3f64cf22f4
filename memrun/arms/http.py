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
created and filled; it is erased when the next history starts and at ``close`` (also
on Ctrl-C, SIGTERM and SIGHUP), unless ``keep_namespaces`` keeps and lists them.
Searches send ``eval_flags`` (no reinforcement, pinned scope) unless ``crediting`` is
set, when they send ``crediting_flags``; the instrument records ``crediting``.
Every request goes through :func:`memrun.http_policy.send` (429 waits, 5xx retries);
a request that still fails is recorded on the item by the run, never as a miss.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import logging
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx

from memrun.arms.embedders import api_key_from_env
from memrun.arms.http_templates import JsonTemplate, ResponsePath, describe_shape
from memrun.arms.namespaces import NamespaceLedger, TerminationGuard, default_ledger_dir, orphaned_ledgers
from memrun.errors import ArmError
from memrun.http_policy import HttpPolicy, send
from memrun.records import Hit, Record

log = logging.getLogger(__name__)
# httpx logs every request at INFO; a run sends thousands.
logging.getLogger("httpx").setLevel(logging.WARNING)

OPERATIONS = ("health", "create", "ingest", "search", "erase")
HEALTH_FIELDS = ("search_mode", "server_build", "embedder", "embedder_dim", "server_model", "index_revision",
                 "providers")
FAKE_PROVIDER = re.compile(r"fake|stub|mock|dummy", re.IGNORECASE)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# The names each operation's templates see (``record`` too in ingest's ``record``).
CONTEXT = {
    "health": ("flags",),
    "create": ("namespace", "history_id", "flags"),
    "ingest": ("namespace", "history_id", "flags", "records"),
    "search": ("namespace", "query", "k", "flags"),
    "erase": ("namespace", "flags"),
}


class Operation:
    """One configured request: method, path template, body template, result path."""

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        where = f"arm.{name}"
        unknown = sorted(set(spec) - {"method", "path", "body", "result", "record"})
        if unknown:
            raise ArmError(f"{where}: unknown key {', '.join(unknown)}; use method, path, body, result, record")
        if not spec.get("path"):
            raise ArmError(f"{where}.path is not set; give the request path, e.g. /namespaces/{{{{ namespace }}}}")
        self.name, self.method = name, str(spec.get("method") or "POST").upper()
        self.path = JsonTemplate(str(spec["path"]), f"{where}.path")
        self.body = JsonTemplate(spec["body"], f"{where}.body") if spec.get("body") is not None else None
        self.result = ResponsePath(spec["result"], f"{where}.result") if spec.get("result") else None
        self.record = JsonTemplate(spec["record"], f"{where}.record") if spec.get("record") is not None else None


def provider_names(value: Any) -> list[str]:
    """Every string inside a JSON value (the health response's providers)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in provider_names(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in provider_names(v)]
    return []


class HttpArm:
    """A memory server over HTTP (see the module docstring for the lifecycle).

    base_url: the server's root URL. health, create, ingest, search, erase: operations,
    each ``{method, path, body, result}`` (``ingest`` also ``record``: the template of
    one record in ``records``). auth_token_env: environment variable with the token
    (sent as ``<auth_header>: <auth_scheme> <token>``). headers: extra headers.
    namespace_prefix, keep_namespaces, ledger_dir: namespaces (module docstring).
    eval_flags / crediting_flags / crediting: the ``flags`` search templates see.
    require_real_providers: refuse a server whose health names a fake/stub provider.
    ingest_batch_size: records per ingest request. timeout_s, attempts: per request.
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
        auth_token_env: str | None = None,
        auth_header: str = "Authorization",
        auth_scheme: str = "Bearer",
        headers: Mapping[str, str] | None = None,
        namespace_prefix: str = "memrun-",
        keep_namespaces: bool = False,
        ledger_dir: str | None = None,
        eval_flags: Mapping[str, Any] | None = None,
        crediting_flags: Mapping[str, Any] | None = None,
        crediting: bool = False,
        require_real_providers: bool = False,
        ingest_batch_size: int = 100,
        timeout_s: float = 30.0,
        attempts: int = 4,
    ) -> None:
        specs = {"health": health, "create": create, "ingest": ingest, "search": search, "erase": erase}
        self.ops = {name: Operation(name, spec) for name, spec in specs.items() if spec}
        if self.ops["search"].result is None:
            raise ArmError("arm.search.result is not set; give the JMESPath of the hits, e.g. "
                           "results[].{key: id, score: score, text: content}")
        if "erase" not in self.ops and not keep_namespaces:
            raise ArmError("arm.erase is not configured, so memrun cannot remove the namespaces it creates; "
                           "configure erase or set arm.keep_namespaces=true")
        if ingest_batch_size < 1:
            raise ArmError(f"arm.ingest_batch_size={ingest_batch_size}: must be at least 1")
        if not timeout_s > 0:
            raise ArmError(f"arm.timeout_s={timeout_s}: must be a positive number of seconds")
        if attempts < 1:
            raise ArmError(f"arm.attempts={attempts}: must be at least 1")
        if not _UNSAFE.sub("", namespace_prefix):
            raise ArmError(f"arm.namespace_prefix={namespace_prefix!r}: give a prefix with letters or digits")
        token = api_key_from_env(auth_token_env, "arm.auth_token_env")
        all_headers = dict(headers or {})
        if token:
            all_headers[auth_header] = f"{auth_scheme} {token}".strip()
        self.base_url = base_url.rstrip("/") + "/"
        self.keep_namespaces, self.crediting = keep_namespaces, crediting
        self.flags = dict((crediting_flags if crediting else eval_flags) or {})
        self.batch_size = ingest_batch_size
        self.policy = dataclasses.replace(HttpPolicy(), attempts=attempts)
        self.prefix = f"{namespace_prefix}{secrets.token_hex(4)}-"
        self._check_templates()
        self.health: dict[str, Any] = {}
        self._namespace: str | None = None
        self._closed = False
        self._client = httpx.Client(headers=all_headers, timeout=timeout_s)
        self.ledger = NamespaceLedger(Path(ledger_dir).expanduser() if ledger_dir else default_ledger_dir(),
                                      self.base_url, self.prefix.rstrip("-"))
        self._guard = TerminationGuard()
        try:
            self.erased_leftovers = self._erase_leftovers()
            if "health" in self.ops:
                self.health = self._read_health(require_real_providers)
        except BaseException:
            self._client.close()
            raise
        self._guard.install()
        atexit.register(self.close)

    # -- set-up ----------------------------------------------------------------------

    def _check_templates(self) -> None:
        """Render every template once with sample values, so a typo fails before any work."""
        record = {"key": "D1:1", "text": "text", "timestamp": None, "session": "session_1", "index": 0}
        sample = {"namespace": f"{self.prefix}h", "history_id": "h", "flags": self.flags, "query": "q", "k": 1}
        for name, op in self.ops.items():
            context = {k: sample[k] for k in CONTEXT[name] if k in sample}
            if name == "ingest":
                context["records"] = [op.record.render(**context, record=record) if op.record else record]
            op.path.render(**context)
            if op.body:
                op.body.render(**context)

    def _request(self, op: Operation, **context: Any) -> httpx.Response:
        url = urljoin(self.base_url, str(op.path.render(**context)).lstrip("/"))
        body = op.body.render(**context) if op.body else None
        return send(self._client, op.method, url, json=body, policy=self.policy)

    def _result(self, op: Operation, response: httpx.Response) -> Any:
        try:
            document = response.json()
        except ValueError as exc:
            raise ArmError(f"arm.{op.name}: {op.method} {response.request.url} did not answer with JSON "
                           f"({response.text[:80]!r})") from exc
        assert op.result is not None
        value = op.result.search(document)
        if value is None:
            raise ArmError(f"arm.{op.name}.result {op.result.expression!r} found nothing in the response of "
                           f"{op.method} {response.request.url}, which is {describe_shape(document)}")
        return value

    def _read_health(self, require_real: bool) -> dict[str, Any]:
        op = self.ops["health"]
        try:
            response = self._request(op, flags=self.flags)
        except httpx.HTTPStatusError as exc:
            raise ArmError(f"arm.health: memory server at {self.base_url} refused the health check: {exc}; "
                           "check arm.base_url, arm.health and the server's credentials") from exc
        except httpx.HTTPError as exc:
            raise ArmError(f"arm.health: memory server at {self.base_url} did not answer: {exc}") from exc
        if op.result is None:
            return {}
        fields = self._result(op, response)
        if not isinstance(fields, Mapping) or set(fields) - set(HEALTH_FIELDS):
            raise ArmError(f"arm.health.result must give an object with keys among {', '.join(HEALTH_FIELDS)}; "
                           f"got {describe_shape(fields)}")
        fake = sorted({n for n in provider_names(fields.get("providers")) if FAKE_PROVIDER.search(n)})
        if fake and require_real:
            raise ArmError(f"memory server at {self.base_url} reports fake or stub providers ({', '.join(fake)}); "
                           "refusing to run because arm.require_real_providers=true")
        return {**{k: v for k, v in fields.items() if v is not None}, "fake_providers": bool(fake)}

    # -- namespaces ----------------------------------------------------------------------

    def _erase(self, name: str) -> bool:
        """Erase one namespace; True when it is gone (a 404 counts as gone)."""
        try:
            self._request(self.ops["erase"], namespace=name, flags=self.flags)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 404:
                log.warning("could not erase namespace %s: %s", name, exc)
                return False
        except httpx.HTTPError as exc:
            log.warning("could not erase namespace %s: %s", name, exc)
            return False
        return True

    def _erase_leftovers(self) -> int:
        """Erase what dead runs' ledgers list for this server; the number erased."""
        if "erase" not in self.ops:
            return 0
        erased = 0
        for path, names in orphaned_ledgers(self.ledger.folder, self.base_url):
            left = [n for n in names if not self._erase(n)]
            erased += len(names) - len(left)
            if left:
                log.warning("%d namespaces listed in %s could not be erased; will retry next run", len(left), path)
            else:
                path.unlink(missing_ok=True)
        if erased:
            log.warning("erased %d namespaces left on %s by an earlier run that was killed", erased, self.base_url)
        return erased

    def namespace_for(self, history_id: str) -> str:
        """This run's namespace for ``history_id``: unsafe characters become ``-``, and then a
        short hash of the id keeps two ids that differ only there apart."""
        safe = _UNSAFE.sub("-", history_id).strip("-")
        if safe != history_id:
            safe = f"{safe or 'history'}-{hashlib.sha256(history_id.encode()).hexdigest()[:6]}"
        return self.prefix + safe

    def _release_current(self) -> None:
        if self._namespace is not None and not self.keep_namespaces and self._erase(self._namespace):
            self.ledger.discard(self._namespace)
        self._namespace = None

    # -- the Arm protocol ----------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        fields = {k: v for k, v in self.health.items() if k != "providers"}
        return {"search_mode": "server", **fields, "crediting": self.crediting}

    def ingest(self, history_id: str, records: Sequence[Record]) -> None:
        self._release_current()
        name = self.namespace_for(history_id)
        self.ledger.add(name)  # before the server has it: a crash from here on is repaired
        self._namespace = name
        context = {"namespace": name, "history_id": history_id, "flags": self.flags}
        if "create" in self.ops:
            self._request(self.ops["create"], **context)
        op = self.ops["ingest"]
        rows = [{"key": r.key, "text": r.text, "timestamp": r.timestamp, "session": r.session, "index": i}
                for i, r in enumerate(records)]
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start : start + self.batch_size]
            rendered = [op.record.render(**context, record=r) for r in batch] if op.record else batch
            self._request(op, **context, records=rendered)

    def search(self, query: str, k: int) -> list[Hit]:
        if self._namespace is None:
            raise ArmError("arm=http: search before ingest (no namespace yet)")
        op = self.ops["search"]
        response = self._request(op, namespace=self._namespace, query=query, k=k, flags=self.flags)
        return self._hits(self._result(op, response))

    def _hits(self, found: Any) -> list[Hit]:
        where = "arm.search.result"
        if not isinstance(found, list):
            raise ArmError(f"{where} must give a list of hits; got {describe_shape(found)}")
        hits = []
        for rank, hit in enumerate(found):
            if not isinstance(hit, Mapping) or hit.get("key") is None:
                raise ArmError(f"{where}: hit {rank} is {describe_shape(hit)}; each hit needs a 'key' "
                               "(map the server's id, e.g. {key: id, score: score, text: content})")
            score = hit.get("score")
            hits.append(Hit(key=str(hit["key"]), score=float(len(found) - rank if score is None else score),
                            text=str(hit.get("text") or "")))
        return hits

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
                    log.warning("kept %d namespaces on %s: %s (listed in %s)", len(self.ledger.names),
                                self.base_url, ", ".join(self.ledger.names), kept)
            else:
                self._namespace = None
                for name in list(self.ledger.names):
                    if self._erase(name):
                        self.ledger.discard(name)
        finally:
            self._client.close()
