"""Every speculative arm on real SGLang 0.5.23 (CPU): one module, parametrized by arm, one server per arm.

Each arm is served once (the module-scoped `live` fixture, parametrized: pytest runs an arm's tests
together and stops its server, by PID, before the next arm starts). Expected numbers are SGLang's
own counters over the traffic (sglang_checks); what differs between arms is the table `CASES`.

- `ngram`: NGRAM (prompt lookup, 4 tokens per verify): no drafter artifact. The repetitive prompts
  give it something to find, so 1 < L < 4, and the gate passes it against an L target of 1.5.
- `standalone`: STANDALONE, a separate tiny draft model with random weights: it rarely guesses the
  target. Three steps, top-1 chain, 4 draft tokens per verify.
- `eagle3`: EAGLE3, the tiny random EAGLE-3 head of tools/build_tiny_models.py, tapping target layer
  0. Three steps, top-1 chain, 4 draft tokens per verify.
A random drafter's L is about 1: the gate must fail its acceptance SLO (target 2.0) on the live
evidence, while the pool line passes — a rollout that fits but does not pay.

Every arm's greedy output must equal the no-speculation output (conftest `sglang_baseline`: the
nospec arm's, or measured on a server of its own before the first arm here starts).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

import pytest
import sglang_checks as sc
from harness import SPECGATE, sample_value
from sglang_live import SPECULATIVE_ARMS, WINDOW_LABEL, acceptance_between, arm_fixture

live = arm_fixture(SPECULATIVE_ARMS, requires=("sglang_baseline",))


@dataclass(frozen=True)
class Case:
    """What one arm must show."""

    algorithm: str  # /server_info speculative_algorithm
    l_above: float | None  # the traffic's L lies strictly between these (None: no bound)
    l_below: float
    slo_target: float  # the plan's acceptance target for check pre/post
    acceptance: str  # the post-phase acceptance line's status
    decision: str | None  # the post-phase decision, where it is asserted


CASES = {
    "ngram": Case("NGRAM", 1.0, 4.0, 1.5, "pass", None),  # neither useless nor perfect: a real in-between value
    "standalone": Case("STANDALONE", None, 2.0, 2.0, "fail", "fail"),  # random weights: far below the SLO
    "eagle3": Case("EAGLE3", None, 2.0, 2.0, "fail", "fail"),
}
assert set(CASES) == set(SPECULATIVE_ARMS)


def test_pool_is_the_allocated_cap(live):
    sc.assert_pool_is_the_cap(live)


def test_exporter_totals_equal_engine_counters(live):
    sc.assert_counters_equal_engine(live)


def test_window_acceptance_equals_engine_counters(live):
    case = CASES[live.arm]
    want = sc.assert_window_matches_engine(live)
    if case.l_above is not None:
        assert case.l_above < want["L"], want
    assert want["L"] < case.l_below, want


def test_per_request_meta_info_adds_up_to_the_counters(live):
    sc.assert_per_request_meta_adds_up_to_counters(live)


def test_a_drafter_accepting_nothing_reads_one(live):
    """Issue 23 item 6: the random-weight drafters (standalone, EAGLE3) accept nothing, so decode-only L is 1.000
    ± 0.005 in the exporter's window and per request through the gate's parser (SGLang's own definition, the
    prefill token counted, read 1.021-1.032 here). ngram accepts: its L must stay above 1."""
    from exporter.engines.sglang.stream import sglang_request_acceptance

    window = sample_value(live.reading, "specgate_spec_acceptance_length", window=WINDOW_LABEL)
    per_request = [sglang_request_acceptance(r["meta_info"]) for r in live.traffic.responses]
    assert per_request and all(p is not None for p in per_request), per_request
    if live.arm == "ngram":
        assert window is not None and window > 1.0
        return
    assert window == pytest.approx(1.0, abs=0.005), window
    for p in per_request:
        assert p is not None and p.acceptance_length == pytest.approx(1.0, abs=0.005), p


def test_greedy_output_equals_no_speculation(live, sglang_baseline):
    sc.assert_greedy_output_equals_baseline(live, sglang_baseline)


def test_server_info_names_the_algorithm(live):
    sc.assert_server_info_speculation(live, CASES[live.arm].algorithm)


def test_budget_predicts_the_allocated_pool(live, sglang_models, tmp_path, e2e_record):
    sc.assert_budget_predicts_pool(live, sglang_models, tmp_path, e2e_record, live.arm)


def test_check_pre_and_post(live, sglang_models, tmp_path, e2e_record):
    case = CASES[live.arm]
    pre = sc.run_check(live, sglang_models, tmp_path, e2e_record, live.arm, "pre", slo_target=case.slo_target)
    post = sc.run_check(live, sglang_models, tmp_path, e2e_record, live.arm, "post", slo_target=case.slo_target)
    assert pre["checks"]["kv_pool"]["status"] == "pass", pre["checks"]["kv_pool"]
    acc = post["checks"]["acceptance"]
    assert acc["status"] == case.acceptance, acc
    if case.decision is not None:
        assert post["decision"] == case.decision


@pytest.mark.parametrize("live", ["ngram"], indirect=True)
def test_probe_runs_against_sglang(live, tmp_path, e2e_record):
    """`specgate probe` drives SGLang's streaming /v1/completions; a cell's L is SGLang's counters over it."""
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
