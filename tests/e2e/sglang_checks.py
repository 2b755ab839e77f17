"""Assertions shared by the SGLang arm modules: exporter and gate against SGLang's own counters.

Expected numbers and where they come from:
- pool: `--max-total-tokens 8192` (the launch) caps every arm; SGLang reports the allocation
  as `sglang:max_total_num_tokens` and `/server_info` `max_total_num_tokens`, and the gate
  predicts min(8,192, KV budget // cell), the budget from the engine's start-up log.
- acceptance: SGLang's counters, decode-only L = (Δgeneration_tokens_total − Δnum_requests_total) /
  Δspec_verify_calls_total (sglang_live.acceptance_between); per request, `/generate` `meta_info`.
- greedy outputs: every speculative arm must produce exactly the no-speculation arm's text
  (temperature 0; speculation does not change greedy output): conftest's `sglang_baseline`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from harness import LiveArm, record_row, sample_value, specgate_json, write_plan
from harness import run_check as run_gate
from sglang_live import (
    CONTEXT_LENGTH,
    MAX_TOTAL_TOKENS,
    NUM_DRAFT_TOKENS,
    WINDOW_LABEL,
    acceptance_between,
    greedy_texts,
    meta_summary,
)
from sglang_plans import plan_dict

# SGLang's KV cell per token of the tiny target: 2 layers x 2 KV heads x (32 + 32) x 4 B (fp32).
TARGET_CELL_BYTES = 2 * 2 * (32 + 32) * 4


def assert_pool_is_the_cap(live: LiveArm) -> None:
    """8,192 allocated (cap side) in the engine's gauge, its /server_info and the exporter's pool gauge."""
    c = live.traffic.after
    assert c.max_total_num_tokens == MAX_TOTAL_TOKENS, c
    assert live.server_info["max_total_num_tokens"] == MAX_TOTAL_TOKENS
    assert live.server_info["max_total_tokens"] == MAX_TOTAL_TOKENS  # the launch flag, echoed
    assert sample_value(live.reading, "specgate_kv_pool_tokens", pool="target") == MAX_TOTAL_TOKENS
    assert sample_value(live.reading, "specgate_context_cap_tokens") == CONTEXT_LENGTH == c.context_len
    mem = live.engine.startup_memory()
    assert mem.kv_tokens and all(n == MAX_TOTAL_TOKENS for n in mem.kv_tokens), mem  # the drafter's pool too
    assert_kv_bytes_are_the_target_pool(live)


def assert_kv_bytes_are_the_target_pool(live: LiveArm) -> None:
    """`sglang:kv_cache_memory_usage_gb` is the target pool alone: (tokens + 1 padding slot) × 1,024 B."""
    c = live.traffic.after if live.traffic else live.engine.counters()
    assert c.kv_cache_memory_gb is not None
    assert c.kv_cache_memory_gb * (1 << 30) == (c.max_total_num_tokens + 1) * TARGET_CELL_BYTES, c


def assert_counters_equal_engine(live: LiveArm) -> None:
    """Over the traffic the exporter's totals grow exactly as SGLang's counters do (its definitions)."""
    want = acceptance_between(live.traffic.before, live.traffic.after)
    assert want is not None

    def grew(name: str) -> float:
        return (sample_value(live.reading, name) or 0.0) - (sample_value(live.exporter_before, name) or 0.0)

    assert grew("specgate_spec_drafts_total") == want["drafts"]
    assert grew("specgate_spec_accepted_tokens_total") == want["accepted"]
    assert grew("specgate_spec_draft_tokens_total") == want["drafts"] * (NUM_DRAFT_TOKENS - 1)


def assert_window_matches_engine(live: LiveArm) -> dict[str, float]:
    want = acceptance_between(live.traffic.before, live.traffic.after)
    assert want is not None and want["drafts"] > 0, "the traffic produced no verify calls"
    length = sample_value(live.reading, "specgate_spec_acceptance_length", window=WINDOW_LABEL)
    rate = sample_value(live.reading, "specgate_spec_acceptance_rate", window=WINDOW_LABEL)
    assert length is not None and math.isclose(length, want["L"], rel_tol=1e-9), (length, want)
    assert rate is not None and math.isclose(rate, want["rate"], rel_tol=1e-9, abs_tol=1e-12), (rate, want)
    assert 1.0 <= length <= NUM_DRAFT_TOKENS
    return want


def assert_per_request_meta_adds_up_to_counters(live: LiveArm) -> None:
    """Σ meta_info over the traffic's /generate answers = the engine counters' deltas; each L = tokens / verify."""
    t = live.traffic
    m = meta_summary(t.responses)
    assert m["completion_tokens"] == t.after.generation_tokens - t.before.generation_tokens
    assert m["verify_ct"] == t.after.verify_calls - t.before.verify_calls
    for r in t.responses:
        meta = r["meta_info"]
        assert math.isclose(meta["spec_accept_length"], meta["completion_tokens"] / meta["spec_verify_ct"],
                            rel_tol=1e-9), meta
        assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"], meta


def assert_greedy_output_equals_baseline(live: LiveArm, baseline: dict[str, str]) -> None:
    assert baseline, "no no-speculation outputs to compare with (conftest sglang_baseline)"
    got = greedy_texts(live)
    assert got == baseline, "speculation changed SGLang's greedy output"


def assert_server_info_speculation(live: LiveArm, algorithm: str | None) -> None:
    info = live.server_info
    assert info.get("speculative_algorithm") == algorithm
    if algorithm is not None:
        assert info["speculative_num_draft_tokens"] == NUM_DRAFT_TOKENS
        assert info["attention_backend"] == "intel_amx"  # kept by tools/sglang_launch.py
        # SGLang's own running average over the server's life (warm-up and readiness probes included),
        # so it is checked for range, not equality with the traffic's L.
        avg = info["internal_states"][0]["avg_spec_accept_length"]
        assert 1.0 <= avg <= NUM_DRAFT_TOKENS, avg


def kv_budget_bytes(live: LiveArm) -> tuple[int, int, int]:
    """(low, logged, high) KV budget from the engine's log and its /server_info mem_fraction_static."""
    return live.engine.startup_memory().available_bytes(float(live.server_info["mem_fraction_static"]))


def run_budget(live: LiveArm, model_dir: Path, tmp: Path, arm: str, **plan_kw: Any) -> dict[str, Any]:
    plan = write_plan(tmp / f"plan-sglang-{live.arm}.yaml", plan_dict(arm, model_dir, **plan_kw))
    res = specgate_json("budget", "--plan", str(plan))
    assert res.code == 0, res.stderr
    assert res.doc is not None
    return res.doc


def assert_budget_predicts_pool(live: LiveArm, model_dir: Path, tmp: Path, record: dict, arm: str) -> None:
    """The cap side exactly: min(--max-total-tokens, budget // cell) = the allocated 8,192."""
    _, logged, _ = kv_budget_bytes(live)
    doc = run_budget(live, model_dir, tmp, arm, kv_budget_bytes=logged)
    pool = doc["pool"]
    key = "without_drafter" if arm in ("nospec", "ngram") else "with_drafter"
    predicted = pool["predicted_tokens"][key]
    record_row(record, live).update(predicted_tokens=predicted, kv_budget_bytes=logged)
    assert predicted == live.traffic.after.max_total_num_tokens == MAX_TOTAL_TOKENS, pool


def run_check(live: LiveArm, model_dir: Path, tmp: Path, record: dict, arm: str, phase: str,
              **plan_kw: Any) -> dict[str, Any]:
    """`specgate check --phase PHASE --metrics <exporter>` on the arm's plan; records the decision."""
    _, logged, _ = kv_budget_bytes(live)
    plan = write_plan(tmp / f"plan-sglang-{live.arm}-{phase}.yaml",
                      plan_dict(arm, model_dir, kv_budget_bytes=logged, **plan_kw))
    doc = run_gate(plan, phase, live.exporter.url + "/metrics", record_row(record, live))
    kv = doc["checks"]["kv_pool"]["values"]
    assert kv["allocated_tokens"] == live.traffic.after.max_total_num_tokens, kv
    return doc
