"""A user's own config folder (``--config-dir``): checked before Hydra reads it.

Hydra searches memrun's ``conf/`` before a ``--config-dir`` (a config source given on the
command line is appended after the application's own), so a user's ``arm/bm25.yaml``
never replaces memrun's ``arm/bm25.yaml``: ``arm=bm25`` composes memrun's file and the
user's edits are silently ignored. :func:`config_dir_problem` says so before the run
starts, naming the file and the fix (a name of its own).
"""

from __future__ import annotations

from pathlib import Path

from memrun.core.paths import conf_dir

SHOWN = 3  # shadowed files named in the message; the rest are counted


def config_dir_problem(folder: str | Path, builtin: Path | None = None) -> str | None:
    """Why ``folder`` cannot serve as a ``--config-dir``, in one line, or None.

    folder: the folder as the user gave it (named so in the message).
    builtin: memrun's own config folder (default :func:`memrun.core.paths.conf_dir`).

    A problem is a folder that does not exist (Hydra ignores it), or a YAML file at the
    same relative path as one of memrun's own with different bytes: Hydra composes
    memrun's and never the user's. A byte-identical copy (memrun's ``conf/`` itself, or
    a copy of a file) changes nothing and passes.
    """
    root = Path(folder)
    if not root.is_dir():
        return f"--config-dir {folder}: no such folder"
    builtin = conf_dir() if builtin is None else builtin
    if root.resolve() == builtin.resolve():
        return None
    shadowed = []
    for path in sorted(root.rglob("*.yaml")):
        relative = path.relative_to(root)
        ours = builtin / relative
        if ours.is_file() and ours.read_bytes() != path.read_bytes():
            shadowed.append(relative.as_posix())
    if not shadowed:
        return None
    first = shadowed[0]
    group, _, name = first.rpartition("/")
    renamed = f"{group + '/' if group else ''}{name[:-len('.yaml')]}_mine.yaml"
    choice = f"{group}={name[:-len('.yaml')]}_mine" if group else f"--config-name {name[:-len('.yaml')]}_mine"
    listed = ", ".join(shadowed[:SHOWN]) + (f" (and {len(shadowed) - SHOWN} more)" if len(shadowed) > SHOWN else "")
    one = len(shadowed) == 1
    return (f"--config-dir {folder}: {listed} {'has' if one else 'have'} the name of memrun's own "
            f"config{'' if one else 's'}, which Hydra reads first, so your edits would be silently ignored; "
            f"give {'it' if one else 'each'} a name of its own (e.g. {renamed}, selected with {choice})")
