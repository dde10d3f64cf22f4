"""Pure statistics for memrun: functions and dataclasses over numpy arrays.

Nothing in this package reads files or prints. Deltas and intervals are fractions
(0.04 is four percentage points); only ``line`` renderings scale to pp.
"""

from memrun.stats.agreement import agreement, cohen_kappa
from memrun.stats.bootstrap import BootstrapResult, format_interval, paired_bootstrap
from memrun.stats.calibration import CalibratedResult, JudgeCalibration, correct_for_judge
from memrun.stats.labels import (
    ABSTAIN,
    CORRECT,
    ERROR,
    LABELS,
    WRONG,
    flip_rate,
    is_stable,
    majority_label,
)
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
from memrun.stats.verdict import (
    DEFAULT_BAND,
    MIN_CLUSTERS,
    MIN_PAIRED_ITEMS,
    ExitCode,
    GateVerdict,
    band_from_null,
    decide,
)

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
