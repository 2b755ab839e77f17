"""The hostile generator for `--previous RECORD` (issue 34 item 4): identity and every member's time.

Why: a previous record of another plan or model, or one that is not dated as evidence, would let "no change"
through the co-design line. The intake (`gate.evidence.previous.load_previous` with the plan) must refuse every
mutation with a reason of the pair's invariant; the control (the plan's own record) loads. Records have the
shape `check --record` writes (the fields `tests/gate/evidence/test_previous_identity.py` uses).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.evidence.previous import load_previous
from gate.model.invariants import invariant_of
from gate.plan.model import Plan
from gate.status import InputError
from tests.gate.helpers import tiny_plan, write_plan

MUTATIONS = settings(derandomize=True, deadline=None, max_examples=20, database=None)
PLAN = Plan.model_validate(tiny_plan("draft"))


def _record(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"model_artifact": "tiny-target", "model_revision": "r1", "drafter_artifact": "tiny-draft",
                           "drafter_revision": "r1", "plan": "tiny-draft", "decision": "pass",
                           "generated_at": datetime.now(UTC).replace(microsecond=0).isoformat()}
    doc.update(over)
    return doc


def _refusal(tmp: Path, doc: dict[str, Any]) -> str:
    p = tmp / "previous.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    try:
        load_previous(p, PLAN)
    except InputError as e:
        return str(e)
    return ""


def test_the_plans_own_record_loads(tmp_path: Path) -> None:
    assert _refusal(tmp_path, _record()) == ""
    assert _refusal(tmp_path, {"run_record": _record()}) == ""  # a whole `check --format json` document


NAMES = st.one_of(st.none(), st.text(min_size=1, max_size=12), st.sampled_from(["tiny-target ", "Tiny-Target",
                                                                              "tiny-draft", "tiny-nospec"]))


@given(key=st.sampled_from(["plan", "model_artifact", "model_revision", "drafter_revision"]), value=NAMES,
       whole=st.booleans())
@MUTATIONS
def test_a_record_of_another_deployment_is_refused(tmp_path_factory: pytest.TempPathFactory, key: str,
                                                   value: str | None, whole: bool) -> None:
    """Another plan or target model, unknown on either side, or a null revision the plan compares."""
    doc = _record()
    if key in ("model_revision", "drafter_revision"):
        value = None  # another revision is a change, not another deployment; a null one cannot show it
    if value == doc[key]:
        value = None
    doc[key] = value
    got = _refusal(tmp_path_factory.mktemp("prev"), {"run_record": doc} if whole else doc)
    assert got and invariant_of(got) == "identity", (doc, got)


@given(when=st.one_of(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2023, 12, 31)).map(
        lambda d: d.replace(tzinfo=UTC).isoformat()),
    st.datetimes(min_value=datetime(2100, 1, 1), max_value=datetime(9000, 1, 1)).map(
        lambda d: d.replace(tzinfo=UTC).isoformat()),
    st.floats(-1e12, 1.7e9), st.floats(time.time() + 86_400, 1e13),
    st.datetimes(min_value=datetime(2024, 6, 1), max_value=datetime(2026, 6, 1)).map(lambda d: d.isoformat()),  # naive
    st.sampled_from([None, "", "yesterday", "2026-13-01T00:00:00Z", True, [], {}, float("nan")])))
@MUTATIONS
def test_a_record_not_dated_as_evidence_is_refused(tmp_path_factory: pytest.TempPathFactory, when: object) -> None:
    """generated_at before 2024, in the future, unreadable, or without a zone (no instant)."""
    doc = _record(generated_at=when)
    p = tmp_path_factory.mktemp("prev") / "previous.json"
    p.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8")
    try:
        load_previous(p, PLAN)
    except InputError as e:
        got = str(e)
    else:
        got = ""
    assert got and invariant_of(got) == "member_time", (when, got)


def test_another_plans_record_through_the_cli_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI case: `check --previous` with another plan's record exits 3 with one line naming the invariant."""
    from gate.cli import main

    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps(_record(plan="another-plan")), encoding="utf-8")
    code = main(["check", "--plan", str(plan), "--format", "json", "--previous", str(rec)])
    out = capsys.readouterr()
    assert code == 3 and not out.out.strip(), out
    assert len(out.err.strip().splitlines()) == 1 and "not the same deployment" in out.err, out.err
