"""Statistics of a paired comparison: the verdict and everything reported beside it.

Computes, from :class:`memrun.compare.pairing.Paired`: wins/ties/losses, discordance,
the paired clustered bootstrap of B minus A (overall, per category, stable-only), the
verdict, exact McNemar on binary scores, Wilcoxon over per-repeat means, and the judge
correction when a calibration is given. Returns plain data; reports render it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memrun.compare.pairing import Paired
from memrun.instrument import Difference
from memrun.stats import (
    BootstrapResult,
    ExitCode,
    JudgeCalibration,
    correct_for_judge,
    decide,
    mcnemar_exact,
    paired_bootstrap,
    wilcoxon_seeds,
    wilcoxon_skip_reason,
)


@dataclass(frozen=True)
class Settings:
    """How to decide: fractions for deltas (the CLI converts pp)."""

    metric: str
    cluster_by: str | None
    resamples: int = 10_000
    seed: int = 7
    min_delta: float = 0.0
    band: float = 0.04
    treatments: tuple[str, ...] = ()
    calibration: JudgeCalibration | None = None


FEW_CLUSTERS = 10  # below this a cluster bootstrap understates the interval's width


def _category_order(cat: str) -> tuple[int, int | str]:
    """Integer categories (LoCoMo) in numeric order, then the rest alphabetically."""
    return (0, int(cat)) if cat.lstrip("-").isdigit() else (1, cat)


def _counts(d: np.ndarray) -> dict[str, int]:
    return {"wins": int((d > 0).sum()), "ties": int((d == 0).sum()), "losses": int((d < 0).sum())}


def _block(a: np.ndarray, b: np.ndarray, clusters: list[str] | None, s: Settings) -> dict[str, Any]:
    d = b - a
    boot = paired_bootstrap(d, clusters, resamples=s.resamples, seed=s.seed)
    return {
        "n_items": int(d.size),
        "n_clusters": boot.n_clusters,
        **_counts(d),
        "a_mean": float(a.mean()),
        "b_mean": float(b.mean()),
        "delta": boot.mean,
        "low": boot.low,
        "high": boot.high,
        "bootstrap": boot,
    }


@dataclass
class Comparison:
    """All figures of one comparison (fractions; reports scale to pp)."""

    run_a: str
    run_b: str
    axis: str | None
    metric: str
    denominator: str | None
    settings: Settings
    differences: list[Difference]
    overall: dict[str, Any]
    verdict: dict[str, Any]
    discordance: float
    per_category: dict[str, dict[str, Any]]
    stable_only: dict[str, Any] | None
    n_unstable: int
    mcnemar: dict[str, Any] | None
    wilcoxon: dict[str, Any] | None
    wilcoxon_skipped: str | None
    calibrated: dict[str, Any] | None
    flip_rate_a: float | None
    flip_rate_b: float | None
    only_a: int
    only_b: int
    excluded: dict[str, int]
    warnings: list[str] = field(default_factory=list)

    @property
    def noncomparable(self) -> bool:
        return bool(self.differences)

    @property
    def exit_code(self) -> int:
        """The verdict's exit code; 3 (refused) for a forced non-comparable comparison."""
        return int(ExitCode.REFUSAL) if self.noncomparable else int(self.verdict["exit_code"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; bootstrap objects flattened to their fields."""

        def clean(value: Any) -> Any:
            if isinstance(value, BootstrapResult):
                return value.to_dict()
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            if isinstance(value, Difference):
                return asdict(value)
            return value

        out = {k: clean(v) for k, v in self.__dict__.items() if k != "settings"}
        out["settings"] = {k: v for k, v in asdict(self.settings).items() if k != "calibration"}
        out["settings"]["calibration"] = self.settings.calibration.to_dict() if self.settings.calibration else None
        out["noncomparable"] = self.noncomparable
        out["exit_code"] = self.exit_code
        return out


def analyze(paired: Paired, settings: Settings, *, run_a: str, run_b: str, axis: str | None,
            denominator: str | None, differences: list[Difference]) -> Comparison:
    """Run every statistic on ``paired`` (see the module docstring)."""
    a, b, clusters = paired.a, paired.b, paired.clusters
    overall = _block(a, b, clusters, settings)
    decided_on: Any = overall["bootstrap"]
    calibrated = None
    warnings: list[str] = []
    if settings.calibration is not None:
        corrected = correct_for_judge(overall["bootstrap"], settings.calibration)
        calibrated = corrected.to_dict()
        if corrected.warning:
            warnings.append(corrected.warning)
        if corrected.corrected:
            decided_on = corrected
    verdict = decide(decided_on, min_delta=settings.min_delta, band=settings.band)
    if clusters is not None and overall["n_clusters"] < FEW_CLUSTERS:
        warnings.append(f"only {overall['n_clusters']} clusters: too few clusters make the interval too narrow; "
                        "read the bound with care")

    per_category: dict[str, dict[str, Any]] = {}
    cats = np.array(paired.categories)
    for cat in sorted(set(paired.categories), key=_category_order):
        mask = cats == cat
        sub_clusters = [c for c, m in zip(clusters, mask) if m] if clusters is not None else None
        per_category[cat] = {"label": paired.category_labels.get(cat, cat), **_block(a[mask], b[mask], sub_clusters, settings)}

    stable_only = None
    n_unstable = int((~paired.stable).sum())
    if n_unstable and paired.stable.any():
        mask = paired.stable
        sub_clusters = [c for c, m in zip(clusters, mask) if m] if clusters is not None else None
        stable_only = _block(a[mask], b[mask], sub_clusters, settings)

    binary = bool(np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all())
    mcnemar = mcnemar_exact(a.astype(bool), b.astype(bool)).to_dict() if binary else None
    common = sorted(set(paired.a_scores.repeat_means) & set(paired.b_scores.repeat_means))
    seed_a = [paired.a_scores.repeat_means[r] for r in common]
    seed_b = [paired.b_scores.repeat_means[r] for r in common]
    wilcoxon = wilcoxon_seeds(seed_a, seed_b) if len(common) >= 2 else None
    skipped = None if wilcoxon else (wilcoxon_skip_reason(seed_a, seed_b) if len(common) >= 2 else
                                     "each run needs at least 2 repeats")
    return Comparison(
        run_a=run_a,
        run_b=run_b,
        axis=axis,
        metric=settings.metric if axis != "accuracy" else "majority label (correct = 1)",
        denominator=denominator,
        settings=settings,
        differences=differences,
        overall=overall,
        verdict=verdict.to_dict(),
        discordance=float((a != b).mean()),
        per_category=per_category,
        stable_only=stable_only,
        n_unstable=n_unstable,
        mcnemar=mcnemar,
        wilcoxon=wilcoxon.to_dict() if wilcoxon else None,
        wilcoxon_skipped=skipped,
        calibrated=calibrated,
        flip_rate_a=paired.a_scores.flip_rate,
        flip_rate_b=paired.b_scores.flip_rate,
        only_a=len(paired.only_a),
        only_b=len(paired.only_b),
        excluded=paired.excluded,
        warnings=warnings,
    )
