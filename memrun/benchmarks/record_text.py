"""What a benchmark's record holds: the text template of a turn, and the record unit.

Published retrieval numbers were computed over records written otherwise than memrun's
default ``"Speaker: text"``: MemPalace embeds ``Speaker said, "text"``, memory-core-eval
indexes the text alone, and the dense numbers move by points with the formatting alone.
Two knobs re-derive them, each part of the instrument (``records``), so runs over
other texts never compare:

- ``benchmark.record_text``: a template over the benchmark's fields (LoCoMo:
  ``{speaker}``, ``{text}``, ``{image}``, ``{caption}``), or one of the names of
  :data:`NAMED_TEMPLATES` (a Hydra override cannot hold braces unquoted:
  ``benchmark.record_text=speaker_said``);
- ``benchmark.granularity``: ``turn`` (one record per turn, the default) or ``session``
  (one record per session: its turns' texts joined with ``benchmark.session_joiner``, a
  newline by default, keyed by the session id; the item's gold becomes its gold sessions),
  as MemPalace's ``--granularity session`` builds its corpus (LongMemEval's official
  session index joins with a space).

LoCoMo (sessions ``session_<n>``), LongMemEval (its haystack sessions) and BEAM (its
batches, ``batch_<n>``) take both knobs; :class:`RecordShape` holds them for a loader.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from dataclasses import replace

from memrun.errors import ConfigError
from memrun.records import Group, Record

GRANULARITIES = ("turn", "session")
NAMED_TEMPLATES: dict[str, str] = {
    "speaker_colon": "{speaker}: {text}",
    "speaker_said": '{speaker} said, "{text}"',
    "text": "{text}",
}
"""Templates by name: ``"Speaker: text"``, MemPalace's ``Speaker said, "text"``, the text alone."""
SESSION_JOINER = "\n"
_CONTENT_FIELDS = ("text", "caption", "image")


class RecordTemplate:
    """A validated record-text template (see the module docstring).

    spec: a template or a name of :data:`NAMED_TEMPLATES`; fields: the benchmark's field
    names -> what they hold (for the error); key: the config key, for errors.
    Raises ConfigError naming ``key`` for an unknown field or a malformed template.
    """

    def __init__(self, spec: str, fields: Mapping[str, str], key: str, default: str | None = None) -> None:
        self.spec = spec
        self.template = NAMED_TEMPLATES.get(spec, spec)
        self.default = spec == default if default is not None else False
        try:
            used = [name for _, name, _, _ in string.Formatter().parse(self.template) if name is not None]
        except ValueError as exc:
            raise ConfigError(f"{key}={spec!r}: not a template ({exc}); e.g. '{{speaker}}: {{text}}' or one of "
                              f"{', '.join(NAMED_TEMPLATES)}") from exc
        unknown = [name for name in used if name not in fields]
        if unknown or not used:
            what = f"unknown field {{{unknown[0]}}}" if unknown else "no field"
            listing = "; ".join(f"{{{n}}}: {why}" for n, why in fields.items())
            raise ConfigError(f"{key}={spec!r}: {what}; use {listing}, or one of {', '.join(NAMED_TEMPLATES)}")
        self.used = frozenset(used)

    def render(self, **values: str) -> str:
        """The record text for one turn's field values."""
        return self.template.format(**values)

    def has_content(self, **values: str) -> bool:
        """Whether a content field the template uses is non-empty (else the record would be blank)."""
        return any(values.get(name) for name in _CONTENT_FIELDS if name in self.used)


class RecordShape:
    """A benchmark's record knobs, validated: ``record_text``, ``granularity`` and ``session_joiner``.

    fields: the benchmark's template fields -> what they hold; default: its default template.
    Raises ConfigError naming the key for a bad template, granularity or joiner.
    """

    def __init__(self, record_text: str, granularity: str, fields: Mapping[str, str], default: str,
                 session_joiner: str = SESSION_JOINER) -> None:
        self.template = RecordTemplate(record_text, fields, "benchmark.record_text", default)
        if granularity not in GRANULARITIES:
            raise ConfigError(f"benchmark.granularity={granularity}: choose one of {', '.join(GRANULARITIES)} "
                              "(turn: one record per turn; session: one record per session)")
        if not isinstance(session_joiner, str):
            raise ConfigError(f"benchmark.session_joiner={session_joiner!r}: must be text (a newline by default)")
        self.granularity, self.joiner, self.default_text = granularity, session_joiner, default

    @property
    def sessions(self) -> bool:
        """Whether a record is a whole session."""
        return self.granularity == "session"

    def groups(self, groups: Iterable[Group]) -> Iterable[Group]:
        """The groups as loaded (turn granularity), or each as one record per session."""
        if not self.sessions:
            return groups
        return (as_session_documents(g, self.joiner) for g in groups)

    def description(self) -> str | None:
        """The instrument's ``records`` field (:func:`records_description`)."""
        return records_description(self.granularity, self.template, self.default_text, self.joiner)


def as_session_documents(group: Group, joiner: str = SESSION_JOINER) -> Group:
    """The group with one record per session: key and session = the session id, text = the
    session's record texts joined with ``joiner`` in order, timestamp = its first record's.

    Items' ``gold_keys`` become their ``gold_sessions`` (so recall@K counts sessions); their
    raw evidence and session gold are kept.
    """
    texts: dict[str, list[str]] = {}
    dates: dict[str, str | None] = {}
    for record in group.records:
        session = record.session or record.key
        texts.setdefault(session, []).append(record.text)
        dates.setdefault(session, record.timestamp)
    records = [Record(key=s, text=joiner.join(t), timestamp=dates[s], session=s) for s, t in texts.items()]
    items = [replace(item, gold_keys=tuple(item.gold_sessions)) for item in group.items]
    return Group(history_id=group.history_id, records=records, items=items)


def records_description(granularity: str, template: RecordTemplate, default: str,
                        joiner: str = SESSION_JOINER) -> str | None:
    """The instrument's ``records`` field: None for the benchmark's defaults (turn records,
    its own text), else ``unit=<granularity>; text=<template>`` (and ``; joined by <joiner>``
    for session records joined otherwise than by a newline)."""
    if granularity == GRANULARITIES[0] and (template.spec == default or template.template == default):
        return None
    joined = f"; joined by {joiner!r}" if granularity == "session" and joiner != SESSION_JOINER else ""
    return f"unit={granularity}; text={template.template}{joined}"
