"""Guessing an ``arm=mcp`` mapping from a server's own tool list (``memrun arm init mcp``).

:func:`propose` picks the tools whose names and input schemas look like storing,
searching and erasing, and their arguments; :func:`result_path` reads a real search
answer and proposes the JMESPath that maps it to hits (the field holding a key memrun
sent, the one holding its text, a numeric score). Every guess carries a note, which the
written config shows as a comment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

STORE = re.compile(r"store|remember|save|add|create|insert|write|upsert|memorize|ingest|put", re.I)
SEARCH = re.compile(r"search|recall|query|find|retrieve|lookup|similar", re.I)
ERASE = re.compile(r"delete|erase|clear|drop|forget|reset|remove|purge", re.I)
NAMESPACE = re.compile(r"^((namespace|project|collection|space|bank|tenant|scope|workspace)(_?(id|name))?|user_?id|"
                       r"session_?id)$", re.I)
CREATE = re.compile(r"create|new|make|add|init", re.I)
PATH_ARG = re.compile(r"(^|_)(path|dir|directory|folder)$", re.I)
NOT_FOR_US = re.compile(r"unsupported|only available to|connector|adapter|use \w+ instead", re.I)
TEXT = re.compile(r"^(content|text|memory|observations?|value|body|fact|note|message|data)s?$", re.I)
KEY = re.compile(r"^(id|key|name|entity|title|(memory|note|doc|document|item|record|message|external)_?id)$", re.I)
QUERY = re.compile(r"^(query|q|text|search|question|prompt)$", re.I)
K = re.compile(r"^(k|limit|top_?k|n|max_results|count|num_results|size|page_size)$", re.I)
SCORE = re.compile(r"score|similarity|relevance", re.I)  # higher is better (not distance)


def _props(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict((schema or {}).get("properties") or {})


def _type(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type")
    if kind is None and "anyOf" in spec:
        kinds = [s.get("type") for s in spec["anyOf"] if s.get("type") != "null"]
        kind = kinds[0] if kinds else None
    return str(kind)


def _text_fields(schema: Mapping[str, Any]) -> list[str]:
    """Properties of ``schema`` that can hold a record's text (a string, or strings)."""
    return [n for n, s in _props(schema).items() if TEXT.match(n) and _type(s) in ("string", "array")]


def _search_score(tool: Any) -> int | None:
    """How much ``tool`` looks like searching, from its schema and description; None when it
    cannot be one (no string argument that takes the query)."""
    schema = tool.input_schema or {}
    query = [n for n, s in _props(schema).items() if QUERY.match(n) and _type(s) == "string"]
    if not query:
        return None
    required = set(schema.get("required") or [])
    description = tool.description or ""
    score = 3 * bool(set(query) & required) + 2 * bool(SEARCH.search(tool.name)) + bool(SEARCH.search(description))
    score += bool(any(K.match(n) and _type(s) == "integer" for n, s in _props(schema).items()))
    # a search that may send the text elsewhere (an embeddings API) or needs a model is not the plain one
    score -= 2 * bool(re.search(r"semantic|embedding|vector", tool.name + " " + description, re.I))
    # an adapter for one client that refuses the others (basic-memory's `search`: "use search_notes instead")
    score -= 6 * bool(NOT_FOR_US.search(description))
    return score if score > 0 else None


def _store_score(tool: Any) -> int | None:
    """How much ``tool`` looks like storing a record: its name, a text argument (or an array
    of objects holding text), a key argument; None when it takes no text at all."""
    schema = tool.input_schema or {}
    score = 2 * bool(STORE.search(tool.name))
    batch = [s.get("items") or {} for s in _props(schema).values()
             if _type(s) == "array" and _type(s.get("items") or {}) == "object"]
    if batch:
        item = batch[0]
        if not _props(item):  # objects of any keys: memrun's {id, text} (propose_ingest)
            return score + 1
        score += 2 * bool(_text_fields(item)) + 2 * any(KEY.match(n) for n in _props(item)) + 1
        return score if _text_fields(item) else None
    if not _text_fields(schema):
        return None
    return score + 2 + 2 * any(KEY.match(n) for n in _props(schema))


def _best(tools: Mapping[str, Any], score: Any, exclude: tuple[str, ...] = ()) -> str | None:
    """The highest-scoring tool (ties: the shorter name, then the name)."""
    scored = [(s, n) for n in tools if n not in exclude and (s := score(tools[n])) is not None]
    return sorted(scored, key=lambda sn: (-sn[0], len(sn[1]), sn[1]))[0][1] if scored else None


def namespace_arg(schema: Mapping[str, Any], issued: bool) -> tuple[str, str] | None:
    """(argument, template) that names the namespace in a tool's schema: a name-like argument
    (``project``) takes ``{{ namespace }}``; only an id-like one (``project_id``) there takes
    ``{{ namespace_id }}`` when the server issues ids (``issued``), else ``{{ namespace }}``."""
    names = [n for n in _props(schema) if NAMESPACE.match(n)]
    plain = [n for n in names if not re.search(r"id$", n, re.I)]
    if plain:
        return plain[0], "{{ namespace }}"
    if names:
        return names[0], "{{ namespace_id }}" if issued else "{{ namespace }}"
    return None


def _json_format(name: str, spec: Mapping[str, Any]) -> bool:
    """An output-format argument that offers JSON (basic-memory's ``output_format``)."""
    return "format" in name.lower() and "json" in (spec.get("enum") or [])


def _fill(name: str, spec: Mapping[str, Any], notes: list[str], description: str = "") -> Any:
    """A value for a required argument memrun has no meaning for (an enum's or the tool
    description's first allowed value, a namespace, false, else TODO)."""
    if spec.get("enum"):
        notes.append(f"{name}: the first of its allowed values {spec['enum']}")
        return spec["enum"][0]
    if m := re.search(rf"`?{re.escape(name)}`?\s+(?:is|must be)\s+one\s+of:?\s*`?([\w-]+)", description, re.I):
        notes.append(f"{name}: {m.group(1)!r}, the first value the tool's description allows")
        return m.group(1)
    if NAMESPACE.match(name):
        return "{{ namespace }}"
    if _type(spec) == "boolean":
        return False
    if PATH_ARG.search(name) and _type(spec) == "string":
        notes.append(f"{name}: 'memrun', a folder inside the namespace")
        return "memrun"
    notes.append(f"{name}: required, meaning unknown; set it")
    return "TODO"


def _record_object(item: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """The template of one record as an element of an array of objects (e.g. entities)."""
    record: dict[str, Any] = {}
    for name, spec in _props(item).items():
        if KEY.match(name) and "key" not in str(record.values()):
            record[name] = "{{ record.key }}"
        elif TEXT.match(name):
            record[name] = ["{{ record.text }}"] if _type(spec) == "array" else "{{ record.text }}"
        elif name in (item.get("required") or []):
            record[name] = "turn" if _type(spec) == "string" and not spec.get("enum") else _fill(name, spec, notes)
    return record


def propose_ingest(tool: Any, notes: list[str], issued: bool = False) -> dict[str, Any]:
    """``arm.ingest`` for ``tool``: a batch when it takes an array of objects, else one call per record."""
    schema = tool.input_schema or {}
    required = set(schema.get("required") or [])
    arguments: dict[str, Any] = {}
    op: dict[str, Any] = {"tool": tool.name}
    space = namespace_arg(schema, issued)
    if space:  # required or not (optional there: a default project), the namespace goes in
        arguments[space[0]] = space[1]
    for name, spec in _props(schema).items():
        if name in arguments:
            continue
        if _json_format(name, spec):
            arguments[name] = "json"
            continue
        items = spec.get("items") or {}
        if _type(spec) == "array" and _type(items) == "object" and "record" not in op:
            op["record"] = _record_object(items, notes) if _props(items) else {"id": "{{ record.key }}",
                                                                               "text": "{{ record.text }}"}
            arguments[name] = "{{ records }}"
            notes.append(f"ingest: records sent in batches as {name}[] objects {sorted(op['record'])}")
        elif TEXT.match(name) and _type(spec) == "string":
            arguments[name] = "{{ record.text }}"
        elif KEY.match(name) and _type(spec) == "string":
            arguments[name] = "{{ record.key }}"
        elif _type(spec) == "boolean" and name == "force":
            arguments[name] = True
        elif name in required:
            arguments[name] = _fill(name, spec, notes, tool.description or "")
    if "record" not in op:
        op["per_record"] = True
        ids = [n for n, s in _props(schema).items() if n in required and _type(s) == "string"
               and arguments.get(n) == "{{ namespace }}" and re.search(r"id$", n, re.I) and not issued]
        if "{{ record.key }}" not in arguments.values() and ids:
            # a required id with no key argument beside it (local-memory's session_id): the record key
            # goes there, so a hit can name its record; isolation is then a fresh server per history
            arguments[ids[0]] = "{{ record.key }}"
            notes.append(f"ingest: the record key goes in {ids[0]} (no other argument takes an id)")
        if "{{ record.key }}" not in arguments.values():
            notes.append("ingest: no argument looks like a record id; hits can only be matched to records if "
                         "the server returns a field you can send the key in")
    op["arguments"] = arguments
    return op


def propose_search(tool: Any, notes: list[str], issued: bool = False) -> dict[str, Any]:
    """``arm.search`` for ``tool`` (its ``result`` comes from a real answer: :func:`result_path`)."""
    schema = tool.input_schema or {}
    required = set(schema.get("required") or [])
    space = namespace_arg(schema, issued)
    arguments: dict[str, Any] = dict([space]) if space else {}
    for name, spec in _props(schema).items():
        if name in arguments:
            continue
        if QUERY.match(name) and "{{ query }}" not in arguments.values():
            arguments[name] = "{{ query }}"
        elif K.match(name) and _type(spec) == "integer" and "{{ k }}" not in arguments.values():
            arguments[name] = "{{ k }}"
        elif _json_format(name, spec):
            arguments[name] = "json"
        elif name in required and not NAMESPACE.match(name):
            arguments[name] = _fill(name, spec, notes)
    return {"tool": tool.name, "arguments": arguments}


def propose_create(tools: Mapping[str, Any], uses: list[Any], notes: list[str]) -> dict[str, Any] | None:
    """``arm.create``: a tool that makes a namespace (its name says create and a namespace noun,
    and it takes the namespace's name), when the tools in ``uses`` name a namespace; its
    path-like arguments get ``{{ namespace_dir }}`` (a folder memrun removes with it)."""
    if not any(namespace_arg(t.input_schema or {}, False) for t in uses):
        return None
    for name in sorted(tools, key=lambda n: (len(n), n)):
        tool = tools[name]
        schema = tool.input_schema or {}
        words = re.split(r"[^a-z]+", name.lower())
        nouns = [w for w in words if NAMESPACE.match(w)]
        arg = next((n for n in _props(schema) if NAMESPACE.match(n) and not re.search(r"id$", n, re.I)), None)
        if not CREATE.search(name) or ERASE.search(name) or not nouns or arg is None:
            continue
        arguments: dict[str, Any] = {arg: "{{ namespace }}"}
        for prop, spec in _props(schema).items():
            if prop in arguments:
                continue
            if PATH_ARG.search(prop) and _type(spec) == "string":
                arguments[prop] = "{{ namespace_dir }}"
            elif _json_format(prop, spec):
                arguments[prop] = "json"
            elif prop in (schema.get("required") or []):
                arguments[prop] = _fill(prop, spec, notes, tool.description or "")
        notes.append(f"create: {name} makes each history's {nouns[0]} before its records go in")
        return {"tool": name, "arguments": arguments, "_noun": nouns[0]}
    return None


def propose_erase(tools: Mapping[str, Any], noun: str | None, issued: bool) -> dict[str, Any] | None:
    """``arm.erase``: a tool that deletes a whole namespace: its name says so, every argument it
    requires names the namespace (one that requires an item's identifier deletes an item),
    the namespace noun of ``create`` in its name when there is one; booleans that say to
    delete the contents too (``delete_notes``) are true."""
    found = []
    for name, tool in tools.items():
        schema = tool.input_schema or {}
        required = list(schema.get("required") or [])
        space = namespace_arg(schema, issued) if not noun else next(
            ((n, "{{ namespace }}") for n in _props(schema) if NAMESPACE.match(n)), None)
        if not ERASE.search(name) or space is None or any(not NAMESPACE.match(r) for r in required):
            continue
        found.append(((noun is not None and noun in name.lower()), name, space, schema))
    if not found:
        return None
    _, name, space, schema = sorted(found, key=lambda f: (not f[0], len(f[1]), f[1]))[0]
    arguments: dict[str, Any] = dict([space])
    for prop, spec in _props(schema).items():
        if _type(spec) == "boolean" and re.search(r"delete|purge|remove|hard|contents|files|notes", prop, re.I):
            arguments[prop] = True
    return {"tool": name, "arguments": arguments}


def propose(tools: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``{ingest, search, erase?}`` operations for the server's tools, and the notes on guesses.
    Raises ValueError when no tool looks like storing or searching."""
    notes: list[str] = []
    search = _best(tools, _search_score)
    ingest = _best(tools, _store_score, exclude=(search or "",))
    if not ingest or not search:
        what = "storing (a text argument)" if not ingest else "searching (a query argument)"
        raise ValueError(f"no tool looks like {what}; tools: {', '.join(sorted(tools))}")
    others = sorted(n for n in tools if n not in (search, ingest) and _search_score(tools[n]) is not None)
    if others:
        notes.append(f"search: {search} (it takes the query); also searching: {', '.join(others)}")
    create = propose_create(tools, [tools[ingest], tools[search]], notes)
    noun = create.pop("_noun") if create else None
    issued = create is not None and all(_by_id(tools[n]) for n in (ingest, search))
    ops: dict[str, Any] = {"create": create} if create else {}
    ops.update({"ingest": propose_ingest(tools[ingest], notes, issued), "search": propose_search(tools[search], notes, issued)})
    erase = propose_erase(tools, noun, issued)
    if erase:
        ops["erase"] = erase
    return ops, notes


def _by_id(tool: Any) -> bool:
    """Whether ``tool`` names the namespace only by an id (``space_id``, no ``space`` beside it)."""
    found = namespace_arg(tool.input_schema or {}, False)
    return found is not None and bool(re.search(r"id$", found[0], re.I))


def create_result(op: dict[str, Any], document: Any, namespace: str, notes: list[str]) -> str:
    """The namespace id later calls use, from ``create``'s answer ``document``: when they name
    it by an id (``{{ namespace_id }}``), the path to the id the server issued (a field named
    like an id whose value is not the name memrun sent) is set as ``op["result"]``; else the name."""
    found = _id_path(document, namespace)
    if found is None:
        return namespace
    path, value = found
    op["result"] = path
    notes.append(f"create.result: {path}, the id the server issued ({value}), is {{{{ namespace_id }}}} in later calls")
    return str(value)


def _id_path(document: Any, namespace: str, prefix: str = "", depth: int = 2) -> tuple[str, Any] | None:
    if not isinstance(document, Mapping):
        return None
    for key, value in document.items():
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) != namespace \
                and re.fullmatch(r"(\w+_)?(id|uuid)", str(key), re.I) and re.fullmatch(r"[A-Za-z_]\w*", str(key)):
            return prefix + str(key), value
    for key, value in document.items():
        if depth > 1 and isinstance(value, Mapping) and re.fullmatch(r"[A-Za-z_]\w*", str(key)):
            inner = _id_path(value, namespace, f"{prefix}{key}.", depth - 1)
            if inner:
                return inner
    return None


def result_path(document: Any, keys: set[str], texts: set[str]) -> str | None:
    """The JMESPath mapping ``document`` (a real search answer) to hits: the list of objects
    in it, its field holding one of ``keys``, one holding a text (or a list of them), a score."""
    candidates: list[tuple[str, list[Any]]] = []
    if isinstance(document, list):
        candidates.append(("[]", document))
    elif isinstance(document, Mapping):
        candidates += [(f"{k}[]", v) for k, v in document.items() if isinstance(v, list)]
        candidates += [(f"{k}.{k2}[]", v2) for k, v in document.items() if isinstance(v, Mapping)  # {result: {results: [...]}}
                       and re.fullmatch(r"[A-Za-z_]\w*", str(k)) for k2, v2 in v.items() if isinstance(v2, list)
                       and re.fullmatch(r"[A-Za-z_]\w*", str(k2))]
    for prefix, items in candidates:
        objects = [o for o in items if isinstance(o, Mapping)]
        if not objects:
            continue
        fields: dict[str, str] = {}
        for o in objects:
            for name, value in o.items():
                if isinstance(value, str) and value in keys:
                    fields.setdefault("key", name)
                elif isinstance(value, str) and value in texts:
                    fields.setdefault("text", name)
                elif isinstance(value, list) and value and isinstance(value[0], str) and value[0] in texts:
                    fields.setdefault("text", f"{name}[0]")
                elif isinstance(value, list) and value and isinstance(value[0], Mapping):  # a list of objects
                    sub = next((k for k, v in value[0].items() if isinstance(v, str) and v in texts), None)
                    if sub is not None and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", sub):
                        fields.setdefault("text", f"{name}[0].{sub}")
                elif isinstance(value, (int, float)) and SCORE.search(name):
                    fields.setdefault("score", name)
        if "key" in fields:
            mapped = ", ".join(f"{k}: {v}" for k, v in fields.items())
            base = prefix if prefix != "[]" else ""
            return f"{base or '[]'}.{{{mapped}}}" if base else f"[].{{{mapped}}}"
    return None
