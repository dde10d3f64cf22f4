"""Schemas of the ``benchmark`` group (and the selection keys every benchmark takes)."""

from __future__ import annotations

from dataclasses import field
from typing import Dict, List, Optional

from omegaconf import MISSING

from memrun.config.schema import schema

# -- selection: every benchmark (see memrun.benchmarks.selection) -----------------------


@schema
class SliceConfig:
    """``benchmark.slice``: keep items by category and/or id (None: no constraint)."""

    category: Optional[List[str]] = None
    question_type: Optional[List[str]] = None  # the same as category (LongMemEval's name)
    ids: Optional[List[str]] = None
    ids_file: Optional[str] = None


@schema
class SampleConfig:
    """``benchmark.sample``: n items drawn under a seed (n None: no sampling)."""

    n: Optional[int] = None
    seed: int = 0


@schema
class SelectionConfig:
    """Keys every benchmark schema carries; memrun reads them, the loader never sees them."""

    ks: Optional[List[int]] = None  # the benchmark's default cut-offs (top-level ks wins)
    slice: SliceConfig = field(default_factory=SliceConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)
    limit: Optional[int] = None
    corrections: Optional[str] = None


@schema
class LocomoConfig(SelectionConfig):
    """``benchmark=locomo``: LoCoMo (Maharana et al., ACL 2024), locomo10.json."""

    _target_: str = "memrun.benchmarks.locomo.LoCoMo"
    name: str = "locomo"
    split: str = MISSING
    file: str = MISSING
    url: Optional[str] = MISSING
    sha256: Optional[str] = MISSING
    path: Optional[str] = None
    categories: Dict[int, str] = MISSING
    expected_counts: Optional[Dict[int, int]] = field(default_factory=dict)  # null: no check
    comparable_categories: List[int] = field(default_factory=list)
    session_cut: str = "turns"  # session_* columns: K counts turns | sessions (distinct)
    record_text: str = "{speaker}: {text}{image}"  # a template or speaker_colon | speaker_said | text
    granularity: str = "turn"  # turn | session (one record per session)
    session_gold: str = "normalized"  # normalized | as_written (each evidence string's session, LoCoMo's own reading)
    session_joiner: str = "\n"  # granularity=session: what joins a session's turn texts


@schema
class SyntheticConfig(SelectionConfig):
    """``benchmark=synthetic``: the author-written smoke set shipped inside memrun."""

    _target_: str = "memrun.benchmarks.synthetic.Synthetic"
    name: str = "synthetic"
    split: str = "smoke"
    smoke_test: bool = True


@schema
class LongMemEvalFileConfig:
    """One LongMemEval file: cleaned name, original release name, address, pinned sha256."""

    file: str = MISSING
    original: Optional[str] = None
    url: Optional[str] = None
    sha256: Optional[str] = None


@schema
class LongMemEvalConfig(SelectionConfig):
    """``benchmark=longmemeval``: LongMemEval (Wu et al., ICLR 2025), splits s, m, oracle."""

    _target_: str = "memrun.benchmarks.longmemeval.LongMemEval"
    name: str = "longmemeval"
    split: str = "s"
    files: Dict[str, LongMemEvalFileConfig] = MISSING
    path: Optional[str] = None
    roles: Optional[List[str]] = None  # null: user and assistant; [user] under preset=official
    cluster_by: str = "question_id"
    preset: str = "memrun"  # memrun | official (the official retrieval evaluation, docs/reproducing.md)
    categories: Dict[str, str] = MISSING
    expected_counts: Optional[Dict[str, int]] = field(default_factory=dict)  # null: no check
    record_text: str = "{role}: {text}"  # a template ({role}, {speaker}, {text}) or speaker_colon | speaker_said | text
    granularity: str = "turn"  # turn | session (one record per haystack session)
    session_gold: str = "normalized"  # normalized | as_written (answer_session_ids of every question, as MemPalace)
    session_cut: str = "sessions"  # session_* columns: K counts distinct sessions (official) | turns
    session_joiner: str = "\n"  # granularity=session: what joins a session's turn texts


@schema
class JsonlConfig(SelectionConfig):
    """``benchmark=jsonl``: a team's own benchmark in memrun's JSON Lines format."""

    _target_: str = "memrun.benchmarks.jsonl.JsonlBenchmark"
    name: str = "jsonl"
    path: Optional[str] = None
    split: Optional[str] = None
    gold_match: str = "key"
    categories: Dict[str, str] = field(default_factory=dict)
    comparable_categories: List[str] = field(default_factory=list)
    task_averaged: bool = False


@schema
class BeamConfig(SelectionConfig):
    """``benchmark=beam``: BEAM (2025), sizes 100K, 500K, 1M, 10M (see memrun.benchmarks.beam)."""

    _target_: str = "memrun.benchmarks.beam.Beam"
    name: str = "beam"
    split: str = "100K"
    url: str = MISSING
    root: str = "beam"
    path: Optional[str] = None
    questions_per_ability: Optional[int] = 2
    preset: str = "memrun"  # memrun | official (BEAM's reader prompt and score table, docs/reproducing.md)
    categories: Dict[str, str] = MISSING
    record_text: str = "{role}: {text}"  # a template ({role}, {speaker}, {text}) or speaker_colon | speaker_said | text
    granularity: str = "turn"  # turn | session (one record per batch, BEAM's sessions)
    session_joiner: str = "\n"  # granularity=session: what joins a batch's message texts
