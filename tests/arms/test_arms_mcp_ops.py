"""arm=mcp's argument check against a tool's inputSchema: run once per shape of arguments
where the schema can only judge shapes, on every call where it judges values."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memrun.arms import mcp_ops
from memrun.arms.mcp_ops import ArgumentChecker, ToolOperation, shape_decides
from memrun.errors import ArmError

STORE = {"type": "object", "required": ["namespace", "records"],
         "properties": {"namespace": {"type": "string", "title": "Namespace"},
                        "records": {"type": "array", "items": {"$ref": "#/$defs/Record"}}},
         "$defs": {"Record": {"type": "object", "additionalProperties": {"type": "string"}}}}


def op_and_checker(schema: dict) -> tuple[ToolOperation, ArgumentChecker]:
    op = ToolOperation("ingest", {"tool": "store", "arguments": {"namespace": "n", "records": "{{ records }}"}})
    return op, ArgumentChecker({"store": SimpleNamespace(input_schema=schema)})


def count_validations(monkeypatch) -> list[int]:
    import jsonschema.exceptions

    runs, original = [0], jsonschema.exceptions.best_match

    def counted(errors, *args, **kwargs):
        runs[0] += 1
        return original(errors, *args, **kwargs)

    monkeypatch.setattr(jsonschema.exceptions, "best_match", counted)
    return runs


def test_a_shape_seen_valid_is_not_validated_again_and_a_new_shape_is(monkeypatch) -> None:
    op, checker = op_and_checker(STORE)
    runs = count_validations(monkeypatch)
    records = [{"id": f"D1:{i}", "text": f"text {i}"} for i in range(100)]
    for start in (0, 10, 20):
        checker.check(op, op.render({"records": records[start:start + 10]}))
    assert runs == [1]
    checker.check(op, op.render({"records": records[:3]}))  # another length: another shape
    assert runs == [2]
    with pytest.raises(ArmError, match=r"argument records\[1\].text of tool 'store' fails its inputSchema: "
                                       r"1 is not of type 'string'"):
        checker.check(op, op.render({"records": [records[0], {"id": "x", "text": 1}] + records[2:10]}))


def test_a_schema_that_judges_values_is_checked_on_every_call(monkeypatch) -> None:
    schema = {"type": "object", "properties": {"records": {"type": "array", "maxItems": 20, "items": {
        "type": "object", "properties": {"text": {"type": "string", "maxLength": 8}}}}}}
    assert not shape_decides(schema) and shape_decides(STORE)
    op, checker = op_and_checker(schema)
    checker.check(op, op.render({"records": [{"text": "short"}]}))
    with pytest.raises(ArmError, match=r"argument records\[0\].text .*is too long"):
        checker.check(op, op.render({"records": [{"text": "much too long"}]}))


@pytest.mark.parametrize("schema", [
    {"type": "string", "enum": ["a"]}, {"type": "integer", "minimum": 0}, {"const": 1}, {"pattern": "x"},
    {"$ref": "https://example.org/s.json"}, {"type": "array", "uniqueItems": True},
    {"properties": {"a": {"type": "string", "minLength": 1}}}, {"anyOf": [{"type": "string"}, {"multipleOf": 2}]},
    {"items": [{"type": "string"}, {"format": "date", "maxLength": 3}]}, {"unknownKeyword": 1},
])
def test_value_keywords_anywhere_mean_a_full_check(schema) -> None:
    assert not shape_decides(schema)


def test_integral_floats_have_a_shape_of_their_own() -> None:
    # Draft 4 says 1.0 is not an integer, later drafts that it is: never share a verdict.
    assert len({mcp_ops._shape(v) for v in (1, 1.0, 1.5, True, None, "1")}) == 6  # noqa: SLF001
