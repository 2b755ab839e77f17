"""The controller judges a plan with the engine pod's simulation variables (gate/kube/pod_env.py, issue 37 item 1).

The env entries are core/v1 EnvVar / EnvFromSource objects as `kubectl get deploy -o json` prints them; the variables
and their meaning are SGLang 0.5.23's `sglang/srt/environ.py` (SGLANG_SIMULATE_ACC_LEN: EnvFloat(-1), on when > 0)
and TensorRT-LLM's `tensorrt_llm/_torch/speculative/interface.py` (TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS,
default "0"), as tests/fixtures/oracle/vllm-0.32.0-speculative-knobs.json's `env_sources` records them. The
controller runs over real HTTP against the loopback fake API server; the evaluator records the plan it was given
and refuses it through the one intake (`gate.evidence.intake.plan_simulated`), as the acceptance line does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.checks import LINES
from gate.evidence.intake import plan_simulated
from gate.kube.annotations import ACTIVE, LAST
from gate.kube.pod_env import simulation_env, with_pod_env
from gate.model.invariants import invariant_of
from gate.plan.model import Plan, plan_from_dict
from gate.status import Decision, LineResult, Status
from gate.verdict.record import RunRecord
from gate.verdict.verdict import Verdict
from tests.k8s.fakeapi import FakeKube
from tests.k8s.objects import NAMESPACE, deployment
from tests.k8s.test_k8s_controller import make

SGLANG_PLAN = """\
name: qwen-eagle
target: {name: Qwen/Qwen3-8B}
drafter: {name: Tengyunw/qwen3_8b_eagle3}
engine:
  kind: sglang
  version: 0.5.23
  speculative: {method: eagle3, num_steps: 3, eagle_topk: 1, num_draft_tokens: 4}
"""
SECRET = {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}


def _plan(kind: str = "sglang") -> Plan:
    spec = ({"method": "eagle3", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4} if kind == "sglang"
            else {"method": "eagle3", "num_speculative_tokens": 3})
    return plan_from_dict({"name": "p", "target": {"name": "t"}, "drafter": {"name": "d"},
                           "engine": {"kind": kind, "speculative": spec}})


def test_only_simulation_variables_are_copied_with_their_values() -> None:
    c = {"env": [{"name": "SGLANG_SIMULATE_ACC_LEN", "value": "3.2"}, SECRET,
                 {"name": "SGLANG_SIMULATE_ACC_METHOD", "value": "multinomial"}, {"name": "OMP_NUM_THREADS",
                                                                                  "value": "8"}]}
    assert simulation_env(c, "sglang") == {"SGLANG_SIMULATE_ACC_LEN": "3.2"}
    found = plan_simulated(with_pod_env(_plan(), c))
    assert found is not None and invariant_of(found) == "simulated" and "SGLANG_SIMULATE_ACC_LEN='3.2'" in found


@pytest.mark.parametrize("value", ["-1", "0", "-1.0"])
def test_simulation_off_values_judge_as_real(value: str) -> None:
    plan = with_pod_env(_plan(), {"env": [{"name": "SGLANG_SIMULATE_ACC_LEN", "value": value}]})
    assert plan.engine.env == {"SGLANG_SIMULATE_ACC_LEN": value} and plan_simulated(plan) is None


def test_the_pods_value_wins_over_the_plans() -> None:
    data = {"name": "p", "target": {"name": "t"}, "drafter": {"name": "d"},
            "engine": {"kind": "trtllm", "env": {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "0"},
                       "speculative": {"method": "eagle3", "num_speculative_tokens": 3}}}
    plan = with_pod_env(plan_from_dict(data), {"env": [{"name": "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
                                                        "value": "2"}]})
    found = plan_simulated(plan)
    assert found is not None and "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS='2'" in found


def test_unreadable_values_are_not_ruled_out() -> None:
    from_secret = {"env": [{"name": "SGLANG_SIMULATE_ACC_LEN",
                            "valueFrom": {"configMapKeyRef": {"name": "knobs", "key": "acc"}}}]}
    found = plan_simulated(with_pod_env(_plan(), from_secret))
    assert found is not None and "valueFrom configMapKeyRef" in found and "cannot be ruled out" in found
    env_from = {"envFrom": [{"configMapRef": {"name": "engine-env"}}], "env": [SECRET]}
    found = plan_simulated(with_pod_env(_plan(), env_from))
    assert found is not None and "envFrom configMapRef engine-env" in found
    # envFrom cannot set another engine's variable for this engine: a vLLM pod is not held to SGLang's
    assert simulation_env(env_from, "vllm") == {}
    # a variable listed in env is what runs, whatever envFrom holds
    listed = {**env_from, "env": [{"name": "SGLANG_SIMULATE_ACC_LEN", "value": "-1"}]}
    assert plan_simulated(with_pod_env(_plan(), listed)) is None
    assert with_pod_env(_plan(), {"env": [SECRET]}) == _plan()  # nothing to add: the plan as it was


class Recording:
    """An evaluator that refuses a plan the intake finds simulated (inconclusive, its reason), else passes."""

    def __init__(self) -> None:
        self.plans: list[Plan] = []

    def __call__(self, plan: Plan, phase: str = "pre", metrics: Any = (), prometheus: Any = None) -> Verdict:
        self.plans.append(plan)
        checks = {line: LineResult(Status.PASS, f"{line} ok") for line in LINES}
        found = plan_simulated(plan)
        if found is not None:
            checks["acceptance"] = LineResult(Status.INCONCLUSIVE, found)
        decision = Decision.INCONCLUSIVE if found is not None else Decision.PASS
        return Verdict(decision=decision, phase=phase, checks=checks, run_record=RunRecord())


def test_the_controller_judges_the_pods_simulation_and_keeps_the_drafter_off(
        fake_kube: FakeKube, api_client: Any, tmp_path: Path) -> None:
    plan_file = tmp_path / "qwen-eagle.yaml"
    plan_file.write_text(SGLANG_PLAN)
    dep = deployment(request="qwen-eagle", args=["--model-path", "/models/target", "--port", "8000"])
    dep["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "SGLANG_SIMULATE_ACC_LEN", "value": "3"}]
    fake_kube.seed(dep)
    ev = Recording()
    make(api_client, plan_file, ev).step()
    got = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert got is not None
    assert ev.plans and ev.plans[0].engine.env == {"SGLANG_SIMULATE_ACC_LEN": "3"}
    assert ACTIVE not in got["metadata"]["annotations"]
    last = json.loads(got["metadata"]["annotations"][LAST])
    assert last["decision"] == "inconclusive" and any("simulated acceptance" in r for r in last["reasons"]), last
