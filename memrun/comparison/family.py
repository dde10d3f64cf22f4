"""k arms against one baseline, read as one family: ``memrun compare BASE A B ...`` and
``memrun sweep DIR --baseline JOB`` both go through :func:`compare_family`.

Each arm is compared with the baseline by :func:`memrun.comparison.api.compare` (its own
gate, unchanged), then the arms' one-sided gate p-values go through Holm's step-down
(:mod:`memrun.stats.family`): an arm is a winner only when its own gate passes *and* the
family's does, so the chance that any null arm is marked a winner stays at 2.5%
family-wise, however many arms are read at once. A single pairwise compare is not a
family and is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrun.comparison.api import CompareRequest, compare
from memrun.stats import ExitCode
from memrun.stats.family import FAMILY_ALPHA, METHOD, family_verdicts, holm_adjusted


@dataclass(frozen=True)
class Arm:
    """One arm of a family: ``label`` (a sweep's job number or a run's path), ``overrides``
    (what sets it apart, for the table) and the request comparing it with the baseline;
    ``not_compared``: why there is nothing to compare (a sweep's job that failed), listed as
    the arm's ``error`` rather than left out of the family (``request`` is then None)."""

    label: Any
    overrides: str
    request: CompareRequest | None
    not_compared: str | None = None


def compare_family(baseline: Any, baseline_overrides: str, arms: Sequence[Arm], *,
                   need_comparable: bool = True) -> dict[str, Any]:
    """Compare every arm with the baseline and read the arms as one family (module docstring).

    Args:
        baseline, baseline_overrides: the baseline's label and what sets it apart.
        arms: the arms, each with its request (A = the baseline, B = the arm).
        need_comparable: an arm whose runs differ in a comparability field (a comparison
            shown under ``--allow-noncomparable``, exit code 3) cannot be a winner; a
            sweep, whose jobs differ by their overrides on purpose, passes False.

    Returns:
        A JSON-ready dict: ``baseline``, ``baseline_overrides``, ``k`` (arms compared),
        ``alpha``, ``method`` and ``arms``: per arm ``job`` (its label), ``overrides``,
        ``delta``/``low``/``high`` (fractions; low/high None and ``unreadable`` its reason when the
        interval cannot be read), ``outcome`` (its own gate's), ``p_pass`` (its
        one-sided gate p-value; 1 when the gate was held), ``holm_p``, ``winner`` and
        ``differs`` (fields that differ); or ``error`` (why it was not compared).

    Raises:
        MemrunError: from :func:`compare` (an unreadable run, a bad metric).
    """
    rows: list[dict[str, Any]] = []
    own: list[bool] = []
    for arm in arms:
        if arm.request is None or arm.not_compared:
            rows.append({"job": arm.label, "overrides": arm.overrides, "error": arm.not_compared or "no run to compare"})
            continue
        outcome = compare(arm.request)
        result = outcome.comparison
        if result is None:
            rows.append({"job": arm.label, "overrides": arm.overrides, "error": outcome.refusal or "not comparable"})
            continue
        o, v = result.overall, result.verdict
        unreadable = o.get("unreadable")  # a degenerate interval or too few clusters: no bounds printed
        rows.append({"job": arm.label, "overrides": arm.overrides, "delta": o["delta"],
                     "low": None if unreadable else v["low"], "high": None if unreadable else v["high"],
                     "unreadable": unreadable, "outcome": v["outcome"], "p_pass": 1.0 if v.get("detail") else o["p_pass"],
                     "differs": [d.field for d in result.differences]})
        own.append(v["outcome"] == "pass" and (outcome.exit_code != ExitCode.REFUSAL or not need_comparable))
    compared = [r for r in rows if "error" not in r]
    p = [r["p_pass"] for r in compared]
    for r, adjusted, win in zip(compared, holm_adjusted(p), family_verdicts(p, own)):
        r["holm_p"], r["winner"] = adjusted, win
    return {"baseline": baseline, "baseline_overrides": baseline_overrides, "k": len(compared),
            "alpha": FAMILY_ALPHA, "method": METHOD, "arms": rows}


def family_exit_code(family: dict[str, Any]) -> int:
    """The family's exit code (:class:`memrun.stats.ExitCode`): 0 when an arm is a winner;
    else 3 when an arm could not be compared, 1 when every arm's own gate failed, 2 otherwise."""
    arms = family["arms"]
    if any(a.get("winner") for a in arms):
        return int(ExitCode.PASS)
    if any("error" in a for a in arms):
        return int(ExitCode.REFUSAL)
    if arms and all(a["outcome"] == "fail" for a in arms):
        return int(ExitCode.FAIL)
    return int(ExitCode.UNRESOLVED)
