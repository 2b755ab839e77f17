"""Real SGLang 0.5.23 on CPU, NGRAM (prompt lookup, 4 tokens per verify): no drafter artifact.

Expected numbers are SGLang's own counters over the traffic (sglang_checks); the repetitive
prompts give NGRAM something to find, so 1 < L < 4.
"""

from __future__ import annotations

import sglang_checks as sc
from sglang_live import arm_fixture

live = arm_fixture("ngram")


def test_pool_is_the_allocated_cap(live):
    sc.assert_pool_is_the_cap(live)


def test_exporter_totals_equal_engine_counters(live):
    sc.assert_counters_equal_engine(live)


def test_window_acceptance_equals_engine_counters(live, e2e_record):
    want = sc.assert_window_matches_engine(live)
    assert 1.0 < want["L"] < 4.0, want  # neither useless nor perfect: a real in-between value


def test_per_request_meta_info_adds_up_to_the_counters(live):
    sc.assert_per_request_meta_adds_up_to_counters(live)


def test_greedy_output_equals_no_speculation(live, e2e_record):
    sc.assert_greedy_output_equals_baseline(live, e2e_record)


def test_server_info_names_the_algorithm(live):
    sc.assert_server_info_speculation(live, "NGRAM")


def test_budget_predicts_the_allocated_pool(live, sglang_models, tmp_path, e2e_record):
    sc.assert_budget_predicts_pool(live, sglang_models, tmp_path, e2e_record, "ngram")


def test_check_pre_and_post(live, sglang_models, tmp_path, e2e_record):
    pre = sc.run_check(live, sglang_models, tmp_path, e2e_record, "ngram", "pre", slo_target=1.5)
    post = sc.run_check(live, sglang_models, tmp_path, e2e_record, "ngram", "post", slo_target=1.5)
    assert pre["checks"]["kv_pool"]["status"] == "pass", pre["checks"]["kv_pool"]
    acc = post["checks"]["acceptance"]
    assert acc["status"] == "pass", acc


def test_probe_runs_against_sglang(live, tmp_path, e2e_record):
    """`specgate probe` drives SGLang's streaming /v1/completions; a cell's L is SGLang's counters over it."""
    import json
    import subprocess

    from harness import SPECGATE
    from sglang_live import acceptance_between

    out = tmp_path / "probe-sglang-ngram.json"
    before = live.engine.counters()
    p = subprocess.run([str(SPECGATE), "probe", "--engine-url", live.engine.url, "--arm", "speculative",
                        "--speculative-config", '{"method":"ngram","num_draft_tokens":4}', "--engine", "sglang",
                        "--prompt-tokens", "16", "--output-tokens", "16", "--concurrency", "2",
                        "--repetitions", "1", "--warmup", "0", "--requests", "4", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    after = live.engine.counters()
    rec = json.loads(out.read_text())
    assert rec["engine"] == "sglang"
    (cell,) = rec["cells"]
    want = acceptance_between(before, after)
    assert want is not None
    assert cell["drafts"] == want["drafts"]
    assert abs(cell["acceptance_length"] - want["L"]) < 1e-12, (cell, want)
    e2e_record.setdefault("sglang-ngram", {}).update(probe_cell_L=cell["acceptance_length"])
