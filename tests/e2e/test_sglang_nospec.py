"""Real SGLang 0.5.23 on CPU, no speculation: the pool, the exporter's view and the gate's pre/post decisions.

Its greedy outputs are the baseline every speculative SGLang arm must reproduce: the arm fixture shares
them with the session (conftest `sglang_baseline`), and conftest runs this module before the other SGLang
ones so that no server of its own is needed for them.
"""

from __future__ import annotations

import sglang_checks as sc
from harness import sample_value
from sglang_live import WINDOW_LABEL, arm_fixture

live = arm_fixture("nospec")


def test_pool_is_the_allocated_cap(live):
    sc.assert_pool_is_the_cap(live)


def test_no_acceptance_series_without_speculation(live):
    """SGLang keeps spec_accept_length & co. at 0 without speculation; the exporter must not read them as L."""
    assert "sglang:spec_accept_length" in live.engine_page  # present (value 0) without speculation
    assert "sglang:spec_verify_calls_total" not in live.engine_page
    for page in (live.reading, live.final):
        for name in ("specgate_spec_acceptance_length", "specgate_spec_acceptance_rate", "specgate_spec_drafts_total"):
            assert name not in page, f"{name} present without speculative decoding"
    assert live.windows_doc.get("windows") == []
    decode = sample_value(live.reading, "specgate_decode_tokens_per_second", window=WINDOW_LABEL)
    assert decode is not None and decode > 0


def test_server_info_names_no_speculation(live):
    sc.assert_server_info_speculation(live, None)


def test_generation_counter_equals_per_request_tokens(live):
    t = live.traffic
    assert sc.meta_summary(t.responses)["completion_tokens"] == t.after.generation_tokens - t.before.generation_tokens


def test_budget_predicts_the_allocated_pool(live, sglang_models, tmp_path, e2e_record):
    sc.assert_budget_predicts_pool(live, sglang_models, tmp_path, e2e_record, "nospec")


def test_check_pre_and_post(live, sglang_models, tmp_path, e2e_record):
    pre = sc.run_check(live, sglang_models, tmp_path, e2e_record, "nospec", "pre")
    post = sc.run_check(live, sglang_models, tmp_path, e2e_record, "nospec", "post")
    for doc in (pre, post):
        assert doc["checks"]["kv_pool"]["status"] == "pass", doc["checks"]["kv_pool"]
