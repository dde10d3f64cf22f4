"""Usage errors of the subcommands: one format, an exit code per command.

A bad argument (an unknown flag, a missing argument, a value of the wrong type) and a
call that is wrong in a way the parser cannot see (:class:`memrun.errors.UsageError`)
print the same two lines on stderr (:func:`memrun.errors.usage_text`)::

    memrun validate: error: the following arguments are required: file
    usage: memrun validate [-h] [--format {jsonl,longmemeval,locomo}] ... file (--help: every option)

and exit with the command's usage exit code: 2 for most commands; 4 for ``memrun compare``
and ``memrun null-band``, whose 2 means *unresolved* (:class:`memrun.stats.ExitCode`).
Every subcommand builds its parser with :class:`Parser` (argparse makes its subcommands' parsers
of the same class).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from memrun.errors import UsageError, UsageExit, usage_text


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors print :func:`memrun.errors.usage_text` and exit with
    ``usage_exit_code`` (raising :class:`memrun.errors.UsageExit`)."""

    def __init__(self, *args: Any, usage_exit_code: int = 2, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.usage_exit_code = usage_exit_code

    def usage_line(self) -> str:
        """The usage on one line (argparse wraps it; alternative forms, each a line starting
        ``memrun``, joined by ``|``), ending with where every option is explained."""
        forms: list[str] = []
        for line in self.format_usage().splitlines():
            if forms and not line.strip().startswith("memrun "):
                forms[-1] += " " + line.strip()  # argparse's wrapping of one form
            elif line.strip():
                forms.append(line.strip())
        text = " | ".join(" ".join(form.split()) for form in forms)
        return text if "--help" in text else f"{text} (--help: every option)"

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(usage_text(self.prog, message, self.usage_line()))
        raise UsageExit(message, self.usage_exit_code)

    def usage_error(self, message: str) -> UsageError:
        """A :class:`memrun.errors.UsageError` of this command, to raise where a check the
        parser cannot make fails (the command line prints it as :meth:`error` does)."""
        error = UsageError(message, self.prog, self.usage_line())
        error.exit_code = self.usage_exit_code
        return error


def at_least(least: int) -> Any:
    """An argparse ``type`` for a whole number of at least ``least`` (a count, a cut-off, a
    limit): ``--limit -1`` is the usage error ``argument --limit: -1 is not a whole number
    >= 0`` instead of a silent ``[:-1]`` that drops the last item, and ``--k 0`` one instead of
    a traceback from the metric's name."""
    def parse(text: str) -> int:
        value = int(text)  # ValueError: argparse's own "invalid int value: 'x'"
        if value < least:
            raise argparse.ArgumentTypeError(f"{text} is not a whole number >= {least}")
        return value
    parse.__name__ = "int"
    return parse
