"""Per-position counters as evidence (gate/evidence/positions.py), read once from the plan's capture pages."""

from __future__ import annotations

import pytest

from gate.evidence import captures
from gate.evidence.gather import gather_metrics, request_for
from gate.evidence.positions import capture_point_name, observed_depth, point_name
from gate.plan.model import CaptureGroup, StepCost, load_plan
from tests.gate.helpers import PLANS

SEED004 = PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml"


def test_the_plans_capture_pages_are_read_once_for_windows_and_positions(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = load_plan(SEED004)
    reads: list[str] = []
    real = captures.read_capture

    def counted(p: object, *a: object) -> object:
        reads.append(str(p))
        return real(p, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(captures, "read_capture", counted)
    ev = gather_metrics(plan, "pre", [], None, request_for(plan, wait=False))
    # two groups of two pages each (the 2K after-page opens the 131K group too): four reads, not eight
    assert len(reads) == sum(len(g.files) for g in plan.evidence.captures) == 4
    by_point = {p.point: p for p in ev.positions}
    assert set(by_point) == {"2K", "131K"}
    c = by_point["2K"].counters
    assert c is not None and (c.k, c.drafts, c.accepted_per_position) == (3, 467, (434, 371, 298))
    assert c.measured_length == pytest.approx(1 + (434 + 371 + 298) / 467)


def test_post_phase_reads_no_plan_captures_so_gives_no_positions() -> None:
    plan = load_plan(SEED004)
    assert gather_metrics(plan, "post", [], None, request_for(plan, wait=False)).positions == []


def test_point_names_are_one_rule() -> None:
    assert point_name(StepCost(point="2K", verify_cycle_ms=2, target_step_ms=1), 0) == "2K"
    assert point_name(StepCost(context_tokens=2040, verify_cycle_ms=2, target_step_ms=1), 0) == "2,040 tokens"
    assert point_name(StepCost(verify_cycle_ms=2, target_step_ms=1), 1) == "point 2"
    g = CaptureGroup(files=["a", "b"])
    assert capture_point_name(g, 0, 1) is None and capture_point_name(g, 1, 2) == "captures 2"


def test_observed_depth_is_what_the_counters_show() -> None:
    assert observed_depth(900, 300) == 3 and observed_depth(None, 300) is None and observed_depth(5, 0) is None
