"""`specgate tune --emit`: the best k per band of batch sizes as a schedule each engine reads back the same way.

The probe records are synthetic and say so: per-sequence plain step 10 ms at every concurrency B, L = 1.8 / 2.4 /
2.9 at k = 1 / 2 / 3, and the cycle (ms) chosen so the answer is known by hand (speedup = L · 10 / cycle, at a
measured k the predicted speedup is the measured served-rate ratio, tests/gate/tune/test_tune.py):

    B = 1: cycle 11 + k   → 1.500 / 1.846 / 2.071   best k = 3
    B = 2: cycle 12 + 2k  → 1.286 / 1.500 / 1.611   best k = 3
    B = 4: cycle 10 + 6k  → 1.125 / 1.091 / 1.036   best k = 1
    B = 8: cycle 20 + 5k  → 0.720 / 0.800 / 0.829   nothing pays: k = 0

k = 1's speedup falls through 1 between B = 4 (1.125) and B = 8 (0.720) at b* = 4 + 0.125 · 4 / 0.405 = 5.23, so
k = 0 starts at batch 6. Bands: 1-3 → 3, 4-5 → 1, 6+ → 0.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from exporter.engines.sglang.schedule import sglang_adaptive_schedule
from exporter.engines.trtllm.schedule import trtllm_schedule
from exporter.engines.vllm.schedule import vllm_config_schedule as speculative_config_schedule
from gate.cli import main

LENGTHS = {1: 1.8, 2: 2.4, 3: 2.9}
CYCLE = {1: lambda k: 11 + k, 2: lambda k: 12 + 2 * k, 4: lambda k: 10 + 6 * k, 8: lambda k: 20 + 5 * k}
SPEC = {"method": "ngram", "prompt_lookup_max": 3, "prompt_lookup_min": 1}


# What compare's vetting needs (gate.evidence.intake.probe_records): tune --probe reads through the same intake.
# Each cell is consistent with its mix (plausibility.cell_mix): 4 requests x 32 prompt / 25 output tokens = the
# cells' 128 prompt and 100 output tokens.
VETTED = {"engine_version": "0.32.0", "model": "tiny", "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
          "workload": [{"name": "m", "prompt_tokens": 32, "output_tokens": 25, "prompts_from": "synthetic"}]}


def _record(tmp_path: Path, k: int, engine: str = "vllm", spec: dict[str, object] | None = None) -> Path:
    cells: list[dict[str, object]] = []
    for b, cycle in CYCLE.items():
        L = LENGTHS.get(k)
        ms = 10.0 if k == 0 else cycle(k)
        wall = ms * 100 / (1000 * (L or 1.0) * b)
        cells.append({"mix": "m", "concurrency": b, "repetition": 1, "requests": 4, "output_tokens": 100, "prompt_tokens": 128,
                      "wall_seconds": wall, "served_tokens_per_second": 100 / wall, "failed_requests": 0,
                      "ttft_seconds": {}, "tpot_seconds": {}, "chunk_gap_seconds": {},
                      "acceptance_length": L, "drafts": None if k == 0 else 50})
    depth = {"num_steps": k, "eagle_topk": 1} if engine == "sglang" else {"num_speculative_tokens": k}
    doc = {"schema": "specgate.probe/1", "arm": "baseline" if k == 0 else "speculative", "engine": engine,
           **VETTED,
           "speculative": None if k == 0 else {**(spec or SPEC), **depth}, "cells": cells}
    path = tmp_path / f"probe-{engine}-k{k}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def records(tmp_path: Path) -> list[str]:
    return [str(_record(tmp_path, k)) for k in (0, 1, 2, 3)]


def _records(tmp_path: Path, engine: str, spec: dict[str, object]) -> list[str]:
    return [str(_record(tmp_path, k, engine, spec)) for k in (0, 1, 2, 3)]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["tune", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_emit_vllm_stdout_is_the_fragment_and_round_trips(capsys: pytest.CaptureFixture[str], records: list[str]) -> None:
    rc, out, err = _run(capsys, "--probe", *records, "--emit", "vllm")
    assert rc == 0, err
    fragment = json.loads(out)
    assert fragment == {**SPEC, "num_speculative_tokens": 3,
                        "num_speculative_tokens_per_batch_size": [[1, 3, 3], [4, 5, 1], [6, 65536, 0]]}
    schedule = speculative_config_schedule(fragment)  # vLLM 0.32's validation and lookup
    assert schedule is not None
    assert [schedule.k_at(b) for b in (1, 2, 3, 4, 5, 6, 8, 100_000)] == [3, 3, 3, 1, 1, 0, 0, 0]
    # the bands' predicted speedups go to stderr, labelled, never into the fragment
    assert "predicted" in err and "batch 1-3" in err and "k = 3: predicted speedup 1.611x" in err
    assert "batch 6+" in err and "k = 0: predicted speedup 1.000x" in err


def test_emit_vllm_out_file_and_json_report(capsys: pytest.CaptureFixture[str], records: list[str],
                                            tmp_path: Path) -> None:
    out_file = tmp_path / "spec.json"
    rc, out, err = _run(capsys, "--probe", *records, "--emit", "vllm", "--out", str(out_file), "--format", "json")
    assert rc == 0, err
    fragment = json.loads(out_file.read_text())
    assert fragment["num_speculative_tokens_per_batch_size"] == [[1, 3, 3], [4, 5, 1], [6, 65536, 0]]
    doc = json.loads(out)
    emit = doc["emit"]
    assert emit["label"] == "predicted" and emit["fragment"] == fragment
    bands = [(b["batch_start"], b["batch_end"], b["k"], b["measured_concurrencies"]) for b in emit["bands"]]
    assert bands == [(1, 3, 3, [1, 2]), (4, 5, 1, [4]), (6, None, 0, [8])]
    first = emit["bands"][0]
    # the band's point speedup is its worst measured concurrency's (B = 2: 29 / 18)
    assert first["predicted_speedup"] == pytest.approx(29 / 18)
    assert f"written to {out_file}" in err


def test_emit_sglang_adaptive_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    records = _records(tmp_path, "sglang", {"algorithm": "NEXTN"})  # SGLang runs NEXTN as EAGLE: adaptive runs it
    rc, out, err = _run(capsys, "--probe", *records, "--emit", "sglang")
    assert rc == 0, err
    config = json.loads(out)
    # batches 1-3: every k pays at B = 1 and 2; batches 4-5: only k = 1 and 2 pay at B = 4 (k = 3's 1.036 pays too)
    assert config == {"1": {"candidate_steps": [1, 2, 3]}, "4": {"candidate_steps": [1]}, "6": {"candidate_steps": [0]}}
    schedule = sglang_adaptive_schedule(config)
    assert [schedule.k_at(b) for b in (1, 3, 4, 5, 6, 64)] == [3, 3, 1, 1, 0, 0]
    assert "--speculative-adaptive" in err and "--speculative-num-steps 3" in err


@pytest.mark.parametrize(("engine", "spec", "found"), [
    ("vllm", SPEC, "measured on vllm"),  # vLLM ngram records: not SGLang's evidence
    ("sglang", {"algorithm": "NGRAM"}, "measured NGRAM"),  # adaptive runs EAGLE/EAGLE3 only
])
def test_emit_sglang_refuses_what_it_does_not_schedule(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       engine: str, spec: dict[str, object], found: str) -> None:
    rc, out, err = _run(capsys, "--probe", *_records(tmp_path, engine, spec), "--emit", "sglang")
    assert rc == 3 and out == "" and "not applicable" in err and found in err, err
    assert len(err.strip().splitlines()) == 1


def test_emit_sglang_never_starts_at_0_steps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Nothing pays at B = 8: every candidate is 0, and SGLang starts among them: no --speculative-num-steps 0."""
    records = _records(tmp_path, "sglang", {"algorithm": "EAGLE"})
    rc, out, err = _run(capsys, "--probe", *records, "--concurrency", "8", "--emit", "sglang")
    assert rc == 3 and out == "" and "no start speculates" in err and "num-steps 0" not in err


def test_emit_trtllm_draft_len_schedule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    records = _records(tmp_path, "trtllm", SPEC)
    rc, out, err = _run(capsys, "--probe", *records, "--emit", "trtllm")
    assert rc == 0, err
    fragment = json.loads(out)
    assert fragment == {"max_draft_len": 3, "draft_len_schedule": {"3": 3, "5": 1}}
    schedule = trtllm_schedule({int(k): v for k, v in fragment["draft_len_schedule"].items()}, 3)
    assert [schedule.k_at(b) for b in (1, 3, 4, 5, 6, 500)] == [3, 3, 1, 1, 0, 0]


def test_emit_when_nothing_pays_sets_k_0_everywhere(capsys: pytest.CaptureFixture[str], records: list[str],
                                                     tmp_path: Path) -> None:
    """At B = 8 alone no depth pays: vLLM gets k = 0 at every batch (a valid schedule, said so); TensorRT-LLM, whose
    smallest key must run max_draft_len, cannot say it: one line, exit 3."""
    rc, out, err = _run(capsys, "--probe", *records, "--concurrency", "8", "--emit", "vllm")
    assert rc == 0, err
    fragment = json.loads(out)
    assert fragment["num_speculative_tokens"] == 3
    assert fragment["num_speculative_tokens_per_batch_size"] == [[1, 65536, 0]]
    schedule = speculative_config_schedule(fragment)
    assert schedule is not None and schedule.max_k == 0
    assert "pay at no measured concurrency" in err and "k = 0 at every batch" in err
    rc, out, err = _run(capsys, "--probe", *_records(tmp_path, "trtllm", SPEC), "--concurrency", "8", "--emit",
                        "trtllm")
    assert rc == 3 and out == "" and "TensorRT-LLM requires the smallest" in err
    assert len(err.strip().splitlines()) == 1


def test_emit_needs_concurrency_predictions(capsys: pytest.CaptureFixture[str]) -> None:
    ngram = Path(__file__).resolve().parents[2] / "fixtures" / "vllm"
    rc, _, err = _run(capsys, "--captures", str(ngram / "metrics-ngram-before.txt"),
                      str(ngram / "metrics-ngram-after.txt"), "--emit", "vllm")
    assert rc == 3 and "--emit needs predicted speedups at measured concurrencies" in err


def test_out_without_emit_is_refused(capsys: pytest.CaptureFixture[str], records: list[str], tmp_path: Path) -> None:
    rc, _, err = _run(capsys, "--probe", *records, "--out", str(tmp_path / "x.json"))
    assert rc == 3 and "--out FILE writes the --emit fragment" in err


def test_emit_on_real_vllm_probe_records(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Real vLLM 0.32 CPU ngram probe records (tests/fixtures/tune-emit/README.md): concurrency 4 and 8 are set
    aside (cycle cheaper than the step under load), so concurrency 1's best k = 1 runs at every batch, and the
    batches above it are said to be unmeasured."""
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "tune-emit"
    files = [str(fixtures / f"vllm-0.32.0-ngram-probe-k{k}.json") for k in (0, 1, 3)]
    out_file = tmp_path / "spec.json"
    rc, out, err = _run(capsys, "--probe", *files, "--emit", "vllm", "--out", str(out_file))
    assert rc == 0, err
    fragment = json.loads(out_file.read_text())
    assert fragment == {"method": "ngram", "prompt_lookup_max": 3, "prompt_lookup_min": 1,
                        "num_speculative_tokens": 1, "num_speculative_tokens_per_batch_size": [[1, 65536, 1]]}
    assert speculative_config_schedule(fragment) is not None
    assert "is cheaper than the plain step" in out and "concurrency 4" in out
    assert "batches above concurrency 1 (the largest measured) run k = 1 too: not measured there" in out
