"""``memrun.run``: one run from Python, as ``memrun OVERRIDES...`` runs it, without Hydra's job.

The overrides are the command line's (``["benchmark=synthetic", "arm=bm25", "ks=[1,5]"]``);
the run writes ``items.parquet`` and ``summary.json`` into ``out_dir`` and returns its
:class:`memrun.pipeline.run.RunResult`. What the command line adds around a run is not done
here: claiming the folder, saving ``.hydra/``, printing the summary table and turning a
failed or degraded run into an exit code (read ``result.status``, a
:class:`memrun.core.status.RunStatus`, instead: its ``exit_code`` is the command line's).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from rich.console import Console

from memrun.config.compose import compose
from memrun.core.run_warnings import RunWarnings
from memrun.errors import ConfigError
from memrun.pipeline import run as pipeline_run

_NOT_A_LIST = "overrides must be a list of 'key=value' strings"


def run(overrides: Iterable[str] = (), out_dir: str | Path = "outputs/memrun-api", *,
        progress: bool = False) -> pipeline_run.RunResult:
    """Compose memrun's config with ``overrides`` and run it into ``out_dir``.

    Returns the RunResult: ``summary`` (the dict written to summary.json), ``rows``,
    ``instrument`` and ``status`` (:class:`memrun.core.status.RunStatus`: complete, stopped,
    degraded, failed...). Warnings are
    printed on stderr and saved with the run, as on the command line. Raises ConfigError
    for ``overrides`` that are not strings (a single string is refused, not split into
    characters; a dict is refused, not read as its keys; any other iterable of str, a
    generator too, is read once), an ``out_dir`` that is not a folder path, the command line's flags
    (``-m``, ``--config-dir``) and ``hydra.*`` keys (silently ignored before), and for a bad config; ConfigError,
    DataError or ArmError before any item runs when the config, data or arm is unusable;
    KeyboardInterrupt propagates after the finished rows were written.
    """
    overrides = _override_list(overrides)
    if not isinstance(out_dir, (str, os.PathLike)):
        raise ConfigError(f"out_dir must be a folder path (str or Path), e.g. 'runs/bm25', not "
                          f"{type(out_dir).__name__} {out_dir!r:.60}")
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise ConfigError(f"out_dir={out_dir} is a file; give the folder the run's rows go into")
    for override in overrides:
        if override.startswith("-"):  # -m, --config-dir, --cfg: the command line's flags, not overrides
            raise ConfigError(f"{override}: memrun.run takes key=value overrides, not the command line's flags; a "
                              "sweep is one memrun.run per job, and a class of your own is arm._target_=pkg.Class")
        if override.lstrip("+~").startswith("hydra."):  # Hydra's own keys: a run from Python has no Hydra job
            raise ConfigError(f"{override}: memrun.run has no Hydra job to configure; the run's folder is out_dir")
    cfg = compose([*overrides, f"progress={'true' if progress else 'false'}"])
    warnings = RunWarnings()
    with warnings.active():
        return pipeline_run.run(cfg, Path(out_dir), Console(stderr=True), None, warnings)


def _override_list(overrides: object) -> list[str]:
    """``overrides`` as a list of str, read once; ConfigError naming the fix when it is not one.

    A str is a Sequence[str] too ("benchmark=synthetic" ran as the overrides 'b', 'e', ...);
    a generator is read once (checking its values emptied it and the run composed none of
    them: a run of the defaults, complete, exit 0); a dict iterated as its keys alone.
    """
    if isinstance(overrides, (str, bytes)):
        raise ConfigError(f"{_NOT_A_LIST}, e.g. [{str(overrides)!r:.200}], not {type(overrides).__name__} "
                          f"{overrides!r:.200}")
    if isinstance(overrides, Mapping):
        example = [f"{key}={value}" for key, value in overrides.items()]
        raise ConfigError(f"{_NOT_A_LIST}, e.g. {example!r:.200}, not a {type(overrides).__name__}")
    if not isinstance(overrides, Iterable):
        raise ConfigError(f"{_NOT_A_LIST}, e.g. ['arm=bm25'] (or [] for the defaults), not "
                          f"{type(overrides).__name__} {overrides!r:.60}")
    listed = list(overrides)
    for n, override in enumerate(listed):
        if not isinstance(override, str):
            raise ConfigError(f"{_NOT_A_LIST}, e.g. ['arm=bm25', 'arm.top_k=5']: overrides[{n}] is "
                              f"{type(override).__name__} {override!r:.60}")
    return listed
