"""LoCoMo: very long-term conversational memory (Maharana et al., ACL 2024).

Source: https://github.com/snap-research/LoCoMo, ``data/locomo10.json`` (CC BY-NC 4.0):
10 conversations between two speakers over up to 35 sessions, 1,986 QA rows in five
categories (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial; the
names come from the config because published papers disagree on them).

Mapping to memrun:

- one :class:`~memrun.records.Group` per conversation (an arm indexes it once);
- one :class:`~memrun.records.Record` per dialogue turn: key = ``dia_id``, text =
  ``"<speaker>: <text>"`` plus ``" [image: <blip_caption>]"`` when the turn shares an
  image, timestamp = the session's date as written, session = ``session_<n>``;
- one :class:`~memrun.records.Item` per QA row: id ``<sample_id>:<row index>``, cluster
  = the conversation, category = the raw integer as text, gold keys = the evidence
  dia_ids after normalization, gold sessions = the sessions holding them (``D8:6`` lies
  in ``session_8``), scored in the ``session_*`` columns with K counting *turns* by
  default (``session_cut: turns``: a hit is credited when one of the top K turns lies
  in a gold session, as most published LoCoMo harnesses count; ``sessions``: the first
  K distinct sessions, LongMemEval's rule);
- LoCoMo's own RAG recall, ``evidence_share@K`` (:mod:`memrun.metrics.retrieval_official`),
  read from the raw evidence strings (``gold_keys_raw``), beside recall@K.

The file is messy; the loader keeps every row and counts what it normalized or could
not resolve (keys of :attr:`Dataset.counts`):

- ``answer_int``: answers given as integers, kept as text (``2022`` -> ``"2022"``);
- ``answer_missing``: rows without ``answer`` (category 5 rows carry
  ``adversarial_answer`` instead, kept as an extra column);
- ``evidence_split``: one evidence string naming several ids (``"D8:6; D9:17"``);
- ``evidence_reformatted``: an id written another way with one reading
  (``"D:11:26"`` -> ``D11:26``, ``"D30:05"`` -> ``D30:5``);
- ``evidence_unparseable``: a string with no dia_id reading (``"D"``), dropped from gold;
- ``evidence_dangling``: a well-formed id that names no turn of the conversation;
- ``gold_empty``: items left with no retrieval gold (not scored on retrieval);
- ``questions_repeated``: a question asked again in the same conversation (both kept);
- ``sessions_empty``: a session with a date but no turns; ``turns_empty``: a turn with
  neither text nor image caption; ``turns_without_id``: a turn with no ``dia_id`` (no
  key to retrieve it by); all three are skipped;
- ``category_missing``: a QA row without a category (kept, category ``"unknown"``).

A file that is not LoCoMo-shaped at all (not a list, a conversation or session of the
wrong type, two conversations with one ``sample_id``, no conversation), a field of a
JSON type with no reading (``"evidence": 7``, an object as an answer, a list as a
speaker) or bytes that are not UTF-8 is a DataError naming the file and the place.
Types with one reading are read so: numbers as text (answers are counted), a string
``evidence`` as a one-element list, null as absent.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memrun.benchmarks import count_differences, download
from memrun.benchmarks.record_text import SESSION_JOINER, RecordShape, RecordTemplate
from memrun.benchmarks.text import answer_json, json_file_error, json_type, read_text_strict
from memrun.errors import ConfigError, DataError
from memrun.metrics.retrieval import SESSION_CUTS
from memrun.metrics.retrieval_official import EVIDENCE_SHARE, evidence_session
from memrun.records import Dataset, Group, Item, Record

_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_DIA_ID_LOOSE = re.compile(r"D:?\s*(\d+)\s*:\s*(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")

COUNT_KEYS = (
    "answer_int",
    "answer_missing",
    "evidence_split",
    "evidence_reformatted",
    "evidence_unparseable",
    "evidence_dangling",
    "gold_empty",
    "questions_repeated",
    "sessions_empty",
    "turns_empty",
    "turns_without_id",
    "category_missing",
)  # and turns_blank_under_template, present only when a record_text template left a turn blank

SESSION_GOLD = ("normalized", "as_written")
"""How gold sessions are read: from the normalized evidence ids (``D8:6; D9:17`` -> sessions 8
and 9, dangling ids dropped), or as LoCoMo's code (and MemPalace's) reads each evidence string
(``ev.split(':')[0][1:]``: ``D8:6; D9:17`` -> 8 only, ``D:11:26`` -> none, a dangling id's session kept)."""
DEFAULT_TEMPLATE = "{speaker}: {text}{image}"
"""A turn's record text by default: ``"Speaker: text"`` plus ``" [image: caption]"``."""
LOCOMO_FIELDS = {"speaker": "the speaker's name", "text": "the turn's text (stripped)",
                 "image": "' [image: <caption>]' when the turn shares an image, else empty",
                 "caption": "the image caption alone (empty when none)"}


class LoCoMo:
    """Loader for ``locomo10.json`` (see the module docstring for the mapping)."""

    def __init__(
        self,
        *,
        split: str,
        file: str,
        url: str | None,
        sha256: str | None,
        categories: Mapping[int, str],
        expected_counts: Mapping[int, int] | None = None,
        comparable_categories: Sequence[int] = (),
        path: str | None = None,
        session_cut: str = "turns",
        record_text: str = DEFAULT_TEMPLATE,
        granularity: str = "turn",
        session_gold: str = "normalized",
        session_joiner: str = SESSION_JOINER,
    ) -> None:
        if session_gold not in SESSION_GOLD:
            raise ConfigError(f"benchmark.session_gold={session_gold}: choose one of {', '.join(SESSION_GOLD)} "
                              "(as_written: the session each evidence string names, read as LoCoMo's own code reads it)")
        self.session_gold = session_gold
        self.shape = RecordShape(record_text, granularity, LOCOMO_FIELDS, DEFAULT_TEMPLATE, session_joiner)
        self.template, self.granularity = self.shape.template, granularity
        if session_cut not in SESSION_CUTS:
            raise ConfigError(f"benchmark.session_cut={session_cut}: choose one of {', '.join(SESSION_CUTS)}")
        if split != "locomo10" and sha256 is not None:
            raise ConfigError(f"benchmark.split={split}: the checksummed file is the published locomo10.json, split "
                              "'locomo10'; a split name of your own is for a LoCoMo-format file of your own "
                              "(benchmark.path=<file> benchmark.sha256=null)")
        self.session_cut = session_cut
        self.split = split
        self.file = file
        self.url = url
        self.sha256 = sha256
        self.path = path
        self.categories = {str(k): str(v) for k, v in categories.items()}
        self.expected_counts = {str(k): int(v) for k, v in (expected_counts or {}).items()}
        self.comparable = [str(c) for c in comparable_categories] or None

    def load(self, data_dir: Path) -> Dataset:
        """Resolve, checksum and parse the file. Raises DataError on a malformed file."""
        path, digest = download.resolve(
            self.file, url=self.url, sha256=self.sha256, folder=data_dir, path=self.path
        )
        try:
            raw = json.loads(read_text_strict(path))
        except json.JSONDecodeError as exc:
            raise json_file_error(path, exc) from exc
        if not isinstance(raw, list):
            raise DataError(f"{path}: expected a list of conversations, got {json_type(raw)}")
        if not raw:
            raise DataError(f"{path}: the file holds no conversation")
        counts: Counter[str] = Counter({k: 0 for k in COUNT_KEYS})
        groups = [self._conversation(path, i, conv, counts) for i, conv in enumerate(raw)]
        groups = list(self.shape.groups(groups))
        seen: set[str] = set()
        for group in groups:
            if group.history_id in seen:
                raise DataError(f"{path}: sample_id {group.history_id!r} names two conversations; item ids would clash")
            seen.add(group.history_id)
        dataset = Dataset(
            split=self.split,
            sha256=digest,
            groups=groups,
            categories=self.categories,
            comparable_categories=self.comparable,
            gold_match="key",
            counts=dict(counts),
            session_cut=self.session_cut,
            # evidence_share reads dia_ids: it has no reading when records are whole sessions
            named_metrics=(EVIDENCE_SHARE,) if self.granularity == "turn" else (),
            records=self._records_field(),
        )
        dataset.warnings.extend(self._check_category_counts(dataset))
        return dataset

    def _records_field(self) -> str | None:
        """The instrument's ``records``: the unit and text when not the default, and the
        session gold's reading when it is LoCoMo's own."""
        base = self.shape.description()
        if self.session_gold == "normalized":
            return base
        return f"{base or f'unit=turn; text={DEFAULT_TEMPLATE}'}; session gold: as written"

    # -- one conversation ---------------------------------------------------------

    def _conversation(self, path: Path, index: int, conv: Any, counts: Counter[str]) -> Group:
        where = f"{path}: conversation {index}"
        if not isinstance(conv, dict) or not isinstance(conv.get("conversation"), dict):
            raise DataError(f"{where}: expected an object with a 'conversation' object")
        sample_id = str(_typed(conv, "sample_id", where, (str, int), "a string") or f"conv-{index}")
        records = _records(conv["conversation"], counts, f"{path}: {sample_id}", self.template)
        known = {r.key: r.session or "" for r in records}
        items: list[Item] = []
        asked: set[str] = set()
        qa_rows = conv.get("qa")
        if "qa" not in conv:
            raise DataError(f"{where} ({sample_id}): has no 'qa' key; each LoCoMo conversation lists its questions "
                            "there (an empty list for none)")
        if not isinstance(qa_rows, list):
            raise DataError(f"{where} ({sample_id}): 'qa' must be a list of questions, got {json_type(qa_rows)}")
        for row, qa in enumerate(qa_rows):
            if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
                raise DataError(f"{_qa_row(where, sample_id, row)}: expected an object with a 'question' string")
            question = qa["question"]
            if question in asked:
                counts["questions_repeated"] += 1
            asked.add(question)
            items.append(self._item(sample_id, row, qa, known, counts, where))
        return Group(history_id=sample_id, records=records, items=items)

    def _item(self, sample_id: str, row: int, qa: dict[str, Any], known: Mapping[str, str], counts: Counter[str],
              conversation: str) -> Item:
        """One QA row as an Item (``conversation``: where the conversation is, for an error's place)."""
        # each field's common JSON type is checked inline; any other goes through _typed (its reading or its error)
        if type(raw_answer := qa.get("answer")) not in _SCALAR:
            raw_answer = _typed(qa, "answer", _qa_row(conversation, sample_id, row), (str, int, float), "a string or a number")
        answer = None if raw_answer is None else str(raw_answer)
        if raw_answer is None:
            counts["answer_missing"] += 1
        elif isinstance(raw_answer, int):
            counts["answer_int"] += 1
        if type(evidence_raw := qa.get("evidence")) is not list:
            evidence_raw = _typed(qa, "evidence", _qa_row(conversation, sample_id, row), (list, str), "a list of dia_id strings") or []
        if isinstance(evidence_raw, str):
            evidence_raw = [evidence_raw]
        for i, entry in enumerate(evidence_raw):
            if not isinstance(entry, str):
                raise DataError(f"{_qa_row(conversation, sample_id, row)}: 'evidence[{i}]' must be a dia_id string "
                                f"such as D1:3, got {json_type(entry)}")
        gold = _normalize_evidence(evidence_raw, known, counts)
        if not gold:
            counts["gold_empty"] += 1
        if type(category := qa.get("category")) not in _CATEGORY:
            category = _typed(qa, "category", _qa_row(conversation, sample_id, row), (int, str), "an integer")
        if category is None:
            counts["category_missing"] += 1
        extra: dict[str, Any] = {}
        if type(adversarial := qa.get("adversarial_answer")) not in _SCALAR:
            adversarial = _typed(qa, "adversarial_answer", _qa_row(conversation, sample_id, row), (str, int, float), "a string")
        if adversarial is not None:
            extra["adversarial_answer"] = str(adversarial)
        gold_sessions = (tuple(dict.fromkeys(map(known.__getitem__, gold))) if self.session_gold == "normalized"
                         else tuple(dict.fromkeys(s for s in map(evidence_session, evidence_raw) if s)))
        # positional, in Item's field order (item_id, history_id, cluster, category, question, answer, answer_raw,
        # gold_keys, gold_keys_raw, question_date, extra, gold_sessions, abstention): ~1 us less an item than keywords
        return Item(f"{sample_id}:{row}", sample_id, sample_id, "unknown" if category is None else str(category),
                    qa["question"], answer, answer_json(raw_answer), tuple(gold), tuple(evidence_raw), None, extra,
                    gold_sessions, False)

    def _check_category_counts(self, dataset: Dataset) -> list[str]:
        """The load's warnings about categories: values ``categories`` does not name (whatever
        ``expected_counts`` says: with it null they passed without a word), then counts that
        differ from ``expected_counts``."""
        found = Counter(item.category for item in dataset.items())
        warnings = []
        unnamed = {c: n for c, n in found.items() if c not in self.categories and c != "unknown"}  # unknown: counted
        if unnamed:
            listed = ", ".join(f"{c} ({n} row{'s' * (n != 1)})" for c, n in sorted(unnamed.items(), key=_natural))
            named = ", ".join(f"{c} {label}" for c, label in self.categories.items()) or "none"
            outside = self.comparable and any(c not in self.comparable for c in unnamed)
            comparable = " and outside overall_comparable" if outside else ""
            labels = ", ".join(f"{c}: <label>" for c, _ in sorted(unnamed.items(), key=_natural))
            warnings.append(f"LoCoMo category {listed}: not in benchmark.categories ({named}); kept under the raw "
                            f"value, with no label{comparable}; if they are yours, name them: "
                            f"'+benchmark.categories={{{labels}}}'")
        if self.expected_counts and (diff := count_differences(found, self.expected_counts)):
            warnings.append(f"LoCoMo per-category counts differ from the published file: {diff}")
        return warnings


def _natural(pair: tuple[str, int]) -> tuple[int, str]:
    """Sort key of a (category, count) pair: integers by value, then other strings."""
    return (int(pair[0]), "") if pair[0].isdigit() else (1 << 62, pair[0])


def _records(conversation: dict[str, Any], counts: Counter[str], where: str = "conversation",
             template: RecordTemplate | None = None) -> list[Record]:
    """Turn records in session order; empty sessions and turns are skipped and counted.

    template: how a turn becomes the record's text (None: :data:`DEFAULT_TEMPLATE`). A turn
    whose text under it is blank (``{text}`` of a turn holding only an image) is skipped and
    counted ``turns_blank_under_template``.

    Raises DataError when a session is not a list of turn objects.
    """
    sessions = sorted(
        (int(m.group(1)), key) for key in conversation if (m := _SESSION.fullmatch(key))
    )
    dated = {int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)_date_time", key))}
    present = {n for n, key in sessions if conversation[key]}
    counts["sessions_empty"] += len(dated - present)
    records: list[Record] = []
    append = records.append
    plain = template is None or template.default  # "Speaker: text [image: caption]", written out below
    for _n, key in sessions:
        turns = [] if conversation[key] is None else conversation[key]
        if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
            raise DataError(f"{where} {key}: expected a list of turn objects")
        date = _typed(conversation, f"{key}_date_time", where, (str,), "a string")
        for i, turn in enumerate(turns):
            text, caption, dia_id, speaker = turn.get("text"), turn.get("blip_caption"), turn.get("dia_id"), turn.get("speaker")
            if not (type(text) in _SCALAR and type(caption) in _SCALAR and type(dia_id) in _ID and type(speaker) in _SCALAR):
                # a field of another type: say which, where (the common case skips building this)
                at = f"{where} {key}[{i}]" + (f" ({dia_id})" if isinstance(dia_id, str) else "")
                text = _typed(turn, "text", at, (str, int, float), "a string (or a number)")
                caption = _typed(turn, "blip_caption", at, (str, int, float), "a string (or a number)")
                dia_id = _typed(turn, "dia_id", at, (str,), "a string such as D1:3")
                speaker = _typed(turn, "speaker", at, (str, int, float), "a string (or a number)")
            # a number is text ("0" too); a string, the common case, needs no str()
            text = text.strip() if type(text) is str else "" if text is None else str(text).strip()
            caption = caption.strip() if type(caption) is str else "" if caption is None else str(caption).strip()
            if not (text or caption):
                counts["turns_empty"] += 1
                continue
            if not dia_id:
                counts["turns_without_id"] += 1
                continue
            if plain:
                body = f"{'?' if speaker is None else speaker}: {text}"
                if caption:
                    body += f" [image: {caption}]"
            else:
                assert template is not None
                body = template.render(speaker="?" if speaker is None else str(speaker), text=text,
                                       image=f" [image: {caption}]" if caption else "", caption=caption)
                if not template.has_content(text=text, caption=caption):
                    counts["turns_blank_under_template"] += 1
                    continue
            append(Record(dia_id, body, date, key))  # key, text, timestamp, session (positional: ~0.4 us less a turn)
    return records


# The JSON types a turn's fields may have (None: absent or null), as exact types: a bool is
# an int subclass but never passes as a number (see _typed).
_SCALAR = frozenset({type(None), str, int, float})
_ID = frozenset({type(None), str})
_CATEGORY = frozenset({type(None), int, str})


def _qa_row(conversation: str, sample_id: str, row: int) -> str:
    """Where QA row ``row`` is, for its error: ``<file>: conversation <i> (<sample_id>) qa row <row>``."""
    return f"{conversation} ({sample_id}) qa row {row}"


def _typed(obj: Mapping[str, Any], key: str, where: str, kinds: tuple[type, ...], what: str) -> Any:
    """``obj[key]``, None when absent or null; DataError ``<where>: 'key' must be <what>,
    got <JSON type>`` when it is not one of ``kinds`` (a boolean never passes as a number)."""
    value = obj.get(key)
    if value is None or (isinstance(value, kinds) and not isinstance(value, bool)):
        return value
    raise DataError(f"{where}: '{key}' must be {what}, got {json_type(value)}")


def _normalize_evidence(raw: list[str], known: Mapping[str, str], counts: Counter[str]) -> list[str]:
    """Canonical dia_ids from raw evidence strings, in order, without duplicates."""
    gold: list[str] = []
    for entry in raw:
        parts = _EVIDENCE_SEPARATORS.split(entry.strip())
        if len(parts) != 1 or not parts[0]:  # the common entry is one id, with nothing to drop
            parts = [p for p in parts if p]
            if len(parts) > 1:
                counts["evidence_split"] += 1
        for part in parts:
            canonical = _canonical(part)
            if canonical is None:
                counts["evidence_unparseable"] += 1
                continue
            if canonical != part:
                counts["evidence_reformatted"] += 1
            if canonical not in known:
                counts["evidence_dangling"] += 1
                continue
            if canonical not in gold:
                gold.append(canonical)
    return gold


@functools.lru_cache(maxsize=1 << 14)
def _canonical(part: str) -> str | None:
    """The dia_id ``part`` names, written canonically (``D:11:26`` and ``D11:026`` -> ``D11:26``);
    None when it has no dia_id reading. Cached: a file names most turns several times."""
    match = _DIA_ID.fullmatch(part) or _DIA_ID_LOOSE.fullmatch(part)
    return None if match is None else f"D{int(match.group(1))}:{int(match.group(2))}"
