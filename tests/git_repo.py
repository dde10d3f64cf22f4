"""Temporary git repositories for tests: write files, commit, get the sha."""

from __future__ import annotations

import subprocess
from pathlib import Path

ARM = """defaults:
  - /schema/arm/bm25@_here_
  - _self_
_target_: memrun.arms.bm25.BM25Arm
name: team
top_k: {top_k}
"""
"""A team's own bm25 arm config (``conf/arm/team.yaml``), ``top_k`` to fill in."""


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo`` with a test identity; its stdout, stripped. Raises on failure."""
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                          check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    """Write ``files`` (path relative to ``repo`` -> text) and commit everything; ``repo`` is
    created and initialised when needed. Returns the new commit's sha."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        git(repo, "init", "-q")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")
