"""Reading a Hugging Face config.json (the only reader of model configs), with one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.inputs.loading import CONFIG_LIMITS, load_json
from gate.inputs.validation import validate_geometry
from gate.model.config import ConfigError
from gate.status import InputError


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json (or a directory holding one) into a dict, with one-line errors.

    Read through gate.inputs.loading (regular files only, size/depth/digit limits, duplicate keys refused)
    and checked by gate.inputs.validation (positive, bounded geometry: a negative head_dim or 10^12 layers
    is invalid input, not a number to compute with).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        data = load_json(p, "config file", CONFIG_LIMITS)
    except InputError as e:
        raise ConfigError(str(e)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config {p} is not a JSON object")
    try:
        validate_geometry(data, f"config {p}")
    except InputError as e:
        raise ConfigError(str(e)) from None
    return data
