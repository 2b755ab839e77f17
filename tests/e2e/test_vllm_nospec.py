"""No speculation: the pool is the target's alone and there is no acceptance series at all."""

from __future__ import annotations

import vllm_checks as vc
from vllm_live import arm_fixture

live = arm_fixture("nospec")


def test_kv_pool_is_the_allocated_64_blocks(live):
    vc.assert_pool(live)


def test_no_acceptance_series_at_all(live):
    vc.assert_no_acceptance_series(live)
    assert live.traffic.after.drafts is None  # the engine itself has no spec_decode families


def test_budget_predicts_the_allocated_pool(live, tiny_models, tmp_path, e2e_record):
    vc.assert_budget_predicts_pool(live, tiny_models, tmp_path, e2e_record)


def test_check_post_without_speculation_is_never_a_pass(live, tiny_models, tmp_path, e2e_record):
    doc = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    assert doc["checks"]["acceptance"]["status"] == "inconclusive"  # no windows: missing evidence
    assert doc["decision"] != "pass"
