"""memrun's per-user cache folder, the one default for every cache it keeps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memrun.lazy import lazy

if TYPE_CHECKING:
    import platformdirs
else:
    platformdirs = lazy("platformdirs")


def user_cache(*parts: str) -> Path:
    """``platformdirs.user_cache_dir("memrun")`` joined with ``parts`` (not created here).

    memrun keeps ``datasets/``, ``llm/`` (the call cache), ``embeddings.sqlite``,
    ``namespaces/``, ``finished-runs/`` (:mod:`memrun.jobs.past_runs`) and ``compose/``
    (:mod:`memrun.config.compose_cache`) there.
    """
    return Path(platformdirs.user_cache_dir("memrun")).joinpath(*parts)


def configured_or_cache(configured: str | None, *default: str) -> Path:
    """A configured folder (``~`` expanded), else ``user_cache(*default)``."""
    return Path(configured).expanduser() if configured else user_cache(*default)


def conf_dir() -> Path:
    """memrun's config folder: the packaged ``conf/`` (inside a wheel) or the checkout's."""
    here = Path(__file__).resolve().parent.parent  # memrun/
    packaged = here / "conf"
    return packaged if packaged.is_dir() else here.parent / "conf"
