"""A plain tree as ``OmegaConf.to_yaml`` writes a config holding it: the saved ``.hydra/``
files and ``--cfg``'s reprint.

OmegaConf dumps with PyYAML's pure-Python emitter (``OmegaConfDumper``): a run's
``.hydra/config.yaml`` and ``hydra.yaml`` were ~0.1 G instructions, ~20 ms, before its
first request. libyaml's emitter (PyYAML's C extension) writes the same text for the trees
memrun writes, but not for every tree: it writes an empty or a long key (> 128 characters)
as a simple key where PyYAML writes an explicit ``? key``, and it folds long double-quoted
strings (text with line breaks, such as Hydra's help templates) at other places. So
:func:`yaml_text` uses libyaml only for a tree whose every key is an integer or printable
ASCII of 1 to 100 characters and whose every value is None, a boolean, a number, printable
ASCII text, or short ASCII text with line breaks or tabs that ends before column 40
(``session_joiner: "\\n"``), nested in dicts and lists; any other tree is written by
OmegaConf's own dumper, as before. ``tests/core/test_yaml_text.py`` holds both
writers to the same text on memrun's configs and on random trees of that kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memrun.lazy import lazy

if TYPE_CHECKING:
    import yaml
    from omegaconf import _utils as omegaconf_utils
else:
    omegaconf_utils = lazy("omegaconf._utils")
    yaml = lazy("yaml")

_MAX_KEY = 100  # characters; libyaml writes a key past 128 as a simple key, PyYAML as "? key"
_ESCAPED_WIDTH = 40  # columns: an escaped string ending before this is never folded (the width is 80)


def yaml_text(tree: Any) -> str:
    """``tree`` (plain dicts, lists and scalars, enums as their names) as ``OmegaConf.to_yaml``
    writes a config that holds it (OmegaConf's dumper and settings), without building that
    config first; by libyaml's emitter when that writes the same text (module docstring)."""
    dumper = omegaconf_utils.get_omega_conf_dumper()
    if _same_under_libyaml(tree) and (fast := _libyaml_dumper(dumper)) is not None:
        dumper = fast
    text: str = yaml.dump(tree, default_flow_style=False, allow_unicode=True, sort_keys=False, Dumper=dumper)
    return text


def _text(value: str) -> bool:
    return value.isascii() and value.isprintable()


def _same_under_libyaml(tree: Any, indent: int = 0, start: int = 0) -> bool:
    """Whether libyaml's emitter writes ``tree`` as PyYAML's does (the kinds of the module
    docstring); ``indent``: the column its block starts at, ``start``: a scalar's column (a bound)."""
    if isinstance(tree, dict):
        return all((type(k) is int or type(k) is str and 0 < len(k) <= _MAX_KEY and _text(k))
                   and _same_under_libyaml(v, indent + 2, indent + len(str(k)) + 4) for k, v in tree.items())
    if isinstance(tree, list):
        return all(_same_under_libyaml(v, indent + 2, indent + 2) for v in tree)
    if type(tree) is str:
        # escaped text (a line break, a tab) is folded at other places once its line passes the
        # width: only a short one, far from it (a session joiner: "\n"); printable text at any length
        return _text(tree) or (tree.isascii() and start + 2 * len(tree) + 2 <= _ESCAPED_WIDTH)
    return tree is None or type(tree) in (bool, int, float)


_LIBYAML: dict[Any, type | None] = {}


def _libyaml_dumper(pure: Any) -> type | None:
    """OmegaConf's dumper class ``pure`` with libyaml's emitter and serializer in place of
    PyYAML's (its representers shared, so it represents every value alike); None when PyYAML
    was built without libyaml."""
    if pure not in _LIBYAML:
        base = getattr(yaml, "CDumper", None)
        _LIBYAML[pure] = None if base is None else type(f"Lib{pure.__name__}", (base,), {
            "yaml_representers": pure.yaml_representers, "yaml_multi_representers": pure.yaml_multi_representers})
    return _LIBYAML[pure]
