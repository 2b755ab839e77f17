"""The EAGLE head layer-count rule (issue 21 item 7): a "head" with more than 8 decoder layers, or with half
the target's layers or more, is a target's config under a head's name — codesign fails, "looks like a target
config" (real heads have 1–4 layers). Each case is the class with other numbers."""

from __future__ import annotations

import copy

import pytest

from gate.bill.budget import compute_budget
from gate.bill.facts import artifact_facts
from gate.checks.codesign import EAGLE_HEAD_MAX_LAYERS, codesign
from gate.inputs.configs import load_config
from gate.plan.model import plan_from_dict
from gate.status import Decision, Status
from gate.verdict.evaluate import evaluate
from tests.gate.helpers import CONFIGS

QWEN3 = load_config(CONFIGS / "target-gqa__Qwen__Qwen3-8B.json")  # 36 layers, vocab 151,936
LLAMA = load_config(CONFIGS / "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json")  # 32 layers
DSV3 = load_config(CONFIGS / "target-mla-mtp__deepseek-ai__DeepSeek-V3.json")  # 61 layers
EAGLE3_DSV3 = load_config(CONFIGS / "eagle3__specforge__deepseek-v3-671b-eagle3.json")
EAGLE3_LLAMA = load_config(CONFIGS / "eagle3__specforge__llama3-8B-eagle3.json")
SAFEAILAB = load_config(CONFIGS / "eagle3-safeailab__SafeAILab__EAGLE-traineagle3.json")
TINY_TARGET = load_config(CONFIGS / "tiny-target.json")  # 2 layers
TINY_EAGLE3 = load_config(CONFIGS / "tiny-vllm-eagle3.json")  # 1 layer
TINY_EAGLE = load_config(CONFIGS / "tiny-vllm-eagle.json")  # EAGLE-1 head, 1 layer, no marker


def _finding(target: dict, head: dict, **kw: object):
    r = codesign(target, head, **kw)  # type: ignore[arg-type]
    return r, {f.check: f for f in r.findings}.get("head_layers")


def _as_eagle3(cfg: dict, layers: int) -> dict:
    """A config under an EAGLE-3 name (architectures LlamaForCausalLMEagle3) with `layers` decoder layers."""
    out = copy.deepcopy(cfg)
    out["architectures"] = ["LlamaForCausalLMEagle3"]
    out["num_hidden_layers"] = layers
    return out


@pytest.mark.parametrize(("target", "layers"), [
    (QWEN3, 36),   # the target's own config as the head (vocabulary-matched: nothing else fails)
    (LLAMA, 32),
    (LLAMA, 16),   # exactly half the target's layers
    (QWEN3, 20),
    (DSV3, 9),     # more than 8, though under half of 61
    (DSV3, 30),
    (TINY_TARGET, 2),  # a toy target's own 2 layers
])
def test_target_config_under_an_eagle3_name_fails(target: dict, layers: int) -> None:
    for engine in ("vllm", "sglang"):
        r, f = _finding(target, _as_eagle3(target, layers), engine=engine)
        assert f is not None and f.status is Status.FAIL and r.status is Status.FAIL
        assert "looks like a target config" in f.detail and f"{layers} decoder layers" in f.detail


@pytest.mark.parametrize(("target", "head"), [
    (DSV3, EAGLE3_DSV3), (LLAMA, EAGLE3_LLAMA), (LLAMA, SAFEAILAB), (TINY_TARGET, TINY_EAGLE3),
    (LLAMA, _as_eagle3(EAGLE3_LLAMA, 4)),   # 4 layers on 32: a real head's size
    (DSV3, _as_eagle3(EAGLE3_DSV3, EAGLE_HEAD_MAX_LAYERS)),  # 8 on 61: the limit itself
])
def test_real_heads_pass(target: dict, head: dict) -> None:
    _, f = _finding(target, head)
    assert f is not None and f.status is Status.PASS


def test_plain_looking_eagle1_head_is_judged_only_under_an_eagle_method() -> None:
    big = {**copy.deepcopy(TINY_EAGLE), "num_hidden_layers": 12}
    _, f = _finding(LLAMA, big, method="eagle")
    assert f is not None and f.status is Status.FAIL
    _, f = _finding(TINY_TARGET, TINY_EAGLE, method="eagle")
    assert f is not None and f.status is Status.PASS
    # a plain draft model may have any depth: the rule does not apply to it
    _, f = _finding(LLAMA, big, method="draft_model")
    assert f is None
    _, f = _finding(LLAMA, big)
    assert f is None


def test_head_without_a_layer_count_is_not_checked() -> None:
    head = copy.deepcopy(EAGLE3_LLAMA)
    head.pop("num_hidden_layers", None)
    r, f = _finding(LLAMA, head)
    assert f is not None and f.status is Status.INCONCLUSIVE and "num_hidden_layers" in f.detail


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_plan_with_a_target_config_as_its_eagle3_head_fails_and_says_why(engine: str, tmp_path) -> None:
    """The reproduction's class: the target's own config (vocabulary and hidden size match) deployed as the
    EAGLE-3 head. Before: every co-design rule passed (or warned) and the pool silently halved."""
    import json
    head = tmp_path / "head.json"
    head.write_text(json.dumps(_as_eagle3(QWEN3, 36)))
    spec = ({"method": "eagle3", "num_speculative_tokens": 3} if engine == "vllm" else
            {"method": "eagle3", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4})
    plan = plan_from_dict({
        "name": f"fake-head-{engine}",
        "target": {"name": "Qwen/Qwen3-8B", "config": str(CONFIGS / "target-gqa__Qwen__Qwen3-8B.json")},
        "drafter": {"name": "not-a-head", "config": str(head)},
        "engine": {"kind": engine, "kv_dtype": "bf16", "kv_cache_memory_bytes": 8 * 2**30, "speculative": spec},
        "workload": [{"name": "chat", "concurrency": 4, "prompt_tokens": 2048, "output_tokens": 512}],
    })
    budget = compute_budget(plan, artifact_facts(plan))
    # the pool halves: the "head" is charged as much KV per token as the target (both engines)
    assert budget.drafter is not None and budget.drafter.engine_charge_bytes_per_token == budget.target.kv_bytes_per_token
    v = evaluate(plan)
    cd = v.checks["codesign"]
    assert cd.status is Status.FAIL and v.decision is Decision.FAIL
    assert "head_layers fail" in cd.reason and "looks like a target config" in cd.reason
