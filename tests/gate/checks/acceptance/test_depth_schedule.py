"""The acceptance line's depth sub-check under varying depth (issue 22).

A declared schedule is shown with the k the bounds use; one vLLM drops (data parallelism > 1) warns with the fixed
k; per-position rates from a run whose depth varied are called lower bounds, never exact. The ngram capture is the
real vLLM 0.32 CPU one of tests/fixtures/vllm (1473 draft tokens in 522 drafts at k = 3: 2.82 per draft).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.checks.acceptance import depth
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import context, tiny_plan

VLLM = Path(__file__).resolve().parents[3] / "fixtures" / "vllm"


def _plan(ranges: Any, dp: int = 1) -> Any:
    p = tiny_plan("ngram")
    p["engine"]["speculative"] = {"method": "ngram", "num_speculative_tokens": 3,
                                  "num_speculative_tokens_per_batch_size": ranges}
    p["engine"]["dp"] = dp
    return plan_from_dict(p)


def test_declared_schedule_is_shown_with_the_bounding_k() -> None:
    found = depth.sub(context(_plan([[1, 2, 3], [3, 8, 1]])))
    assert found.status is None
    assert found.sentence == ("depth schedule (vllm num_speculative_tokens_per_batch_size): batch 1-2 k = 3, "
                              "batch 3+ k = 1; bounds use its largest k = 3")
    assert found.values["depth_schedule"]["max_k"] == 3


def test_schedule_dropped_under_data_parallelism_warns() -> None:
    found = depth.sub(context(_plan([[1, 2, 3], [3, 8, 1]], dp=2)))
    assert found.status is Status.WARN
    assert "vLLM drops engine.speculative.num_speculative_tokens_per_batch_size under data parallelism" in found.sentence
    assert "fixed num_speculative_tokens = 3" in found.sentence
    assert found.values["depth_schedule"]["runs"] is None


def test_no_schedule_says_nothing_without_evidence() -> None:
    found = depth.sub(context(plan_from_dict(tiny_plan("draft"))))
    assert found.status is None and found.sentence == "" and not found.values


def test_varying_depth_positions_are_lower_bounds_in_check() -> None:
    from gate.verdict.evaluate import evaluate

    p = tiny_plan("ngram")
    p["evidence"] = {"captures": [{"files": [str(VLLM / "metrics-ngram-before.txt"),
                                             str(VLLM / "metrics-ngram-after.txt")]}]}
    p["costs"] = [{"verify_cycle_ms": 12.0, "target_step_ms": 10.0, "source": "test"}]
    line = evaluate(plan_from_dict(p)).checks["acceptance"]
    adv = line.values["depth"]
    # the plan's method says it before the counters do (they say it too: 2.82 draft tokens per draft)
    assert adv["lower_bound"] == "method ngram proposes a variable number of draft tokens (up to k) per draft"
    assert "per-position rates are lower bounds, not exact" in line.reason
    assert "exact" not in line.reason.replace("not exact", "")
