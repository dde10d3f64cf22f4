"""The run's command line as Hydra's parser reads it: its flags before its overrides.

Hydra parses ``memrun [flags] [overrides]`` with argparse, whose positional overrides are
one run of words: a flag between two runs of them left the second unread, and
``memrun benchmark=locomo -m arm=bm25,dense`` or ``memrun arm=mine --config-dir myconf
benchmark=locomo`` failed with Hydra's nine-line usage and "unrecognized arguments:
arm=bm25,dense", an override that is fine. :func:`flags_first` moves every flag (with its
value) before the overrides, each list in its own order, as argparse's intermixed parsing
reads such a line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memrun.lazy import lazy

if TYPE_CHECKING:
    from hydra._internal import utils as hydra_utils
else:
    hydra_utils = lazy("hydra._internal.utils")


def flags_first(args: list[str]) -> list[str]:
    """``args`` with every flag of Hydra's parser (and the value it takes) before the
    overrides; ``args`` itself when no flag follows an override. A word starting with
    ``-`` is a flag (an override never does); one Hydra does not know, or an abbreviation
    that is not unique, is left for Hydra's parser to name, taking no value."""
    first = next((i for i, arg in enumerate(args) if not arg.startswith("-")), len(args))
    if not any(arg.startswith("-") and arg != "-" for arg in args[first + 1:]):
        return args  # no flag after a word (maybe an override, maybe a flag's value): as Hydra reads it
    takes, consts = _values_taken()
    flags: list[str] = []
    overrides: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-") or arg == "-":
            overrides.append(arg)
            i += 1
            continue
        flags.append(arg)
        i += 1
        name, has_value, _ = arg.partition("=")
        name = name if name in takes else _unique_prefix(name, takes) or name
        choices = takes.get(name)
        if has_value or choices is None:
            continue
        if i >= len(args) and choices == ():  # `memrun arm=x --cfg`: moved first, --cfg would take arm=x
            return args
        if i < len(args) and (choices == () or args[i] in choices):  # a value, or an optional one of its choices
            flags.append(args[i])
            i += 1
        elif choices:  # an optional value not given (--info): moved first, it would read the next override
            flags[-1] = f"{name}={consts[name]}"
    moved = flags + overrides
    return args if not overrides or moved == args else moved


def _values_taken() -> tuple[dict[str, Any], dict[str, Any]]:
    """Option string -> None (takes no value), ``()`` (takes one, any) or the choices of an
    optional value (``--info [all|config|...]``), and option string -> the value an optional
    one reads when none is given (``--info``: ``all``), read off Hydra's own parser."""
    takes: dict[str, Any] = {}
    consts: dict[str, Any] = {}
    for action in hydra_utils.get_args_parser()._actions:
        value: Any = None
        if action.nargs is None:
            value = ()
        elif action.nargs == "?":  # a value only from its choices: without any, the next word is not read
            value = tuple(action.choices) if action.choices else None
        for option in action.option_strings:
            takes[option], consts[option] = value, action.const
    return takes, consts


def _unique_prefix(name: str, takes: dict[str, Any]) -> str | None:
    """The long option ``name`` abbreviates (argparse reads ``--cf`` as ``--cfg``); None when
    it abbreviates none or several."""
    if not name.startswith("--"):
        return None
    matches = [option for option in takes if option.startswith(name)]
    return matches[0] if len(matches) == 1 else None
