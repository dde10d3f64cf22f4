"""``memrun --cfg job|hydra|all [--package P]`` and ``memrun --info [config|all]``: Hydra prints
the composed config; memrun prints it with the secrets redacted exactly as the run's saved
``.hydra/`` files are (:mod:`memrun.core.redaction`), so that a config pasted into an issue or a CI
log carries no password. Hydra has no hook for what it prints there, so its output is caught and
redacted as a whole (:func:`redacted_config_print`)."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import yaml

from memrun.lazy import lazy

# Hydra's own argument parser, to read --cfg and --package as Hydra does (memrun.lazy).
# Only what --cfg and --info print is redacted: `memrun --help` does not load it.
if TYPE_CHECKING:
    from hydra._internal import hydra as hydra_hydra
    from hydra._internal import utils as hydra_utils

    from memrun.config import embedder_use, strict, values
    from memrun.core import redaction, yaml_text
else:
    hydra_hydra = lazy("hydra._internal.hydra")
    strict = lazy("memrun.config.strict")
    values = lazy("memrun.config.values")  # the run's value checks (concurrency=0): light, no run flow
    hydra_utils = lazy("hydra._internal.utils")
    embedder_use = lazy("memrun.config.embedder_use")  # only for a config that holds an embedder: ast, no arm imported
    redaction = lazy("memrun.core.redaction")
    yaml_text = lazy("memrun.core.yaml_text")
# libyaml's loader where PyYAML has it: the safe loader's values, ~5x faster on a whole config.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# The heading under which ``--info config|all`` prints the composed config, last of its sections.
INFO_CONFIG_HEADING = "\nConfig\n******\n"


def _show_cfg_args(args: Sequence[str]) -> tuple[str | None, str | None]:
    """What ``args`` (memrun's Hydra arguments) ask to be shown, ``"cfg"``, ``"info"`` or None,
    and ``--cfg``'s ``--package``, read with Hydra's own parser (abbreviations such as
    ``--cf`` included)."""
    known, _ = hydra_utils.get_args_parser().parse_known_args(list(args))
    if getattr(known, "cfg", None):
        return "cfg", getattr(known, "package", None)
    return ("info" if getattr(known, "info", None) else None), None


def redact_printed_info(text: str) -> str:
    """``text``, what Hydra's ``--info`` printed, with the composed config it lists under
    ``Config`` redacted as ``--cfg job`` is (:func:`redact_printed_config`); the other
    sections (search path, defaults, plugins) hold no values and are kept as printed."""
    head, found, config = text.partition(INFO_CONFIG_HEADING)
    if not found:
        return redaction.Redactor().text(text)
    body = config.rstrip("\n")
    return head + found + redact_printed_config(body + "\n").rstrip("\n") + config[len(body):]


def redact_printed_config(text: str, package: str | None = None) -> str:
    """``text``, what Hydra's ``--cfg`` printed (YAML, after a ``# @package P`` line for a
    package; a bare value for a package that is not a mapping), with every secret
    replaced by ``***`` where it sits. A package is redacted in its place in the config
    (``--package arm.headers``: every header, as its ``public_headers`` is not shown).
    Text that does not parse: URL user info and key-shaped strings only."""
    header = text.startswith("# @package ")
    first, _, body = text.partition("\n") if header else ("", "", text)
    path = [] if package in (None, "", "_global_") else str(package).split(".")
    scalar = bool(path) and not header  # Hydra print()s a package that is not a mapping
    try:
        value: Any = body.rstrip("\n") if scalar else yaml.load(body, Loader=_SAFE_LOADER)
    except yaml.YAMLError:
        return redaction.Redactor().text(text)
    if value is None:
        return text
    tree = value
    for key in reversed(path):
        tree = {key: tree}
    _as_recorded(tree)
    if isinstance(tree, dict) and isinstance(tree.get("hydra"), dict):
        job = {k: v for k, v in tree.items() if k != "hydra"}
        clean = {**redaction.redact_config(job), "hydra": redaction.redact_hydra(tree["hydra"], job)}
        tree = {key: clean[key] for key in tree}  # Hydra's order (hydra first for --cfg all)
    else:
        tree = redaction.redact_config(tree)
    for key in path:
        tree = tree[key]
    if scalar:
        return f"{tree}\n"
    text = yaml_text.yaml_text(tree)
    return (f"{first}\n" if header else "") + text


def _as_recorded(tree: Any) -> None:
    """Set in ``tree`` (the printed config from its root) what the run will change before it
    saves its config, saying so on stderr as the run does: an embedder composed into an arm
    that does not embed is recorded as null (:mod:`memrun.config.embedder_use`, read from the
    arm's source, not imported)."""
    arm = tree.get("arm") if isinstance(tree, dict) else None
    if not isinstance(arm, dict) or arm.get("embedder") is None or not isinstance(arm.get("_target_"), str):
        return
    if embedder_use.declared_use(arm["_target_"]) == embedder_use.NO:
        arm["embedder"] = None
        sys.stderr.write(f"warning: {embedder_use.ignored_note(arm.get('name'))}\n")


@contextmanager
def redacted_config_print(args: Sequence[str]) -> Iterator[None]:
    """Around Hydra's app: when ``args`` ask for ``--cfg`` or ``--info``, what the block prints
    on stdout is held and printed redacted (:func:`redact_printed_config`,
    :func:`redact_printed_info`) once it returns; nothing is printed when it raises. Other
    arguments: a no-op."""
    show, package = _show_cfg_args(args)
    if show is None:
        yield
        return
    real, held = sys.stdout, io.StringIO()
    undo = _refusing_what_a_run_refuses() if show == "cfg" else (lambda: None)
    # --info sets the root logger to DEBUG with a handler on stdout (Hydra's
    # simple_stdout_log_config): put them back, for a caller that goes on in this process.
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    sys.stdout = held
    try:
        yield
    finally:
        undo()
        sys.stdout = real
        root.setLevel(level)
        root.handlers[:] = handlers
    text = held.getvalue()
    sys.stdout.write(redact_printed_config(text, package) if show == "cfg" else redact_printed_info(text))


def _refusing_what_a_run_refuses() -> Callable[[], None]:
    """Until the returned undo is called, a config Hydra composes is checked as a run checks
    its overrides (:func:`memrun.config.strict.check_overrides`: a key added where memrun's
    schema has none, a boolean given as a word or number) and its values
    (:func:`memrun.config.values.check_values`: ``concurrency=0``, ``repeats=3`` on
    axis=recall), so that ``--cfg`` never shows a config a run of the same overrides would
    refuse. Raises ConfigError from the compose."""
    hydra_class = hydra_hydra.Hydra
    original = hydra_class.compose_config

    def compose_config(self: Any, config_name: str | None, overrides: list[str], *args: Any, **kwargs: Any) -> Any:
        cfg = original(self, config_name, overrides, *args, **kwargs)
        strict.check_overrides(cfg, overrides)
        values.check_values(cfg)
        return cfg

    hydra_class.compose_config = compose_config  # type: ignore[method-assign]

    def undo() -> None:
        hydra_class.compose_config = original  # type: ignore[method-assign]

    return undo
