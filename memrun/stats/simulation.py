"""Monte-Carlo paired outcomes with a cluster random effect: how the gate's error rate and
power are measured (``bench/bench_gate_error.py``, ``tests/stats/test_gate_error.py``,
the check of :mod:`memrun.stats.power`).

Model. An item i of cluster g has a paired delta d_i = b_i - a_i in {-1, 0, +1} (two
binary outcomes). Cluster g carries a random effect m_g ~ Normal(0, tau^2), clipped to
[-0.95, 0.95], on B - A; its items' deltas are independent given the cluster with

    P(d = +1 | g) = (q_g + mu_g) / 2,   P(d = -1 | g) = (q_g - mu_g) / 2,
    mu_g = clip(delta + m_g),            q_g = min(1, q0 + |mu_g|),

so E[d | g] = mu_g (true mean delta ``delta`` when m_g is symmetric and unclipped) and
q_g, the share of discordant pairs, grows with the cluster's effect (a cluster where B
differs more from A disagrees more often). The intra-cluster correlation of d at
delta = 0 is ICC = tau^2 / (q0 + tau * sqrt(2 / pi)); :func:`tau_for_icc` inverts it.
q0 = 0.2: a fifth of the pairs disagree when the arms are alike (LoCoMo bm25 variants
disagree on 10-25% of questions).

Optional ``groups``: a second, hidden level (LongMemEval's questions sharing evidence
sessions): the random effect then sits on the groups and ``clusters`` are what the gate
is told.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BASE_DISCORDANCE = 0.2
"""q0: the share of discordant pairs in a cluster without effect."""

LOCOMO_SIZES = (152, 81, 152, 199, 178, 123, 150, 191, 156, 158)
"""Questions of categories 1-4 in each of LoCoMo's ten conversations (locomo10.json)."""
LONGMEMEVAL_TYPES = (70, 56, 30, 133, 133, 78)
"""LongMemEval_s question counts per question type (500 questions)."""


def tau_for_icc(icc: float, q0: float = BASE_DISCORDANCE) -> float:
    """The random effect's standard deviation tau giving intra-cluster correlation ``icc``
    of the deltas at zero true delta (module docstring); 0 for icc <= 0. Raises
    ValueError for icc >= 1."""
    if icc <= 0:
        return 0.0
    if icc >= 1:
        raise ValueError(f"icc must be below 1, got {icc}")
    b = icc * math.sqrt(2 / math.pi)
    return (b + math.sqrt(b * b + 4 * icc * q0)) / 2


@dataclass(frozen=True)
class Design:
    """A study design: ``sizes`` of the clusters the gate sees; optional ``strata`` (one
    stratum code per cluster) and ``hidden`` (the random effect sits on runs of this many
    consecutive items of one stratum, whatever the clusters; 0: on the clusters)."""

    name: str
    sizes: tuple[int, ...]
    strata: tuple[int, ...] | None = None
    hidden: int = 0

    @property
    def n_items(self) -> int:
        """Items in one replication."""
        return int(sum(self.sizes))

    def cluster_codes(self) -> np.ndarray:
        """Shape (n_items,): each item's cluster number."""
        return np.repeat(np.arange(len(self.sizes)), self.sizes)

    def stratum_codes(self) -> np.ndarray | None:
        """Shape (n_items,): each item's stratum, or None."""
        return None if self.strata is None else np.repeat(np.asarray(self.strata), self.sizes)

    def effect_groups(self) -> np.ndarray:
        """Shape (n_items,): the group each item's random effect belongs to."""
        if not self.hidden:
            return self.cluster_codes()
        strata = self.stratum_codes()
        strata = np.zeros(self.n_items, dtype=np.intp) if strata is None else strata
        groups, start = np.empty(self.n_items, dtype=np.intp), 0
        for s in np.unique(strata):  # consecutive runs of `hidden` items inside each stratum
            members = np.flatnonzero(strata == s)
            groups[members] = start + np.arange(len(members)) // self.hidden
            start = int(groups[members].max()) + 1
        return groups


def simulate(design: Design, *, icc: float, delta: float, reps: int, rng: np.random.Generator,
             q0: float = BASE_DISCORDANCE, skewed: bool = False) -> np.ndarray:
    """Shape (reps, n_items) paired deltas in {-1, 0, +1} (float), per the module model.

    Args:
        design: cluster sizes (and hidden groups) of one replication.
        icc: intra-cluster correlation of the deltas at delta 0 (of the hidden groups
            when ``design.hidden``).
        delta: true mean delta, a fraction (0.05 is +5 pp).
        reps: replications.
        rng: numpy Generator (seeded by the caller).
        skewed: draw the random effect as tau * (1 - Exponential(1)) instead of a normal:
            mean 0, same sd, a long tail of clusters where B is much worse (the rare
            collapse that a handful of clusters can miss).
    """
    groups = design.effect_groups()
    n_groups = int(groups.max()) + 1
    tau = tau_for_icc(icc, q0)
    if skewed:
        effect = tau * (1.0 - rng.exponential(size=(reps, n_groups)))
    else:
        effect = rng.normal(0.0, tau, size=(reps, n_groups)) if icc > 0 else np.zeros((reps, n_groups))
    mu = np.clip(delta + effect, -0.95, 0.95)[:, groups]
    q = np.minimum(1.0, q0 + np.abs(mu))
    u = rng.random((reps, design.n_items))
    up = (q + mu) / 2
    return np.where(u < up, 1.0, np.where(u < q, -1.0, 0.0))


def locomo_like(n: int = 10) -> Design:
    """The first ``n`` LoCoMo conversations' category 1-4 sizes."""
    return Design(f"{n} clusters, LoCoMo-like sizes" if n == 10 else f"{n} clusters", LOCOMO_SIZES[:n])


def longmemeval_like(hidden: int = 5, *, item_clusters: bool = True) -> Design:
    """500 items stratified by LongMemEval's question types. ``item_clusters``: every item its
    own cluster (the gate sees items, the hidden groups of ``hidden`` share the effect);
    else the gate sees the groups of ``hidden`` as clusters."""
    if item_clusters:
        sizes = (1,) * sum(LONGMEMEVAL_TYPES)
        strata = tuple(np.repeat(np.arange(len(LONGMEMEVAL_TYPES)), LONGMEMEVAL_TYPES).tolist())
        return Design("LongMemEval-like, item clusters", sizes, strata, hidden=hidden)
    group_sizes: list[int] = []
    group_strata: list[int] = []
    for t, count in enumerate(LONGMEMEVAL_TYPES):
        full, rest = divmod(count, hidden)
        group_sizes += [hidden] * full + ([rest] if rest else [])
        group_strata += [t] * (full + (1 if rest else 0))
    return Design("LongMemEval-like, evidence clusters", tuple(group_sizes), tuple(group_strata))


NORMAL_FROM = 15
"""Clusters of at least this many items draw their two sums from the multinomial's normal
approximation in :class:`NullDraws`; smaller ones draw each item (exact)."""


class NullDraws:
    """Common random numbers for simulating one design's cluster sums under many scenarios.

    The module's model with the random effect on the clusters of ``sizes``; the draws that
    do not depend on the scenario are made once (float32): a standard normal and an
    Exponential(1) per replication and cluster for the effect; for clusters of
    :data:`NORMAL_FROM` items or more, two standard normals that draw the cluster's
    (sum, sum of squares) from the bivariate normal with the multinomial's mean and
    covariance; for smaller clusters, a uniform per item (exact: an item is +1 when
    u < p+, -1 when p+ <= u < q). Every scenario then reads the same numbers (common random
    numbers: the scenarios' critical values differ by the scenario, not by the noise).

    Args:
        sizes: shape (G,), items per cluster.
        reps: replications.
        seed: the draws' seed.
    """

    def __init__(self, sizes: np.ndarray, reps: int, seed: int) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.reps = int(reps)
        rng = np.random.default_rng([int(seed), 33, len(self.sizes)])
        g = len(self.sizes)
        self.normal = rng.standard_normal((reps, g), dtype=np.float32)
        self.expo = rng.standard_exponential((reps, g), dtype=np.float32)
        self.large = np.flatnonzero(self.sizes >= NORMAL_FROM)
        self.small = np.flatnonzero(self.sizes < NORMAL_FROM)
        self.z = rng.standard_normal((2, reps, len(self.large)), dtype=np.float32)
        small_sizes = self.sizes[self.small]
        self.item_cluster = np.repeat(np.arange(len(self.small)), small_sizes)
        self.starts = np.concatenate([[0], np.cumsum(small_sizes)[:-1]]).astype(np.intp)
        self.u = rng.random((reps, int(small_sizes.sum())), dtype=np.float32)

    def first(self, reps: int) -> NullDraws:
        """The same draws cut to their first ``reps`` replications (views, no copy): a
        cheaper pass for a coarser question (all of them when ``reps`` is not smaller)."""
        if reps >= self.reps:
            return self
        cut = object.__new__(NullDraws)
        cut.__dict__.update(self.__dict__)
        cut.reps, cut.normal, cut.expo = int(reps), self.normal[:reps], self.expo[:reps]
        cut.z, cut.u = self.z[:, :reps], self.u[:reps]
        return cut

    def moments(self, *, q0: float, icc: float, delta: float, shape: str = "normal") -> tuple[np.ndarray, np.ndarray]:
        """(sums, sums of squares) of the deltas in {-1, 0, +1}, each (reps, G).

        Args:
            q0: share of discordant pairs in a cluster without effect.
            icc: intra-cluster correlation of the deltas at delta 0 (:func:`tau_for_icc`).
            delta: true mean delta (fraction).
            shape: ``"normal"`` effects, ``"skewed_down"`` (tau * (1 - Exponential(1)), the
                ``simulate(skewed=True)`` shape: a tail of clusters where B is much worse)
                or ``"skewed_up"`` (its mirror).

        Raises:
            ValueError: an unknown shape.
        """
        tau = tau_for_icc(icc, q0)
        if shape == "normal":
            effect = tau * self.normal
        elif shape in ("skewed_down", "skewed_up"):
            effect = tau * (1.0 - self.expo) * (1.0 if shape == "skewed_down" else -1.0)
        else:
            raise ValueError(f"unknown shape {shape!r}: normal, skewed_down or skewed_up")
        mu = np.clip(delta + effect.astype(np.float64), -0.95, 0.95)
        q = np.minimum(1.0, q0 + np.abs(mu))
        if not len(self.small):  # every cluster drawn from the normal: no gather, no scatter
            return self._normal_moments(mu, q)
        sums, squares = np.empty_like(mu), np.empty_like(mu)
        if len(self.large):
            sums[:, self.large], squares[:, self.large] = self._normal_moments(mu[:, self.large], q[:, self.large])
        if len(self.small):
            up = ((q + mu) / 2)[:, self.small][:, self.item_cluster]
            qi = q[:, self.small][:, self.item_cluster]
            plus = (self.u < up).astype(np.float64)
            minus = ((self.u >= up) & (self.u < qi)).astype(np.float64)
            sums[:, self.small] = np.add.reduceat(plus - minus, self.starts, axis=1)
            squares[:, self.small] = np.add.reduceat(plus + minus, self.starts, axis=1)
        return sums, squares

    def _normal_moments(self, m: np.ndarray, qq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sums, sums of squares) of the :data:`NORMAL_FROM`-or-larger clusters, given their
        (reps, L) effects ``m`` and discordances ``qq``: the multinomial's bivariate normal."""
        n = self.sizes[self.large].astype(np.float64)
        sd_s = np.sqrt(np.maximum(n * (qq - m**2), 0.0))
        cov = n * m * (1 - qq)
        slope = np.where(sd_s > 0, cov / np.where(sd_s > 0, sd_s, 1.0), 0.0)
        z1, z2 = self.z
        return n * m + sd_s * z1, n * qq + slope * z1 + np.sqrt(np.maximum(n * qq * (1 - qq) - slope**2, 0.0)) * z2
