"""memrun's exception hierarchy, in one place.

Every error a user can cause (bad config, missing or malformed data, an arm that
misbehaves) is a :class:`MemrunError`. The command line prints it as one line,
``memrun: error: <message>``, and exits with :attr:`MemrunError.exit_code`;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class MemrunError(Exception):
    """Base class for errors the user can fix. ``str(err)`` is the one-line message."""

    exit_code = 2


class ConfigError(MemrunError):
    """The composed configuration is invalid (unknown key, bad value, bad choice)."""


class DataError(MemrunError):
    """A dataset is missing, fails its checksum, or cannot be parsed."""


class DownloadError(DataError):
    """A dataset could not be downloaded (no network, HTTP error, checksum mismatch)."""


class ArmError(MemrunError):
    """An arm could not be built or broke its protocol (not an error on one item)."""


class AuthError(MemrunError):
    """A server refused memrun's credentials (HTTP 401 or 403). Every later call would be
    refused too, so the run stops at the first one (the rows so far are kept).
    ``status``: the HTTP status."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EndpointUnreachable(MemrunError):
    """Nothing answers at an LLM endpoint that has not answered once in this run (connection
    refused, unknown host, or no reply within the request timeout) after the HTTP policy's
    retries: a wrong base URL or a server that is not running. Every later call would fail
    the same way, so the run stops at the first one (the rows so far are kept), as for
    :class:`AuthError`."""


class CacheError(MemrunError):
    """A cache file cannot be read or written any more (a full disk, a damaged file). Every
    later call would fail the same way, so the run stops (the rows so far are kept)."""


class RunTableError(MemrunError):
    """A run folder or items.parquet is missing or is not a memrun run table."""


class RunFailed(MemrunError):
    """Every item of a run failed: its rows were written, but it measured nothing."""


class RunDegraded(MemrunError):
    """More of a run's rows failed than its ``max_error_share``: rows and summary are
    written (status ``degraded``), but a headline that leaves that many out is biased."""
