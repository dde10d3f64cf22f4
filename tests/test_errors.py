"""One error tree (memrun/errors.py): every public exception class memrun defines lives there,
joins MemrunError (but SweepRefused, which cannot), and the docstring draws it."""

from __future__ import annotations

import ast
import inspect

import memrun.errors as errors
from test_layers import MODULES

OUTSIDE_THE_TREE = {"SweepRefused", "UsageExit"}  # a BaseException for Hydra; argparse's SystemExit


def _exception_classes() -> dict[str, list[str]]:
    """module -> names of the exception classes it defines (read from the source)."""
    known = {"Exception", "BaseException", "ValueError", "RuntimeError", "SystemExit", *dir(errors)}
    found: dict[str, list[str]] = {}
    for module, path in sorted(MODULES.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b).split(".")[-1] in known for b in node.bases):
                if any(ast.unparse(b).split(".")[-1].endswith(("Error", "Exception", "Exit", "Exhausted", "Refused",
                                                                "Unreachable", "Failed", "Degraded", "Taken",
                                                                "Unparseable")) for b in node.bases):
                    found.setdefault(module, []).append(node.name)
    return found


def test_every_public_exception_class_lives_in_errors_py():
    outside = {m: [n for n in names if not n.startswith("_")] for m, names in _exception_classes().items()
               if m != "memrun.errors"}
    assert {m: n for m, n in outside.items() if n} == {}


def test_every_error_joins_memrun_error_and_is_drawn_in_the_docstring():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)
               if issubclass(c, BaseException) and c.__module__ == "memrun.errors"]
    assert len(classes) >= 20
    for cls in classes:
        assert cls.__name__ in (errors.__doc__ or ""), cls.__name__
        if cls.__name__ not in OUTSIDE_THE_TREE:
            assert issubclass(cls, errors.MemrunError), cls.__name__


def test_one_exit_table():
    assert errors.EXIT_CODES == {0: "done", 2: "a user error", 130: "interrupted"}
    from memrun import cli
    from memrun.jobs import launch

    assert cli.EXIT_USER_ERROR is launch.EXIT_USER_ERROR is errors.EXIT_USER_ERROR
