"""Usage errors of the subcommands: one format, an exit code per command.

A bad argument prints argparse's usage line and then ``memrun: error: <message>`` on
stderr, and exits with the command's usage exit code (2 for most commands; 4 for
``memrun compare`` and ``memrun null-band``, whose 2 means *unresolved*:
:class:`memrun.stats.ExitCode`), raising :class:`memrun.errors.UsageExit`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from memrun.errors import UsageExit


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors print ``memrun: error: ...`` and exit with ``usage_exit_code``."""

    def __init__(self, *args: Any, usage_exit_code: int = 2, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.usage_exit_code = usage_exit_code

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"memrun: error: {message}\n")
        raise UsageExit(message, self.usage_exit_code)
