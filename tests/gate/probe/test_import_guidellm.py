"""`specgate probe import --from guidellm`: guidellm 0.8 reports as probe records (gate.probe.importers.guidellm).

Fixtures: `tests/fixtures/guidellm/guidellm-0.8.1-{concurrent,synchronous}.json` are real reports of
guidellm 0.8.1 (PyPI, its own venv) against the real vLLM 0.32 CPU engine on the harness's tiny nospec
target, recorded by `tools/guidellm_capture.py` (provenance: the fixture directory's README). The expected
numbers are guidellm's own, read from those files (and copied into the README's table): its `duration`,
its `output_tokens_per_second` mean, its TTFT and ITL medians. The importer re-derives every one from the
requests; mutations of the files are the impossible cases. The YAML case is the same report written as
YAML here (guidellm's `--output kind=yaml` dumps the same model), not a separate capture.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.commands import probe_import
from gate.evidence.probes import ProbeError, load_record
from gate.probe.importers import ImportSettings, import_files
from gate.probe.importers.guidellm import guidellm_percentile, read_guidellm

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "guidellm"
CONCURRENT = FIXTURES / "guidellm-0.8.1-concurrent.json"
SYNCHRONOUS = FIXTURES / "guidellm-0.8.1-synchronous.json"
BASE = ImportSettings(arm="baseline", engine="vllm", engine_version="0.32.0")

# guidellm's own numbers in the real reports (benchmarks[i]: duration, output_tokens_per_second.successful.mean,
# time_to_first_token_ms / inter_token_latency_ms .successful.median), as the fixture README lists them.
GUIDELLM_SAYS = {
    (CONCURRENT, 0): (1, 1.8542745113372803, 172.57423215574482, 108.46138000488281, 0.9327843075706845),
    (CONCURRENT, 1): (4, 0.9155149459838867, 279.6240532423877, 51.83148384094238, 12.337082908267067),
    (SYNCHRONOUS, 0): (1, 0.70528244972229, 362.9751457742948, 13.635635375976562, 2.3280741676451666),
}


def _doc(path: Path = CONCURRENT) -> dict[str, Any]:
    return json.loads(path.read_text())


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "report.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize(("path", "n"), list(GUIDELLM_SAYS), ids=["concurrent@1", "concurrent@4", "synchronous"])
def test_real_reports_give_guidellms_own_numbers(path: Path, n: int) -> None:
    conc, duration, rate, ttft_ms, itl_ms = GUIDELLM_SAYS[(path, n)]
    b = _doc(path)["benchmarks"][n]
    cell = read_guidellm(path)[n]
    measured = b["metrics"]["request_totals"]
    assert cell.concurrency == conc
    assert cell.requests == measured["total"] and cell.failed == measured["errored"] + measured["incomplete"] == 0
    assert cell.wall_seconds == duration == b["duration"]
    assert math.isclose(cell.output_tokens / cell.wall_seconds, rate, rel_tol=1e-12)
    assert cell.output_tokens == b["metrics"]["output_token_count"]["successful"]["total_sum"] == 64 * len(cell.times)
    assert cell.prompt_tokens_per_request == 32 and cell.output_tokens_per_request == 64
    # guidellm's median rule, applied to the per-request values the importer read, names guidellm's number
    assert guidellm_percentile([(t.ttft * 1000, 1.0) for t in cell.times], 0.5)[0] == pytest.approx(ttft_ms, abs=1e-9)
    itls = [(t.tpot * 1000, 63.0) for t in cell.times if t.tpot is not None]
    assert guidellm_percentile(itls, 0.5)[0] == pytest.approx(itl_ms, abs=1e-9)
    # guidellm's per-request inter_token_latency_ms is our TPOT; its time_per_output_token_ms counts the TTFT in
    by_start = {r["info"]["timings"]["request_start"]: r for r in b["requests"]["successful"]}
    for t in cell.times:
        assert t.start is not None
        r = by_start[t.start]
        assert t.tpot is not None and math.isclose(t.tpot * 1000, r["inter_token_latency_ms"], rel_tol=1e-9)
        assert math.isclose(t.ttft * 1000, r["time_to_first_token_ms"], rel_tol=1e-9)
        assert math.isclose((t.latency * 1000) / 64, r["time_per_output_token_ms"], rel_tol=1e-9)


def test_the_cells_quantiles_are_the_probes_not_guidellms() -> None:
    """At streams 4 guidellm's ITL median is the lower middle request (12.337 ms, cumulative weight 0.5
    reached there); the probe's p50 interpolates between the two middle ones."""
    rec = import_files("guidellm", [CONCURRENT], BASE)
    c4 = rec.cells[1]
    itls = sorted(t.tpot for t in read_guidellm(CONCURRENT)[1].times if t.tpot is not None)
    assert len(itls) == 4 and itls[1] * 1000 == pytest.approx(12.337082908267067, abs=1e-9)
    assert c4.tpot_seconds.p50 == pytest.approx((itls[1] + itls[2]) / 2, rel=1e-12)
    assert c4.chunk_gap_seconds.p50 is None  # guidellm keeps no per-chunk times


def test_record_names_guidellm_its_version_and_what_the_report_says() -> None:
    rec = import_files("guidellm", [CONCURRENT], BASE)
    assert rec.source == "guidellm 0.8.1: imported from guidellm-0.8.1-concurrent.json"
    assert [(c.concurrency, c.repetition, c.requests) for c in rec.cells] == [(1, 1, 5), (4, 1, 4)]
    assert rec.model == "tiny" and rec.engine == "vllm" and rec.engine_version == "0.32.0"
    (mix,) = rec.workload
    # temperature 0 read from the report's backend extras (and every request body), not from a flag
    assert (mix.prompt_tokens, mix.output_tokens, mix.temperature) == (32, 64, 0.0)
    assert mix.prompts_from == "guidellm:synthetic_text"
    # streams 1 ran 3 requests before its measured window, streams 4 ran 4: the fewest is recorded
    assert rec.warmup_requests == 3
    assert rec.created_at is not None and rec.created_at.endswith("+00:00")
    # The same report given twice is one measurement, not two repetitions (issue 34: uniqueness by content).
    with pytest.raises(ProbeError, match="one measurement counted more than once: .*benchmark 1 holds the same"):
        import_files("guidellm", [CONCURRENT, CONCURRENT], BASE)


def test_reports_that_disagree_on_warm_up_are_imported_separately() -> None:
    with pytest.raises(ProbeError, match="disagree on warm-up requests: 0, 3"):
        import_files("guidellm", [CONCURRENT, SYNCHRONOUS], BASE)


def test_a_yaml_report_reads_as_the_json_one(tmp_path: Path) -> None:
    path = tmp_path / "report.yaml"
    path.write_text(yaml.safe_dump(_doc(SYNCHRONOUS)))
    assert read_guidellm(path) == read_guidellm(SYNCHRONOUS)


def test_flags_must_agree_with_the_report() -> None:
    with pytest.raises(ProbeError, match="guidellm sent temperature 0, --temperature says 0.7"):
        import_files("guidellm", [CONCURRENT], ImportSettings(arm="baseline", temperature=0.7))
    with pytest.raises(ProbeError, match=r"benchmarks\[0\]: ran at concurrency 1, --concurrency says 4"):
        import_files("guidellm", [CONCURRENT], ImportSettings(arm="baseline", concurrency=4))
    assert len(import_files("guidellm", [SYNCHRONOUS], ImportSettings(arm="baseline", concurrency=1)).cells) == 1


def test_without_a_recorded_temperature_it_is_asked_for(tmp_path: Path) -> None:
    doc = _doc(SYNCHRONOUS)
    doc["config"]["spec"]["backend"]["extras"] = None
    for r in doc["benchmarks"][0]["requests"]["successful"]:
        args = json.loads(r["request_args"])
        del args["body"]["temperature"]
        r["request_args"] = json.dumps(args)
    path = _write(tmp_path, doc)
    with pytest.raises(ProbeError, match="do not record the sampling temperature"):
        import_files("guidellm", [path], BASE)
    assert import_files("guidellm", [path], ImportSettings(arm="baseline", temperature=1.0)).workload[0].temperature == 1.0


def _bench(doc: dict[str, Any], n: int = 1) -> dict[str, Any]:
    b: dict[str, Any] = doc["benchmarks"][n]
    return b


def _measured(doc: dict[str, Any], i: int, n: int = 1) -> dict[str, Any]:
    """The i-th request guidellm measured in benchmark n (streams 4: requests 4-7; 0-3 are its warm-up)."""
    r: dict[str, Any] = _bench(doc, n)["requests"]["successful"][4 + i]
    return r


def _sampled(doc: dict[str, Any]) -> None:
    _bench(doc)["requests"]["successful"].pop()


def _early(doc: dict[str, Any]) -> None:
    b = _bench(doc)
    t = _measured(doc, 0)["info"]["timings"]
    t["request_start"] = b["scheduler_metrics"]["measure_start_time"] - 0.05


def _chunks(doc: dict[str, Any]) -> None:
    _measured(doc, 2)["info"]["timings"]["token_iterations"] = 65


def _order(doc: dict[str, Any]) -> None:
    t = _measured(doc, 1)["info"]["timings"]
    t["last_token_iteration"] = t["first_token_iteration"] - 0.01


def _tokens(doc: dict[str, Any]) -> None:
    _measured(doc, 0)["output_tokens"] = 60  # it streamed 45 token chunks: still possible on its own


def _temps(doc: dict[str, Any]) -> None:
    r = _measured(doc, 0)
    args = json.loads(r["request_args"])
    args["body"]["temperature"] = 0.8
    r["request_args"] = json.dumps(args)


def _all_temps(doc: dict[str, Any]) -> None:
    for r in _bench(doc)["requests"]["successful"]:
        args = json.loads(r["request_args"])
        args["body"]["temperature"] = 0.8
        r["request_args"] = json.dumps(args)


IMPOSSIBLE = [
    ("open loop", lambda d: _bench(d)["config"]["strategy"].update(type_="poisson", rate=2.0),
     "a 'poisson' benchmark at rate 2.0: a probe cell is C requests in flight"),
    ("sampled", _sampled, "request_totals.successful 4 is not the 3 .* reservoir-sampled"),
    ("duration", lambda d: _bench(d).update(duration=5.0), "duration 5 is not measure_end_time"),
    ("rate", lambda d: _bench(d)["metrics"]["output_tokens_per_second"]["successful"].update(mean=500.0),
     "output_tokens_per_second.successful.mean 500 is not output tokens / duration"),
    ("tokens", _tokens, "output_token_count.successful.total_sum 256 is not its requests' output tokens 252"),
    ("ttft median", lambda d: _bench(d)["metrics"]["time_to_first_token_ms"]["successful"].update(median=1.0),
     "time_to_first_token_ms.successful.median 1 is not guidellm's median"),
    ("itl median", lambda d: _bench(d)["metrics"]["inter_token_latency_ms"]["successful"].update(median=12.44),
     "inter_token_latency_ms.successful.median 12.44 is not guidellm's median .*12.337"),
    ("cut window", _early, r"requests.successful\[0\]: sent 0.05 s before the measured window began"),
    ("chunks", _chunks, "streamed 65 token chunks for 64 output tokens"),
    ("order", _order, "are out of order"),
    ("nan", lambda d: _measured(d, 1)["info"]["timings"].update(first_token_iteration=float("nan")),
     "first_token_iteration is nan"),
    ("temperatures", _temps, "its requests carried different temperatures: 0.0, 0.8"),
    ("extras", _all_temps, r"benchmarks\[1\]: its requests carried temperature 0.8, the backend's extras say 0"),
    ("no version", lambda d: d["metadata"].pop("guidellm_version"), "no 'metadata.guidellm_version'"),
    ("no window", lambda d: _bench(d)["scheduler_metrics"].pop("measure_start_time"),
     "no 'scheduler_metrics.measure_start_time'"),
    ("no benchmarks", lambda d: d.update(benchmarks=[]), "benchmarks is '\\[\\]', not a non-empty list"),
    ("none measured", lambda d: _bench(d)["scheduler_metrics"].update(
        measure_start_time=1e10, measure_end_time=1e10 + _bench(d)["duration"]), "request_totals.successful 4 is not the 0"),
]


@pytest.mark.parametrize(("name", "change", "reason"), IMPOSSIBLE, ids=[c[0] for c in IMPOSSIBLE])
def test_impossible_reports_are_refused_with_the_field(tmp_path: Path, name: str, change: Any, reason: str) -> None:
    doc = copy.deepcopy(_doc())
    change(doc)
    with pytest.raises(ProbeError, match=reason):
        import_files("guidellm", [_write(tmp_path, doc)], BASE)


def test_not_a_report_is_refused(tmp_path: Path) -> None:
    listing = tmp_path / "list.json"
    listing.write_text("[1, 2]")
    with pytest.raises(ProbeError, match="not an object"):
        read_guidellm(listing)
    with pytest.raises(ProbeError, match="guidellm report not found"):
        read_guidellm(tmp_path / "missing.json")


def test_guidellm_percentile_is_the_first_value_reaching_the_share() -> None:
    assert guidellm_percentile([(4.0, 1), (1.0, 1), (3.0, 1), (2.0, 1)], 0.5) == [2.0, 3.0]  # 0.5 reached exactly at 2
    assert guidellm_percentile([(1.0, 1), (2.0, 1), (3.0, 1)], 0.5) == [2.0]
    assert guidellm_percentile([(1.0, 1), (2.0, 3)], 0.5) == [2.0]  # weights: 2 holds 3/4
    assert guidellm_percentile([(1.0, 1), (1.0, 1), (5.0, 1)], 0.5) == [1.0]  # equal values merged: 1 holds 2/3
    assert guidellm_percentile([], 0.5) == [0.0]


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specgate probe import")
    probe_import.add_arguments(parser)
    try:
        return probe_import.run(parser.parse_args(argv))
    except SystemExit as e:
        return int(e.code or 0)


def test_command_writes_the_record_and_refuses_in_one_line(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "base.json"
    assert _cli([str(CONCURRENT), "--from", "guidellm", "--arm", "baseline", "--engine", "vllm",
                 "--engine-version", "0.32.0", "--out", str(out)]) == 0
    rec = load_record(out)
    assert [c.concurrency for c in rec.cells] == [1, 4] and rec.source is not None and "guidellm 0.8.1" in rec.source
    assert "2 cell(s) from guidellm" in capsys.readouterr().err
    doc = _doc()
    _bench(doc)["config"]["strategy"].update(type_="constant", rate=3.0)
    bad = _write(tmp_path, doc, "constant.json")
    assert _cli([str(bad), "--from", "guidellm", "--arm", "baseline", "--out", str(tmp_path / "x.json")]) == 3
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "benchmarks[1]: a 'constant' benchmark at rate 3.0" in err
    assert not (tmp_path / "x.json").exists()
