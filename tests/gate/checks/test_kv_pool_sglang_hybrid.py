"""kv_pool with SGLang (issue 35.3): hybrid targets get SGLang's predicted pool (gpt-oss's hybrid SWA pool, Gemma-3
as a uniform pool, Qwen3.5's GDN state carved first; numbers from tests/fixtures/oracle/sglang-0.5.23-kv-sizing.json),
deployment (b) of issue 36 is sized, and a drafter SGLang under-reserves fails the line instead of passing with a
note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.checks import kv_pool
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, context, tiny_plan

QWEN35 = "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json"


def _sglang(config: str, **engine: Any) -> dict[str, Any]:
    plan = tiny_plan("ngram")
    plan["target"] = {"name": config, "revision": "r1", "config": str(CONFIGS / config), "weights": {"bytes": 1}}
    plan["engine"] = {"kind": "sglang", "tp": 1, "kv_dtype": "bf16", "kv_cache_memory_bytes": 64 << 30,
                      "speculative": plan["engine"]["speculative"], **engine}
    plan["workload"] = [{"name": "chat", "concurrency": 16, "prompt_tokens": 3000, "output_tokens": 700}]
    return plan


@pytest.mark.parametrize(("config", "tokens", "note"), [
    ("target-hybrid-swa__openai__gpt-oss-120b.json", 1035630, "hybrid SWA pool"),  # the oracle's row, 64 GiB
    ("target-hybrid-swa__google__gemma-3-27b-it.json", 135300, "uniform pool"),
    (QWEN35, 552937, "Mamba state slots"),
])
def test_sglang_hybrids_get_sglangs_predicted_pool(config: str, tokens: int, note: str) -> None:
    r = kv_pool.check(context(plan_from_dict(_sglang(config))))
    assert r.values["judged_pool_basis"] == "predicted"
    assert r.values["judged_pool_tokens"] == tokens
    assert any(note in n for n in r.values["notes"])
    assert r.status is Status.PASS


def test_deployment_b_qwen35_nextn_gets_a_predicted_pool(tmp_path: Path) -> None:
    """Issue 36 (b): Qwen3.5-27B with its one MTP layer declared, SGLang NEXTN, a 64 GiB KV budget."""
    cfg = json.loads((CONFIGS / QWEN35).read_text())
    cfg["text_config"]["mtp_num_hidden_layers"] = 1
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    plan = _sglang(QWEN35, speculative={"method": "mtp", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4})
    plan["target"]["config"] = str(path)
    plan.pop("drafter", None)
    plan["workload"] = [{"name": "chat", "concurrency": 16, "prompt_tokens": 3000, "output_tokens": 700},
                        {"name": "agent", "concurrency": 4, "prompt_tokens": 60000, "output_tokens": 2000}]
    r = kv_pool.check(context(plan_from_dict(plan)))
    notes = " ".join(r.values["notes"])
    assert "no predicted pool" not in notes and "no prediction" not in r.reason
    assert r.values["judged_pool_basis"] == "predicted"
    # the oracle's Qwen3.5 row (64 GiB, 1-layer head, 4 draft tokens, 5 slots per request): 529,254
    assert r.values["judged_pool_tokens"] == 529254
    assert r.status is Status.PASS


DSV3 = "target-mla-mtp__deepseek-ai__DeepSeek-V3.json"
DSV3_HEAD = "eagle3__specforge__deepseek-v3-671b-eagle3.json"


def test_a_drafter_sglang_under_reserves_fails_with_the_numbers() -> None:
    """Issue 35: an EAGLE-3 MHA head on DeepSeek-V3 (MLA) holds 4,096 B/token, SGLang charges 1,152: 20,480 tokens
    need 83,886,080 B of drafter KV against 23,592,960 B charged. That passed with a note; now it fails."""
    plan = plan_from_dict({
        "name": "dsv3-eagle3-sglang",
        "target": {"name": "deepseek-ai/DeepSeek-V3", "config": str(CONFIGS / DSV3)},
        "drafter": {"name": "dsv3-eagle3", "config": str(CONFIGS / DSV3_HEAD)},
        "engine": {"kind": "sglang", "tp": 1, "kv_dtype": "bf16", "kv_cache_memory_bytes": 20 * 2**30,
                   "speculative": {"method": "eagle3", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}},
        "workload": [{"name": "chat", "concurrency": 4, "prompt_tokens": 4096, "output_tokens": 1024}],
    })
    r = kv_pool.check(context(plan))
    assert r.status is Status.FAIL
    assert "under-reserves" in r.reason
    assert "83,886,080 B" in r.reason and "23,592,960 B" in r.reason and "2,944 B/token more" in r.reason
