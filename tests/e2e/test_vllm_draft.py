"""A separate random draft: the two unrelated models never agree — rate 0, L 1.00.

Real vLLM on CPU, arm `draft` (NOTES.md: 1,829 drafts / 5,487 / 0 on serve.sh's traffic).
"""

from __future__ import annotations

import vllm_checks as vc
from vllm_live import arm_fixture

live = arm_fixture("draft")


def test_kv_pool_is_the_allocated_51_blocks(live):
    vc.assert_pool(live)


def test_exporter_totals_equal_engine_counters(live):
    vc.assert_counters_equal_engine(live)
    assert live.traffic.after.accepted == 0


def test_window_acceptance_is_1_and_rate_0(live):
    vc.assert_window_matches_engine(live)
    length, rate, pos = vc.window_values(live)
    assert (length, rate, pos) == (1.0, 0.0, [0.0, 0.0, 0.0])  # present and zero: drafts happened, none accepted


def test_batch_windows_account_for_the_traffic(live):
    vc.assert_batch_windows_account_for_traffic(live)


def test_budget_predicts_the_allocated_pool(live, tiny_models, tmp_path, e2e_record):
    vc.assert_budget_predicts_pool(live, tiny_models, tmp_path, e2e_record)


def test_check_post_fails_acceptance_naming_l_and_target(live, tiny_models, tmp_path, e2e_record):
    doc = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "fail", acc
    assert doc["decision"] == "fail"
    assert "1.000" in acc["reason"] and "≥ 2" in acc["reason"], acc["reason"]
