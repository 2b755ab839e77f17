"""The acceptance line's sub-checks (gate/checks/acceptance/): the Finding protocol, the fold, one
"does it pay" rule, and a line that reads no file once the evidence is gathered."""

from __future__ import annotations

import dataclasses
import random

import pytest

from gate.checks import acceptance
from gate.checks.acceptance import verdicts
from gate.checks.acceptance.finding import Finding
from gate.checks.acceptance.served_rate import compare
from gate.evidence import captures
from gate.evidence.gather import gather_metrics, request_for
from gate.model.speedup.pays import Verdict
from gate.plan.model import load_plan
from gate.status import Status
from tests.gate.helpers import PLANS, context


def test_subchecks_run_in_the_reports_order() -> None:
    names = [f.__module__.rsplit(".", 1)[-1] for f in acceptance.SUBCHECKS]
    assert names == ["target", "window_slo", "pays", "served_rate", "energy", "probes", "cohorts", "depth", "card",
                     "verification", "fingerprint"]


def test_finding_of_folds_a_subchecks_parts() -> None:
    f = Finding.of([Status.PASS, Status.FAIL], ["a", "", "b"], {"k": 1})
    assert (f.status, f.sentence, dict(f.values)) == (Status.FAIL, "a; b", {"k": 1})
    assert Finding.of([], [], None) == Finding() and Finding().status is None
    with pytest.raises(TypeError):
        f.values["k"] = 2  # type: ignore[index]


def test_break_even_verdict() -> None:
    assert verdicts.by_break_even(2.5, 2.2) is Verdict.PAYS
    assert verdicts.by_break_even(2.2, 2.2) is Verdict.DOES_NOT_PAY
    assert verdicts.by_break_even(None, 2.2) is Verdict.INCONCLUSIVE
    assert [verdicts.status(v) for v in Verdict] == [Status.PASS, Status.FAIL, Status.INCONCLUSIVE]


def _old_served_rate_status(significant: bool, side: str, ratio: float, min_speedup: float) -> Status:
    """The served-rate rule before it went through verdicts.by_rank_test (issue 20), for comparison."""
    if significant and side == "higher" and ratio >= min_speedup:
        return Status.PASS
    if significant:
        return Status.FAIL
    return Status.INCONCLUSIVE


def test_served_rate_status_is_the_one_rank_rule_and_decides_as_before() -> None:
    rng = random.Random(20)
    for _ in range(400):
        nb, ns = rng.randint(2, 7), rng.randint(2, 7)
        b = [round(rng.uniform(10, 30), 1) for _ in range(nb)]
        s = [round(rng.uniform(10, 40), 1) for _ in range(ns)]
        min_speedup = rng.choice([1.0, 1.2, 1.5])
        c = compare("m", b, s, unit="tok/s", source="t", alpha=0.05, min_speedup=min_speedup)
        side = "higher" if c.speculative.median > c.baseline.median else (
            "lower" if c.speculative.median < c.baseline.median else "equal")
        assert c.ratio_of_medians is not None
        assert c.status is _old_served_rate_status(c.significant, side, c.ratio_of_medians, min_speedup)


def test_the_line_reads_no_file_once_the_evidence_is_gathered(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml")
    ev = gather_metrics(plan, "pre", [], None, request_for(plan, wait=False))
    ctx = dataclasses.replace(context(plan), metrics=ev)

    def no_reads(*_: object) -> None:
        raise AssertionError("the acceptance line read a capture file")

    monkeypatch.setattr(captures, "read_capture", no_reads)
    line = acceptance.check(ctx)
    assert line.values["depth"]["plan_k"] == 3 and line.status is Status.PASS, line.reason
