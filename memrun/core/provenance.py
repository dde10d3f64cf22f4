"""Which commits produced a run: the repository whose configs were composed, and memrun's own.

The instrument's ``git_commit`` is the commit of the repository holding the user's configs
(the ``--config-dir`` folder, else the working directory memrun was run in): in a
pull-request loop, the base run and the head run each name their own commit.
``memrun_commit`` is memrun's own checkout (None when memrun is an installed package),
recorded beside ``memrun_version``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import memrun

_MEMRUN_SOURCE = Path(memrun.__file__).resolve().parent
MAIN_PROVIDERS = ("hydra", "main", "schema")
"""Hydra's config sources that are memrun's own (its packaged ``conf/``, Hydra's, the schemas)."""


@dataclass(frozen=True)
class Commits:
    """``configs``: the commit of the configs' repository; ``memrun``: memrun's own checkout.
    Each is a 40-hex sha, with ``+dirty`` when tracked files changed, or None (not a checkout)."""

    configs: str | None
    memrun: str | None


def checkout_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a folder, or a worktree's
    file), or None: no git process is started outside a checkout."""
    folder = folder.resolve()
    return next((p for p in (folder, *folder.parents) if (p / ".git").exists()), None)


def git_commit(root: Path | None = None) -> str | None:
    """The commit checked out in the repository holding ``root`` (default: memrun's own
    source), ``+dirty`` with changes to tracked files; None outside a checkout or before
    the first commit. One git process."""
    return _checkout_commit(checkout_root(root or _MEMRUN_SOURCE))


def _checkout_commit(top: Path | None) -> str | None:
    """:func:`git_commit` of the checkout whose top folder is ``top`` (None: not a checkout)."""
    if top is None:
        return None
    try:  # one git process: the branch header carries the commit, the other lines the changes
        status = subprocess.run(["git", "-C", str(top), "status", "--porcelain=v2", "--branch", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = status.stdout.splitlines()
    sha = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    if status.returncode or sha is None or sha == "(initial)":
        return None
    return sha + ("+dirty" if any(not line.startswith("#") for line in lines) else "")


def config_folder(config_sources: Iterable[Mapping[str, Any]], cwd: Path | None = None) -> Path:
    """The user's config folder among Hydra's ``runtime.config_sources`` (``--config-dir``,
    ``hydra.searchpath``): the first file source that is not memrun's own; else ``cwd``
    (default: the working directory), where the user ran memrun."""
    for source in config_sources:
        if source.get("schema") == "file" and source.get("provider") not in MAIN_PROVIDERS and source.get("path"):
            return Path(str(source["path"]))
    return cwd or Path(os.getcwd())


def commits(configs: Path | None) -> Commits:
    """The commit of the repository holding ``configs`` (None: the working directory) and
    memrun's own commit. One git process when both are the same checkout (memrun run from
    its own repository): the same answer, half the work."""
    mine = checkout_root(_MEMRUN_SOURCE)
    theirs = checkout_root(configs or Path(os.getcwd()))
    memrun_commit = _checkout_commit(mine)
    return Commits(configs=memrun_commit if theirs == mine else _checkout_commit(theirs), memrun=memrun_commit)
