"""Per-item scores of two runs, paired by item_id.

One score per item and arm, after collapsing repeats:

- retrieval axis: the per-item column behind ``metric`` (``recall@5`` -> ``hit_at_5``,
  a hit is 1 and a miss 0; ``mrr`` -> ``rr``, the reciprocal rank), read from the
  item's first non-errored repeat (retrieval runs once per item);
- accuracy axis: the majority label over repeats (:func:`memrun.stats.majority_codes`:
  a tie is wrong; error only when every repeat errored); correct is 1, wrong 0, and an
  abstention is 0 under the ``correct+wrong+abstained`` denominator or left out under
  ``correct+wrong``;
- accuracy axis with a fractional judge (denominator ``mean_score``, e.g. BEAM's
  rubric): the mean ``judge_score`` over the item's non-error repeats, on the
  continuous path retrieval's MRR takes (no majority label; McNemar is skipped as the
  scores are not binary; an item is stable when its repeats scored the same).

Errored items are left out of both arms and counted, never scored as misses; so are
items without retrieval gold (unscored) and, under ``correct+wrong``, abstentions.
Everything downstream (the bootstrap, McNemar, Wilcoxon, flip rates, discordance) reads
the paired, category-filtered items this module returns, and nothing else.

The work is columnar: only the columns a comparison needs are read, item ids are
matched with Arrow's hash kernels (``unique``, ``index_in``) and every per-item
reduction is a numpy ``bincount``; no Python loop runs per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memrun.core.instrument import DENOMINATOR_ABSTAIN_WRONG, DENOMINATOR_EXCLUDE_ABSTAIN, DENOMINATOR_MEAN_SCORE
from memrun.errors import CompareUsageError
from memrun.io.reader import RunTable, read_run
from memrun.io.writer import skip_pandas_probe
from memrun.lazy import lazy
from memrun.metrics.conventions import ACCURACY, credited_columns, credited_mask, family_of
from memrun.metrics.retrieval import item_column_for
from memrun.stats.labels import ABSTAIN, CORRECT, ERROR, LABEL_ORDER, item_majority
from memrun.stats.missing import ErrorBound, one_sided_errors

if TYPE_CHECKING:
    from scipy import sparse as scipy_sparse
    from scipy.sparse import csgraph as sparse_csgraph
else:
    scipy_sparse = lazy("scipy.sparse")
    sparse_csgraph = lazy("scipy.sparse.csgraph")

LABEL_COLUMN = "label"
SCORE_COLUMN = "judge_score"  # a fractional judge's per-row score
BASE_COLUMNS = ("item_id", "error", "category", "category_label")
_CODE = {label: i for i, label in enumerate(LABEL_ORDER)}
REASONS = ("error", "abstain", "unscored")
"""Why an item is left out, in precedence order (an item left out by both arms for two
reasons is counted under the first); ``ArmScores.excluded`` holds indices into it."""
SCORED = len(REASONS)  # ArmScores.excluded of an item that is scored
EVIDENCE = "evidence"
"""``--cluster-by evidence``: a derived key, items sharing any gold (evidence) session in
one cluster (connected components over the ``gold_sessions`` column)."""
GOLD_SESSIONS = "gold_sessions"


@dataclass
class ArmScores:
    """One arm's per-item outcome after collapsing repeats, aligned to the item index
    the pairing built (shape (m,) arrays, m = items of run A).

    present: the arm has a row for the item.
    score: the collapsed score (NaN when the item is left out; ``excluded`` says why:
        an index into :data:`REASONS`, or :data:`SCORED`).
    mean: the item's mean score over its repeats (Wilcoxon's per-item score).
    label: majority label index into :data:`memrun.stats.labels.LABEL_ORDER` (accuracy
        axis; -1 on the retrieval axis).
    stable: every non-error repeat gave the same label (True on the retrieval axis).
    repeated: the item has at least two non-error repeats (flip rate's denominator).
    """

    present: np.ndarray
    score: np.ndarray
    excluded: np.ndarray
    mean: np.ndarray
    label: np.ndarray
    stable: np.ndarray
    repeated: np.ndarray


@dataclass
class Paired:
    """Items scored in both arms, in run A's order, as shape (n,) arrays, plus what was
    left out.

    a, b: collapsed scores; a_mean, b_mean: per-item means over repeats; a_label,
    b_label: majority label indices (-1 on the retrieval axis); stable: stable in both
    arms; a_repeated/b_repeated and a_flipped/b_flipped: flip-rate terms.
    clusters: int cluster codes (None: every item its own cluster); strata: int stratum
    codes or None; evidence: int codes of shared-evidence clusters when every item is its
    own cluster but some share a gold session (:func:`shared_evidence`), else None. null_clusters: paired items whose cluster key was null (each made
    its own cluster). categories: int codes into ``category_names`` (raw categories;
    ``category_labels`` maps each to its label). errors: arm ("a", "b") -> (errored
    items, items the arm has in scope); n_present_both / n_present_either: in-scope items
    with a row in both runs / in either. error_bound: the in-scope items that errored in one
    arm only while the other scored them (:mod:`memrun.stats.missing`).
    """

    item_ids: pa.Array
    a: np.ndarray
    b: np.ndarray
    a_mean: np.ndarray
    b_mean: np.ndarray
    a_label: np.ndarray
    b_label: np.ndarray
    clusters: np.ndarray | None
    strata: np.ndarray | None
    categories: np.ndarray
    category_names: list[str]
    category_labels: dict[str, str]
    stable: np.ndarray
    a_repeated: np.ndarray
    b_repeated: np.ndarray
    a_flipped: np.ndarray
    b_flipped: np.ndarray
    only_a: int
    only_b: int
    excluded: dict[str, int]
    null_clusters: int = 0
    errors: dict[str, tuple[int, int]] | None = None
    n_present_both: int = 0
    n_present_either: int = 0
    evidence: np.ndarray | None = None
    credited: dict[str, dict[str, np.ndarray]] | None = None
    """Arm ("a", "b") -> convention -> (n,) mask of the paired items the metric credits by
    that convention, not by what the arm found (:mod:`memrun.metrics.conventions`); None
    when the metric has no such convention."""
    error_bound: ErrorBound | None = None

    @property
    def n(self) -> int:
        """Number of paired items."""
        return len(self.a)


def columns_needed(axis: str | None, metric: str, cluster_by: str | None, stratify_by: str | None) -> list[str]:
    """The columns a comparison reads from a run table.

    Raises CompareUsageError for an unknown retrieval metric.
    """
    cols = [*BASE_COLUMNS]
    if axis == "accuracy":
        cols.append(LABEL_COLUMN)
    else:
        try:
            cols.append(item_column_for(metric))
        except ValueError as exc:
            raise CompareUsageError(str(exc)) from exc
    cluster_columns = (GOLD_SESSIONS, "cluster") if cluster_by == EVIDENCE else (cluster_by,)  # evidence: history too
    cols += [c for c in (*cluster_columns, stratify_by) if c and c not in cols]
    return cols


def read_for_compare(path: str, axis: str | None, metric: str, cluster_by: str | None,
                     stratify_by: str | None) -> RunTable:
    """A run with only the columns the comparison needs; CompareUsageError names a missing one.

    pyarrow's first conversion to numpy imports pandas only to ask whether the values are
    pandas objects (~1 s of CPU, most of a 100k-item compare): the probe is answered "absent"
    first (:func:`memrun.io.writer.skip_pandas_probe`). A ``cluster_by`` or ``stratify_by``
    column of lists (``gold_sessions``) is a CompareUsageError too: an item has one cluster."""
    skip_pandas_probe()
    columns = columns_needed(axis, metric, cluster_by, stratify_by)
    optional = ["repeat"]  # read_run checks each (item_id, repeat) occurs once
    optional += [GOLD_SESSIONS] if cluster_by and GOLD_SESSIONS not in columns else []  # for shared_evidence
    # --cluster-by none: are the items independent? a column: does each cluster hold whole histories? (pair)
    optional += ["cluster"] if "cluster" not in columns else []
    optional += [c for c in credited_columns(metric, axis) if c not in columns + optional]  # absent in old runs
    run = read_run(path, columns=columns + optional)
    if run.instrument.axis == "accuracy" and run.instrument.denominator == DENOMINATOR_MEAN_SCORE:
        columns.append(SCORE_COLUMN)  # a fractional judge's run: its scores, not its labels, are paired
        run = read_run(path, columns=columns + optional)
    missing = [c for c in columns if c not in run.table.column_names]
    if missing:
        hint = ""
        if axis != "accuracy" and item_column_for(metric) in missing:
            hint = f" (--metric {metric}; this run has cut-offs ks={run.instrument.ks})"
        raise CompareUsageError(f"{run.path}: no column {', '.join(missing)} in this run table{hint}")
    for flag, name in (("--cluster-by", cluster_by), ("--stratify-by", stratify_by)):
        if name and name != EVIDENCE and pa.types.is_nested(kind := run.table.schema.field(name).type):
            raise CompareUsageError(f"{flag} {name}: a column of several values an item ({kind}); name a column "
                                    "of one value an item (a string, number or boolean)")
    return run


def _column(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _first_rows(codes: np.ndarray, rows: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(has a row, first such row index) per item code in [0, m), rows given in order."""
    first = np.full(m, -1, dtype=np.int64)
    uniq, pos = np.unique(codes, return_index=True)
    first[uniq] = rows[pos]
    return first >= 0, first


def _as_float(col: pa.Array) -> np.ndarray:
    """A numeric or boolean column as float64, null -> NaN."""
    return pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)


def _retrieval(table: pa.Table, codes: np.ndarray, valid: np.ndarray, m: int, column: str) -> ArmScores:
    errored = np.asarray(_column(table, "error").is_valid())
    rows = np.flatnonzero(valid)
    present, _ = _first_rows(codes[rows], rows, m)
    ok_rows = np.flatnonzero(valid & ~errored)
    has_ok, first_ok = _first_rows(codes[ok_rows], ok_rows, m)
    values = _as_float(_column(table, column))
    score = np.full(m, np.nan)
    score[has_ok] = values[first_ok[has_ok]]
    excluded = np.full(m, SCORED, dtype=np.int8)
    excluded[present & ~has_ok] = REASONS.index("error")
    excluded[has_ok & np.isnan(score)] = REASONS.index("unscored")
    ones = np.ones(m, dtype=bool)
    return ArmScores(present, score, excluded, score.copy(), np.full(m, -1, np.int8), ones, ~ones)


def _accuracy(run: RunTable, table: pa.Table, codes: np.ndarray, valid: np.ndarray, m: int) -> ArmScores:
    denominator = run.instrument.denominator
    if denominator not in (DENOMINATOR_ABSTAIN_WRONG, DENOMINATOR_EXCLUDE_ABSTAIN):
        raise CompareUsageError(f"{run.path}: unknown accuracy denominator {denominator!r}")
    abstain_counts = denominator == DENOMINATOR_ABSTAIN_WRONG
    labels = _column(table, LABEL_COLUMN)
    label_codes = pc.index_in(labels, value_set=pa.array(LABEL_ORDER))
    unknown = pc.and_(labels.is_valid(), label_codes.is_null())
    if pc.any(unknown).as_py():
        row = int(np.flatnonzero(np.asarray(unknown))[0])
        raise CompareUsageError(
            f"{run.path}: column {LABEL_COLUMN} holds {labels[row].as_py()!r} (row {row}); "
            f"memrun labels are {', '.join(LABEL_ORDER)} (lower case)")
    lab = label_codes.fill_null(_CODE[ERROR]).to_numpy(zero_copy_only=False).astype(np.int64)
    lab[np.asarray(_column(table, "error").is_valid())] = _CODE[ERROR]
    rows = np.flatnonzero(valid)
    majority, stable, counts = item_majority(lab[rows], codes[rows], m)
    present = counts.sum(axis=1) > 0
    correct, wrong, abstain = counts[:, 0], counts[:, 1], counts[:, 2]
    score = np.where(majority == _CODE[CORRECT], 1.0, 0.0)
    excluded = np.full(m, SCORED, dtype=np.int8)
    excluded[present & (majority == _CODE[ERROR])] = REASONS.index("error")
    if not abstain_counts:
        excluded[present & (majority == _CODE[ABSTAIN])] = REASONS.index("abstain")
    score[excluded != SCORED] = np.nan
    denominators = correct + wrong + (abstain if abstain_counts else 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(denominators > 0, correct / np.maximum(denominators, 1), score)
    repeated = (correct + wrong + abstain) >= 2
    return ArmScores(present, score, excluded, mean, majority, stable, repeated)


def _fractional(table: pa.Table, codes: np.ndarray, valid: np.ndarray, m: int) -> ArmScores:
    """Mean judge_score over each item's non-error repeats (see the module docstring)."""
    values = _as_float(_column(table, SCORE_COLUMN))
    errored = np.asarray(_column(table, "error").is_valid()) | np.isnan(values)
    labels = _column(table, LABEL_COLUMN)
    errored |= np.asarray(pc.fill_null(pc.equal(labels, ERROR), False))
    present = np.bincount(codes[valid], minlength=m) > 0
    ok = np.flatnonzero(valid & ~errored)
    n = np.bincount(codes[ok], minlength=m)
    total = np.bincount(codes[ok], weights=values[ok], minlength=m)
    low, high = np.full(m, np.inf), np.full(m, -np.inf)
    np.minimum.at(low, codes[ok], values[ok])
    np.maximum.at(high, codes[ok], values[ok])
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    excluded = np.full(m, SCORED, dtype=np.int8)
    excluded[present & (n == 0)] = REASONS.index("error")
    return ArmScores(present, score, excluded, score.copy(), np.full(m, -1, np.int8), (n < 2) | (low == high), n >= 2)


def _arm(run: RunTable, codes: np.ndarray, valid: np.ndarray, m: int, metric: str) -> ArmScores:
    if run.instrument.axis == "accuracy" and run.instrument.denominator == DENOMINATOR_MEAN_SCORE:
        return _fractional(run.table, codes, valid, m)
    if run.instrument.axis == "accuracy":
        return _accuracy(run, run.table, codes, valid, m)
    return _retrieval(run.table, codes, valid, m, item_column_for(metric))


def _per_item(table: pa.Table, name: str, first: np.ndarray) -> pa.Array:
    """Column ``name`` at each item's first row (``first``: row indices)."""
    return _column(table, name).take(pa.array(first))


def _codes(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int codes, null mask) of a column's values, codes in order of first appearance."""
    encoded = pc.dictionary_encode(values if values.type == pa.string() else pc.cast(values, pa.string()))
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, codes < 0


def pair(a: RunTable, b: RunTable, *, metric: str, cluster_by: str | None, stratify_by: str | None = None,
         categories: list[str] | None = None) -> Paired:
    """Pair two runs by item_id on the items both scored (of ``categories``, when given).

    Runs A's item order (the dataset's) is kept. Clusters, strata and categories are
    read from run A. A null cluster key makes its item a cluster of its own (counted in
    ``null_clusters``). ``cluster_by`` None (``--cluster-by none``) or ``evidence`` where
    items share a history (run A's ``cluster`` column), or a column whose clusters split a
    history, raises CompareUsageError.

    Raises CompareUsageError when no item is scored in both runs, a category named in
    ``categories`` occurs in neither run, or a label is not one of memrun's.
    """
    ids_a, ids_b = _column(a.table, "item_id"), _column(b.table, "item_id")
    items = pc.unique(ids_a)  # run A's items, in order of first appearance
    m = len(items)
    codes_a = pc.index_in(ids_a, value_set=items).to_numpy(zero_copy_only=False)
    found_b = pc.index_in(ids_b, value_set=items)
    valid_b = np.asarray(found_b.is_valid())
    codes_b = found_b.fill_null(0).to_numpy(zero_copy_only=False)
    sa = _arm(a, codes_a, np.ones(len(codes_a), dtype=bool), m, metric)
    sb = _arm(b, codes_b, valid_b, m, metric)

    _, first_a = _first_rows(codes_a, np.arange(len(codes_a)), m)
    category = _per_item(a.table, "category", first_a).cast(pa.string()).fill_null("None")
    only_b_ids = ids_b.filter(pc.invert(pa.array(valid_b)))
    n_only_b_anywhere = len(pc.unique(only_b_ids))
    in_scope = np.ones(m, dtype=bool)
    if categories is not None:
        present_cats = set(pc.unique(category).to_pylist()) | set(
            pc.unique(_column(b.table, "category").cast(pa.string()).fill_null("None")).to_pylist())
        unknown = set(categories) - present_cats
        if unknown:
            raise CompareUsageError(f"--categories: no item has category {', '.join(sorted(unknown))}; "
                                    f"present: {', '.join(sorted(present_cats))}")
        wanted = pa.array(sorted(set(categories)))
        in_scope = np.asarray(pc.is_in(category, value_set=wanted))
        cat_b = _column(b.table, "category").cast(pa.string()).fill_null("None")
        only_b_ids = only_b_ids.filter(pc.is_in(cat_b.filter(pc.invert(pa.array(valid_b))), value_set=wanted))
    both = in_scope & sb.present
    only_a = int((in_scope & ~sb.present).sum())
    only_b = len(pc.unique(only_b_ids))
    reason = np.minimum(sa.excluded, sb.excluded)[both]
    excluded = {REASONS[r]: int(n) for r, n in enumerate(np.bincount(reason, minlength=SCORED + 1)[:SCORED]) if n}
    keep = np.flatnonzero(both & (sa.excluded == SCORED) & (sb.excluded == SCORED))
    if not len(keep):
        why = "; ".join(f"{side}: {n} {reason}" for side, s in (("A", sa), ("B", sb))
                        for reason, n in sorted(_reason_counts(s, in_scope).items()))
        elsewhere = n_only_b_anywhere - only_b
        scope = (f" of categories {', '.join(categories)}; {elsewhere} more of B's in no category read"
                 if categories is not None and elsewhere else "")
        raise CompareUsageError(
            f"no item is scored in both runs ({only_a} only in A, {only_b} only in B{scope}, "
            f"{sum(excluded.values())} excluded{': ' + why if why else ''}); "
            + ("the runs share no item: check that both ran the same benchmark" if not excluded
               else _unmeasured(a, b, metric) or "nothing is left to compare"))

    clusters, null_clusters = None, 0
    if cluster_by is None and "cluster" in a.table.column_names:
        _check_items_independent(_per_item(a.table, "cluster", first_a[keep]))
    if cluster_by == EVIDENCE:
        _check_evidence_clustering(_per_item(a.table, "cluster", first_a[keep]))
        clusters = evidence_clusters(_per_item(a.table, GOLD_SESSIONS, first_a[keep]))
    elif cluster_by:
        codes, null = _codes(_per_item(a.table, cluster_by, first_a[keep]))
        null_clusters = int(null.sum())
        codes[null] = codes.max(initial=-1) + 1 + np.arange(null_clusters)
        clusters = codes
        if cluster_by != "cluster" and "cluster" in a.table.column_names:
            _check_clusters_hold_histories(cluster_by, _per_item(a.table, "cluster", first_a[keep]), codes, null)
    evidence = shared_evidence(a.table, clusters, first_a[keep]) if cluster_by != EVIDENCE else None
    strata = _codes(_per_item(a.table, stratify_by, first_a[keep]))[0] if stratify_by else None
    encoded = pc.dictionary_encode(category.take(pa.array(keep)))
    cat_codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = encoded.dictionary.to_pylist()
    first_of = _first_rows(cat_codes, np.arange(len(cat_codes)), len(names))[1]
    labels = _per_item(a.table, "category_label", first_a[keep][first_of]).cast(pa.string()).to_pylist()
    return Paired(
        item_ids=items.take(pa.array(keep)),
        a=sa.score[keep], b=sb.score[keep], a_mean=sa.mean[keep], b_mean=sb.mean[keep],
        a_label=sa.label[keep], b_label=sb.label[keep],
        clusters=clusters, strata=strata, categories=cat_codes, category_names=names,
        category_labels={c: (lbl if lbl is not None else c) for c, lbl in zip(names, labels)},
        stable=sa.stable[keep] & sb.stable[keep],
        a_repeated=sa.repeated[keep], b_repeated=sb.repeated[keep],
        a_flipped=(sa.repeated & ~sa.stable)[keep], b_flipped=(sb.repeated & ~sb.stable)[keep],
        only_a=only_a, only_b=only_b, excluded=excluded, null_clusters=null_clusters,
        errors={"a": _errors(sa, in_scope), "b": _plus(_errors(sb, in_scope), _only_b_errors(b, ids_b, only_b_ids, metric))},
        n_present_both=int(both.sum()), n_present_either=int((in_scope & sa.present).sum()) + only_b,
        evidence=evidence, error_bound=_one_sided(sa, sb, both),
        credited=_credited(a, b, metric, codes_a, codes_b, valid_b, m, keep),
    )


def shared_items(a: RunTable, b: RunTable) -> tuple[int, int, int]:
    """(distinct item ids of A, of B, of both): two runs that share none cannot be paired,
    whatever fields are named as treatments (other benchmarks, other datasets)."""
    ids_a, ids_b = pc.unique(_column(a.table, "item_id")), pc.unique(_column(b.table, "item_id"))
    both = int(pc.sum(pc.is_in(ids_b, value_set=ids_a)).as_py() or 0)
    return len(ids_a), len(ids_b), both


def _credited(a: RunTable, b: RunTable, metric: str, codes_a: np.ndarray, codes_b: np.ndarray, valid_b: np.ndarray,
              m: int, keep: np.ndarray) -> dict[str, dict[str, np.ndarray]] | None:
    """Per arm, the paired items (``keep``) its metric credits by a convention, read at each
    item's first row (:func:`memrun.metrics.conventions.credited_mask`; on the accuracy axis
    every row of an item carries the credit its majority label decides); None without one."""
    family = ACCURACY if a.instrument.axis == ACCURACY else family_of(metric)
    if family is None:
        return None
    out: dict[str, dict[str, np.ndarray]] = {}
    for side, run, codes, valid in (("a", a, codes_a, np.ones(len(codes_a), dtype=bool)), ("b", b, codes_b, valid_b)):
        rows = np.flatnonzero(valid)
        has, first = _first_rows(codes[rows], rows, m)
        masks = credited_mask(run.table, family)
        out[side] = {name: np.where(has, mask[np.maximum(first, 0)], False)[keep] for name, mask in masks.items()}
    return out


def _one_sided(sa: ArmScores, sb: ArmScores, both: np.ndarray) -> ErrorBound:
    """The items of ``both`` that errored in one arm while the other scored them."""
    error = REASONS.index("error")
    only_b = both & (sb.excluded == error) & (sa.excluded == SCORED)
    only_a = both & (sa.excluded == error) & (sb.excluded == SCORED)
    return one_sided_errors(sa.score[only_b], sb.score[only_a])


def _errors(scores: ArmScores, in_scope: np.ndarray) -> tuple[int, int]:
    """(errored items, items with a row) of one arm, in scope, among run A's items."""
    present = in_scope & scores.present
    return int((present & (scores.excluded == REASONS.index("error"))).sum()), int(present.sum())


def _only_b_errors(b: RunTable, ids_b: pa.Array, only_b_ids: pa.Array, metric: str) -> tuple[int, int]:
    """(errored items, items) among B's in-scope items that A has no row of (``only_b_ids``:
    their rows' ids). B's error share counts them as A's counts A's own: it was read over A's
    items alone, so a B that failed on the items only it held printed 'B 0/1041' of 1,540."""
    if not len(only_b_ids):
        return 0, 0
    items = pc.unique(only_b_ids)
    found = pc.index_in(ids_b, value_set=items)
    scores = _arm(b, found.fill_null(0).to_numpy(zero_copy_only=False), np.asarray(found.is_valid()), len(items), metric)
    return int((scores.present & (scores.excluded == REASONS.index("error"))).sum()), int(scores.present.sum())


def _plus(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
    return x[0] + y[0], x[1] + y[1]


def _shared_history(history: pa.Array) -> int:
    """The most items one history (``cluster`` value) holds; 1 when each item has its own."""
    counts = pc.value_counts(pc.drop_null(history)).field("counts").to_numpy(zero_copy_only=False)
    return int(counts.max()) if len(counts) else 0  # a null key is a cluster of its own (pair)


def _check_items_independent(history: pa.Array) -> None:
    """Refuse ``--cluster-by none`` when several items share a history (their ``cluster``,
    e.g. a LoCoMo conversation): their outcomes move together, so an interval that treats
    them as independent is too narrow and a gate on it passes too often (150 of 151 items
    of one conversation passed so). Raises CompareUsageError."""
    most = _shared_history(history)
    if most > 1:
        raise CompareUsageError(
            f"--cluster-by none: items share histories here ({most} items in one cluster), so they are not "
            "independent: an interval that treats them so is too narrow and its gate passes too often. Cluster "
            "by the history (the default, --cluster-by cluster); with too few histories for a verdict, run more")


def _check_evidence_clustering(history: pa.Array) -> None:
    """Refuse ``--cluster-by evidence`` when several items share a history (their
    ``cluster``, e.g. a LoCoMo conversation): gold session ids then name sessions of one
    history (``session_2`` of every conversation), so joining items through them would
    merge unrelated conversations and still split each one. The derived key is for
    benchmarks that give each question its own history drawn from a shared pool of
    sessions (LongMemEval). Raises CompareUsageError."""
    most = _shared_history(history)
    if most > 1:
        raise CompareUsageError(
            f"--cluster-by evidence: items share histories here ({most} items in one cluster), so "
            "their gold session ids name sessions within a history, not sessions shared across questions; "
            "it is for benchmarks that give each question its own history (LongMemEval). Cluster by the "
            "history instead (the default, --cluster-by cluster)")


def _check_clusters_hold_histories(cluster_by: str, history: pa.Array, codes: np.ndarray, null: np.ndarray) -> None:
    """Refuse ``--cluster-by COLUMN`` when its clusters split a history (run A's ``cluster``
    column, e.g. a LoCoMo conversation): items of one history then sit in different clusters
    whose outcomes move together, which the bootstrap and the cluster-robust SE read as
    independent, so the interval is too narrow and a gate on it passes too often (as with
    ``--cluster-by none``; ``--cluster-by category`` on LoCoMo put each conversation's items
    in five clusters). A column whose clusters each hold whole histories (coarser than the
    history) is accepted. history: per item; codes: per item cluster codes (int64, nulls
    already made singletons); null: per item, no value in the column (each such item is a
    cluster of its own, so it splits its history too: the message counts them). Raises
    CompareUsageError naming the most split history."""
    h_codes, h_null = _codes(history)
    h_codes[h_null] = h_codes.max(initial=-1) + 1 + np.arange(int(h_null.sum()))  # a null history: its own
    width = int(codes.max(initial=0)) + 1  # one int64 key per (history, cluster), sorted: each distinct one once
    keys = np.sort(h_codes * width + codes)  # (np.unique, by hash or over axis=1 pairs, took ~1 s at 1M items)
    histories = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] // width  # history of each pair present
    spread = np.bincount(histories, minlength=int(h_codes.max(initial=-1)) + 1)  # clusters per history
    if spread.max(initial=0) <= 1:
        return
    worst = int(spread.argmax())
    in_worst = h_codes == worst
    name = history.take(pa.array([int(np.flatnonzero(in_worst)[0])]))[0].as_py()
    split = int((spread > 1).sum())
    nulls = int((null & in_worst).sum())
    why = (f", {nulls} of them with no {cluster_by} value (an item without one is a cluster of its own)"
           if nulls else "")
    raise CompareUsageError(
        f"--cluster-by {cluster_by}: its clusters split histories here ({split} histor{'y' if split == 1 else 'ies'}; "
        f"{name!s}'s {int(in_worst.sum())} items fall in {int(spread[worst])} clusters{why}), so items that share "
        "a history sit in different clusters that the interval treats as independent: it is too narrow and its "
        "gate passes too often. Name a column whose clusters each hold whole histories, or cluster by the history "
        "(the default, --cluster-by cluster)")


def shared_evidence(table: pa.Table, clusters: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    """Clusters of shared evidence for items that are their own clusters (LongMemEval's
    default: one question per history), when some of them share a gold session: the
    gate then also reads the interval so clustered (:func:`memrun.stats.gate.gate_interval`).
    None when the items are clustered already (a history holds several: their session ids
    are not shared across histories), when the run has no ``gold_sessions`` column, or
    when no two items share a gold session.

    Args:
        table: run A's table; clusters: the paired items' cluster codes (None: the
            clustering is off, ``--cluster-by none``); rows: each paired item's first row.
    """
    if clusters is None or GOLD_SESSIONS not in table.column_names or len(np.unique(clusters)) < len(clusters):
        return None
    codes = evidence_clusters(_per_item(table, GOLD_SESSIONS, rows))
    return codes if len(np.unique(codes)) < len(codes) else None


def evidence_clusters(gold: pa.Array) -> np.ndarray:
    """Shape (n,) cluster codes (first appearance order): items that share a gold session,
    directly or through other items, are one cluster (connected components of the
    item-session graph); an item without gold sessions is a cluster of its own."""
    n = len(gold)
    lengths = pc.list_value_length(gold).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    sessions, null = _codes(pc.list_flatten(gold))
    rows = np.repeat(np.arange(n), lengths)[~null]
    cols = n + sessions[~null]
    size = n + (int(sessions.max()) + 1 if len(sessions) else 0)
    graph = scipy_sparse.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(size, size))
    _, labels = sparse_csgraph.connected_components(graph, directed=False)
    _, first, inverse = np.unique(labels[:n], return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse]


def _unmeasured(a: RunTable, b: RunTable, metric: str) -> str | None:
    """Why a metric at K is null in a run whose arm returned fewer than K hits (its
    ``arm.top_k``), and what to do instead; None when that is not the reason."""
    name, _, k = metric.partition("@")
    if not k.isdigit():
        return None
    short = [(side, run.instrument.top_k) for side, run in (("A", a), ("B", b))
             if run.instrument.top_k is not None and run.instrument.top_k < int(k)]
    if not short:
        return None
    said = ", ".join(f"{side}'s arm.top_k={top_k}" for side, top_k in short)
    lowest = min(top_k for _, top_k in short)
    mrr = " or mrr" if a.instrument.top_k == b.instrument.top_k else ""  # mrr reads each whole ranking
    return (f"{metric} is not measured with {said} (fewer than {k} hits): compare --metric "
            f"{name}@{lowest}{mrr}, or run again with arm.top_k={k} or more")


def _reason_counts(scores: ArmScores, in_scope: np.ndarray) -> dict[str, int]:
    """How many in-scope items one arm left out, by reason."""
    counts = np.bincount(scores.excluded[in_scope & scores.present], minlength=SCORED + 1)
    return {REASONS[r]: int(n) for r, n in enumerate(counts[:SCORED]) if n}
