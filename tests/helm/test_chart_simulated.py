"""The chart's hook judges the plan as the engine runs (issue 37 item 1): simulation knobs in the chart's values reach
the rendered plan.yaml, where the one intake (`gate.evidence.intake.plan_simulated`) refuses them.

The knobs are the engines' own spellings: vLLM 0.32 configs its SpeculativeConfig accepts
(tests/fixtures/oracle/vllm-0.32.0-speculative-knobs.json, "accepted"), passed by the chart as
`--speculative-config`; SGLang's SGLANG_SIMULATE_ACC_LEN and TensorRT-LLM's variable as core/v1 EnvVar objects in
`engine.extraEnv`; SGLang's `--speculative-use-block-verification` as a speculativeConfig key (the chart prefixes
`--speculative-`). The rendered plan is read back by the gate's own plan loader.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import yaml

from gate.evidence.intake import plan_simulated
from gate.model.invariants import SIMULATION_ENV, invariant_of, rejection_mode
from gate.plan.model import Plan, plan_from_dict
from tests.helm.render import CASES, CHART, parse_objects, template, write_values

KNOBS = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "oracle"
                    / "vllm-0.32.0-speculative-knobs.json").read_text())
SYNTHETIC = next(r["config"] for r in KNOBS["accepted"] if r["config"].get("synthetic_acceptance_length") == 2.5)
BLOCK = next(r["config"] for r in KNOBS["accepted"] if r["config"].get("rejection_sample_method") == "block")


def _hook_plan(helm: Path, tmp_path: Path, case: str, **engine: Any) -> tuple[dict[str, Any], Plan]:
    values = copy.deepcopy(CASES[case])
    values["engine"].update(engine)
    proc = template(helm, write_values(tmp_path, values), api=False)
    assert proc.returncode == 0, proc.stderr
    cm = next(o for o in parse_objects(proc.stdout) if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith(
        "gate-hook"))
    raw = yaml.safe_load(cm["data"]["plan.yaml"])
    return raw, plan_from_dict(raw)


def test_without_knobs_the_plan_is_rendered_as_given(helm: Path, tmp_path: Path) -> None:
    for case in ("drafter", "sglang"):
        raw, _ = _hook_plan(helm, tmp_path, case)
        assert raw == CASES[case]["gate"]["plan"], case


def test_vllm_synthetic_rejection_in_the_values_is_refused(helm: Path, tmp_path: Path) -> None:
    raw, plan = _hook_plan(helm, tmp_path, "drafter", speculativeConfig=SYNTHETIC)
    assert raw["engine"]["speculative"]["synthetic_acceptance_length"] == 2.5
    found = plan_simulated(plan)
    assert found is not None and invariant_of(found) == "simulated" and "'synthetic'" in found
    _, block = _hook_plan(helm, tmp_path, "drafter", speculativeConfig=BLOCK)
    assert block.engine.speculative is not None and plan_simulated(block) is None
    assert rejection_mode("vllm", block.engine.speculative.model_dump()) == "block"


def test_sglang_simulation_env_and_flags_reach_the_plan(helm: Path, tmp_path: Path) -> None:
    spec = {**CASES["sglang"]["engine"]["speculativeConfig"], "use_block_verification": True}
    env = [{"name": "SGLANG_SIMULATE_ACC_LEN", "value": "3.5"}, {"name": "OMP_NUM_THREADS", "value": "8"}]
    raw, plan = _hook_plan(helm, tmp_path, "sglang", speculativeConfig=spec, extraEnv=env)
    assert raw["engine"]["env"] == {"SGLANG_SIMULATE_ACC_LEN": "3.5"}  # only the simulation variables
    assert raw["engine"]["speculative"]["speculative_use_block_verification"] is True
    found = plan_simulated(plan)
    assert found is not None and "SGLANG_SIMULATE_ACC_LEN='3.5'" in found
    _, off = _hook_plan(helm, tmp_path, "sglang", extraEnv=[{"name": "SGLANG_SIMULATE_ACC_LEN", "value": "-1"}])
    assert plan_simulated(off) is None


def test_an_unread_value_from_is_never_ruled_out(helm: Path, tmp_path: Path) -> None:
    env = [{"name": "SGLANG_SIMULATE_ACC_LEN", "valueFrom": {"configMapKeyRef": {"name": "knobs", "key": "acc"}}}]
    _, plan = _hook_plan(helm, tmp_path, "sglang", extraEnv=env)
    found = plan_simulated(plan)
    assert found is not None and "not read by the chart" in found and "cannot be ruled out" in found


def test_the_templates_names_are_the_invariants() -> None:
    text = (CHART / "templates" / "_helpers.tpl").read_text(encoding="utf-8")
    listed = re.search(r'has \.name \(list ((?:"[A-Z_]+" ?)+)\)', text)
    assert listed is not None and set(re.findall(r'"([A-Z_]+)"', listed.group(1))) == set(SIMULATION_ENV)
