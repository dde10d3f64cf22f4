"""LongMemEval: long-term interactive memory of chat assistants (Wu et al., ICLR 2025).

Source: https://github.com/xiaowu0162/LongMemEval; files from the Hugging Face dataset
``xiaowu0162/longmemeval-cleaned`` (MIT): ``longmemeval_s_cleaned.json`` (~115k tokens,
~50 sessions per question, 277 MB), ``longmemeval_m_cleaned.json`` (~500 sessions per
question, 2.7 GB) and ``longmemeval_oracle.json`` (evidence sessions only). Each holds
500 questions of six types (``single-session-user``, ``single-session-assistant``,
``single-session-preference``, ``multi-session``, ``temporal-reasoning``,
``knowledge-update``); 30 of them, with ids ending in ``_abs``, are abstention
questions. The original release's names (``longmemeval_s.json``, ...) load the same way.

Mapping to memrun:

- one :class:`~memrun.records.Group` per question (history id = question id), produced
  lazily while the file is parsed incrementally (ijson), so peak memory does not grow
  with the file; a first pass over the file only collects ids and types (duplicate ids
  and broken JSON fail there, before any work);
- one :class:`~memrun.records.Record` per turn of the configured roles: key
  ``<session id>_<turn number>`` (1-based over all turns of the session, the official
  turn id), text ``"<role>: <content>"``, timestamp = the session's date, session = the
  session id. Sessions are content-addressed (:mod:`memrun.benchmarks.sessions`);
- one :class:`~memrun.records.Item` per question: category = question_type, cluster =
  question_id (each question has its own haystack, so questions are the independent
  units; the dataset's ``stratify_by="category"`` tells ``memrun compare`` to resample
  them within question types, a stratum, not a cluster; ``cluster_by=question_type``
  clusters by type instead, 6 clusters, which the comparison then treats as few),
  answer as text (integers too), ``abstention`` for ``_abs`` ids, the optional
  ``superseded_answer`` field (a memrun extension; see :mod:`memrun.metrics.stale`)
  kept in ``extra``;
- retrieval gold at two granularities, as the official evaluation: turns
  (``gold_keys``: turns marked ``has_answer`` inside the evidence sessions) and sessions
  (``gold_sessions``: ``answer_session_ids`` present in the haystack). Abstention
  questions and questions with no target turn among the indexed roles get no
  retrieval gold (they are left out of retrieval metrics) and are counted.

``preset: official`` reproduces the official retrieval evaluation (``src/retrieval/
run_retrieval.py`` of github.com/xiaowu0162/LongMemEval) instead: user turns only (roles
must be ``[user]``, the default then); gold turns are the ``has_answer`` user turns of
sessions whose id contains ``answer`` (the official test, whatever
``answer_session_ids`` says; ``official_gold_differs`` counts questions where the two
disagree; user turns with empty content are records too); questions whose id contains
``_abs`` and questions without a ``has_answer``
user turn anywhere in the haystack are left out; sessions are credited only through
their evidence turns and nDCG is also given as LongMemEval's ``lme_ndcg``
(:mod:`memrun.metrics.retrieval_official`). One official case reads oddly: a
question whose only ``has_answer`` user turns lie outside ``answer`` sessions is scored
by the official script with no gold: recall_any 0, recall_all 1 (``all`` of nothing),
nDCG 0. memrun scores it so too under the preset (``extra.official_no_gold``), and
counts it (``official_scored_without_gold``, printed after the table).

Record knobs (:mod:`memrun.benchmarks.record_text`, each in the instrument's ``records``):
``record_text`` (fields ``{role}``, its alias ``{speaker}``, and ``{text}``, the turn's
content; default ``"{role}: {text}"``), ``granularity=session`` (one record per haystack
session, its indexed turns joined by ``session_joiner``) and ``session_gold=as_written``
(gold sessions: the question's ``answer_session_ids`` as given, for every question,
abstention questions included, as MemPalace's ``longmemeval_bench.py`` scores them). E.g.
MemPalace's raw session corpus: ``benchmark.roles=[user] benchmark.record_text=text
benchmark.granularity=session benchmark.session_gold=as_written``.

Rules for what the files hold irregularly (keys of :attr:`Dataset.counts`):

- ``sessions_repeated``: a session id occurring again in one haystack (the published
  files do this, with another date). Rule: the first occurrence in haystack order is
  kept, later ones are dropped; ``sessions_repeated_differ`` counts those whose turns
  differed from the kept one;
- ``answer_int``: integer answers, kept as text; ``sessions_empty``, ``turns_empty``:
  sessions without turns and turns without content (skipped; under ``preset: official``
  empty turns of the indexed role are records, as the official corpus holds them);
- ``answer_sessions_dangling``: an ``answer_session_ids`` entry not in the haystack;
- ``has_answer_outside_evidence``: a ``has_answer`` turn in a session that is not an
  evidence session (not gold, as in the official evaluation);
- ``retrieval_excluded_abstention``, ``retrieval_excluded_no_target_turn``: questions
  left out of retrieval metrics; ``sessions_shared``: sessions served from the store.
A repeated question_id is an error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import ijson

from memrun.benchmarks import count_differences, download
from memrun.benchmarks.lme_scan import cached_scan_index, open_json
from memrun.benchmarks.record_text import SESSION_JOINER, RecordShape
from memrun.benchmarks.sessions import HistoryRecords, Session, SessionStore, TurnError
from memrun.benchmarks.text import answer_json, json_type, stream_json_problem
from memrun.errors import ConfigError, DataError
from memrun.metrics.retrieval import SESSION_CUTS
from memrun.metrics.retrieval_official import ANSWER_MARK, LME_NDCG, LME_OFFICIAL_PRESET, OFFICIAL_NO_GOLD
from memrun.metrics.stale import SUPERSEDED_KEY
from memrun.records import Dataset, Group, Item

ABSTENTION_SUFFIX = "_abs"
ROLES = ("user", "assistant")
CLUSTER_BY = ("question_type", "question_id")
COUNT_KEYS = (
    "answer_int",
    "sessions_repeated",
    "sessions_repeated_differ",
    "sessions_empty",
    "turns_empty",
    "answer_sessions_dangling",
    "has_answer_outside_evidence",
    "retrieval_excluded_abstention",
    "retrieval_excluded_no_target_turn",
    "sessions_shared",
    "official_gold_differs",
    "official_scored_without_gold",
)
PRESETS = ("memrun", LME_OFFICIAL_PRESET)
SESSION_GOLD = ("normalized", "as_written")
DEFAULT_TEMPLATE = "{role}: {text}"
LME_FIELDS = {"role": "the turn's role (user or assistant)", "speaker": "the same as {role}",
              "text": "the turn's content"}


class LongMemEval:
    """Loader for the LongMemEval files (see the module docstring for the mapping).

    split: a key of ``files`` (``s``, ``m``, ``oracle``).
    files: split -> ``{file, original, url, sha256}``: the cleaned file name, the
        original release's name (used when only it is in the data folder), the pinned
        download address and sha256 (None: not pinned).
    path: a copy elsewhere; its sha256 is recorded, and a warning says when it is not
        the pinned file.
    roles: the turn roles that become records (the official retrieval baselines index
        ``[user]`` only); None: both, or ``[user]`` under the official preset.
    preset: ``memrun`` (default) or ``official`` (see the module docstring).
    cluster_by: ``question_id`` (default: every question its own cluster, stratified by
        type) or ``question_type`` (the bootstrap's cluster key).
    categories: question_type -> label, in report order.
    expected_counts: question_type -> count in the published files (a warning when a
        full file differs).
    record_text, granularity, session_gold, session_joiner: the record knobs (module docstring).
    session_cut: what K counts in the ``session_*`` columns: ``sessions`` (the first K distinct
        sessions, the official rule, default) or ``turns`` (a gold session among the top K turns).
    """

    def __init__(
        self,
        *,
        split: str,
        files: Mapping[str, Mapping[str, Any]],
        categories: Mapping[str, str],
        path: str | None = None,
        roles: Sequence[str] | None = None,
        cluster_by: str = "question_id",
        expected_counts: Mapping[str, int] | None = None,
        preset: str = "memrun",
        record_text: str = DEFAULT_TEMPLATE,
        granularity: str = "turn",
        session_gold: str = "normalized",
        session_joiner: str = SESSION_JOINER,
        session_cut: str = "sessions",
    ) -> None:
        if session_cut not in SESSION_CUTS:
            raise ConfigError(f"benchmark.session_cut={session_cut}: choose one of {', '.join(SESSION_CUTS)}")
        self.session_cut = session_cut
        if session_gold not in SESSION_GOLD:
            raise ConfigError(f"benchmark.session_gold={session_gold}: choose one of {', '.join(SESSION_GOLD)} "
                              "(as_written: every question's answer_session_ids as given, abstention included)")
        self.shape = RecordShape(record_text, granularity, LME_FIELDS, DEFAULT_TEMPLATE, session_joiner)
        self.session_gold = session_gold
        if split not in files:
            raise ConfigError(f"benchmark.split={split}: no such LongMemEval split; choose one of {', '.join(files)}")
        if cluster_by not in CLUSTER_BY:
            raise ConfigError(f"benchmark.cluster_by={cluster_by}: choose one of {', '.join(CLUSTER_BY)}")
        if preset not in PRESETS:
            raise ConfigError(f"benchmark.preset={preset}: choose one of {', '.join(PRESETS)}")
        official = preset == LME_OFFICIAL_PRESET
        roles = (("user",) if official else ROLES) if roles is None else tuple(roles)
        unknown = sorted(set(roles) - set(ROLES))
        if unknown or not roles:
            raise ConfigError(f"benchmark.roles={list(roles)}: choose a non-empty subset of {', '.join(ROLES)}")
        if official and set(roles) != {"user"}:
            raise ConfigError(f"benchmark.roles={list(roles)}: benchmark.preset=official indexes user turns only, "
                              "as the official evaluation does; drop benchmark.roles or set it to [user]")
        self.preset = preset
        self.split = split
        self.spec = dict(files[split])
        self.path = path
        self.roles = tuple(r for r in ROLES if r in roles)
        self.cluster_by = cluster_by
        self.categories = {str(k): str(v) for k, v in categories.items()}
        self.expected_counts = {str(k): int(v) for k, v in (expected_counts or {}).items()}

    def load(self, data_dir: Path) -> Dataset:
        """Resolve and checksum the file, index its questions; groups are produced lazily.

        Raises DataError for a missing, corrupt or malformed file, or a repeated
        question_id; DownloadError when a download fails.
        """
        path, digest, warnings = self._resolve(data_dir)
        if ijson.backend != "yajl2_c":
            warnings.append(f"ijson uses its {ijson.backend} backend, several times slower than yajl2_c; "
                            "reinstall ijson from a wheel that has it")
        index = cached_scan_index(path, digest)  # the same bytes were scanned before: kept
        warnings += self._check_counts(index)
        counts: dict[str, int] = dict.fromkeys(COUNT_KEYS, 0)
        split = self.split if self.roles == ROLES else f"{self.split}/{'+'.join(self.roles)}-turns"
        return Dataset(
            split=split,
            sha256=digest,
            groups=_Questions(self, path, counts),
            categories=dict(self.categories),
            comparable_categories=None,
            gold_match="key",
            counts=counts,
            warnings=warnings,
            index=index,
            task_averaged=True,
            preset=self.preset,
            named_metrics=(LME_NDCG,) if self.preset == LME_OFFICIAL_PRESET else (),
            records=self._records_field(),
            session_cut=self.session_cut,
            # Questions are independent (each has its own haystack); their types are strata.
            stratify_by="category" if self.cluster_by == "question_id" else None,
        )

    def _records_field(self) -> str | None:
        """The instrument's ``records``: the unit and text when not the default, and the gold
        sessions' reading when it is ``as_written``."""
        base = self.shape.description()
        if self.session_gold == "normalized":
            return base
        return f"{base or f'unit=turn; text={DEFAULT_TEMPLATE}'}; session gold: answer_session_ids as written"

    def _render(self) -> Any:
        """The SessionStore's record text function (None: its own ``"<role>: <content>"``)."""
        template = self.shape.template
        if template.default:
            return None
        return lambda role, content: template.render(role=role, speaker=role, text=content)

    def _resolve(self, data_dir: Path) -> tuple[Path, str, list[str]]:
        file, original = self.spec["file"], self.spec.get("original")
        pinned = self.spec.get("sha256")
        if self.path:
            path, digest = download.resolve(file, url=None, sha256=None, folder=data_dir, path=self.path)
            if pinned and digest != pinned:
                return path, digest, [
                    f"{path} is not the published {file} (sha256 {digest[:12]}, published {pinned[:12]}); "
                    "its runs compare only with runs on the same file"
                ]
            return path, digest, []
        if original and not (data_dir / file).is_file() and (data_dir / original).is_file():
            path, digest = download.resolve(original, url=None, sha256=None, folder=data_dir)
            return path, digest, [f"using the original release {original}, not the cleaned {file}"]
        path, digest = download.resolve(file, url=self.spec.get("url"), sha256=pinned, folder=data_dir)
        return path, digest, []

    def _check_counts(self, index: list[tuple[str, str]]) -> list[str]:
        diff = self.expected_counts and count_differences(Counter(t for _, t in index), self.expected_counts)
        return [f"LongMemEval per-type counts differ from the published files: {diff}"] if diff else []

    # -- streaming ------------------------------------------------------------------

    def stream(self, path: Path, counts: MutableMapping[str, int]) -> Iterator[Group]:
        """Parse ``path`` incrementally, yielding one Group per question.

        ``counts`` is reset, then updated as questions are read. Raises DataError naming
        the question and field for a malformed question.
        """
        counts.update(dict.fromkeys(COUNT_KEYS, 0))
        store = SessionStore(self.roles, keep_empty=self.preset == LME_OFFICIAL_PRESET, render=self._render())
        with open_json(path) as f:
            try:
                for position, raw in enumerate(ijson.items(f, "item", use_float=True)):
                    yield self.group(raw, f"{path}: question {position}", store, counts)
                    counts["sessions_shared"] = store.shared
            except ijson.JSONError as exc:
                raise DataError(f"{path}: {stream_json_problem(exc, path)}") from exc

    def group(self, raw: Any, where: str, store: SessionStore, counts: MutableMapping[str, int]) -> Group:
        """Normalize one question object into a Group (see the module docstring)."""
        if not isinstance(raw, dict):
            raise DataError(f"{where}: expected an object, got {json_type(raw)}")
        qid = _field(raw, "question_id", str, where)
        where = f"{where} ({qid})"
        qtype = _field(raw, "question_type", str, where)
        question = _field(raw, "question", str, where)
        sessions = self._haystack(raw, where, store, counts)
        answer_ids = [str(s) for s in _field(raw, "answer_session_ids", list, where)]
        evidence = [s for s in dict.fromkeys(answer_ids) if s in sessions]
        counts["answer_sessions_dangling"] += len(set(answer_ids)) - len(evidence)
        counts["has_answer_outside_evidence"] += sum(
            len(s.answer_keys) for sid, s in sessions.items() if sid not in evidence
        )
        abstention = qid.endswith(ABSTENTION_SUFFIX)
        scored_without_gold = False
        if self.preset == LME_OFFICIAL_PRESET:
            gold_turns, evidence, scored_without_gold = self._official_gold(qid, sessions, evidence, counts)
        else:
            gold_turns = [k for sid in evidence for k in sessions[sid].gold_keys]
            if abstention:
                counts["retrieval_excluded_abstention"] += 1
            elif not gold_turns:
                counts["retrieval_excluded_no_target_turn"] += 1
            if abstention or not gold_turns:
                gold_turns, evidence = [], []
        raw_answer = raw.get("answer")
        if isinstance(raw_answer, bool) or not isinstance(raw_answer, (str, int, float)):
            raise DataError(f"{where}: 'answer' must be a string or a number, got {json_type(raw_answer)}")
        if isinstance(raw_answer, int):
            counts["answer_int"] += 1
        extra: dict[str, Any] = {"answer_session_ids": answer_ids}
        if isinstance(raw.get(SUPERSEDED_KEY), (str, int, float)):
            extra[SUPERSEDED_KEY] = str(raw[SUPERSEDED_KEY])
        if scored_without_gold:
            extra[OFFICIAL_NO_GOLD] = True
        if self.session_gold == "as_written":
            evidence = list(dict.fromkeys(answer_ids))
        item = Item(
            item_id=qid,
            history_id=qid,
            cluster=qtype if self.cluster_by == "question_type" else qid,
            category=qtype,
            question=question,
            answer=str(raw_answer),
            answer_raw=answer_json(raw_answer),
            gold_keys=tuple(gold_turns),
            gold_keys_raw=tuple(k for s in sessions.values() for k in s.answer_keys),
            question_date=raw.get("question_date") if isinstance(raw.get("question_date"), str) else None,
            extra=extra,
            gold_sessions=tuple(evidence),
            abstention=abstention,
        )
        return Group(history_id=qid, records=HistoryRecords(list(sessions.values())), items=[item])

    @staticmethod
    def _official_gold(
        qid: str, sessions: Mapping[str, Session], evidence: list[str], counts: MutableMapping[str, int]
    ) -> tuple[list[str], list[str], bool]:
        """(gold turns, gold sessions, scored without gold) under the official rules (module
        docstring), counted."""
        if ABSTENTION_SUFFIX in qid:  # the official test is a substring, not a suffix
            counts["retrieval_excluded_abstention"] += 1
            return [], [], False
        if not any(s.gold_keys for s in sessions.values()):  # no has_answer user turn anywhere
            counts["retrieval_excluded_no_target_turn"] += 1
            return [], [], False
        gold_sessions = [sid for sid, s in sessions.items() if ANSWER_MARK in sid and s.gold_keys]
        counts["official_gold_differs"] += set(gold_sessions) != {sid for sid in evidence if sessions[sid].gold_keys}
        gold_turns = [k for sid in gold_sessions for k in sessions[sid].gold_keys]
        counts["official_scored_without_gold"] += not gold_turns
        return gold_turns, gold_sessions, not gold_turns

    def _haystack(
        self, raw: dict[str, Any], where: str, store: SessionStore, counts: MutableMapping[str, int]
    ) -> dict[str, Session]:
        """Session id -> Session in haystack order, applying the repeated-id rule."""
        ids = _field(raw, "haystack_session_ids", list, where)
        dates = _field(raw, "haystack_dates", list, where)
        turns_lists = _field(raw, "haystack_sessions", list, where)
        if not len(ids) == len(dates) == len(turns_lists):
            raise DataError(
                f"{where}: haystack_session_ids, haystack_dates and haystack_sessions have "
                f"{len(ids)}, {len(dates)} and {len(turns_lists)} entries; they must be equal"
            )
        kept: dict[str, Session] = {}
        for sid, date, turns in zip(ids, dates, turns_lists):
            sid = str(sid)
            if not isinstance(turns, list):
                raise DataError(f"{where}: session {sid}: expected a list of turns, got {json_type(turns)}")
            try:
                session = store.session(sid, str(date) if date is not None else None, turns)
            except TurnError as exc:
                raise DataError(f"{where}: session {sid}: {exc}") from None
            if sid in kept:
                counts["sessions_repeated"] += 1
                counts["sessions_repeated_differ"] += session.digest != kept[sid].digest
                continue
            kept[sid] = session
            counts["sessions_empty"] += not turns
            counts["turns_empty"] += session.n_empty
        return kept


class _Questions:
    """The lazy groups of one file: every ``iter()`` streams the file from the start."""

    def __init__(self, loader: LongMemEval, path: Path, counts: MutableMapping[str, int]) -> None:
        self.loader, self.path, self.counts = loader, path, counts

    def __iter__(self) -> Iterator[Group]:
        return iter(self.loader.shape.groups(self.loader.stream(self.path, self.counts)))


def _field(raw: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = raw.get(key)
    if not isinstance(value, kind):
        got = "missing" if key not in raw else f"a {type(value).__name__}"
        raise DataError(f"{where}: '{key}' must be a {kind.__name__}, got {got}")
    return value
