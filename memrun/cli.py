"""memrun's command line: Hydra runs and sweeps, plus subcommands.

``memrun [overrides...]`` and ``memrun -m [overrides...]`` compose ``conf/`` with Hydra
and run (see :func:`memrun.pipeline.run.execute`). A first argument naming a subcommand
(:data:`SUBCOMMANDS`) runs that instead. Errors the user can fix print as one line,
``memrun: error: ...``; exit codes: 0 done, 2 user error, 130 interrupted.
"""

from __future__ import annotations

import gc
import importlib
import os
import re
import select
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import memrun
from memrun.core import dataclass_code, native_env, signals
from memrun.core.paths import conf_dir
from memrun.errors import EXIT_INTERRUPTED, EXIT_USER_ERROR, MemrunError, UsageError, usage_text
from memrun.lazy import lazy

# Loaded by a run only, after the signal handlers are installed (memrun.lazy).
if TYPE_CHECKING:
    import difflib

    import hydra
    import yaml
    from hydra import errors as hydra_errors
    from hydra._internal import config_loader_impl as hydra_loader
    from hydra._internal import hydra as hydra_internal
    from omegaconf import errors as omegaconf_errors

    from memrun import config
    from memrun.commands import hydra_argv, show_config
    from memrun.config import compose_cache, plugin_scan
    from memrun.config import errors as config_errors
    from memrun.config import user_dir as config_user_dir
    from memrun.core import http_policy, redaction
    from memrun.io import writer
    from memrun.jobs import launch, sweep
else:
    difflib = lazy("difflib")  # a misspelled command only
    hydra = lazy("hydra")
    hydra_errors = lazy("hydra.errors")
    hydra_internal = lazy("hydra._internal.hydra")
    hydra_loader = lazy("hydra._internal.config_loader_impl")
    yaml = lazy("yaml")
    omegaconf_errors = lazy("omegaconf.errors")
    config = lazy("memrun.config")
    config_errors = lazy("memrun.config.errors")
    compose_cache = lazy("memrun.config.compose_cache")
    plugin_scan = lazy("memrun.config.plugin_scan")
    config_user_dir = lazy("memrun.config.user_dir")  # a --config-dir only
    launch = lazy("memrun.jobs.launch")
    sweep = lazy("memrun.jobs.sweep")
    show_config = lazy("memrun.commands.show_config")
    hydra_argv = lazy("memrun.commands.hydra_argv")
    writer = lazy("memrun.io.writer")
    http_policy = lazy("memrun.core.http_policy")
    redaction = lazy("memrun.core.redaction")  # an error's line only

# name -> "module:function" taking argv (list[str]) and returning an exit code.
SUBCOMMANDS: dict[str, str] = {
    "compare": "memrun.commands.compare:main",
    "null-band": "memrun.commands.null_band:null_band_main",
    "validate": "memrun.commands.validate:main",
    "datasets": "memrun.commands.datasets:main",
    "failures": "memrun.commands.failures:main",
    "calibrate-judge": "memrun.commands.calibrate_judge:main",
    "sweep": "memrun.commands.sweep:main",
    "merge": "memrun.commands.merge:main",
    "cache": "memrun.commands.cache:main",
    "report": "memrun.commands.report:main",
    "plan": "memrun.commands.plan:main",
    "arm": "memrun.commands.arm_init:main",
    "view": "memrun.commands.view:main",
    "gallery": "memrun.commands.gallery:main",
}

# stdout closed by its reader (`| head`): Python's documented recipe for EPIPE, and what
# rich (the tables) exits with on its own when it meets the closed pipe first.
EXIT_STDOUT_CLOSED = 1


def _fail(message: str, code: int = EXIT_USER_ERROR) -> int:
    # a path, a launcher's message or an override quoted in it: URL secrets and header values masked
    sys.stderr.write(f"memrun: error: {redaction.redact_line(message)}\n")
    return code


def main(argv: Sequence[str] | None = None, *, reuse_compositions: bool = False) -> int:
    """Entry point of the ``memrun`` console script. Returns the exit code.

    ``reuse_compositions``: Hydra's composition of the config is kept on disk and reused
    while its inputs are unchanged (:mod:`memrun.config.compose_cache`); the console script
    sets it. In-process callers (tests) compose every time: code they patch in memory is
    not in the files an entry is checked against.

    A reader that closes stdout early (``memrun failures RUN --json | head``) ends the
    command quietly, the Unix way: no traceback, no message, exit code
    :data:`EXIT_STDOUT_CLOSED`.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    # memrun's own --verbose stands before a '--': after it the words are another program's
    # ('memrun arm init mcp -- server --verbose' lost the server's flag and made memrun verbose)
    cut = args.index("--") if "--" in args else len(args)
    restore_verbose = _verbose(args[:cut])
    try:
        code = _main([a for a in args[:cut] if a != "--verbose"] + args[cut:], reuse_compositions)
        sys.stdout.flush()  # the last buffered lines may be the ones that meet the closed pipe
        return code
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # a pipe other than stdout (a server's socket): not the reader going away
        # Python flushes stdout again at exit, which would print "Exception ignored"; point
        # the descriptor at /dev/null so that flush has nowhere to fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_STDOUT_CLOSED
    finally:
        restore_verbose()


def _set_env(name: str, value: str | None) -> Any:
    """Set (None: remove) environment variable ``name`` for one call of :func:`main`; returns
    the undo. A setting left behind would reach the in-process caller's later calls
    (``memrun.cli.main``, the Python API) and the processes it starts."""
    before = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value

    def restore() -> None:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
    return restore


def _verbose(args: list[str]) -> Any:
    """``--verbose``: HTTP client logging on (:func:`memrun.core.http_policy.http_client_logging`)
    for this call, here and in a sweep's workers (which inherit the environment); returns
    the undo, which also puts the loggers back as they are without it."""
    if "--verbose" not in args:  # http_policy not loaded for nothing (memrun --version, --cfg)
        return lambda: None
    restore = _set_env(http_policy.VERBOSE_ENV, "1")

    def undo() -> None:
        restore()
        http_policy.http_client_logging()
    return undo


def console() -> int:
    """The ``memrun`` console script and ``python -m memrun``: :func:`main`, then a quick exit.

    The process ends right after; everything a run built (modules, configs, ~10^5 objects)
    is frozen first so the interpreter's shutdown does not walk it in one full collection
    after another (~0.3 s of a run's wall time). Freezing skips finalizers of objects in
    reference cycles only; memrun closes its files, writers and sessions itself.

    The methods ``dataclasses`` writes for each class are compiled once per machine
    (:mod:`memrun.core.dataclass_code`), Hydra's composition is reused while its inputs
    are unchanged (:mod:`memrun.config.compose_cache`), and numpy's and pyarrow's native
    libraries are told not to spend CPU a short process never uses
    (:mod:`memrun.core.native_env`, before either loads).
    """
    native_env.settle()
    restore = dataclass_code.compiled_once()
    try:
        code = main(reuse_compositions=True)
    finally:
        restore()
    gc.freeze()
    return code


def _stdout_closed() -> bool:
    """True when stdout is a pipe whose reading end is closed (poll reports an error on it)."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
    except (AttributeError, OSError, ValueError):  # no real descriptor, or no poll on this OS
        return True
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _main(args: list[str], reuse_compositions: bool = False) -> int:
    if args[:1] in (["--version"], ["-V"]):
        print(f"memrun {memrun.__version__}")
        return 0
    if problem := _check_config_dirs(args) or _check_modes(args):
        return _fail(problem)
    if args and args[0] in SUBCOMMANDS:
        module, _, func = SUBCOMMANDS[args[0]].partition(":")
        try:
            return int(getattr(importlib.import_module(module), func)(args[1:]) or 0)
        except UsageError as exc:  # as the subcommand's parser prints a bad argument
            sys.stderr.write(usage_text(exc.prog, str(exc), exc.usage))
            return exc.exit_code
        except MemrunError as exc:
            return _fail(str(exc), exc.exit_code)
    if problem := _not_a_command(args[:1]):
        return _fail(problem)
    return _run_hydra(args, reuse_compositions)


def _not_a_command(first: list[str]) -> str | None:
    """A first argument that is a bare word (no ``=``, not a flag) is neither an override
    nor a subcommand: say so, suggesting the closest subcommand, instead of Hydra's
    "cannot parse the override"."""
    if not first or not re.fullmatch(r"[A-Za-z][\w.-]*", first[0]):
        return None
    word = first[0]
    commands = ", ".join(SUBCOMMANDS)
    if hint := difflib.get_close_matches(word, list(SUBCOMMANDS), n=1, cutoff=0.6):
        return f"unknown command '{word}'; did you mean 'memrun {hint[0]}'? commands: {commands}"
    return (f"'{word}' is neither a command nor an override; commands: {commands}; "
            "overrides are key=value (e.g. benchmark=locomo)")


def _check_config_dirs(args: list[str]) -> str | None:
    """Hydra ignores a --config-dir that does not exist, and a file in it named like one
    of memrun's own (:func:`memrun.config.user_dir.config_dir_problem`); say so instead."""
    for i, arg in enumerate(args):
        if arg in ("--config-dir", "-cd") and i + 1 < len(args):
            folder = args[i + 1]
        elif arg.startswith("--config-dir="):
            folder = arg.partition("=")[2]
        else:
            continue
        if problem := config_user_dir.config_dir_problem(folder):
            return problem
    return None


MODES = {"-m": "-m", "--multirun": "-m", "-r": "--run", "--run": "--run", "-c": "--cfg", "--cfg": "--cfg",
         "-i": "--info", "--info": "--info", "-sc": "--shell-completion", "--shell-completion": "--shell-completion"}


def _check_modes(args: list[str]) -> str | None:
    """Hydra runs one mode at a time and raises a bare ValueError for two (``--cfg job -m``)."""
    given = list(dict.fromkeys(MODES[a.partition("=")[0]] for a in args if a.partition("=")[0] in MODES))
    if len(given) < 2:
        return None
    return (f"{' and '.join(given)} cannot be combined: give one of -m, --run, --cfg, --info, --shell-completion "
            "(to see the config of one job of a sweep, run --cfg job with that job's overrides, without -m)")


def _run_hydra(args: list[str], reuse_compositions: bool = False) -> int:
    # Ctrl-C and SIGTERM (a CI timeout, `kill`) stop the run at a safe point; the finished
    # rows are merged and kept, the run ends interrupted with exit 130 (memrun.core.signals).
    # Installed first: a signal during the imports is honoured too.
    restore_signals = signals.install()
    # Start-up (Hydra, the config, the dataset, the arm) builds long-lived objects: a
    # collection would only walk them (~0.2 s in all). run.run enables the collector again
    # when the items begin, having frozen what start-up built.
    gc.disable()
    try:
        config.register()
        record = launch.RECORD  # what the app's jobs and sweep note for this call (memrun.jobs.launch.AppRecord)
        record.reset()
        # launch.job runs each job (a user error is one line there; a sweep goes on with its
        # next job); it captures nothing, so every launcher can pickle it.
        app = hydra.main(config_path=str(conf_dir()), config_name="config", version_base=None)(launch.job)
    except BaseException:  # a broken install: the caller's process keeps its collector
        gc.enable()
        restore_signals()
        raise
    # Let Hydra's exceptions reach us so each becomes one line instead of a trace.
    restore_full_error = _set_env("HYDRA_FULL_ERROR", os.environ.get("HYDRA_FULL_ERROR", "1"))
    args = hydra_argv.flags_first(args)  # `memrun benchmark=locomo -m arm=a,b`: Hydra read the overrides before -m only
    saved_argv = sys.argv
    sys.argv = ["memrun", *args]
    restore_mode = _skip_mode_compose(args)
    restore_listing = _one_repository_for_help(args)
    restore_compose = config.faster_compose()  # libyaml for conf/, each ${...} parsed once (memrun.config)
    restore_reuse = compose_cache.reused_compositions() if reuse_compositions else (lambda: None)
    # the launchers' plugin modules are scanned only when something asks for them (memrun.config.plugin_scan)
    restore_scan = plugin_scan.deferred_scan(args) if reuse_compositions else (lambda: None)
    try:
        with show_config.redacted_config_print(args):  # --cfg prints the config as the run saves it: secrets redacted
            app()
        signals.check()  # a stop asked for after the last job's own check: still an interrupt
    except (hydra_errors.HydraException, omegaconf_errors.OmegaConfBaseException) as exc:
        return _fail(config_errors.explain_config_error(exc))
    except yaml.YAMLError as exc:
        return _fail(config_errors.explain_yaml_error(exc))
    except MemrunError as exc:  # --cfg refusing what a run refuses (memrun.commands.show_config); a job's are its own
        return _fail(str(exc))
    except OSError as exc:  # Hydra creating the run or sweep folder: read-only, missing, full
        if isinstance(exc, BrokenPipeError):  # Hydra printing (--help, --cfg) to a reader gone: main() ends quietly
            raise
        where = f": {exc.filename}" if exc.filename else ""
        return _fail(f"cannot create the output folder{where} ({exc.strerror or exc}); point hydra.run.dir "
                     "(hydra.sweep.dir for -m) at a writable folder")
    except Exception as exc:  # a launcher failing in a sweep: a worker killed, a cluster error
        if "Config group override must be a string or a list. Got NoneType" in str(exc):  # Hydra's bare ValueError
            group = next((a.partition("=")[0] for a in args  # arm=null, arm/embedder=null: a folder of conf/
                          if a.endswith("=null") and (conf_dir() / a.partition("=")[0].lstrip("+")).is_dir()), "group")
            return _fail(f"{group}=null: a config group's choice cannot be null on the command line; "
                         f"remove it with '~{group}'")
        if record.sweep_dir is None:
            raise  # not a sweep: a bug, keep its traceback
        sweep.finish(record.sweep_dir)
        first = str(exc).splitlines()[0] if str(exc) else ""
        return _fail(f"the launcher failed: {type(exc).__name__}: {first} (a worker killed, out of memory?); "
                     "the table above lists the jobs that recorded how they ended; re-run the sweep to redo the rest")
    except KeyboardInterrupt:
        if record.sweep_dir is not None:  # a multirun: its jobs may have run elsewhere
            if record.sweep_exit_code is None:  # its table is not printed yet
                sweep.finish(record.sweep_dir)
            again = ("Run the same command with another hydra.sweep.dir to go on (this folder is taken)"
                     if _names(args, "hydra.sweep.dir") else "Run the same command again to go on")
            return _fail(f"interrupted; the table above is what the sweep's jobs recorded (memrun sweep "
                         f"{record.sweep_dir} prints it again). {again}: each job "
                         "keeps the rows that finished (on the accuracy axis, the calls already made come from "
                         "the cache)", EXIT_INTERRUPTED)
        current = record.run_dir
        kept = current is not None and ((current / writer.ITEMS_FILE).exists() or (current / writer.PARTS_DIR).is_dir())
        where = f"the rows that finished are in {current}" if kept else "no row had finished"
        # a folder named on the command line holds this run's rows now: the next run needs another
        same = "with another hydra.run.dir" if _names(args, "hydra.run.dir") else "again"
        again = (f"Run the same command {same} to go on from them (resume=false starts over)" if kept
                 else f"Run the same command {same} to start over")
        cached = ", and the LLM calls already made come from the call cache" if record.axis == "accuracy" else ""
        return _fail(f"interrupted; {where}. {again}{cached}", EXIT_INTERRUPTED)
    except BaseException as exc:  # SystemExit (--help) and a sweep refused; checked without importing memrun.jobs.sweep
        if _sweep_loaded() and isinstance(exc, sweep.SweepRefused):  # the folder is another sweep's: nothing ran
            return _fail(str(exc))
        raise
    finally:
        sys.argv = saved_argv
        restore_full_error()
        restore_mode()
        restore_listing()
        restore_scan()
        restore_reuse()
        restore_compose()
        restore_signals()
        gc.enable()
    return record.exit_code()  # a multirun's worst job's code, else the run's (memrun.core.status.RunStatus)


def _names(args: list[str], key: str) -> bool:
    """Whether the command line sets ``key`` (``key=...``, ``+key=...``, ``++key=...``)."""
    return any(a.lstrip("+").startswith(f"{key}=") for a in args)


def _sweep_loaded() -> bool:
    """Whether :mod:`memrun.jobs.sweep` is loaded: a multirun loads it (its callback); a single
    run, ``--help`` and ``--cfg`` never need it, nor the run table it imports (numpy with it)."""
    return "memrun.jobs.sweep" in sys.modules


_MODE_ARGS = ("--config-dir", "-cd", "--config-path", "-cp", "--config-name", "-cn")


def _skip_mode_compose(args: list[str]) -> Any:
    """Spare Hydra its first compose when nothing can set ``hydra.mode``; returns an undo.

    Before a run Hydra composes the whole config once only to read ``hydra.mode`` (run or
    multirun), then composes it again to run (~0.3 s each). memrun's own configs never set
    ``hydra.mode`` (a test checks), so without an override naming it and without a user's
    config folder or primary config, that first compose can only find None: return None
    at once, as Hydra's ``get_mode`` does when the key is unset. Otherwise Hydra composes.
    """
    Hydra = hydra_internal.Hydra

    if any(a.split("=", 1)[0] in _MODE_ARGS or "hydra.mode" in a for a in args):
        return lambda: None
    original = Hydra.get_mode
    Hydra.get_mode = lambda self, config_name, overrides: None  # type: ignore[method-assign]

    def undo() -> None:
        Hydra.get_mode = original  # type: ignore[method-assign]

    return undo


def _one_repository_for_help(args: list[str]) -> Any:
    """For ``--help``, list the config groups from one config repository; returns an undo.

    Hydra's help lists every group (``$APP_CONFIG_GROUPS``) by asking its config loader for
    each group's options, and every such question builds a new repository, a deep copy of
    the whole config store with memrun's typed schemas (121 copies, ~1.5 s of a 1.8 s
    ``memrun --help``). The questions all name the same search path (no config name, no
    overrides: the primary config's folder, ``--config-dir``'s, the plugins'), so while the
    help is written the loader builds that repository once and asks it each time: the same
    listing, groups a user adds under ``--config-dir`` included (a test holds this).
    """
    if not any(a in ("--help", "-h") for a in args):
        return lambda: None
    Loader = hydra_loader.ConfigLoaderImpl
    original = Loader.get_group_options
    built: dict[tuple[int, str | None, tuple[str, ...]], Any] = {}

    def get_group_options(self: Any, group_name: str, results_filter: Any = hydra_loader.ObjectType.CONFIG,
                          config_name: str | None = None, overrides: list[str] | None = None) -> list[str]:
        key = (id(self), config_name, tuple(overrides or ()))
        if key not in built:
            built[key] = self._parse_overrides_and_create_caching_repo(config_name, list(overrides or ()))[1]
        return built[key].get_group_options(group_name, results_filter)

    Loader.get_group_options = get_group_options  # type: ignore[method-assign]  # a patch for the help's duration

    def undo() -> None:
        Loader.get_group_options = original  # type: ignore[method-assign]

    return undo
