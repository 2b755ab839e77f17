"""Sub-check 10 (gate/checks/acceptance/verification.py): lossy verification warns, or fails under require_lossless.

The plans carry vLLM's rejection modes as its configs spell them: `standard` and `block` are configs vLLM 0.32's
own SpeculativeConfig accepts (tests/fixtures/oracle/vllm-0.32.0-speculative-knobs.json, "accepted"); `fly` is
later main's lossy mode, which 0.32 refuses (the same fixture's "refused" row), so a plan naming it runs a newer
build than the fixture's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.checks.acceptance import verification
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.helpers import context, tiny_plan

KNOBS = json.loads((Path(__file__).resolve().parents[3] / "fixtures" / "oracle"
                    / "vllm-0.32.0-speculative-knobs.json").read_text())


def _plan(**spec: Any) -> Any:
    data = tiny_plan("ngram")
    data["engine"]["speculative"].update(spec)
    return plan_from_dict(data)


def _config(method: str) -> dict[str, Any]:
    """A config of the fixture's (accepted or refused by vLLM 0.32) that sets `rejection_sample_method`."""
    rows = KNOBS["accepted"] + KNOBS["refused"]
    return next(r["config"] for r in rows if r["config"].get("rejection_sample_method") == method)


@pytest.mark.parametrize("method", ["standard", "block"])
def test_lossless_modes_add_nothing_to_the_line(method: str) -> None:
    cfg = _config(method)
    assert any(r["config"] == cfg for r in KNOBS["accepted"])  # vLLM 0.32 takes it
    plan = _plan(rejection_sample_method=cfg["rejection_sample_method"], require_lossless=True)
    assert verification.sub(context(plan)) == verification.Finding()
    assert verification.sub(context(_plan())).status is None  # unstated: the version's (lossless) default


def test_lossy_verification_warns_naming_the_distribution() -> None:
    cfg = _config("fly")
    assert any(r["config"] == cfg for r in KNOBS["refused"])  # 0.32 refuses it: a later build's mode
    found = verification.sub(context(_plan(rejection_sample_method="fly")))
    assert found.status is Status.WARN
    assert "rejection_sample_method 'fly', which is lossy" in found.sentence
    assert "no longer follow the target model's distribution" in found.sentence
    assert found.values["verification"] == {"rejection_sample_method": "fly", "lossless": False,
                                            "require_lossless": False}


def test_lossy_verification_fails_where_the_plan_requires_lossless() -> None:
    found = verification.sub(context(_plan(rejection_sample_method="fly", require_lossless=True)))
    assert found.status is Status.FAIL and "require_lossless is true" in found.sentence
    assert verification.sub(context(_plan(rejection_sample_method="fly", require_lossless=False))).status \
        is Status.WARN


def test_the_line_carries_the_lossy_clause_and_its_status() -> None:
    lossy = judge(_plan(rejection_sample_method="fly", require_lossless=True), "pre", [], [])
    assert lossy.status is Status.FAIL and "lossy" in lossy.reason and "verification" in lossy.values
    plain = judge(_plan(), "pre", [], [])
    assert "lossy" not in plain.reason and "verification" not in plain.values
