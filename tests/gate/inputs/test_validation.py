"""gate.inputs.validation: broken geometry and impossible plan numbers are invalid input (issue 10, item 1).

Controls: every real config fixture (tests/fixtures/configs, from the Hugging Face hub) passes.
"""

from __future__ import annotations

import json

import pytest

from gate.inputs.validation import acceptance_target_possible, finite, validate_geometry
from gate.status import InputError
from tests.gate.helpers import CONFIGS


def test_real_configs_are_valid() -> None:
    configs = sorted(CONFIGS.glob("*.json"))
    assert len(configs) >= 10
    for p in configs:
        validate_geometry(json.loads(p.read_text(encoding="utf-8")), p.name)


def _tiny() -> dict:
    return json.loads((CONFIGS / "tiny-draft.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("key", "value", "match"), [
    ("head_dim", -128, "head_dim must be ≥ 1, got -128"),
    ("head_dim", 0, "head_dim must be ≥ 1, got 0"),
    ("num_key_value_heads", -2, "num_key_value_heads must be ≥ 1"),
    ("num_hidden_layers", 10**12, "num_hidden_layers = 1,000,000,000,000 is above the sane bound 4,096"),
    ("hidden_size", float("nan"), "hidden_size must be an integer, got nan"),
    ("num_attention_heads", True, "must be an integer"),
    ("vocab_size", "32000", "must be an integer"),
])
def test_bad_geometry_refused(key: str, value: object, match: str) -> None:
    cfg = _tiny()
    cfg[key] = value
    with pytest.raises(InputError, match=match):
        validate_geometry(cfg, "drafter config")


def test_nested_geometry_checked() -> None:
    cfg = {"architectures": ["X"], "text_config": {"num_hidden_layers": 2, "head_dim": -64}}
    with pytest.raises(InputError, match="text_config field head_dim"):
        validate_geometry(cfg)


def test_integral_float_is_accepted() -> None:
    cfg = _tiny()
    cfg["hidden_size"] = float(cfg["hidden_size"])
    validate_geometry(cfg)


def test_layer_ids_must_be_integers_in_range() -> None:
    with pytest.raises(InputError, match="target_layer_ids"):
        validate_geometry({"dflash_config": {"target_layer_ids": [1, -5]}})
    with pytest.raises(InputError, match="eagle_aux_hidden_state_layer_ids"):
        validate_geometry({"eagle_aux_hidden_state_layer_ids": [1, "2"]})


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), -1.0])
def test_finite_refuses(value: float) -> None:
    with pytest.raises(InputError, match="costs\\[0\\].target_step_ms"):
        finite("costs[0].target_step_ms", value)


def test_finite_accepts_and_positive() -> None:
    finite("x", 0.0)
    finite("x", 14.14, positive=True)
    with pytest.raises(InputError, match="> 0"):
        finite("x", 0.0, positive=True)


def test_target_above_one_plus_k_is_invalid() -> None:
    """Issue 10: a target of 5.0 at k = 3 (at most L 4) can never be met."""
    with pytest.raises(InputError, match=r"5 is above 1 \+ k = 4"):
        acceptance_target_possible(5.0, 3)
    acceptance_target_possible(4.0, 3)  # the most a k = 3 drafter can do
    acceptance_target_possible(5.0, None)  # k unknown: nothing to compare
