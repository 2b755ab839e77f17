"""Every speculative arm on real vLLM (CPU): one module, parametrized by arm, one server per arm.

Each arm is served once (the module-scoped `live` fixture, parametrized: pytest runs an arm's tests
together and stops its server, by PID, before the next arm starts), measured by the harness
(harness.run_measured_traffic), and judged here against the engine's own counters and the gate.
The tests every arm shares come first; what one arm adds (a hand value, a bound, its gate decision)
is in the tables and the per-arm tests below.

- `draft`: a separate random draft: the two unrelated models never agree — rate 0, L 1.00
  (NOTES.md: 1,829 drafts / 5,487 / 0 on serve.sh's traffic). 8 MiB / 1,280 B / 128 = 51 blocks.
- `draftself`: the target as its own draft (greedy): every draft token is accepted — L 4.00, rate 1.0
  (NOTES.md: 460 drafts / 1,380 / 1,380). 2,048 B per token: 32 blocks.
- `ngram`: prompt lookup: no drafter artifact; acceptance is whatever the engine's counters give
  (NOTES.md: 522 / 1,473 / 1,170, 79.4%). 64 blocks, as without speculation.
- `eagle`: EAGLE (EAGLE-1), `{"method":"eagle","model":<models>/eagle,"num_speculative_tokens":3}`: a
  random tiny head that shares the target's embeddings' vocabulary (tools/build_tiny_models.py, seed 3),
  so it and the target practically never agree: the reference run accepted 0 of 3,111 draft tokens
  (tests/fixtures/vllm/methods/README.md). One decoder layer of the target's KV geometry (512 B/token):
  8 MiB / 1,536 B / 128 = 42 blocks.
- `eagle3`: `{"method":"eagle3","model":<models>/eagle3,...}`: the random head (seed 4) taps
  eagle_aux_hidden_state_layer_ids [0, 1] of the 2-layer target; the reference run accepted 3 of
  3,102 draft tokens. 42 blocks. Its co-design proofs are test_vllm_eagle3.py.
- `mtp`: the MTP layer lives inside the target (vLLM loads it from nowhere else): <models>/mtp-target
  (tiny-target's weights under an Ernie-4.5 config with `num_nextn_predict_layers: 1` plus
  `model.mtp_*.0.*` weights), `{"method":"mtp","num_speculative_tokens":1}` (Ernie's MTP predicts one
  token per step). The random MTP layer accepted 0 of 1,037 in the reference run. 42 blocks.
- `suffix`: suffix decoding, arctic-inference 0.3.0 built here from its PyPI sdist
  (tools/arctic_inference.sh, once, into the cache beside vLLM's venv, which it leaves untouched;
  vLLM finds its suffix_decoding module on PYTHONPATH: conftest `arctic_env`). No drafter layers: 64
  blocks. A variable-length proposer: a step proposes up to k tokens where the suffix tree matches,
  and steps without a proposal are no drafts, so per-request steps and the engine's draft counter must
  still agree.

eagle, eagle3, mtp and suffix run with `--per-request-spec-decode-metrics summary` (vllm_live.VLLM).
"""

from __future__ import annotations

import pytest
import vllm_checks as vc
from harness import sample_value
from vllm_live import METHOD_ARMS, WINDOW_LABEL, arm_fixture

ARMS = ("draft", "draftself", "ngram", "eagle", "eagle3", "mtp", "suffix")

live = arm_fixture(ARMS)


def only(*arms: str) -> pytest.MarkDecorator:
    """Narrow a test to some arms (the `live` fixture's parameter)."""
    return pytest.mark.parametrize("live", arms, indirect=True)


# --- what every arm shares ------------------------------------------------------------------------

def test_kv_pool_is_the_allocated_blocks(live):
    """51 (draft), 32 (draftself), 64 (ngram, suffix), 42 (eagle, eagle3, mtp): vllm_checks.EXPECTED_BLOCKS."""
    vc.assert_pool(live)


def test_exporter_totals_equal_engine_counters(live):
    vc.assert_counters_equal_engine(live)
    c = live.traffic.after
    if live.arm == "draft":
        assert c.accepted == 0
    if live.arm == "draftself":
        assert c.accepted == c.draft_tokens == 3 * c.drafts  # every proposal accepted
    if live.arm == "mtp":
        assert c.draft_tokens == c.drafts  # k = 1: one draft token per draft


# Hand values of the window gauges (L, rate, per-position rates): present and zero where drafts happened
# and none was accepted; greedy self-draft never disagrees.
EXACT_WINDOW = {"draft": (1.0, 0.0, [0.0, 0.0, 0.0]), "draftself": (4.0, 1.0, [1.0, 1.0, 1.0])}


def test_window_acceptance_equals_engine_counters(live):
    want = vc.assert_window_matches_engine(live)
    if live.arm in EXACT_WINDOW:
        assert vc.window_values(live) == EXACT_WINDOW[live.arm]
    if live.arm == "draftself":
        assert want["L"] == 4.0
    if live.arm in ("ngram", "suffix"):
        assert 0.0 < want["rate"] < 1.0  # neither the perfect nor the useless draft: a real in-between value
    if live.arm == "suffix":
        assert want["draft_tokens"] < 3 * want["drafts"]  # variable length: fewer than k on some steps
        # and the exporter says so (issue 22): mean depth below k, depth_varies 1, per-position rates lower bounds
        page = live.reading
        assert sample_value(page, "specgate_spec_depth_mean", window=WINDOW_LABEL) == \
            pytest.approx(want["draft_tokens"] / want["drafts"])
        assert sample_value(page, "specgate_spec_depth_varies", window=WINDOW_LABEL) == 1.0
        assert {lab["basis"] for lab, _ in page["specgate_spec_position_acceptance_rate"]
                if lab["window"] == WINDOW_LABEL} == {"lower_bound"}
    if live.arm == "eagle":
        assert want["rate"] < 0.05  # a random head: (almost) nothing accepted


def test_batch_windows_account_for_the_traffic(live):
    vc.assert_batch_windows_account_for_traffic(live)
    if live.arm == "draftself":
        assert {w["acceptance_length"] for w in live.windows_doc["windows"] if w["acceptance_length"]} == {4.0}


def test_budget_predicts_the_allocated_pool(live, tiny_models, tmp_path, e2e_record):
    vc.assert_budget_predicts_pool(live, tiny_models, tmp_path, e2e_record)


@only(*METHOD_ARMS)
def test_per_request_acceptance_adds_up_to_the_engine_counters(live, e2e_record):
    reqs = vc.assert_per_request_matches_engine(live, e2e_record)
    if live.arm in ("eagle", "eagle3"):
        assert all(r.proposed_drafts == 3 * r.verify_calls for r in reqs)  # EAGLE always drafts k = 3
    if live.arm == "mtp":
        assert all(len(r.correct_drafts_histogram) == 2 for r in reqs)


# --- the gate's decision, per arm -----------------------------------------------------------------

@only("draft")
def test_check_post_fails_acceptance_naming_l_and_target(live, tiny_models, tmp_path, e2e_record):
    doc = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "fail", acc
    assert doc["decision"] == "fail"
    assert "1.000" in acc["reason"] and "≥ 2" in acc["reason"], acc["reason"]


@only("draftself")
def test_check_post_passes_acceptance(live, tiny_models, tmp_path, e2e_record):
    doc = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "pass", acc
    assert "4.000" in acc["reason"] and "2" in acc["reason"], acc["reason"]


@only("ngram")
def test_check_post_passes_acceptance_and_artifacts_is_one_download(live, tiny_models, tmp_path, e2e_record):
    doc = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    # ngram adds no artifact, but the plan's storage budget still holds the target (docs/design.md, Fail closed)
    art = doc["checks"]["artifacts"]
    assert art["status"] == "pass", art
    assert art["values"]["downloads"] == 1 and art["values"]["drafter_weights_bytes"] is None, art["values"]
    assert doc["checks"]["staging"]["status"] == "n/a"
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "pass", acc


@only("eagle", "eagle3")
def test_check_pre_and_post_of_a_random_head(live, tiny_models, tmp_path, e2e_record):
    pre = vc.run_check_pre(live, tiny_models, tmp_path, e2e_record)
    if live.arm == "eagle":
        assert pre["checks"]["codesign"]["status"] != "fail", pre["checks"]["codesign"]
    else:
        assert pre["checks"]["codesign"]["status"] == "pass", pre["checks"]["codesign"]
    assert pre["checks"]["kv_pool"]["status"] == "pass", pre["checks"]["kv_pool"]
    post = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    acc = post["checks"]["acceptance"]
    assert acc["status"] == "fail", acc  # L ~ 1.0 against the plan's target 2
    assert post["decision"] == "fail"


@only("mtp")
def test_check_pre_and_post_of_the_mtp_layer(live, tiny_models, tmp_path, e2e_record):
    pre = vc.run_check_pre(live, tiny_models, tmp_path, e2e_record)
    codesign = pre["checks"]["codesign"]
    assert codesign["status"] == "pass" and codesign["values"]["family"] == "mtp", codesign
    assert pre["checks"]["artifacts"]["status"] == "pass"  # one download: the head is inside the target
    post = vc.run_check_post(live, tiny_models, tmp_path, e2e_record)
    assert post["decision"] == "fail"  # L ~ 1.0 against a target of 2 (a random MTP layer)
    assert post["checks"]["acceptance"]["status"] == "fail", post["checks"]["acceptance"]


@only("suffix")
def test_check_pre_and_post_of_suffix_decoding(live, tiny_models, tmp_path, e2e_record):
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
