"""gate.model.invariants: the acceptance target at each mix's k, and the rejection default a plan leaves unknown.

The schedule is the one `specgate tune --emit vllm` writes for tests/e2e/test_depth_varies.py's crafted records
(`[[1, 3, 3], [4, 5, 1], [6, 65536, 0]]`: k = 3 at batch 1-3, 1 at 4-5, 0 from 6), as in
tests/gate/checks/acceptance/test_probes_plain.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from gate.model.invariants import PLAN_SIDE, invariant_of, rejection_change, target_at_mix
from gate.plan.model import PlanError, plan_from_dict

RANGES = [[1, 3, 3], [4, 5, 1], [6, 65536, 0]]


def _plan(target: float, mixes: list[tuple[str, int]]) -> Any:
    return plan_from_dict({
        "name": "p", "target": {"name": "m"},
        "engine": {"kind": "vllm", "version": "0.32.0",
                   "speculative": {"method": "ngram", "num_speculative_tokens": 3,
                                   "num_speculative_tokens_per_batch_size": RANGES}},
        "workload": [{"name": n, "concurrency": c, "prompt_tokens": 256, "output_tokens": 512} for n, c in mixes],
        "slo": {"target_acceptance_length": target}})


def test_a_k0_mix_is_exempt_from_the_target() -> None:
    # plain decoding there (issue 37 item 6): judged against the baseline, not against an acceptance target
    assert target_at_mix(3.5, "big", 8, 0) is None
    plan = _plan(3.5, [("chat", 1), ("big", 8)])
    assert plan.depth_reading.schedule is not None and plan.depth_reading.schedule.k_at(8) == 0


def test_the_target_still_holds_at_every_mix_with_k_above_0() -> None:
    got = target_at_mix(2.5, "mid", 4, 1)
    assert got is not None and invariant_of(got) == "plausibility"
    assert got == ("not possible: mix 'mid' at concurrency 4 runs k = 1 under the depth schedule: a target of 2.5 "
                   "is above 1 + k = 2")
    assert target_at_mix(2.0, "mid", 4, 1) is None  # exactly 1 + k
    assert target_at_mix(None, "mid", 4, 1) is None
    with pytest.raises(PlanError, match="mix 'mid' at concurrency 4 runs k = 1 under the depth schedule"):
        _plan(2.5, [("chat", 1), ("mid", 4), ("big", 8)])


def test_a_plan_of_no_version_is_told_how_to_fix_its_unknown_default() -> None:
    spec = {"method": "ngram", "num_speculative_tokens": 3}
    got = rejection_change("vllm", (PLAN_SIDE, None, spec), ("the speculative record", "0.32.0", spec))
    assert got is not None and invariant_of(got) == "identity"
    assert got == ("not the same deployment: not comparable: the plan states no engine.version, so its rejection "
                   "default is unknown: declare engine.version (or the rejection mode); the other side runs "
                   "'standard' (assumed default where unstated)")
    # a record of no version is not told about a plan key
    got = rejection_change("vllm", (PLAN_SIDE, "0.32.0", spec), ("the speculative record", None, spec))
    assert got is not None and "engine.version" not in got
    assert "the speculative record states no rejection mode and vllm (version unknown)'s default" in got
    # a plan version of no recorded default keeps naming that version
    got = rejection_change("vllm", (PLAN_SIDE, "0.1.0", spec), ("the speculative record", "0.32.0", spec))
    assert got is not None and "declare engine.version" not in got and "vllm 0.1.0's default" in got
    # stating the mode settles it
    assert rejection_change("vllm", (PLAN_SIDE, None, spec | {"rejection_sample_method": "standard"}),
                            ("the speculative record", "0.32.0", spec)) is None
