"""One tune orchestrator (gate.model.speedup.tune.run): `specgate tune` and the acceptance line's depth advice agree;
capture files are read by the evidence layer's reader (a FIFO is one line, exit 3, at once)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gate.cli import main
from gate.evidence.gather import gather_metrics, request_for
from gate.evidence.positions import from_evidence
from gate.model.speedup.advice import depth_advice
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.tune import DEFAULT_K_MAX, TuneInputs, default_k_max, run
from gate.plan.model import load_plan
from gate.tune.report import to_json
from tests.gate.helpers import PLANS

REPO = Path(__file__).resolve().parents[3]
SEED004 = PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml"


def _tune_json(*argv: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["tune", *argv, "--format", "json"]) == 0
    return json.loads(out.getvalue())


def test_tune_and_check_name_the_same_best_k_for_seed004() -> None:
    plan = load_plan(SEED004)
    positions = gather_metrics(plan, "pre", [], None, request_for(plan, wait=False)).positions
    advice = depth_advice(from_evidence(plan, positions))
    assert advice is not None
    check_best = {p["point"]: (p["best_k"], p["best_speedup"]) for p in advice.points}
    tune_best = {b["point"]: (b["k"], b["speedup"]) for b in _tune_json("--plan", str(SEED004))["best"]}
    assert check_best == tune_best == {"2K": (5, pytest.approx(1.6005264393702987)),
                                       "131K": (6, pytest.approx(1.76611683878814))}
    # the same orchestrator on the same inputs: the whole document, not only the best k
    assert to_json(run(from_evidence(plan, positions))) == _tune_json("--plan", str(SEED004))


def test_run_needs_counters_and_defaults_k_max_to_the_deepest_known() -> None:
    with pytest.raises(TuneInputError, match="no acceptance counters"):
        run(TuneInputs())
    assert default_k_max(TuneInputs(plan_k=3)) == DEFAULT_K_MAX
    assert default_k_max(TuneInputs(plan_k=12)) == 12


def test_a_fifo_capture_is_one_line_and_exit_3_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "gate.cli", "tune", "--captures", str(fifo), str(fifo),
                        "--target-step-ms", "10", "--verify-cycle-ms", "20"],
                       capture_output=True, text=True, cwd=REPO, timeout=8)
    assert p.returncode == 3, p.stderr
    assert time.monotonic() - t0 < 8
    assert len(p.stderr.strip().splitlines()) == 1 and "FIFO" in p.stderr and p.stdout == ""
