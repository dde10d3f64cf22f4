"""One Hydra job of memrun: claim its folder, save its config, run it, record its outcome.

:func:`job` is the function Hydra's launchers call. It is module-level and captures
nothing, so every launcher can pickle it: the basic launcher runs it in-process, joblib
in worker processes, submitit on SLURM nodes (or ``submitit_local``), Ray on a cluster.

Order of work, so that a refused job writes nothing:

1. **Claim** the run folder atomically (:func:`claim`): an exclusive create of
   :data:`CLAIM_FILE`, refused when another process holds it or the folder already holds
   a run's rows. Hydra itself only creates the folder (``hydra.output_subdir`` is null
   in ``conf/config.yaml``); the loser of a race never touches the winner's files.
2. **Check** the config for literal secrets (a refusal scrubs the sweep's
   ``multirun.yaml``, which Hydra wrote before any job), then **save** ``.hydra/config.yaml``,
   ``hydra.yaml`` and ``overrides.yaml`` (what Hydra would have written).
3. **Run** (:func:`memrun.pipeline.run.execute`), turning a user error into one line.
4. **Record** the outcome: in a multirun, ``<sweep dir>/.memrun/job-<num>.json``
   (:data:`OUTCOME_DIR`), read by :class:`memrun.jobs.sweep.SweepCallback` in the launching
   process, whatever process or node ran the job; the claim is released.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.core import signals
from memrun.errors import EXIT_INTERRUPTED, EXIT_OK, MemrunError, RunDegraded, RunFolderTaken, RunTableError
from memrun.lazy import lazy

# `memrun sweep DIR` reads this module's records without running a job: what only a job
# needs loads when it runs (memrun.lazy).
if TYPE_CHECKING:
    import omegaconf
    from hydra import types as hydra_types
    from hydra.core import hydra_config
    from omegaconf import errors as omegaconf_errors
    from pyarrow import parquet as pq

    from memrun import config
    from memrun.config import build_spec, strict
    from memrun.config import compose as config_compose
    from memrun.config import errors as config_errors
    from memrun.core import http_policy, instrument, provenance, redaction, run_warnings, yaml_text
    from memrun.core import status as run_status
    from memrun.io import live, reader, writer
    from memrun.jobs import past_runs
    from memrun.pipeline import resume as resume_module
    from memrun.pipeline import run as run_module
else:
    pq = lazy("pyarrow.parquet")
    http_policy = lazy("memrun.core.http_policy")  # asyncio and ssl: a job's, not `memrun --help`'s
    provenance = lazy("memrun.core.provenance")
    redaction = lazy("memrun.core.redaction")
    yaml_text = lazy("memrun.core.yaml_text")  # the saved .hydra/ files
    live = lazy("memrun.io.live")
    run_warnings = lazy("memrun.core.run_warnings")
    run_status = lazy("memrun.core.status")  # a job's: `memrun --help` needs no status
    omegaconf = lazy("omegaconf")
    omegaconf_errors = lazy("omegaconf.errors")
    hydra_config = lazy("hydra.core.hydra_config")
    hydra_types = lazy("hydra.types")
    config = lazy("memrun.config")
    config_compose = lazy("memrun.config.compose")
    config_errors = lazy("memrun.config.errors")
    strict = lazy("memrun.config.strict")
    build_spec = lazy("memrun.config.build_spec")
    instrument = lazy("memrun.core.instrument")
    reader = lazy("memrun.io.reader")
    writer = lazy("memrun.io.writer")
    run_module = lazy("memrun.pipeline.run")
    resume_module = lazy("memrun.pipeline.resume")
    past_runs = lazy("memrun.jobs.past_runs")

CLAIM_FILE = ".memrun-claim"
OUTCOME_DIR = ".memrun"
STOP_FILE = "stop"  # under OUTCOME_DIR: the sweep was asked to stop (stop_file)



@dataclass
class AppRecord:
    """What this process's Hydra app did, for the command line to report once ``app()``
    returns: Hydra calls :func:`job` with the config alone and drops what it returns, so the
    job and the sweep's callback (:class:`memrun.jobs.sweep.SweepCallback`) note it here, in
    this one record (:data:`RECORD`), which :meth:`exit_code` turns into the exit code.

    status: how the last job ended (None before any). run_dir: the folder of the job in
    progress or last run (the interrupt message). existing_root: of a single run's folder
    and its parents, the deepest that existed before Hydra created it (a run that did no item
    removes what it created up to there, never more). sweep_dir: a multirun's folder, noted
    when it starts. sweep_exit_code: the worst of its jobs' codes, once its table is printed.
    axis: the job's axis (``recall`` or ``accuracy``: the interrupt message names the call
    cache on the accuracy axis only).
    """

    status: run_status.RunStatus | None = None
    run_dir: Path | None = None
    axis: str | None = None
    existing_root: Path | None = None
    sweep_dir: Path | None = None
    sweep_exit_code: int | None = None

    def reset(self) -> None:
        """Forget an earlier call's app (the command line calls this before each)."""
        self.status = self.run_dir = self.existing_root = self.sweep_dir = self.sweep_exit_code = self.axis = None

    def exit_code(self) -> int:
        """A multirun's worst job's code, else the last job's (:attr:`memrun.core.status.RunStatus.exit_code`), else 0."""
        if self.sweep_exit_code is not None:
            return self.sweep_exit_code
        return self.status.exit_code if self.status is not None else EXIT_OK


RECORD = AppRecord()
"""This process's :class:`AppRecord`."""


@dataclass
class JobOutcome:
    """How one job ended. ``status``: complete | failed | interrupted | refused (its run's
    :attr:`memrun.core.status.RunStatus.outcome`);
    ``exit_code`` as a single run's (0, 2, 130); ``error``: the one-line reason, or None;
    ``run_dir``: its folder, relative to the sweep folder when inside it (so a copied or
    moved sweep still finds its runs; :meth:`folder` resolves it); ``overrides``: the job's Hydra overrides; ``seconds``: wall
    time; ``host`` and ``pid``: where it ran."""

    job: int
    status: str
    exit_code: int
    error: str | None
    run_dir: str
    overrides: list[str]
    seconds: float
    host: str
    pid: int

    def folder(self, sweep_dir: Path) -> Path:
        """The job's run folder: ``run_dir`` resolved against ``sweep_dir`` when relative."""
        return sweep_dir / self.run_dir if not Path(self.run_dir).is_absolute() else Path(self.run_dir)

    def write(self, sweep_dir: Path) -> Path:
        """Save as ``<sweep_dir>/.memrun/job-<num>.json`` (atomic rename); returns the path."""
        folder = sweep_dir / OUTCOME_DIR
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"job-{self.job}.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(path)
        return path

    @classmethod
    def read_all(cls, sweep_dir: Path) -> list[JobOutcome]:
        """Every outcome recorded under ``sweep_dir``, by job number (unreadable files skipped)."""
        out = []
        for path in sorted((sweep_dir / OUTCOME_DIR).glob("job-*.json")):
            try:
                out.append(cls(**json.loads(path.read_text())))
            except (OSError, ValueError, TypeError):
                continue
        return sorted(out, key=lambda o: o.job)


def claim(folder: Path, name: str = CLAIM_FILE, *, run: bool = True) -> Path:
    """Claim ``folder`` for this process: create ``name`` (:data:`CLAIM_FILE`) exclusively.

    Returns the claim file's path (remove it with :func:`release`). A claim left by a
    process of this machine that no longer runs is taken over, with a warning.
    Raises RunFolderTaken when another process holds the claim, or (``run``: the folder
    of one run) when the folder already holds a run's rows (``items.parquet``,
    ``items.parts/``, ``summary.json``).
    """
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / name
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        who, alive = claim_holder(lock)
        if not alive:
            lock.unlink(missing_ok=True)  # its process died (kill -9): the claim is stale
            run_warnings.warn(f"{lock} was left by {who}, which is no longer running; claiming the folder")
            return claim(folder, name, run=run)
        raise RunFolderTaken(f"{folder} is claimed by another run ({who}); give this run its own folder "
                             f"(hydra.run.dir=...), or remove {lock} if that run is dead") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%S")}))
    filled = [n for n in (writer.ITEMS_FILE, writer.PARTS_DIR, writer.SUMMARY_FILE) if run and (folder / n).exists()]
    if filled:
        lock.unlink(missing_ok=True)
        raise RunFolderTaken(f"{folder} already holds a run ({', '.join(filled)}); give this run its own "
                             "folder (hydra.run.dir=...): if that run did not finish and had this configuration, "
                             "the new one goes on from its rows")
    return lock


def claim_holder(lock: Path) -> tuple[str, bool]:
    """Who holds the claim file ``lock`` (``"pid P on HOST since T"``) and whether it may still
    be running: False only for a process of this machine that no longer runs. A claim from
    another machine, or one that cannot be read, counts as held (a run there may be going)."""
    try:
        holder = json.loads(lock.read_text())
        who = f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('since')}"
    except (OSError, ValueError):
        return "another process", True
    if not isinstance(holder, dict):
        return "another process", True
    return who, not (holder.get("host") == socket.gethostname() and not live.process_alive(holder.get("pid")))


def _relative(folder: Path, base: Path) -> str:
    """``folder`` relative to ``base`` when inside it, else absolute."""
    try:
        return str(folder.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(folder.resolve())


def release(lock: Path) -> None:
    """Remove a claim made by :func:`claim` (a missing file is fine)."""
    lock.unlink(missing_ok=True)


def stale_runs(out_dir: Path, cfg: Any, limit: int = 200) -> list[tuple[Path, int]]:
    """Unfinished runs of the same configuration near ``out_dir``: (folder, rows it holds),
    the most recent first.

    Looks at the run folders beside ``out_dir`` and, for a sweep job, in the sweeps beside
    its sweep (at most ``limit`` folders). Unfinished: ``items.parts/`` holds parts and
    there is no ``items.parquet`` (a run killed with -9, or whose machine died), or its
    ``summary.json`` says ``interrupted`` (Ctrl-C, SIGTERM). A folder whose claim is held
    (:func:`claim_holder`: a run still going, or another run resuming it) is not listed. Same configuration:
    :meth:`memrun.core.instrument.Instrument.configuration_diff` finds nothing, and the same shard.
    """
    mine = None  # this run's instrument, made once a folder needs it (most starts find none)
    found = []
    ours = os.path.realpath(out_dir)  # a candidate may name it through a link
    for folder in past_runs.candidates(out_dir)[:limit]:  # without reading the finished ones (memrun.jobs.past_runs)
        killed = not (folder / writer.ITEMS_FILE).exists()
        if os.path.realpath(folder) == ours or (killed and not (folder / writer.PARTS_DIR).is_dir()) \
                or (folder / resume_module.RESUMED_FILE).exists():
            continue  # ours, gone, or already taken over by a run that resumed it
        if (folder / CLAIM_FILE).exists() and claim_holder(folder / CLAIM_FILE)[1]:
            continue  # a run still going (its parts and no table yet), or one resuming it: not stale
        try:  # its seal checked: a damaged or edited part says nothing of its configuration
            source = sorted((folder / writer.PARTS_DIR).glob("part-*.parquet"))[-1] if killed else folder
            theirs = reader.peek_instrument(source)  # a sealed footer's bytes: no pyarrow before the first request
        except (IndexError, RunTableError):
            continue  # no readable part: nothing of it to speak of
        if mine is None:  # the instrument's config, as a run saves it
            mine = instrument.Instrument(arm=build_spec.arm_name(cfg), ks=config.cutoffs(cfg), config=config_compose.saved(cfg))
        if not mine.configuration_diff(theirs) and mine.config.get("shard") == theirs.config.get("shard"):
            found.append((folder, _rows_kept(folder)))  # another shard's rows are other items
    return sorted(found, key=lambda f: _mtime(f[0]), reverse=True)


def _mtime(folder: Path) -> float:
    """When the run in ``folder`` last wrote (its newest part, table or summary)."""
    paths = [folder / writer.ITEMS_FILE, folder / writer.SUMMARY_FILE, *(folder / writer.PARTS_DIR).glob("*")]
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


def _save_hydra_files(out_dir: Path, cfg: Any, hydra_cfg: Any, container: dict[str, Any]) -> None:
    """Write ``.hydra/{config,hydra,overrides}.yaml`` as Hydra does with an output subdir,
    with the config's secrets redacted (``container``: the resolved config; :mod:`memrun.core.redaction`)."""
    redactor = redaction.Redactor.for_config(container)
    hydra = redaction.redact_hydra(config_compose.resolved(hydra_cfg, resolve=False, enum_to_str=True), container)
    folder = out_dir / ".hydra"
    folder.mkdir(parents=True, exist_ok=True)
    job = redaction.redact_config(config_compose.resolved(cfg, resolve=False, enum_to_str=True))
    for name, node in (("config.yaml", job), ("hydra.yaml", {"hydra": hydra}), ("overrides.yaml", hydra["overrides"]["task"])):
        (folder / name).write_text(redactor.text(yaml_text.yaml_text(node)))  # as OmegaConf.to_yaml writes it


def _rows_kept(out_dir: Path) -> int:
    """How many rows ``out_dir``'s table (or its parts) holds; 0 when none."""
    items = out_dir / writer.ITEMS_FILE
    files = [items] if items.is_file() else sorted((out_dir / writer.PARTS_DIR).glob("*.parquet"))
    try:
        return sum(pq.read_metadata(f).num_rows for f in files)
    except (OSError, ValueError):
        return 1  # unreadable: keep it, someone should look


def _discard_if_empty(out_dir: Path, boundary: Path | None) -> None:
    """Remove a run that did no item: its saved config, claim and table of no rows, then
    ``out_dir`` and its parents while empty and below ``boundary`` (the deepest folder
    that existed before the run; None: only ``out_dir``). Any other file keeps its folder."""
    if not out_dir.is_dir() or _rows_kept(out_dir):
        return
    for name in (".hydra", writer.PARTS_DIR, writer.ITEMS_FILE, writer.SUMMARY_FILE, CLAIM_FILE):
        path = out_dir / name
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    stop = (boundary or out_dir.parent).resolve()
    folder = out_dir.resolve()
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        folder = folder.parent


def existing_ancestor(folder: Path) -> Path:
    """The deepest of ``folder`` and its parents that exists now (absolute)."""
    folder = folder.absolute()
    return next((p for p in (folder, *folder.parents) if p.exists()), Path(folder.anchor))


def _say(message: str) -> None:
    sys.stderr.write(f"memrun: error: {message}\n")
    sys.stderr.flush()


def stop_file(sweep_dir: Path) -> Path:
    """The file whose existence tells a sweep's jobs, wherever they run, to stop."""
    return sweep_dir / OUTCOME_DIR / STOP_FILE


def job(cfg: Any) -> int:
    """Run one composed config as a Hydra job; returns its exit code (0, 2 or 130).

    A user error (config, data, arm, a taken folder, the machine's OSError) is printed
    as one line and returned as 2; KeyboardInterrupt is recorded (status
    ``interrupted``) and re-raised for the command line to report.

    A sweep's job also stops when the sweep's :func:`stop_file` appears (the launching
    process was signalled; :mod:`memrun.jobs.sweep`), by the same interrupted path. In a
    launcher's worker process (joblib, submitit, Ray), where memrun's command line did not
    install its signal handlers, the job installs them for its duration and returns 130
    instead of raising: the launching process reports the sweep.
    """
    hydra_cfg = hydra_config.HydraConfig.get()
    http_policy.http_client_logging()  # after Hydra's logging config, which disables loggers made before it
    if hydra_cfg.mode != hydra_types.RunMode.MULTIRUN:
        return _job(cfg, hydra_cfg)
    worker = not signals.installed()
    restore = signals.install() if worker else (lambda: None)
    if worker:
        signals.exit_quickly_when_stopped()
    try:
        with signals.watch(stop_file(Path(hydra_cfg.sweep.dir))):
            return _job(cfg, hydra_cfg)
    except KeyboardInterrupt:
        if not worker:
            raise
        return EXIT_INTERRUPTED  # recorded as interrupted by _job
    finally:
        restore()


def _job(cfg: Any, hydra_cfg: Any) -> int:
    """:func:`job`'s work: claim, check, save, run, record."""
    out_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = hydra_cfg.mode == hydra_types.RunMode.MULTIRUN
    RECORD.run_dir, RECORD.axis = out_dir, getattr(cfg.get("axis"), "value", None)  # an Axis (str, Enum)
    started = time.perf_counter()
    status, error, lock = run_status.RunStatus.COMPLETE, None, None
    resume_lock: Path | None = None  # the claim on the unfinished run this one resumes
    container: dict[str, Any] = {}
    warnings = run_warnings.RunWarnings()
    redactor = warnings.redactor  # the run's secrets: kept out of its warnings, error line and outcome file
    try:
        with warnings.active():  # what the claim and the stale-run check say is saved with the run
            signals.check()  # stopped before this job began: it writes nothing
            strict.check_boolean_overrides(cfg, hydra_cfg.overrides.task)
            build_spec.arm_name(cfg)  # before its folder is claimed: a run of no arm name writes nothing
            lock = claim(out_dir)
            run_warnings.warn(build_spec.check_embedder(cfg))  # the saved config records the embedder the arm uses
            container = redaction.check_no_secrets(config_compose.resolved(cfg))
            strict.check_added_keys(cfg, hydra_cfg.overrides.task)  # after: a credential added is that first
            redactor.add_config(container)
            if multirun:  # Hydra wrote the sweep's multirun.yaml, overrides and all, before any job
                redaction.scrub_files(redactor, out_dir, Path(hydra_cfg.sweep.dir))
            _save_hydra_files(out_dir, cfg, hydra_cfg, container)
            resume_from = None
            for folder, rows in stale_runs(out_dir, cfg):
                if resume_from is None and rows and cfg.get("resume", True):
                    left = folder / CLAIM_FILE  # by the killed run itself (stale_runs found its process gone)
                    if left.exists() and not claim_holder(left)[1]:
                        left.unlink(missing_ok=True)
                    try:  # claimed while its rows are taken over: two runs started together never both resume it
                        resume_lock = claim(folder, run=False)
                    except RunFolderTaken:
                        continue  # another run took it between the look and the claim
                    resume_from = folder  # the most recent: it holds what the others held and more
                    continue
                run_warnings.warn(f"an earlier run of this configuration did not finish: {folder} holds {rows} rows "
                     f"({'resumed from another' if resume_from else 'resume=false: not resumed'}); this run "
                     "does not use it, so that folder is stale: remove it when done")
            # None: stdout's console (memrun.report.run_summary.stdout_console), made when first printed to
            run_module.execute(cfg, out_dir, None, provenance.config_folder(hydra_cfg.runtime.config_sources), warnings, resume_from,
                               container)  # resolved and checked above: not again
            signals.check()  # a stop asked for while the table was written: it was finished first
    except KeyboardInterrupt:
        status, error = run_status.RunStatus.INTERRUPTED, "interrupted"
        raise
    except RunFolderTaken as exc:
        status, error = run_status.RunStatus.REFUSED, str(exc)
        lock = None  # not ours: leave the folder as it is
    except RunDegraded as exc:  # the rows are kept; too many failed for an honest headline
        status, error = run_status.RunStatus.DEGRADED, str(exc)
    except redaction.LiteralSecretError as exc:  # check_no_secrets redacted what Hydra wrote; keep it out of the outcome
        for value in exc.values:
            redactor.add(value, min_length=1)
        status, error = run_status.RunStatus.FAILED, str(exc)
    except MemrunError as exc:
        status, error = run_status.RunStatus.FAILED, str(exc)
    except omegaconf_errors.OmegaConfBaseException as exc:
        status, error = run_status.RunStatus.FAILED, config_errors.explain_config_error(exc)
    except OSError as exc:  # the machine's side: disk full, permissions, a vanished file or folder
        status = run_status.RunStatus.FAILED
        error = f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''} (run folder {out_dir})"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # a full disk or quota: say what to do
            kept = (out_dir / writer.ITEMS_FILE).is_file() or any((out_dir / writer.PARTS_DIR).glob("part-*.parquet"))
            error += ("; free space on that disk (or point hydra.run.dir at another) and run the same command "
                      "again; " + ("the rows written so far stay in the run folder" if kept else
                                   "no row had been written (the run folder is not kept)"))
    finally:
        if error is not None and status is not run_status.RunStatus.INTERRUPTED:
            error = redactor.text(error)
            _say(error)
        if lock is not None:
            release(lock)
        if resume_lock is not None:
            release(resume_lock)
        if status.outcome in (run_status.RunStatus.FAILED, run_status.RunStatus.INTERRUPTED):  # a run that did no item leaves nothing behind
            _discard_if_empty(out_dir, Path(hydra_cfg.sweep.dir) if multirun else RECORD.existing_root)
        RECORD.status = status
        if multirun:
            JobOutcome(
                job=int(hydra_cfg.job.num), status=status.outcome.value, exit_code=status.exit_code, error=error,
                run_dir=_relative(out_dir, Path(hydra_cfg.sweep.dir)),
                overrides=[redactor.text(redaction.redact_override(o, container)) for o in hydra_cfg.overrides.task], seconds=round(time.perf_counter() - started, 3),
                host=socket.gethostname(), pid=os.getpid(),
            ).write(Path(hydra_cfg.sweep.dir))
    return status.exit_code
