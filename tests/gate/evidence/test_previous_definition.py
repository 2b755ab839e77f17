"""`--previous RECORD` across an acceptance-definition change (issue 37 item 3): not comparable, refused.

The record has the keys `check --record` writes (gate/verdict/record.py: `executed_engine_version`, the version the
evidence observed). Every definition in the adapters' tables today converts exactly to specgate's L (vLLM's
<= 0.31 and >= 0.32 rows, SGLang's three spec_accept_rate meanings), so real upgrades load; the refusal is shown
with one table row marked inexact (`exact=False`, as an engine whose counters specgate could not convert would be),
monkeypatched into `gate.model.invariants.ACCEPTANCE`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from exporter.engines import ACCEPTANCE
from gate.cli import main
from gate.evidence.previous import load_previous
from gate.model import invariants
from gate.model.invariants import invariant_of
from gate.plan.model import Plan
from gate.status import InputError
from tests.gate.helpers import tiny_plan, write_plan


def _record(tmp_path: Path, version: str | None) -> Path:
    doc: dict[str, Any] = {"model_artifact": "tiny-target", "model_revision": "r1", "drafter_artifact": "tiny-draft",
                           "drafter_revision": "r1", "plan": "tiny-draft", "decision": "pass", "engine": "vllm",
                           "executed_engine_version": version, "generated_at": "2026-11-01T09:00:00+00:00"}
    p = tmp_path / "rec.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def _plan() -> Plan:
    return Plan.model_validate(tiny_plan("draft"))  # vLLM 0.32.0


@pytest.fixture
def inexact_031(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's <= 0.31 row marked inexact: its L and 0.32's are then two quantities."""
    rows = tuple(dataclasses.replace(d, exact=False) if d.high == (0, 31) else d for d in ACCEPTANCE["vllm"])
    monkeypatch.setattr(invariants, "ACCEPTANCE", {**ACCEPTANCE, "vllm": rows})


@pytest.mark.parametrize("version", ["0.32.0", "0.32.1", "0.31.2", None])
def test_real_tables_load_across_exact_definitions(tmp_path: Path, version: str | None) -> None:
    prev = load_previous(_record(tmp_path, version), _plan(), now=1.8e9)
    assert prev.executed_engine_version == version


@pytest.mark.usefixtures("inexact_031")
def test_a_record_under_another_definition_is_refused_naming_both(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        load_previous(_record(tmp_path, "0.31.2"), _plan(), now=1.8e9)
    got = str(e.value)
    assert got.startswith("not the same deployment: not comparable: previous run record ")
    assert invariant_of(got) == "identity"
    assert "vLLM <= 0.31" in got and "vLLM >= 0.32" in got
    # the same definition on both sides (another patch release, or no version then) still loads
    assert load_previous(_record(tmp_path, "0.32.4"), _plan(), now=1.8e9).executed_engine_version == "0.32.4"
    assert load_previous(_record(tmp_path, None), _plan(), now=1.8e9).executed_engine_version is None


@pytest.mark.usefixtures("inexact_031")
def test_through_the_cli_is_exit_3_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    code = main(["check", "--plan", str(plan), "--format", "json", "--previous", str(_record(tmp_path, "0.31.0"))])
    out = capsys.readouterr()
    assert code == 3 and not out.out.strip(), out
    assert len(out.err.strip().splitlines()) == 1 and "not comparable" in out.err and "vLLM <= 0.31" in out.err
