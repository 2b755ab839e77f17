"""The target as its own draft (greedy): every draft token is accepted — L 4.00, rate 1.0.

Real vLLM on CPU, arm `draftself` (NOTES.md: 460 drafts / 1,380 / 1,380 on serve.sh's traffic).
"""

from __future__ import annotations

import vllm_checks as vc
from vllm_live import arm_fixture

live = arm_fixture("draftself")


def test_kv_pool_is_the_allocated_32_blocks(live):
    vc.assert_pool(live)


def test_exporter_totals_equal_engine_counters(live):
    vc.assert_counters_equal_engine(live)
    c = live.traffic.after
    assert c.accepted == c.draft_tokens == 3 * c.drafts  # every proposal accepted


def test_window_acceptance_is_4_and_rate_1(live):
    want = vc.assert_window_matches_engine(live)
    length, rate, pos = vc.window_values(live)
    assert (length, rate, pos) == (4.0, 1.0, [1.0, 1.0, 1.0])  # hand value: greedy self-draft never disagrees
    assert want["L"] == 4.0


def test_batch_windows_account_for_the_traffic(live):
    vc.assert_batch_windows_account_for_traffic(live)
    assert {w["acceptance_length"] for w in live.windows_doc["windows"] if w["acceptance_length"]} == {4.0}


def test_budget_predicts_the_allocated_pool(live, tiny_models, tmp_path, e2e_record):
    vc.assert_budget_predicts_pool(live, tiny_models, tmp_path, e2e_record)


def test_check_post_passes_acceptance(live, tiny_models, tmp_path, e2e_record):
    doc = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "pass", acc
    assert "4.000" in acc["reason"] and "2" in acc["reason"], acc["reason"]
