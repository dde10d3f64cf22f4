"""memrun's own ``conf/`` files parsed by libyaml while Hydra composes them.

Hydra reads each YAML file of a compose with ``OmegaConf.load``, which parses with PyYAML's
pure-Python scanner, one character at a time. memrun's configs are written for a reader
(comments, the help text in ``config.yaml``): the six files of a run's compose were
~0.29 G instructions (~7%) of its start, about 0.03 s.

:func:`libyaml_for_conf` has ``OmegaConf.load`` parse the files under memrun's config
folder with libyaml's parser (PyYAML's C extension, ``yaml._yaml.CParser``) and
OmegaConf's own constructor and resolvers: its float rule, no timestamps, a duplicate key
refused. The values are the same (``tests/config/test_conf_yaml.py`` loads every file under
``conf/`` both ways). Any other file (a user's ``--config-dir``, Hydra's own configs) is
parsed as before, and a file libyaml cannot parse is parsed again the pure way, so that an
error reads as it always did. Without the C extension nothing changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from omegaconf import _utils as omegaconf_utils

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml
    CParser = None  # type: ignore[assignment,misc]


class _ConfLoader:
    """What ``yaml.load`` asks of its loader (``get_single_data``, ``dispose``), for one file:
    libyaml's parse, or the pure parser's when libyaml raised (the file re-read from the start)."""

    def __init__(self, stream: Any, fast: type, pure: Callable[[], type]) -> None:
        self.stream, self.pure, self.start = stream, pure, stream.tell()
        self.loader = fast(stream)

    def get_single_data(self) -> Any:
        try:
            return self.loader.get_single_data()
        except yaml.YAMLError:
            self.loader.dispose()
            self.stream.seek(self.start)
            self.loader = self.pure()(self.stream)
            return self.loader.get_single_data()

    def dispose(self) -> None:
        self.loader.dispose()


def libyaml_loader(pure: type) -> type:
    """OmegaConf's YAML loader class ``pure`` (``omegaconf._utils.get_yaml_loader()``) with
    libyaml's parser in place of PyYAML's pure-Python reader, scanner, parser and composer.
    Raises RuntimeError when PyYAML has no C extension."""
    if CParser is None:
        raise RuntimeError("PyYAML was built without libyaml")

    def init(self: Any, stream: Any) -> None:  # as yaml.CSafeLoader: the C parser, then the Python constructor and resolver
        CParser.__init__(self, stream)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)

    return type(f"Lib{pure.__name__}", (CParser, pure), {"__init__": init})


def libyaml_for_conf(folder: Path) -> Callable[[], None]:
    """Until the returned undo is called, ``OmegaConf.load`` parses a file under ``folder``
    (memrun's config folder) with :func:`libyaml_loader`; other input as before. Inside
    another such call (a compose in a run), nothing more is patched and the undo does nothing."""
    original = omegaconf_utils.get_yaml_loader
    if CParser is None or getattr(original, "libyaml_root", None) is not None:  # no C extension, or patched already
        return lambda: None
    root = os.path.join(os.path.realpath(folder), "")
    pure = original()
    fast = libyaml_loader(pure)

    def get_yaml_loader() -> Any:
        def loader(stream: Any) -> Any:
            name = getattr(stream, "name", None)
            if isinstance(name, str) and os.path.realpath(name).startswith(root) and stream.seekable():
                return _ConfLoader(stream, fast, original)
            return original()(stream)

        return loader

    get_yaml_loader.libyaml_root = root  # type: ignore[attr-defined]
    omegaconf_utils.get_yaml_loader = get_yaml_loader

    def undo() -> None:
        omegaconf_utils.get_yaml_loader = original

    return undo
