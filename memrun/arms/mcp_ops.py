"""The operations of ``arm=mcp``: which tool to call, its arguments, and where the answer is.

Each operation (``health``, ``ingest``, ``ready``, ``search``, ``erase``) is a
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
from typing import Any

from memrun.arms.http_templates import JsonTemplate, ResponsePath, check_keys, describe_shape
from memrun.errors import ArmError

OPERATIONS = ("health", "ingest", "ready", "search", "erase")
KEYS = ("tool", "arguments", "result", "record", "per_record")
# The names each operation's templates see (``record`` too in ingest's ``record``, and in
# its ``arguments`` when ``per_record``).
CONTEXT = {
    "health": ("flags",),
    "ingest": ("namespace", "history_id", "flags", "records"),
    "ready": ("namespace", "history_id", "flags", "n_records"),
    "search": ("namespace", "query", "k", "flags"),
    "erase": ("namespace", "history_id", "flags"),
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


def map_result(op: ToolOperation, result: Any, missing_ok: bool = False) -> Any:
    """``op.result`` over the tool's result. Raises ArmError showing the result's shape when
    the path finds nothing (unless ``missing_ok``)."""
    document = result_document(result)
    assert op.result is not None
    value = op.result.search(document)
    if value is None and not missing_ok:
        raise ArmError(f"{op.where}.result {op.result.expression!r} found nothing in the result of tool "
                       f"{op.tool!r}, which is {describe_shape(document)}")
    return value


def check_tools(ops: Mapping[str, ToolOperation], tools: Mapping[str, Any], label: str) -> None:
    """Raise ArmError when an operation names a tool the server does not have (listing those it has)."""
    for op in ops.values():
        if op.tool not in tools:
            raise ArmError(f"{op.where}.tool: the MCP server {label} has no tool {op.tool!r}; "
                           f"its tools: {', '.join(sorted(tools)) or '(none)'}")


class ArgumentChecker:
    """Checks rendered arguments against each tool's ``inputSchema`` (jsonschema)."""

    def __init__(self, tools: Mapping[str, Any]) -> None:
        self._tools = tools
        self._validators: dict[str, Any] = {}

    def check(self, op: ToolOperation, arguments: Mapping[str, Any]) -> None:
        """Raise ArmError naming the first failing argument and the schema's complaint."""
        import jsonschema

        validator = self._validators.get(op.tool)
        if validator is None:
            schema = getattr(self._tools.get(op.tool), "input_schema", None) or {"type": "object"}
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
            validator = self._validators[op.tool] = cls(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(dict(arguments)))
        if error is not None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
            raise ArmError(f"{op.where}.arguments: argument {where or '(the whole object)'!s} of tool {op.tool!r} "
                           f"fails its inputSchema: {error.message[:200]}")


def schema_hash(tools: Mapping[str, Any], names: list[str]) -> str:
    """sha256 (first 12 hex digits) of the named tools' names and input schemas, canonical JSON."""
    doc = {n: getattr(tools[n], "input_schema", None) for n in sorted(set(names)) if n in tools}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]
