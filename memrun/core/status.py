"""How a run ends: one status vocabulary, mapped to exit codes and to a sweep's job outcome here.

A run's status is decided by the run (:func:`memrun.pipeline.run.run` returns it in its
``RunResult``), recorded in its instrument and ``summary.json``, and turned into the command
line's exit code (:attr:`RunStatus.exit_code`) and a sweep job's outcome
(:attr:`RunStatus.outcome`) by this module only::

    status        meaning                                             exit  sweep job
    running       the items are running (a live or unfinished run)       0  -
    complete      every item ran                                         0  complete
    stopped       the token budget ran out (max_tokens_total)            0  complete
    degraded      more rows failed than max_error_share                  2  failed
    failed        every item failed, or the run stopped on an error      2  failed
    interrupted   Ctrl-C, SIGTERM, a sweep's stop                      130  interrupted
    refused       another run holds, or already filled, the folder       2  refused
"""

from __future__ import annotations

from enum import Enum

from memrun.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USER_ERROR

MAX_ERROR_SHARE = 0.1
"""The default ``max_error_share``: more of a run's rows failed than this share and it ends
``degraded``; past it the second judge's agreement is withheld too. Readers of a run saved
without the key (an older one) take this."""


class RunStatus(str, Enum):
    """A run's status (module docstring). A ``str``: it is written as its value."""

    RUNNING = "running"
    COMPLETE = "complete"
    STOPPED = "stopped"
    DEGRADED = "degraded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    REFUSED = "refused"

    def __str__(self) -> str:
        return self.value

    @property
    def exit_code(self) -> int:
        """The command line's exit code for a run that ended so (:data:`memrun.errors.EXIT_CODES`)."""
        return _EXIT[self]

    @property
    def outcome(self) -> RunStatus:
        """What a sweep records for a job that ended so: complete, failed, interrupted or refused."""
        return _OUTCOME[self]


_EXIT = {RunStatus.RUNNING: EXIT_OK, RunStatus.COMPLETE: EXIT_OK, RunStatus.STOPPED: EXIT_OK,
         RunStatus.DEGRADED: EXIT_USER_ERROR, RunStatus.FAILED: EXIT_USER_ERROR,
         RunStatus.INTERRUPTED: EXIT_INTERRUPTED, RunStatus.REFUSED: EXIT_USER_ERROR}
_OUTCOME = {RunStatus.RUNNING: RunStatus.COMPLETE, RunStatus.COMPLETE: RunStatus.COMPLETE,
            RunStatus.STOPPED: RunStatus.COMPLETE, RunStatus.DEGRADED: RunStatus.FAILED,
            RunStatus.FAILED: RunStatus.FAILED, RunStatus.INTERRUPTED: RunStatus.INTERRUPTED,
            RunStatus.REFUSED: RunStatus.REFUSED}
JOB_OUTCOMES = tuple(dict.fromkeys(_OUTCOME.values()))
"""The statuses a sweep's job records (:class:`memrun.jobs.launch.JobOutcome`)."""
