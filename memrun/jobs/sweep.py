"""A sweep's jobs as one table: status, headline and exit code of every job, on any launcher.

Each job records its outcome (:class:`memrun.jobs.launch.JobOutcome`) under the sweep folder,
whatever process or node ran it. :class:`SweepCallback` (a Hydra callback registered in
``conf/config.yaml``) reads them in the launching process when the multirun ends, prints
the table and leaves the worst job's exit code for the command line to return;
``memrun sweep DIR`` prints the same table later (:mod:`memrun.commands.sweep`).
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.experimental.callback import Callback

from memrun.core import signals
from memrun.errors import EXIT_USER_ERROR, RunFolderTaken, SweepRefused
from memrun.jobs import launch
from memrun.jobs.launch import (
    OUTCOME_DIR,
    JobOutcome,
    claim,
    release,
    stop_file,
)
from memrun.lazy import lazy

# Hydra makes the sweep callback for every run, a single one too: what only a sweep's table
# needs (the run table's names, numpy with them; rich) loads when a sweep ends (memrun.lazy).
if TYPE_CHECKING:
    from hydra_plugins.hydra_ray_launcher import _launcher_util as ray_launcher
    from rich import console as rich_console

    from memrun.config import compose
    from memrun.io import reader as io_reader
    from memrun.io import writer
    from memrun.report import model as report_model
    from memrun.report import sweep_table
    from memrun.report.model import SweepRow
else:
    io_reader = lazy("memrun.io.reader")
    writer = lazy("memrun.io.writer")
    report_model = lazy("memrun.report.model")
    sweep_table = lazy("memrun.report.sweep_table")
    rich_console = lazy("rich.console")
    # Only a sweep on the Ray launcher loads these (memrun.lazy).
    compose = lazy("memrun.config.compose")
    ray_launcher = lazy("hydra_plugins.hydra_ray_launcher._launcher_util")


SWEEP_CLAIM = "sweep-claim"  # under <sweep dir>/.memrun/: the sweep that owns the folder
_claim: Path | None = None
_on_stop = ExitStack()  # while a sweep runs: a stop asked for creates its stop file


def _ask_jobs_to_stop(sweep_dir: Path) -> None:
    """Create the sweep's stop file (called from the signal handler: a few syscalls)."""
    try:
        stop_file(sweep_dir).touch()
    except OSError:
        pass  # the folder is gone or read-only: the jobs in this process still stop


def _release_idle_workers() -> None:
    """End joblib's worker processes now that the stopped sweep's jobs have returned (each
    recorded how it ended), rather than at this process's exit, where loky lets each tear
    itself down (seconds each on a busy machine); likewise Ray (its workers, and a local
    Ray's own processes), which would otherwise be shut down only at this process's exit.
    submitit's jobs are processes that end with their job."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    loky = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(loky, "_executor", None)
    if executor is None:
        return
    for pid in list(getattr(executor, "_processes", None) or {}):  # at once, not on loky's thread
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone already
            pass
    executor.shutdown(wait=False, kill_workers=True)


def _start_ray(config: Any) -> None:
    """Start the Ray launcher's local Ray now, as the launcher would (its ``ray.init``
    options, its object-store default), keeping memrun's signal handlers
    (:func:`memrun.core.signals.kept`): the launcher then finds Ray running and does not start
    it again. A no-op on other launchers."""
    launcher = config.hydra.get("launcher")
    if launcher is None or not str(launcher.get("_target_", "")).startswith("hydra_plugins.hydra_ray_launcher."):
        return
    init = compose.resolved(launcher.ray.init)
    init.setdefault("object_store_memory", 78643200)  # the launcher's own default (hydra_ray_launcher._core)
    with signals.kept():
        ray_launcher.start_ray(compose.from_container(init))


def _summary(run_dir: Path) -> dict[str, Any]:
    return io_reader.read_summary(run_dir) or {}


def sweep_rows(sweep_dir: Path) -> list[SweepRow]:
    """Every job of the sweep under ``sweep_dir``, by job number.

    Jobs come from the recorded outcomes; a job folder without one (a worker killed
    before it could record) is listed with status ``unknown`` and exit code 2.
    Raises FileNotFoundError when ``sweep_dir`` is not a folder.
    """
    if not sweep_dir.is_dir():
        raise FileNotFoundError(sweep_dir)
    rows = []
    seen: set[str] = set()
    for o in JobOutcome.read_all(sweep_dir):
        folder = o.folder(sweep_dir)
        summary = _summary(folder) if o.status != "refused" else {}  # a refused job's folder is another run's
        name, value = report_model.headline(summary)
        rows.append(report_model.SweepRow(o.job, " ".join(o.overrides), o.status, o.exit_code, name, value,
                             summary.get("n_items"), report_model.error_count(summary), o.seconds, str(folder), o.error,
                             *report_model.headline_scope(summary)))
        seen.add(str(folder.resolve()))
    for folder in sorted(p for p in sweep_dir.iterdir() if p.is_dir() and (p / ".hydra").is_dir()):
        if str(folder.resolve()) in seen:
            continue
        summary = _summary(folder)
        name, value = report_model.headline(summary)
        job = int(folder.name.split("_", 1)[0]) if folder.name.split("_", 1)[0].isdigit() else -1
        status = summary.get("status", "unknown")
        rows.append(report_model.SweepRow(job, folder.name, status, 0 if status == "complete" else EXIT_USER_ERROR, name, value,
                             summary.get("n_items"), report_model.error_count(summary), summary.get("pipeline_seconds"),
                             str(folder), None if status == "complete" else "the job recorded no outcome",
                             *report_model.headline_scope(summary)))
    return sorted(rows, key=lambda r: r.job)


def worst_exit_code(rows: list[SweepRow]) -> int:
    """The exit code of the sweep: the worst of its jobs' (130 > 2 > 0); 2 for no job."""
    return max((r.exit_code for r in rows), default=EXIT_USER_ERROR)


def finish(sweep_dir: Path) -> int:
    """Print the table of the sweep in ``sweep_dir`` and release its claim; returns (and
    records) the worst job's code."""
    global _claim
    _on_stop.close()
    if _claim is not None:
        release(_claim)
        _claim = None
    if signals.requested():
        _release_idle_workers()
    rows = sweep_rows(sweep_dir) if sweep_dir.is_dir() else []
    code = launch.RECORD.sweep_exit_code = worst_exit_code(rows)
    sweep_table.print_sweep_table(rich_console.Console(width=None if sys.stdout.isatty() else 120), rows, title=f"sweep {sweep_dir}")
    return code


class SweepCallback(Callback):
    """Notes the sweep folder when a multirun starts; prints the table and records the worst
    exit code when it ends."""

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        """Note, before Hydra creates the run folder, the deepest of it and its parents that
        exists (:attr:`memrun.jobs.launch.AppRecord.existing_root`): a run that does no item removes only
        the folders it created."""
        try:
            launch.RECORD.existing_root = launch.existing_ancestor(Path(config.hydra.run.dir))
        except Exception:  # noqa: BLE001 - an unresolvable folder: Hydra reports it; remove nothing
            launch.RECORD.existing_root = None

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        """Claim the sweep folder (before Hydra writes anything in it): two sweeps given one
        ``hydra.sweep.dir`` would overwrite each other's job records. Raises RunFolderTaken."""
        global _claim
        folder = Path(config.hydra.sweep.dir)
        try:
            lock = claim(folder / OUTCOME_DIR, SWEEP_CLAIM, run=False)
        except RunFolderTaken as exc:
            raise SweepRefused(str(exc)) from None
        if any((folder / OUTCOME_DIR).glob("job-*.json")):
            release(lock)
            raise SweepRefused(f"{folder} already holds a sweep's jobs; give this sweep its own folder "
                               "(hydra.sweep.dir=...)")
        _claim, launch.RECORD.sweep_dir = lock, folder
        # A signal reaches this process only; jobs running in other processes or nodes stop
        # when the stop file appears (memrun.jobs.launch.job watches for it).
        stop_file(folder).unlink(missing_ok=True)
        _on_stop.enter_context(signals.on_request(lambda: _ask_jobs_to_stop(folder)))
        _start_ray(config)  # ray.init replaces the signal handlers: start it here, where they are kept

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        finish(Path(config.hydra.sweep.dir))
