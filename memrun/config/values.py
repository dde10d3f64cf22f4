"""The checks of a run's settings that read values only: ranges, and the combinations no run
can use (``concurrency=0``, ``repeats=3`` on axis=recall, ``min_coverage=2``).

Their one home, shared by the run (:func:`memrun.config.build_spec.build_spec`) and by
``memrun --cfg`` (:mod:`memrun.commands.show_config`), which must refuse what a run of the
same config refuses. Light: stdlib, :mod:`memrun.errors` and :mod:`memrun.config`'s own
helpers, so that ``--cfg job`` loads no arm, no run flow, no numpy or pyarrow
(tests/test_startup.py). Every check raises ConfigError in one line, naming the key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memrun.config import Axis, cutoffs, default_top_k
from memrun.errors import ConfigError
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.core import status
else:
    status = lazy("memrun.core.status")  # max_error_share's default, for a hand-made config without it only


def positive_int(value: Any, key: str) -> int:
    """``value`` as an int >= 1, else ConfigError naming ``key`` (user configs have no schema)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or (isinstance(value, float) and not value.is_integer()):
        raise ConfigError(f"{key}={value!r}: must be a positive integer")
    return number


def check_settings(cfg: Any, accuracy: bool) -> int:
    """Check the run-wide settings before any work; return ``arm.top_k``.

    ``arm.top_k`` unset or null takes :func:`memrun.config.default_top_k`. Raises
    ConfigError for a non-positive top_k or repeats, repeats > 1 on axis=recall (a
    search is made and scored once per item, so repeats would be recorded and
    ignored), a min_coverage outside [0, 1], and stale_check off the accuracy axis.
    """
    if cfg.get("stale_check") and not accuracy:
        raise ConfigError("stale_check=true labels judged answers; it needs axis=accuracy")
    repeats = positive_int(cfg.get("repeats", 1), "repeats")
    if repeats > 1 and not accuracy:
        raise ConfigError(
            f"repeats={repeats}: axis=recall searches and scores each item once, so repeats would be ignored; "
            "repeats is for axis=accuracy (reader and judge). Drop it, or run the two axes as separate commands"
        )
    coverage = cfg.get("min_coverage", 0.95)
    if not isinstance(coverage, (int, float)) or not 0 <= coverage <= 1:
        raise ConfigError(f"min_coverage={coverage}: must be a share between 0 and 1 (0.95: 95% of the items)")
    share = cfg.get("max_error_share") if "max_error_share" in cfg else status.MAX_ERROR_SHARE
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ConfigError(f"max_error_share={share}: must be a share between 0 and 1 (0.1: 10% of the rows)")
    top_k = cfg.arm.get("top_k")
    return default_top_k(cfg) if top_k is None else positive_int(top_k, "arm.top_k")


def check_sampling(role: str, node: Any) -> None:
    """An LLM node's ``max_tokens`` (a positive integer) and ``temperature`` (0 to 2, the range
    OpenAI's API takes), before any call: out of range, every call would be refused alike, or
    a server that clamps would answer with settings the run does not record. Nodes without
    them (exact-match judges) pass. Raises ConfigError naming ``role.key``."""
    keys = node.keys() if hasattr(node, "keys") else ()
    if "max_tokens" in keys and node.max_tokens is not None:
        positive_int(node.max_tokens, f"{role}.max_tokens")
    temperature = node.get("temperature") if "temperature" in keys else None
    if temperature is not None and not 0 <= float(temperature) <= 2:
        raise ConfigError(f"{role}.temperature={temperature}: must be between 0 and 2 (0: the most likely answer)")


def check_llm_calls(cfg: Any) -> None:
    """The LLM-call settings (``concurrency``, ``max_tokens_total``, ``judge2_sample``,
    ``http_attempts``, ``request_timeout_s``), checked on either axis: a value no run could
    use is refused even where it goes unused. Raises ConfigError naming the key."""
    if int(cfg.concurrency) < 1:
        raise ConfigError(f"concurrency={cfg.concurrency}: must be at least 1")
    if cfg.max_tokens_total is not None and int(cfg.max_tokens_total) < 1:
        raise ConfigError("max_tokens_total must be a positive number of tokens, or null")
    if cfg.judge2_sample is not None and int(cfg.judge2_sample) < 1:
        raise ConfigError(f"judge2_sample={cfg.judge2_sample}: must be at least 1, or null for every item")
    if int(cfg.http_attempts) < 1:
        raise ConfigError(f"http_attempts={cfg.http_attempts}: must be at least 1")
    if not float(cfg.request_timeout_s) > 0:
        raise ConfigError(f"request_timeout_s={cfg.request_timeout_s}: must be a positive number of seconds")


def check_values(cfg: Any) -> None:
    """Every check of this module a run of ``cfg`` (a composed job config) makes, in the
    run's order: the cut-offs ``ks``, the run-wide settings, the LLM-call settings, and on
    axis=accuracy the judges' sampling. ``memrun --cfg`` applies them; a run applies them
    among its other checks (:func:`memrun.config.build_spec.build_spec`). Raises ConfigError."""
    accuracy = str(getattr(cfg.axis, "value", cfg.axis)) == Axis.accuracy.value
    cutoffs(cfg)
    check_settings(cfg, accuracy)
    if "concurrency" in cfg:  # composed from conf/ (a hand-made recall config may hold no LLM key)
        check_llm_calls(cfg)
    if accuracy:
        for role in ("judge", "judge2"):
            node = cfg.get(role)
            if node is not None:
                check_sampling(role, node)
