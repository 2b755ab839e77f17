"""The real helm binary lints and renders the chart for the values matrix; every rendered object validates
against the Kubernetes OpenAPI schemas (kubernetes-validate, strict) or, for the operator kinds
(ServiceMonitor, PodMonitor, PrometheusRule, GrafanaDashboard), against their projects' CRD schemas pinned in
tests/helm/crds/ (strict) and, for the Prometheus Operator ones, the CRD models of
cloudcoil-models-prometheus-operator too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
from cloudcoil.models.prometheus_operator import v1 as promop

from tests.helm.crd_schemas import VALIDATORS, errors
from tests.helm.render import (
    CASES,
    CHART,
    INSTALL_SCRIPT,
    Rendered,
    run_helm,
    template,
    write_values,
)

# The chart's floor (Chart.yaml kubeVersion >=1.27) and a current release.
KUBE_VERSIONS = ("1.27.0", "1.35.0")
CRD_MODELS = {"ServiceMonitor": promop.ServiceMonitor, "PrometheusRule": promop.PrometheusRule,
              "PodMonitor": promop.PodMonitor}


def test_helm_is_the_pinned_release(helm: Path) -> None:
    out = run_helm(helm, "version", "--short")
    assert out.returncode == 0
    assert out.stdout.startswith("v3.17.2+g"), out.stdout
    assert "9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e" in INSTALL_SCRIPT.read_text()


def test_lint_strict(helm: Path, case_name: str, tmp_path: Path) -> None:
    vfile = write_values(tmp_path, CASES[case_name])
    out = run_helm(helm, "lint", "--strict", str(CHART), "-f", str(vfile), "--namespace", "llm")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 chart(s) failed" in out.stdout
    assert "[WARNING]" not in out.stdout and "[ERROR]" not in out.stdout


def test_every_object_validates(r: Rendered) -> None:
    assert r.objects, f"{r.case}: nothing rendered"
    for obj in r.objects:
        crd = (obj["apiVersion"], obj["kind"]) in VALIDATORS
        if crd:
            assert errors(obj) == [], f"{r.case}: {obj['kind']} breaks its pinned CRD"
        model = CRD_MODELS.get(obj["kind"])
        if model is not None:
            # The CRD models ignore unknown keys, so a lossless round trip is what proves there are none.
            parsed = model.model_validate(obj)
            assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == obj, (
                f"{r.case}: {obj['kind']} has fields the prometheus-operator CRD does not define")
        if crd or model is not None:
            continue
        for version in KUBE_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)


def test_crd_check_rejects_an_unknown_field() -> None:
    """The round-trip check above is only worth something if it can fail."""
    obj = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "x"},
           "spec": {"selector": {}, "endpoints": [{"port": "metrics", "intervall": "15s"}]}}
    parsed = promop.ServiceMonitor.model_validate(obj)
    assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) != obj


def test_strict_validation_rejects_an_unknown_field(rendered: dict[tuple[str, bool], Rendered]) -> None:
    dep = dict(rendered[("defaults", False)].one("Deployment", "rel-specgate"))
    dep["spec"] = dict(dep["spec"], replica=1)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, KUBE_VERSIONS[-1], strict=True)


def test_kubernetes_validate_cli_strict(helm: Path, tmp_path: Path) -> None:
    """The command-line form the README documents: `helm template ... | kubernetes-validate --strict`."""
    vfile = write_values(tmp_path, CASES["serve-controller"])
    out = template(helm, vfile, api=False)
    assert out.returncode == 0, out.stderr
    manifest = tmp_path / "all.yaml"
    manifest.write_text(out.stdout)
    cli = Path(sys.executable).parent / "kubernetes-validate"
    proc = subprocess.run([str(cli), "--strict", "-k", KUBE_VERSIONS[-1], str(manifest)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "INFO" in proc.stdout and "ERROR" not in proc.stdout


def test_template_fails_without_a_plan_when_a_drafter_is_enabled(helm: Path, tmp_path: Path) -> None:
    vfile = write_values(tmp_path, {"engine": {"speculativeConfig": {"method": "ngram", "num_speculative_tokens": 3}}})
    out = template(helm, vfile, api=False)
    assert out.returncode != 0
    assert "gate.plan is required when engine.speculativeConfig enables a drafter" in out.stderr


def test_template_fails_for_serve_without_a_token(helm: Path, tmp_path: Path) -> None:
    vfile = write_values(tmp_path, {"serve": {"enabled": True}, "gate": {"plan": {"name": "x"}}})
    out = template(helm, vfile, api=False)
    assert out.returncode != 0
    assert "serve.token.existingSecret is required" in out.stderr


@pytest.mark.parametrize(("values", "message"), [
    ({"engine": {"kind": "tgi"}}, "engine.kind"),
    ({"engine": {"modle": "x"}}, "Additional property modle is not allowed"),
    ({"engine": {"apiKey": {"value": "sk-inline"}}}, "Additional property value is not allowed"),
    ({"exporter": {"settings": {"scrapeInterval": "often"}}}, "exporter.settings.scrapeInterval"),
    ({"gate": {"planFiles": {"plan.yaml": "x"}}}, "gate.planFiles"),
])
def test_schema_rejects_bad_values(helm: Path, tmp_path: Path, values: dict, message: str) -> None:
    out = template(helm, write_values(tmp_path, values), api=False)
    assert out.returncode != 0
    assert "values don't meet the specifications of the schema" in out.stderr
    assert message in out.stderr, out.stderr
