"""EAGLE (EAGLE-1) on real vLLM (CPU): a random tiny head that shares the target's embeddings' vocabulary.

Arm `eagle`: `{"method":"eagle","model":<models>/eagle,"num_speculative_tokens":3}` with
`--per-request-spec-decode-metrics summary`. The head is random (tools/build_tiny_models.py, seed 3),
so it and the target practically never agree: the reference run accepted 0 of 3,111 draft tokens
(tests/fixtures/vllm/methods/README.md). The head adds one decoder layer of the target's KV
geometry (512 B/token): 8 MiB / 1,536 B / 128 = 42 blocks.
"""

from __future__ import annotations

import harness
import vllm_checks as vc
from vllm_live import arm_fixture

live = arm_fixture("eagle", engine_args=harness.PER_REQUEST_METRICS_ARGS)


def test_kv_pool_is_the_allocated_42_blocks(live):
    vc.assert_pool(live)


def test_exporter_totals_equal_engine_counters(live):
    vc.assert_counters_equal_engine(live)


def test_window_acceptance_equals_engine_counters(live):
    want = vc.assert_window_matches_engine(live)
    assert want["rate"] < 0.05  # a random head: (almost) nothing accepted


def test_batch_windows_account_for_the_traffic(live):
    vc.assert_batch_windows_account_for_traffic(live)


def test_per_request_acceptance_adds_up_to_the_engine_counters(live, e2e_record):
    reqs = vc.assert_per_request_matches_engine(live, e2e_record)
    assert all(r.proposed_drafts == 3 * r.verify_calls for r in reqs)  # EAGLE always drafts k = 3


def test_budget_predicts_the_allocated_pool(live, tiny_models, tmp_path, e2e_record):
    vc.assert_budget_predicts_pool(live, tiny_models, tmp_path, e2e_record)


def test_check_pre_and_post(live, tiny_models, tmp_path, e2e_record):
    pre = vc.run_check_pre(live, tiny_models, tmp_path, e2e_record)
    assert pre["checks"]["codesign"]["status"] != "fail", pre["checks"]["codesign"]
    assert pre["checks"]["kv_pool"]["status"] == "pass", pre["checks"]["kv_pool"]
    post = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    acc = post["checks"]["acceptance"]
    assert acc["status"] == "fail", acc  # L ~ 1.0 against the plan's target 2
    assert post["decision"] == "fail"
