"""Pure statistics for memrun: functions and dataclasses over numpy arrays.

Nothing in this package reads files or prints. Deltas and intervals are fractions
(0.04 is four percentage points); only ``line`` renderings scale to pp.

Every name is loaded at its first use (PEP 562, :func:`memrun.lazy.exports`): a run that
reads the majority label does not load the paired tests, the verdict, the calibration or
the small-cluster intervals (~10 ms)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memrun.lazy import exports

# stdlib only, and ``agreement`` is also its module's name: bound here, so that importing that
# submodule later never rebinds ``memrun.stats.agreement`` to the module
from memrun.stats.agreement import agreement, cohen_kappa

# name -> the module that defines it: what memrun.stats loads at first use (and the two above).
_EXPORTS: dict[str, str] = {
    "ABSTAIN": "memrun.stats.labels",
    "CORRECT": "memrun.stats.labels",
    "DEFAULT_BAND": "memrun.stats.verdict",
    "ERROR": "memrun.stats.labels",
    "MIN_CLUSTERS": "memrun.stats.verdict",
    "MIN_PAIRED_ITEMS": "memrun.stats.verdict",
    "SMALL_CLUSTERS": "memrun.stats.small_clusters",
    "LABELS": "memrun.stats.labels",
    "WRONG": "memrun.stats.labels",
    "BootstrapResult": "memrun.stats.bootstrap",
    "CalibratedResult": "memrun.stats.calibration",
    "ExitCode": "memrun.stats.verdict",
    "JudgeCalibration": "memrun.stats.calibration",
    "McNemarResult": "memrun.stats.paired_tests",
    "SmallClusterResult": "memrun.stats.small_clusters",
    "GateVerdict": "memrun.stats.verdict",
    "WilcoxonResult": "memrun.stats.paired_tests",
    "band_from_null": "memrun.stats.verdict",
    "bell_mccaffrey_df": "memrun.stats.small_clusters",
    "correct_for_judge": "memrun.stats.calibration",
    "cr2_interval": "memrun.stats.small_clusters",
    "decide": "memrun.stats.verdict",
    "flip_rate": "memrun.stats.labels",
    "format_interval": "memrun.stats.bootstrap",
    "holm": "memrun.stats.paired_tests",
    "is_stable": "memrun.stats.labels",
    "majority_label": "memrun.stats.labels",
    "mcnemar_clustered": "memrun.stats.paired_tests",
    "mcnemar_exact": "memrun.stats.paired_tests",
    "paired_bootstrap": "memrun.stats.bootstrap",
    "wilcoxon_signed_rank": "memrun.stats.paired_tests",
    "wilcoxon_skip_reason": "memrun.stats.paired_tests",
}

__all__ = [
    "ABSTAIN",
    "CORRECT",
    "DEFAULT_BAND",
    "ERROR",
    "MIN_CLUSTERS",
    "MIN_PAIRED_ITEMS",
    "SMALL_CLUSTERS",
    "LABELS",
    "WRONG",
    "BootstrapResult",
    "CalibratedResult",
    "ExitCode",
    "JudgeCalibration",
    "McNemarResult",
    "SmallClusterResult",
    "GateVerdict",
    "WilcoxonResult",
    "agreement",
    "band_from_null",
    "bell_mccaffrey_df",
    "cohen_kappa",
    "correct_for_judge",
    "cr2_interval",
    "decide",
    "flip_rate",
    "format_interval",
    "holm",
    "is_stable",
    "majority_label",
    "mcnemar_clustered",
    "mcnemar_exact",
    "paired_bootstrap",
    "wilcoxon_signed_rank",
    "wilcoxon_skip_reason",
]

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads each at first use
    from memrun.stats.bootstrap import BootstrapResult, format_interval, paired_bootstrap
    from memrun.stats.calibration import CalibratedResult, JudgeCalibration, correct_for_judge
    from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, LABELS, WRONG, flip_rate, is_stable, majority_label
    from memrun.stats.paired_tests import (
        McNemarResult,
        WilcoxonResult,
        holm,
        mcnemar_clustered,
        mcnemar_exact,
        wilcoxon_signed_rank,
        wilcoxon_skip_reason,
    )
    from memrun.stats.small_clusters import SMALL_CLUSTERS, SmallClusterResult, bell_mccaffrey_df, cr2_interval
    from memrun.stats.verdict import DEFAULT_BAND, MIN_CLUSTERS, MIN_PAIRED_ITEMS, ExitCode, GateVerdict, band_from_null, decide

__getattr__ = exports(_EXPORTS, globals())


def __dir__() -> list[str]:
    """The exported names (not the helpers this module imports)."""
    return sorted(__all__)
