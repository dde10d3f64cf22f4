"""The gate's verdict on a paired interval, and the process exit codes.

Exit codes (the one place they are defined; the CLI imports ``ExitCode``):

====  ==============  =====================================================
code  name            meaning
====  ==============  =====================================================
0     ``PASS``        the interval's lower bound is above the threshold
1     ``FAIL``        the interval's upper bound is below the threshold
2     ``UNRESOLVED``  the interval reaches the threshold on both sides
3     ``REFUSAL``     the CLI refused to compare (e.g. non-comparable runs)
4     ``USAGE_ERROR`` bad command line or configuration
====  ==============  =====================================================

Everything here is in fraction units (0.04 is four percentage points); callers
convert percentage-point flags by dividing by 100.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import IntEnum
from typing import Any, Protocol

PASS = "pass"
FAIL = "fail"
UNRESOLVED = "unresolved"

ABOVE_THRESHOLD = "lower_bound_above_threshold"
BELOW_THRESHOLD = "upper_bound_below_threshold"
INSIDE_NULL_BAND = "inside_null_band"
UNDERPOWERED = "underpowered"
TOO_FEW_ITEMS = "too_few_items"
TOO_FEW_CLUSTERS = "too_few_clusters"
DEGENERATE = "degenerate_interval"
"""The interval cannot be read: zero width (every item tied, or every cluster's mean
equal), zero variance, or fewer than 1 degree of freedom."""

MIN_PAIRED_ITEMS = 10
"""Fewer paired items than this never pass or fail: one item moves the mean by 10 pp or
more, and the bootstrap of a handful of items has no resolution (the methodology's set
sizes: a 15-question set "catches collapse only")."""
MIN_CLUSTERS = 3
"""Fewer clusters than this never pass or fail. One cluster has no between-cluster
variance at all; two give a variance from a single contrast, a t interval on at most one
degree of freedom (critical value 12.7). In ``bench/bench_gate_error.py`` the CR2
interval with Bell-McCaffrey degrees of freedom holds its level from 2 clusters when the
cluster effects are normal (2 clusters: 3.8 / 2.0 / 2.7% at ICC 0 / 0.05 / 0.2), passes
5-6% with skewed effects (``--skewed``), and detects little (a true +5 pp gain passes in
8-10% of runs). Skewed effects break every method at 3-10 clusters too (6-10%), so the
simulation bounds what a floor can do rather than picking it: 3 is a judgment that a
verdict needs more than one contrast, not a guarantee."""


def too_few_clusters(n_clusters: int | None) -> str | None:
    """Why no interval is read over ``n_clusters`` clusters when they are fewer than
    :data:`MIN_CLUSTERS`, else None (None too when the count is unknown). The one wording of
    a run's intervals (:mod:`memrun.stats.mean_interval`), the report's
    (:func:`memrun.report.model.why_no_interval`) and compare's shown blocks."""
    if n_clusters is None or n_clusters >= MIN_CLUSTERS:
        return None
    return (f"{n_clusters} cluster(s): an interval needs at least {MIN_CLUSTERS} (one cluster is redrawn whole, "
            "two give a single contrast)")

DEFAULT_BAND = 0.04
"""Default null band, 4.0 pp as a fraction. Measure your own with ``band_from_null``."""


class ExitCode(IntEnum):
    """Process exit codes of memrun commands that end in a verdict."""

    PASS = 0
    FAIL = 1
    UNRESOLVED = 2
    REFUSAL = 3
    USAGE_ERROR = 4


_EXIT_FOR_OUTCOME = {PASS: ExitCode.PASS, FAIL: ExitCode.FAIL, UNRESOLVED: ExitCode.UNRESOLVED}


class Interval(Protocol):
    """Anything with ``low`` and ``high`` bounds: BootstrapResult, CalibratedResult."""

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...


@dataclass(frozen=True)
class GateVerdict:
    """Outcome of ``decide``: ``outcome`` is ``"pass"``, ``"fail"`` or
    ``"unresolved"``; ``reason`` is one of ``lower_bound_above_threshold``,
    ``upper_bound_below_threshold``, ``inside_null_band``, ``underpowered``,
    ``too_few_items``, ``too_few_clusters``, ``degenerate_interval`` or a reason the
    caller held the verdict for (error shares, unpaired items, a run not whole); ``detail`` says it in
    words whenever the verdict was held. ``low``/``high`` are the interval decided on; all values
    are fractions."""

    outcome: str
    reason: str
    min_delta: float
    band: float
    low: float
    high: float
    detail: str | None = None

    @property
    def exit_code(self) -> ExitCode:
        """0 for pass, 1 for fail, 2 for unresolved (see the module docstring)."""
        return _EXIT_FOR_OUTCOME[self.outcome]

    @property
    def passed(self) -> bool:
        """True only for a pass."""
        return self.outcome == PASS

    def to_dict(self) -> dict[str, Any]:
        """The fields plus ``exit_code`` as a JSON-ready dict."""
        return {**asdict(self), "exit_code": int(self.exit_code)}


def decide(
    result: Interval, *, min_delta: float = 0.0, band: float = DEFAULT_BAND,
    n_items: int | None = None, n_clusters: int | None = None,
    hold: tuple[str, str] | None = None,
) -> GateVerdict:
    """Judge a paired B-minus-A interval against a threshold.

    Args:
        result: an interval with ``low`` and ``high`` in fraction units, normally a
            ``BootstrapResult`` or a judge-corrected ``CalibratedResult``.
        min_delta: threshold in fractions; 0 asks "is B better", a negative value
            is a non-inferiority gate ("B is at most this much worse").
        band: half-width of the null band in fractions (>= 0); the noise floor.
        n_items, n_clusters: the paired items and clusters behind the interval, when
            known; below :data:`MIN_PAIRED_ITEMS` items or :data:`MIN_CLUSTERS`
            clusters the verdict is ``unresolved`` (``too_few_items`` /
            ``too_few_clusters``) whatever the interval says.
        hold: (reason, words) when the caller found the interval unreadable
            (:data:`DEGENERATE`) or the data unfit to decide on (too many errors, too
            few paired items): the verdict is ``unresolved`` with that reason. A
            zero-width interval (low == high) is held as :data:`DEGENERATE` too.

    Returns:
        ``unresolved`` on too little evidence (above); else ``pass`` when low > min_delta (strictly: a bound that only reaches the
        threshold does not pass); ``fail`` when high < min_delta; otherwise
        ``unresolved``, with reason ``inside_null_band`` when -band <= low and
        high <= band, else ``underpowered``.

    Raises:
        ValueError: a non-finite bound (unless held), threshold or band, a negative
            band, or low > high.

    Source: the memrun benchmark methodology, "The verdict".
    """
    low, high = float(result.low), float(result.high)
    min_delta, band = float(min_delta), float(band)
    short = evidence_shortfall(n_items, n_clusters) or hold
    if short:
        return GateVerdict(UNRESOLVED, short[0], min_delta, band, low, high, short[1])
    if not all(math.isfinite(x) for x in (low, high, min_delta, band)):
        raise ValueError(f"decide needs finite values, got low={low}, high={high}, "
                         f"min_delta={min_delta}, band={band}")
    if band < 0:
        raise ValueError(f"band must be >= 0, got {band}")
    if low > high:
        raise ValueError(f"interval is inverted: low={low} > high={high}")
    if high - low <= 1e-12:  # zero width, up to float noise
        return GateVerdict(UNRESOLVED, DEGENERATE, min_delta, band, low, high,
                       f"the interval has zero width ([{100 * low:+.2f}, {100 * high:+.2f}] pp): nothing varies "
                       "between resamples, so it says nothing about the uncertainty")
    if low > min_delta:
        outcome, reason = PASS, ABOVE_THRESHOLD
    elif high < min_delta:
        outcome, reason = FAIL, BELOW_THRESHOLD
    elif -band <= low and high <= band:
        outcome, reason = UNRESOLVED, INSIDE_NULL_BAND
    else:
        outcome, reason = UNRESOLVED, UNDERPOWERED
    return GateVerdict(outcome, reason, min_delta, band, low, high)


def evidence_shortfall(n_items: int | None, n_clusters: int | None) -> tuple[str, str] | None:
    """(reason, words) when too few paired items or clusters back an interval, else None.

    Args:
        n_items: paired items (None: unknown, not checked).
        n_clusters: clusters the bootstrap resampled (None: unknown, not checked).
    """
    if n_clusters is not None and n_clusters < MIN_CLUSTERS:
        return TOO_FEW_CLUSTERS, (f"{n_clusters} cluster(s): a verdict needs at least {MIN_CLUSTERS} (with fewer, "
                                  "no interval holds its error rate: bench/bench_gate_error.py); run more clusters "
                                  "(more conversations or histories)")
    if n_items is not None and n_items < MIN_PAIRED_ITEMS:
        return TOO_FEW_ITEMS, (f"{n_items} paired item(s): a verdict needs at least {MIN_PAIRED_ITEMS} "
                               f"(one item moves the mean by {100 / max(n_items, 1):.0f} pp)")
    return None


def band_from_null(result: Interval) -> float:
    """Null band measured from a same-configuration run (A against A2).

    Args:
        result: the null run's interval, fraction units.

    Returns:
        The interval's wider side, ``max(|low|, |high|)``, in fractions; pass it
        (times 100 for a pp flag) as the band of the real comparison.

    Raises:
        ValueError: a non-finite bound.

    Source: the memrun benchmark methodology, "Measure your own band".
    """
    low, high = float(result.low), float(result.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"null interval must be finite, got [{low}, {high}]")
    return max(abs(low), abs(high))
