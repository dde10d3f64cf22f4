"""The price table of LLM models (``conf/prices.yaml``): what ``memrun plan`` and the
pull-request comment of ``memrun compare`` price calls with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from memrun.errors import ConfigError


def load_prices(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(model -> {input, output} per 1M tokens in USD, {file, checked}) from a price table.
    Raises ConfigError for an unreadable or malformed file."""
    try:
        data = yaml.safe_load(path.read_text())
        models = data["models"]
        for price in models.values():
            float(price["input"]), float(price["output"])
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"prices {path}: cannot read the price table ({exc}); it needs models: "
                          "{<model>: {input: USD per 1M tokens, output: USD per 1M tokens}}") from exc
    return models, {"file": str(path), "checked": str(data.get("checked")), "source": data.get("source")}
