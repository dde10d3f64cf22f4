"""``memrun compare --baseline auto B``: find run A among the runs already made.

The baseline is the newest *finished* run (status ``complete``) under the runs folder
(``outputs/`` or ``--runs-dir``) whose instrument matches B's on every comparability field
except the ``--treatment`` fields, and whose configuration differs from B's (a run of B's
own configuration is a re-run, not a baseline). Newest: the instrument's ``finished_at``,
then the file's modification time. No such run is a usage error (exit 4): there is nothing
to compare with, which says nothing about B.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memrun.core.instrument import Instrument
from memrun.errors import MemrunError
from memrun.io.reader import read_instrument
from memrun.io.writer import ITEMS_FILE
from memrun.metrics.retrieval import depth_read


def _candidates(runs_dir: Path) -> list[tuple[Path, Instrument]]:
    """(run folder, instrument) of every readable run under ``runs_dir``."""
    found = []
    for items in runs_dir.rglob(ITEMS_FILE):
        try:
            found.append((items.parent, read_instrument(items.parent)))
        except Exception:  # noqa: BLE001 - a damaged run is no baseline; compare reports B's own problems
            continue
    return found


def find_baseline(b: str | Path, runs_dir: str | Path, treatments: Sequence[str],
                  metric: str | None = None) -> tuple[Path, str]:
    """(run folder of A, one line saying why it was chosen). ``metric``: what the comparison
    reads (None: the whole ranking), which decides whether another depth (``arm.top_k``) fits
    (:meth:`memrun.core.instrument.Instrument.diff`). Raises MemrunError when none fits."""
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise MemrunError(f"--baseline auto: no runs folder {runs_dir}; pass --runs-dir DIR (where the runs are)")
    target = read_instrument(b)
    b_folder = Path(b).resolve() if Path(b).is_dir() else Path(b).resolve().parent
    fits = []
    deeper = 0  # runs that differ from B only in depth, which the metric reads
    try:
        reads = depth_read(metric) if metric else None
        for folder, inst in _candidates(runs_dir):
            if folder.resolve() == b_folder or inst.run_id == target.run_id or inst.status != "complete":
                continue
            differences = inst.diff(target, list(treatments), reads)
            if differences or not inst.configuration_diff(target):
                deeper += bool(differences) and {d.field for d in differences} <= set(Instrument.depth_fields())
                continue
            fits.append((inst.finished_at or "", (folder / ITEMS_FILE).stat().st_mtime, folder, inst))
    except ValueError as exc:  # an unknown --treatment or --metric
        raise MemrunError(str(exc)) from exc
    if not fits:
        named = f" except {', '.join(treatments)}" if treatments else ""
        depth = (f"; {deeper} finished run(s) differ only in top_k (arm.top_k), which {metric or 'the metric'} reads: pass "
                 "--treatment top_k, or a metric @K within both depths" if deeper else "")
        raise MemrunError(f"--baseline auto: no finished run under {runs_dir} is comparable to {b}{named} with another "
                          f"configuration{depth}; run the baseline first, or name A explicitly")
    _, _, folder, inst = max(fits, key=lambda f: (f[0], f[1]))
    keys = ", ".join(k for k, _, _ in inst.configuration_diff(target))
    return folder, (f"baseline: {folder} (run {inst.run_id}, finished {inst.finished_at}), the newest of "
                    f"{len(fits)} comparable finished run(s); configuration differs in {keys}")
