"""memrun's command line: Hydra runs and sweeps, plus subcommands.

``memrun [overrides...]`` and ``memrun -m [overrides...]`` compose ``conf/`` with Hydra
and run (see :func:`memrun.run.execute`). A first argument naming a subcommand
(:data:`SUBCOMMANDS`) runs that instead. Errors the user can fix print as one line,
``memrun: error: ...``; exit codes: 0 done, 2 user error, 130 interrupted.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from memrun.errors import MemrunError

# name -> "module:function" taking argv (list[str]) and returning an exit code.
SUBCOMMANDS: dict[str, str] = {
    "failures": "memrun.commands.failures:main",
    "calibrate-judge": "memrun.commands.calibrate_judge:main",
}

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


def conf_dir() -> Path:
    """The packaged config directory (inside a wheel) or the checkout's ``conf/``."""
    here = Path(__file__).resolve().parent
    packaged = here / "conf"
    return packaged if packaged.is_dir() else here.parent / "conf"


def _fail(message: str, code: int = EXIT_USER_ERROR) -> int:
    sys.stderr.write(f"memrun: error: {message}\n")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memrun`` console script. Returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        module, _, func = SUBCOMMANDS[args[0]].partition(":")
        try:
            return int(getattr(importlib.import_module(module), func)(args[1:]) or 0)
        except MemrunError as exc:
            return _fail(str(exc), exc.exit_code)
    return _run_hydra(args)


def _run_hydra(args: list[str]) -> int:
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import HydraException
    from omegaconf import DictConfig
    from omegaconf.errors import OmegaConfBaseException
    from rich.console import Console

    from memrun.config import register
    from memrun.run import execute

    register()
    # Piped output (CI logs, files) gets a table wide enough to read; terminals keep their width.
    console = Console(width=None if sys.stdout.isatty() else 120)

    failures: list[MemrunError] = []

    def task(cfg: DictConfig) -> None:
        # Report a user error here, in one line; a sweep goes on with its next job.
        try:
            execute(cfg, Path(HydraConfig.get().runtime.output_dir), console)
        except MemrunError as exc:
            _fail(str(exc), exc.exit_code)
            failures.append(exc)

    app = hydra.main(config_path=str(conf_dir()), config_name="config", version_base=None)(task)
    # Let Hydra's exceptions reach us so each becomes one line instead of a trace.
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    saved_argv = sys.argv
    sys.argv = ["memrun", *args]
    try:
        app()
    except (HydraException, OmegaConfBaseException) as exc:
        return _fail(explain_config_error(exc))
    except KeyboardInterrupt:
        return _fail("interrupted; the rows that finished are in the run folder", EXIT_INTERRUPTED)
    finally:
        sys.argv = saved_argv
    return failures[0].exit_code if failures else 0


def explain_config_error(exc: BaseException) -> str:
    """One line for a Hydra/OmegaConf composition error: the key or choice, and the fix."""
    from hydra.errors import MissingConfigException, OverrideParseException
    from omegaconf.errors import (
        ConfigAttributeError,
        ConfigKeyError,
        MissingMandatoryValue,
        OmegaConfBaseException,
        ValidationError,
    )

    text = str(exc)
    where = ""
    if m := re.match(r"In '([^']+)': ", text):
        if m.group(1) != "config":  # the primary config: the error is in an override
            where = f"in {m.group(1)}.yaml: "
        text = text[m.end():]
    if isinstance(exc, MissingConfigException):
        if (m := re.search(r"Could not find '([^']+)/([^'/]+)'", text)) and exc.options is not None:
            group, option = m.group(1), m.group(2)
            hint = difflib.get_close_matches(option, exc.options, n=1)
            did_you_mean = f" (did you mean {group}={hint[0]}?)" if hint else ""
            return f"{where}{group}={option}: no such config{did_you_mean}; available: {', '.join(exc.options)}"
        return where + text.splitlines()[0]
    if isinstance(exc, OverrideParseException):
        return f"cannot parse the override: {text.splitlines()[0]}"
    cause = exc if isinstance(exc, OmegaConfBaseException) else exc.__cause__
    if isinstance(cause, (ConfigAttributeError, ConfigKeyError)):
        full_key = getattr(cause, "full_key", None) or getattr(cause, "key", "?")
        parent = getattr(cause, "parent_node", None)
        valid = [str(k) for k in parent.keys()] if parent is not None and hasattr(parent, "keys") else []
        leaf = str(full_key).rsplit(".", 1)[-1]
        hint = difflib.get_close_matches(leaf, valid, n=1)
        did_you_mean = f"did you mean '{hint[0]}'? " if hint else ""
        keys = f"valid keys: {', '.join(valid)}" if valid else "use +key=value to add a new key"
        return f"{where}unknown config key '{full_key}'; {did_you_mean}{keys}"
    if isinstance(cause, MissingMandatoryValue):
        return f"{where}{getattr(cause, 'full_key', '?')} has no value; set it in the config file or as key=value"
    if isinstance(cause, ValidationError):
        msg = str(getattr(cause, "msg", cause)).splitlines()[0]
        return f"{where}{getattr(cause, 'full_key', '?')}: {msg}"
    first = text.splitlines()[0] if text else type(exc).__name__
    if cause is not None and cause is not exc:
        first += f": {str(cause).splitlines()[0]}"
    return where + first
