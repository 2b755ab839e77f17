"""`--previous RECORD` fails closed (issue 21, item 5): a record of another plan or model, a null revision
where one is compared and an implausible `generated_at` are refused (exit 3, one line); evidence is newer
only by a time measured inside it, never a capture file's mtime."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.evidence.base import AcceptanceWindow
from gate.evidence.previous import PreviousRecord, against, is_newer, load_previous, newer_windows
from gate.plan.model import Plan
from gate.status import InputError
from tests.gate.helpers import CAPTURES, tiny_plan, write_plan

# process_start_time_seconds on the real draft-arm captures (tests/fixtures/vllm/metrics-draft-*.txt)
ENGINE_START = 1.79596433508e9
NOW = ENGINE_START + 30 * 86_400.0


def _record(tmp_path: Path, name: str = "rec.json", **over: Any) -> Path:
    doc: dict[str, Any] = {"model_artifact": "tiny-target", "model_revision": "r1", "drafter_artifact": "tiny-draft",
                           "drafter_revision": "r1", "plan": "tiny-draft", "decision": "pass",
                           "generated_at": "2026-11-01T09:00:00+00:00"}
    doc.update(over)
    p = tmp_path / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def _plan(**over: Any) -> Plan:
    return Plan.model_validate(tiny_plan("draft", **over))


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t))


# ---------------------------------------------------------------------------------------------
# identity: another plan, another model, unknown is not "the same"


@pytest.mark.parametrize(("over", "says"), [
    ({"plan": "another-plan"}, "record of plan 'another-plan', not of 'tiny-draft'"),
    ({"plan": None}, "record of plan None"),
    ({"model_artifact": "Qwen/Qwen3-8B"}, "record of model 'Qwen/Qwen3-8B'"),
    ({"model_artifact": None}, "target model is unknown"),
    ({"model_revision": None}, "model_revision is null"),
    ({"drafter_revision": None}, "drafter_revision is null"),
])
def test_a_record_of_another_plan_or_model_is_refused(tmp_path: Path, over: dict[str, Any], says: str) -> None:
    """The same revision strings on another plan's or model's record used to read as "no change"."""
    with pytest.raises(InputError, match=says.replace("(", r"\(").replace(")", r"\)")):
        load_previous(_record(tmp_path, **over), _plan(), now=NOW)
    prev = load_previous(_record(tmp_path, **over))  # without a plan: only the record's own shape is read
    with pytest.raises(InputError):
        against(prev, _plan())


def test_a_plan_without_a_target_name_cannot_be_matched(tmp_path: Path) -> None:
    plan = _plan(target={"revision": "r1", "config": tiny_plan()["target"]["config"], "weights": {"bytes": 1_706_496}})
    with pytest.raises(InputError, match="target model is unknown"):
        load_previous(_record(tmp_path), plan, now=NOW)


def test_a_plan_without_revisions_still_takes_its_own_record(tmp_path: Path) -> None:
    """Nothing to compare: the record is accepted and the change is unknown (n/a), as before."""
    data = tiny_plan("draft")
    data["target"].pop("revision")
    plan = Plan.model_validate(data)
    prev = load_previous(_record(tmp_path, model_revision=None), plan, now=NOW)
    assert against(prev, plan).target_changed is None


def test_another_drafter_artifact_is_a_drafter_change(tmp_path: Path) -> None:
    prev = load_previous(_record(tmp_path, drafter_artifact="other-draft"), _plan(), now=NOW)
    ch = against(prev, _plan())
    assert ch.drafter_changed is True and ch.target_changed is False
    assert ch.drafter_revisions == ("other-draft@r1", "tiny-draft@r1")


def test_the_control_record_of_this_plan_loads(tmp_path: Path) -> None:
    prev = load_previous(_record(tmp_path, model_revision="r0"), _plan(), now=NOW)
    ch = against(prev, _plan())
    assert ch.target_changed is True and ch.drafter_changed is False


# ---------------------------------------------------------------------------------------------
# generated_at: a plausible date


@pytest.mark.parametrize("when", [0, -1e12, 1.0e9, "1970-01-01T00:00:00+00:00", "2019-06-01T00:00:00Z",
                                  NOW + 86_400.0, _iso(NOW + 7 * 86_400.0), "2026-11-01T09:00:00", None,
                                  "not a date", True, float("inf")])
def test_implausible_generated_at_is_refused(tmp_path: Path, when: Any) -> None:
    if isinstance(when, float) and when == float("inf"):
        p = tmp_path / "rec.json"
        p.write_text(json.dumps({"model_artifact": "tiny-target", "model_revision": "r1", "plan": "tiny-draft",
                                 "generated_at": when}), encoding="utf-8")  # Python writes Infinity
    else:
        p = _record(tmp_path, generated_at=when)
    with pytest.raises(InputError, match="generated_at"):
        load_previous(p, _plan(), now=NOW)


def test_a_recent_generated_at_is_accepted(tmp_path: Path) -> None:
    assert load_previous(_record(tmp_path, generated_at=NOW - 60.0), _plan(), now=NOW).generated_at == NOW - 60.0
    assert load_previous(_record(tmp_path, generated_at=NOW + 30.0), _plan(), now=NOW).generated_at == NOW + 30.0


# ---------------------------------------------------------------------------------------------
# newer: a time measured inside the evidence, never a file's mtime


def _window(end: float, *, file_time: bool = False, started: float | None = None,
            reset: bool | None = False) -> AcceptanceWindow:
    return AcceptanceWindow("s", "tiny/0", None, end - 60.0, end, reset, 100.0, 3.0, 0.7,
                            file_time=file_time, process_start=started)


def test_newer_is_decided_by_measured_times() -> None:
    since = 2_000_000_000.0
    assert is_newer(_window(since + 10), since)  # an exporter's / a live scrape's own clock
    assert not is_newer(_window(since - 10), since)
    assert not is_newer(_window(since + 10, reset=None), since)  # restart unknown
    assert not is_newer(_window(since + 10, reset=True), since)
    # a capture file: its end is an mtime; only the engine's own start on the page counts
    assert not is_newer(_window(since + 10, file_time=True), since)
    assert not is_newer(_window(since + 10, file_time=True, started=since - 5), since)
    assert is_newer(_window(since - 1e6, file_time=True, started=since + 5), since)
    prev = PreviousRecord("r.json", "p", "r0", None, "pass", None)
    assert newer_windows(prev, [_window(since + 10)]) == []  # no time on the record: nothing is newer


def _touched_captures(tmp_path: Path) -> list[str]:
    out = []
    for name in ("metrics-draft-before.txt", "metrics-draft-after.txt"):
        dst = tmp_path / name
        shutil.copyfile(CAPTURES / name, dst)
        os.utime(dst)  # a fresh checkout: the old pages get today's mtime
        out.append(str(dst))
    return out


def _target_finding(capsys: pytest.CaptureFixture[str], plan: Path, rec: Path, files: list[str]) -> dict[str, Any]:
    code = main(["check", "--plan", str(plan), "--format", "json", "--previous", str(rec), "--metrics", *files])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1, 2)
    found = [f for f in doc["checks"]["codesign"]["values"]["findings"] if f["check"] == "target_revision"]
    assert len(found) == 1
    return dict(found[0])


def test_touching_old_captures_does_not_make_them_newer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After a target revision change, captures of an engine that started before the previous record are old
    evidence whatever their mtime; an engine started after it is new evidence (the control)."""
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    files = _touched_captures(tmp_path)
    old = _record(tmp_path, "old.json", model_revision="r0", generated_at=_iso(ENGINE_START + 3_600.0))
    f = _target_finding(capsys, plan, old, files)
    assert f["status"] == "inconclusive" and "a new acceptance check is needed" in f["detail"], f
    new = _record(tmp_path, "new.json", model_revision="r0", generated_at=_iso(ENGINE_START - 86_400.0))
    f = _target_finding(capsys, plan, new, files)
    assert f["status"] == "pass" and "newer than the previous record" in f["detail"], f


@pytest.mark.parametrize("over", [{"plan": "another-plan"}, {"model_artifact": "Qwen/Qwen3-8B"},
                                  {"model_revision": None}, {"generated_at": -1e12}])
def test_check_previous_refusals_are_one_line_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     over: dict[str, Any]) -> None:
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    code = main(["check", "--plan", str(plan), "--format", "json", "--previous", str(_record(tmp_path, **over))])
    out = capsys.readouterr()
    assert code == 3 and not out.out.strip()
    assert out.err.count("\n") == 1 and "Traceback" not in out.err and "previous run record" in out.err
