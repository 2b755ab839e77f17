"""Sub-check 11 (gate/checks/acceptance/fingerprint.py): per-position rates constant across capture windows warn.

The simulated windows are drawn as vLLM 0.32's synthetic sampler accepts drafts: each position at a fixed rate,
whatever the prompt (the rates are the fixture's accepted `synthetic_acceptance_rates` config, [0.9, 0.7, 0.5], in
tests/fixtures/oracle/vllm-0.32.0-speculative-knobs.json; vLLM's CPU sampler refuses synthetic mode, so no CPU
capture of it exists). The real-shaped windows draw each window's rates from a Beta around the same means, as
windows serving different prompts do. Counters have the shape `gate.evidence.positions.counters_between` gives.
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

from gate.checks import acceptance
from gate.checks.acceptance import fingerprint
from gate.evidence.base import MetricsEvidence
from gate.evidence.positions import PositionEvidence
from gate.model.speedup.counters import PositionCounters
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import context, tiny_plan

KNOBS = json.loads((Path(__file__).resolve().parents[3] / "fixtures" / "oracle"
                    / "vllm-0.32.0-speculative-knobs.json").read_text())
RATES = next(r["config"]["synthetic_acceptance_rates"] for r in KNOBS["accepted"]
             if r["config"].get("synthetic_acceptance_rates") == [0.9, 0.7, 0.5])


def _window(rng: random.Random, rates: list[float], drafts: int = 300) -> PositionCounters:
    """One window's per-position accepted counts: position i is reached only when i - 1 was accepted."""
    accepted = [0] * len(rates)
    for _ in range(drafts):
        for i, p in enumerate(rates):
            if rng.random() >= p:
                break
            accepted[i] += 1
    return PositionCounters(None, len(rates), float(drafts), tuple(float(a) for a in accepted), "captures x")


def _simulated(n: int = 8, seed: int = 7) -> list[PositionCounters]:
    rng = random.Random(seed)
    return [_window(rng, RATES) for _ in range(n)]


def _real(n: int = 8, seed: int = 7) -> list[PositionCounters]:
    rng = random.Random(seed)
    return [_window(rng, [rng.betavariate(20 * p, 20 * (1 - p)) for p in RATES]) for _ in range(n)]


def test_simulated_rates_are_flagged_with_their_rates() -> None:
    for seed in range(5):
        found = fingerprint.constant_rates(_simulated(seed=seed))
        assert found is not None, seed
        rates, dispersion, windows = found
        assert windows == 8 and dispersion <= fingerprint.noise_bound(7)
        assert all(abs(r - p) < 0.06 for r, p in zip(rates, RATES, strict=True)), rates


def test_prompt_dependent_rates_and_too_few_windows_are_not() -> None:
    assert all(fingerprint.constant_rates(_real(seed=s)) is None for s in range(5))
    assert fingerprint.constant_rates(_simulated(n=fingerprint.MIN_WINDOWS - 1)) is None
    assert fingerprint.constant_rates([]) is None


def test_the_line_warns_and_never_blocks_on_its_own() -> None:
    plan = plan_from_dict(tiny_plan("draft"))
    ev = MetricsEvidence(positions=[PositionEvidence(None, "captures x", windows=tuple(_simulated()))])
    found = fingerprint.sub(dataclasses.replace(context(plan), metrics=ev))
    assert found.status is Status.WARN and "possibly simulated acceptance in captures x" in found.sentence
    assert "SGLANG_SIMULATE_ACC_LEN" in found.sentence and found.values["fingerprint"][0]["windows"] == 8
    line = acceptance.check(dataclasses.replace(context(plan), metrics=ev))
    assert "possibly simulated" in line.reason and line.status is not Status.FAIL
    real = MetricsEvidence(positions=[PositionEvidence(None, "captures x", windows=tuple(_real()))])
    assert fingerprint.sub(dataclasses.replace(context(plan), metrics=real)) == fingerprint.Finding()
