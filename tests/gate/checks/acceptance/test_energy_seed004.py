"""Seed 004's tokens per joule, recomputed from its decode rates and board watts (issue 38).

Why: the seed reports "2.97 vs 1.96 tok/J at 2K, 1.49 vs 1.06 at 32K, 0.96 vs 0.62 at 131K" as decode
tok/s ÷ board W. The example plan carries the rates and watts; `check` must recompute the figures (not echo
them), show the 32K pair as reported (no watts in the seed there), and refuse a plan whose reported tok/J its
own rates and watts do not give (exit 3).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.checks.acceptance.energy import point_json
from gate.cli import main
from gate.model.speedup.energy import disagreement, half_unit, tokens_per_joule
from gate.plan.model import PlanError, load_plan, plan_from_dict
from tests.gate.helpers import PLANS

SEED004 = PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml"


def _energy() -> dict[str, dict[str, Any]]:
    plan = load_plan(SEED004)
    return {p.point: point_json(p) for p in plan.evidence.reported.energy}


@pytest.mark.parametrize(("point", "spec", "base"), [("2K", 2.97, 1.96), ("131K", 0.96, 0.62)])
def test_seed004_recomputed_within_rounding(point: str, spec: float, base: float) -> None:
    e = _energy()[point]
    assert e["speculative"]["basis"] == e["baseline"]["basis"] == "recomputed"
    assert round(e["speculative"]["tokens_per_joule"], 2) == spec
    assert round(e["baseline"]["tokens_per_joule"], 2) == base
    assert e["kind"] == "board"


def test_seed004_32k_as_reported() -> None:
    e = _energy()["32K"]
    assert (e["speculative"]["basis"], e["speculative"]["tokens_per_joule"]) == ("reported", 1.49)
    assert (e["baseline"]["basis"], e["baseline"]["tokens_per_joule"]) == ("reported", 1.06)


def test_check_shows_the_recomputed_figures() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["check", "--format", "json", "--plan", str(SEED004)])
    reason = json.loads(out.getvalue())["checks"]["acceptance"]["reason"]
    assert "2K recomputed as tok/s ÷ W: 2.97 vs 1.96 tok/J" in reason
    assert "131K recomputed as tok/s ÷ W: 0.96 vs 0.62 tok/J" in reason
    assert "32K as reported (no watts given): 1.49 vs 1.06 tok/J" in reason


def _with_tpj(value: float) -> dict[str, Any]:
    data = yaml.safe_load(SEED004.read_text(encoding="utf-8"))
    data["evidence"]["reported"]["energy"][0]["speculative"]["tokens_per_joule"]["value"] = value
    return data


def test_disagreeing_tokens_per_joule_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="107.89 tok/s ÷ 36.3 W = 2.97 tok/J"):
        plan_from_dict(_with_tpj(3.2), base_dir=PLANS)
    bad = tmp_path / "bad.yaml"
    data = _with_tpj(3.2)
    data["evidence"]["captures"] = []
    bad.write_text(yaml.safe_dump(data), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["check", "--plan", str(bad)]) == 3


def test_rounding_allowance() -> None:
    assert half_unit(36.3) == pytest.approx(0.05) and half_unit(2.97) == pytest.approx(0.005)
    assert half_unit(84.0) == pytest.approx(0.5)  # a float cannot keep "84.0"'s trailing zero: read as 84
    assert disagreement(107.89, 36.3, 2.97) is None and disagreement(107.89, 36.3, 2.99) is not None
    assert plan_from_dict(_with_tpj(2.98), base_dir=PLANS)  # within rounding


def test_floor0_units() -> None:
    assert tokens_per_joule(256, 0) is None and tokens_per_joule(256, 128) == 2.0
    assert tokens_per_joule(256, float("nan")) is None
