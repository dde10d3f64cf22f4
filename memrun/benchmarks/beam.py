"""BEAM: "Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in LLMs" (2025).

Source: GitHub ``mohammadtavakoli78/BEAM`` at commit ``b2a3ee8b`` (no licence file: use
it for evaluation), folder ``chats/<size>/<n>/``; sizes 100K (20 conversations), 500K
(35), 1M (35) and 10M (10), 20 probing questions per conversation, two per ability:
abstention, contradiction_resolution, event_ordering, information_extraction,
instruction_following, knowledge_update, multi_session_reasoning, preference_following,
summarization, temporal_reasoning. Files, pins and which chat file is read:
:mod:`memrun.benchmarks.beam_files`.

``benchmark.split=128K`` is accepted for 100K (the README's name of the size). Under
``benchmark.preset=official`` the reader prompt is BEAM's own RAG prompt and the summary's
headline is BEAM's official ten-ability mean (:mod:`memrun.metrics.beam_official`; what
differs from memrun's default setup: docs/reproducing.md).

Record knobs (:mod:`memrun.benchmarks.record_text`, each in the instrument's ``records``):
``record_text`` (fields ``{role}``, its alias ``{speaker}``, and ``{text}``, the message's
content; default ``"{role}: {text}"``) and ``granularity=session``: one record per batch
(BEAM's sessions, keyed ``batch_<n>``), its messages joined by ``session_joiner``; an
item's gold becomes the batches holding its gold messages.

Mapping to memrun:

- one :class:`~memrun.records.Group` per conversation (history id = its number), produced
  lazily: the chat is parsed incrementally (ijson), one batch at a time (a 10M chat,
  a list of plans, one plan at a time), so only the records themselves stay in memory;
- one :class:`~memrun.records.Record` per message: key = the message ``id``, text =
  ``"<role>: <content>"``, timestamp = its batch's ``time_anchor``, session =
  ``batch_<batch_number>`` (10M: ``<plan>/batch_<n>``);
- one :class:`~memrun.records.Item` per probing question: id ``<n>:<ability>:<index>``,
  category = the ability, cluster = the conversation, answer = the ability's answer
  field (``answer``, or ``ideal_response`` / ``ideal_answer`` / ``ideal_summary`` /
  ``expected_compliance``), ``extra.rubric`` = the rubric items the judge scores,
  ``abstention`` for the abstention ability (no retrieval gold).

Retrieval gold is ``source_chat_ids`` (message ids). A list is credited as given (nested
lists flattened, repeats dropped); a dict is credited by this rule:

- ``knowledge_update`` ``{original_info, updated_info}``: ``updated_info`` only (the
  question asks for the current value; ``original_info`` is kept in
  ``extra.original_info_ids``);
- ``contradiction_resolution`` ``{first_statement, second_statement}`` and
  ``temporal_reasoning`` ``{first_event, second_event}``: both (each is half of what
  the question needs; recall_all asks for both);
- any other dict: every value (counted).

Counts (:attr:`Dataset.counts`, printed after the table as LoCoMo's are):
``answer_from_<field>`` (items whose answer field is not ``answer``), ``gold_list``,
``gold_dict_updated_only`` (and ``gold_updated_info_empty``: of those, an empty
``updated_info``, which leaves the item without gold rather than crediting the
superseded message), ``gold_dict_both``, ``gold_dict_other``, ``gold_nested``
(nested id lists flattened), ``gold_missing`` (a non-abstention question with no
``source_chat_ids`` at all, or null), ``gold_repeated`` (repeated ids dropped), ``gold_dangling``
(ids naming no message of the chat read), ``gold_empty`` (non-abstention items left
without retrieval gold), ``abstention_no_evidence``, ``time_anchor_from_message``
(batches whose own ``time_anchor`` is null, dated by their first message's, as every
published batch is), ``time_anchor_missing``, ``messages_empty`` (skipped),
``ids_repeated`` (a later message with an id already seen: skipped). A file of the wrong
shape is a DataError naming the file and the place.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import ijson

from memrun.benchmarks import beam_files, count_differences
from memrun.benchmarks.beam_files import SIZE_ALIASES
from memrun.benchmarks.lme_scan import open_json
from memrun.benchmarks.record_text import SESSION_JOINER, RecordShape
from memrun.benchmarks.text import answer_json, json_file_error, json_type, read_text_strict, stream_json_problem
from memrun.errors import ConfigError, DataError
from memrun.records import Dataset, Group, Item, Record

PRESETS = ("memrun", "official")
"""``benchmark.preset``: memrun's scoring, or BEAM's official table (:mod:`memrun.metrics.beam_official`)."""
DEFAULT_TEMPLATE = "{role}: {text}"
BEAM_FIELDS = {"role": "the message's role (user or assistant)", "speaker": "the same as {role}",
               "text": "the message's content"}
ANSWER_FIELDS = ("answer", "ideal_response", "ideal_answer", "ideal_summary", "expected_compliance")
ABSTENTION = "abstention"
DICT_CREDIT: dict[str, tuple[str, ...]] = {
    "knowledge_update": ("updated_info",),
    "contradiction_resolution": ("first_statement", "second_statement"),
    "temporal_reasoning": ("first_event", "second_event"),
}
"""Ability -> the ``source_chat_ids`` keys credited as retrieval gold (see the module docstring)."""

COUNT_KEYS = (
    *(f"answer_from_{f}" for f in ANSWER_FIELDS[1:]),
    "gold_list", "gold_dict_updated_only", "gold_updated_info_empty", "gold_dict_both", "gold_dict_other", "gold_nested",
    "gold_missing",
    "gold_repeated", "gold_dangling", "gold_empty", "abstention_no_evidence",
    "time_anchor_from_message", "time_anchor_missing", "messages_empty", "ids_repeated",
)


class Beam:
    """Loader for BEAM (see the module docstring).

    split: the size (100K, 500K, 1M, 10M). url: the raw-file address of the repository
    at the pinned commit. root: the folder under the data folder holding ``chats/``.
    path: a copy elsewhere: a folder holding the repository's ``chats/``.
    categories: ability -> label, in report order. questions_per_ability: per
    conversation (2 in the published files; a warning when a size differs).
    record_text, granularity, session_joiner: the record knobs (module docstring).
    """

    def __init__(self, *, split: str, url: str, categories: Mapping[str, str], root: str = "beam",
                 path: str | None = None, questions_per_ability: int | None = 2, preset: str = "memrun",
                 record_text: str = DEFAULT_TEMPLATE, granularity: str = "turn",
                 session_joiner: str = SESSION_JOINER) -> None:
        self.shape = RecordShape(record_text, granularity, BEAM_FIELDS, DEFAULT_TEMPLATE, session_joiner)
        split = SIZE_ALIASES.get(split, split)  # the README's "128K" is the files' 100K folder
        if preset not in PRESETS:
            raise ConfigError(f"benchmark.preset={preset}: choose one of {', '.join(PRESETS)} (official: BEAM's "
                              "reader prompt and score table, docs/reproducing.md)")
        self.preset = preset
        self.conversations = beam_files.conversations(split)  # ConfigError for an unknown size
        self.split, self.url, self.root, self.path = split, url, root, path
        self.categories = {str(k): str(v) for k, v in categories.items()}
        self.per_ability = questions_per_ability

    def load(self, data_dir: Path) -> Dataset:
        """Resolve and check every file of the size (downloading what is missing), read and
        check the questions; the chats are streamed when the run reaches them.

        Raises DataError for a missing, changed or malformed file; DownloadError when a
        download fails.
        """
        folder = data_dir / self.root
        files: list[tuple[Path, Path]] = []
        digests: list[tuple[str, str]] = []
        for conv in self.conversations:
            local = []
            for pinned in (conv.chat, conv.questions):
                path, sha = beam_files.resolve(pinned, url=self.url, folder=folder, copy=self.path)
                local.append(path)
                digests.append((pinned.path, sha))
            files.append((local[0], local[1]))
        questions = [_read_questions(q) for _, q in files]
        index = [(f"{c.number}:{ability}:{i}", ability)
                 for c, qs in zip(self.conversations, questions) for ability, rows in qs.items() for i in range(len(rows))]
        counts: dict[str, int] = dict.fromkeys(COUNT_KEYS, 0)
        warnings = []
        if self.per_ability:
            expected = {a: self.per_ability * len(self.conversations) for a in self.categories}
            diff = count_differences(Counter(a for _, a in index), expected)
            if diff:
                warnings.append(f"BEAM {self.split} per-ability counts differ from the published files: {diff}")
        groups = _Conversations([(c.number, chat, qs) for c, (chat, _), qs in zip(self.conversations, files, questions)],
                                counts, self.shape)
        return Dataset(split=self.split, sha256=beam_files.manifest_sha256(digests), groups=groups,
                       categories=dict(self.categories), comparable_categories=None, gold_match="key",
                       counts=counts, warnings=warnings, index=index, task_averaged=True,
                       records=self.shape.description())


class _Conversations:
    """The lazy groups: every ``iter()`` streams the chats from the first; counts restart."""

    def __init__(self, convs: list[tuple[int, Path, dict[str, list[dict[str, Any]]]]],
                 counts: MutableMapping[str, int], shape: RecordShape | None = None) -> None:
        self.convs, self.counts = convs, counts
        self.shape = shape or RecordShape(DEFAULT_TEMPLATE, "turn", BEAM_FIELDS, DEFAULT_TEMPLATE)

    def __iter__(self) -> Iterator[Group]:
        self.counts.update(dict.fromkeys(COUNT_KEYS, 0))
        template = self.shape.template
        render = None if template.default else (lambda role, text: template.render(role=role, speaker=role, text=text))
        for number, chat, questions in self.convs:
            records = read_chat(chat, self.counts, render)
            session_of = {r.key: r.session or r.key for r in records}
            items = [question_item(str(number), ability, i, q, set(session_of), self.counts,
                                   f"{chat.parent.name}: {ability}[{i}]")
                     for ability, rows in questions.items() for i, q in enumerate(rows)]
            group = Group(history_id=str(number), records=records, items=items)
            if self.shape.sessions:  # the batches holding an item's gold messages become its gold
                group.items = [replace(item, gold_sessions=tuple(dict.fromkeys(session_of[k] for k in item.gold_keys)))
                               for item in items]
                group = next(iter(self.shape.groups([group])))
            yield group


def _read_questions(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The probing questions file: ability -> list of question objects, checked for shape."""
    try:
        raw = json.loads(read_text_strict(path))
    except json.JSONDecodeError as exc:
        raise json_file_error(path, exc) from exc
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected an object of abilities, got {json_type(raw)}")
    for ability, rows in raw.items():
        if not isinstance(rows, list):
            raise DataError(f"{path}: '{ability}' must be a list of questions, got {json_type(rows)}")
        for i, q in enumerate(rows):
            where = f"{path}: {ability}[{i}]"
            if not isinstance(q, dict) or not isinstance(q.get("question"), str):
                raise DataError(f"{where}: expected an object with a 'question' string")
            rubric = q.get("rubric")
            if not isinstance(rubric, list) or not rubric or not all(isinstance(r, str) for r in rubric):
                raise DataError(f"{where}: 'rubric' must be a non-empty list of strings")
            if not any(isinstance(q.get(f), str) for f in ANSWER_FIELDS):
                raise DataError(f"{where}: no answer field ({', '.join(ANSWER_FIELDS)}) holds a string")
            gold = q.get("source_chat_ids")
            if gold is not None and not isinstance(gold, (list, dict)):
                raise DataError(f"{where}: 'source_chat_ids' must be a list or an object of lists, got {json_type(gold)}")
    return raw


def question_item(history: str, ability: str, index: int, q: dict[str, Any], known: set[str],
                  counts: MutableMapping[str, int], where: str) -> Item:
    """One probing question as an Item (see the module docstring for the gold rule)."""
    field = next(f for f in ANSWER_FIELDS if isinstance(q.get(f), str))
    if field != "answer":
        counts[f"answer_from_{field}"] += 1
    abstention = ability == ABSTENTION
    raw_gold = q.get("source_chat_ids")
    extra: dict[str, Any] = {"rubric": list(q["rubric"]), "answer_field": field}
    raw_keys: list[str] = []
    if abstention:
        counts["abstention_no_evidence"] += 1
        ids: list[Any] = []
    elif isinstance(raw_gold, dict):
        credited = DICT_CREDIT.get(ability)
        if credited is None or not set(credited) <= set(raw_gold):
            counts["gold_dict_other"] += 1
            credited = tuple(raw_gold)
        else:
            counts["gold_dict_updated_only" if credited == ("updated_info",) else "gold_dict_both"] += 1
        ids = [i for key in credited for i in _as_list(raw_gold[key], where)]
        if credited == ("updated_info",) and not ids:
            counts["gold_updated_info_empty"] += 1
        raw_keys = [f"{key}:{i}" for key, value in raw_gold.items() for i in _flat(_as_list(value, where), None)]
        if "original_info" in raw_gold and "original_info" not in credited:
            extra["original_info_ids"] = [str(i) for i in _flat(_as_list(raw_gold["original_info"], where), None)]
    else:
        counts["gold_list" if isinstance(raw_gold, list) else "gold_missing"] += 1
        ids = raw_gold or []
        raw_keys = [json.dumps(i) if isinstance(i, list) else str(i) for i in ids]
    gold: list[str] = []
    for i in _flat(ids, counts):
        key = str(i)
        if key in gold:
            counts["gold_repeated"] += 1
        elif key not in known:
            counts["gold_dangling"] += 1
        else:
            gold.append(key)
    if not gold and not abstention:
        counts["gold_empty"] += 1
    return Item(
        item_id=f"{history}:{ability}:{index}", history_id=history, cluster=history, category=ability,
        question=q["question"], answer=q[field], answer_raw=answer_json(q[field]),
        gold_keys=tuple(gold), gold_keys_raw=tuple(raw_keys), extra=extra, abstention=abstention,
    )


def _as_list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError(f"{where}: a 'source_chat_ids' entry must be a list of message ids, got {json_type(value)}")
    return value


def _flat(ids: list[Any], counts: MutableMapping[str, int] | None) -> Iterator[Any]:
    """The ids with nested lists flattened (counted in ``gold_nested`` when ``counts``)."""
    for i in ids:
        if isinstance(i, list):
            if counts is not None:
                counts["gold_nested"] += 1
            yield from _flat(i, counts)
        else:
            yield i


# -- the chat ---------------------------------------------------------------------------


def read_chat(path: Path, counts: MutableMapping[str, int],
              render: Callable[[str, str], str] | None = None) -> list[Record]:
    """The records of one chat file, streamed a batch (10M: a plan) at a time; ``render``
    ``(role, content) -> text`` (None: ``"<role>: <content>"``).

    Raises DataError naming the file and place for a malformed file.
    """
    records: list[Record] = []
    seen: set[str] = set()
    with open_json(path) as f:
        try:
            for position, entry in enumerate(ijson.items(f, "item", use_float=True)):
                where = f"{path}: [{position}]"
                if isinstance(entry, dict) and "turns" in entry:
                    _batch(entry, None, where, records, seen, counts, render)
                elif isinstance(entry, dict) and entry and all(isinstance(v, list) for v in entry.values()):
                    for plan, batches in entry.items():  # the 10M shape: {plan: [batch, ...]}
                        for j, batch in enumerate(batches):
                            _batch(batch, str(plan), f"{where}.{plan}[{j}]", records, seen, counts, render)
                else:
                    raise DataError(f"{where}: expected a batch object with 'turns' (or a 10M plan), got {json_type(entry)}")
        except ijson.JSONError as exc:
            raise DataError(f"{path}: {stream_json_problem(exc, path)}") from exc
    return records


def _batch(batch: Any, plan: str | None, where: str, records: list[Record], seen: set[str],
           counts: MutableMapping[str, int], render: Callable[[str, str], str] | None = None) -> None:
    if not isinstance(batch, dict) or not isinstance(batch.get("turns"), list):
        raise DataError(f"{where}: expected a batch object with a 'turns' list")
    number = batch.get("batch_number")
    session = f"batch_{number}" if plan is None else f"{plan}/batch_{number}"
    messages: list[tuple[str, dict[str, Any]]] = []
    for t, turn in enumerate(batch["turns"]):
        if not isinstance(turn, list) or not all(isinstance(m, dict) for m in turn):
            raise DataError(f"{where}.turns[{t}]: expected a list of message objects")
        messages.extend((f"{where}.turns[{t}][{k}]", m) for k, m in enumerate(turn))
    anchor = batch.get("time_anchor")
    if anchor is None:
        anchor = next((m["time_anchor"] for _, m in messages if m.get("time_anchor") is not None), None)
        counts["time_anchor_from_message" if anchor is not None else "time_anchor_missing"] += 1
    for at, m in messages:
        role, content, mid = m.get("role"), m.get("content"), m.get("id")
        if not isinstance(role, str) or not isinstance(content, (str, type(None))):
            raise DataError(f"{at}: 'role' and 'content' must be strings")
        if isinstance(mid, bool) or not isinstance(mid, (int, str)):
            raise DataError(f"{at}: 'id' must be a message id (an integer), got {json_type(mid)}")
        key = str(mid)
        if not content or not content.strip():
            counts["messages_empty"] += 1
            continue
        if key in seen:
            counts["ids_repeated"] += 1
            continue
        seen.add(key)
        text = f"{role}: {content}" if render is None else render(role, content)
        records.append(Record(key=key, text=text, timestamp=None if anchor is None else str(anchor), session=session))
