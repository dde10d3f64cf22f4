"""Reviewed gates for ``memrun compare --gate NAME``: ``conf/gates/<NAME>.yaml`` (or a file path).

A gate file holds ``metric``, ``band`` (the null band, pp), ``gate-min-delta`` (pp),
``categories`` (a list, a comma-separated string, or ``comparable``) and the data
thresholds ``max-error-share``, ``max-error-gap``, ``min-paired-share`` (shares in [0, 1],
:mod:`memrun.comparison.fitness`); every key is optional. Flags given on the command line override the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from memrun.core.paths import conf_dir
from memrun.core.unique_keys import load_yaml
from memrun.errors import MemrunError

GATE_KEYS = {"metric": "metric", "band": "gate_band", "gate-min-delta": "gate_min_delta",
             "gate_min_delta": "gate_min_delta", "categories": "categories",
             "max-error-share": "max_error_share", "max_error_share": "max_error_share",
             "max-error-gap": "max_error_gap", "max_error_gap": "max_error_gap",
             "min-paired-share": "min_paired_share", "min_paired_share": "min_paired_share"}
NUMBERS = ("gate_band", "gate_min_delta", "max_error_share", "max_error_gap", "min_paired_share")


def gate_path(name: str) -> Path:
    """The gate file for ``name``: a path to a YAML file, or ``conf/gates/<name>.yaml``."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return path
    return conf_dir() / "gates" / f"{name}.yaml"


def load_gate(name: str) -> dict[str, Any]:
    """argparse destination -> value from the gate file. Raises MemrunError (one line)."""
    path = gate_path(name)
    try:
        data = load_yaml(path.read_text()) or {}
    except FileNotFoundError:
        known = sorted(p.stem for p in (gate_path("x").parent).glob("*.yaml"))
        raise MemrunError(f"--gate {name}: no gate file {path}; known gates: {', '.join(known) or 'none'}") from None
    except (OSError, yaml.YAMLError) as exc:
        raise MemrunError(f"--gate {name}: cannot read {path} ({str(exc).splitlines()[0]})") from exc
    if not isinstance(data, dict) or (unknown := sorted(set(data) - set(GATE_KEYS))):
        raise MemrunError(f"--gate {name}: {path} must be a mapping of {', '.join(k for k in GATE_KEYS if '_' not in k)}"
                          + (f"; unknown key(s): {', '.join(map(str, unknown))}" if isinstance(data, dict) else ""))
    out: dict[str, Any] = {}
    for key, value in data.items():
        dest = GATE_KEYS[key]
        if dest in NUMBERS:
            try:
                value = float(value)
            except (TypeError, ValueError):
                unit = "pp" if dest.startswith("gate") else "a share between 0 and 1"
                raise MemrunError(f"--gate {name}: {key}={value!r} in {path} is not a number ({unit})") from None
        elif dest == "categories" and isinstance(value, list):
            value = ",".join(str(v) for v in value)
        out[dest] = None if value is None else (value if dest in NUMBERS else str(value))
    return out
