"""examples/kserve (InferenceService on KServe's vLLM runtime with the exporter sidecar, a PodMonitor, a gate
Job) and examples/production-stack (values for vLLM's `vllm-stack` chart) validated against their projects'
schemas pinned in tests/helm/crds/: KServe's InferenceService CRD at v0.20.0 and prometheus-operator's
PodMonitor CRD at v0.93.0 strictly (unknown fields are errors), `vllm-stack` 0.1.12's values.schema.json as
helm would apply it, the plain Kubernetes objects with kubernetes-validate (strict); the commands they run
are parsed by specgate's own parsers, and the gate Job's command runs on its plan."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.helm.crd_schemas import VALIDATORS, content, errors, strict

REPO = Path(__file__).resolve().parents[2]
KSERVE = REPO / "examples" / "kserve"
STACK = REPO / "examples" / "production-stack"
STACK_SCHEMA = "production-stack-vllm-stack-0.1.12-values.schema.json"
KUBE_VERSIONS = ("1.27.0", "1.35.0")  # as tests/helm/test_helm_chart.py
QWEN3_8B_CONFIG = REPO / "tests" / "fixtures" / "configs" / "target-gqa__Qwen__Qwen3-8B.json"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _validate(obj: dict[str, Any]) -> None:
    """A CRD kind against its pinned CRD, anything else against the Kubernetes OpenAPI schemas."""
    if (obj["apiVersion"], obj["kind"]) in VALIDATORS:
        assert errors(obj) == [], obj["kind"]
    else:
        for version in KUBE_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)


def _exporter_settings(c: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The container's command line and environment through `specgate exporter run`'s own parser."""
    import os

    from exporter.settings import settings_from_args
    from gate.cli import build_parser

    for key in [k for k in os.environ if k.startswith("SPECGATE_")]:
        monkeypatch.delenv(key)
    for e in c.get("env", []):
        monkeypatch.setenv(e["name"], e["value"])
    assert c["command"] == ["specgate"]
    return settings_from_args(build_parser().parse_args(c["args"]))


# ---- KServe -------------------------------------------------------------------------------------------

def test_kserve_objects_validate() -> None:
    objs = _docs(KSERVE / "inferenceservice.yaml") + _docs(KSERVE / "gate-job.yaml")
    assert sorted(o["kind"] for o in objs) == ["ConfigMap", "InferenceService", "Job", "PodMonitor"]
    assert ("serving.kserve.io/v1beta1", "InferenceService") in VALIDATORS
    for obj in objs:
        _validate(obj)


def test_the_inferenceservice_check_can_fail() -> None:
    (isvc, _) = _docs(KSERVE / "inferenceservice.yaml")
    typo = copy.deepcopy(isvc)
    typo["spec"]["predictor"]["model"]["storageURI"] = typo["spec"]["predictor"]["model"].pop("storageUri")
    assert any("storageURI" in e for e in errors(typo))
    side = copy.deepcopy(isvc)
    side["spec"]["predictor"]["sidecars"] = side["spec"]["predictor"].pop("containers")  # not KServe's key
    assert any("sidecars" in e for e in errors(side))
    bad = copy.deepcopy(isvc)
    bad["spec"]["predictor"]["containers"][0]["ports"][0]["containerPort"] = "9479"
    assert errors(bad)


def test_kserve_exporter_reads_the_runtime_in_its_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    """KServe v0.20.0's kserve-vllmserver runtime starts vLLM with --port=8080 (config/runtimes/
    kserve-vllmserver.yaml); the exporter, a container of the same pod, reads it on loopback."""
    (isvc, pm) = _docs(KSERVE / "inferenceservice.yaml")
    pred = isvc["spec"]["predictor"]
    assert pred["model"]["runtime"] == "kserve-vllmserver" and pred["model"]["modelFormat"] == {"name": "vLLM"}
    (c,) = pred["containers"]
    assert c["name"] not in ("kserve-container", "transformer-container")  # names KServe would merge or move
    s = _exporter_settings(c, monkeypatch)
    assert s.engine_url == "http://127.0.0.1:8080" and s.engine == "vllm"
    assert s.listen_address() == ("0.0.0.0", 9479)
    assert (s.acceptance_slo_target, s.workload_demand_tokens) == (2.0, 8 * (2048 + 512))
    assert pm["spec"]["selector"]["matchLabels"] == {"serving.kserve.io/inferenceservice": isvc["metadata"]["name"]}
    assert [e["port"] for e in pm["spec"]["podMetricsEndpoints"]] == [p["name"] for p in c["ports"]]


def test_kserve_flag_and_plan_describe_the_same_drafter(tmp_path: Path) -> None:
    from gate.plan.model import load_plan

    (isvc, _) = _docs(KSERVE / "inferenceservice.yaml")
    (arg,) = [a for a in isvc["spec"]["predictor"]["model"]["args"] if a.startswith("--speculative-config=")]
    flag = json.loads(arg.split("=", 1)[1])
    cm = _docs(KSERVE / "gate-job.yaml")[0]
    plan = yaml.safe_load(cm["data"]["plan.yaml"])
    assert plan["engine"]["speculative"] == {"method": flag["method"],
                                             "num_speculative_tokens": flag["num_speculative_tokens"]}
    assert json.loads(cm["data"]["target-config.json"]) == json.loads(QWEN3_8B_CONFIG.read_text())
    assert "--max-model-len=32768" in isvc["spec"]["predictor"]["model"]["args"]
    assert plan["engine"]["context_cap_tokens"] == 32768
    for name, text in cm["data"].items():
        (tmp_path / name).write_text(text)
    loaded = load_plan(tmp_path / "plan.yaml")  # the strict plan model: no unknown key, the config resolves
    assert loaded.engine.speculative is not None and loaded.engine.speculative.num_speculative_tokens == 3


def test_kserve_gate_job_runs_its_command_on_its_plan(tmp_path: Path) -> None:
    """The Job's exact args on the ConfigMap's files: a valid plan (not exit 3), and, with no evidence in it,
    INCONCLUSIVE (exit 2), which fails the Job as the file's comment says."""
    from gate.cli import build_parser

    cm, job = _docs(KSERVE / "gate-job.yaml")
    (c,) = job["spec"]["template"]["spec"]["containers"]
    ns = build_parser().parse_args(c["args"])
    assert ns.command == "check" and ns.phase == "pre" and str(ns.plan) == "/plan/plan.yaml"
    assert job["spec"]["backoffLimit"] == 0
    mount = next(m for m in c["volumeMounts"] if m["name"] == "plan")
    assert mount["mountPath"] == "/plan"
    for name, text in cm["data"].items():
        (tmp_path / name).write_text(text)
    args = [a if a != "/plan/plan.yaml" else str(tmp_path / "plan.yaml") for a in c["args"]]
    r = subprocess.run([str(REPO / ".venv" / "bin" / "specgate"), *args], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "decision: INCONCLUSIVE (exit 2)" in r.stdout


# ---- vLLM production-stack ----------------------------------------------------------------------------

def _stack_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(content(STACK_SCHEMA))
    return schema


def test_production_stack_values_validate_against_the_charts_schema() -> None:
    """As `helm install` applies values.schema.json (JSON Schema 2020-12), and strictly too: every key the
    snippet sets is one the schema declares."""
    values = yaml.safe_load((STACK / "values.yaml").read_text())
    schema = _stack_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(values)) == []
    strict_errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                     for e in jsonschema.Draft202012Validator(strict(schema)).iter_errors(values)]
    # extraObjects is an array of free-form manifests in that schema; checked below with their own schemas
    assert strict_errors == []


def test_production_stack_schema_check_can_fail() -> None:
    values = yaml.safe_load((STACK / "values.yaml").read_text())
    v = jsonschema.Draft202012Validator(strict(_stack_schema()))
    typo = copy.deepcopy(values)
    typo["servingEngineSpec"]["modelSpec"][0]["vllmConfig"]["extraArg"] = \
        typo["servingEngineSpec"]["modelSpec"][0]["vllmConfig"].pop("extraArgs")
    assert any("extraArg" in e.message for e in v.iter_errors(typo))
    wrong = copy.deepcopy(values)
    wrong["servingEngineSpec"]["modelSpec"][0]["vllmConfig"]["maxModelLen"] = "32k"
    assert list(jsonschema.Draft202012Validator(_stack_schema()).iter_errors(wrong))


def test_production_stack_extra_objects_validate_and_point_at_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    values = yaml.safe_load((STACK / "values.yaml").read_text())
    objs = values["extraObjects"]
    assert sorted(o["kind"] for o in objs) == ["Deployment", "PodMonitor"]
    for obj in objs:
        _validate(obj)
    dep = next(o for o in objs if o["kind"] == "Deployment")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    s = _exporter_settings(c, monkeypatch)
    (model,) = values["servingEngineSpec"]["modelSpec"]
    # vllm-stack 0.1.12 templates/service-vllm.yaml: "<release>-<modelSpec.name>-engine-service", port 80
    # (servicePort); the README's install command names the release "vllm".
    assert s.engine_url == f"http://vllm-{model['name']}-engine-service:80"
    assert model["replicaCount"] == 1  # one exporter through a Service reads one engine only
    extra = model["vllmConfig"]["extraArgs"]
    spec = json.loads(extra[extra.index("--speculative-config") + 1])
    assert spec["method"] == "ngram" and spec["num_speculative_tokens"] == 3
    pm = next(o for o in objs if o["kind"] == "PodMonitor")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert pm["spec"]["selector"]["matchLabels"].items() <= labels.items()
