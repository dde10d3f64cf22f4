"""The instrument: everything that produced a run's numbers besides the arm's quality.

A run writes its :class:`Instrument` as JSON under :data:`METADATA_KEY` in the
Parquet schema metadata of ``items.parquet``. ``memrun compare`` reads it back and
refuses to compare runs whose *comparability fields* differ. Those fields are declared
once, below, each with the reason a difference invalidates a comparison; nothing else
in memrun spells the list out again.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

METADATA_KEY = b"memrun.instrument"
SCHEMA_VERSION = 1

MAJORITY_RULE = "strict plurality of non-error repeats; a tie is wrong"
"""The name of the rule :func:`memrun.stats.labels.majority_label` applies to repeats, recorded in
every run's instrument (a comparability field). Declared here, not beside the rule, so that writing
a run's table does not import the statistics (numpy) before its first request."""

# Values of the ``denominator`` field: what a run's ratios divide by.
DENOMINATOR_RETRIEVAL = "items_with_retrieval_gold"  # retrieval axis: items without gold are unscored
DENOMINATOR_EXCLUDE_ABSTAIN = "correct+wrong"  # accuracy: abstentions left out of the ratio
DENOMINATOR_ABSTAIN_WRONG = "correct+wrong+abstained"  # accuracy: an abstention counts as wrong
DENOMINATOR_MEAN_SCORE = "mean_score"  # accuracy, fractional judges (a rubric): the mean of the items' scores
DENOMINATOR_BEAM_OFFICIAL = "beam_official"  # BEAM's table: int(score), tau_norm for event ordering, mean of abilities


CONFIGURATION_KEYS = ("axis", "benchmark", "arm", "reader", "judge", "judge2", "ks", "repeats", "denominator",
                      "stale_check", "lexical_scores")
"""Sections of the composed config that define *what* a run measures (not where, how fast
or in how many shards it runs): two runs of one configuration agree on all of them."""
LOCATION_KEYS = ("benchmark.path",)
"""Keys inside those sections that say where a file is, not what it holds (the dataset's
sha256, a comparability field, covers its content)."""


NEVER_TREATMENTS = {
    "axis": "recall@K and judged accuracy are different metrics, never compared in one number",
}
"""Comparability fields that no comparison may vary, with why."""


ARM = "arm"
"""``reported_by`` of a field an arm's ``describe()`` may set (:meth:`Instrument.arm_fields`)."""
SERVER = "server"
"""``reported_by`` of a field a memory server's health response may set too (:meth:`Instrument.server_fields`)."""


def _cmp(why: str, default: Any = None, reported_by: str | None = None, depth: bool = False) -> Any:
    """A comparability field: runs compare only when both carry the same value.

    reported_by: :data:`ARM` or :data:`SERVER` when the system under test reports the value
    (else the run sets it, and an arm that reports it is refused). depth: the field is a
    ranking's depth, which a number read only from each ranking's top K within both depths
    does not see (:meth:`Instrument.diff`)."""
    return field(default=default, metadata={"compare": True, "why": why, "reported_by": reported_by, "depth": depth})


@dataclass
class Instrument:
    """What produced a run. Fields built with ``_cmp`` must match for runs to compare."""

    # -- comparability fields (all must match unless named as a treatment) ----------
    axis: str | None = _cmp("recall@K and judged accuracy are different metrics")
    benchmark: str | None = _cmp("different benchmarks ask different questions")
    split: str | None = _cmp("a split changes the items and the haystack (LongMemEval oracle vs s)")
    slice: str | None = _cmp("a slice changes which items count (LoCoMo categories 1-4 vs 1-5)")
    dataset_sha256: str | None = _cmp("a different file is a different dataset, even under one name")
    corrections_sha256: str | None = _cmp("runs scored against different gold disagree by construction")
    search_mode: str | None = _cmp("another search mode is an ablation, not the same system", reported_by=SERVER)
    embedder: str | None = _cmp("an embedder swap moves the whole similarity scale", reported_by=SERVER)
    embedder_dim: int | None = _cmp("a different dimension is a different embedder", reported_by=SERVER)
    server_build: str | None = _cmp("a different server build is a different system under test", reported_by=SERVER)
    server_model: str | None = _cmp("another model inside the memory server is another system under test", reported_by=SERVER)
    index_revision: str | None = _cmp("an index built from another revision holds other records", reported_by=SERVER)
    lexical_scoring: str | None = _cmp("another BM25 variant, parameters or tokenizer ranks other records first "
                                       "(bm25s lucene vs rank_bm25's Okapi moves recall by points)", reported_by=ARM)
    fusion: str | None = _cmp("another fusion constant, depth or weights fuses the same rankings into another one",
                              reported_by=ARM)
    ties: str | None = _cmp("equal scores ordered otherwise put other records in the top K", reported_by=ARM)
    crediting: bool | None = _cmp("a crediting run reinforces what it reads", default=False, reported_by=ARM)
    isolation: str | None = _cmp("histories in one shared store are searched together: a hit may come from "
                                 "another history", default="per_history", reported_by=ARM)
    denominator: str | None = _cmp("leaving abstentions out flatters an arm that abstains more")
    reader_model: str | None = _cmp("a stronger reader moves reasoning-heavy categories")
    reader_prompt_sha256: str | None = _cmp("a different reader prompt changes the answers")
    judge_model: str | None = _cmp("a different judge moves labels")
    judge_prompt_sha256: str | None = _cmp("a different judge prompt moves labels")
    judge_retry: str | None = _cmp("re-asking a judge whose reply cannot be read turns some errors into labels")
    context_policy: str | None = _cmp("truncating or skipping long contexts changes what the reader sees")
    repeats: int = _cmp("a majority of several judged repeats is right more often than one label", default=1)
    majority_rule: str | None = _cmp("another rule for collapsing repeats gives other labels",
                                     default=MAJORITY_RULE)
    granularity: str | None = _cmp("a session cut-off of K turns or of K distinct sessions credits different hits")
    records: str | None = _cmp("another record text or unit (a turn vs a whole session) is another corpus")
    retrieval_preset: str | None = _cmp("LongMemEval's official preset indexes other turns, excludes other "
                                        "questions and credits sessions otherwise")
    top_k: int | None = _cmp("the retrieval depth (arm.top_k): MRR reads each ranking to its end and a reader "
                             "answers from every hit, so a deeper list alone moves them; a metric @K with K within "
                             "both depths reads the same top K", depth=True)

    # -- provenance (recorded, not compared) -----------------------------------------
    run_id: str | None = None
    status: str = "running"  # a memrun.core.status.RunStatus value: running | complete | stopped | degraded | failed | interrupted
    error: str | None = None  # a failed run: why, in one line (what the command line printed)
    arm: str | None = None
    arm_info: dict[str, Any] = field(default_factory=dict)  # what describe() reported beyond the fields above
    fake_providers: bool = field(default=False, metadata={"reported_by": ARM})  # arm=http: the health names a fake
    judge2_model: str | None = None  # axis=accuracy: the second judge, when one re-graded a sample
    judge2_prompt_sha256: str | None = None
    llm_endpoints: dict[str, str] = field(default_factory=dict)  # axis=accuracy: role (reader, judge, judge2) -> base URL
    # axis=accuracy: role -> the model name the server reported in its replies (a local server
    # may answer any configured name with whatever model it has loaded)
    served_models: dict[str, str] = field(default_factory=dict)
    gold_match: str | None = None
    categories: dict[str, str] = field(default_factory=dict)
    comparable_categories: list[str] | None = None
    stratify_by: str | None = None  # a column compare resamples within by default (LongMemEval: category)
    task_averaged: bool = False  # the summary reports the mean over categories too (LongMemEval)
    shard: dict[str, Any] | None = None  # memrun.jobs.shards.shard_facts; a merged run: count, merged, missing
    retrieval_not_measurable: str | None = None  # why the hits cannot be scored (ids the arm made up), or None
    ks: list[int] = field(default_factory=list)
    seed: int | None = None
    load_counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    n_items: int | None = None
    n_rows: int = 0
    n_errors: int = 0
    memrun_version: str | None = None
    memrun_commit: str | None = None  # memrun's own checkout (None: an installed package); memrun.core.provenance
    git_commit: str | None = None  # the repository whose configs were composed (--config-dir, else the working directory)
    started_at: str | None = None
    finished_at: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    # -- comparability ------------------------------------------------------------------

    @staticmethod
    def comparability_fields() -> dict[str, str]:
        """Name -> why it matters, for every field two runs must share."""
        return {
            f.name: f.metadata["why"] for f in dataclasses.fields(Instrument) if f.metadata.get("compare")
        }

    @staticmethod
    def arm_fields() -> tuple[str, ...]:
        """The fields an arm's ``describe()`` may report (the rest of what it reports is
        kept as ``arm_info``): every field declared with a ``reported_by``."""
        return tuple(f.name for f in dataclasses.fields(Instrument) if f.metadata.get("reported_by"))

    @staticmethod
    def server_fields() -> tuple[str, ...]:
        """The fields a memory server's health response may report (``arm=http``, ``arm=mcp``)."""
        return tuple(f.name for f in dataclasses.fields(Instrument) if f.metadata.get("reported_by") == SERVER)

    @staticmethod
    def reserved_fields() -> frozenset[str]:
        """Every field the run sets itself: an arm that reports one is refused
        (:func:`memrun.arms.describe`). Derived here, so a new field is reserved by default."""
        return frozenset(f.name for f in dataclasses.fields(Instrument)) - set(Instrument.arm_fields())

    @staticmethod
    def depth_fields() -> tuple[str, ...]:
        """The comparability fields that are a ranking's depth (``top_k``)."""
        return tuple(f.name for f in dataclasses.fields(Instrument) if f.metadata.get("depth"))

    def diff(self, other: Instrument, treatments: tuple[str, ...] | list[str] = (),
             reads_to: int | None = None) -> list[Difference]:
        """The comparability fields on which ``self`` and ``other`` differ.

        treatments: fields the comparison is meant to vary; they are left out.
        reads_to: how deep the compared number reads each ranking: K for a retrieval metric
        @K (:func:`memrun.metrics.retrieval.depth_read`), None when it reads the whole ranking
        (MRR). A depth field (:meth:`depth_fields`) is left out only on the retrieval axis
        when both runs' depths reach ``reads_to``: the first K hits of a ranking cut at 10
        and of one cut at 20 are the same hits. On the accuracy axis the reader answers from
        every hit, so the depth always counts.
        A field missing on one side (None) while set on the other counts as a difference.
        Raises ValueError for a treatment that is not a comparability field, or one of
        :data:`NEVER_TREATMENTS` (the two axes never mix in one number).
        """
        fields = self.comparability_fields()
        unknown = [t for t in treatments if t not in fields]
        if unknown:
            raise ValueError(
                f"--treatment {', '.join(unknown)} is not a comparability field; "
                f"choose from {', '.join(f for f in fields if f not in NEVER_TREATMENTS)}"
            )
        never = [t for t in treatments if t in NEVER_TREATMENTS]
        if never:
            raise ValueError(f"--treatment {', '.join(never)}: {NEVER_TREATMENTS[never[0]]}; it cannot be a treatment")
        unseen = set(self.depth_fields()) if self._reaches(other, reads_to) else set()
        return [
            Difference(name, getattr(self, name), getattr(other, name), why)
            for name, why in fields.items()
            if name not in treatments and name not in unseen and getattr(self, name) != getattr(other, name)
        ]

    def _reaches(self, other: Instrument, reads_to: int | None) -> bool:
        """Both runs' rankings, on the retrieval axis, reach the depth the compared number reads."""
        if reads_to is None or self.axis == "accuracy" or other.axis == "accuracy":
            return False
        depths = [getattr(inst, name) for inst in (self, other) for name in self.depth_fields()]
        return all(isinstance(d, int) and not isinstance(d, bool) and reads_to <= d for d in depths)

    def configuration_diff(self, other: Instrument) -> list[tuple[str, Any, Any]]:
        """(dotted key, self's value, other's value) for every key of the run's configuration
        (the :data:`CONFIGURATION_KEYS` sections of the composed config, the arm's name
        included) on which two runs differ. Empty for two runs of one configuration, even
        with different seeds, folders or concurrency."""
        def flat(value: Any, prefix: str) -> dict[str, Any]:
            if isinstance(value, dict):
                out: dict[str, Any] = {}
                for k, v in value.items():
                    out.update(flat(v, f"{prefix}.{k}" if prefix else str(k)))
                return out
            return {prefix: value}

        mine = flat({k: self.config.get(k) for k in CONFIGURATION_KEYS if k in self.config}, "")
        theirs = flat({k: other.config.get(k) for k in CONFIGURATION_KEYS if k in other.config}, "")
        mine["arm"], theirs["arm"] = self.arm, other.arm
        mine["ks"], theirs["ks"] = self.ks, other.ks  # the cut-offs used, however they were given
        keys = sorted((set(mine) | set(theirs)) - set(LOCATION_KEYS))
        return [(k, mine.get(k), theirs.get(k)) for k in keys if mine.get(k) != theirs.get(k)]

    # -- serialization ------------------------------------------------------------------

    def to_json(self) -> str:
        """Compact JSON of every field."""
        return json.dumps(dataclasses.asdict(self), ensure_ascii=False, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str | bytes) -> Instrument:
        """Parse :meth:`to_json` output; unknown keys (from newer versions) are kept out.

        Raises ValueError (json.JSONDecodeError included) when ``text`` is not a JSON object.
        """
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in known}
        if "top_k" not in data:  # a run written before the depth was recorded: its config holds it
            config = data.get("config")
            arm = config.get("arm") if isinstance(config, dict) else None
            top_k = arm.get("top_k") if isinstance(arm, dict) else None
            fields["top_k"] = top_k if isinstance(top_k, int) and not isinstance(top_k, bool) else None
        return cls(**fields)


@dataclass(frozen=True)
class Difference:
    """One comparability field on which two runs differ."""

    field: str
    a: Any
    b: Any
    why: str
