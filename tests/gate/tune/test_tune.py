"""specgate tune: acceptance by depth, cost by depth, predicted speedup, the command's outputs.

Numbers cite their source: the real vLLM ngram capture in tests/fixtures/vllm/ (k = 3, per
position 446/393/331 of 522 drafts -> L(1) 1.854, L(2) 2.607, L(3) 3.241 exactly).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gate.cli import main
from gate.model.speedup.cost import DraftBand
from gate.model.speedup.curves import TuneInputError, acceptance_curve, wilson
from gate.tune.inputs import from_captures, parse_draft_band

REPO = Path(__file__).resolve().parents[3]
VLLM = REPO / "tests" / "fixtures" / "vllm"
NGRAM = [VLLM / "metrics-ngram-before.txt", VLLM / "metrics-ngram-after.txt"]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["tune", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


# --- acceptance by depth ----------------------------------------------------------------------

def test_real_ngram_capture_gives_exact_lengths_and_marks_beyond_k3_extrapolated():
    c = from_captures(NGRAM)
    assert (c.k, c.drafts, c.accepted_per_position) == (3, 522, (446, 393, 331))
    curve = acceptance_curve(c, 8)
    got = {p.k: (p.acceptance_length, p.basis) for p in curve.points}
    assert got[1] == (1 + 446 / 522, "exact")  # 1.854
    assert got[2] == (1 + (446 + 393) / 522, "exact")  # 2.607
    assert got[3] == (1 + (446 + 393 + 331) / 522, "measured")  # 3.241
    assert [round(got[k][0], 3) for k in (1, 2, 3)] == [1.854, 2.607, 3.241]
    assert all(got[k][1] == "extrapolated" for k in range(4, 9))
    for p in curve.points:
        if p.basis != "extrapolated":
            # exact arithmetic on a sample of 522 drafts: the band is the positions' Wilson intervals
            assert p.model_low == p.model_high == p.acceptance_length
            assert p.low < p.acceptance_length < p.high
    lo, hi = wilson(446, 522)
    assert (curve.at(1).low, curve.at(1).high) == pytest.approx((1 + lo, 1 + hi))


def test_draft_band_parsing():
    assert parse_draft_band("0.5") == DraftBand(0.5, None, "--draft-step-ms")
    assert parse_draft_band("0.5:5.67") == DraftBand(0.5, 5.67, "--draft-step-ms")
    assert parse_draft_band(":2") == DraftBand(None, 2.0, "--draft-step-ms")
    with pytest.raises(TuneInputError):
        parse_draft_band("fast")


# --- the command ------------------------------------------------------------------------------

def test_cli_json_on_the_real_ngram_capture(capsys):
    rc, out, _ = run_cli(capsys, "--captures", *map(str, NGRAM), "--format", "json")
    assert rc == 0
    doc = json.loads(out)
    assert set(doc) >= {"points", "best", "crossover_concurrency", "assumptions"}
    pts = {p["k"]: p for p in doc["points"]}
    assert [pts[k]["acceptance_length"] for k in (1, 2, 3)] == pytest.approx([1.8544, 2.6073, 3.2414], abs=5e-5)
    assert [round(pts[k]["acceptance_length"], 3) for k in (1, 2, 3)] == [1.854, 2.607, 3.241]
    # ngram proposed 1473 draft tokens in 522 drafts (2.82 < k = 3): the depth varied, so L by depth is a lower bound
    # (issue 22), never "exact"; its band runs up to 1 + k'
    assert [pts[k]["acceptance_basis"] for k in (1, 2, 3)] == ["lower_bound"] * 3
    assert [pts[k]["acceptance_high"] for k in (1, 2, 3)] == [2.0, 3.0, 4.0]
    assert any("2.82 draft tokens per draft, below k = 3" in a and "lower bound" in a for a in doc["assumptions"])
    assert {pts[k]["acceptance_basis"] for k in range(4, 9)} == {"extrapolated"}
    assert pts[1]["concurrency"] is None and doc["best"] == [] and doc["crossover_concurrency"] is None


def test_cli_text_with_declared_costs(capsys):
    rc, out, _ = run_cli(capsys, "--captures", *map(str, NGRAM), "--target-step-ms", "2.26",
                         "--verify-cycle-ms", "7.71", "--k-max", "5")
    assert rc == 0
    assert "<- best" in out and "assumptions:" in out and "extrapolated" in out
    assert "t_verify assumed constant in k" in out


def test_cli_plot_writes_a_png(capsys, tmp_path):
    png = tmp_path / "t.png"
    rc, _, err = run_cli(capsys, "--captures", *map(str, NGRAM), "--target-step-ms", "2.26",
                         "--verify-cycle-ms", "7.71", "--plot", str(png))
    assert rc == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, msg", [
    ([], "needs a source"),
    (["--captures", str(NGRAM[0])], "BEFORE and AFTER"),
    (["--captures", str(NGRAM[0]), "/nonexistent/after.txt"], "after.txt"),
    (["--captures", *map(str, NGRAM), "--target-step-ms", "2"], "go together"),
    (["--captures", *map(str, NGRAM), "--target-step-ms", "2", "--verify-cycle-ms", "9", "--draft-step-ms", "x"],
     "LOW or LOW:HIGH"),
    (["--prometheus", "http://127.0.0.1:9"], "not supported yet"),
    (["--exporter", "http://127.0.0.1:9"], "exporter http://127.0.0.1:9"),
    (["--plan", "/nonexistent.yaml"], "plan file not found"),
    (["--input", "/nonexistent.yaml"], "tune input not found"),
    (["--captures", str(VLLM / "metrics-nospec-before.txt"), str(VLLM / "metrics-nospec-after.txt")],
     "no speculative-decoding counters"),
])
def test_bad_input_is_one_line_exit_3(capsys, argv, msg):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 3 and out == ""
    assert msg in err and len(err.strip().splitlines()) == 1, err


def test_bad_flag_value_is_exit_3(capsys):
    with pytest.raises(SystemExit) as e:
        main(["tune", "--k-max", "0", "--captures", *map(str, NGRAM)])
    assert e.value.code == 3


# --- probe records (gate/probe/record.py) -----------------------------------------------------

# What compare's vetting needs (gate.evidence.intake.probe_records): tune --probe reads through the same intake.
# Each cell is consistent with its mix (plausibility.cell_mix): 4 requests x 32 prompt / 25 output tokens = the
# cells' 128 prompt and 100 output tokens.
VETTED = {"engine_version": "0.32.0", "model": "tiny", "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
          "workload": [{"name": "m", "prompt_tokens": 32, "output_tokens": 25, "prompts_from": "synthetic"}]}


def _record(tmp_path: Path, k: int, cells: list[tuple[int, float, float | None]]) -> Path:
    """A probe record: k = 0 is the baseline arm; cells are (concurrency, wall_seconds, L) at 100 output tokens."""
    doc = {"schema": "specgate.probe/1", "arm": "baseline" if k == 0 else "speculative", "engine": "vllm",
           **VETTED,
           "speculative": None if k == 0 else {"method": "ngram", "num_speculative_tokens": k},
           "cells": [{"mix": "m", "concurrency": b, "repetition": 1, "requests": 4, "output_tokens": 100, "prompt_tokens": 128,
                      "wall_seconds": wall, "served_tokens_per_second": 100 / wall, "failed_requests": 0,
                      "ttft_seconds": {}, "tpot_seconds": {}, "chunk_gap_seconds": {},
                      "acceptance_length": length, "drafts": None if k == 0 else 50}
                     for b, wall, length in cells]}
    path = tmp_path / f"probe-k{k}.json"
    path.write_text(json.dumps(doc))
    return path


def test_probe_records_fit_cost_by_k_and_find_the_crossover(capsys, tmp_path):
    lengths = {1: 1.8, 2: 2.4, 3: 2.9}
    # per-sequence ms = 1000 * B * wall / 100: plain step 10 ms at B = 1 and 8;
    # cycle 11 + k ms at B = 1, 30 + 5k ms at B = 8 (wall = cycle * 100 / (1000 * L * B))
    files = [_record(tmp_path, 0, [(1, 1.0, None), (8, 0.125, None)])]
    for k, L in lengths.items():
        files.append(_record(tmp_path, k, [(1, (11 + k) * 100 / (1000 * L), L),
                                           (8, (30 + 5 * k) * 100 / (1000 * L * 8), L)]))
    rc, out, err = run_cli(capsys, "--probe", *map(str, files), "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    pts = {(p["concurrency"], p["k"]): p for p in doc["points"]}
    for k, L in lengths.items():
        # at a measured k the prediction is the measured served-rate ratio: wall_baseline / wall_k
        assert pts[(1, k)]["speedup"] == pytest.approx(1.0 / ((11 + k) * 100 / (1000 * L)))
        assert pts[(1, k)]["speedup"] == pytest.approx(L * 10 / (11 + k))
        assert pts[(8, k)]["speedup"] == pytest.approx(L * 10 / (30 + 5 * k))
        assert pts[(1, k)]["acceptance_basis"] == "measured" and pts[(1, k)]["cost_basis"] == "measured"
    assert {(b["concurrency"], b["k"]) for b in doc["best"]} == {(1, 3), (8, 3)}
    s1, s8 = pts[(1, 3)]["speedup"], pts[(8, 3)]["speedup"]
    assert doc["crossover_concurrency"] == pytest.approx(1 + (s1 - 1) * 7 / (s1 - s8))
    assert any("depth cannot be resolved" in a for a in doc["assumptions"])
    assert any("fitted by least squares" in a for a in doc["assumptions"])


def test_probe_records_with_capture_counters_extrapolate_depth(capsys, tmp_path):
    files = [_record(tmp_path, 0, [(1, 1.0, None)]),
             _record(tmp_path, 3, [(1, 14 * 100 / (1000 * 3.2414), 3.2414)])]
    rc, out, err = run_cli(capsys, "--probe", *map(str, files), "--captures", *map(str, NGRAM), "--point", "m",
                           "--format", "json", "--k-max", "5")
    assert rc == 0, err
    pts = {p["k"]: p for p in json.loads(out)["points"]}
    assert pts[5]["acceptance_basis"] == "extrapolated" and pts[5]["cost_basis"] == "declared"
    assert pts[3]["speedup"] == pytest.approx((1 + 1170 / 522) * 10 / 14, rel=1e-4)


def test_bad_probe_record_is_one_line_exit_3(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"arm": "speculative", "cells": []}')
    rc, out, err = run_cli(capsys, "--probe", str(bad))
    assert rc == 3 and len(err.strip().splitlines()) == 1


# --- the gate's acceptance line: plan k against tune's best k -----------------------------------

def _gathered_positions(plan):
    """The plan's per-position counters as `check` gathers them (gate.evidence.gather, phase pre)."""
    from gate.evidence.gather import gather_metrics, request_for

    return gather_metrics(plan, "pre", [], None, request_for(plan, wait=False)).positions


def test_depth_advice_for_seed004_reports_the_plan_k_against_the_best_k():
    from gate.evidence.positions import from_evidence
    from gate.model.speedup.advice import depth_advice
    from gate.plan.model import load_plan

    plan = load_plan(REPO / "examples" / "plans" / "seed004-qwen3.6-35b-a3b-mtp.yaml")
    adv = depth_advice(from_evidence(plan, _gathered_positions(plan)))
    assert adv is not None and adv.plan_k == 3
    by_point = {p["point"]: p for p in adv.points}
    assert set(by_point) == {"2K", "131K"}
    assert by_point["2K"]["plan_speedup"] == pytest.approx((1 + 1103 / 467) * 14.14 / 31.16)
    # no depth's whole band lies above k = 3's: the declared split (0 .. 5.67 ms) cannot decide
    assert adv.warnings == [] and all(p["dominating_k"] == [] for p in adv.points)


def test_depth_advice_is_silent_without_per_position_evidence():
    from gate.evidence.positions import from_evidence
    from gate.model.speedup.advice import depth_advice
    from gate.plan.model import load_plan

    plan = load_plan(REPO / "examples" / "plans" / "seed002-ling-3.0-flash-dspark.yaml")
    assert depth_advice(from_evidence(plan, _gathered_positions(plan))) is None


@pytest.fixture
def exporter_page(monkeypatch):
    """The exporter's own exposition of the real ngram capture (tests/golden/vllm-ngram.prom), as the bounded fetch's
    answer (gate.inputs.fetch; its own tests serve real sockets)."""
    from gate.inputs import fetch

    page = (REPO / "tests" / "golden" / "vllm-ngram.prom").read_bytes()

    def answer(url, **_):
        assert url == "http://exporter.test:9400/metrics"
        return fetch.Answer(url, 200, {}, page)

    monkeypatch.setattr(fetch, "fetch", answer)


def test_exporter_lifetime_counters_give_the_same_exact_lengths(capsys, exporter_page):
    rc, out, err = run_cli(capsys, "--exporter", "http://exporter.test:9400", "--format", "json")
    assert rc == 0, err
    pts = {p["k"]: p for p in json.loads(out)["points"]}
    assert [round(pts[k]["acceptance_length"], 3) for k in (1, 2, 3)] == [1.854, 2.607, 3.241]
    # the same 1473 draft tokens in 522 drafts as the captures: the depth varied, L by depth is a lower bound
    assert pts[3]["acceptance_basis"] == "lower_bound" and pts[4]["acceptance_basis"] == "extrapolated"


def test_concurrency_filter_keeps_only_the_asked_concurrencies(capsys, tmp_path):
    files = [_record(tmp_path, 0, [(1, 1.0, None), (8, 0.125, None)]),
             _record(tmp_path, 3, [(1, 14 * 100 / (1000 * 2.9), 2.9), (8, 45 * 100 / (1000 * 2.9 * 8), 2.9)])]
    rc, out, err = run_cli(capsys, "--probe", *map(str, files), "--concurrency", "8", "16", "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert {p["concurrency"] for p in doc["points"]} == {8}
    assert any("no cost data at concurrency 16" in a for a in doc["assumptions"])


def test_plan_with_measured_rates_gives_cycle_from_length_over_rate(tmp_path):
    from gate.plan.model import plan_from_dict
    from gate.tune.inputs import from_plan

    plan = plan_from_dict({
        "name": "rates", "target": {"name": "t"}, "engine": {"kind": "vllm", "speculative": {
            "method": "ngram", "num_speculative_tokens": 3}},
        "costs": [{"point": "p", "baseline_tokens_per_second": 50.0, "speculative_tokens_per_second": 80.0,
                   "acceptance_length": 3.2, "source": "test"}],
        "evidence": {"captures": [{"point": "p", "files": [str(f) for f in NGRAM]}]},
    })
    got = from_plan(plan)
    assert got.plan_k == 3 and got.counters[0].accepted_per_position == (446, 393, 331)
    step, cycle = sorted(got.costs, key=lambda c: c.k)
    assert (step.k, step.ms) == (0, pytest.approx(1000 / 50))  # 1 / r_baseline
    assert (cycle.k, cycle.ms) == (3, pytest.approx(1000 * 3.2 / 80))  # L / r_speculative


def test_acceptance_line_warns_when_another_depths_whole_band_lies_above_the_plans():
    # seed 004's 2K counters with a cycle barely dearer than a plain step (14.5 vs 14.14 ms at k = 3):
    # one draft step costs at most (14.5 - 14.14) / 3 = 0.12 ms, so deeper pays in every case of the band
    from gate.plan.model import plan_from_dict
    from gate.verdict.evaluate import evaluate

    caps = REPO / "examples" / "plans" / "captures"
    plan = plan_from_dict({
        "name": "cheap-draft", "target": {"name": "unsloth/Qwen3.6-35B-A3B-NVFP4-Fast"},
        "engine": {"kind": "vllm", "speculative": {"method": "mtp", "num_speculative_tokens": 3}},
        "slo": {"target_acceptance_length": 2.0, "target_source": "assumed for this test"},
        "costs": [{"point": "2K", "verify_cycle_ms": 14.5, "target_step_ms": 14.14, "source": "test"}],
        "evidence": {"captures": [{"point": "2K", "files": [str(caps / "seed004-0-start.txt"),
                                                           str(caps / "seed004-1-after-2k.txt")]}]},
    })
    line = evaluate(plan).checks["acceptance"]
    depth = line.values["depth"]
    assert depth["plan_k"] == 3 and depth["points"][0]["dominating_k"] == [4, 5, 6, 7, 8]
    assert line.status.value == "warn", line.reason
    assert "lies wholly above the plan's k = 3" in line.reason


def test_acceptance_line_gives_no_depth_advice_on_evidence_it_rejected():
    from gate.plan.model import plan_from_dict
    from gate.verdict.evaluate import evaluate

    caps = REPO / "examples" / "plans" / "captures"
    plan = plan_from_dict({
        "name": "foreign", "target": {"name": "another-model"},
        "engine": {"kind": "vllm", "speculative": {"method": "mtp", "num_speculative_tokens": 3}},
        "slo": {"target_acceptance_length": 2.0, "target_source": "assumed for this test"},
        "costs": [{"point": "2K", "verify_cycle_ms": 14.5, "target_step_ms": 14.14, "source": "test"}],
        "evidence": {"captures": [{"point": "2K", "files": [str(caps / "seed004-0-start.txt"),
                                                           str(caps / "seed004-1-after-2k.txt")]}]},
    })
    line = evaluate(plan).checks["acceptance"]
    assert "depth" not in line.values and "specgate tune" not in line.reason
