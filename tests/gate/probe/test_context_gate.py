"""The gate judges each mix at its own context (issue 39): a context sweep's records (tests/gate/tune/
context_records.py: a real vLLM 0.32.0 probe's envelope, seed 004's cells at 2,040 / 32,779 / 131,290 prompt
tokens) pass a plan mix at a measured length and leave a mix at any other length inconclusive, with the
applicability reason — never the nearest length's verdict."""

from __future__ import annotations

from pathlib import Path

from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.tune import context_records


def _plan(tmp: Path, prompt_tokens: int) -> object:
    base, spec = context_records.write(tmp)
    return plan_from_dict({
        "name": "p", "target": {"name": "tiny"},
        "engine": {"kind": "vllm", "version": "0.32.0", "speculative": {"method": "ngram", "num_speculative_tokens": 3}},
        "workload": [{"name": "agent", "concurrency": 1, "prompt_tokens": prompt_tokens,
                      "output_tokens": context_records.OUT}],
        "slo": {"target_acceptance_length": 2.0, "target_source": "traffic"},
        "evidence": {"probes": [base.name, spec.name]}}, base_dir=tmp)


def test_a_mix_at_a_measured_context_is_judged_by_that_context(tmp_path: Path) -> None:
    r = judge(_plan(tmp_path, 131290), "pre", [], [])
    assert r.status is Status.PASS, r.reason
    assert "p131290-o256 at concurrency 1 pays" in r.reason


def test_a_mix_between_measured_contexts_is_not_judged_by_its_neighbours(tmp_path: Path) -> None:
    r = judge(_plan(tmp_path, 65536), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "not applicable" in r.reason and "evidence from another context band" in r.reason
    assert "65536-token prompts, the probes measured 2040, 32779, 131290" in r.reason
