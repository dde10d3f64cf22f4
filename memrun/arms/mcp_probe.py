"""What ``memrun arm init mcp`` learns about a stdio server beyond its tool list: where it
keeps its store, and which package (name, version) it is.

**The sandbox.** The probe server is started with every storage variable memrun knows
(:data:`STORAGE_ENV`, the ones MCP memory servers document) pointing into a folder of
memrun's, and with ``HOME``, the XDG folders and the working folder there too, so the
smoke records land in a store memrun created and removes. Which of those paths the server
wrote tells how each history gets its own store in the run (:func:`isolation_from`): the
variable's path, else the working folder, else ``HOME``, each under ``{{ namespace_dir }}``.

**The package.** A server built on an MCP framework often reports the framework's version in
its handshake (FastMCP: the ``mcp`` SDK's, ``local-memory 1.30.0``). :func:`server_package`
finds the package that installed the command: a Python console script (the ``*.dist-info``
of the command's environment whose ``entry_points.txt`` names it) or an npm bin (the
``package.json`` above the file ``node_modules/.bin/<command>`` links to).
"""

from __future__ import annotations

import json
import re
import shutil
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
    variable not in ``given`` (the user's ``--env``) and the home folders point there."""
    env = {var: str(folder / "store" / name) for var, name in STORAGE_ENV.items() if var not in given}
    for var, sub in HOME_DIRS.items():
        (folder / sub).mkdir(parents=True, exist_ok=True)
        env.setdefault(var, str(folder / sub))
    (folder / "store").mkdir(exist_ok=True)
    (folder / "cwd").mkdir(exist_ok=True)
    return {**env, **given}, str(folder / "cwd")


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


def _python_package(bin_dir: Path, command: str) -> tuple[str, str] | None:
    """(name, version) of the distribution whose console script is ``bin_dir/command``."""
    pattern = re.compile(rf"^\s*{re.escape(command)}\s*=", re.M)
    for site in bin_dir.parent.glob("lib/python*/site-packages"):
        for info in site.glob("*.dist-info"):
            entry = info / "entry_points.txt"
            if entry.is_file() and pattern.search(entry.read_text(errors="replace")):
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
    if not found:
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

