"""Every shell script in the repository is shellcheck-clean (the pull-request loop above all:
it handles names from other people's pull requests). CI installs shellcheck (.ci/run); a
missing shellcheck fails the test under CI (MEMRUN_REQUIRE_DATA=1) and skips it elsewhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHEBANG = re.compile(rb"^#!\s*(/usr)?/bin/(env\s+)?(ba|da|k)?sh\b")
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "outputs", "multirun", "__pycache__", ".pytest_cache"}


def shell_scripts(root: Path = ROOT) -> list[Path]:
    """Files named *.sh or starting with a sh/bash shebang, outside virtualenvs and run folders."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".memrun")]
        for name in files:
            path = Path(folder) / name
            if name.endswith(".sh"):
                found.append(path)
                continue
            try:
                with path.open("rb") as f:
                    head = f.read(64)
            except OSError:
                continue
            if SHEBANG.match(head):
                found.append(path)
    return sorted(found)


def test_the_pr_script_and_ci_are_among_the_scripts():
    names = {p.relative_to(ROOT).as_posix() for p in shell_scripts()}
    assert {"examples/github/memrun-pr.sh", ".ci/run"} <= names


def test_every_shell_script_is_shellcheck_clean():
    exe = shutil.which("shellcheck")
    if exe is None:
        why = "shellcheck is not installed"
        if os.environ.get("MEMRUN_REQUIRE_DATA") == "1":
            pytest.fail(f"{why}; CI must run it (apt-get install -y shellcheck, as .ci/run does)")
        pytest.skip(why)
    scripts = shell_scripts()
    done = subprocess.run([exe, "--format=gcc", *map(str, scripts)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
