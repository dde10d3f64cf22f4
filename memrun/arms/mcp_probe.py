"""What ``memrun arm init mcp`` learns about a stdio server beyond its tool list: where it
keeps its store, and which package (name, version) it is.

**The sandbox.** The probe server is started with every storage variable memrun knows
(:data:`STORAGE_ENV`, the ones MCP memory servers document) pointing into a folder of
memrun's, and with ``HOME``, the XDG folders and the working folder there too, so the
smoke records land in a store memrun created and removes. Which of those paths the server
wrote tells how each history gets its own store in the run (:func:`isolation_from`): the
variable's path, else the working folder, else ``HOME``, each under ``{{ namespace_dir }}``.

**Paths it was handed.** An argument or ``--env`` value that names a file or folder (a
store at a fixed path: ``--db ~/notes.db``) is swapped for a path inside the sandbox for the
probe (:func:`sandbox_paths`); when the probe server wrote there, the run puts that path under
``{{ namespace_dir }}`` (:func:`handed_paths_written`).

**Writes elsewhere.** Before any record is stored, the folders a server could still reach
(``$HOME``, the working folder memrun runs in, the folders of the paths it was handed) are
compared with their state before the server started (:func:`snapshot`, :func:`changes`):
a server that wrote there at start keeps its store somewhere memrun did not create, and
``memrun arm init`` stops before the smoke records. (A server that finds the home folder
without ``$HOME``, or writes only on its first store, is seen after the smoke test instead,
and said.)

**The package.** A server built on an MCP framework often reports the framework's version in
its handshake (FastMCP: the ``mcp`` SDK's, ``local-memory 1.30.0``). :func:`server_package`
finds the package that installed the command: a Python console script (the ``*.dist-info``
of the command's environment whose ``entry_points.txt`` names it) or an npm bin (the
``package.json`` above the file ``node_modules/.bin/<command>`` links to).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

# Storage paths MCP memory servers document as environment variables -> the file name used
# under memrun's folder. @modelcontextprotocol/server-memory: MEMORY_FILE_PATH; local-memory:
# MEMORY_DB_PATH; agent-logbook: MEM_DB_PATH; the rest are common spellings of the same.
STORAGE_ENV = {
    "MEMORY_FILE_PATH": "memory.jsonl",
    "MEMORY_DB_PATH": "memory.db",
    "MEM_DB_PATH": "mem.db",
    "MEMORY_PATH": "memory-store",
    "MEMORY_DIR": "memory-dir",
    "DB_PATH": "store.db",
    "DATABASE_PATH": "database.db",
    "SQLITE_PATH": "sqlite.db",
    "DATA_DIR": "data-dir",
}
HOME_DIRS = {"HOME": "home", "XDG_DATA_HOME": "home/.local/share", "XDG_CONFIG_HOME": "home/.config",
             "XDG_STATE_HOME": "home/.local/state", "XDG_CACHE_HOME": "home/.cache"}
NAMESPACE_DIR = "{{ namespace_dir }}"


def sandbox(folder: Path, given: dict[str, str]) -> tuple[dict[str, str], str]:
    """(environment, working folder) for the probe server inside ``folder``: every storage
    variable not in ``given`` (the user's ``--env``), the home folders and the temporary
    folder point there."""
    env = {var: str(folder / "store" / name) for var, name in STORAGE_ENV.items() if var not in given}
    for var, sub in HOME_DIRS.items():
        (folder / sub).mkdir(parents=True, exist_ok=True)
        env.setdefault(var, str(folder / sub))
    for var in ("TMPDIR", "TEMP", "TMP"):
        env.setdefault(var, str(folder / "tmp"))
    for sub in ("store", "cwd", "tmp"):
        (folder / sub).mkdir(exist_ok=True)
    return {**env, **given}, str(folder / "cwd")


_PATHLIKE = re.compile(r"^(~|\.{0,2}/)|/|\.(db|sqlite3?|jsonl?|duckdb|lmdb|parquet|txt|md)$", re.I)


_STORE_FILE = re.compile(r"\.(db|sqlite3?|jsonl|duckdb|lmdb|parquet)$", re.I)


def _pathlike(value: str) -> bool:
    """A value that names a store's file or folder: a path (not a template, an option or a URL)
    that does not exist yet, or an existing file with a store's extension (never the server's
    own script or package folder)."""
    if not _PATHLIKE.search(value) or "{{" in value or "://" in value or value.startswith("-") or "=" in value:
        return False
    path = Path(os.path.expanduser(value))
    return not path.exists() or (path.is_file() and bool(_STORE_FILE.search(path.name)))


def sandbox_paths(folder: Path, args: Sequence[str], env: dict[str, str]
                  ) -> tuple[list[str], dict[str, str], dict[str, Path]]:
    """(args, env, handed) for the probe: every argument or variable value that names a path
    (:func:`_pathlike`) swapped for one under ``folder/handed/<n>/`` with its base name;
    ``handed`` maps each original value to its stand-in."""
    handed: dict[str, Path] = {}

    def swap(value: str) -> str:
        if not _pathlike(value):
            return value
        if value not in handed:
            stand_in = folder / "handed" / str(len(handed)) / (Path(value).name or "store")
            stand_in.parent.mkdir(parents=True, exist_ok=True)
            handed[value] = stand_in
        return str(handed[value])

    return [swap(a) for a in args], {k: swap(v) for k, v in env.items()}, handed


def handed_paths_written(handed: dict[str, Path]) -> dict[str, str]:
    """Original value -> ``{{ namespace_dir }}/<name>`` for each handed path the probe server wrote."""
    return {value: f"{NAMESPACE_DIR}/{stand_in.name}" for value, stand_in in handed.items()
            if _written(stand_in) or _written(stand_in.parent)}


_NOISE = re.compile(r"(-journal|-wal|-shm|\.lock|\.tmp|\.pyc)$")


def watched_roots(handed: Iterable[str]) -> list[tuple[Path, int]]:
    """(folder, depth) a server could write to besides its sandbox: ``$HOME`` and the working
    folder memrun runs in (2 levels), the existing folders of the paths it was handed (1)."""
    roots = [(Path(os.path.expanduser("~")), 2), (Path.cwd(), 2)]
    for value in handed:
        parent = Path(os.path.expanduser(value)).resolve().parent
        if parent.is_dir():
            roots.append((parent, 1))
    return roots


def snapshot(roots: Sequence[tuple[Path, int]], skip: Path) -> dict[str, float]:
    """path -> mtime of every entry under ``roots`` (to each one's depth), ``skip`` left out."""
    seen: dict[str, float] = {}
    todo = [(root, depth) for root, depth in roots if root.is_dir()]
    while todo:
        folder, depth = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.path.startswith(str(skip)) or _NOISE.search(entry.name):
                continue
            try:
                seen[entry.path] = entry.stat(follow_symlinks=False).st_mtime
                if depth > 1 and entry.is_dir(follow_symlinks=False):
                    todo.append((Path(entry.path), depth - 1))
            except OSError:
                continue
    return seen


def changes(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """The entries created between two :func:`snapshot` s, and the files among the handed
    folders' (depth 1) that were modified: what a server (or, rarely, another program at the
    same moment) wrote."""
    return sorted(p for p, m in after.items() if p not in before or (before[p] != m and not os.path.isdir(p)))


def _children(pid: int) -> list[int]:
    """The processes descended from ``pid`` (Linux /proc; [] elsewhere)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        todo += kids
    return found


def child_processes() -> set[int]:
    """memrun's descendant processes now (Linux; empty elsewhere): taken before a server starts,
    so that :func:`files_open_for_writing` looks at that server's processes only."""
    return set(_children(os.getpid()))


def files_open_for_writing(inside: Path, before: set[int]) -> list[str]:
    """Regular files outside ``inside`` that the processes memrun started since ``before``
    (:func:`child_processes`: the server) hold open for writing (Linux /proc; [] elsewhere):
    a store the server opened at start."""
    found = set()
    for pid in set(_children(os.getpid())) - before:
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                target = os.readlink(fd)
                flags = int(Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().split("flags:")[1].split()[0], 8)
            except (OSError, IndexError, ValueError):
                continue
            if flags & 0o3 and target.startswith("/") and not target.startswith(("/dev/", "/proc/", "/sys/")) \
                    and not target.startswith(str(inside)) and os.path.isfile(target) and not _NOISE.search(target):
                found.add(target)
    return sorted(found)


def _written(path: Path) -> bool:
    return path.is_file() or (path.is_dir() and any(path.iterdir()))


def isolation_from(folder: Path, given: dict[str, str]) -> tuple[dict[str, str], str | None] | None:
    """What the run needs so each history gets its own store, from what the probe server wrote
    in ``folder`` (:func:`sandbox`): (env entries, cwd or None); None when it wrote nowhere memrun
    gave it (its store is elsewhere, or it keeps nothing on disk)."""
    env = {var: f"{NAMESPACE_DIR}/{name}" for var, name in STORAGE_ENV.items()
           if var not in given and _written(folder / "store" / name)}
    if env:
        return env, None
    if _written(folder / "cwd"):
        return {}, NAMESPACE_DIR
    home = folder / "home"
    if any(p.is_file() for p in home.rglob("*")):
        return {var: f"{NAMESPACE_DIR}/{sub}" for var, sub in HOME_DIRS.items()}, None
    return None


INTERPRETERS = re.compile(r"^(python[\d.]*|node|npx|uvx?|pipx|deno|bun|java|ruby|perl|bash|sh)$")


def _console_scripts(entry_points: str) -> str:
    """The ``[console_scripts]`` section of an ``entry_points.txt``."""
    section = re.search(r"^\[console_scripts\]\s*$(.*?)(?=^\[|\Z)", entry_points, re.M | re.S)
    return section.group(1) if section else ""


def _python_package(bin_dir: Path, command: str) -> tuple[str, str] | None:
    """(name, version) of the distribution whose console script is ``bin_dir/command``."""
    pattern = re.compile(rf"^\s*{re.escape(command)}\s*=", re.M)
    for site in bin_dir.parent.glob("lib/python*/site-packages"):
        for info in site.glob("*.dist-info"):
            entry = info / "entry_points.txt"
            if entry.is_file() and pattern.search(_console_scripts(entry.read_text(errors="replace"))):
                meta = (info / "METADATA").read_text(errors="replace") if (info / "METADATA").is_file() else ""
                name = re.search(r"^Name:\s*(.+)$", meta, re.M)
                version = re.search(r"^Version:\s*(.+)$", meta, re.M)
                if name and version:
                    return name.group(1).strip(), version.group(1).strip()
    return None


def _npm_package(link: Path) -> tuple[str, str] | None:
    """(name, version) of the npm package whose bin ``link`` (node_modules/.bin/X) runs."""
    for parent in link.resolve().parents:
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text())
            except ValueError:
                return None
            if data.get("name") and data.get("version"):
                return str(data["name"]), str(data["version"])
        if parent.name == "node_modules":
            return None
    return None


def server_package(command: str | None) -> tuple[str, str] | None:
    """(name, version) of the package that installed the stdio server ``command``, or None
    (a command memrun cannot trace: ``npx``, ``uvx``, a script of one's own)."""
    found = shutil.which(command) if command else None
    if not found or INTERPRETERS.match(Path(found).name):  # it runs a script: not the server's package
        return None
    path = Path(found)
    if path.parent.name == ".bin" and path.parent.parent.name == "node_modules":
        return _npm_package(path)
    return _python_package(path.parent, path.name)


def framework_version(command: str | None) -> str | None:
    """The version of the MCP framework installed beside ``command`` (the Python ``mcp``
    SDK in its environment, or npm's ``@modelcontextprotocol/sdk``), or None."""
    found = shutil.which(command) if command else None
    if not found:
        return None
    path = Path(found)
    if path.parent.name == ".bin":
        manifest = path.parent.parent / "@modelcontextprotocol" / "sdk" / "package.json"
        return str(json.loads(manifest.read_text()).get("version")) if manifest.is_file() else None
    for site in path.parent.parent.glob("lib/python*/site-packages"):
        for info in site.glob("mcp-*.dist-info"):
            return info.name.removeprefix("mcp-").removesuffix(".dist-info")
    return None

