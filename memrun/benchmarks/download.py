"""Resolve dataset files: from a data directory, else download, always check sha256.

Precedence for the data directory: the ``data_dir`` config key, else the
``MEMRUN_DATA_DIR`` environment variable, else a per-user cache folder
(``platformdirs.user_cache_dir("memrun")/datasets``).

Several processes (a sweep's jobs, shards on one node) may need the same missing file at
once: a download holds a file lock (``<file>.lock``, :mod:`filelock`) while it streams
into a temporary file of its own and renames it into place; a process that waited for
the lock finds the file there and only checks its sha256.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memrun.core.paths import user_cache
from memrun.errors import DataError, DownloadError
from memrun.lazy import lazy

if TYPE_CHECKING:
    import filelock
    import httpx
    from rich import progress as rich_progress
else:
    filelock = lazy("filelock")
    httpx = lazy("httpx")  # a run whose files are present never loads it (~60 ms)
    rich_progress = lazy("rich.progress")

ENV_DATA_DIR = "MEMRUN_DATA_DIR"
_CHUNK = 1 << 20


def data_dir(configured: str | None = None) -> Path:
    """The folder datasets are read from and downloaded into (not created here)."""
    if configured:
        return Path(configured).expanduser()
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        return Path(env).expanduser()
    return user_cache("datasets")


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()  # a 0-byte file: said so, not "not the pinned version"


def git_blob_sha1(path: Path) -> str:
    """Hex git blob id of a file: sha1 of ``b"blob <size>\\0"`` and its bytes, the id a git
    repository gives the file's content (``git hash-object``)."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _check(path: Path, sha256: str | None, git_blob: str | None = None) -> str:
    actual = sha256_of(path)
    if sha256 and actual != sha256:
        raise DataError(
            f"{path} has sha256 {actual} but the config pins {sha256}: "
            + ("the file is empty (an interrupted download or copy?); replace it" if actual == EMPTY_SHA256 else
               "either the file is not the pinned version (a partial download, an edited copy) or the pin is wrong; "
               "check the pin in the benchmark config, or replace the file; a file of your own (not the published "
               "one) runs unpinned: benchmark.sha256=null benchmark.expected_counts=null")
        )
    if not sha256 and git_blob and (blob := git_blob_sha1(path)) != git_blob:
        raise DataError(
            f"{path} has git blob id {blob} but the pinned commit holds {git_blob}: the file is not "
            "the pinned version (a partial download, an edited copy); replace the file"
        )
    return actual


def resolve(
    file: str,
    *,
    url: str | None,
    sha256: str | None,
    folder: Path,
    path: str | None = None,
    git_blob: str | None = None,
) -> tuple[Path, str]:
    """Return ``(path, sha256)`` of a dataset file, downloading it when missing.

    file: the file name looked up in ``folder``.
    url: the pinned public address to download from (None: no download).
    sha256: the expected hex digest (None: not pinned; the actual one is still returned).
    path: an explicit copy elsewhere (``benchmark.path``); it must exist.
    git_blob: the file's git blob id at a pinned commit, checked when no sha256 is pinned
        (a file known by its repository's content address only, e.g. BEAM's 1M and 10M).

    Raises DataError when an explicit path is missing or a checksum differs, and
    DownloadError (one line: file, address, sha256, folder) when the download fails.
    """
    if path:
        explicit = Path(path).expanduser()
        if explicit.is_dir():
            raise DataError(f"benchmark.path={path} is a folder; name the dataset file itself")
        if not explicit.is_file():
            raise DataError(f"benchmark.path={path}: no such file")
        return explicit, _check(explicit, sha256, git_blob)
    target = folder / file
    if target.is_file():
        return target, _check(target, sha256, git_blob)
    if not url:
        raise DataError(f"{file} is not in {_shown(folder)} and the config names no url to download it from")
    return target, _download_once(url, target, sha256, git_blob)


def _shown(folder: Path) -> str:
    """``folder`` as given, with where it resolves when relative (``../data`` is relative to
    the folder memrun runs in, which a relative MEMRUN_DATA_DIR copied from a README is not)."""
    return str(folder) if folder.is_absolute() else f"{folder} (that is {folder.resolve()})"


def _download_once(url: str, target: Path, sha256: str | None, git_blob: str | None = None) -> str:
    """Download under the file lock; re-check after waiting. The lock file, and a folder
    made only for it, are removed afterwards: correctness never rests on the lock alone,
    since every download streams into its own temporary file, is checked against the
    sha256, and is renamed into place atomically."""
    made = [p for p in (target.parent, *target.parent.parents) if not p.exists()]  # innermost first
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = Path(str(target) + ".lock")
    try:
        with filelock.FileLock(str(lock_path)):
            if target.is_file():  # another process downloaded it while this one waited
                return _check(target, sha256, git_blob)
            return _download(url, target, sha256, git_blob)
    finally:
        lock_path.unlink(missing_ok=True)
        for folder in made:  # only folders this call made, and only while empty
            if any(folder.iterdir()):
                break
            folder.rmdir()


def _download(url: str, target: Path, sha256: str | None, git_blob: str | None = None) -> str:
    """Stream ``url`` into ``target`` via a ``.part`` file of this process's own; return the
    verified sha256. The caller holds the download lock."""
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=30.0) as response:
            response.raise_for_status()
            total = int(response.headers.get("content-length", 0)) or None
            with (
                part.open("wb") as out,
                rich_progress.Progress(
                    "[progress.description]{task.description}",
                    rich_progress.BarColumn(),
                    rich_progress.DownloadColumn(),
                    rich_progress.TransferSpeedColumn(),
                    transient=True,
                ) as bar,
            ):
                task = bar.add_task(f"downloading {target.name}", total=total)
                for chunk in response.iter_bytes(_CHUNK):
                    out.write(chunk)
                    bar.advance(task, len(chunk))
    except (httpx.HTTPError, OSError) as exc:
        part.unlink(missing_ok=True)
        reason = str(exc).splitlines()[0] if str(exc) else ""
        raise DownloadError(
            f"{target.name} is not in {_shown(target.parent)} and downloading it from {url} failed "
            f"({type(exc).__name__}: {reason}); put the file there yourself (sha256 "
            f"{sha256 or 'not pinned'}), or point data_dir / {ENV_DATA_DIR} / benchmark.path at a copy"
        ) from exc
    actual = sha256_of(part)
    if sha256 and actual != sha256:
        part.unlink(missing_ok=True)
        raise DownloadError(
            f"downloaded {url} but its sha256 is {actual}, expected {sha256}; nothing was kept"
        )
    if not sha256 and git_blob and (blob := git_blob_sha1(part)) != git_blob:
        part.unlink(missing_ok=True)
        raise DownloadError(f"downloaded {url} but its git blob id is {blob}, expected {git_blob}; nothing was kept")
    part.replace(target)
    return actual
