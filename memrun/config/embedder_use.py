"""What an arm class does with an ``embedder``, and the note for one it ignores.

An arm that embeds (dense, hybrid) takes an ``embedder`` parameter without a default
(``"required"``); one with a default, or ``**kwargs``, ``"accepts"`` one; one with no such
parameter (bm25, okapi, http, mcp) ``"no"``: an embedder composed into it (the bm25 job of
``memrun -m arm=bm25,dense arm/embedder=minilm``) is set to null, so that the run records
what it used (:func:`memrun.config.build_spec.check_embedder`).

Two readers of the same rule (:func:`use_of`): a run inspects the imported class
(``build_spec.embeds``); ``memrun --cfg job`` reads the class's source without importing
it (:func:`declared_use`: importing an arm costs 0.5-1.3 s, more than the command), so that
what it prints is what the run will record.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from importlib.machinery import PathFinder
from pathlib import Path

REQUIRED, ACCEPTS, NO = "required", "accepts", "no"


def use_of(parameters: Iterable[tuple[str, bool, bool]]) -> str:
    """The rule (module docstring) over a constructor's parameters, each ``(name, has a
    default, is **kwargs)``: ``"required"``, ``"accepts"`` or ``"no"``."""
    found = NO
    for name, has_default, var_keyword in parameters:
        if name == "embedder" and not var_keyword:
            return ACCEPTS if has_default else REQUIRED
        if var_keyword:
            found = ACCEPTS
    return found


def ignored_note(arm: object) -> str:
    """The line said when an arm that does not embed is handed an embedder."""
    return (f"arm={arm} does not embed: arm/embedder=... is ignored here (it applies to dense and hybrid); "
            "recorded as arm.embedder=null")


def _source(module: str) -> Path | None:
    """The source file of ``module`` found on the import path without importing it or its
    packages (None: not found, or not a plain ``.py`` file)."""
    parts = module.split(".")
    paths: list[str] | None = None
    loaded = sys.modules.get(parts[0])
    if loaded is not None and getattr(loaded, "__path__", None) is not None:
        paths, parts = list(loaded.__path__), parts[1:]
    origin = None
    for i, part in enumerate(parts):
        spec = PathFinder.find_spec(part, paths)
        if spec is None:
            return None
        if i < len(parts) - 1:
            if not spec.submodule_search_locations:
                return None
            paths = list(spec.submodule_search_locations)
        origin = spec.origin
    return Path(origin) if origin and origin.endswith(".py") else None


def declared_use(target: str) -> str | None:
    """:func:`use_of` for the class ``target`` (``pkg.module.Class``) as its source declares
    its ``__init__``, read without importing it; None when that cannot be told so (a class
    not found, one without its own ``__init__``: a base class decides)."""
    module, _, name = target.rpartition(".")
    path = _source(module) if module else None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8")) if path else None
    except (OSError, SyntaxError, ValueError):
        return None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None) if tree else None
    init = next((n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == "__init__"), None) if cls else None
    if init is None:
        return None
    args = init.args
    positional = args.posonlyargs + args.args
    with_default = len(args.defaults)
    params = [(a.arg, i >= len(positional) - with_default, False) for i, a in enumerate(positional)]
    params += [(a.arg, d is not None, False) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg is not None:
        params.append((args.kwarg.arg, False, True))
    return use_of(params)
