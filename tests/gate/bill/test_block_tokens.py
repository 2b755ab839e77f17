"""A block-scoped drafter's block in the bill is the block SGLang drafts (one block rule,
gate.model.engines.base.drafter_block_size): dflash_config.block_size before the top-level block_size."""

from __future__ import annotations

import json
from pathlib import Path

from gate.bill.budget import compute_budget
from gate.bill.facts import artifact_facts
from gate.plan.model import load_plan, plan_from_dict

FAMILIES = Path(__file__).resolve().parents[3] / "examples" / "plans" / "families"


def test_the_bill_reads_the_nested_block_first(tmp_path: Path) -> None:
    """Before: the bill read the top-level block_size first (16 here), while SGLang drafts dflash_config's (8)."""
    data = load_plan(FAMILIES / "dflash-sglang-qwen3-8b.yaml").model_dump(exclude_none=True)
    cfg = json.loads(Path(data["drafter"]["config"]).read_text())
    cfg["block_size"], cfg["dflash_config"]["block_size"] = 16, 8
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    data["drafter"].update(config=str(path), kv_scope="block")
    data["drafter"].pop("block_tokens", None)
    data["engine"]["speculative"] = {"method": "dflash", "num_draft_tokens": 8}
    plan = plan_from_dict(data)
    bill = compute_budget(plan, artifact_facts(plan))
    assert bill.drafter is not None and bill.drafter.block_tokens == 8
