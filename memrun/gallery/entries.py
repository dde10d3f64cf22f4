"""Gallery entries: one YAML file per published number, read and checked here.

Keys (all files under ``memrun/gallery/entries/``; a ConfigError names the file and key):

- ``name`` (the file's stem), ``title``, ``benchmark``;
- ``source``: ``publisher``, ``where`` (paper table, repository file), ``version``
  (commit, package version), ``licence`` of what the gallery keeps from it;
- ``kind``: ``run`` (memrun re-derives the values with ``overrides``), ``statistics`` (a
  dataset statistic, ``statistic`` names the function of :mod:`memrun.gallery.statistics`)
  or ``not_reproducible`` (listed with ``reason``: a documented non-reproduction);
- ``data``: files under ``$MEMRUN_DATA_DIR`` the entry needs (``{file, sha256?, what?}``:
  ``what`` says which file it is when its name alone does not, e.g. an original release);
  overrides may name ``{data}`` (that folder) and ``{files}`` (the gallery's own files);
  ``needs``: Python modules it imports (a local embedder);
- ``values``: ``{metric, published, tolerance, why}`` each (``metric`` a run metric such as
  ``session_recall@5``, or a statistic's cell); ``not_reproducible`` on a value: its reason;
- ``credit_absent``: items without gold count 1 in the peer's mean (MemPalace); the
  count credited is shown beside the value;
- ``per_item``: the publisher's per-item file: ``file`` (under ``memrun/gallery/files/``,
  or null: ``needs the original file``), ``name`` (as published), ``sha256`` (of the
  published bytes) and/or ``blob`` (git's object id of them, when the publisher's repository
  is all that names the file: ``git hash-object FILE`` checks it), ``format`` (:mod:`memrun.gallery.per_item`), ``column``, ``k``;
- ``ci``: run by the test suite when its data is present (keep it to minutes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memrun.errors import ConfigError

ENTRIES = Path(__file__).parent / "entries"
FILES = Path(__file__).parent / "files"
KINDS = ("run", "statistics", "not_reproducible")
_KEYS = frozenset({"name", "title", "benchmark", "source", "kind", "overrides", "data", "needs", "values",
                   "credit_absent", "per_item", "ci", "reason", "statistic", "notes"})


@dataclass(frozen=True)
class Value:
    """One published value: the metric (or statistic cell), the number, the tolerance and why."""

    metric: str
    published: float
    tolerance: float
    why: str
    not_reproducible: str | None = None
    rounding: str | None = None  # ceil: the published cell is the value rounded up (BEAM's README)


@dataclass(frozen=True)
class PerItem:
    """The publisher's per-item results file (``file`` None: not kept here, the original is needed)."""

    name: str
    sha256: str | None
    format: str
    column: str
    k: int
    file: str | None = None
    blob: str | None = None


@dataclass(frozen=True)
class Entry:
    """One gallery entry (see the module docstring for the keys)."""

    name: str
    title: str
    benchmark: str
    source: dict[str, str]
    kind: str
    values: tuple[Value, ...]
    overrides: tuple[str, ...] = ()
    data: tuple[dict[str, str], ...] = ()
    needs: tuple[str, ...] = ()
    credit_absent: bool = False
    per_item: PerItem | None = None
    ci: bool = False
    reason: str | None = None
    statistic: str | None = None
    notes: str | None = None
    path: Path = field(default=ENTRIES)


def _need(raw: dict[str, Any], key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    value = raw.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ConfigError(f"{where}: '{key}' must be {_what(kind)}, got {type(value).__name__}")
    return value


def _what(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({str: "text", int: "a number", float: "a number", list: "a list", dict: "a mapping",
                        bool: "true or false"}.get(k, k.__name__) for k in kinds)


def load_entry(path: Path) -> Entry:
    """The entry in ``path``. Raises ConfigError ``<path>: <key> ...`` for a malformed one."""
    where = str(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: cannot read the entry ({' '.join(str(exc).split())})") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping of {', '.join(sorted(_KEYS))}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'; entries take {', '.join(sorted(_KEYS))}")
    name = _need(raw, "name", where, str)
    if name != path.stem:
        raise ConfigError(f"{where}: name '{name}' differs from the file's name; rename one of them")
    kind = _need(raw, "kind", where, str)
    if kind not in KINDS:
        raise ConfigError(f"{where}: kind '{kind}': choose one of {', '.join(KINDS)}")
    values = []
    for i, v in enumerate(raw.get("values") or []):
        at = f"{where}: values[{i}]"
        if not isinstance(v, dict):
            raise ConfigError(f"{at}: expected a mapping of metric, published, tolerance, why")
        values.append(Value(metric=str(_need(v, "metric", at, str)), published=float(_need(v, "published", at, (int, float))),
                            tolerance=float(_need(v, "tolerance", at, (int, float))), why=str(_need(v, "why", at, str)),
                            not_reproducible=v.get("not_reproducible"), rounding=v.get("rounding")))
    if kind != "not_reproducible" and not values:
        raise ConfigError(f"{where}: values: list at least one published value")
    if kind == "not_reproducible" and not raw.get("reason"):
        raise ConfigError(f"{where}: reason: a non-reproducible entry says why")
    if kind == "run" and not raw.get("overrides"):
        raise ConfigError(f"{where}: overrides: a run entry lists the memrun overrides that re-derive it")
    per_item = None
    if raw.get("per_item") is not None:
        p = _need(raw, "per_item", where, dict)
        at = f"{where}: per_item"
        pins = {key: p.get(key) for key in ("sha256", "blob")}
        for key, digits in (("sha256", 64), ("blob", 40)):
            value = pins[key]
            if value is not None and not re.fullmatch(f"[0-9a-f]{{{digits}}}", str(value)):
                raise ConfigError(f"{at}.{key}: {digits} lowercase hex digits, not {value!r}")
        if not any(pins.values()):
            raise ConfigError(f"{at}: pin the file by sha256 (of its bytes) or blob (git hash-object FILE), or both")
        per_item = PerItem(name=str(_need(p, "name", at, str)), sha256=pins["sha256"],
                           format=str(_need(p, "format", at, str)), column=str(_need(p, "column", at, str)),
                           k=int(_need(p, "k", at, int)), file=p.get("file"), blob=pins["blob"])
        if per_item.file is not None and not (FILES / per_item.file).is_file():
            raise ConfigError(f"{at}.file: {per_item.file} is not in {FILES}")
    source = _need(raw, "source", where, dict)
    return Entry(
        name=name, title=str(_need(raw, "title", where, str)), benchmark=str(_need(raw, "benchmark", where, str)),
        source={str(k): str(v) for k, v in source.items()}, kind=kind, values=tuple(values),
        overrides=tuple(str(o) for o in raw.get("overrides") or ()),
        data=tuple(dict(d) for d in raw.get("data") or ()), needs=tuple(raw.get("needs") or ()),
        credit_absent=bool(raw.get("credit_absent", False)), per_item=per_item, ci=bool(raw.get("ci", False)),
        reason=raw.get("reason"), statistic=raw.get("statistic"), notes=raw.get("notes"), path=path,
    )


def load_entries(folder: Path = ENTRIES, names: list[str] | None = None) -> list[Entry]:
    """Every entry in ``folder``, by name; ``names`` keeps those (ConfigError naming an unknown one)."""
    entries = {p.stem: p for p in sorted(folder.glob("*.yaml"))}
    if names:
        unknown = [n for n in names if n not in entries]
        if unknown:
            raise ConfigError(f"no entry '{unknown[0]}'; entries: {', '.join(entries)}")
        return [load_entry(entries[n]) for n in names]
    return [load_entry(p) for p in entries.values()]
