"""tune is bounded and refuses the impossible (issue 21, item 8): --k-max within MAX_SPECULATIVE_DEPTH,
finite and possible costs (no cycle cheaper than a plain step), contradictory per-position and total
counters, a minimum of drafts before any L(k), a band that reflects n, and no NaN/Infinity in its JSON."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from gate.cli import main
from gate.model.depth import MAX_SPECULATIVE_DEPTH
from gate.model.speedup.cost import CostSample, cycle_models
from gate.model.speedup.counters import PositionCounters
from gate.model.speedup.curves import MIN_DRAFTS, TuneInputError, acceptance_curve, wilson
from gate.model.speedup.tune import TuneInputs, run

REPO = Path(__file__).resolve().parents[3]
VLLM = REPO / "tests" / "fixtures" / "vllm"
NGRAM = [str(VLLM / "metrics-ngram-before.txt"), str(VLLM / "metrics-ngram-after.txt")]


def _tune(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    t0 = time.perf_counter()
    try:
        rc = main(["tune", *argv])
    except SystemExit as e:  # a usage error: argparse exits (with 3, exit_invalid_on_usage_error)
        rc = int(e.code or 0)
    assert time.perf_counter() - t0 < 20
    out = capsys.readouterr()
    return rc, out.out, out.err


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc, out, err = _tune(capsys, *argv)
    assert rc == 3 and not out.strip(), (rc, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("k", ["100000000", str(MAX_SPECULATIVE_DEPTH + 1), "0", "-3", "nan"])
def test_k_max_beyond_any_engine_is_refused(capsys: pytest.CaptureFixture[str], k: str) -> None:
    """`--k-max 100000000` ended in MemoryError (exit 1, "fail"); now one line, exit 3, at once."""
    _refused(capsys, "--captures", *NGRAM, "--k-max", k, "--target-step-ms", "10", "--verify-cycle-ms", "20")


def test_k_max_at_the_bound_answers(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _tune(capsys, "--captures", *NGRAM, "--k-max", str(MAX_SPECULATIVE_DEPTH),
                       "--target-step-ms", "10", "--verify-cycle-ms", "20", "--format", "json")
    assert rc == 0 and max(p["k"] for p in json.loads(out)["points"]) == MAX_SPECULATIVE_DEPTH


def test_the_orchestrator_refuses_depths_no_engine_drafts() -> None:
    deep = PositionCounters(None, MAX_SPECULATIVE_DEPTH + 1, 1000, tuple([1.0] * (MAX_SPECULATIVE_DEPTH + 1)), "x")
    with pytest.raises(TuneInputError, match="deeper than any engine drafts"):
        run(TuneInputs(counters=[deep]))
    ok = PositionCounters(None, 3, 500, (400, 300, 200), "x")
    with pytest.raises(TuneInputError, match="outside 1"):
        run(TuneInputs(counters=[ok]), k_max=10**8)


@pytest.mark.parametrize(("step", "cycle"), [("nan", "20"), ("inf", "20"), ("10", "inf"), ("10", "1e300"),
                                             ("-1", "20"), ("20", "10"), ("10", "9.99")])
def test_non_finite_or_impossible_costs_are_refused(capsys: pytest.CaptureFixture[str], step: str, cycle: str) -> None:
    """nan/inf wrote NaN/Infinity into JSON; a verify cycle cheaper than a plain step predicted a free cycle."""
    _refused(capsys, "--captures", *NGRAM, "--target-step-ms", step, "--verify-cycle-ms", cycle, "--format", "json")


@pytest.mark.parametrize("band", ["nan", "inf", "0:inf", "nan:1"])
def test_non_finite_draft_step_band_is_refused(capsys: pytest.CaptureFixture[str], band: str) -> None:
    _refused(capsys, "--captures", *NGRAM, "--target-step-ms", "10", "--verify-cycle-ms", "20",
             "--draft-step-ms", band)


def test_a_written_cycle_cheaper_than_the_step_is_refused() -> None:
    samples = [CostSample("p", 4, 0, 12.0, "plan costs"), CostSample("p", 4, 3, 11.5, "plan costs")]
    with pytest.raises(TuneInputError, match="cheaper than the plain step"):
        cycle_models(samples)
    with pytest.raises(TuneInputError, match="positive number"):
        CostSample("p", None, 0, math.nan, "x")


def test_a_measured_cycle_cheaper_than_the_step_is_set_aside_with_a_note() -> None:
    """Probe cells of two arms measured under different load can give an impossible pair (seen on real vLLM under
    CPU contention: k = 2 cycle 5.69 ms against a 7.15 ms plain step at concurrency 4). That is a measurement to set
    aside, named in the notes, never a cost model and never exit 3; the other concurrency is still modelled."""
    samples = [CostSample("p", 4, 0, 7.15, "probe base.json", measured=True),
               CostSample("p", 4, 2, 5.69, "probe spec.json", measured=True),
               CostSample("p", 1, 0, 7.0, "probe base.json", measured=True),
               CostSample("p", 1, 2, 9.0, "probe spec.json", measured=True)]
    notes: list[str] = []
    models = cycle_models(samples, notes=notes)
    assert [(m.point, m.concurrency) for m in models] == [("p", 1)]
    assert len(notes) == 1 and "cheaper than the plain step" in notes[0] and "concurrency 4" in notes[0]


def _contradictory(tmp_path: Path, delta: float) -> list[str]:
    before, after = (Path(f) for f in NGRAM)
    text = after.read_text(encoding="utf-8").replace(
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 1170.0',
        f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="tiny"}} {1170.0 + delta}')
    (tmp_path / "after.txt").write_text(text, encoding="utf-8")
    return [str(before), str(tmp_path / "after.txt")]


@pytest.mark.parametrize("delta", [10.0, -500.0, 2.0])  # +300 would also break generated >= drafts + accepted
def test_contradictory_per_position_and_total_counters_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             delta: float) -> None:
    """The per-position counters (L 3.241) and the total (another L) used to give an L silently."""
    err = _refused(capsys, "--captures", *_contradictory(tmp_path, delta))
    assert "contradictory counters" in err


def test_consistent_counters_are_the_control(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, _ = _tune(capsys, "--captures", *NGRAM)
    assert rc == 0


@pytest.mark.parametrize("drafts", [1, 7, MIN_DRAFTS - 1])
def test_a_minimum_of_drafts_before_any_length_by_depth(drafts: int) -> None:
    """'best k = 6' came from one draft with a zero-width band."""
    c = PositionCounters(None, 6, drafts, tuple([float(drafts)] * 6), "one lucky draft")
    with pytest.raises(TuneInputError, match=f"at least {MIN_DRAFTS}"):
        acceptance_curve(c, 8)


def test_the_band_reflects_the_number_of_drafts() -> None:
    """Every position accepted in every draft: the band is not zero wide, and narrows as drafts grow."""
    widths = []
    for n in (MIN_DRAFTS, 10 * MIN_DRAFTS, 100 * MIN_DRAFTS):
        curve = acceptance_curve(PositionCounters(None, 6, n, tuple([float(n)] * 6), "all accepted"), 6)
        at6 = curve.at(6)
        assert at6 is not None and at6.acceptance_length == 7.0 and at6.high == 7.0
        widths.append(at6.high - at6.low)
    assert widths[0] > widths[1] > widths[2] > 0
    lo, hi = wilson(50, 100)
    assert (lo, hi) == pytest.approx((0.4038, 0.5962), abs=1e-4)  # the textbook Wilson interval of 50/100


def test_best_depth_on_thin_counters_is_said_to_be_undecided(capsys: pytest.CaptureFixture[str]) -> None:
    """With few drafts the measured depth's band reaches the best depth's: the text says the point estimate
    cannot decide (a band that reflects n)."""
    rc, out, _ = _tune(capsys, "--captures", *NGRAM, "--target-step-ms", "10", "--verify-cycle-ms", "10.5")
    assert rc == 0
    assert "is a point estimate" in out or "best" in out


def test_tune_json_is_strict(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _tune(capsys, "--captures", *NGRAM, "--target-step-ms", "10", "--verify-cycle-ms", "20",
                       "--format", "json")
    assert rc == 0
    json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
