"""Vectorised gate methods for the error-rate study (bench/bench_gate_error.py).

Each function takes a batch of replications ``x`` (reps, n_items) of paired deltas and a
:class:`memrun.stats.simulation.Design`, and returns a boolean (reps,) array: True where the
method's gate says PASS at threshold 0 (lower bound of a two-sided 95% interval above 0,
i.e. a one-sided 2.5% test). Under a true delta of 0 the mean of that array is the false-pass
rate; under a true gain it is the power.

Methods:
- ``today``: memrun before issue 20: the wider of the percentile cluster bootstrap and
  CR2 with t(G - 1) below 30 clusters; a zero-width interval may pass.
- ``cr2_bm``: CR2 with Bell-McCaffrey degrees of freedom alone (no degenerate guard).
- ``wcr_rademacher`` / ``wcr_webb``: restricted wild cluster bootstrap-t (WCR; Cameron,
  Gelbach & Miller 2008; MacKinnon & Webb 2017), null imposed (delta = 0), CR2 t
  statistic, one-sided p < 0.025. Rademacher weights are enumerated exactly (2^G sign
  vectors) up to 12 clusters; Webb's six-point weights are drawn (``WILD_DRAWS``).
  Vectorised here (``wildboottest`` 0.3.2, which needs numba, gave the same two-sided
  p-values under full Rademacher enumeration on the inputs tried, up to ties at the
  boundary; too slow for 600 replications a cell).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import stdtrit

from memrun.stats.simulation import Design
from memrun.stats.small_clusters import bell_mccaffrey_df

BOOT_RESAMPLES = 1000
WILD_DRAWS = 999
WEBB = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])


def cluster_sums(x: np.ndarray, design: Design) -> tuple[np.ndarray, np.ndarray]:
    """(reps, G) per-cluster delta sums and the (G,) sizes; clusters are consecutive items."""
    starts = np.concatenate([[0], np.cumsum(design.sizes)[:-1]])
    return np.add.reduceat(x, starts, axis=1), np.asarray(design.sizes, dtype=np.float64)


def cr2_se(sums: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, CR2 standard error), each (reps,), from cluster sums (..., G) and sizes (G,)."""
    n = sizes.sum()
    mean = sums.sum(axis=-1) / n
    resid = sums - mean[..., None] * sizes
    return mean, np.sqrt((resid**2 / (1 - sizes / n)).sum(axis=-1)) / n


def cr2_pass(x: np.ndarray, design: Design, df: float) -> np.ndarray:
    """CR2 interval on ``df`` degrees of freedom: lower bound above 0."""
    mean, se = cr2_se(*cluster_sums(x, design))
    return mean - stdtrit(df, 0.975) * se > 0


def bootstrap_low(x: np.ndarray, design: Design, rng: np.random.Generator,
                  resamples: int = BOOT_RESAMPLES) -> np.ndarray:
    """(reps,) 2.5th percentile of the (stratified) percentile cluster bootstrap."""
    sums, sizes = cluster_sums(x, design)
    strata = np.zeros(len(sizes), dtype=int) if design.strata is None else np.asarray(design.strata)
    lows = np.empty(len(x))
    chunk = max(1, 4_000_000 // (resamples * len(sizes)))
    for start in range(0, len(x), chunk):
        s = sums[start:start + chunk]
        tot, wt = np.zeros((len(s), resamples)), np.zeros((len(s), resamples))
        for st in np.unique(strata):
            idx = np.flatnonzero(strata == st)
            counts = rng.multinomial(len(idx), np.full(len(idx), 1 / len(idx)), size=(len(s), resamples))
            tot += np.einsum("rbg,rg->rb", counts, s[:, idx])
            wt += counts @ sizes[idx]
        lows[start:start + chunk] = np.quantile(tot / wt, 0.025, axis=1, method="inverted_cdf")
    return lows


def today(x: np.ndarray, design: Design, rng: np.random.Generator) -> np.ndarray:
    """memrun's gate before issue 20 (module docstring)."""
    g = len(design.sizes)
    low = bootstrap_low(x, design, rng)
    if g < 30:
        mean, se = cr2_se(*cluster_sums(x, design))
        low = np.minimum(low, mean - stdtrit(g - 1, 0.975) * se)
    return low > 0


def cr2_bm(x: np.ndarray, design: Design, rng: np.random.Generator) -> np.ndarray:
    """CR2 with Bell-McCaffrey degrees of freedom."""
    return cr2_pass(x, design, bell_mccaffrey_df(design.sizes))


def _wild(x: np.ndarray, design: Design, weights: np.ndarray) -> np.ndarray:
    """Restricted wild cluster bootstrap-t with weight vectors ``weights`` (W, G)."""
    sums, sizes = cluster_sums(x, design)
    mean, se = cr2_se(sums, sizes)
    t = np.where(se > 0, mean / np.where(se > 0, se, 1), 0.0)
    passed = np.zeros(len(x), dtype=bool)
    chunk = max(1, 4_000_000 // (len(weights) * len(sizes)))
    for start in range(0, len(x), chunk):
        star = sums[start:start + chunk, None, :] * weights[None]  # null imposed: residuals are d itself
        m, s = cr2_se(star, sizes)
        tstar = np.where(s > 0, m / np.where(s > 0, s, 1), 0.0)
        p = (tstar >= t[start:start + chunk, None] - 1e-12).mean(axis=1)
        passed[start:start + chunk] = (p < 0.025) & (se[start:start + chunk] > 0)
    return passed


def wcr_rademacher(x: np.ndarray, design: Design, rng: np.random.Generator) -> np.ndarray:
    """WCR with Rademacher weights (enumerated up to 12 clusters)."""
    g = len(design.sizes)
    if g <= 12:
        w = np.array(list(itertools.product((-1.0, 1.0), repeat=g)))
    else:
        w = rng.choice((-1.0, 1.0), size=(WILD_DRAWS, g))
    return _wild(x, design, w)


def wcr_webb(x: np.ndarray, design: Design, rng: np.random.Generator) -> np.ndarray:
    """WCR with Webb's six-point weights."""
    return _wild(x, design, rng.choice(WEBB, size=(WILD_DRAWS, len(design.sizes))))


METHODS = {"today": today, "cr2_bm": cr2_bm, "wcr_rademacher": wcr_rademacher, "wcr_webb": wcr_webb}
