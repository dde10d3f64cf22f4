"""Every renderer of a comparison handles every number its JSON may leave out (None).

A two-conversation pilot where one side errored made ``memrun compare`` (text, markdown)
and ``memrun report A B`` crash on the design check's ``nominal_crit: null``. These tests
render real comparisons as the command does, and then the same documents with each number
set to None in turn: text, markdown and the compare page's forest plot must all render."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from memrun.commands.compare import main as compare_main
from memrun.report.compare_report import render_markdown, render_text
from memrun.report.html.compare_page import forest_svg
from memrun.stats import ExitCode
from run_tables import accuracy_run, compare_json, retrieval_run, wtl


def two_conversation_pilot(tmp_path) -> tuple[str, str]:
    """Two accuracy runs of 2 clusters (a pilot of 2 LoCoMo conversations), B with errors, every
    paired item tied: Bell-McCaffrey df comes out a hair below 1 (0.99999...), so no t quantile
    exists and the design check's ``nominal_crit`` is null, as in the trial's pilot."""
    items = [f"i{i:02d}" for i in range(40)]
    cluster = lambda item: "c0" if int(item[1:]) < 5 else "c1"  # noqa: E731
    a = accuracy_run(tmp_path / "a", {it: ["correct" if i % 3 else "wrong"] for i, it in enumerate(items)},
                     cluster_of=cluster)
    b = accuracy_run(tmp_path / "b", {it: ["error" if i % 5 == 0 else ("correct" if i % 3 else "wrong")]
                                      for i, it in enumerate(items)}, cluster_of=cluster)
    return str(a), str(b)


def test_a_two_cluster_pilot_with_errors_renders_in_every_format(tmp_path, capsys):
    a, b = two_conversation_pilot(tmp_path)
    for fmt in ("text", "markdown", "json"):
        code = compare_main([a, b, "--format", fmt])
        out, err = capsys.readouterr()
        assert code == ExitCode.UNRESOLVED, err
        assert "failed unexpectedly" not in err and out.strip()
    _, d = compare_json(capsys, a, b)
    assert d["overall"]["design_check"]["nominal_crit"] is None  # the value the renderers met
    assert "design check" in render_text(d) and "no t quantile" in render_text(d)


def numbers(node: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of every number (not a bool) in a JSON document."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from numbers(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from numbers(v, (*path, i))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path


def with_none(d: dict, path: tuple) -> dict:
    out = copy.deepcopy(d)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = None
    return out


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> list[dict]:
    """Comparisons as JSON: a pilot of 2 clusters with errors, an unresolved one with its power
    line, and one on MRR (a score, not a percentage)."""
    tmp = tmp_path_factory.mktemp("docs")

    out = []
    for args in ((*two_conversation_pilot(tmp),),
                 (str(retrieval_run(tmp / "ua", wtl(3, 30, 2)[0])), str(retrieval_run(tmp / "ub", wtl(3, 30, 2)[1]))),
                 (str(tmp / "ua"), str(tmp / "ub"), "--metric", "mrr")):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            compare_main([*args, "--format", "json"])
        out.append(json.loads(buf.getvalue()))
    return out


def test_every_number_of_the_json_may_be_none_in_text_markdown_and_the_forest(documents):
    assert any(d.get("power") for d in documents) and any(d["overall"].get("design_check") for d in documents)
    for d in documents:
        paths = list(numbers(d))
        assert len(paths) > 50
        for path in paths:
            broken = with_none(d, path)
            try:
                render_text(broken)
                render_markdown(broken)
                forest_svg(broken)
            except Exception as exc:  # noqa: BLE001 - the test names the field that broke a renderer
                raise AssertionError(f"{'.'.join(map(str, path))} = None: {type(exc).__name__}: {exc}") from exc
