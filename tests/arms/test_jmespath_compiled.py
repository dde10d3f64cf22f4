"""Result paths compiled into closures give jmespath's own answer on every document."""

from __future__ import annotations

import random

import jmespath
import pytest

from memrun.arms.jmespath_compiled import compile_path

EXPRESSIONS = [
    "hits", "hits[].{key: id, score: score, text: text}", "results[*].{key: id}", "count",
    "entities[].{key: name, text: observations[0]}", "a.b[0].c", "[0]", "@", "a[]", "a[][]", "a[*].b[*].c",
    "hits[].{key: id, nested: {s: score, t: [text, id]}}", "hits[].[id, score]", "`{\"x\": 1}`", "a.[`3`, b]",
    "hits[-1].id", "hits[5]", "{k: hits[0].id, n: count}", "[count, hits]", "data.items[].payload.memory",
    # handed to jmespath's interpreter as they stand (filters, functions, pipes, slices, logic):
    "hits[?score > `1`].id", "length(hits)", "hits | [0]", "hits[:2]", "hits[].id || count", "a && b", "!a",
    "sort_by(hits, &score)[].id", "*.id", "hits[].{key: id, top: score >= `2`}",
]


def documents(rng: random.Random, depth: int = 0):
    """Random JSON-like values (with the keys the expressions name) and some odd ones."""
    keys = ["hits", "id", "score", "text", "a", "b", "c", "count", "entities", "name", "observations",
            "results", "data", "items", "payload", "memory"]
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([0, 1, 2.5, -3, True, False])
    if kind == 2:
        return rng.choice(["", "x", "D1:2"])
    if kind == 3:
        return []
    if kind == 4:
        return {}
    if kind in (5, 6):
        return {k: documents(rng, depth + 1) for k in rng.sample(keys, rng.randrange(1, 6))}
    return [documents(rng, depth + 1) for _ in range(rng.randrange(0, 5))]


def outcome(search, document):
    """The value, or the type of the error (a function given the wrong type, say)."""
    try:
        return search(document)
    except Exception as exc:  # noqa: BLE001 - compared, not handled
        return type(exc)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_same_answer_as_jmespath(expression) -> None:
    rng = random.Random(expression)
    path, reference = compile_path(expression), jmespath.compile(expression)
    hits = {"hits": [{"id": f"D{i}", "score": float(i), "text": f"t{i}"} for i in range(4)], "count": 4}
    fixed = [hits, {"hits": None}, {"hits": {"id": 1}}, {"hits": ["x", None, [1, 2]]}, [hits, hits], None,
             {"a": {"b": [{"c": 1}, {"c": [2]}]}, "entities": [{"name": "n", "observations": []}]}]
    for document in fixed + [documents(rng) for _ in range(300)]:
        assert outcome(path, document) == outcome(reference.search, document), document


def test_a_bad_expression_raises_jmespaths_error() -> None:
    with pytest.raises(jmespath.exceptions.ParseError):
        compile_path("hits[.")
