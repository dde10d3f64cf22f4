"""Guessing an ``arm=http`` mapping from a server's OpenAPI document (``memrun arm init http``).

An OpenAPI operation is read as a tool of :mod:`memrun.arms.mcp_guess`: its path, query
and body parameters become one input schema, so the same guesses pick the record, query
and namespace arguments; :func:`propose` then puts each argument back where the document
says it goes (a path segment, a query parameter, a JSON body field). ``$ref`` pointers are
resolved with ``jsonref``. OpenAPI 3.0 and 3.1 documents, JSON or YAML, from a file or a URL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonref
import yaml

from memrun.arms.mcp_guess import NAMESPACE, SEARCH, TEXT, propose_ingest, propose_search
from memrun.errors import ConfigError

METHODS = ("get", "post", "put", "patch", "delete")
HEALTH = re.compile(r"health|status|version|info|ping", re.I)


@dataclass(frozen=True)
class Operation:
    """One OpenAPI operation seen as a tool: ``input_schema`` merges its path, query and
    (object) JSON body parameters; ``where`` says which of the three each one is."""

    method: str
    path: str
    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)

    def params(self, kind: str) -> list[str]:
        """The names of the parameters that go in ``kind`` (path, query or body)."""
        return [n for n, w in self.where.items() if w == kind]


def load_document(source: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """The OpenAPI document at ``source`` (a file path or an http(s) URL; JSON or YAML) with
    every ``$ref`` resolved. Raises ConfigError naming the source when it cannot be read."""
    try:
        if re.match(r"https?://", source):
            response = httpx.get(source, timeout=timeout_s, follow_redirects=True)
            response.raise_for_status()
            text = response.text
        else:
            text = Path(source).expanduser().read_text(encoding="utf-8")
        document = yaml.safe_load(text)  # YAML is a superset of JSON
    except (OSError, httpx.HTTPError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"--openapi {source}: cannot read it ({_one_line_reason(exc)}); give a file path or "
            "an http(s) URL of the server's OpenAPI document (JSON or YAML)"
        ) from exc
    if not isinstance(document, Mapping) or not isinstance(document.get("paths"), Mapping):
        raise ConfigError(f"--openapi {source}: not an OpenAPI document (no 'paths' object)")
    try:
        return jsonref.replace_refs(document, proxies=False, lazy_load=False)
    except jsonref.JsonRefError as exc:
        raise ConfigError(f"--openapi {source}: a $ref does not resolve ({exc.message})") from exc


def _one_line_reason(exc: Exception) -> str:
    """``exc`` as one short line: the HTTP status, the YAML line and problem, or the OS error."""
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code} {exc.response.reason_phrase}"
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return f"not valid JSON or YAML: {where}{exc.problem or exc.context}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _body_schema(operation: Mapping[str, Any]) -> dict[str, Any]:
    content = (operation.get("requestBody") or {}).get("content") or {}
    media = next((content[m] for m in content if "json" in m), None)
    return dict((media or {}).get("schema") or {})


def _check_object(value: Any, where: str) -> None:
    """Raise TypeError naming ``where`` unless ``value`` is an object (a mapping)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{where} is {type(value).__name__}, not an object")


def _parameters(owner: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    """``owner``'s ``parameters`` list; raises TypeError naming ``where`` unless it is a list
    of objects."""
    params = owner.get("parameters") or []
    if not isinstance(params, list):
        raise TypeError(f"{where} is {type(params).__name__}, not a list")
    for param in params:
        _check_object(param, f"{where} item")
    return params


def _check_schema(schema: Any, where: str) -> None:
    """Raise TypeError naming ``where`` unless ``schema`` and its nested ``properties`` and
    ``items`` are objects (the shapes the guessing below reads)."""
    _check_object(schema, where)
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise TypeError(f"{where}.properties is {type(properties).__name__}, not an object")
    for name, spec in properties.items():
        _check_schema(spec, f"{where}.properties.{name}")
    if "items" in schema and schema["items"] is not None:
        _check_schema(schema["items"], f"{where}.items")


def operations(document: Mapping[str, Any]) -> list[Operation]:
    """Every operation of ``document`` as an :class:`Operation` (document order). Raises
    ValueError naming the path when its entry is not shaped as OpenAPI says."""
    found: list[Operation] = []
    for path, item in document["paths"].items():
        try:
            found += _path_operations(str(path), item)
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            reason = str(exc) if isinstance(exc, TypeError) and " is " in str(exc) else f"{type(exc).__name__}: {exc}"
            raise ValueError(f"the OpenAPI document's paths['{path}'] is malformed ({reason})") from exc
    return found


def _path_operations(path: str, item: Mapping[str, Any]) -> list[Operation]:
    """The operations under one ``paths`` entry; raises AttributeError/TypeError/KeyError on
    an entry whose parts are not the objects and lists OpenAPI requires."""
    found = []
    _check_object(item, "the entry")
    shared = _parameters(item, "parameters")
    for method in METHODS:
        if method not in item:
            continue
        op = item[method]
        _check_object(op, method)
        _check_object(op.get("requestBody") or {}, f"{method}.requestBody")
        props: dict[str, Any] = {}
        where: dict[str, str] = {}
        required: list[str] = []
        for param in [*shared, *_parameters(op, f"{method}.parameters")]:
            if param.get("in") in ("path", "query"):
                _check_schema(param.get("schema") or {}, f"{method} parameter {param['name']!r} schema")
                props[param["name"]] = dict(param.get("schema") or {})
                where[param["name"]] = param["in"]
                if param.get("required") or param["in"] == "path":
                    required.append(param["name"])
        body = _body_schema(op)
        _check_schema(body, f"{method}.requestBody schema")
        for name, spec in (body.get("properties") or {}).items():
            props.setdefault(name, dict(spec))
            where.setdefault(name, "body")
        required += [n for n in body.get("required") or [] if where.get(n) == "body"]
        name = str(op.get("operationId") or f"{method} {path}")
        found.append(Operation(method.upper(), path, name, f"{op.get('summary') or ''} {op.get('description') or ''}",
                               {"type": "object", "properties": props, "required": required}, where))
    return found


def _label(op: Operation) -> str:
    """What the name patterns are matched against: the operation id and its path's words."""
    return f"{op.name} {op.path}"


def _takes_text(op: Operation) -> int:
    """2 when the body holds an array of objects with a text field, 1 for a text field, else 0."""
    for name, spec in op.input_schema["properties"].items():
        if op.where.get(name) != "body":
            continue
        items = spec.get("items") or {}
        if spec.get("type") == "array" and any(TEXT.match(p) for p in (items.get("properties") or {})):
            return 2
        if TEXT.match(name) and spec.get("type") == "string":
            return 1
    return 0


def _pick_ops(ops: list[Operation]) -> dict[str, Operation]:
    """The operations memrun needs: search (a path or id saying search/query), ingest (a
    write that takes text), erase (a DELETE taking a namespace), create (a POST on the
    collection the ingest path lives under), health (a GET saying health/status/version)."""
    picked: dict[str, Operation] = {}
    searches = [o for o in ops if SEARCH.search(_label(o)) and o.method in ("GET", "POST")]
    if searches:
        picked["search"] = min(searches, key=lambda o: (len(o.path), o.path))
    writes = [o for o in ops if o.method in ("POST", "PUT") and o is not picked.get("search") and _takes_text(o)]
    if writes:
        picked["ingest"] = max(writes, key=lambda o: (_takes_text(o), -len(o.path)))
    erases = [o for o in ops if o.method == "DELETE" and any(NAMESPACE.match(p) for p in o.where)]
    if erases:
        picked["erase"] = min(erases, key=lambda o: (len(o.where), len(o.path)))
    if "ingest" in picked:
        base = picked["ingest"].path.split("{")[0].rstrip("/")
        creates = [o for o in ops if o.method == "POST" and o is not picked["ingest"] and not o.params("path")
                   and o.path.rstrip("/") == base and o.input_schema["required"]
                   and all(NAMESPACE.match(p) for p in o.input_schema["required"])]
        if creates:
            picked["create"] = creates[0]
    health = [o for o in ops if o.method == "GET" and HEALTH.search(o.path) and not o.input_schema["required"]]
    if health:
        picked["health"] = min(health, key=lambda o: len(o.path))
    return picked


def _place(op: Operation, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``{method, path, body?}`` with each argument where ``op`` takes it: a path segment,
    a URL-encoded query parameter or a body field."""
    path = op.path
    query = []
    body = {}
    for name, value in arguments.items():
        kind = op.where.get(name, "body")
        if kind == "path":
            path = path.replace(f"{{{name}}}", _inline(value))
        elif kind == "query":
            query.append(f"{name}={_inline(value, encode=True)}")
        else:
            body[name] = value
    for name in op.params("path"):  # a path parameter no guess filled
        path = path.replace(f"{{{name}}}", "TODO")
    out: dict[str, Any] = {"method": op.method, "path": path + ("?" + "&".join(query) if query else "")}
    if body:
        out["body"] = body
    return out


def _inline(value: Any, encode: bool = False) -> str:
    """A template value as text inside a path: ``{{ x }}`` stays a template (URL-encoded in
    a query string), anything else is written as it is."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    match = re.fullmatch(r"\{\{\s*(.+?)\s*\}\}", text)
    if match:
        return f"{{{{ {match.group(1)} | urlencode }}}}" if encode else text
    return text


def _per_record(op: dict[str, Any]) -> dict[str, Any]:
    """An ingest that takes one record per request: http ingest sends ``records`` in batches,
    so the batch is one record and ``record.x`` reads ``records[0].x``."""
    text = yaml.safe_dump(op, sort_keys=False)
    return yaml.safe_load(text.replace("record.", "records[0]."))


def propose(document: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``{health?, create?, ingest, search, erase?}`` for ``arm=http`` (search without its
    ``result``, which comes from a real answer) and the notes on every guess. Raises
    ValueError when no operation looks like storing text or searching."""
    ops = operations(document)
    picked = _pick_ops(ops)
    if "ingest" not in picked or "search" not in picked:
        missing = "storing text" if "ingest" not in picked else "searching"
        raise ValueError(f"no operation looks like {missing}; operations: "
                         f"{', '.join(f'{o.method} {o.path}' for o in ops) or 'none'}")
    notes: list[str] = [f"{role}: {o.method} {o.path}" + (f" ({o.name})" if o.name != f'{o.method.lower()} {o.path}' else "")
                        for role, o in picked.items()]
    ingest_tool = propose_ingest(picked["ingest"], notes)
    arguments = ingest_tool["arguments"]
    result: dict[str, Any] = {"ingest": _place(picked["ingest"], arguments)}
    if "record" in ingest_tool:
        result["ingest"]["record"] = ingest_tool["record"]
    else:
        result["ingest"] = _per_record(result["ingest"])
        result["ingest_batch_size"] = 1
        notes.append("ingest: one record per request (ingest_batch_size: 1)")
    result["search"] = _place(picked["search"], propose_search(picked["search"], notes)["arguments"])
    for role in ("create", "erase"):
        if role in picked:
            op = picked[role]
            names = [n for n in op.input_schema["properties"] if NAMESPACE.match(n)]
            result[role] = _place(op, {n: "{{ namespace }}" for n in names})
    if "health" in picked:
        result["health"] = {"method": "GET", "path": picked["health"].path}
        notes.append("health: its result is not mapped; set arm.health.result to record the server's build")
    if "erase" not in result:
        notes.append("isolation: no DELETE operation takes a namespace; histories share the server's store "
                     "unless you add arm.erase")
    return result, notes
