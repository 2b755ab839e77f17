"""Rollout plans for the SGLang arms, describing exactly what sglang_live launches.

`engine.kv_cache_memory_bytes` is SGLang's KV budget (the memory side of its pool): on CPU
it follows free host RAM, so the tests take it from the engine's own start-up log
(sglang_live.StartupMemory: free memory after loading − free memory before × (1 −
mem_fraction_static), the figures SGLang logs at 2 decimals). `configured_max_total_tokens`
is the launch's `--max-total-tokens` (the cap side).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sglang_live import (
    CONTEXT_LENGTH,
    EAGLE_TOPK,
    MAX_TOTAL_TOKENS,
    NUM_DRAFT_TOKENS,
    NUM_STEPS,
    SERVED_MODEL_NAME,
    SGLANG_VERSION,
)

STORAGE_BUDGET_BYTES = 1_000_000_000
STARTUP_BUDGET_SECONDS = 600.0
TRAFFIC_SOURCE = "tests/e2e: bounded /generate requests, temperature 0, ignore_eos (harness.PROMPTS)"
DRAFTERS = {"standalone": ("draft", "draft_model"), "eagle3": ("eagle3-sglang", "eagle3")}
# A pass needs a known L* and a stated target source (issue 21 item 6): declared step costs, L* = 12 / 10 = 1.2,
# below the ngram arm's target 1.5 — the bar the gate's arithmetic is tested against, not a measurement.
COSTS = [{"verify_cycle_ms": 12.0, "target_step_ms": 10.0,
          "source": "tests/e2e: declared for the gate's arithmetic (L* 1.2), not measured"}]


def plan_dict(arm: str, model_dir: Path, *, kv_budget_bytes: int | None, max_total_tokens: int | None = MAX_TOTAL_TOKENS,
              slo_target: float = 1.0, window_seconds: float = 5.0, min_windows: int = 1,
              required_fraction: float = 0.5, exporter_url: str | None = None,
              reported: dict[str, Any] | None = None) -> dict[str, Any]:
    """A plan for one SGLang arm (`arm` as in sglang_live.ARMS)."""
    target = {"name": "tiny-target", "config": str(model_dir / "target" / "config.json"),
              "weights": {"path": str(model_dir / "target" / "model.safetensors")}}
    engine: dict[str, Any] = {"kind": "sglang", "version": SGLANG_VERSION, "kv_dtype": "float32",
                              "context_cap_tokens": CONTEXT_LENGTH, "served_model_name": SERVED_MODEL_NAME}
    if kv_budget_bytes is not None:
        engine["kv_cache_memory_bytes"] = kv_budget_bytes
    if max_total_tokens is not None:
        engine["configured_max_total_tokens"] = max_total_tokens
    plan: dict[str, Any] = {"name": f"e2e-sglang-{arm}", "description": f"tiny models on SGLang (CPU), arm {arm}",
                            "target": target, "engine": engine}
    if arm in DRAFTERS:
        d, method = DRAFTERS[arm]
        plan["drafter"] = {"name": f"tiny-{d}", "config": str(model_dir / d / "config.json"),
                           "weights": {"path": str(model_dir / d / "model.safetensors")}, "kv_scope": "full"}
        engine["speculative"] = {"method": method, "num_steps": NUM_STEPS, "eagle_topk": EAGLE_TOPK,
                                 "num_draft_tokens": NUM_DRAFT_TOKENS}
        plan["staging"] = {"mode": "serial", "order": ["target", "drafter"]}
    elif arm == "ngram":
        engine["speculative"] = {"method": "ngram", "num_draft_tokens": NUM_DRAFT_TOKENS}
    elif arm != "nospec":
        raise ValueError(f"unknown SGLang arm {arm}")
    plan["budgets"] = {"storage_bytes": STORAGE_BUDGET_BYTES, "startup_seconds": STARTUP_BUDGET_SECONDS}
    plan["workload"] = [{"name": "e2e-traffic", "concurrency": 4, "prompt_tokens": 32, "output_tokens": 32,
                         "source": TRAFFIC_SOURCE}]
    if arm != "nospec":
        plan["costs"] = COSTS
    plan["slo"] = {"target_acceptance_length": slo_target,
                   "target_source": "assumed: tests/e2e, the bar each arm is tested against", "window_seconds": window_seconds,
                   "required_fraction": required_fraction, "min_drafts": 1, "min_windows": min_windows}
    evidence: dict[str, Any] = {}
    if exporter_url:
        evidence["exporter_url"] = exporter_url
    if reported:
        evidence["reported"] = reported
    if evidence:
        plan["evidence"] = evidence
    return plan
