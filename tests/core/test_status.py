"""One status vocabulary (memrun.core.status.RunStatus): every status a run or a sweep's job
records is one of its values, mapped to exit codes and to a job's outcome in one table."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from memrun.config.compose import compose
from memrun.core.instrument import Instrument
from memrun.core.run_warnings import RunWarnings
from memrun.core.status import JOB_OUTCOMES, RunStatus
from memrun.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USER_ERROR
from memrun.jobs.launch import AppRecord
from memrun.pipeline import run as pipeline_run
from test_cli import USER_PROJECT


def test_the_statuses_exit_codes_and_job_outcomes() -> None:
    assert [s.value for s in RunStatus] == ["running", "complete", "stopped", "degraded", "failed",
                                           "interrupted", "refused"]
    assert {s: s.exit_code for s in RunStatus} == {
        RunStatus.RUNNING: EXIT_OK, RunStatus.COMPLETE: EXIT_OK, RunStatus.STOPPED: EXIT_OK,
        RunStatus.DEGRADED: EXIT_USER_ERROR, RunStatus.FAILED: EXIT_USER_ERROR,
        RunStatus.INTERRUPTED: EXIT_INTERRUPTED, RunStatus.REFUSED: EXIT_USER_ERROR}
    assert [s.value for s in JOB_OUTCOMES] == ["complete", "failed", "interrupted", "refused"]
    assert RunStatus.STOPPED.outcome is RunStatus.COMPLETE and RunStatus.DEGRADED.outcome is RunStatus.FAILED
    assert Instrument().status == RunStatus.RUNNING.value and json.dumps(RunStatus.FAILED) == '"failed"'


def test_the_app_record_gives_the_sweeps_code_before_the_last_jobs() -> None:
    record = AppRecord()
    assert record.exit_code() == EXIT_OK  # no job ran (--help)
    record.status = RunStatus.DEGRADED
    assert record.exit_code() == EXIT_USER_ERROR
    record.sweep_exit_code = EXIT_INTERRUPTED
    assert record.exit_code() == EXIT_INTERRUPTED
    record.reset()
    assert record.status is None and record.sweep_exit_code is None and record.exit_code() == EXIT_OK


@pytest.mark.parametrize("breaks, status", [("search_fails_mostly", RunStatus.DEGRADED),
                                            ("nothing", RunStatus.COMPLETE)])
def test_a_run_returns_its_status_and_the_instrument_records_it(tmp_path, monkeypatch, breaks, status) -> None:
    monkeypatch.syspath_prepend(str(USER_PROJECT))  # the user's package: myteam.broken.BrokenArm
    cfg = compose([f"hydra.searchpath=[file://{USER_PROJECT / 'conf'}]", "arm=broken", f"arm.breaks={breaks}",
                   "benchmark=synthetic", "progress=false"])
    warnings = RunWarnings()
    with warnings.active():
        result = pipeline_run.run(cfg, tmp_path / "run", Console(file=io.StringIO()), None, warnings)
    assert result.status is status and result.status.exit_code == (2 if breaks != "nothing" else 0)
    assert result.instrument.status == status.value  # the instrument records what the run decided
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == status.value
    assert (result.error is not None) == (status is RunStatus.DEGRADED)
