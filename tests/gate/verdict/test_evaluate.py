"""evaluate(): phases, decision rule, evidence from real captures, bad input never a pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.plan.model import PlanError, load_plan, plan_from_dict
from gate.status import Decision, Status, decide, exit_code
from gate.verdict.evaluate import evaluate
from tests.gate.helpers import CAPTURES, CONFIGS, PLANS, serve, tiny_plan, write_plan


def test_decision_rule() -> None:
    assert decide([Status.PASS, Status.NA, Status.WARN]) is Decision.PASS
    assert decide([Status.PASS, Status.INCONCLUSIVE, Status.WARN]) is Decision.INCONCLUSIVE
    assert decide([Status.FAIL, Status.INCONCLUSIVE]) is Decision.FAIL
    assert decide([Status.NA] * 5) is Decision.PASS
    assert [exit_code(d) for d in Decision] == [0, 1, 2]
    assert exit_code(Decision.INCONCLUSIVE, allow_inconclusive=True) == 0
    assert exit_code(Decision.FAIL, allow_inconclusive=True) == 1


def _plan(arm: str, **evidence):
    # declared step costs (L* 1.5 < target 2): a pass needs a known L* (issue 21 item 6)
    data = tiny_plan(arm, costs=[{"verify_cycle_ms": 30, "target_step_ms": 20}])
    data["evidence"] = {"reported": {"startup_seconds": {"value": 40.7, "source": "reference NOTES ready time"}},
                        **evidence}
    return plan_from_dict(data)


def test_pre_static_tiny_draft_passes() -> None:
    """Serial staging (vLLM loads the draft after the target) warns since issue 10 (seed 002: "Stage checkpoints
    overlapped"); the decision still passes."""
    v = evaluate(_plan("draft"))
    assert {k: r.status.value for k, r in v.checks.items()} == {
        "artifacts": "pass", "kv_pool": "pass", "acceptance": "pass", "staging": "warn", "codesign": "pass"}
    assert v.decision is Decision.PASS
    assert v.checks["kv_pool"].values["predicted_tokens_with_drafter"] == 6528


def test_pre_with_real_captures_judges_the_slo() -> None:
    """The draft arm's real counters: 1,829 drafts, 0 accepted -> L 1.0 < target 2.0 -> fail; draftself: 4.0 -> pass."""
    v = evaluate(_plan("draft"), metrics=[str(CAPTURES / "metrics-draft-before.txt"),
                                          str(CAPTURES / "metrics-draft-after.txt")])
    assert v.checks["acceptance"].status is Status.FAIL and v.decision is Decision.FAIL
    assert v.checks["kv_pool"].values["allocated_tokens"] == 6528  # from the capture's cache_config_info
    v = evaluate(_plan("draftself"), metrics=[str(CAPTURES / "metrics-draftself-before.txt"),
                                              str(CAPTURES / "metrics-draftself-after.txt")])
    assert v.checks["acceptance"].status is Status.PASS and v.decision is Decision.PASS
    assert v.checks["kv_pool"].values["allocated_tokens"] == 4096 == v.checks["kv_pool"].values[
        "predicted_tokens_with_drafter"]


def test_post_without_evidence_is_inconclusive() -> None:
    v = evaluate(_plan("draft"), phase="post")
    assert v.checks["acceptance"].status is Status.INCONCLUSIVE and v.decision is Decision.INCONCLUSIVE
    assert evaluate(_plan("draft"), phase="post", allow_inconclusive=True).exit_code == 0


def test_post_only_reset_window_is_inconclusive() -> None:
    v = evaluate(_plan("draftself"), phase="post", metrics=[str(CAPTURES / "metrics-ngram-after.txt"),
                                                            str(CAPTURES / "metrics-draftself-after.txt")])
    assert v.checks["acceptance"].status is Status.INCONCLUSIVE  # L 4.0 there, but the window is reset


def test_exporter_500_gives_inconclusive_line_not_pass() -> None:
    with serve(lambda path: (500, "text/plain", b"internal error")) as url:
        v = evaluate(_plan("draftself"), phase="post", metrics=[url])
    acc = v.checks["acceptance"]
    assert acc.status is Status.INCONCLUSIVE and "HTTP 500" in acc.reason
    assert v.decision is Decision.INCONCLUSIVE


def test_ngram_lines() -> None:
    v = evaluate(_plan("ngram"))
    # no second download, but the plan's storage budget is still checked against the target (issue 10)
    assert v.checks["artifacts"].status is Status.PASS and "one download" in v.checks["artifacts"].reason
    assert v.checks["codesign"].status is Status.NA
    assert v.checks["staging"].status is Status.NA and v.run_record.drafter_artifact is None


def test_bad_phase_and_missing_files_are_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="phase"):
        evaluate(_plan("draft"), phase="during")
    data = tiny_plan("draft")
    data["target"]["config"] = str(tmp_path / "nope.json")
    with pytest.raises(PlanError, match="target.config: config file not found"):
        evaluate(plan_from_dict(data))
    with pytest.raises(PlanError, match="capture"):
        evaluate(_plan("draft"), metrics=[str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])


def test_config_without_num_hidden_layers_is_invalid_input(tmp_path: Path) -> None:
    cfg = json.loads((CONFIGS / "tiny-target.json").read_text())
    del cfg["num_hidden_layers"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    data = tiny_plan("draft")
    data["target"]["config"] = str(tmp_path / "config.json")
    with pytest.raises(PlanError, match="has no num_hidden_layers"):
        evaluate(plan_from_dict(data))


def test_partial_inline_geometry_is_unknown_not_an_error() -> None:
    v = evaluate(load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml"))
    assert v.checks["kv_pool"].values["drafter_kv_bytes_per_token"] is None  # heads/head_dim not in the seed
    assert any("geometry unknown" in n for n in v.checks["kv_pool"].values["notes"])


def test_kube_evidence_unavailable_is_inconclusive_staging(tmp_path: Path) -> None:
    data = tiny_plan("draft")
    data["evidence"] = {"kubernetes": {"namespace": "llm", "selector": "app=qwen"}}
    write_plan(tmp_path / "p.yaml", data)

    class Broken:
        pass  # not an ApiClient: the kube evidence module fails, the line says so

    v = evaluate(load_plan(tmp_path / "p.yaml"), kube_client=Broken())
    st = v.checks["staging"]
    assert st.status is Status.INCONCLUSIVE and "Kubernetes evidence unavailable" in st.reason


def test_record_has_seed001_keys_and_missing() -> None:
    from gate.verdict.record import KEYS

    v = evaluate(_plan("draft"))
    rec = v.run_record.to_json()
    assert all(k in rec for k in KEYS)
    assert set(rec["missing"]) == {k for k in KEYS if rec[k] is None}
    assert rec["kv_dtype"] == "fp32" and rec["speculative_decoding"] == "draft_model; num speculative tokens 3"


def test_mtp_method_on_a_target_without_mtp_layers_fails_codesign() -> None:
    """method mtp, no drafter section, and Llama-3.1-8B's config has no num_nextn_predict_layers:
    there is no MTP head to load (DESIGN.md co-design table, MTP depth: fail), never n/a."""
    data = {"name": "mtp-on-llama",
            "target": {"name": "meta-llama/Llama-3.1-8B-Instruct",
                       "config": str(CONFIGS / "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json")},
            "engine": {"kind": "vllm", "speculative": {"method": "mtp", "num_speculative_tokens": 3}}}
    v = evaluate(plan_from_dict(data))
    cd = v.checks["codesign"]
    assert cd.status is Status.FAIL and v.decision is Decision.FAIL
    assert "mtp_depth fail" in cd.reason and "no MTP layers" in cd.reason


def test_pool_of_an_engine_running_no_speculation_is_not_the_pool_with_the_drafter() -> None:
    """Seed 000's trap, on real vLLM-CPU captures: the no-speculation arm allocated 8,192 tokens (64 blocks);
    with the 256 B/token draft the pool is 8 MiB / 1,280 B = 51 blocks = 6,528. A capture of the engine
    running *without* speculation (no spec_decode counters) must not stand in for the pool with the drafter:
    7,100 resident tokens fail against 6,528 and the 8,192 is reported as the pool without the drafter."""
    data = tiny_plan("draft")
    data["engine"]["context_cap_tokens"] = 8192
    data["workload"] = [{"name": "w", "concurrency": 1, "prompt_tokens": 7000, "output_tokens": 100}]
    v = evaluate(plan_from_dict(data), metrics=[str(CAPTURES / "metrics-nospec-before.txt"),
                                                str(CAPTURES / "metrics-nospec-after.txt")])
    kv = v.checks["kv_pool"]
    assert kv.status is Status.FAIL and v.decision is Decision.FAIL
    assert kv.values["allocated_tokens"] is None and kv.values["predicted_tokens_with_drafter"] == 6528
    assert kv.values["allocated_tokens_without_drafter"] == 8192
    assert "without the drafter the 8,192-token pool holds it" in kv.reason
    assert v.run_record.kv_pool_tokens is None and "kv_pool_tokens" in v.run_record.missing
    # Without a drafter (no speculation planned) the same capture is the pool to judge against.
    plain = tiny_plan("nospec")
    plain["engine"]["context_cap_tokens"] = 8192
    plain["workload"] = data["workload"]
    v = evaluate(plan_from_dict(plain), metrics=[str(CAPTURES / "metrics-nospec-before.txt"),
                                                 str(CAPTURES / "metrics-nospec-after.txt")])
    assert v.checks["kv_pool"].values["allocated_tokens"] == 8192 and v.checks["kv_pool"].status is Status.PASS


def test_post_does_not_pass_on_the_plans_own_capture_files() -> None:
    """Seed 004's plan carries captures from before the switch: they pass `pre`, but `post` needs the live SLO."""
    plan = load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml")
    assert evaluate(plan, phase="pre").checks["acceptance"].status == Status.PASS
    post = evaluate(plan, phase="post")
    assert post.checks["acceptance"].status == Status.INCONCLUSIVE
    assert post.decision == Decision.INCONCLUSIVE
    assert "post phase needs" in post.checks["acceptance"].reason
