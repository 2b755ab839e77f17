"""acceptance line: target vs L* (fail, issue 10), per-window SLO (reset windows never count), two-arm served rates."""

from __future__ import annotations

import pytest

from gate.checks import acceptance
from gate.evidence.base import AcceptanceWindow
from gate.plan.model import load_plan, plan_from_dict
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.helpers import PLANS, tiny_plan


def _w(length: float | None, drafts: float = 100, reset: bool = False, stream: str = "m/0",
       point: str | None = None) -> AcceptanceWindow:
    return AcceptanceWindow(source="test", stream=stream, point=point, start=0, end=60, reset=reset,
                            drafts=drafts, acceptance_length=length)


def _plan(**slo):
    # declared step costs (L* 30 / 20 = 1.5): a pass needs a known L* (issue 21 item 6)
    data = tiny_plan("draft", costs=[{"point": "p", "verify_cycle_ms": 30, "target_step_ms": 20}])
    data["slo"].update(slo)
    return plan_from_dict(data)


def test_seed004_break_even_from_declared_costs() -> None:
    plan = load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml")
    stars = [p.break_even_length for p in acceptance.break_even(plan, {})]
    # seed 004: 31.16 / 14.14 = 2.204 at 2K; 38.35 / 19.84 = 1.933 at 131K
    assert stars == [pytest.approx(2.2037, abs=1e-4), pytest.approx(1.9330, abs=1e-4)]


def test_pre_without_evidence_target_above_break_even_passes() -> None:
    data = tiny_plan("draft", costs=[{"point": "p", "verify_cycle_ms": 30, "target_step_ms": 20}])
    r = judge(plan_from_dict(data), "pre", [], [])
    assert r.status is Status.PASS and "L* 1.500" in r.reason and "not judged before the switch" in r.reason


def test_target_below_break_even_fails() -> None:
    """Issue 10 (seed 002 line 3): a target at or below L* = 50 / 20 = 2.5 cannot pay: fail, not warn."""
    data = tiny_plan("draft", costs=[{"point": "p", "verify_cycle_ms": 50, "target_step_ms": 20}])
    r = judge(plan_from_dict(data), "pre", [], [])
    assert r.status is Status.FAIL and "does not exceed L* 2.500" in r.reason


def test_no_costs_is_inconclusive_and_names_the_keys() -> None:
    """Issue 21 item 6: L* unknown decides nothing (was a pass that skipped the comparison)."""
    r = judge(plan_from_dict(tiny_plan("draft")), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE and "L* unknown" in r.reason and "costs[]" in r.reason


def test_no_target_fails_in_both_phases() -> None:
    """Issue 10: "before rollout a target is required" — missing is a fail with seed 002's words."""
    data = tiny_plan("draft")
    data["slo"].pop("target_acceptance_length")
    plan = plan_from_dict(data)
    r = judge(plan, "pre", [], [])
    assert r.status is Status.FAIL and "seed 002: set an acceptance-length target before rollout" in r.reason
    assert judge(plan, "post", [_w(3.0)], []).status is Status.FAIL


def test_post_without_windows_is_inconclusive_never_pass() -> None:
    r = judge(_plan(), "post", [], [])
    assert r.status is Status.INCONCLUSIVE


def test_required_fraction_and_min_windows() -> None:
    plan = _plan(required_fraction=0.75, min_windows=4, target_acceptance_length=2.0)
    # 3 of 4 windows at or above 2.0 -> 0.75 >= 0.75 -> pass
    assert judge(plan, "post", [_w(2.5), _w(2.0), _w(3.0), _w(1.5)], []).status is Status.PASS
    # 2 of 4 -> fail
    assert judge(plan, "post", [_w(2.5), _w(1.9), _w(3.0), _w(1.5)], []).status is Status.FAIL
    # only 3 windows: fewer than min_windows -> inconclusive
    assert judge(plan, "post", [_w(2.5), _w(2.1), _w(3.0)], []).status is Status.INCONCLUSIVE


def test_reset_and_thin_windows_are_never_evidence() -> None:
    plan = _plan(min_windows=2, min_drafts=50, required_fraction=1.0)
    wins = [_w(4.0), _w(4.0, reset=True), _w(4.0, drafts=10), _w(1.2, reset=True)]
    r = judge(plan, "post", wins, [])
    # one usable window < min_windows 2: the reset 4.0 and the 10-draft window do not make up for it
    assert r.status is Status.INCONCLUSIVE
    assert r.values["windows_excluded"] == {"reset": 1 + 1, "restart_unknown": 0, "below_min_drafts": 1}
    # and a bad reset window does not fail a good stream
    r = judge(plan, "post", [_w(4.0), _w(4.0), _w(1.0, reset=True)], [])
    assert r.status is Status.PASS
    # a window whose restart status nobody could tell is not "no restart" (issue 10)
    r = judge(plan, "post", [_w(4.0), _w(4.0, reset=None)], [])  # type: ignore[arg-type]
    assert r.status is Status.INCONCLUSIVE and r.values["windows_excluded"]["restart_unknown"] == 1


def test_each_stream_judged_on_its_own() -> None:
    plan = _plan(min_windows=2, required_fraction=1.0)
    wins = [_w(3.0, stream="pod-a"), _w(3.0, stream="pod-a"), _w(1.1, stream="pod-b"), _w(1.2, stream="pod-b")]
    r = judge(plan, "post", wins, [])
    assert r.status is Status.FAIL
    assert {s["stream"]: s["status"] for s in r.values["streams"]} == {"pod-a": "pass", "pod-b": "fail"}


def test_evidence_error_makes_slo_inconclusive() -> None:
    r = judge(_plan(), "pre", [], ["exporter http://127.0.0.1:1 answered HTTP 500 on /api/v1/windows"])
    assert r.status is Status.INCONCLUSIVE and "HTTP 500" in r.reason


def test_measured_l_below_break_even_fails() -> None:
    data = tiny_plan("draft", costs=[{"verify_cycle_ms": 30, "target_step_ms": 20}])
    data["slo"]["target_acceptance_length"] = 1.0
    r = judge(plan_from_dict(data), "pre", [_w(1.2), _w(1.3)], [])
    assert r.status is Status.FAIL and "does not pay" in r.reason


def test_measured_rates_give_break_even() -> None:
    """L* from measured per-sequence rates: cycle = L / r_spec, step = 1 / r_base (exporter.formulas)."""
    data = tiny_plan("draft", costs=[{"point": "2K", "baseline_tokens_per_second": 70.7,
                                      "speculative_tokens_per_second": 107.9, "acceptance_length": 3.362}])
    p = acceptance.break_even(plan_from_dict(data), {})[0]
    assert p.kind == "measured"
    assert p.break_even_length == pytest.approx(3.362 / 107.9 * 70.7)


def test_served_rates_go_through_the_rank_test() -> None:
    """Seed 000's cells: observed ranges labelled as such, one-sided exact p, never "speedup" at n = 3."""
    plan = load_plan(PLANS / "seed000-qwen38-flash-next-nextn.yaml")
    r = judge(plan, "pre", [], [])
    short, long = r.values["served_rate"]
    assert (short["baseline"]["median"], short["baseline"]["observed_min"], short["baseline"]["observed_max"]) == (
        22.6, 19.9, 26.0)
    assert short["higher_in_all_cells"] and short["p_higher"] == pytest.approx(0.05) and not short["significant"]
    assert long["ranges_overlap"] and long["p_higher"] == pytest.approx(0.1)
    assert "higher in all cells, not significant at n = 3" in r.reason and "observed 19.9–26" in r.reason


def test_min_speedup_changes_the_line() -> None:
    plan = load_plan(PLANS / "seed000-qwen38-flash-next-nextn.yaml")
    data = plan.model_dump(exclude={"plan_path"}, exclude_none=True, mode="json")
    data["costs"] = [{"verify_cycle_ms": 12, "target_step_ms": 10}]  # L* 1.2 known (issue 21 item 6)
    data["slo"] = {"target_acceptance_length": 1.5, "target_source": "assumed"}
    assert judge(plan_from_dict(data), "pre", [], []).status is Status.PASS  # reported only
    data["slo"] = {"target_acceptance_length": 1.5, "target_source": "assumed", "min_speedup": 1.1}
    r = judge(plan_from_dict(data), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE  # 3 vs 3 is never significant at α 0.05 (p ≥ 0.05)


def test_seed004_erosion_and_cycle_growth() -> None:
    plan = load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml")
    wins = [_w(1 + 1103 / 467, drafts=467, point="2K"), _w(1 + 889 / 423, drafts=423, point="131K")]
    r = judge(plan, "pre", wins, [])
    assert r.status is Status.PASS
    e = r.values["erosion"]
    assert e["fraction"] == pytest.approx((3.3619 - 3.1017) / 3.3619, abs=1e-4)  # 7.7%
    g = r.values["cycle_growth"]
    assert g["verify_cycle_growth_ms"] == pytest.approx(38.35 - 31.16)
    assert g["target_step_growth_ms"] == pytest.approx(19.84 - 14.14)
    assert g["draft_growth_ms"] == pytest.approx(7.19 - 5.70)
    assert g["draft_share"] == pytest.approx(1.49 / 7.19)
    assert g["per_draft_step_ms"] == pytest.approx(1.49 / 3)
    assert "7.7%" in r.reason and "20.7%" in r.reason


def test_a_window_without_a_point_is_judged_at_none_of_several_points() -> None:
    """Issue 34 item 5: one live window over seed 004's 2K and 131K traffic (L 3.296 pooled) is set against
    neither point's L* — it used to pass on both; a window is judged at the point it belongs to or not at all."""
    plan = load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml")
    mixed = _w(1 + (1103 + 889) / (467 + 423), drafts=467 + 423)
    r = judge(plan, "pre", [mixed], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "whether speculation pays at 2K, 131K is not judged" in r.reason and "pooled L 3.238" in r.reason
    assert [m["pays"] for m in r.values["measured_vs_break_even"]] == [None, None]
    # with each point's own windows beside it, each point is judged on its own and nothing is left open
    own = [_w(1 + 1103 / 467, drafts=467, point="2K"), _w(1 + 889 / 423, drafts=423, point="131K")]
    r = judge(plan, "pre", [mixed, *own], [])
    assert r.status is Status.PASS and "not judged" not in r.reason, r.reason
    # a plan of one point: a window without a point is that point's (the plan's traffic)
    data = tiny_plan("draft", costs=[{"verify_cycle_ms": 30, "target_step_ms": 20}])
    data["slo"]["target_acceptance_length"] = 1.6
    r = judge(plan_from_dict(data), "pre", [_w(1.7)], [])
    assert r.status is Status.PASS and r.values["measured_vs_break_even"][0]["pays"] is True


def test_measured_rates_without_a_length_say_what_is_missing() -> None:
    """Rates are given but no acceptance length (declared or measured): L* is unknown because L is, and the
    reason must not claim that no step costs were given."""
    data = tiny_plan("draft", costs=[{"point": "2K", "baseline_tokens_per_second": 70.7,
                                      "speculative_tokens_per_second": 107.9}])
    r = judge(plan_from_dict(data), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE  # issue 21 item 6: L* unknown decides nothing
    assert "no step costs declared or measured" not in r.reason
    assert "L* unknown at 2K" in r.reason and "acceptance length" in r.reason


def test_measured_rates_that_show_a_slowdown_fail() -> None:
    """Issue 10: the real vLLM-CPU ngram arm, unwarmed — 1,840 tokens in 4.26 s with ngram vs 2.38 s without,
    L 3.2414 (tests/fixtures/vllm/captures-summary.json) → L* = 3.2414 × 4.26 / 2.38 = 5.802 > L: fail."""
    data = tiny_plan("ngram", costs=[{"point": "tiny", "baseline_tokens_per_second": 1840 / 2.38,
                                      "speculative_tokens_per_second": 1840 / 4.26,
                                      "acceptance_length": 1 + 1170 / 522}])
    r = judge(plan_from_dict(data), "pre", [], [])
    assert r.status is Status.FAIL
    assert "speculation does not pay at tiny: measured L 3.241 ≤ L* 5.802" in r.reason and "1.79× slower" in r.reason
    # control: the same L with the speculative arm faster (2.38 s vs 4.26 s swapped) pays
    data["costs"][0].update(baseline_tokens_per_second=1840 / 4.26, speculative_tokens_per_second=1840 / 2.38)
    assert judge(plan_from_dict(data), "pre", [], []).status is Status.PASS


def test_target_source_is_shown_or_missing_said() -> None:
    """Issue 21 item 6: a source not stated as traffic | benchmark | assumed is inconclusive."""
    r = judge(_plan(target_source=None), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE and "no source given for the target" in r.reason
    r = judge(_plan(target_source="drafter card macro mean 5.29 over nine benchmarks"), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE and "target source: drafter card macro mean 5.29" in r.reason
    r = judge(_plan(target_source="benchmark: drafter card macro mean 5.29 over nine benchmarks"), "pre", [], [])
    assert r.status is Status.PASS and "target source: benchmark: drafter card macro mean 5.29" in r.reason


def test_the_line_evidence_is_computed_once_per_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five sub-checks read the line's windows and L*; the context computes them once (CheckContext.acceptance_evidence)."""
    from gate.checks.acceptance import windows

    calls: list[object] = []
    real = windows.gather

    def counted(ctx):  # type: ignore[no-untyped-def]
        calls.append(ctx)
        return real(ctx)

    monkeypatch.setattr(windows, "gather", counted)
    r = judge(_plan(min_windows=1), "post", [_w(4.0), _w(4.0, stream="m/1")], [])
    assert r.status is Status.PASS and len(calls) == 1
