"""`specgate tune` on the context axis (issue 39), on probe records shaped like the real ones
(tests/gate/tune/context_records.py: a real vLLM 0.32.0 probe record's envelope, seed 004's numbers in the cells).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.evidence.intake import record_defects
from gate.evidence.probes import load_record
from gate.model.speedup.context import ContextSample, sweep
from tests.gate.tune import context_records


def _tune(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["tune", *argv])
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_the_records_are_valid_evidence(tmp_path: Path) -> None:
    for path in context_records.write(tmp_path):
        assert record_defects(load_record(path)) == []


def test_seed_004_decomposition_from_the_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, spec = context_records.write(tmp_path)
    rc, out, err = _tune(capsys, "--probe", str(base), str(spec), "--format", "json")
    assert rc == 0, err
    ctx = json.loads(out)["context"]
    assert ctx["contexts"] == [2040, 32779, 131290]
    d = ctx["decompositions"][0]
    assert (d["concurrency"], d["k"], d["short_context"], d["long_context"]) == (1, 3, 2040, 131290)
    assert d["target_step_growth_ms"] == pytest.approx(5.70, abs=1e-9)
    assert d["verify_cycle_growth_ms"] == pytest.approx(7.19, abs=1e-9)
    assert d["draft_step_growth_ms"] == pytest.approx((7.19 - 5.70) / 3)
    assert d["draft_share"] == pytest.approx(0.0871, abs=5e-4)  # seed 004: ~8.8 % (its cycle grew 7.21 ms)
    lo, hi = d["draft_share_band"]
    assert lo < d["draft_share"] < hi and hi - lo < 0.4  # the repetitions' ±1 % spread, not a point
    points = {(p["context"], p["k"]): p for p in ctx["points"]}
    assert points[(2040, 3)]["acceptance_length"] == pytest.approx(3.362, abs=2e-3)
    assert points[(131290, 3)]["acceptance_length"] == pytest.approx(3.102, abs=2e-3)
    # seed 004: acceptance fell and the speedup still grew (L · step / cycle: 1.526 -> 1.605)
    assert points[(2040, 3)]["speedup"] == pytest.approx(3.362 * 14.14 / 31.16, rel=5e-3)
    assert points[(131290, 3)]["speedup"] == pytest.approx(3.102 * 19.84 / 38.35, rel=5e-3)
    assert points[(131290, 3)]["speedup"] > points[(2040, 3)]["speedup"]
    advice = ctx["advice"][0]
    assert [b["k"] for b in advice["best"]] == [3, 3, 3] and advice["stops_paying_at_prompt_tokens"] is None


def test_where_it_stops_paying_is_interpolated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A draft whose cycle grows with context until it no longer pays: the advice says where (k = 0 beyond)."""
    cycles = {2040: 31.16, 32779: 60.0, 131290: 80.0}  # speedups ~1.53, ~0.83, ~0.77
    base, spec = context_records.write(tmp_path, cycle_ms=cycles)
    rc, out, err = _tune(capsys, "--probe", str(base), str(spec), "--format", "json")
    assert rc == 0, err
    advice = json.loads(out)["context"]["advice"][0]
    assert [b["k"] for b in advice["best"]] == [3, 0, 0]
    s0, s1 = advice["best"][0]["speedup"], advice["best"][1]["speedup"]
    assert advice["stops_paying_at_prompt_tokens"] == pytest.approx(2040 + (s0 - 1) * (32779 - 2040) / (s0 - s1))
    assert "stops paying at about" in advice["text"]


def test_emit_vllm_writes_the_batch_schedule_and_the_context_advice_as_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, spec = context_records.write(tmp_path)
    frag = tmp_path / "frag.json"
    rc, out, err = _tune(capsys, "--probe", str(base), str(spec), "--emit", "vllm", "--point", "p2040-o256",
                         "--out", str(frag))
    assert rc == 0, err
    assert "num_speculative_tokens_per_seq_len" not in frag.read_text()
    assert "num_speculative_tokens_per_seq_len is not merged" in out
    assert "per context at B=1 (measured): 2040 tokens: k=3" in out
    rc, out, err = _tune(capsys, "--probe", str(base), str(spec), "--emit", "vllm", "--point", "p2040-o256")
    assert rc == 0 and "num_speculative_tokens" in out and "not merged" in err


def test_context_picture_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, spec = context_records.write(tmp_path)
    png = tmp_path / "ctx.png"
    rc, out, err = _tune(capsys, "--probe", str(base), str(spec), "--context-plot", str(png))
    assert rc == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "cycle decomposition B=1 k=3, 2040 -> 131290 prompt tokens" in out
    rc, _, err = _tune(capsys, "--probe", str(spec), "--context-plot", str(png))  # one arm: no speedup to draw
    assert rc == 3 and "--context-plot" in err


def test_one_context_is_no_sweep_and_missing_steps_no_decomposition() -> None:
    one = [ContextSample(2048, 1, k, 50.0 + k, 10.0 + k) for k in (0, 3)]
    assert sweep(one) is None
    two = [ContextSample(ctx, 1, k, 50.0 + k, None, None, 10.0 if k else None, 20.0 if k else None)
           for ctx in (256, 1920) for k in (0, 3)]
    got = sweep(two)
    assert got is not None and got.decompositions == () and got.points[1].acceptance_length == 3.0
