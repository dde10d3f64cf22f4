"""JMESPath expressions compiled once into Python closures, for the result paths of
``arm=http`` and ``arm=mcp`` (:class:`memrun.arms.http_templates.ResponsePath`).

The ``jmespath`` library parses an expression into a syntax tree and walks the tree for
every document (``TreeInterpreter.visit``: a method lookup and a call per node). A search
path such as ``hits[].{key: id, score: score, text: text}`` visits 70 nodes for ten hits,
on every search. :func:`compile_path` turns the tree into nested closures once; each
closure is a line-for-line copy of its node's ``TreeInterpreter.visit_*`` method, so the
answer is the library's own (fields, sub-expressions, projections, flatten, indexes,
multi-selects, literals, ``@``). Any other node (filters, functions, comparisons, pipes,
slices, ``||``/``&&``/``!``) is handed to the library's interpreter as it stands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jmespath
from jmespath.visitor import TreeInterpreter

Path = Callable[[Any], Any]
_INTERPRETER = TreeInterpreter()


def compile_path(expression: str) -> Path:
    """A function from a JSON document to the value of ``expression`` (None where it finds
    nothing), equal to ``jmespath.search(expression, document)``. Raises
    ``jmespath.exceptions.JMESPathError`` when the expression does not parse."""
    return _compile(jmespath.compile(expression).parsed)


def _field(name: str) -> Path:
    def field(value: Any) -> Any:
        try:
            return value.get(name)
        except AttributeError:
            return None
    return field


def _chain(steps: list[Path]) -> Path:
    if len(steps) == 2:
        first, second = steps
        return lambda value: second(first(value))

    def chain(value: Any) -> Any:
        for step in steps:
            value = step(value)
        return value
    return chain


def _projection(left: Path, right: Path) -> Path:
    def projection(value: Any) -> Any:
        base = left(value)
        if not isinstance(base, list):
            return None
        collected = []
        for element in base:
            current = right(element)
            if current is not None:
                collected.append(current)
        return collected
    return projection


def _flatten(inner: Path) -> Path:
    def flatten(value: Any) -> Any:
        base = inner(value)
        if not isinstance(base, list):
            return None
        merged: list[Any] = []
        for element in base:
            if isinstance(element, list):
                merged.extend(element)
            else:
                merged.append(element)
        return merged
    return flatten


def _index(position: int) -> Path:
    def index(value: Any) -> Any:
        if not isinstance(value, list):
            return None
        try:
            return value[position]
        except IndexError:
            return None
    return index


def _multi_select_dict(pairs: list[tuple[str, dict[str, Any]]]) -> Path:
    fields = [(key, node["value"]) for key, node in pairs if node["type"] == "field"]
    if len(fields) == len(pairs):  # {key: id, score: score}: the common hit mapping, read directly

        def plain_fields(value: Any) -> Any:
            if value is None:
                return None
            if type(value) is dict:
                get = value.get
                return {key: get(name) for key, name in fields}
            return {key: _field(name)(value) for key, name in fields}
        return plain_fields
    compiled = [(key, _compile(node)) for key, node in pairs]

    def multi_select_dict(value: Any) -> Any:
        if value is None:
            return None
        return {key: path(value) for key, path in compiled}
    return multi_select_dict


def _multi_select_list(items: list[Path]) -> Path:
    def multi_select_list(value: Any) -> Any:
        if value is None:
            return None
        return [path(value) for path in items]
    return multi_select_list


def _compile(node: dict[str, Any]) -> Path:
    kind, children = node["type"], node.get("children", [])
    if kind == "field":
        return _field(node["value"])
    if kind in ("subexpression", "index_expression"):
        return _chain([_compile(child) for child in children])
    if kind == "projection":
        return _projection(_compile(children[0]), _compile(children[1]))
    if kind == "flatten":
        return _flatten(_compile(children[0]))
    if kind in ("identity", "current"):
        return lambda value: value
    if kind == "index":
        return _index(node["value"])
    if kind == "key_val_pair":
        return _compile(children[0])
    if kind == "literal":
        literal = node["value"]
        return lambda value: literal
    if kind == "multi_select_dict":
        return _multi_select_dict([(child["value"], child["children"][0]) for child in children])
    if kind == "multi_select_list":
        return _multi_select_list([_compile(child) for child in children])
    return lambda value: _INTERPRETER.visit(node, value)
