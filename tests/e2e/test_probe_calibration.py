"""Trusting the instrument on the real vLLM (issue 23 items 1, 5, 7): the probe against `vllm bench serve`,
`probe import` of a real `vllm bench serve` result, and the same engine as both arms under the null.

One tiny nospec vLLM 0.32 engine for the module (`--max-num-seqs 8`, the harness's default):
1. the short calibration: `bench/probe_vs_reference.py --concurrency 1,8 --pairs 3` (one uncounted settle
   pair first; the full form, 7 pairs at 1, 8 and 32, is `make bench`) — both tools' numbers side by side in
   the e2e summary; asserted only loosely here (served tokens/s of the two within 0.5–2x: one engine, one
   request shape, the same definitions — it catches a factor-2 error such as chunks counted as tokens or a
   wall clock missing half the run), since a 2-core machine shared with other work moves single pairs by
   0.4–2.5x (make bench, load average 10–17) and medians of 3 by far more than the bench's 5 % goal;
2. `specgate probe import --from vllm-bench` on the real result files that calibration wrote: one cell a file,
   the rate vLLM printed (`output_throughput`) reproduced exactly;
3. the null on the real engine: the same engine probed as two records, turn by turn (`--repetitions 1 --append`,
   5 turns each at concurrency 8), judged by `gate.checks.acceptance.comparison.judge_point` (compare's rule per point; the
   records themselves cannot go through `compare`, which refuses a "speculative" record without speculation)
   at α = 0.01: not "pays" (`--no-client-ceiling`: the rank test itself is under test here, and a cell marked
   client-bound would be set aside before it). By chance it could be, at rate ≤ α — the simulation
   (tests/gate/probe/test_null_calibration.py) is where that rate is held.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import harness
import pytest
import vllm_live

from gate.checks.acceptance.comparison import judge_point
from gate.evidence.probes import load_record
from gate.model.speedup.pays import Verdict

BENCH = harness.REPO / "bench" / "probe_vs_reference.py"
PYTHON = harness.REPO / ".venv" / "bin" / "python"
NULL_TURNS = 5
NULL_CONCURRENCY = 8


@pytest.fixture(scope="module")
def engine(vllm_python: Path, tiny_models: Path, e2e_logs: Path) -> Any:
    with vllm_live.running_arm("nospec", tiny_models, timeout=600, python=vllm_python, log_dir=e2e_logs) as eng:
        yield eng


@pytest.fixture(scope="module")
def calibration(engine: Any, tiny_models: Path, e2e_logs: Path, e2e_record: dict) -> tuple[dict[str, Any], Path]:
    work = e2e_logs / "probe-calibration"
    t0 = time.monotonic()
    r = subprocess.run([str(PYTHON), str(BENCH), "--engine-url", engine.url, "--tokenizer",
                        str(tiny_models / "target"), "--concurrency", "1,8", "--pairs", "3", "--settle", "1",
                        "--json", "--work", str(work)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    e2e_record["probe_calibration"] = {"seconds": time.monotonic() - t0, "summary": doc["summary"]}
    harness.log("probe vs vllm bench serve:\n" + "\n".join(line for line in r.stderr.splitlines()
                                                          if line.startswith("[calibrate]")))
    return doc, work


def test_short_calibration_puts_both_tools_side_by_side(calibration: tuple[dict[str, Any], Path]) -> None:
    doc, _ = calibration
    rows = {row["concurrency"]: row for row in doc["summary"]}
    assert sorted(rows) == [1, 8]
    for c, row in rows.items():
        for tool in ("probe", "vllm-bench"):
            assert row[tool]["pairs"] == 3, (c, tool)
            assert row[tool]["tokens_per_second"] > 0 and row[tool]["tpot_p50"] and row[tool]["ttft_p50"]
        ratio = row["tokens_per_second_ratio"]
        assert 0.5 <= ratio <= 2.0, f"c={c}: probe / vllm bench served tokens/s = {ratio:.3f} ({row})"


def test_probe_import_reads_a_real_vllm_bench_result(calibration: tuple[dict[str, Any], Path],
                                                     tmp_path: Path) -> None:
    _, work = calibration
    files = sorted(work.glob("bench-p*-c8.json"))
    assert len(files) >= 3
    out = tmp_path / "imported.json"
    r = subprocess.run([str(harness.SPECGATE), "probe", "import", *map(str, files), "--from", "vllm-bench",
                        "--arm", "baseline", "--engine", "vllm", "--engine-version", vllm_live.VLLM_VERSION,
                        "--temperature", "0", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rec = load_record(out)
    assert [(c.concurrency, c.repetition) for c in rec.cells] == [(8, i + 1) for i in range(len(files))]
    for cell, path in zip(rec.cells, files, strict=True):
        doc = json.loads(path.read_text())
        assert cell.output_tokens == doc["total_output_tokens"] and cell.failed_requests == 0
        assert cell.served_tokens_per_second == pytest.approx(doc["output_throughput"], rel=1e-12)
        assert cell.ttft_seconds.p50 == pytest.approx(doc["median_ttft_ms"] / 1000, rel=1e-9)
    assert rec.source is not None and rec.source.startswith("vllm-bench")


def test_same_engine_as_both_arms_is_not_pays(engine: Any, tmp_path: Path, e2e_record: dict) -> None:
    outs = {arm: tmp_path / f"{arm}.json" for arm in ("a", "b")}
    t0 = time.monotonic()
    for turn in range(NULL_TURNS):
        for arm in (("a", "b") if turn % 2 == 0 else ("b", "a")):  # ABBA, as the arms of a real campaign
            cmd = [str(harness.SPECGATE), "probe", "--engine-url", engine.url, "--arm", "baseline",
                   "--prompt-tokens", "32", "--output-tokens", "64", "--concurrency", str(NULL_CONCURRENCY),
                   "--repetitions", "1", "--warmup", "2" if turn == 0 else "0", "--no-client-ceiling",
                   "--out", str(outs[arm])]
            if turn:
                cmd.append("--append")
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr[-2000:]
    a, b = (load_record(outs[k]).cells for k in ("a", "b"))
    assert len(a) == len(b) == NULL_TURNS
    point = judge_point("null", NULL_CONCURRENCY, a, b, alpha=0.01)
    e2e_record["probe_null_same_engine"] = {"seconds": time.monotonic() - t0, "verdict": point.verdict.value,
                                            "speedup": point.speedup, "p_faster": point.p_faster,
                                            "p_slower": point.p_slower}
    harness.log(f"same engine as both arms: {point.reason}")
    assert point.p_faster is not None, point.reason  # the rank test ran (not set aside before it)
    assert point.verdict is not Verdict.PAYS, point.reason
