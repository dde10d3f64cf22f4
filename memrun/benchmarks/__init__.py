"""Benchmarks: load a dataset into :class:`memrun.records.Dataset` groups.

A benchmark is any class named by ``_target_`` in ``conf/benchmark/<name>.yaml`` whose
constructor takes the config's keys (except ``name``) and which implements::

    def load(self, data_dir: pathlib.Path) -> memrun.records.Dataset

(:data:`BENCHMARK_HOOKS`, checked when it is built: :func:`check_benchmark`).

Loading resolves the file (downloading and checking its sha256 when it is missing, see
:mod:`memrun.benchmarks.download`), normalizes what can be parsed unambiguously, keeps
raw values beside normalized ones, and counts what it could not resolve.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from memrun.core.hooks import Hook, check
from memrun.errors import ConfigError
from memrun.records import Dataset


@runtime_checkable
class Benchmark(Protocol):
    """What the run needs from a benchmark."""

    def load(self, data_dir: Path) -> Dataset:
        """Load the dataset, resolving files under ``data_dir``. Raises DataError."""
        ...


BENCHMARK_HOOKS: tuple[Hook, ...] = (Hook("load", ("data_dir",), required=True, sync=True),)
"""The benchmark contract as the run checks it: ``load`` is its one hook."""


def check_benchmark(benchmark: object, name: str | None = None) -> Benchmark:
    """``benchmark``, held to :data:`BENCHMARK_HOOKS` (``name``: its ``_target_``, for the
    error). Raises ConfigError, one line naming the missing or mistyped hook."""
    check(benchmark, BENCHMARK_HOOKS, "benchmark", "memrun.benchmarks (docs/benchmarks.md)", ConfigError, name=name)
    return benchmark  # type: ignore[return-value]  # checked: it has load(data_dir)


def count_differences(seen: Mapping[str, int], expected: Mapping[str, int]) -> str | None:
    """``"a: 3 (expected 4), ..."`` for the keys whose counts differ, None when they all match.

    For the loaders' warning that a file's per-category counts are not the published ones.
    """
    diff = [
        f"{key}: {seen.get(key, 0)} (expected {expected.get(key, 0)})"
        for key in sorted(set(seen) | set(expected))
        if seen.get(key, 0) != expected.get(key, 0)
    ]
    return ", ".join(diff) or None
