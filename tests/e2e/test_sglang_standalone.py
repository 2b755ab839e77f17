"""Real SGLang 0.5.23 on CPU, STANDALONE (a separate tiny draft model, random weights: it rarely guesses the target).

Three steps, top-1 chain, 4 draft tokens per verify. A random drafter's L is about 1: the
gate must fail its acceptance SLO (target 2.0) on the live evidence, while the pool line
passes — a rollout that fits but does not pay.
"""

from __future__ import annotations

import sglang_checks as sc
from sglang_live import arm_fixture

live = arm_fixture("standalone")


def test_pool_is_the_allocated_cap(live):
    sc.assert_pool_is_the_cap(live)


def test_exporter_totals_equal_engine_counters(live):
    sc.assert_counters_equal_engine(live)


def test_window_acceptance_equals_engine_counters(live):
    want = sc.assert_window_matches_engine(live)
    assert want["L"] < 2.0, want  # random weights: far below the SLO


def test_per_request_meta_info_adds_up_to_the_counters(live):
    sc.assert_per_request_meta_adds_up_to_counters(live)


def test_greedy_output_equals_no_speculation(live, e2e_record):
    sc.assert_greedy_output_equals_baseline(live, e2e_record)


def test_server_info_names_the_algorithm(live):
    sc.assert_server_info_speculation(live, "STANDALONE")


def test_budget_predicts_the_allocated_pool(live, sglang_models, tmp_path, e2e_record):
    sc.assert_budget_predicts_pool(live, sglang_models, tmp_path, e2e_record, "standalone")


def test_check_pre_and_post(live, sglang_models, tmp_path, e2e_record):
    pre = sc.run_check(live, sglang_models, tmp_path, e2e_record, "standalone", "pre", slo_target=2.0)
    post = sc.run_check(live, sglang_models, tmp_path, e2e_record, "standalone", "post", slo_target=2.0)
    assert pre["checks"]["kv_pool"]["status"] == "pass", pre["checks"]["kv_pool"]
    acc = post["checks"]["acceptance"]
    assert acc["status"] == "fail", acc
    assert post["decision"] == "fail"
