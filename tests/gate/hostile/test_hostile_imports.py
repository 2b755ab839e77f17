"""The hostile generator for `probe import` (issue 34 item 4): vllm bench serve, AIPerf and guidellm results.

Why: an imported record is evidence like a native one, so each tool's intake (`gate.probe.importers.import_files`,
then `gate.evidence.intake.probe_records` where `compare` reads it against its other arm) is held to every
invariant the registry declares for it. Each case draws at least 20 mutations of a real result and asserts the
intake refuses every one with a reason of the pair's invariant; the controls import and compare clean.

Inputs: the real `vllm bench serve` result (tests/fixtures/probe/vllm-0.32.0-bench-serve-c{1,8}.json; its 32-34
token prompts made 32 where a known prompt shape is needed, so that the control compares clean), AIPerf lines
built from the same real requests (`tests.gate.probe.test_importers._aiperf_lines`, AIPerf 0.13's shape read from
its source) and the real guidellm 0.8.1 reports (tests/fixtures/guidellm/).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.evidence.intake import probe_records
from gate.evidence.probes import ProbeError, ProbeRecord
from gate.model.invariants import invariant_of
from gate.probe.importers import ImportSettings, import_files
from tests.gate.probe.test_importers import _aiperf_lines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
C1 = FIXTURES / "probe" / "vllm-0.32.0-bench-serve-c1.json"
C8 = FIXTURES / "probe" / "vllm-0.32.0-bench-serve-c8.json"
SYNC = FIXTURES / "guidellm" / "guidellm-0.8.1-synchronous.json"
CONC = FIXTURES / "guidellm" / "guidellm-0.8.1-concurrent.json"
MUTATIONS = settings(derandomize=True, deadline=None, max_examples=20, database=None)
SPEC = {"method": "ngram", "num_speculative_tokens": 3}
# Where guidellm writes a time of day (seconds since the epoch): every number in this range is one.
EPOCH_RANGE = (1.6e9, 2.0e9)


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def _even_prompts(doc: dict[str, Any]) -> dict[str, Any]:
    """The vllm bench result with every prompt 32 tokens, so its mix has a known shape (module docstring)."""
    doc["input_lens"] = [32] * len(doc["input_lens"])
    doc["total_input_tokens"] = 32 * doc["num_prompts"]
    return doc


def _shift(value: Any, seconds: float) -> Any:
    """A guidellm report moved in time: every time of day in it moved by `seconds`, durations kept."""
    if isinstance(value, dict):
        return {k: _shift(v, seconds) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift(v, seconds) for v in value]
    if isinstance(value, float) and EPOCH_RANGE[0] <= value <= EPOCH_RANGE[1]:
        return value + seconds
    return value


@dataclass(frozen=True)
class Tool:
    """One importer: its clean documents, how one is written, re-dated and made impossible."""

    name: str  # --from
    settings: ImportSettings
    docs: Callable[[], list[Any]]  # the clean documents of one import (one run)
    apart: Callable[[float, float], list[Any]]  # two runs of one import, the second `dt` s after the first at `t`
    write: Callable[[Path, Any], Path]
    at: Callable[[Any, float], Any]  # the document as run at this time (seconds since the epoch)
    model: Callable[[Any, str], Any] | None  # the document naming another model (None: the file names none)
    impossible: tuple[Callable[[Any, float], Any], ...]  # each: the document with one number made impossible


def _json_write(name: str) -> Callable[[Path, Any], Path]:
    def write(d: Path, doc: Any) -> Path:
        d.mkdir(parents=True, exist_ok=True)
        p = d / name
        p.write_text(json.dumps(doc))
        return p
    return write


def _jsonl_write(d: Path, lines: Any) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / "profile_export.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def _vllm_at(doc: dict[str, Any], t: float) -> dict[str, Any]:
    return {**doc, "date": datetime.fromtimestamp(t).strftime("%Y%m%d-%H%M%S")}  # vLLM writes local time


def _vllm_set(key: str) -> Callable[[Any, float], Any]:
    def change(doc: dict[str, Any], f: float) -> dict[str, Any]:
        return {**doc, key: doc[key] * f}
    return change


def _vllm_latency(doc: dict[str, Any], f: float) -> dict[str, Any]:
    return {**doc, "latencies": [x * f for x in doc["latencies"]]}


def _aiperf_docs() -> list[Any]:
    return [_aiperf_lines(_even_prompts(_load(C8))), _aiperf_lines(_load(C1))]


def _aiperf_at(lines: list[dict[str, Any]], t: float) -> list[dict[str, Any]]:
    first = min(x["metadata"]["request_start_ns"] for x in lines)
    dt = round(t * 1e9) - first
    out = copy.deepcopy(lines)
    for x in out:
        x["metadata"]["request_start_ns"] += dt
        x["metadata"]["request_end_ns"] += dt
    return out


def _aiperf_metric(tag: str) -> Callable[[Any, float], Any]:
    def change(lines: list[dict[str, Any]], f: float) -> list[dict[str, Any]]:
        out = copy.deepcopy(lines)
        out[2]["metrics"][tag]["value"] *= f
        return out
    return change


def _guidellm_at(doc: dict[str, Any], t: float) -> Any:
    return _shift(doc, t - doc["benchmarks"][0]["scheduler_metrics"]["measure_start_time"])


def _guidellm_apart(t: float, dt: float) -> list[Any]:
    """The concurrent report (two benchmarks, streams 1 and 4) with its second benchmark run `dt` s after the first."""
    doc = _guidellm_at(_load(CONC), t)
    doc["benchmarks"][1] = _shift(doc["benchmarks"][1], dt)
    return [doc]


def _guidellm_model(doc: dict[str, Any], model: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["config"]["spec"]["backend"]["model"] = model
    return out


def _guidellm_duration(doc: dict[str, Any], f: float) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["benchmarks"][0]["duration"] *= f
    return out


def _guidellm_tokens(doc: dict[str, Any], f: float) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    total = out["benchmarks"][0]["metrics"]["output_token_count"]["successful"]
    total["total_sum"] = total["total_sum"] * f + 1
    return out


BASE = ImportSettings(arm="baseline", engine="vllm", engine_version="0.32.0", temperature=0.0, model="tiny")
TOOLS = {
    "bench_serve": Tool("vllm-bench", BASE, lambda: [_even_prompts(_load(C8))],
                        lambda t, dt: [_vllm_at(_even_prompts(_load(C8)), t), _vllm_at(_load(C1), t + dt)],
                        _json_write("r.json"),
                        _vllm_at, lambda d, m: {**d, "model_id": m},
                        (_vllm_set("total_output_tokens"), _vllm_set("output_throughput"), _vllm_latency)),
    "aiperf": Tool("aiperf", replace(BASE, concurrency=8), lambda: _aiperf_docs()[:1],
                   lambda t, dt: [_aiperf_at(d, t + i * dt) for i, d in enumerate(_aiperf_docs())],
                   _jsonl_write, _aiperf_at, None,
                   (_aiperf_metric("inter_token_latency"), _aiperf_metric("request_latency"))),
    "guidellm": Tool("guidellm", BASE, lambda: [_load(SYNC)], _guidellm_apart, _json_write("report.json"),
                     _guidellm_at, _guidellm_model, (_guidellm_duration, _guidellm_tokens)),
}


def _import(tool: Tool, tmp: Path, docs: list[Any], s: ImportSettings | None = None) -> ProbeRecord | str:
    """The record the intake builds from `docs` (each written to its own folder), or its one-line refusal."""
    paths = [tool.write(tmp / f"run{i}", d) for i, d in enumerate(docs)]
    try:
        return import_files(tool.name, paths, s or tool.settings)
    except ProbeError as e:
        return str(e)


def _counterpart(rec: ProbeRecord) -> ProbeRecord:
    """A speculative arm of the same deployment and run as `rec` (compare's other arm)."""
    d = rec.model_dump(mode="json")
    d.update(arm="speculative", speculative=SPEC, source=None)
    for c in d["cells"]:
        c["acceptance_length"] = 1.5
    return ProbeRecord.model_validate(d)


def _compared(tool: Tool, tmp: Path, docs: list[Any], s: ImportSettings | None = None) -> list[str]:
    """The intake's reasons for an import read by `compare` against a clean speculative arm."""
    got = _import(tool, tmp, docs, s)
    if isinstance(got, str):
        return [got]
    clean = _import(tool, tmp / "clean", tool.docs()[:1])
    assert isinstance(clean, ProbeRecord), clean
    return probe_records([("baseline (imported)", got), ("speculative.json", _counterpart(clean))])


def _names(reasons: list[str], invariant: str) -> None:
    assert reasons, "passed"
    assert invariant in {invariant_of(r) for r in reasons}, reasons


@pytest.mark.parametrize("source", sorted(TOOLS))
def test_imports_read_and_compare_clean(source: str, tmp_path: Path) -> None:
    tool = TOOLS[source]
    assert _compared(tool, tmp_path, tool.docs()[:1]) == []
    two = _import(tool, tmp_path / "two", tool.apart(time.time() - 86_400, 600.0))
    assert isinstance(two, ProbeRecord) and len(two.cells) == 2, two  # two runs of one campaign: two cells


CASES: dict[str, Callable[[Tool, Path, st.DataObject], list[str]]] = {}


def _case(invariant: str) -> Callable[[Callable[[Tool, Path, st.DataObject], list[str]]], None]:
    def register(fn: Callable[[Tool, Path, st.DataObject], list[str]]) -> None:
        CASES[invariant] = fn
    return register


@_case("identity")
def _another_deployment(tool: Tool, tmp: Path, data: st.DataObject) -> list[str]:
    """The user's flags name another (or no) engine, version or model; or the files disagree on the model."""
    docs = tool.docs()
    hows = ["engine", "engine_version", "model"] + (["files"] if tool.model is not None else [])
    how = data.draw(st.sampled_from(hows))
    if how == "files" and tool.model is not None:
        other = data.draw(st.sampled_from(["other", "tiny2", "Tiny", "tiny "]))
        return [str(_import(tool, tmp, [docs[0], tool.model(docs[0], other)], replace(tool.settings, model=None)))]
    values: dict[str, list[Any]] = {"engine": [None, "sglang", "trtllm"],
                                           "engine_version": [None, "0.31.0", "0.32.1"], "model": ["other", "tiny-2"]}
    changed: dict[str, Any] = {how: data.draw(st.sampled_from(values[how]))}
    s = replace(tool.settings, **changed)
    return _compared(tool, tmp, docs[:1], s)


@_case("uniqueness")
def _a_copy(tool: Tool, tmp: Path, data: st.DataObject) -> list[str]:
    """The same run twice: under another name and folder, re-dated or moved on its own clock."""
    doc = tool.docs()[0]
    moved = data.draw(st.floats(-3600.0, 3600.0)) if data.draw(st.booleans()) else 0.0
    start = datetime(2026, 12, 1, tzinfo=UTC).timestamp() + data.draw(st.floats(0, 80_000))
    copy_ = tool.at(doc, start + moved)
    return [str(r) for r in [_import(tool, tmp, [tool.at(doc, start), copy_])]]


@_case("member_time")
def _undated(tool: Tool, tmp: Path, data: st.DataObject) -> list[str]:
    """A run before 2024 or in the future, or two runs more than a day apart (each file's own date)."""
    when = data.draw(st.sampled_from(["old", "future", "apart"]))
    now = time.time()
    docs = tool.docs()
    if when == "old":
        t = data.draw(st.floats(datetime(2001, 1, 1).timestamp(), datetime(2023, 12, 30).timestamp()))
        return [str(_import(tool, tmp, [tool.at(docs[0], t)]))]
    if when == "future":
        return [str(_import(tool, tmp, [tool.at(docs[0], now + data.draw(st.floats(86_400, 86_400 * 3650)))]))]
    apart = data.draw(st.floats(86_400 * 1.01, 86_400 * 9))
    return [str(_import(tool, tmp, tool.apart(now - 10 * 86_400, apart)))]


@_case("plausibility")
def _impossible(tool: Tool, tmp: Path, data: st.DataObject) -> list[str]:
    """One of the file's own numbers that cannot be true, or an acceptance above 1 + k on a speculative import."""
    docs = tool.docs()
    if data.draw(st.booleans()):
        change = data.draw(st.sampled_from(tool.impossible))
        f = data.draw(st.one_of(st.floats(1.5, 1e6), st.floats(1e-6, 0.5)))
        return [str(_import(tool, tmp, [change(docs[0], f)]))]
    got = _import(tool, tmp, docs[:1])
    assert isinstance(got, ProbeRecord), got
    spec = _counterpart(got).model_dump(mode="json")
    k = data.draw(st.integers(1, 8))
    spec["speculative"] = {**SPEC, "num_speculative_tokens": k}
    spec["cells"][0]["acceptance_length"] = 1 + k + data.draw(st.floats(0.01, 1e6))
    return probe_records([("baseline (imported)", got), ("speculative.json", ProbeRecord.model_validate(spec))])


@_case("applicability")
def _not_this_arm(tool: Tool, tmp: Path, data: st.DataObject) -> list[str]:
    """A baseline import carrying speculative settings, or a speculative import that measured no speculation."""
    k = data.draw(st.integers(1, 8))
    method = data.draw(st.sampled_from(["ngram", "eagle", "eagle3", "draft_model", "mtp"]))
    arm = data.draw(st.sampled_from(["baseline", "speculative"]))
    s = replace(tool.settings, arm=arm, speculative={"method": method, "num_speculative_tokens": k})
    return [str(_import(tool, tmp, tool.docs()[:1], s))]


@pytest.mark.parametrize("invariant", sorted(CASES))
@pytest.mark.parametrize("source", sorted(TOOLS))
@given(data=st.data())
@MUTATIONS
def test_imports_refuse(source: str, invariant: str, data: st.DataObject,
                        tmp_path_factory: pytest.TempPathFactory) -> None:
    _names(CASES[invariant](TOOLS[source], tmp_path_factory.mktemp(source), data), invariant)


@pytest.mark.parametrize("source", ["aiperf", "guidellm"])
def test_an_old_run_through_the_cli_is_exit_3(source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI case per tool (`probe import`, exit 3 and one line naming member_time): a run dated 2019."""
    from gate.cli import main

    tool = TOOLS[source]
    path = tool.write(tmp_path / "run", tool.at(tool.docs()[0], datetime(2019, 6, 1, tzinfo=UTC).timestamp()))
    flags = ["--concurrency", "8"] if source == "aiperf" else []
    rc = main(["probe", "import", "--from", tool.name, "--arm", "baseline", "--engine", "vllm", "--temperature", "0",
               *flags, "--out", str(tmp_path / "r.json"), str(path)])
    err = capsys.readouterr().err
    assert rc == 3 and "not dated as evidence" in err and len(err.strip().splitlines()) == 1, err
