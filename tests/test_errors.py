"""One error tree (memrun/errors.py): every exception class memrun defines, private ones too,
lives there, joins MemrunError (but the three drawn apart: SweepRefused, UsageExit and
StopRequested), and the docstring draws it."""

from __future__ import annotations

import ast
import inspect

import memrun.errors as errors
from test_layers import MODULES

# A BaseException for Hydra; argparse's SystemExit; the retrieval flow's stop, no user's error.
OUTSIDE_THE_TREE = {"SweepRefused", "UsageExit", "StopRequested"}


def _exception_classes() -> dict[str, list[str]]:
    """module -> names of the classes it defines (read from the source) whose base is an
    exception: a built-in one, any library's (``httpx.DecodingError``) or one of errors.py's."""
    known = set(dir(errors))
    suffixes = ("Error", "Exception", "Exit", "Interrupt", "Exhausted", "Refused", "Unreachable", "Failed", "Degraded",
                "Taken", "Unparseable")
    found: dict[str, list[str]] = {}
    for module, path in sorted(MODULES.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    (name := ast.unparse(b).split(".")[-1]) in known or name.endswith(suffixes) for b in node.bases):
                found.setdefault(module, []).append(node.name)
    return found


def test_every_exception_class_lives_in_errors_py():
    assert {m: names for m, names in _exception_classes().items() if m != "memrun.errors"} == {}


def test_the_exception_finder_sees_a_private_and_a_library_subclass():
    found = _exception_classes()
    assert {"MemrunError", "MalformedReply", "StopRequested", "UsageExit"} <= set(found["memrun.errors"])


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

    assert cli.EXIT_USER_ERROR is errors.EXIT_USER_ERROR
    # launch maps a job's status to its code through memrun.core.status and defines none of its own
    assert getattr(launch, "EXIT_USER_ERROR", errors.EXIT_USER_ERROR) is errors.EXIT_USER_ERROR
    from memrun.core.status import RunStatus

    assert {s.exit_code for s in RunStatus} <= set(errors.EXIT_CODES)
