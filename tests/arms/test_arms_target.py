"""Arms named by _target_: one-line errors for a misconfigured arm.

The README's example arm in a user's own package and config folder
(tests/user_project) is run by tests/test_cli.py.
"""

from __future__ import annotations

import pytest

from arms.support import run_in_process
from memrun.errors import MemrunError
from tests.conftest import run_memrun


@pytest.mark.parametrize("overrides, message", [
    (["arm._target_=my_missing_pkg.Arm"], r"arm: could not build my_missing_pkg.Arm: .*No module named 'my_missing_pkg'.*"
                                          r"arm._target_ must name a class whose package is importable"),
    (["arm._target_=collections.OrderedDict"], r"arm: collections.OrderedDict has no ingest\(\) method"),
    (["arm=dense", "arm.embedder.api_key_env=MEMRUN_UNSET_TOKEN"],
     r"^arm.embedder.*\$MEMRUN_UNSET_TOKEN .*use arm/embedder=minilm"),  # no 'could not build' in front
    (["arm=answers_file", "arm.path=/nonexistent/answers.jsonl"], "arm.path=/nonexistent/answers.jsonl: no such file"),
])
def test_misconfigured_arms_fail_in_one_line(tmp_path, monkeypatch, overrides, message) -> None:
    monkeypatch.delenv("MEMRUN_UNSET_TOKEN", raising=False)
    with pytest.raises(MemrunError, match=message) as info:  # the CLI prints these as one line
        run_in_process(overrides, tmp_path / "run")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("target", ["my_missing_pkg.Arm", "collections.NoSuchClass"])
def test_an_arm_that_does_not_import_prints_one_line_and_nothing_on_stdout(tmp_path, target) -> None:
    """hydra.utils.get_class logs its own error on the run's stdout (twice: the reader
    check and the embedder check ask for the class); memrun's one line says it all."""
    done = run_memrun(["benchmark=synthetic", f"arm._target_={target}", "progress=false"], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"memrun: error: arm: could not build {target}")
