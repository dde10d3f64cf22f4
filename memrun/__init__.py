"""memrun: a reproducible experiment runner for benchmarking agent-memory systems.

What a script uses, from one place (docs/api.md)::

    import memrun

    bm25 = memrun.run(["benchmark=synthetic", "arm=bm25"], out_dir="runs/bm25")
    dense = memrun.run(["benchmark=synthetic", "arm=bm25_nostop"], out_dir="runs/nostop")
    outcome = memrun.compare(memrun.CompareRequest(a="runs/bm25", b="runs/nostop"))
    table = memrun.read_run("runs/bm25")

Every name is loaded at its first use (PEP 562), so ``import memrun`` stays as light as
the command line's start-up needs (``tests/test_public_api.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memrun.lazy import exports

__version__ = "0.1.0"

# name -> the module that defines it: the one list of what memrun exports.
_EXPORTS: dict[str, str] = {
    # running and reading
    "run": "memrun.pipeline.api",
    "RunResult": "memrun.pipeline.run",
    "RunStatus": "memrun.core.status",
    "read_run": "memrun.io.reader",
    "RunTable": "memrun.io.reader",
    # comparing
    "compare": "memrun.comparison.api",
    "CompareRequest": "memrun.comparison.api",
    "CompareOutcome": "memrun.comparison.api",
    # the extension points and the data they exchange
    "Arm": "memrun.arms",
    "Benchmark": "memrun.benchmarks",
    "Judge": "memrun.judges",
    "Record": "memrun.records",
    "Item": "memrun.records",
    "Group": "memrun.records",
    "Dataset": "memrun.records",
    "Hit": "memrun.records",
    # the errors (memrun.errors: the tree and the exit codes)
    "MemrunError": "memrun.errors",
    "ConfigError": "memrun.errors",
    "DataError": "memrun.errors",
    "DownloadError": "memrun.errors",
    "ArmError": "memrun.errors",
    "AuthError": "memrun.errors",
    "EndpointFailed": "memrun.errors",
    "EndpointUnreachable": "memrun.errors",
    "CacheError": "memrun.errors",
    "RunTableError": "memrun.errors",
    "RunFailed": "memrun.errors",
    "RunDegraded": "memrun.errors",
    "CallError": "memrun.errors",
    "BudgetExhausted": "memrun.errors",
    "MergeError": "memrun.errors",
    "CompareUsageError": "memrun.errors",
}

__all__ = [
    "__version__",
    "run", "RunResult", "RunStatus", "read_run", "RunTable", "compare", "CompareRequest", "CompareOutcome",
    "Arm", "Benchmark", "Judge", "Record", "Item", "Group", "Dataset", "Hit", "MemrunError",
    "ConfigError", "DataError", "DownloadError", "ArmError", "AuthError", "EndpointFailed", "EndpointUnreachable",
    "CacheError", "RunTableError", "RunFailed", "RunDegraded", "CallError", "BudgetExhausted", "MergeError", "CompareUsageError",
]

if TYPE_CHECKING:  # what type checkers and editors see; at run time __getattr__ loads each at first use
    from memrun.arms import Arm
    from memrun.benchmarks import Benchmark
    from memrun.comparison.api import CompareOutcome, CompareRequest, compare
    from memrun.core.status import RunStatus
    from memrun.errors import (
        ArmError,
        AuthError,
        BudgetExhausted,
        CacheError,
        CallError,
        CompareUsageError,
        ConfigError,
        DataError,
        DownloadError,
        EndpointFailed,
        EndpointUnreachable,
        MemrunError,
        MergeError,
        RunDegraded,
        RunFailed,
        RunTableError,
    )
    from memrun.io.reader import RunTable, read_run
    from memrun.judges import Judge
    from memrun.pipeline.api import run
    from memrun.pipeline.run import RunResult
    from memrun.records import Dataset, Group, Hit, Item, Record


__getattr__ = exports(_EXPORTS, globals())  # an exported name loads at its first use (PEP 562)


def __dir__() -> list[str]:
    """The exported names (not the helpers this module imports)."""
    return sorted(__all__)
