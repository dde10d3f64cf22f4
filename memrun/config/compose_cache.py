"""Hydra's composition of memrun's config, kept on disk and reused while its inputs are unchanged.

Before every run, ``--cfg`` and ``--help``, Hydra composes the config from ~40 YAML files, memrun's
typed schemas and Hydra's own configs: ~0.15 s, most of the time between start-up and a run's
first request. The composition up to the command's value overrides (``repeats=3``,
``hydra.run.dir=...``) depends only on:

* the config name, the run mode and the command's *config group* overrides (``arm=okapi``,
  ``~judge2``, ``+arm/embedder=minilm``), in order;
* the files of the search path (``conf/``, a ``--config-dir``, Hydra's and its plugins' config
  packages: every file, its size and modification time, so an added or edited file counts);
* the code that composed it: the modules loaded then (their files' sizes and modification
  times), the interpreter and ``sys.path``, and the names ConfigStore holds (with those Hydra's
  plugin scan will store when a run left it for later: :mod:`memrun.config.plugin_scan`);
* the working folder.

:func:`reused_compositions` patches Hydra's ``ConfigLoaderImpl.load_configuration`` so that a
composition made with the same inputs is read back (one pickle, ~1 ms) instead of being made
again. Hydra's own code still does the rest on every call, as it would: check sweep
overrides, apply the value overrides, and fill ``hydra.overrides``,
``hydra.runtime`` (cwd, choices, config sources), ``hydra.job.env_set`` and
``override_dirname``. The config a run gets, and so its ``.hydra/`` files and ``--cfg``
output, are the same (``tests/config/test_compose_cache.py`` compares every node, its type,
flags and metadata, with and without the cache). The override lines themselves are parsed by
Hydra once each (:func:`_parsed`: its parser's first lines in a process cost ~18 ms).

A composition is not kept when these inputs may not tell it apart: when it warned (a later
read would not warn), when a resolver other than Hydra's ``now`` ran while composing
(``oc.env``, a user's: their values may change from one run to the next), when the
search path differs from the loader's own (``hydra.searchpath``), a config package is not a
folder, or the composition holds a secret (a literal key in a config file: no cache file holds
one, nor an override line that may, :func:`_parsed`). ``now`` runs while Hydra merges its
default folder names (``outputs/${now:%Y-%m-%d}/...``, which memrun's own replace), and the
composition caches its values: a reused composition drops them, so a ``${now:...}`` the run
reads is the time of this run, read at its first use (a few milliseconds after Hydra would
have). Entries live under :func:`memrun.core.paths.user_cache` (``compose/``, readable by the user only; the :data:`MAX_ENTRIES` most recent are kept); an
entry another user could have written, or one that cannot be read, is composed afresh.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
import sysconfig
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.config import plugin_scan
from memrun.core.paths import user_cache
from memrun.lazy import lazy

if TYPE_CHECKING:
    import omegaconf
    from hydra._internal import config_loader_impl as hydra_loader
    from hydra.core.override_parser import overrides_parser
    from omegaconf import base as omegaconf_base

    from memrun.core import redaction
else:
    omegaconf = lazy("omegaconf")
    redaction = lazy("memrun.core.redaction")
    hydra_loader = lazy("hydra._internal.config_loader_impl")
    overrides_parser = lazy("hydra.core.override_parser.overrides_parser")
    omegaconf_base = lazy("omegaconf.base")

CACHE_DIR = ("compose",)
"""Under :func:`memrun.core.paths.user_cache`: one file per composition."""
MAX_ENTRIES = 256
"""Compositions kept: writing one removes the least recently written beyond this many."""
FORMAT = 1
"""Part of every key: a new layout of the entries never reads an old one."""
PARSED_FILE = "overrides.pickle"
"""In the same folder: Hydra's parse of each override line met (:func:`_parsed`)."""
MAX_PARSED = 2000
"""Override lines kept: past this many, the file starts over with the lines of one call."""


def reused_compositions(folder: Path | None = None) -> Callable[[], None]:
    """Until the returned undo is called, Hydra reuses compositions kept in ``folder``
    (default ``user_cache("compose")``) and keeps the first one this patch makes.

    Only the first composition of the patch's lifetime is kept: a warning Python already
    showed once in the process is not shown again, so a later composition's silence says
    nothing. Never raises for the cache's sake: an unreadable or unwritable folder means
    composing as Hydra does.
    """
    Loader = hydra_loader.ConfigLoaderImpl
    original = Loader.load_configuration
    where = folder if folder is not None else user_cache(*CACHE_DIR)
    state = {"may_keep": True}

    def load_configuration(self: Any, config_name: str | None, overrides: list[str], run_mode: Any,
                           from_shell: bool = True, validate_sweep_overrides: bool = True) -> Any:
        may_keep, state["may_keep"] = state["may_keep"], False
        args = (config_name, overrides, run_mode, from_shell, validate_sweep_overrides)
        try:
            parsed = _parsed(where, list(overrides))
            if plugin_scan.needed_for(o.key_or_group for o in parsed):  # hydra/launcher=...: the plugins' group
                plugin_scan.complete()
            key = _key(self, config_name, run_mode, parsed)
        except Exception:  # noqa: BLE001 (a bad override: Hydra says what is wrong with it)
            plugin_scan.complete()
            return original(self, *args)
        if key is not None:
            entry = _read(where / f"{key}.pickle")
            if entry is not None:
                return _reuse(self, original, args, parsed, entry)
        plugin_scan.complete()  # a composition reads every config the plugins store
        cfg, entry = _compose_and_capture(self, original, args)
        if key is not None and may_keep and entry is not None:
            _write(where, f"{key}.pickle", entry)
        return cfg

    Loader.load_configuration = load_configuration  # type: ignore[method-assign]

    def undo() -> None:
        Loader.load_configuration = original  # type: ignore[method-assign]

    return undo


def _parsed(folder: Path, lines: list[str]) -> list[Any]:
    """Hydra's parse of each override line (its ``Override``), read from :data:`PARSED_FILE`
    in ``folder`` while Hydra's override parser (its files) is unchanged; the lines it does
    not hold are parsed by Hydra and added to it. A process's first parse builds the parser's
    tables (~18 ms for a run's dozen lines, ~5 ms for one new line). Raises what Hydra raises
    for a line it cannot parse."""
    parse = overrides_parser.OverridesParser.create().parse_overrides
    if len(set(lines)) < len(lines):  # one object per line: Hydra may tell repeated lines apart
        return parse(overrides=lines)
    files = _parser_files()
    entry = _read(folder / PARSED_FILE)
    known = entry.get("parsed") if entry is not None and entry.get("files") == files else None
    known = known if isinstance(known, dict) else {}
    missing = [line for line in lines if line not in known]
    if missing:
        fresh = dict(zip(missing, parse(overrides=missing)))
        kept = {line: o for line, o in fresh.items() if not redaction.may_hold_secret(line)}  # no secret in a file
        if kept:
            _write(folder, PARSED_FILE, {"files": files, "parsed": {**(known if len(known) < MAX_PARSED else {}), **kept}})
        known = {**known, **fresh}
    return [known[line] for line in lines]


def _parser_files() -> list[tuple[str, int, int]]:
    """(path, mtime_ns, size) of the modules of Hydra's override parser and grammar."""
    prefixes = ("hydra.core.override_parser", "hydra.grammar", "hydra._internal.grammar")
    return [_stat(f) for name, m in sorted(sys.modules.items())
            if name.startswith(prefixes) and isinstance(f := getattr(m, "__file__", None), str)]


def _key(loader: Any, config_name: str | None, run_mode: Any, parsed: list[Any]) -> str | None:
    """The entry's name for this call, or None when nothing may be reused: the hex digest of
    every input but the files (which the entry lists and :func:`_read` checks)."""
    if any(o.get_key_element() == "hydra.searchpath" for o in parsed):
        return None  # the search path itself is overridden: sources a key cannot name
    repo = loader.repository
    structural = []
    for o in parsed:  # what Hydra's defaults list reads of them (hydra._internal.defaults_list.Overrides)
        if o.is_sweep_override() or isinstance(o.value(), dict) or repo.group_exists(o.key_or_group):
            structural.append(o.input_line)
    inputs = (FORMAT, sys.version, sys.executable, sys.path, os.getcwd(), config_name, str(run_mode), structural,
              [(p.provider, p.path) for p in loader.config_search_path.get_path()], sorted(_stored_names()))
    return hashlib.sha256(repr(inputs).encode()).hexdigest()


def _stored_names() -> set[str]:
    """Every path ConfigStore holds (``group/name.yaml``), and those Hydra's plugin scan will
    store once it is done (:func:`memrun.config.plugin_scan.pending_names`): the names of the
    full scan, scanned yet or not."""
    return {*plugin_scan.stored_names(), *plugin_scan.pending_names()}


def _compose_and_capture(loader: Any, original: Any, args: tuple[Any, ...]) -> tuple[Any, dict[str, Any] | None]:
    """Hydra's composition, and the entry that lets the next call with the same key skip it
    (None when this one must not be reused: see the module docstring)."""
    captured: dict[str, Any] = {}
    Container = omegaconf_base.Container
    evaluate = Container._evaluate_custom_resolver
    compose_from = loader._compose_config_from_defaults_list
    create_defaults_list = hydra_loader.create_defaults_list
    show = warnings.showwarning

    def spy_evaluate(self: Any, *a: Any, **k: Any) -> Any:
        captured.setdefault("resolvers", set()).add(k.get("inter_type", a[2] if len(a) > 2 else None))
        return evaluate(self, *a, **k)

    def spy_defaults(*a: Any, **k: Any) -> Any:
        result = create_defaults_list(*a, **k)
        captured["choices"] = dict(result.overrides.known_choices)
        return result

    def spy_compose(defaults: Any, repo: Any) -> Any:
        cfg = compose_from(defaults=defaults, repo=repo)
        if _holds_secrets(cfg):  # a literal key in a config file: never in a cache file
            return cfg
        try:
            captured["composed"] = pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL)  # before the overrides
        except Exception:  # noqa: BLE001 (a value pickle cannot hold: composed every time)
            return cfg
        captured["sources"] = [(s.provider, s.path, s.scheme()) for s in repo.get_sources()]
        return cfg

    def spy_show(*a: Any, **k: Any) -> None:
        captured["warned"] = True
        show(*a, **k)

    Container._evaluate_custom_resolver = spy_evaluate  # type: ignore[method-assign]
    hydra_loader.create_defaults_list = spy_defaults
    loader._compose_config_from_defaults_list = spy_compose
    warnings.showwarning = spy_show
    try:
        cfg = original(loader, *args)
    finally:
        Container._evaluate_custom_resolver = evaluate  # type: ignore[method-assign]
        hydra_loader.create_defaults_list = create_defaults_list
        del loader._compose_config_from_defaults_list  # the class's method again
        if warnings.showwarning is spy_show:
            warnings.showwarning = show
    base_sources = [(s.provider, s.path, s.scheme()) for s in loader.repository.get_sources()]
    if captured.get("warned") or captured.get("resolvers", set()) - {"now"} or "composed" not in captured or captured["sources"] != base_sources:
        return cfg, None
    try:
        files = _search_path_files(captured["sources"]) + _module_files()
    except (OSError, ValueError):
        return cfg, None
    return cfg, {"files": files, "choices": captured["choices"], "composed": captured["composed"]}


def _reuse(loader: Any, original: Any, args: tuple[Any, ...], parsed: list[Any], entry: dict[str, Any]) -> Any:
    """Hydra's ``load_configuration`` with its composition taken from ``entry``: the three
    steps that make it (the search path's repository, the defaults list, the merge of its
    configs) answer at once; Hydra's own code does everything after them."""
    composed, choices = entry["composed"], entry["choices"]
    repo = loader.repository  # its sources are the composition's (checked when it was kept)

    def defaults_list(repo: Any, config_name: Any, overrides_list: list[Any], prepend_hydra: bool,
                      skip_missing: bool) -> Any:
        # the value overrides, in order, as hydra._internal.defaults_list.Overrides sorts them
        values = [o for o in overrides_list if not o.is_sweep_override()
                  and (isinstance(o.value(), dict) or not repo.group_exists(o.key_or_group))]
        known = _KnownChoices(choices)
        return hydra_loader.DefaultsList(defaults=[], defaults_tree=None, config_overrides=values,  # type: ignore[arg-type]
                                         overrides=known)  # type: ignore[arg-type]

    def compose_from(defaults: Any, repo: Any) -> Any:
        cfg = pickle.loads(composed)
        cfg._metadata.resolver_cache.clear()  # now's values from when it was composed: this run's time instead
        return cfg

    create_defaults_list = hydra_loader.create_defaults_list
    hydra_loader.create_defaults_list = defaults_list
    loader._parse_overrides_and_create_caching_repo = lambda config_name, overrides: (parsed, repo)
    loader._compose_config_from_defaults_list = compose_from
    try:
        return original(loader, *args)
    finally:
        hydra_loader.create_defaults_list = create_defaults_list
        del loader._parse_overrides_and_create_caching_repo, loader._compose_config_from_defaults_list


class _KnownChoices:
    """What ``load_configuration`` reads of a defaults list's overrides: the group choices."""

    def __init__(self, choices: dict[str, Any]) -> None:
        self.known_choices = dict(choices)


def _holds_secrets(cfg: Any) -> bool:
    """Whether the composed ``cfg`` holds a literal secret (:func:`memrun.core.redaction.find_literal_secrets`)
    or a value memrun masks where it writes the config (:func:`memrun.core.redaction.config_secrets`);
    a ``${...}`` (``${oc.env:NAME}``) is not one."""
    tree = omegaconf.OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    found = [*redaction.config_secrets(tree), *(v for _, v in redaction.find_literal_secrets(tree))]
    return any("${" not in str(value) for value in found)


def _stdlib() -> str:
    return sysconfig.get_paths()["stdlib"] + os.sep


def _module_files() -> list[tuple[str, int, int]]:
    """(path, mtime_ns, size) of every loaded module's file outside the standard library
    (which ``sys.version`` and ``sys.executable`` in the key stand for)."""
    stdlib = _stdlib()
    paths = {f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)
             and not f.startswith(stdlib)}
    return [_stat(p) for p in sorted(paths)]


def _search_path_files(sources: list[tuple[str, str, str]]) -> list[tuple[str, int, int]]:
    """(path, mtime_ns, size) of every file under the search path's folders, ``__pycache__``
    left out. Raises ValueError for a config package that is not a folder (a zip)."""
    roots = []
    for _provider, path, scheme in sources:
        if scheme == "file":
            roots.append(path)
        elif scheme == "pkg":
            spec = importlib.util.find_spec(path)
            folders = list(spec.submodule_search_locations or []) if spec is not None else []
            if not folders or not all(os.path.isdir(f) for f in folders):
                raise ValueError(f"config package {path} is not a folder")
            roots.extend(folders)
    found = []
    for root in roots:
        found.append(_stat(root))  # a folder that disappears or appears: another search path
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = sorted(s for s in subfolders if s != "__pycache__")
            found.extend(_stat(os.path.join(folder, n)) for n in sorted(names))
    return found


def _stat(path: str) -> tuple[str, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (path, -1, -1)
    return (path, st.st_mtime_ns, st.st_size)


def _read(path: Path) -> dict[str, Any] | None:
    """The entry at ``path`` when it is this user's, private, and every file it lists is as
    it was; else None."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None  # a pickle is code: only one this user wrote, and nobody else could alter
            entry = pickle.load(handle)
        files = entry["files"]
        if not isinstance(files, list) or any(_stat(p) != (p, m, s) for p, m, s in files):
            return None
        return entry
    except Exception:  # noqa: BLE001 (missing, truncated, another format: compose afresh)
        return None


def _write(folder: Path, name: str, entry: dict[str, Any]) -> None:
    """Keep ``entry`` as ``folder/name`` (atomically), then drop the oldest beyond
    :data:`MAX_ENTRIES`. Errors are ignored: the cache only spares work."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(entry, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, folder / name)
        kept = sorted((p for p in folder.glob("*.pickle") if p.name != PARSED_FILE),
                      key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[MAX_ENTRIES:]:
            old.unlink(missing_ok=True)
    except OSError:
        return
