"""Request templates give Jinja2's own value, or an error, whichever way they are compiled.

A template of constants, dicts, lists and whole ``{{ a.b }}`` names is compiled into one
generated function (memrun.arms.http_templates._generate) that reads plain dicts directly;
these tests hold it to what Jinja2 itself gives for each leaf, on random templates and
random contexts: plain dicts, dict subclasses, objects with attributes, names of dict
methods (``items``), missing names and values that are not dicts at all.
"""

from __future__ import annotations

import random
import subprocess
import sys
from types import SimpleNamespace

import jinja2
import pytest

from memrun.arms.http_templates import JsonTemplate
from memrun.errors import ArmError

ENV = jinja2.Environment(undefined=jinja2.StrictUndefined)
LEAVES = ["{{ record.key }}", "{{ record.text }}", "{{ record.meta.x }}", "{{ record.items }}", "{{ record }}",
          "{{ namespace }}", "{{ missing }}", "{{ record.missing }}", "{{record.meta}}", 1, None, True, 2.5,
          "plain text", ""]


class Sub(dict):
    """A dict subclass: Jinja reads its attributes first."""

    key = "attribute, not item"


def jinja_value(leaf):
    """What Jinja2 gives for one leaf: a whole expression's value, or the error's type."""
    if not isinstance(leaf, str) or "{{" not in leaf:
        return lambda context: leaf
    compiled = ENV.compile_expression(leaf.strip()[2:-2], undefined_to_none=False)

    def value(context):
        result = compiled(**context)
        if isinstance(result, jinja2.Undefined):
            result._fail_with_undefined_error()
        return result
    return value


def reference(spec, context):
    if isinstance(spec, dict):
        return {k: reference(v, context) for k, v in spec.items()}
    if isinstance(spec, list):
        return [reference(v, context) for v in spec]
    return jinja_value(spec)(context)


def template(rng, depth=0):
    kind = rng.randrange(5 if depth < 3 else 2)
    if kind <= 1:
        return rng.choice(LEAVES)
    if kind in (2, 3):
        return {f"k{i}": template(rng, depth + 1) for i in range(rng.randrange(0, 4))}
    return [template(rng, depth + 1) for _ in range(rng.randrange(0, 3))]


def record(rng):
    meta = rng.choice([{"x": 1}, {"x": [1, 2]}, {}, SimpleNamespace(x="attr"), Sub(x="sub"), "text", None])
    fields = {"key": "D1:2", "text": "hi", "meta": meta, "items": "an item called items"}
    kept = {k: v for k, v in fields.items() if rng.random() < 0.85}
    return rng.choice([kept, kept, Sub(kept), SimpleNamespace(**kept), "a string", 7, None])


def outcome(render, context):
    try:
        return ("value", render(context))
    except (ArmError, jinja2.TemplateError, TypeError, KeyError, AttributeError):
        return ("error", None)


@pytest.mark.parametrize("seed", range(8))
def test_random_templates_give_jinjas_values(seed):
    rng = random.Random(seed)
    for _ in range(300):
        spec = template(rng)
        compiled = JsonTemplate(spec, "arm.test")
        for _ in range(5):
            context = {"record": record(rng), "namespace": rng.choice(["ns", 3])}
            expected = outcome(lambda c: reference(spec, c), context)  # noqa: B023 (called at once)
            assert outcome(lambda c: compiled.render(**c), context) == expected, (spec, context)  # noqa: B023
            each = outcome(lambda c: compiled.render_each("record", [c["record"]] * 2, namespace=c["namespace"]),  # noqa: B023
                           context)
            assert each == ((expected[0], [expected[1]] * 2) if expected[0] == "value" else expected), (spec, context)


def test_the_ingest_record_template_is_generated_and_errors_stay_jinjas():
    spec = {"id": "{{ record.key }}", "content": "{{ record.text }}",
            "metadata": {"session": "{{ record.session }}", "timestamp": "{{ record.timestamp }}"}}
    compiled = JsonTemplate(spec, "arm.ingest.record")
    assert compiled._render.__code__.co_filename == "<memrun request template>"  # the fast path engaged
    rows = [{"key": f"k{i}", "text": "t", "session": "s", "timestamp": None, "index": i} for i in range(3)]
    assert compiled.render_each("record", rows, namespace="ns") == [
        {"id": f"k{i}", "content": "t", "metadata": {"session": "s", "timestamp": None}} for i in range(3)]
    with pytest.raises(ArmError, match=r"arm.ingest.record.content: 'dict object' has no attribute 'text'"):
        compiled.render(record={"key": "k", "session": "s", "timestamp": None})
    text = JsonTemplate({"path": "/v1/{{ namespace }}/x"}, "arm.x")  # a text field: no generated function
    assert text._render.__code__.co_filename != "<memrun request template>"
    assert text.render(namespace="n") == {"path": "/v1/n/x"}


def test_templates_of_names_need_no_jinja_until_a_name_is_undefined():
    """conf/arm/http.yaml's templates are all {{ a.b }} names: built and rendered without
    importing Jinja (a run's first request waits for no Jinja); an undefined name still gets
    Jinja's own error, and a template with a Jinja word still fails at construction."""
    code = (
        "import sys\n"
        "from memrun.arms.http_templates import JsonTemplate\n"
        "from memrun.errors import ArmError\n"
        "body = JsonTemplate({'id': '{{ record.key }}', 'text': 'at {{ record.when }}: {{ record.text }}', "
        "'n': 3}, 'arm.ingest.record')\n"
        "assert body.render(record={'key': 'k', 'when': 't', 'text': 'x'}) == {'id': 'k', 'text': 'at t: x', 'n': 3}\n"
        "assert 'jinja2' not in sys.modules\n"
        "try:\n"
        "    body.render(record={'key': 'k'})\n"
        "except ArmError as exc:\n"
        "    print(exc)\n"
        "try:\n"
        "    JsonTemplate('{{ not }}', 'arm.search.body')\n"
        "except ArmError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    undefined, unparsed = done.stdout.splitlines()
    assert undefined.startswith("arm.ingest.record.text: 'dict object' has no attribute 'when'"), undefined
    assert unparsed.startswith("arm.search.body: template '{{ not }}' does not parse"), unparsed
