"""A run whose error share exceeds its own ``max_error_share`` ends ``degraded``: exit 2, the
reason printed and saved in summary.json (issue 20, item 5)."""

import json

from conftest import run_dirs, run_memrun
from memrun.io.reader import read_run
from test_cli import USER_PROJECT, user_env


def test_a_run_that_mostly_failed_is_degraded(tmp_path):
    done = run_memrun(["--config-dir", str(USER_PROJECT / "conf"), "arm=broken", "arm.breaks=search_fails_mostly",
                       "progress=false"], tmp_path, user_env())
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "20 of 30 rows failed (67%), more than max_error_share=0.1" in last
    folder = run_dirs(tmp_path / "outputs")[0]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "degraded" and "20 of 30 rows failed" in summary["error"]
    assert read_run(folder).instrument.status == "degraded"


def test_the_threshold_is_the_runs_own(tmp_path):
    done = run_memrun(["--config-dir", str(USER_PROJECT / "conf"), "arm=broken", "arm.breaks=search_fails_mostly",
                       "max_error_share=0.7", "progress=false"], tmp_path, user_env())
    assert done.returncode == 0, done.stderr
    summary = json.loads((run_dirs(tmp_path / "outputs")[0] / "summary.json").read_text())
    assert summary["status"] == "complete"
    bad = run_memrun(["--config-dir", str(USER_PROJECT / "conf"), "arm=broken", "max_error_share=2",
                      "progress=false"], tmp_path, user_env())
    assert bad.returncode == 2 and "max_error_share=2.0: must be a share between 0 and 1" in bad.stderr
