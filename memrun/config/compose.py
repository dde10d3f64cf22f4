"""memrun's config composed in-process, outside a Hydra job (``memrun plan``,
``memrun calibrate-judge``, tests): the same ``conf/`` and schemas a run composes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from memrun.config import faster_compose, register
from memrun.config.errors import explain_config_error
from memrun.config.strict import check_overrides
from memrun.core.paths import conf_dir
from memrun.core.redaction import redact_config
from memrun.errors import ConfigError
from memrun.lazy import lazy

if TYPE_CHECKING:
    import hydra
    import omegaconf
    from hydra import errors as hydra_errors
    from omegaconf import errors as omegaconf_errors
else:
    hydra = lazy("hydra")
    hydra_errors = lazy("hydra.errors")
    omegaconf = lazy("omegaconf")
    omegaconf_errors = lazy("omegaconf.errors")


def resolved(cfg: Any, *, resolve: bool = True, enum_to_str: bool = False) -> dict[str, Any]:
    """``cfg`` (a DictConfig: a mapping node) as plain dicts and lists, its interpolations
    resolved unless ``resolve`` is false, enums as their names with ``enum_to_str``."""
    tree = omegaconf.OmegaConf.to_container(cfg, resolve=resolve, enum_to_str=enum_to_str)
    return cast("dict[str, Any]", tree)  # a DictConfig's container is a dict; its keys are the YAML's strings


def saved(cfg: Any, container: dict[str, Any] | None = None) -> dict[str, Any]:
    """The config as a run keeps it in its instrument: ``container`` (``cfg`` resolved;
    None: resolved here) with its secrets redacted, what a started server is handed masked
    and fingerprinted, and ``${oc.env:NAME}`` kept as spelled, never its value
    (:func:`memrun.core.redaction.redact_config`, :mod:`memrun.core.masking`)."""
    spelling = resolved(cfg, resolve=False)
    return redact_config(resolved(cfg) if container is None else container, spelling, fingerprints=True)


def from_container(data: Any, **overrides: Any) -> Any:
    """A config node from plain data (a saved config), with ``overrides`` merged over it."""
    node = omegaconf.OmegaConf.create(data)
    return omegaconf.OmegaConf.merge(node, overrides) if overrides else node


def compose(overrides: list[str]) -> Any:
    """memrun's config (an OmegaConf ``DictConfig``) composed with ``overrides``, with no
    run folder. Raises ConfigError in one line (:func:`memrun.config.errors.explain_config_error`)."""
    register()
    undo = faster_compose()
    try:
        with hydra.initialize_config_dir(str(conf_dir()), version_base=None):
            cfg = hydra.compose("config", overrides=overrides)
    except (hydra_errors.HydraException, omegaconf_errors.OmegaConfBaseException) as exc:
        raise ConfigError(explain_config_error(exc)) from exc
    finally:
        undo()
    check_overrides(cfg, overrides)
    return cfg
