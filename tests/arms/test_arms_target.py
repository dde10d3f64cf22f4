"""Python arms by _target_: the documented example package, and errors for a bad target."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, run_memrun

from memrun.errors import MemrunError
from memrun.io.reader import read_run

EXAMPLE = REPO / "docs" / "examples" / "user_arm"


def test_documented_example_arm_runs_from_its_own_config_dir(tmp_path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(EXAMPLE)])}
    proc = subprocess.run(
        [sys.executable, "-m", "memrun", "--config-dir", str(EXAMPLE / "conf"), "arm=recent_overlap",
         "arm.recency_weight=0.5", "progress=false", f"hydra.run.dir={out}"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["arm"] == "recent_overlap" and summary["n_items"] == 30 and summary["n_errors"] == 0
    assert summary["overall_all"]["recall@10"] > 0.5  # it retrieves, it does not just run
    run = read_run(out)
    assert run.instrument.search_mode == "lexical"  # from the example's describe()
    assert run.instrument.config["arm"]["recency_weight"] == 0.5


@pytest.mark.parametrize("overrides, message", [
    (["arm._target_=my_missing_pkg.Arm"], r"arm: could not build my_missing_pkg.Arm: .*No module named 'my_missing_pkg'.*"
                                          r"arm._target_ must name a class whose package is importable"),
    (["arm._target_=collections.OrderedDict"], r"arm: collections.OrderedDict has no ingest\(\) method"),
    (["+arm.colour=red"], r"BM25Arm.__init__\(\) got an unexpected keyword argument 'colour'"),
    (["arm=answers_file", "arm.path=/nonexistent/answers.jsonl"], "arm.path=/nonexistent/answers.jsonl: no such file"),
])
def test_misconfigured_arms_fail_in_one_line(tmp_path, overrides, message) -> None:
    with pytest.raises(MemrunError, match=message) as info:  # the CLI prints these as one line
        run_memrun(overrides, tmp_path / "run")
    assert "\n" not in str(info.value)
