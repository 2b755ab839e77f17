"""MTP on real vLLM (CPU): the MTP layer lives inside the target (vLLM loads it from nowhere else).

Arm `mtp`: the target is <models>/mtp-target (tiny-target's weights under an Ernie-4.5 config with
`num_nextn_predict_layers: 1` plus `model.mtp_*.0.*` weights; tools/build_tiny_models.py), served
with `{"method":"mtp","num_speculative_tokens":1}` (Ernie's MTP predicts one token per step) and
`--per-request-spec-decode-metrics summary`. The random MTP layer accepted 0 of 1,037 in the
reference run. One more layer of the target's KV geometry: 8 MiB / 1,536 B / 128 = 42 blocks.
"""

from __future__ import annotations

import harness
import vllm_checks as vc
from vllm_live import arm_fixture

live = arm_fixture("mtp", engine_args=harness.PER_REQUEST_METRICS_ARGS)


def test_kv_pool_is_the_allocated_42_blocks(live):
    vc.assert_pool(live)


def test_exporter_totals_equal_engine_counters_at_depth_1(live):
    vc.assert_counters_equal_engine(live)
    assert live.traffic.after.draft_tokens == live.traffic.after.drafts  # k = 1: one draft token per draft


def test_window_acceptance_equals_engine_counters(live):
    vc.assert_window_matches_engine(live)


def test_batch_windows_account_for_the_traffic(live):
    vc.assert_batch_windows_account_for_traffic(live)


def test_per_request_acceptance_adds_up_to_the_engine_counters(live, e2e_record):
    reqs = vc.assert_per_request_matches_engine(live, e2e_record)
    assert all(len(r.correct_drafts_histogram) == 2 for r in reqs)


def test_budget_predicts_the_allocated_pool(live, tiny_models, tmp_path, e2e_record):
    vc.assert_budget_predicts_pool(live, tiny_models, tmp_path, e2e_record)


def test_check_pre_and_post(live, tiny_models, tmp_path, e2e_record):
    pre = vc.run_check_pre(live, tiny_models, tmp_path, e2e_record)
    codesign = pre["checks"]["codesign"]
    assert codesign["status"] == "pass" and codesign["values"]["family"] == "mtp", codesign
    assert pre["checks"]["artifacts"]["status"] == "pass"  # one download: the head is inside the target
    post = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    assert post["decision"] == "fail"  # L ~ 1.0 against a target of 2 (a random MTP layer)
    assert post["checks"]["acceptance"]["status"] == "fail", post["checks"]["acceptance"]
