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

from gate.evidence.intake import SOURCES, answer, probe_records
from gate.evidence.probes import ProbeError, ProbeRecord
from gate.model.depth import depth_schedule
from gate.model.engines import profile
from gate.model.engines.base import ScheduleWriter
from gate.model.invariants import INVARIANTS, invariant_of
from gate.probe.importers import ImportSettings, import_files
from gate.tune.emit import applicable
from tests.gate.hostile.test_hostile_imports import CASES as IMPORT_CASES
from tests.gate.hostile.test_hostile_imports import TOOLS as IMPORT_TOOLS
from tests.gate.hostile.test_hostile_windows import CASES as WINDOW_CASES
from tests.gate.hostile.test_hostile_windows import SOURCES as WINDOW_SOURCES

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


# --- native probe records, read together through gate.evidence.intake.probe_records (compare, tune --probe) ---

NOW = datetime.now(UTC)


def _native(arm: str, k: int = 3, method: str = "ngram", **top: object) -> dict[str, object]:
    """A clean native record (specgate.probe/1): two concurrencies, 4 requests of the mix's 32 tokens each, L within
    1 + k, rate = tokens / wall."""
    cells: list[dict[str, object]] = []
    for b in (1, 4):
        wall = 2.0 / b
        cells.append({"mix": "m", "concurrency": b, "repetition": 1, "requests": 4, "output_tokens": 128,
                      "prompt_tokens": 128,
                      "wall_seconds": wall, "served_tokens_per_second": 128 / wall, "failed_requests": 0,
                      "ttft_seconds": {}, "tpot_seconds": {}, "chunk_gap_seconds": {},
                      "acceptance_length": None if arm == "baseline" else 1.5 + 0.1 * b, "drafts": None})
    doc: dict[str, object] = {
        "schema": "specgate.probe/1", "arm": arm, "engine": "vllm", "engine_version": "0.32.0", "model": "tiny",
        "created_at": NOW.isoformat(timespec="seconds"),
        "workload": [{"name": "m", "prompt_tokens": 32, "output_tokens": 32, "prompts_from": "synthetic"}],
        "speculative": None if arm == "baseline" else {"method": method, "num_speculative_tokens": k},
        "cells": cells}
    doc.update(top)
    return doc


def _read(*docs: dict[str, object]) -> list[str]:
    """The intake's reasons for records given as documents (a record the schema refuses: its one line)."""
    try:
        recs = [(f"r{i}.json", ProbeRecord.model_validate(d)) for i, d in enumerate(docs)]
    except ValueError as e:
        return [str(e)]
    return probe_records(recs, NOW.timestamp())


def _names(reasons: list[str], invariant: str) -> None:
    assert reasons, "passed"
    assert invariant in {invariant_of(r) for r in reasons}, reasons


NATIVE: dict[str, Callable[[st.DataObject], list[str]]] = {}


def _native_case(invariant: str) -> Callable[[Callable[[st.DataObject], list[str]]], None]:
    def register(fn: Callable[[st.DataObject], list[str]]) -> None:
        NATIVE[invariant] = fn
    return register


@_native_case("identity")
def _other_deployment(data: st.DataObject) -> list[str]:
    key = data.draw(st.sampled_from(["engine", "engine_version", "model"]))
    others = ["sglang", "trtllm", "llamacpp"] if key == "engine" else ["0.31.0", "other-model", "x", "0.32.0 "]
    other = data.draw(st.sampled_from([None, *others]))
    spec = _native("speculative")
    spec[key] = other
    return _read(_native("baseline"), spec)


@_native_case("uniqueness")
def _renumbered_copy(data: st.DataObject) -> list[str]:
    spec = _native("speculative")
    cells = list(spec["cells"])  # type: ignore[call-overload]
    copy = dict(cells[data.draw(st.integers(0, len(cells) - 1))], repetition=data.draw(st.integers(2, 10**6)))
    if data.draw(st.booleans()):
        return _read(_native("baseline"), {**spec, "cells": [*cells, copy]})
    return _read(_native("baseline"), spec, _native("speculative", created_at=spec["created_at"]))


@_native_case("member_time")
def _undated(data: st.DataObject) -> list[str]:
    when = data.draw(st.one_of(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2023, 12, 31)),
                               st.datetimes(min_value=datetime(2100, 1, 1), max_value=datetime(2900, 1, 1))))
    arm = data.draw(st.sampled_from(["baseline", "speculative"]))
    docs = {"baseline": _native("baseline"), "speculative": _native("speculative")}
    docs[arm]["created_at"] = when.replace(tzinfo=UTC).isoformat()
    return _read(docs["baseline"], docs["speculative"])


@_native_case("plausibility")
def _impossible(data: st.DataObject) -> list[str]:
    spec = _native("speculative", k=data.draw(st.integers(1, 8)))
    cell = dict(spec["cells"][0])  # type: ignore[index]
    if data.draw(st.booleans()):
        cell["acceptance_length"] = data.draw(st.floats(10.0, 1e6))  # L > 1 + k
    else:  # a served rate that is not tokens / wall
        cell["served_tokens_per_second"] *= data.draw(st.floats(1.05, 1e4))
    return _read(_native("baseline"), {**spec, "cells": [cell, *spec["cells"][1:]]})  # type: ignore[index]


@_native_case("applicability")
def _other_method(data: st.DataObject) -> list[str]:
    other = data.draw(st.sampled_from(["eagle", "eagle3", "draft_model", "mtp", "suffix"]))
    if data.draw(st.booleans()):
        return _read(_native("baseline"), _native("speculative"), _native("speculative", k=2, method=other))
    return _read(_native("baseline", speculative={"method": other, "num_speculative_tokens": 3}),
                 _native("speculative"))


@pytest.mark.parametrize("invariant", sorted(NATIVE))
@given(data=st.data())
@MUTATIONS
def test_native_probe_records(invariant: str, data: st.DataObject) -> None:
    _names(NATIVE[invariant](data), invariant)


def test_native_controls_read_clean() -> None:
    assert _read(_native("baseline"), _native("speculative")) == []


# --- tune --emit: the records' engine and method (gate.tune.emit.applicable, from the engine's profile) ----------

@given(engine=st.sampled_from(["sglang", "trtllm", "vllm"]), measured=st.sampled_from(["vllm", "sglang", "trtllm", None]),
       method=st.sampled_from(["ngram", "NGRAM", "draft_model", "suffix", None]))
@MUTATIONS
def test_emit_only_the_engines_own_methods(engine: str, measured: str | None, method: str | None) -> None:
    p = profile(engine)
    assert isinstance(p, ScheduleWriter)
    if measured == engine and method is not None and engine != "sglang":
        measured = None  # vLLM and TensorRT-LLM schedule any method: another engine's records instead
    got = applicable(p, p.kind, p.name, [(measured, method)])
    assert got is not None and invariant_of(got) == "applicability", got


# (source, invariant) pairs the cases above cover; tests/gate/hostile fails when the registry declares a pair that
# is neither here nor in PENDING (and when a pair is in both).
COVERED: dict[str, set[str]] = {
    "native_probe": set(NATIVE),
    **{source: set(IMPORT_CASES) for source in IMPORT_TOOLS},  # test_hostile_imports.py
    "prometheus": {"completeness"},
    "victoriametrics": {"completeness"},
    "schedule": {"plausibility"},
    "emit": {"applicability"},
    "previous": {"identity", "member_time"},  # test_hostile_previous.py
    **{source: set(WINDOW_CASES) for source in WINDOW_SOURCES},  # test_hostile_windows.py
}  # and test_hostile_simulated.py's COVERED (simulated acceptance), merged in the registry check
# Declared pairs with no generated case yet: empty since every pair has its case (issue 34 item 4). A new
# registration must come with its case (or be listed here, which review can see).
PENDING: dict[str, set[str]] = {}
# One CLI case per source (exit code, one line): the sources that have one.
CLI_CASES = {"bench_serve", "native_probe", "emit", "previous", "aiperf", "guidellm", "schedule", "prometheus",
             "victoriametrics", "captures", "sidecar"}  # test_hostile*.py, test_hostile_cli.py
CLI_PENDING: set[str] = set()


def test_every_source_and_invariant_is_registered() -> None:
    from tests.gate.hostile.test_hostile_simulated import COVERED as SIMULATED_COVERED  # imports this module

    covered_all = {s: COVERED.get(s, set()) | SIMULATED_COVERED.get(s, set()) for s in set(COVERED) | set(
        SIMULATED_COVERED)}
    assert set(INVARIANTS) == {i for s in SOURCES.values() for i in s.invariants}, "an invariant no source holds"
    for name, src in SOURCES.items():
        assert src.invariants <= set(INVARIANTS), name
        covered, pending = covered_all.get(name, set()), PENDING.get(name, set())
        assert not covered & pending, (name, covered & pending)
        assert covered | pending == set(src.invariants), (name, set(src.invariants) - covered - pending)
    assert set(covered_all) | set(PENDING) <= set(SOURCES)
    assert CLI_CASES | CLI_PENDING == set(SOURCES) and not CLI_CASES & CLI_PENDING


def test_native_other_engine_through_the_cli_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gate.cli import main

    b, s = tmp_path / "b.json", tmp_path / "s.json"
    b.write_text(json.dumps(_native("baseline")))
    s.write_text(json.dumps(_native("speculative", engine="sglang")))
    rc = main(["compare", str(b), str(s)])
    err = capsys.readouterr().err
    assert rc == 3 and "not the same deployment" in err and len(err.strip().splitlines()) == 1, err


def test_emit_from_another_engine_through_the_cli_is_exit_3(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from gate.cli import main

    paths = []
    for name, doc in (("b", _native("baseline")), ("s", _native("speculative"))):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(doc))
    rc = main(["tune", "--probe", *map(str, paths), "--emit", "sglang"])
    err = capsys.readouterr().err
    assert rc == 3 and "not applicable" in err and len(err.strip().splitlines()) == 1, err


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
