"""Hydra's scan of the installed plugins, left for later in a run that does not need them.

Hydra's first ``Plugins.instance()`` imports every module under ``hydra_plugins`` (the
joblib, Ray, Ray AWS and submitit launchers here: their configs, ``importlib.metadata``,
``email``, ``csv``) in every run, for launchers a single run never starts: leaving them
unscanned spares ~14 ms of CPU and 68 M of the ~1.04 G instructions of ``memrun --cfg job``
with a cached re-run's arguments (the scan itself took ~27 ms; Hydra's own plugins still load).
What that scan adds is known from the last one, kept in an index (:func:`index_file`):

* the names the plugins store in ConfigStore (``hydra/launcher/joblib.yaml``...),
* the OmegaConf resolvers they register (``ray_pkg_version``),
* whether any of them is a search-path plugin or a config source (which a run needs at
  once), or warned while imported (which a run must show every time).

The index holds while the files under ``hydra_plugins``' folders (every file, its size and
modification time), the interpreter and ``sys.path`` are unchanged. With it, and none of
the plugins needed at once, :func:`deferred_scan` lets ``Plugins.instance()`` scan Hydra's
own plugins only; the rest are scanned (:func:`complete`, Hydra's own scan of
``hydra_plugins``: the same classes, registered in the same order) when anything asks for
what they add:

* a plugin of another kind (``discover`` of a launcher, sweeper, completion plugin or of all
  plugins), a plugin built from its config (``_instantiate``), the scan's timings;
* a resolver the index names, read while its scan is pending;
* a composition that is not reused from :mod:`memrun.config.compose_cache` (a cache miss), or
  a command line naming a config group the plugins add to (``hydra/launcher=joblib``):
  :func:`needed_for`.

The composition cache counts the pending names as stored (:func:`pending_names`), so its
key is the one the full scan gives. Only a single run of the command line defers
(:mod:`memrun.cli`): ``--help``, ``--info``, shell completion and sweeps (``-m``,
``hydra.mode``) scan as Hydra does; so does a process whose ``Plugins`` already exists.
Without a valid index the scan is Hydra's, and writes the index.
"""

from __future__ import annotations

import collections
import hashlib
import importlib
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.core.paths import user_cache
from memrun.lazy import lazy

if TYPE_CHECKING:
    import omegaconf
    from hydra.core import config_store, plugins, singleton
    from hydra.plugins import config_source, search_path_plugin
    from omegaconf import basecontainer
else:
    plugins = lazy("hydra.core.plugins")
    singleton = lazy("hydra.core.singleton")
    config_store = lazy("hydra.core.config_store")
    config_source = lazy("hydra.plugins.config_source")
    search_path_plugin = lazy("hydra.plugins.search_path_plugin")
    basecontainer = lazy("omegaconf.basecontainer")
    omegaconf = lazy("omegaconf")

CACHE_DIR = ("plugins",)
"""Under :func:`memrun.core.paths.user_cache`: the index of the last full scan."""
FORMAT = 1
"""Part of the index's key: a new layout never reads an old one."""
NO_DEFER_ARGS = ("-m", "--multirun", "--help", "-h", "--hydra-help", "--info", "-i", "--shell-completion", "-sc")
"""Command-line flags whose work needs every plugin (or names one): the scan is Hydra's."""


class _State:
    """The process's deferred scan: the index it trusts, and whether ``hydra_plugins`` is still unscanned."""

    def __init__(self) -> None:
        self.pending = False
        self.names: frozenset[str] = frozenset()
        self.resolvers: frozenset[str] = frozenset()


_STATE = _State()


def index_file(folder: Path | None = None) -> Path:
    """Where the index of the last full scan is kept (``folder`` defaults to ``user_cache("plugins")``)."""
    return (folder if folder is not None else user_cache(*CACHE_DIR)) / "index.json"


def deferred_scan(args: Iterable[str], folder: Path | None = None) -> Callable[[], None]:
    """Until the returned undo is called, Hydra's first ``Plugins.instance()`` leaves
    ``hydra_plugins`` unscanned when the index in ``folder`` says that is safe (see the module
    docstring), and scans it in full, writing the index, when there is none. ``args``: the
    command line; a flag of :data:`NO_DEFER_ARGS` or a ``hydra.mode`` override leaves Hydra's
    scan as it is. The undo forgets a scan still pending (the next ``Plugins.instance()``
    scans everything, as in a new process). Never raises for the index's sake."""
    if any(a in NO_DEFER_ARGS or "hydra.mode" in a for a in args) or _plugins_exist():
        return lambda: None
    Plugins = plugins.Plugins
    original = {name: vars(Plugins)[name] for name in ("_initialize", "discover", "_instantiate", "get_stats")}
    key = _index_key()
    index = _read(index_file(folder), key) if key is not None else None
    defer = index is not None and not index["eager"]

    def initialize(self: Any) -> None:
        if not defer:
            _scan_and_index(self, index_file(folder), key)
            return
        _scan_core(self)
        assert index is not None  # defer says so
        _STATE.pending, _STATE.names, _STATE.resolvers = True, frozenset(index["names"]), frozenset(index["resolvers"])

    def discover(self: Any, plugin_type: Any = None) -> Any:
        if plugin_type not in (search_path_plugin.SearchPathPlugin, config_source.ConfigSource):
            complete()
        return original["discover"](self, plugin_type)

    def instantiate(self: Any, config: Any) -> Any:
        complete()
        return original["_instantiate"](self, config)

    def get_stats(self: Any) -> Any:
        complete()
        return original["get_stats"](self)

    get_resolver = vars(_omegaconf())["_get_resolver"]

    def get_resolver_after_scan(name: str) -> Any:
        if _STATE.pending and name in _STATE.resolvers:
            complete()
        return get_resolver.__func__(name)

    Plugins._initialize = initialize  # type: ignore[method-assign]
    Plugins.discover = discover  # type: ignore[method-assign]
    Plugins._instantiate = instantiate  # type: ignore[method-assign]
    Plugins.get_stats = get_stats  # type: ignore[method-assign]
    _omegaconf()._get_resolver = staticmethod(get_resolver_after_scan)

    def undo() -> None:
        for name, value in original.items():
            setattr(Plugins, name, value)
        _omegaconf()._get_resolver = get_resolver
        if _STATE.pending:  # the next Plugins.instance() scans all, as Hydra does
            singleton.Singleton._instances.pop(Plugins, None)
            _STATE.pending = False

    return undo


def complete() -> None:
    """Scan ``hydra_plugins`` now if its scan was left pending (Hydra's own scan; its classes
    registered after Hydra's own plugins, as a full scan orders them); else nothing."""
    if not _STATE.pending:
        return
    _STATE.pending = False
    found = _import_plugins()
    if found is None:
        return
    _add(plugins.Plugins.instance(), *plugins.Plugins._scan_all_plugins(modules=[found]))


def pending_names() -> frozenset[str]:
    """The ConfigStore paths (``group/name.yaml``) the pending scan will store; empty when none is pending."""
    return _STATE.names if _STATE.pending else frozenset()


def needed_for(groups: Iterable[str]) -> bool:
    """Whether a command line naming these config groups (``hydra/launcher``) reads what the
    pending scan will store: a group that is, or holds, one of :func:`pending_names`."""
    names = pending_names()
    return any(n == g or n.startswith(f"{g.strip('/')}/") for g in groups for n in names)


def _omegaconf() -> Any:
    return omegaconf.OmegaConf


def _plugins_exist() -> bool:
    return plugins.Plugins in singleton.Singleton._instances


def _import_plugins() -> Any:
    try:
        return importlib.import_module("hydra_plugins")
    except ImportError:  # no plugin installed: no such package
        return None


def _scan_core(instance: Any) -> None:
    """What Hydra's ``Plugins._initialize`` does, for Hydra's own plugins only."""
    instance.plugin_type_to_subclass_list = collections.defaultdict(list)
    instance.class_name_to_class = {}
    scanned, instance.stats = plugins.Plugins._scan_all_plugins(modules=[importlib.import_module("hydra._internal.core_plugins")])
    for clazz in scanned:
        instance._register(clazz)


def _add(instance: Any, scanned: list[Any], stats: Any) -> None:
    """Register the classes of a later scan after those there (a full scan's order) and add its timings."""
    for clazz in scanned:
        instance._register(clazz)
    if stats is not None and instance.stats is not None:
        instance.stats.total_time += stats.total_time
        instance.stats.total_modules_import_time += stats.total_modules_import_time
        instance.stats.modules_import_time.update(stats.modules_import_time)


def _scan_and_index(instance: Any, path: Path, key: str | None) -> None:
    """Hydra's full scan (its own plugins, then ``hydra_plugins``), noting what the second part
    added; the note is kept in ``path`` under ``key``."""
    _scan_core(instance)
    names, resolvers = set(stored_names()), set(basecontainer.BaseContainer._resolvers)
    found = _import_plugins()
    shown = []
    show = warnings.showwarning

    def spy_show(*a: Any, **k: Any) -> None:
        shown.append(True)
        show(*a, **k)

    warnings.showwarning = spy_show
    try:
        added, stats = plugins.Plugins._scan_all_plugins(modules=[found]) if found is not None else ([], None)
    finally:
        if warnings.showwarning is spy_show:
            warnings.showwarning = show
    _add(instance, added, stats)
    if key is None:
        return
    eager = bool(shown) or any(issubclass(c, (search_path_plugin.SearchPathPlugin, config_source.ConfigSource))
                               for c in added)
    _write(path, {"key": key, "eager": eager, "names": sorted(set(stored_names()) - names),
                  "resolvers": sorted(set(basecontainer.BaseContainer._resolvers) - resolvers)})


def stored_names() -> Iterable[str]:
    """Every path ConfigStore holds (``group/name.yaml``); a pending scan's are not among them
    (:func:`pending_names`)."""
    todo = [("", config_store.ConfigStore.instance().repo)]
    while todo:
        prefix, folder = todo.pop()
        for name, value in folder.items():
            if isinstance(value, dict):
                todo.append((f"{prefix}{name}/", value))
            else:
                yield f"{prefix}{name}"


def _index_key() -> str | None:
    """The hex digest of what the scan's result depends on: the interpreter, ``sys.path`` and
    every file under ``hydra_plugins``' folders (path, size, modification time); None when
    those folders cannot be listed."""
    found = _import_plugins()
    folders = sorted(found.__path__) if found is not None else []
    files: list[tuple[str, int, int]] = []
    try:
        for root in folders:
            files.append(_stat(root))
            for folder, subfolders, names in os.walk(root):
                subfolders[:] = sorted(s for s in subfolders if s != "__pycache__")
                files.extend(_stat(os.path.join(folder, n)) for n in sorted(names))
    except OSError:
        return None
    inputs = (FORMAT, sys.version, sys.executable, sys.path, folders, files)
    return hashlib.sha256(repr(inputs).encode()).hexdigest()


def _stat(path: str) -> tuple[str, int, int]:
    st = os.stat(path)
    return (path, st.st_mtime_ns, st.st_size)


def _read(path: Path, key: str) -> dict[str, Any] | None:
    """The index at ``path`` when it is this user's, written for ``key`` and well formed; else None."""
    try:
        with open(path, encoding="utf-8") as handle:
            st = os.fstat(handle.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            index = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(index, dict) or index.get("key") != key or not isinstance(index.get("eager"), bool):
        return None
    if not all(isinstance(index.get(k), list) and all(isinstance(v, str) for v in index[k]) for k in ("names", "resolvers")):
        return None
    return index


def _write(path: Path, index: dict[str, Any]) -> None:
    """Keep ``index`` at ``path`` (atomically). Errors are ignored: the index only spares work."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(index, handle)
        os.replace(tmp, path)
    except OSError:
        return
