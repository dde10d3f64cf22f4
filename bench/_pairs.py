"""Shared by the bench/ scripts: time whole child processes in alternated pairs.

Each side runs as a user runs it, in a fresh subprocess timed from start to exit,
imports included. Bytecode is cached as an installed package's is (pip compiles it at
install; this machine sets PYTHONDONTWRITEBYTECODE, which would make every memrun run
compile its ~100 modules): children write and read .pyc files under a private
PYTHONPYCACHEPREFIX, and :func:`alternate` runs each side once untimed first. Sides alternate (A B A B ...), so drift in the machine's load
hits both; the figure to read is the median of the per-pair ratios.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYCACHE = Path(os.environ.get("TMPDIR", "/tmp")) / f"memrun-bench-pycache-{os.getuid()}"

# VmHWM, not ru_maxrss: Linux carries the parent's ru_maxrss into a forked child.
_WRAPPER = ("import atexit, re, runpy, sys; sys.argv = sys.argv[1:]; "
            "atexit.register(lambda: sys.stderr.write('\\nPEAK_KIB ' + re.search(r'VmHWM:\\s+(\\d+)', "
            "open('/proc/self/status').read()).group(1) + '\\n')); "
            "runpy.run_module(sys.argv[0], run_name='__main__') if not sys.argv[0].endswith('.py') "
            "else runpy.run_path(sys.argv[0], run_name='__main__')")


@dataclass
class Child:
    """One finished child: wall seconds, peak RSS in MiB, its stdout and stderr, and the CPU
    seconds (user + system) it and its own children used: a process that uses threads or
    workers can have a short wall time on a machine with free cores and a long CPU time."""

    seconds: float
    peak_mib: float
    stdout: str
    stderr: str
    returncode: int = 0
    cpu_seconds: float = 0.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(cmd: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None,
              ok: Sequence[int] = (0,)) -> Child:
    """Run ``cmd`` (a module name such as ``memrun`` or a ``.py`` path, then its arguments)
    under this Python; raises SystemExit with its stderr when its exit code is not in ``ok``
    (only 0 by default: a bench never counts a run that stopped early as a fast one)."""
    full_env = {**os.environ, "PYTHONPYCACHEPREFIX": str(PYCACHE), **(env or {})}
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=full_env)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    peak = [line for line in proc.stderr.splitlines() if line.startswith("PEAK_KIB ")]
    if proc.returncode not in ok or not peak:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return Child(wall, int(peak[-1].split()[1]) / 1024, proc.stdout, proc.stderr, proc.returncode, cpu)


@dataclass
class Pairs:
    """Alternated runs of two sides; ``ratio`` is the median of the per-pair ratios a/b."""

    a: list[Child] = field(default_factory=list)
    b: list[Child] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(x.seconds / y.seconds for x, y in zip(self.a, self.b))

    def median(self, side: str) -> float:
        return statistics.median(c.seconds for c in getattr(self, side))

    def median_cpu(self, side: str) -> float:
        return statistics.median(c.cpu_seconds for c in getattr(self, side))

    def peak(self, side: str) -> float:
        return max(c.peak_mib for c in getattr(self, side))


def alternate(a: Callable[[], Child], b: Callable[[], Child], pairs: int) -> Pairs:
    """Run ``a`` and ``b`` once each untimed (bytecode, page cache), then ``a`` then ``b``,
    ``pairs`` times (A B A B ...)."""
    a(), b()
    out = Pairs()
    for _ in range(pairs):
        out.a.append(a())
        out.b.append(b())
    return out


def line(label: str, pairs: Pairs, target: str, met: bool) -> str:
    """One result line: medians of both sides, the median pair ratio, target, met/MISSED."""
    return (f"{label:34}{pairs.median('a'):9.2f}{pairs.median('b'):9.2f}{pairs.ratio:8.2f}"
            f"{target:>12}  {'met' if met else 'MISSED'}")


HEADER = f"{'':34}{'memrun s':>9}{'peer s':>9}{'ratio':>8}{'target':>12}"
