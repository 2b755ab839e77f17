"""The chart's platform options (issue 24 item 3/4): a PodMonitor (the exporter sidecar shares the engine's
pod, so no Service is needed), a grafana-operator GrafanaDashboard, and HTTPS on `specgate serve` from a
mounted kubernetes.io/tls Secret. Rendered by the real helm (tests/helm/render.py's "platform" case) and
checked against the pinned CRD schemas (tests/helm/crds/) in test_helm_chart.py; here: what they select,
what they carry, and that the strict CRD check catches the mistakes a hand edit makes."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.helm.crd_schemas import errors
from tests.helm.render import (
    DASHBOARD_SOURCE,
    FULLNAME,
    NAMESPACE,
    Rendered,
    container,
    containers,
)

TLS_DIR = "/etc/specgate/tls"


def _pods(r: Rendered) -> list[tuple[dict[str, str], list[dict[str, Any]]]]:
    """(pod labels, containers) of every Deployment's pod template."""
    return [(d["spec"]["template"]["metadata"]["labels"], containers(d)) for d in r.of_kind("Deployment")]


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector: matchLabels and the `In` expressions the chart uses."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for e in selector.get("matchExpressions", []):
        assert e["operator"] == "In", e
        if labels.get(e["key"]) not in e["values"]:
            return False
    return True


def test_podmonitor_replaces_the_servicemonitor_and_follows_the_api(
        rendered: dict[tuple[str, bool], Rendered]) -> None:
    assert rendered[("platform", False)].of_kind("PodMonitor") == []  # no monitoring.coreos.com/v1: nothing
    r = rendered[("platform", True)]
    assert r.of_kind("ServiceMonitor") == []  # serviceMonitor.enabled false in this case
    assert len(r.of_kind("PodMonitor")) == 1
    for case in ("defaults", "serve-controller"):  # off by default
        assert rendered[(case, True)].of_kind("PodMonitor") == []


def test_podmonitor_selects_the_engine_and_serve_pods_by_named_ports(
        rendered: dict[tuple[str, bool], Rendered]) -> None:
    """prometheus-operator keeps, per podMetricsEndpoint, only the selected pods' containers with a port of
    that name: the engine pods must have `metrics` (the exporter sidecar), the serve pods `gate-http`."""
    r = rendered[("platform", True)]
    pm = r.one("PodMonitor", FULLNAME)
    assert pm["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    selected = [(labels, cs) for labels, cs in _pods(r) if _selects(pm["spec"]["selector"], labels)]
    components = sorted(labels["app.kubernetes.io/component"] for labels, _ in selected)
    assert components == ["engine", "serve"]
    ports = {labels["app.kubernetes.io/component"]: {p["name"] for c in cs for p in c.get("ports", [])}
             for labels, cs in selected}
    eps = pm["spec"]["podMetricsEndpoints"]
    assert [e["port"] for e in eps] == ["metrics", "gate-http"]
    assert "metrics" in ports["engine"] and "gate-http" in ports["serve"]
    assert eps[0] == {"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s"}
    # the controller (not enabled here) and the hook Job's pods are not scraped by it
    assert all(labels["app.kubernetes.io/component"] in ("engine", "serve") for labels, _ in selected)


def test_grafanadashboard_carries_the_dashboard(rendered: dict[tuple[str, bool], Rendered]) -> None:
    assert rendered[("platform", False)].of_kind("GrafanaDashboard") == []  # the API is not served: nothing
    for case in ("defaults", "serve-controller"):
        assert rendered[(case, True)].of_kind("GrafanaDashboard") == []  # off by default
    r = rendered[("platform", True)]
    (gd,) = r.of_kind("GrafanaDashboard")
    assert gd["apiVersion"] == "grafana.integreatly.org/v1beta1"
    spec = gd["spec"]
    assert json.loads(spec["json"]) == json.loads(DASHBOARD_SOURCE.read_text())
    assert spec["instanceSelector"] == {"matchLabels": {"dashboards": "grafana"}, "matchExpressions": []}
    assert spec["folder"] == "LLM serving" and spec["resyncPeriod"] == "10m"
    assert "allowCrossNamespaceImport" not in spec
    # besides the grafana_dashboard ConfigMap, which stays (the sidecar and the operator are independent)
    assert any(c["metadata"].get("labels", {}).get("grafana_dashboard") == "1" for c in r.of_kind("ConfigMap"))


def test_the_strict_crd_check_catches_hand_edit_mistakes(rendered: dict[tuple[str, bool], Rendered]) -> None:
    r = rendered[("platform", True)]
    pm = copy.deepcopy(r.one("PodMonitor", FULLNAME))
    pm["spec"]["podMetricsEndpoints"][0]["intervall"] = "15s"
    assert any("intervall" in e for e in errors(pm))
    pm = copy.deepcopy(r.one("PodMonitor", FULLNAME))
    pm["spec"]["endpoints"] = pm["spec"].pop("podMetricsEndpoints")  # a ServiceMonitor's key
    assert any("endpoints" in e for e in errors(pm))
    (gd,) = copy.deepcopy(r.of_kind("GrafanaDashboard"))
    del gd["spec"]["instanceSelector"]
    assert any("instanceSelector" in e for e in errors(gd))


def test_serve_over_tls_mounts_the_secret_and_passes_the_files(rendered: dict[tuple[str, bool], Rendered]) -> None:
    from gate.cli import build_parser

    r = rendered[("platform", True)]
    dep = r.one("Deployment", f"{FULLNAME}-serve")
    c = container(dep, "serve")
    ns = build_parser().parse_args(c["args"])  # the real `specgate serve` parser takes the command line
    assert (str(ns.tls_cert), str(ns.tls_key)) == (f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key")
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["tls"] == {"name": "tls", "mountPath": TLS_DIR, "readOnly": True}
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert vols["tls"]["secret"] == {"secretName": "gate-tls", "defaultMode": 0o440,
                                     "items": [{"key": "tls.crt", "path": "tls.crt"},
                                               {"key": "tls.key", "path": "tls.key"}]}
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"] == {"path": "/healthz", "port": "gate-http", "scheme": "HTTPS"}, probe
    # the token is still required: it comes from its Secret as without TLS
    assert any(e["name"] == "SPECGATE_GATE_TOKEN" for e in c["env"])


def test_the_gate_is_scraped_over_https_for_the_services_name(rendered: dict[tuple[str, bool], Rendered]) -> None:
    r = rendered[("platform", True)]
    svc = r.one("Service", f"{FULLNAME}-serve")
    (ep,) = [e for e in r.one("PodMonitor", FULLNAME)["spec"]["podMetricsEndpoints"] if e["port"] == "gate-http"]
    assert ep["scheme"] == "https"
    assert ep["tlsConfig"] == {"serverName": f"{svc['metadata']['name']}.{NAMESPACE}.svc",
                               "ca": {"secret": {"name": "gate-tls", "key": "ca.crt"}}}


def test_serve_without_tls_is_plain_http_everywhere(rendered: dict[tuple[str, bool], Rendered]) -> None:
    r = rendered[("serve-controller", True)]
    c = container(r.one("Deployment", f"{FULLNAME}-serve"), "serve")
    assert "--tls-cert" not in c["args"] and "tls" not in {m["name"] for m in c["volumeMounts"]}
    assert c["livenessProbe"]["httpGet"]["scheme"] == "HTTP"
    (ep,) = [e for e in r.one("ServiceMonitor", FULLNAME)["spec"]["endpoints"] if e["port"] == "gate-http"]
    assert "scheme" not in ep and "tlsConfig" not in ep
