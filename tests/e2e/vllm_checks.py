"""Assertions shared by the per-arm e2e modules: the exporter and the gate against the engine's own counters.

Expected pool sizes are docs/development.md's ("What real means here"): 8 MiB / (bytes per token of all
layers × 128) → 64 blocks (target alone: 2 layers × 2 KV heads × 32 × 4 B × K,V = 1,024 B),
51 (+ the 256 B draft: 1,280 B) and 32 (the target as its own draft: 2,048 B).
"""

from __future__ import annotations

import math
from pathlib import Path

from harness import (
    LiveArm,
    record_row,
    run_check,
    sample_value,
    specgate_json,
    window_drafts_and_accepted,
    write_plan,
)
from vllm_live import (
    BLOCK_SIZE,
    KV_CACHE_MEMORY_BYTES,
    TRAFFIC_REQUESTS,
    WINDOW_LABEL,
    acceptance_between,
    arm_depth,
)
from vllm_plans import plan_dict

TARGET_BYTES_PER_TOKEN = 2 * 2 * 32 * 4 * 2
DRAFT_BYTES_PER_TOKEN = 1 * 1 * 32 * 4 * 2
HEAD_BYTES_PER_TOKEN = 1 * 2 * 32 * 4 * 2
EXPECTED_BLOCKS = {
    "nospec": KV_CACHE_MEMORY_BYTES // (TARGET_BYTES_PER_TOKEN * BLOCK_SIZE),  # 64
    "ngram": KV_CACHE_MEMORY_BYTES // (TARGET_BYTES_PER_TOKEN * BLOCK_SIZE),  # 64: no drafter layers
    "draft": KV_CACHE_MEMORY_BYTES // ((TARGET_BYTES_PER_TOKEN + DRAFT_BYTES_PER_TOKEN) * BLOCK_SIZE),  # 51
    "draftself": KV_CACHE_MEMORY_BYTES // (2 * TARGET_BYTES_PER_TOKEN * BLOCK_SIZE),  # 32
    # One drafter layer of the target's KV geometry (1 layer x 2 KV heads x 32 x 4 B x K,V = 512 B): the EAGLE and
    # EAGLE-3 heads' decoder layer, the MTP layer inside mtp-target (tools/build_tiny_models.py) -> 42.
    "eagle": KV_CACHE_MEMORY_BYTES // ((TARGET_BYTES_PER_TOKEN + HEAD_BYTES_PER_TOKEN) * BLOCK_SIZE),
    "eagle3": KV_CACHE_MEMORY_BYTES // ((TARGET_BYTES_PER_TOKEN + HEAD_BYTES_PER_TOKEN) * BLOCK_SIZE),
    "mtp": KV_CACHE_MEMORY_BYTES // ((TARGET_BYTES_PER_TOKEN + HEAD_BYTES_PER_TOKEN) * BLOCK_SIZE),
    "suffix": KV_CACHE_MEMORY_BYTES // (TARGET_BYTES_PER_TOKEN * BLOCK_SIZE),  # 64: no drafter layers
}
ACCEPTANCE_SERIES = ("specgate_spec_acceptance_length", "specgate_spec_acceptance_rate",
                     "specgate_spec_position_acceptance_rate", "specgate_spec_drafts_total",
                     "specgate_spec_window_acceptance_length_count")


def assert_pool(live: LiveArm) -> None:
    """specgate_kv_pool_tokens{pool="target"} is what the engine allocated, and that is the geometry's."""
    c = live.traffic.after
    assert c.num_gpu_blocks == EXPECTED_BLOCKS[live.arm], (live.arm, c.num_gpu_blocks)
    assert c.pool_tokens == c.num_gpu_blocks * BLOCK_SIZE
    assert sample_value(live.reading, "specgate_kv_pool_tokens", pool="target") == c.pool_tokens


def assert_counters_equal_engine(live: LiveArm) -> None:
    """The exporter's normalised totals are the engine's counters (no restart happened)."""
    c = live.traffic.after
    page = live.reading
    assert sample_value(page, "specgate_spec_drafts_total") == c.drafts
    assert sample_value(page, "specgate_spec_draft_tokens_total") == c.draft_tokens
    assert sample_value(page, "specgate_spec_accepted_tokens_total") == c.accepted
    got = [sample_value(page, "specgate_spec_accepted_tokens_per_position_total", position=str(i))
           for i in range(len(c.accepted_per_position))]
    assert got == list(c.accepted_per_position)
    assert len(c.accepted_per_position) == arm_depth(live.arm)


def window_values(live: LiveArm) -> tuple[float | None, float | None, list[float | None]]:
    page = live.reading
    length = sample_value(page, "specgate_spec_acceptance_length", window=WINDOW_LABEL)
    rate = sample_value(page, "specgate_spec_acceptance_rate", window=WINDOW_LABEL)
    pos = [sample_value(page, "specgate_spec_position_acceptance_rate", window=WINDOW_LABEL, position=str(i))
           for i in range(arm_depth(live.arm))]
    return length, rate, pos


def assert_window_matches_engine(live: LiveArm) -> dict:
    """The sliding-window gauges equal vLLM's definitions over the engine's own counter deltas."""
    want = acceptance_between(live.traffic.before, live.traffic.after)
    assert want is not None and want["drafts"] > 0, "the traffic produced no drafts"
    length, rate, pos = window_values(live)
    assert length is not None and math.isclose(length, want["L"], rel_tol=1e-9), (length, want)
    assert rate is not None and math.isclose(rate, want["rate"], rel_tol=1e-9, abs_tol=1e-12), (rate, want)
    assert all(p is not None for p in pos), pos
    for got, exp in zip(pos, want["positions"], strict=True):
        assert math.isclose(got, exp, rel_tol=1e-9, abs_tol=1e-12), (pos, want["positions"])
    # accepted = Σ per-position accepted, so L − 1 = Σ p_i (an identity the exporter must keep).
    assert math.isclose(length - 1.0, sum(pos), rel_tol=1e-9, abs_tol=1e-12)
    return want


def assert_batch_windows_account_for_traffic(live: LiveArm) -> None:
    """Completed batch windows add up to the engine's deltas; the histogram counts each once."""
    want = acceptance_between(live.traffic.before, live.traffic.after)
    drafts, accepted, n = window_drafts_and_accepted(live.windows_doc)
    assert n >= 1
    assert drafts == want["drafts"], (drafts, want)
    assert math.isclose(accepted, want["accepted"], rel_tol=1e-9, abs_tol=1e-6), (accepted, want)
    assert not any(w["reset"] for w in live.windows_doc["windows"])
    final = live.final
    lengths = [w["acceptance_length"] for w in live.windows_doc["windows"] if w["acceptance_length"] is not None]
    count = sample_value(final, "specgate_spec_window_acceptance_length_count")
    total = sample_value(final, "specgate_spec_window_acceptance_length_sum")
    # `final` was read after windows_doc: later windows (idle ones carry no L) cannot add observations.
    assert count == len(lengths) == sample_value(final, "specgate_spec_windows_total")
    assert math.isclose(total, sum(lengths), rel_tol=1e-9)
    below = sum(1 for x in lengths if x < 2.0)
    assert sample_value(final, "specgate_spec_windows_below_slo_total") == below


def assert_no_acceptance_series(live: LiveArm) -> None:
    """No speculation: no acceptance series at all (absent, never 0), though windows were computed."""
    for page in (live.reading, live.final):
        for name in ACCEPTANCE_SERIES:
            assert name not in page, f"{name} present without speculative decoding"
    assert live.windows_doc.get("windows") == []
    decode = sample_value(live.reading, "specgate_decode_tokens_per_second", window=WINDOW_LABEL)
    assert decode is not None and decode > 0, "the window holding the traffic shows no decoding"


def run_budget(live: LiveArm, model_dir: Path, tmp: Path) -> dict:
    """`specgate budget` on the arm's plan; returns its JSON document."""
    plan = write_plan(tmp / f"plan-{live.arm}.yaml", plan_dict(live.arm, model_dir))
    res = specgate_json("budget", "--plan", str(plan))
    assert res.code == 0, res.stderr
    assert res.doc is not None
    return res.doc


def assert_budget_predicts_pool(live: LiveArm, model_dir: Path, tmp: Path, record: dict) -> None:
    doc = run_budget(live, model_dir, tmp)
    pool = doc["pool"]
    c = live.traffic.after
    key = "without_drafter" if live.arm == "nospec" else "with_drafter"
    record_row(record, live).update(predicted_blocks=pool["predicted_blocks"][key],
                                    predicted_tokens=pool["predicted_tokens"][key])
    assert pool["predicted_blocks"][key] == c.num_gpu_blocks == EXPECTED_BLOCKS[live.arm]
    assert pool["predicted_tokens"][key] == c.pool_tokens
    assert pool["predicted_blocks"]["without_drafter"] == EXPECTED_BLOCKS["nospec"]


def run_check_post(live: LiveArm, model_dir: Path, tmp: Path, record: dict, **plan_kw: object) -> dict:
    """`specgate check --phase post --metrics <exporter>`; the allocated pool comes from the live exporter."""
    plan = write_plan(tmp / f"plan-{live.arm}-post.yaml", plan_dict(live.arm, model_dir, **plan_kw))  # type: ignore[arg-type]
    row = record_row(record, live)
    doc = run_check(plan, "post", live.exporter.url + "/metrics", row)
    row.update(gate_post_acceptance=doc["checks"]["acceptance"]["status"])
    kv = doc["checks"]["kv_pool"]["values"]
    assert kv["allocated_tokens"] == live.traffic.after.pool_tokens, kv
    assert "exporter" in (kv["allocated_source"] or ""), kv
    return doc


def assert_per_request_matches_engine(live: LiveArm, record: dict) -> list:
    """Per-request acceptance (`--per-request-spec-decode-metrics`) of every traffic response, parsed by
    exporter.engines.vllm.stream, adds up to the engine's own counter deltas over the same traffic; the summary goes
    to the e2e record. Returns the parsed requests."""
    import statistics

    from exporter.engines.vllm.stream import vllm_request_acceptance
    from gate.probe.per_request import histogram

    want = acceptance_between(live.traffic.before, live.traffic.after)
    assert want is not None
    bodies = live.traffic.responses
    assert len(bodies) == TRAFFIC_REQUESTS
    parsed = [vllm_request_acceptance(b) for b in bodies]
    assert all(p is not None for p in parsed), "a traffic response carries no per-request speculation metrics"
    reqs = [p for p in parsed if p is not None]
    k = arm_depth(live.arm)
    assert all(len(r.correct_drafts_histogram) == k + 1 for r in reqs)
    # The engine counts a draft per verify step that had proposals; so does each request's histogram.
    assert sum(r.verify_calls for r in reqs) == want["drafts"], ([r.verify_calls for r in reqs], want)
    assert sum(r.correct_drafts or 0 for r in reqs) == want["accepted"], want
    assert sum(r.proposed_drafts or 0 for r in reqs) == want["draft_tokens"], want
    lengths = [r.acceptance_length for r in reqs]
    # Pooled over requests, per-request L is the counters' L (steps-weighted mean).
    pooled = 1 + sum(r.correct_drafts or 0 for r in reqs) / sum(r.verify_calls for r in reqs)
    assert math.isclose(pooled, want["L"], rel_tol=1e-9)
    edges = [1.0 + i * 0.5 for i in range(2 * k + 1)]  # 1.0, 1.5, ..., 1 + k
    record_row(record, live).update(
        per_request_n=len(reqs), per_request_L_min=min(lengths), per_request_L_median=statistics.median(lengths),
        per_request_L_max=max(lengths), per_request_L_histogram=histogram(lengths, edges))
    return reqs


def run_check_pre(live: LiveArm, model_dir: Path, tmp: Path, record: dict, **plan_kw: object) -> dict:
    """`specgate check --phase pre` on the arm's plan, with no live evidence (what a pre-rollout gate knows)."""
    plan = write_plan(tmp / f"plan-{live.arm}-pre.yaml", plan_dict(live.arm, model_dir, **plan_kw))  # type: ignore[arg-type]
    return run_check(plan, "pre", None, record_row(record, live))
