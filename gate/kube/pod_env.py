"""The engine container's environment as the controller sees it, for the simulated-acceptance invariant.

Why: SGLang simulates acceptance and TensorRT-LLM forces it through environment variables
(`gate.model.invariants.SIMULATION_ENV`), and those live in the Deployment's pod template, not in the plan. A plan
judged without them would take a simulated pod's acceptance for a drafter's (issue 37 item 1), so the controller
judges the plan with the pod's simulation variables added to `engine.env` (the pod's value wins: it is what runs),
and the one intake (`gate.evidence.intake.plan_simulated`) refuses them there.

Fail closed: a variable whose value the controller cannot read (`valueFrom` a Secret, ConfigMap or field) keeps a
placeholder that is no number, so simulation cannot be ruled out; a container with `envFrom` may set any variable,
so the engine's own simulation variable (SGLang's for an SGLang plan, TensorRT-LLM's for a TensorRT-LLM plan), when
not listed in `env`, gets the same placeholder. Only the simulation variables are copied: the rest of the
environment (credentials among it) never enters the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gate.model.engines import PROFILES
from gate.model.invariants import SIMULATION_ENV
from gate.plan.model import Plan

NOT_READ = "<{how}: not read by the controller>"


def simulation_env(container: Mapping[str, Any], engine: str) -> dict[str, str]:
    """The simulation variables the engine container sets (module docstring), placeholders where unreadable."""
    out: dict[str, str] = {}
    for item in container.get("env") or []:
        if not isinstance(item, Mapping) or item.get("name") not in SIMULATION_ENV:
            continue
        name = str(item["name"])
        if "value" in item and item["value"] is not None:
            out[name] = str(item["value"])
        elif item.get("valueFrom") is not None:
            source = next(iter(item["valueFrom"]), "valueFrom") if isinstance(item["valueFrom"], Mapping) else ""
            out[name] = NOT_READ.format(how=f"valueFrom {source}".strip())
        else:
            out[name] = ""  # Kubernetes sets an empty value: no number, so not ruled out
    refs = [r for r in container.get("envFrom") or [] if isinstance(r, Mapping)]
    if refs:
        prof = PROFILES.get(engine)
        shown = ", ".join(f"{k} {v.get('name', '?') if isinstance(v, Mapping) else v}" for r in refs
                          for k, v in r.items() if k != "prefix")
        for name, runs in SIMULATION_ENV.items():
            if prof is not None and prof.name == runs and name not in out:
                out[name] = NOT_READ.format(how=f"envFrom {shown}")
    return out


def with_pod_env(plan: Plan, container: Mapping[str, Any]) -> Plan:
    """The plan with the pod's simulation variables in `engine.env` (the pod's win); the plan itself when none."""
    found = simulation_env(container, plan.engine.kind)
    if not found:
        return plan
    engine = plan.engine.model_copy(update={"env": {**(plan.engine.env or {}), **found}})
    return plan.model_copy(update={"engine": engine})
