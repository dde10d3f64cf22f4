"""One line for each error Hydra or OmegaConf raises while composing memrun's config: the
file, the key or choice, and the fix (the command line prints it as ``memrun: error: ...``)."""

from __future__ import annotations

import dataclasses
import difflib
import re
from typing import TYPE_CHECKING

from memrun import config
from memrun.config import arms, benchmarks, llm
from memrun.core.redaction import redact_line, redact_override
from memrun.errors import MemrunError
from memrun.lazy import lazy

if TYPE_CHECKING:
    from hydra import errors as hydra_errors
    from omegaconf import errors as omegaconf_errors
else:
    hydra_errors = lazy("hydra.errors")
    omegaconf_errors = lazy("omegaconf.errors")

# OmegaConf's words for a value its typed key cannot take, and what memrun says instead.
_NOT_CONVERTED = re.compile(r"Value '(.*)' (?:of type '[^']+' could not be converted to (Integer|Float|Boolean)"
                            r"|is (not a valid bool) \(type [^)]+\))$")
_TYPE_WORDS = {"Integer": "a whole number (an integer such as 5)", "Float": "a number (such as 0.5)",
               "Boolean": "true or false", "not a valid bool": "true or false"}


def _typed_value(full_key: str, msg: str) -> str:
    """``key: msg``, or, for a value the key's type cannot take (OmegaConf's ``could not be
    converted to Integer``), ``key=value: key is a whole number ...``."""
    if m := _NOT_CONVERTED.match(msg):
        return f"{full_key}={m.group(1)}: {full_key} is {_TYPE_WORDS[m.group(2) or m.group(3)]}"
    return f"{full_key}: {msg}"


def explain_yaml_error(exc: Exception) -> str:
    """One line for a YAML syntax error: file, line, column and the problem."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return f"invalid YAML: {problem}"
    return f"{mark.name}: line {mark.line + 1}, column {mark.column + 1}: invalid YAML: {problem}"


def _schema_keys(type_name: str) -> list[str]:
    """Field names of a schema dataclass in memrun.config, by class name ([] if unknown)."""
    for module in (config, benchmarks, arms, llm):
        schema = getattr(module, type_name, None)
        if dataclasses.is_dataclass(schema):
            return [f.name for f in dataclasses.fields(schema)]
    return []


def _unknown_key(where: str, full_key: str, valid: list[str]) -> str:
    hint = difflib.get_close_matches(full_key.rsplit(".", 1)[-1], valid, n=1)
    did_you_mean = f"did you mean '{hint[0]}'? " if hint else ""
    keys = f"valid keys: {', '.join(valid)}" if valid else "use +key=value to add a new key"
    return f"{where}unknown config key '{full_key}'; {did_you_mean}{keys}"


def _memrun_errors() -> set[str]:
    """The class names of :class:`memrun.errors.MemrunError` and all its subclasses."""
    found, todo = set(), [MemrunError]
    while todo:
        cls = todo.pop()
        found.add(cls.__name__)
        todo += cls.__subclasses__()
    return found


def explain_config_error(exc: BaseException) -> str:
    """One line for a Hydra/OmegaConf composition error: the key or choice, and the fix;
    the overrides and URLs it quotes without their secrets (:func:`memrun.core.redaction.redact_line`:
    a value the user mistyped may be a token)."""
    return redact_line(_explain(exc))


LAUNCHER_EXTRAS = {"joblib": "joblib", "submitit_local": "slurm", "submitit_slurm": "slurm", "ray": "ray"}
"""Hydra launcher choices memrun supports and the extra (pyproject.toml) whose plugin provides each."""


def _new_map_key(where: str, owner: str, key: str) -> str:
    """How to add ``key`` to the map ``owner``: ``+owner.key=<value>``, except for a map keyed by
    integers (benchmark.categories), where a dotted key is text and refused ("Key 6 (str) is
    incompatible with (int)"): ``+owner={6: <value>}`` merges it, in both kinds of map."""
    add = f"'+{owner}={{{key}: <value>}}'" if key.isdigit() else f"'+{owner}.{key}=<value>'"
    return f"{where}{owner} is a map: add the key {key} with {add}, or replace the whole map with '++{owner}={{...}}'"


def _explain(exc: BaseException) -> str:
    text = str(exc)
    where = ""
    if m := re.match(r"In '([^']+)': ", text):
        if m.group(1) != "config":  # the primary config: the error is in an override
            where = f"in {m.group(1)}.yaml: "
        text = text[m.end():]
    if (m := re.match(r"(\w+) raised while resolving interpolation: (.+)", text)) and m.group(1) in _memrun_errors():
        return where + m.group(2)  # memrun's own check inside a resolver (e.g. ks): its message alone
    if isinstance(exc, hydra_errors.MissingConfigException):
        if (m := re.search(r"Could not find '([^']+)/([^'/]+)'", text)) and exc.options is not None:
            group, option = m.group(1), m.group(2)
            hint = difflib.get_close_matches(option, exc.options, n=1)
            did_you_mean = f" (did you mean {group}={hint[0]}?)" if hint else ""
            if group == "hydra/launcher" and option in LAUNCHER_EXTRAS:  # a launcher plugin not installed
                did_you_mean = (f" (its plugin is not installed: pip install 'memrun[{LAUNCHER_EXTRAS[option]}]', "
                                "docs/scale.md)")
            return f"{where}{group}={option}: no such config{did_you_mean}; available: {', '.join(exc.options)}"
        return where + text.splitlines()[0]
    if (m := re.match(r"Error merging override \+{0,2}([\w.-]+)\.(\d+)=", text)) and re.search(
            r"Key \d+ \(str\) is incompatible with \(int\)", str(exc.__cause__)):
        return _new_map_key(where, m.group(1), m.group(2))  # benchmark.categories.6=x: a dotted key is text
    if "Could not override 'arm/embedder'" in text:  # an arm without an embedder (bm25, a sweep's lexical job)
        return (f"{where}arm/embedder=...: this arm's config has no embedder in its defaults list; add "
                "'- embedder: null' before _self_ there (as conf/arm/bm25.yaml does) so that the override composes")
    if m := re.match(r"Ambiguous value for argument '([^']+)'", text):  # a sweep's values without -m
        return (f"{where}{m.group(1)}: values separated by commas are a sweep, one job each: run it with -m "
                f"(memrun -m {m.group(1)}); a single value holding a comma is quoted: key='a,b'")
    if m := re.match(r"Sweep parameters '([^']+)' requires --multirun", text):  # range(), choice(), glob()
        return f"{where}{m.group(1)}: a sweep, one job per value: run it with -m (memrun -m {m.group(1)})"
    if isinstance(exc, hydra_errors.OverrideParseException):
        override = getattr(exc, "override", None)
        named = f" {redact_override(str(override), {})!r}" if override else ""
        reasons = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("Error parsing override", "See http"))]
        return (f"cannot parse the override{named}: {(reasons or text.splitlines())[0]}; write key=value, "
                "and quote a value holding '=', spaces or brackets: key='value'")
    cause = exc if isinstance(exc, omegaconf_errors.OmegaConfBaseException) else exc.__cause__
    if isinstance(cause, (omegaconf_errors.ConfigAttributeError, omegaconf_errors.ConfigKeyError)):
        full_key = getattr(cause, "full_key", None) or getattr(cause, "key", "?")
        if "reference_type=Dict" in str(cause) and "." in str(full_key):  # a new key of a map (arm.headers)
            owner, _, key = str(full_key).rpartition(".")
            return _new_map_key(where, owner, key)
        parent = getattr(cause, "parent_node", None)
        valid = [str(k) for k in parent.keys()] if parent is not None and hasattr(parent, "keys") else []
        role, _, key = str(full_key).partition(".")
        if (role in ("judge", "judge2") and valid == ["name", "model"] and parent is not None and parent.get("name") == "none"
                and not difflib.get_close_matches(key, valid, n=1)):
            # judge=none's two keys were offered as the valid ones: the key is a judge's, and there is none
            return (f"{where}unknown config key '{full_key}': {role}=none is no judge, so it has no "
                    f"{key}; choose a judge first, e.g. {role}=gpt41 {full_key}=... (the judges: conf/{role}/)")
        return _unknown_key(where, str(full_key), valid)
    if isinstance(cause, omegaconf_errors.InterpolationKeyError) and (m := re.search(r"Interpolation key '([^']+)' not found", text)):
        return f"{where}config key '{m.group(1)}' is missing (other keys refer to it); set it in the config file"
    if isinstance(cause, omegaconf_errors.MissingMandatoryValue):
        return f"{where}{getattr(cause, 'full_key', '?')} has no value; set it in the config file or as key=value"
    if isinstance(cause, omegaconf_errors.ValidationError):
        msg = str(getattr(cause, "msg", cause)).splitlines()[0]
        full_key = getattr(cause, "full_key", "?")
        if "is not a ListConfig, list or tuple" in msg:
            msg += f" Give a list: {full_key}=[...]"
        return f"{where}{_typed_value(str(full_key), msg)}"
    if m := re.search(r"raised while composing config:\n(.*)\n\s+full_key: (\S+)", text):
        # an error inside a YAML file; Hydra keeps no cause here, only this text
        message, full_key = m.groups()
        if k := re.match(r"Key '[^']+' not in '([^']+)'", message):
            return _unknown_key(where, full_key, _schema_keys(k.group(1)))
        return f"{where}{_typed_value(full_key, message)}"
    first = text.splitlines()[0] if text else type(exc).__name__
    if cause is not None and cause is not exc:
        first += f": {str(cause).splitlines()[0]}"
    return where + first
