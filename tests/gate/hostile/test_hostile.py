"""The hostile generator (issue 34 item 4): generated mutations per (source, invariant), run through the intake.

Why: fixes that catch only their literal example pass review and fail the next attack. Each registered case
draws at least 20 mutations (Hypothesis, derandomized so CI repeats) and asserts the intake refuses every one with
a reason naming its invariant (`gate.model.invariants`). A source of `gate.evidence.intake.SOURCES` or an
invariant of `INVARIANTS` with no case here fails `test_every_source_and_invariant_is_registered`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.evidence.intake import SOURCES, answer
from gate.evidence.probes import ProbeError
from gate.model.depth import depth_schedule
from gate.model.invariants import INVARIANTS, invariant_of
from gate.probe.importers import ImportSettings, import_files

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "probe"
C8 = FIXTURES / "vllm-0.32.0-bench-serve-c8.json"
BASE = ImportSettings(arm="baseline", engine="vllm", engine_version="0.32.0", temperature=0.0)
MUTATIONS = settings(derandomize=True, deadline=None, max_examples=20, database=None)


def _refused(call: Callable[[], object], invariant: str) -> None:
    try:
        got = call()
    except (ProbeError, ValueError) as e:
        got = str(e)
    assert isinstance(got, str) and got, f"passed: {got!r}"
    assert invariant_of(got) == invariant, got


def _vllm_bench(tmp: Path, name: str, change: Callable[[dict], None]) -> Path:
    doc = json.loads(C8.read_text())
    change(doc)
    p = tmp / name
    p.write_text(json.dumps(doc))
    return p


@given(name=st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=12),
       date=st.datetimes(min_value=datetime(2024, 2, 1), max_value=datetime(2026, 11, 1)))
@MUTATIONS
def test_vllm_bench_copies_are_one_measurement(tmp_path_factory: pytest.TempPathFactory, name: str,
                                               date: datetime) -> None:
    tmp = tmp_path_factory.mktemp("copy")
    copy = _vllm_bench(tmp, f"{name}.json", lambda d: d.update(date=date.strftime("%Y%m%d-%H%M%S")))
    _refused(lambda: import_files("vllm-bench", [C8, copy], BASE), "uniqueness")


@given(year=st.integers(1970, 2023), text=st.text(max_size=8))
@MUTATIONS
def test_vllm_bench_every_file_is_dated(tmp_path_factory: pytest.TempPathFactory, year: int, text: str) -> None:
    tmp = tmp_path_factory.mktemp("date")

    def old(d: dict) -> None:
        d["date"] = f"{year}0101-000000"
        d["ttfts"][0] += 1e-4
        d["latencies"][0] += 1e-4

    _refused(lambda: import_files("vllm-bench", [C8, _vllm_bench(tmp, "old.json", old)], BASE), "member_time")

    def unreadable(d: dict) -> None:
        d["date"] = "x" + text
    _refused(lambda: import_files("vllm-bench", [_vllm_bench(tmp, "bad.json", unreadable)], BASE), "member_time")


@given(warnings=st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=3), vm=st.booleans())
@MUTATIONS
def test_partial_answers_are_no_evidence(warnings: list[str], vm: bool) -> None:
    doc: dict[str, object] = {"status": "success", "data": {"resultType": "vector", "result": []}}
    doc.update({"isPartial": True} if vm else {"warnings": warnings})
    _refused(lambda: answer(doc, "Prometheus http://p"), "completeness")


@given(k=st.integers(65, 10**12), zero=st.booleans(), batches=st.integers(1, 512))
@MUTATIONS
def test_schedules_hold_every_depth(k: int, zero: bool, batches: int) -> None:
    per_batch = [[1, batches, 0], [batches + 1, batches + 8, 0]] if zero else [[1, 1024, 0]]
    vllm = {"method": "ngram", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": per_batch}
    _refused(lambda: depth_schedule("vllm", vllm), "plausibility")
    sglang = {"method": "eagle", "num_steps": 1, "speculative_adaptive": True,
              "speculative_adaptive_config": {"1": {"candidate_steps": [1, k]}}}
    with pytest.raises(ValueError, match="(depth|above) .*64|no engine drafts more than 64"):
        depth_schedule("sglang", sglang)  # the engine's own reader may refuse it first, with its reason


# (source, invariant) pairs the cases above cover; the rest of each source's invariants are held by the
# existing suites named in gate.evidence.intake (vetting, probe_vetting), and listed in the report.
COVERED: dict[str, set[str]] = {
    "bench_serve": {"uniqueness", "member_time"},
    "prometheus": {"completeness"},
    "victoriametrics": {"completeness"},
    "schedule": {"plausibility"},
}


def test_every_source_and_invariant_is_registered() -> None:
    assert set(COVERED) <= set(SOURCES)
    assert {i for s in COVERED.values() for i in s} <= set(INVARIANTS)
    for name, src in SOURCES.items():
        assert src.invariants <= set(INVARIANTS), name


def test_a_copy_through_the_cli_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gate.cli import main

    copy = tmp_path / "copy.json"
    copy.write_text(C8.read_text())
    rc = main(["probe", "import", "--from", "vllm-bench", "--arm", "baseline", "--engine", "vllm",
               "--temperature", "0", "--out", str(tmp_path / "r.json"), str(C8), str(copy)])
    err = capsys.readouterr().err
    assert rc == 3 and "one measurement counted more than once" in err and len(err.strip().splitlines()) == 1


def test_now_is_after_the_fixture() -> None:  # the fixture's date must stay a date of evidence
    assert datetime.now(UTC) > datetime(2026, 12, 2, tzinfo=UTC)
