"""memrun's exceptions and exit codes, in one place.

Every error a user can cause (bad config, missing or malformed data, an arm that
misbehaves, a failed LLM call) is a :class:`MemrunError`. The command line prints it as
one line, ``memrun: error: <message>``, and exits with :attr:`MemrunError.exit_code`;
anything else is a bug and keeps its traceback. The tree::

    MemrunError                      exit 2 (memrun compare / null-band: 4)
    |-- ConfigError                  the composed configuration is invalid
    |   `-- LiteralSecretError       a literal key where an environment variable's name belongs
    |-- DataError                    a dataset is missing, damaged or unparseable
    |   |-- DownloadError            ... and could not be downloaded
    |   `-- TurnError                a malformed turn (also a ValueError)
    |-- ArmError                     an arm could not be built or broke its protocol (stops the run)
    |-- ToolError                    an MCP tool answered with an error (one item's; also a RuntimeError)
    |-- MalformedReply               a memory server's reply is not the JSON expected (one item's, once retried)
    |-- AuthError                    a server refused memrun's credentials (stops the run)
    |-- EndpointFailed               an LLM endpoint failed its first calls alike, none succeeded (stops the run)
    |   `-- EndpointUnreachable      ... nothing answers there at all
    |-- CacheError                   a cache file cannot be read or written (stops the run)
    |-- CallError                    one LLM call failed for good (recorded on its item)
    |-- ItemFailed                   one item x repeat failed at a stage of the accuracy axis (recorded on its row)
    |-- BudgetExhausted              max_tokens_total reached (the run ends "stopped")
    |-- JudgeReplyUnparseable        a judge's reply cannot be read (its verdict is ERROR; a ValueError)
    |-- RunTableError                a run folder or items.parquet is missing or not a run table
    |-- RunFolderTaken               another run holds, or already filled, the run folder
    |-- MergeError                   shards that cannot be merged
    |-- CompareUsageError            a comparison that cannot be set up as asked
    |-- UsageError                   a subcommand called wrongly in a way its parser cannot see (printed as UsageExit)
    |-- RunFailed                    every item of a run failed
    `-- RunDegraded                  more rows failed than max_error_share

    SweepRefused (a BaseException)   the sweep folder belongs to another sweep
    UsageExit (a SystemExit)         a subcommand's bad argument (its usage error printed: :func:`usage_text`)
    StopRequested (an Exception)     a stop was asked for: no arm or LLM call starts any more (caught inside
                                     the run's retrieval flow and answer stage, never shown; not a user's error)

Exit codes of the command line (:data:`EXIT_CODES`; ``memrun compare`` has its own table,
:class:`memrun.stats.ExitCode`: 0 pass, 1 fail, 2 unresolved, 3 refused, 4 usage error):

    0    done
    2    a user error (a MemrunError, a usage error)
    130  interrupted (Ctrl-C, SIGTERM)
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


class EndpointFailed(MemrunError):
    """An LLM endpoint at which no call has succeeded in this run failed its first calls all
    the same way (:mod:`memrun.llm.first_calls`: the same HTTP status such as 404, 405 or 501,
    or replies that are not a chat completion): a wrong base URL or model name, or a server
    without chat completions. Every later call would fail the same way, so the run stops (the
    rows so far are kept), as for :class:`AuthError`. Once a call has succeeded, failures are
    the items' own errors."""


class EndpointUnreachable(EndpointFailed):
    """Nothing answers at an LLM endpoint that has not answered once in this run: connection
    refused or unknown host (after the HTTP policy's retries), or no reply within the request
    timeout (at once: another attempt would wait as long again). A wrong base URL or a server
    that is not running, or one that accepts connections and never replies. Every later call
    would fail the same way, so the run stops at the first one (the rows so far are kept)."""


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


class LiteralSecretError(ConfigError):
    """The config carries a literal key; ``values`` are the secrets to redact from files
    already written (:func:`memrun.core.redaction.scrub_secrets`)."""

    def __init__(self, message: str, values: list[str]) -> None:
        super().__init__(message)
        self.values = values


class TurnError(DataError, ValueError):
    """A turn is malformed; the message names the turn (the caller adds the session)."""


class ToolError(MemrunError, RuntimeError):
    """An MCP tool answered with ``isError: true`` (its text is the message); recorded on the item."""


class CallError(MemrunError):
    """An LLM call failed for good; the caller records it on the item. ``kind``: ``http``
    (status >= 400 after the policy), ``transport`` (connection, timeout), ``malformed`` (a
    2xx reply memrun cannot read), ``context_overflow`` (the server says the prompt is longer
    than the model's window)."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class MalformedReply(MemrunError):
    """A memory server's reply of status < 400 whose body is not JSON where JSON was expected
    (:mod:`memrun.arms.http_async`): retried as a transport error, then an error of its item,
    not of the run."""


class ItemFailed(MemrunError):
    """One item x repeat failed at a stage of the accuracy axis (retrieval, the arm's answer,
    the reader, a judge); the message is the row's ``error`` and the run goes on."""


class BudgetExhausted(MemrunError):
    """``max_tokens_total`` was reached; no new call is started."""


class JudgeReplyUnparseable(MemrunError, ValueError):
    """A judge's reply cannot be read as a verdict (or a rubric score); the item's label is ERROR."""


class RunFolderTaken(MemrunError):
    """Another run holds, or already filled, the run folder."""


class MergeError(MemrunError):
    """The shards cannot be merged (none found, different configurations, duplicate rows)."""


class CompareUsageError(MemrunError):
    """The comparison cannot be set up as asked (metric, cluster column, empty pairing)."""


class UsageError(MemrunError):
    """A subcommand was called wrongly in a way its argument parser cannot see (a fourth
    path, a missing ``--url``). The command line prints it as a bad argument is printed
    (:func:`usage_text`, ``prog``: ``memrun <subcommand>``, ``usage``: its one-line usage)."""

    def __init__(self, message: str, prog: str, usage: str) -> None:
        super().__init__(message)
        self.prog, self.usage = prog, usage


def usage_text(prog: str, message: str, usage: str) -> str:
    """A subcommand's usage error as stderr shows it, whichever way it was found: the error
    line naming the subcommand, then a hint line with its usage::

        memrun validate: error: the following arguments are required: file
        usage: memrun validate [-h] [--format {jsonl,longmemeval,locomo}] ... file (--help: every option)
    """
    return f"{prog}: error: {message}\n{usage}\n"


class SweepRefused(BaseException):
    """The sweep folder belongs to another sweep. A BaseException: Hydra turns an Exception
    raised by a callback into a warning and would run the jobs anyway."""


class StopRequested(Exception):
    """A stop was asked for (Ctrl-C, SIGTERM): no arm call and no LLM call starts any more
    (the calls in flight finish). Raised and caught inside the retrieval flow
    (:mod:`memrun.pipeline.many_histories`) and the answer stage (:mod:`memrun.accuracy.stage`,
    from :meth:`memrun.llm.service.LLMService.stop_new_calls`); not a user's error, so not a
    :class:`MemrunError`."""


class UsageExit(SystemExit):
    """A subcommand's bad argument: argparse printed its :func:`usage_text`
    (:mod:`memrun.commands.usage`); ``code`` is the command's usage exit code (2, or 4 for
    memrun compare and memrun null-band, whose 2 means unresolved)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(code)
        self.message = message


EXIT_OK = 0
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_CODES = {EXIT_OK: "done", EXIT_USER_ERROR: "a user error", EXIT_INTERRUPTED: "interrupted"}
"""The command line's exit codes (``memrun compare``'s: :class:`memrun.stats.ExitCode`)."""
