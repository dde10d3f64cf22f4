"""Parsing the JSON and YAML files a user writes (a benchmark's lines, answers, gold
corrections, a gate) so that a key given twice in one object is an error.

``json.loads`` and ``yaml.safe_load`` keep the last value of a repeated key and drop the
others without a word: a second ``gold_keys`` on a benchmark line, or one item id twice in
a corrections file, would silently lose the first. OmegaConf already refuses repeated keys
in config files; these are the same rule for the data and settings files memrun reads itself.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from memrun.errors import DataError


def repeated_key(key: str) -> str:
    """The problem of a JSON object naming ``key`` twice, in one line without the place."""
    return (f"key {key!r} is given twice in one object; JSON keeps only the last, so the first would be lost "
            "silently: keep one")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DataError(repeated_key(key))
            seen.add(key)
    return obj


def loads_json(text: str) -> Any:
    """:func:`json.loads`, raising DataError (:func:`repeated_key`, no place named: the caller
    adds its file and line) for an object that names a key twice (json.loads keeps the last
    value). Raises json.JSONDecodeError as json.loads does. Costs
    about 1.6x json.loads (an object hook builds each dict)."""
    return json.loads(text, object_pairs_hook=_unique_pairs)


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader refusing a mapping that names a key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: SafeLoader says so itself
                continue
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice in one mapping; YAML keeps only the last, so the first "
                    "would be lost silently: keep one", key_node.start_mark)
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    """:func:`yaml.safe_load`, raising yaml.constructor.ConstructorError (a yaml.YAMLError,
    its ``problem_mark`` at the second occurrence) for a mapping that names a key twice."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
