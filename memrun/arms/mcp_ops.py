"""The operations of ``arm=mcp``: which tool to call, its arguments, and where the answer is.

Each operation (``health``, ``create``, ``ingest``, ``ready``, ``search``, ``erase``) is a
:class:`ToolOperation`: the tool's name, its ``arguments`` as a JSON value whose strings
are Jinja2 templates and a JMESPath ``result`` over the tool's result, the same
template and path machinery as ``arm=http`` (:mod:`memrun.arms.http_templates`).

The document a ``result`` path reads (:func:`result_document`) is the tool result's
``structuredContent`` when the server sends it, else the JSON parsed from its text
content (one text block: its JSON; several: the list of them), else the text itself.
A ``structuredContent`` that is only the Python SDK's wrapper of a tool returning a
string, ``{"result": "<text>"}``, counts as none: the text is what the tool returned.

Before a call the rendered arguments are checked against the tool's ``inputSchema``
(:func:`check_arguments`, with ``jsonschema``), so a mapping that sends a number where
the tool wants a string fails in one line naming the argument, not as a server error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memrun.arms.http_templates import JsonTemplate, ResponsePath, check_keys, describe_shape
from memrun.errors import ArmError
from memrun.lazy import lazy

if TYPE_CHECKING:
    import jsonschema
else:
    jsonschema = lazy("jsonschema")  # loaded at the first argument check (memrun.lazy)

OPERATIONS = ("health", "create", "ingest", "ready", "search", "erase")
KEYS = ("tool", "arguments", "result", "record", "per_record")
# The names each operation's templates see (``record`` too in ingest's ``record``, and in
# its ``arguments`` when ``per_record``).
# ``namespace_id``: the id the ``create`` tool returned (its ``result`` path), else ``namespace``;
# ``namespace_dir``: an empty folder of memrun's for the namespace (a project's path), removed with it.
CONTEXT = {
    "health": ("flags",),
    "create": ("namespace", "namespace_dir", "history_id", "flags"),
    "ingest": ("namespace", "namespace_id", "history_id", "flags", "records"),
    "ready": ("namespace", "namespace_id", "history_id", "flags", "n_records"),
    "search": ("namespace", "namespace_id", "query", "k", "flags"),
    "erase": ("namespace", "namespace_id", "history_id", "flags"),
}


class ToolOperation:
    """One configured tool call (see the module docstring).

    ``ingest`` also takes ``record`` (the template of one record in ``records``) and
    ``per_record`` (true: one call per record, whose arguments see ``record``);
    ``ready`` takes ``equals``, ``timeout_s``, ``interval_s`` as in ``arm=http``.
    Raises ArmError for an unknown key, a missing tool or a template that does not parse.
    """

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        where = check_keys(name, spec, KEYS)
        if not spec.get("tool"):
            raise ArmError(f"{where}.tool is not set; give the name of the server's tool "
                           "(memrun arm init mcp -- <command> lists them)")
        self.name, self.where, self.tool = name, where, str(spec["tool"])
        self.arguments = JsonTemplate(spec.get("arguments") or {}, f"{where}.arguments")
        self.result = ResponsePath(spec["result"], f"{where}.result") if spec.get("result") else None
        self.record = JsonTemplate(spec["record"], f"{where}.record") if spec.get("record") is not None else None
        self.per_record = bool(spec.get("per_record"))
        self.equals = JsonTemplate(spec["equals"], f"{where}.equals") if spec.get("equals") is not None else None
        self.timeout_s = float(60.0 if spec.get("timeout_s") is None else spec["timeout_s"])
        self.interval_s = float(0.5 if spec.get("interval_s") is None else spec["interval_s"])
        if name in ("search", "ready") and self.result is None:
            example = ("entities[].{key: name, text: observations[0]}" if name == "search"
                       else "count (with equals: '{{ n_records }}')")
            raise ArmError(f"{where}.result is not set; give the JMESPath over the tool's result, e.g. {example}")

    def render(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments; raises ArmError when they are not an object."""
        value = self.arguments.render(**context)
        if not isinstance(value, Mapping):
            raise ArmError(f"{self.where}.arguments must render to an object of argument: value; "
                           f"got {describe_shape(value)}")
        return dict(value)


def result_document(result: Any) -> Any:
    """What a ``result`` path reads from a ``CallToolResult`` (see the module docstring)."""
    structured = getattr(result, "structured_content", None)
    wrapper = isinstance(structured, Mapping) and list(structured) == ["result"] and isinstance(structured["result"], str)
    if structured is not None and not wrapper:
        return structured
    texts = [str(c.text) for c in (result.content or []) if getattr(c, "type", "") == "text"]
    parsed = []
    for text in texts:
        try:
            parsed.append(json.loads(text))
        except ValueError:
            parsed.append(text)
    if len(parsed) == 1:
        return parsed[0]
    return parsed


def issued_id(op: ToolOperation, result: Any) -> str:
    """The namespace id ``op.result`` (the ``create`` operation's) finds in the tool's result.
    Raises ArmError when it finds nothing, or something that is not a string or a number."""
    value = map_result(op, result)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise ArmError(f"{op.where}.result: {op.result.expression if op.result else ''!r} must find the id the "
                       f"server issued (a string or number); got {describe_shape(value)}")
    return str(value)


def map_result(op: ToolOperation, result: Any, missing_ok: bool = False) -> Any:
    """``op.result`` over the tool's result. Raises ArmError showing the result's shape when
    the path finds nothing (unless ``missing_ok``)."""
    assert op.result is not None
    return op.result.find(result_document(result), f"the result of tool {op.tool!r}", missing_ok)


def check_tools(ops: Mapping[str, ToolOperation], tools: Mapping[str, Any], label: str) -> None:
    """Raise ArmError when an operation names a tool the server does not have (listing those it has)."""
    for op in ops.values():
        if op.tool not in tools:
            raise ArmError(f"{op.where}.tool: the MCP server {label} has no tool {op.tool!r}; "
                           f"its tools: {', '.join(sorted(tools)) or '(none)'}")


# Schema keywords whose verdict depends on an instance's shape alone (:func:`_shape`: JSON
# types, object keys, list lengths). ``format`` is an annotation here (no format checker).
_SHAPE_KEYWORDS = frozenset({
    "type", "properties", "required", "items", "prefixItems", "additionalItems", "additionalProperties",
    "patternProperties", "minItems", "maxItems", "minProperties", "maxProperties", "dependentRequired",
    "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref", "$defs", "definitions",
    "$schema", "$id", "$comment", "title", "description", "default", "examples", "format",
    "readOnly", "writeOnly", "deprecated"})
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")
_SUBSCHEMAS = ("items", "additionalItems", "additionalProperties", "not", "if", "then", "else")
_SHAPES_KEPT = 4096  # valid shapes remembered per tool


def shape_decides(schema: Any) -> bool:
    """True when every keyword of ``schema`` (and of its subschemas) is one whose verdict
    depends only on the instance's shape (no enum, const, pattern, lengths of strings,
    numeric bounds, uniqueItems, remote $ref): then two instances of one shape are both
    valid or both invalid."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping) or set(schema) - _SHAPE_KEYWORDS:
        return False
    ref = schema.get("$ref")  # a local definition (checked below with the rest), never a remote one
    if ref is not None and not (ref == "#" or isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/"))):
        return False
    subschemas = [schema[k] for k in _SUBSCHEMAS if k in schema]
    for key in _SUBSCHEMA_MAPS:
        if key in schema:
            if not isinstance(schema[key], Mapping):
                return False
            subschemas.extend(schema[key].values())
    for key in _SUBSCHEMA_LISTS:
        if key in schema:
            if not isinstance(schema[key], list):
                return False
            subschemas.extend(schema[key])
    if isinstance(schema.get("items"), list):  # draft 4-7 tuple items
        subschemas = [s for s in subschemas if s is not schema["items"]] + schema["items"]
    return all(shape_decides(s) for s in subschemas)


def _shape(value: Any) -> Any:
    """A hashable summary of a JSON value: its types (an integral float apart from an int and
    from other floats: JSON Schema drafts disagree on whether 1.0 is an integer), object keys
    and list lengths, without the strings' or numbers' values; None for a value that is not
    plain JSON (a tuple, a set, a non-string key), which is checked in full."""
    kind = type(value)
    if kind is str:
        return "s"
    if kind is bool:
        return "b"
    if kind is int:
        return "i"
    if kind is float:
        return "fi" if value.is_integer() else "f"
    if value is None:
        return "n"
    if kind is list:
        items = [_shape(v) for v in value]
        return None if any(s is None for s in items) else ("a", *items)
    if kind is dict:
        if not all(type(k) is str for k in value):
            return None
        fields = [(k, _shape(v)) for k, v in value.items()]
        return None if any(s is None for _, s in fields) else ("o", *fields)
    return None


class ArgumentChecker:
    """Checks rendered arguments against each tool's ``inputSchema`` (jsonschema).

    Most tool schemas only say types, keys and required names (:func:`shape_decides`); for
    those a call whose arguments have the shape of an earlier valid call is valid without
    running jsonschema again (an ingest batch of 100 records costs milliseconds to check).
    Any other schema is checked in full on every call.
    """

    def __init__(self, tools: Mapping[str, Any]) -> None:
        self._tools = tools
        self._validators: dict[str, Any] = {}
        self._valid_shapes: dict[str, set[Any] | None] = {}  # tool -> shapes seen valid (None: check every call)

    def _validator(self, tool: str) -> Any:
        validator = self._validators.get(tool)
        if validator is None:
            schema = getattr(self._tools.get(tool), "input_schema", None) or {"type": "object"}
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
            validator = self._validators[tool] = cls(schema)
            self._valid_shapes[tool] = set() if shape_decides(schema) else None
        return validator

    def check(self, op: ToolOperation, arguments: Mapping[str, Any]) -> None:
        """Raise ArmError naming the first failing argument and the schema's complaint."""
        validator = self._validator(op.tool)
        seen, shape = self._valid_shapes[op.tool], None
        if seen is not None:
            shape = _shape(dict(arguments))
            if shape is not None and shape in seen:
                return
        error = jsonschema.exceptions.best_match(validator.iter_errors(dict(arguments)))
        if error is not None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
            raise ArmError(f"{op.where}.arguments: argument {where or '(the whole object)'!s} of tool {op.tool!r} "
                           f"fails its inputSchema: {error.message[:200]}")
        if seen is not None and shape is not None:
            if len(seen) >= _SHAPES_KEPT:
                seen.clear()
            seen.add(shape)


def schema_hash(tools: Mapping[str, Any], names: list[str]) -> str:
    """sha256 (first 12 hex digits) of the named tools' names and input schemas, canonical JSON."""
    doc = {n: getattr(tools[n], "input_schema", None) for n in sorted(set(names)) if n in tools}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]
