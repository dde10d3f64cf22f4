"""BEAM's files: which ones a size holds, which chat file a conversation is read from, and
their pins.

The pins live in ``memrun/benchmarks/data/beam_files.txt`` (one line per file: sha256 or
``-``, git blob id, path in the repository) for the repository at the pinned commit. The
100K and 500K files are pinned by sha256 (checked on every run); the 1M and 10M files, not
present on the machines memrun was built on, by their git blob id, the repository's own
content address, so a download is still checked against the pinned commit.

Which chat file (the official answer generation,
``src/answer_probing_questions/answer_generation.py``, lines 154-158 at the pinned
commit): a conversation's ``chat_trunecated.json`` when the repository has one (the
name is the repository's), else its ``chat.json``. The evaluation
(``src/evaluation/run_evaluation.py``) reads only ``probing_questions.json``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from memrun.benchmarks import download
from memrun.errors import ConfigError

SIZES = ("100K", "500K", "1M", "10M")
SIZE_ALIASES = {"128K": "100K"}
"""BEAM's README and paper call the smallest size 128K; its files live under ``chats/100K``."""
CHAT = "chat.json"
TRUNCATED = "chat_trunecated.json"  # sic: the repository's name
QUESTIONS = "probing_questions/probing_questions.json"


@dataclass(frozen=True)
class Pinned:
    """One file of the repository: its path there, sha256 (None: not pinned) and git blob id."""

    path: str
    sha256: str | None
    git_blob: str


@dataclass(frozen=True)
class Conversation:
    """One conversation of a size: its number, chat file (truncated when there is one) and questions."""

    number: int
    chat: Pinned
    questions: Pinned


@cache
def conversations(size: str) -> tuple[Conversation, ...]:
    """The conversations of ``size`` (a name of :data:`SIZES` or :data:`SIZE_ALIASES`) in numeric
    order. Raises ConfigError for an unknown size, listing every accepted name."""
    size = SIZE_ALIASES.get(size, size)
    if size not in SIZES:
        raise ConfigError(f"benchmark.split={size}: no such BEAM size; choose one of {accepted_sizes()}")
    files: dict[int, dict[str, Pinned]] = {}
    text = resources.files("memrun.benchmarks").joinpath("data/beam_files.txt").read_text("utf-8")
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        sha, blob, path = line.split()
        _, file_size, number, name = path.split("/", 3)
        if file_size == size:
            files.setdefault(int(number), {})[name] = Pinned(path, None if sha == "-" else sha, blob)
    return tuple(
        Conversation(n, f.get(TRUNCATED) or f[CHAT], f[QUESTIONS]) for n, f in sorted(files.items())
    )


def accepted_sizes() -> str:
    """Every size name ``benchmark.split`` accepts, aliases beside the size they name."""
    aliases = {v: k for k, v in SIZE_ALIASES.items()}
    return ", ".join(f"{s} (or {aliases[s]}, the README's name)" if s in aliases else s for s in SIZES)


def resolve(file: Pinned, *, url: str, folder: Path, copy: str | None) -> tuple[Path, str]:
    """``(local path, sha256)`` of ``file``: under ``copy`` (a folder holding the repository's
    ``chats/``) when given, else under ``folder``, downloaded from ``<url>/<path>`` when missing.

    Raises DataError for a file that differs from its pin, or is missing from ``copy``;
    DownloadError when a download fails.
    """
    if copy:
        return download.resolve(file.path, url=None, sha256=file.sha256, folder=Path(copy).expanduser(),
                                git_blob=file.git_blob)
    return download.resolve(file.path, url=f"{url.rstrip('/')}/{file.path}", sha256=file.sha256, folder=folder,
                            git_blob=file.git_blob)


def manifest_sha256(files: list[tuple[str, str]]) -> str:
    """One sha256 over ``(path, sha256)`` pairs: the digest of the lines ``<sha256>  <path>``
    sorted by path (``sha256sum``'s format), the dataset's identity in the instrument."""
    lines = "".join(f"{sha}  {path}\n" for path, sha in sorted(files))
    return hashlib.sha256(lines.encode()).hexdigest()
