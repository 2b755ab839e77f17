"""ngram prompt lookup: no drafter artifact; acceptance is whatever the engine's counters give.

Real vLLM on CPU, arm `ngram` (NOTES.md: 522 / 1,473 / 1,170, 79.4% on serve.sh's traffic).
"""

from __future__ import annotations

import vllm_checks as vc
from vllm_live import arm_fixture

live = arm_fixture("ngram")


def test_kv_pool_is_the_allocated_64_blocks(live):
    vc.assert_pool(live)


def test_exporter_totals_equal_engine_counters(live):
    vc.assert_counters_equal_engine(live)


def test_window_acceptance_equals_engine_counters(live):
    want = vc.assert_window_matches_engine(live)
    assert 0.0 < want["rate"] < 1.0  # neither the perfect nor the useless draft: a real in-between value


def test_batch_windows_account_for_the_traffic(live):
    vc.assert_batch_windows_account_for_traffic(live)


def test_budget_predicts_the_allocated_pool(live, tiny_models, tmp_path, e2e_record):
    vc.assert_budget_predicts_pool(live, tiny_models, tmp_path, e2e_record)


def test_check_post_passes_acceptance_and_artifacts_is_one_download(live, tiny_models, tmp_path, e2e_record):
    doc = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    # ngram adds no artifact, but the plan's storage budget still holds the target (docs/design.md, Fail closed)
    art = doc["checks"]["artifacts"]
    assert art["status"] == "pass", art
    assert art["values"]["downloads"] == 1 and art["values"]["drafter_weights_bytes"] is None, art["values"]
    assert doc["checks"]["staging"]["status"] == "n/a"
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "pass", acc
