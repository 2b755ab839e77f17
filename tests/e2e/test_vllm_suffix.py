"""Suffix decoding on real vLLM (CPU): arctic-inference 0.3.0 built here from its PyPI sdist.

Arm `suffix`: `{"method":"suffix","num_speculative_tokens":3}` with
`--per-request-spec-decode-metrics summary`; vLLM finds arctic-inference's suffix_decoding module
on PYTHONPATH (tools/arctic_inference.sh builds it once into the cache beside vLLM's venv, which it
leaves untouched). No drafter layers: 64 blocks, as without speculation. A variable-length
proposer: a step proposes up to k tokens where the suffix tree matches, and steps without a
proposal are no drafts, so per-request steps and the engine's draft counter must still agree.
"""

from __future__ import annotations

import subprocess

import harness
import pytest
import vllm_checks as vc
from vllm_live import arm_fixture


@pytest.fixture(scope="module")
def arctic_env() -> dict[str, str]:
    try:
        site = harness.arctic_inference_site()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"arctic-inference did not build: {e}")
    return {"PYTHONPATH": site}


live = arm_fixture("suffix", engine_args=harness.PER_REQUEST_METRICS_ARGS, env_fixture="arctic_env")


def test_kv_pool_is_the_allocated_64_blocks(live):
    vc.assert_pool(live)


def test_exporter_totals_equal_engine_counters(live):
    vc.assert_counters_equal_engine(live)


def test_window_acceptance_equals_engine_counters(live):
    want = vc.assert_window_matches_engine(live)
    assert 0.0 < want["rate"] < 1.0  # a real in-between value on repetitive prompts
    assert want["draft_tokens"] < 3 * want["drafts"]  # variable length: fewer than k on some steps


def test_batch_windows_account_for_the_traffic(live):
    vc.assert_batch_windows_account_for_traffic(live)


def test_per_request_acceptance_adds_up_to_the_engine_counters(live, e2e_record):
    vc.assert_per_request_matches_engine(live, e2e_record)


def test_budget_predicts_the_allocated_pool(live, tiny_models, tmp_path, e2e_record):
    vc.assert_budget_predicts_pool(live, tiny_models, tmp_path, e2e_record)


def test_check_pre_and_post(live, tiny_models, tmp_path, e2e_record):
    pre = vc.run_check_pre(live, tiny_models, tmp_path, e2e_record)
    assert pre["checks"]["artifacts"]["status"] == "n/a" or "one download" in pre["checks"]["artifacts"]["reason"]
    assert pre["checks"]["codesign"]["status"] == "n/a"
    post = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    assert post["checks"]["staging"]["status"] == "n/a"
    acc = post["checks"]["acceptance"]
    length = vc.window_values(live)[0]
    assert length is not None
    e2e_record.setdefault("suffix", {}).update(gate_post_acceptance_reason=acc["reason"][:160])
    if length < 2.0:
        assert acc["status"] == "fail", acc
