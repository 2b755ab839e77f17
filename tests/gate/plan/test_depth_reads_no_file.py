"""Plan.depth is pure (issue 35, H10): a steps-only SGLang DFlash/DSpark plan takes k from the drafter's block, read
where the plan is validated; a check asking the depth afterwards opens no file."""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path
from typing import Any

import pytest

from gate.model.engines.base import BlockKeys
from gate.plan.model import Plan, PlanError, load_plan, plan_from_dict

FAMILIES = Path(__file__).resolve().parents[3] / "examples" / "plans" / "families"


def _refuse(*_: Any, **__: Any) -> Any:
    raise AssertionError("a file was opened after the plan was loaded")


def _steps_only(plan: Plan) -> Plan:
    data = plan.model_dump(exclude_none=True)
    data["engine"]["speculative"] = {"method": "dflash", "num_steps": 4, "eagle_topk": 1}
    return plan_from_dict(data)


def test_the_depth_opens_no_file_after_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `Plan.depth` read the drafter's config.json each time it was asked (gate/plan/model.py
    `_block_drafter_config` called load_config), so every check asking the depth read a file."""
    plan = _steps_only(load_plan(FAMILIES / "dflash-sglang-qwen3-8b.yaml"))
    for module, name in ((builtins, "open"), (io, "open"), (os, "open"), (Path, "open"), (Path, "read_text"),
                         (Path, "read_bytes")):
        monkeypatch.setattr(module, name, _refuse)
    assert plan.depth == 15 and plan.bound_depth == 15  # the drafter's block_size 16, less the root
    assert plan.depth_reading.warnings == (
        "SGLang forces num_steps 1 (not the plan's 4) for DFLASH and drafts block - 1 = 15 tokens per verify (block "
        "16: the drafter config's block_size 16)",)


def test_the_plan_keeps_only_the_block_keys(tmp_path: Path) -> None:
    """The plan keeps the keys SGLang reads (dflash_config.block_size before block_size; dspark_block_size), not
    the config; a drafter config that cannot be read leaves the steps-only depth unknown: a one-line refusal."""
    data = load_plan(FAMILIES / "dflash-sglang-qwen3-8b.yaml").model_dump(exclude_none=True)
    cfg = tmp_path / "config.json"
    cfg.write_text('{"architectures": ["DFlashDraftModel"], "block_size": 16, "dflash_config": {"block_size": 8}}')
    data["drafter"]["config"] = str(cfg)
    data["engine"]["speculative"] = {"method": "dflash", "num_steps": 1}
    plan = plan_from_dict(data)
    assert plan._drafter_block == (cfg, BlockKeys(8, None)) and plan.depth == 7
    cfg.write_text("{not json")
    with pytest.raises(PlanError, match="drafter's config is not at hand") as e:
        plan_from_dict(data)
    assert "\n" not in str(e.value)
