"""Assertions on what the chart renders: the sidecar and its arguments, probes, hardened pods,
least-privilege RBAC, the gate hook (annotations, weights, arguments) and the monitoring objects."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm.render import (
    CASES,
    DASHBOARD_SOURCE,
    FULLNAME,
    NAMESPACE,
    RULES_SOURCE,
    Rendered,
    all_containers,
    container,
    containers,
    deep_merge,
    default_values,
    env_of,
    init_containers,
    parse_objects,
    template,
    write_values,
)

HOOK = f"{FULLNAME}-gate-hook"
POD_OWNERS = ("Deployment", "Job")


def pod_owners(r: Rendered) -> list[dict[str, Any]]:
    return [o for o in r.objects if o["kind"] in POD_OWNERS]


def engine(r: Rendered) -> dict[str, Any]:
    return r.one("Deployment", FULLNAME)


def hook_annotations(obj: dict[str, Any]) -> dict[str, str]:
    """The gate's install/upgrade hook annotations (the `helm test` Pod is tests/helm/test_chart_metadata.py's)."""
    ann = obj["metadata"].get("annotations") or {}
    if ann.get("helm.sh/hook") == "test":
        return {}
    return {k: v for k, v in ann.items() if k.startswith("helm.sh/hook")}


# --- the engine and its exporter sidecar -------------------------------------------------------------

def test_exporter_sidecar_args(r: Rendered) -> None:
    e = r.values["engine"]
    dep = engine(r)
    assert [c["name"] for c in containers(dep)] == ["engine", "exporter"]
    x = container(dep, "exporter")
    assert x["command"] == ["specgate"]
    assert x["args"] == ["exporter", "run", "--engine-url", f"http://127.0.0.1:{e['port']}",
                         "--listen", "0.0.0.0:9479", "--windows", "1m,5m"]
    assert x["ports"] == [{"name": "metrics", "containerPort": 9479, "protocol": "TCP"}]
    env = env_of(x)
    assert env["SPECGATE_ENGINE"]["value"] == e["kind"]
    assert env["SPECGATE_SCRAPE_INTERVAL"]["value"] == "5s"
    assert env["SPECGATE_MAX_PAGE_BYTES"]["value"] == "16777216"  # not 1.6777216e+07
    # null settings are left to the exporter's defaults, not rendered as "null"
    for name, var in env.items():
        assert var.get("value") not in ("null", "<nil>", ""), name


def test_exporter_args_and_env_are_accepted_by_the_real_sidecar(r: Rendered, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parse the rendered command line with specgate's own parser and build the sidecar's settings from the
    rendered environment, exactly as `specgate exporter run` does in the pod."""
    from exporter.settings import settings_from_args
    from gate.cli import build_parser

    x = container(engine(r), "exporter")
    for key in [k for k in os.environ if k.startswith("SPECGATE_")]:
        monkeypatch.delenv(key)
    for name, var in env_of(x).items():
        if "value" in var:
            monkeypatch.setenv(name, var["value"])
        elif name == "SPECGATE_ENGINE_API_KEY":
            assert var["valueFrom"]["secretKeyRef"]["name"] == r.values["engine"]["apiKey"]["existingSecret"]
            monkeypatch.setenv(name, "from-the-secret")
    args = build_parser().parse_args(x["args"])
    s = settings_from_args(args)
    assert s.listen_address() == ("0.0.0.0", 9479)
    assert s.engine_url == f"http://127.0.0.1:{r.values['engine']['port']}"
    assert s.engine == r.values["engine"]["kind"]
    assert s.windows == [60.0, 300.0]
    assert (s.scrape_interval, s.scrape_timeout, s.batch_window, s.min_drafts) == (5.0, 4.0, 30.0, 10)
    assert s.max_page_bytes == 16 * 1024 * 1024
    want = EXPORTER_FROM_PLAN[r.case]
    assert (s.acceptance_slo_target, s.workload_demand_tokens) == want
    assert (s.engine_api_key is not None) == bool(r.values["engine"]["apiKey"]["existingSecret"])


# (SLO target L, workload demand tokens) the sidecar gets per case: explicit values, else the plan's
# slo.target_acceptance_length and its largest mix's concurrency x (prompt + output).
EXPORTER_FROM_PLAN: dict[str, tuple[float | None, int | None]] = {
    "defaults": (None, None),
    "monitoring-off": (None, None),
    "drafter": (2.0, 20480),                # set in values (and equal to the plan's 8 x (2,048 + 512))
    "allow-inconclusive": (2.0, 20480),     # from the plan: 8 x (2,048 + 512) = 20,480
    "hook-off": (2.0, 20480),
    "serve-controller": (2.0, 20480),
    "platform": (2.0, 20480),
    "networkpolicy": (2.0, 20480),
    "sglang": (2.5, 184182),                # 6 x (30,185 + 512) = 184,182 (seed 000's long-agentic mix)
    "llamacpp": (2.0, 1536),                # 4 x (256 + 128) = 1,536 (render.LLAMACPP_PLAN)
}


def test_explicit_exporter_settings_win_over_the_plan(helm: Path, tmp_path: Path) -> None:
    values = {"engine": {"speculativeConfig": {"method": "ngram", "num_speculative_tokens": 3}},
              "gate": {"plan": CASES["drafter"]["gate"]["plan"], "hook": {"enabled": False}},
              "exporter": {"settings": {"acceptanceSloTarget": 3.25, "workloadDemandTokens": 1000}}}
    proc = template(helm, write_values(tmp_path, values), api=False)
    assert proc.returncode == 0, proc.stderr
    dep = next(o for o in parse_objects(proc.stdout) if o["kind"] == "Deployment")
    env = env_of(container(dep, "exporter"))
    assert env["SPECGATE_ACCEPTANCE_SLO_TARGET"]["value"] == "3.25"
    assert env["SPECGATE_WORKLOAD_DEMAND_TOKENS"]["value"] == "1000"


def test_every_exporter_setting_in_values_is_an_exporter_setting() -> None:
    from exporter.settings import ExporterSettings

    for key in default_values()["exporter"]["settings"]:
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
        assert snake in ExporterSettings.model_fields, f"exporter.settings.{key} -> {snake} is unknown to the exporter"


def test_vllm_engine_args(rendered: dict[tuple[str, bool], Rendered]) -> None:
    plain = container(engine(rendered[("defaults", False)]), "engine")
    assert plain["image"] == "vllm/vllm-openai:v0.32.0"
    assert plain["command"] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert plain["args"] == ["--model", "Qwen/Qwen3-8B", "--host", "0.0.0.0", "--port", "8000"]
    spec = container(engine(rendered[("drafter", False)]), "engine")
    i = spec["args"].index("--speculative-config")
    assert json.loads(spec["args"][i + 1]) == CASES["drafter"]["engine"]["speculativeConfig"]


def test_sglang_engine_args(rendered: dict[tuple[str, bool], Rendered]) -> None:
    r = rendered[("sglang", False)]
    dep = engine(r)
    c = container(dep, "engine")
    assert c["image"] == "lmsysorg/sglang:v0.5.23"
    assert c["command"] == ["python3", "-m", "sglang.launch_server"]
    assert c["args"] == [
        "--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--host", "0.0.0.0", "--port", "30000",
        "--enable-metrics", "--tp-size", "2", "--context-length", "32768",
        # range over a map is sorted by key
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/models/llama3-8b-eagle3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", "--speculative-num-steps", "3",
        # the API key: in the file the engine-api-key init container writes (test_hardening_chart.py)
        "--config", "/run/specgate-engine/config.yaml",
    ]
    assert c["ports"][0]["containerPort"] == 30000
    assert dep["spec"]["template"]["metadata"]["annotations"]["specgate.io/engine"] == "sglang"
    assert env_of(container(dep, "exporter"))["SPECGATE_ENGINE"]["value"] == "sglang"


def test_api_keys_and_tokens_only_from_secrets(r: Rendered) -> None:
    for owner in pod_owners(r):
        for c in all_containers(owner):
            for name, var in env_of(c).items():
                if re.search(r"(_KEY|_TOKEN|PASSWORD)$", name):
                    assert "value" not in var, f"{owner['metadata']['name']}/{c['name']}: {name} inline"
                    assert set(var["valueFrom"]) == {"secretKeyRef"}
    if r.values["engine"]["apiKey"]["existingSecret"]:
        # vLLM reads VLLM_API_KEY; SGLang's key goes through its init container's environment into a file
        c = (container(engine(r), "engine") if r.values["engine"]["kind"] == "vllm"
             else next(i for i in init_containers(engine(r)) if i["name"] == "engine-api-key"))
        name = "VLLM_API_KEY" if r.values["engine"]["kind"] == "vllm" else "ENGINE_API_KEY"
        assert env_of(c)[name]["valueFrom"]["secretKeyRef"] == {"name": "engine-key", "key": "api-key"}
    assert not r.of_kind("Secret"), "the chart never creates secrets"


def test_probes(r: Rendered) -> None:
    dep = engine(r)
    eng = container(dep, "engine")
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert eng[probe]["httpGet"] == {"path": "/health", "port": "http"}, probe
    # model loading: the startup probe allows 30 minutes before liveness takes over
    assert eng["startupProbe"]["periodSeconds"] * eng["startupProbe"]["failureThreshold"] == 1800
    x = container(dep, "exporter")
    for probe in ("livenessProbe", "readinessProbe"):
        assert x[probe]["httpGet"] == {"path": "/healthz", "port": "metrics"}, probe
    for owner in r.of_kind("Deployment"):
        for c in containers(owner):
            names = {p["name"] for p in c.get("ports", [])}
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                if probe in c:
                    assert c[probe]["httpGet"]["port"] in names, f"{c['name']}.{probe} names an unknown port"


def test_resources_on_every_container(r: Rendered) -> None:
    for owner in pod_owners(r):
        for c in all_containers(owner):
            res = c["resources"]
            assert res["requests"]["memory"] and res["limits"]["memory"], c["name"]
    assert container(engine(r), "engine")["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_service_ports_reach_named_container_ports(r: Rendered) -> None:
    for svc in r.of_kind("Service"):
        sel = svc["spec"]["selector"]
        backends = [d for d in r.of_kind("Deployment")
                    if sel.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(backends) == 1, f"Service {svc['metadata']['name']} selects {len(backends)} Deployments"
        cports = {p["name"] for c in containers(backends[0]) for p in c.get("ports", [])}
        for p in svc["spec"]["ports"]:
            assert p["targetPort"] in cports
    main = r.one("Service", FULLNAME)
    assert [(p["name"], p["port"]) for p in main["spec"]["ports"]] == [
        ("http", r.values["engine"]["port"]), ("metrics", 9479)]


def test_deployment_selectors_match_their_pods(r: Rendered) -> None:
    for dep in r.of_kind("Deployment"):
        sel = dep["spec"]["selector"]["matchLabels"]
        assert sel.items() <= dep["spec"]["template"]["metadata"]["labels"].items()
        others = [d for d in r.of_kind("Deployment") if d is not dep]
        for o in others:
            assert not sel.items() <= o["spec"]["template"]["metadata"]["labels"].items(), "selectors overlap"
    for obj in r.objects:
        assert len(obj["metadata"]["name"]) <= 63


# --- hardened pods ------------------------------------------------------------------------------------

def test_pods_are_hardened(r: Rendered) -> None:
    assert pod_owners(r)
    for owner in pod_owners(r):
        pod = owner["spec"]["template"]["spec"]
        where = f"{r.case}: {owner['kind']}/{owner['metadata']['name']}"
        psc = pod["securityContext"]
        assert psc["runAsNonRoot"] is True and psc["runAsUser"] != 0, where
        assert psc["seccompProfile"] == {"type": "RuntimeDefault"}, where
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            assert not pod.get(key), where
        assert all("hostPath" not in v for v in pod.get("volumes", [])), where
        mounts_ok = {v["name"] for v in pod.get("volumes", []) if "emptyDir" in v}
        for c in all_containers(owner):
            sc = c["securityContext"]
            assert sc["runAsNonRoot"] is True, where
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["capabilities"] == {"drop": ["ALL"]}, where
            assert not sc.get("privileged"), where
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, where
            tmp = [m for m in c["volumeMounts"] if m["mountPath"] == "/tmp"]
            assert len(tmp) == 1 and tmp[0]["name"] in mounts_ok, f"{where}/{c['name']}: no writable /tmp"


def test_engine_writable_paths_are_emptydirs(r: Rendered) -> None:
    dep = engine(r)
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container(dep, "engine")["volumeMounts"]}
    assert vols[mounts["/cache"]]["emptyDir"]["sizeLimit"] == "100Gi"
    assert vols[mounts["/dev/shm"]]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}
    env = env_of(container(dep, "engine"))
    assert env["HF_HOME"]["value"].startswith("/cache/") and env["HOME"]["value"] == "/cache"


def test_engine_pod_has_no_api_access(r: Rendered) -> None:
    pod = engine(r)["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    sa = r.one("ServiceAccount", pod["serviceAccountName"])
    assert sa["automountServiceAccountToken"] is False
    bound = {s["name"] for rb in r.of_kind("RoleBinding") for s in rb["subjects"]}
    assert pod["serviceAccountName"] not in bound


# --- RBAC -------------------------------------------------------------------------------------------

READ = {("", "pods", v) for v in ("get", "list", "watch")} | \
       {("", "events", v) for v in ("get", "list", "watch")} | \
       {("apps", "deployments", v) for v in ("get", "list", "watch")}


def grants(role: dict[str, Any]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    out = set()
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for res in rule["resources"]:
                for verb in rule["verbs"]:
                    out.add((g, res, verb, tuple(rule.get("resourceNames", ()))))
    return out


def test_rbac_is_least_privilege(r: Rendered) -> None:
    assert not r.of_kind("ClusterRole") and not r.of_kind("ClusterRoleBinding")
    read = {(g, res, v, ()) for g, res, v in READ}
    expected: dict[str, set] = {}
    if r.of_kind("Job"):
        expected[HOOK] = read
    if r.values["serve"]["enabled"]:
        expected[f"{FULLNAME}-serve"] = read
    if r.values["controller"]["enabled"]:
        lease = f"{FULLNAME}-controller"
        mine = (FULLNAME,)  # only the release's engine Deployment, by name
        expected[f"{FULLNAME}-controller"] = {
            ("", "pods", "get", ()), ("", "pods", "list", ()), ("", "pods", "watch", ()),
            ("apps", "deployments", "get", mine), ("apps", "deployments", "list", mine),
            ("apps", "deployments", "watch", mine), ("apps", "deployments", "patch", mine),
            ("", "events", "create", ()),
            ("coordination.k8s.io", "leases", "create", ()),
            ("coordination.k8s.io", "leases", "get", (lease,)),
            ("coordination.k8s.io", "leases", "update", (lease,)),
        }
    roles = {ro["metadata"]["name"]: ro for ro in r.of_kind("Role")}
    assert set(roles) == set(expected)
    for name, role in roles.items():
        assert grants(role) == expected[name], name
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
            assert "secrets" not in rule["resources"]


def test_rolebindings_bind_rendered_roles_to_rendered_accounts(r: Rendered) -> None:
    accounts = {sa["metadata"]["name"] for sa in r.of_kind("ServiceAccount")}
    roles = {ro["metadata"]["name"] for ro in r.of_kind("Role")}
    for rb in r.of_kind("RoleBinding"):
        assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                 "name": rb["metadata"]["name"]}
        assert rb["roleRef"]["name"] in roles
        assert rb["subjects"] == [{"kind": "ServiceAccount", "name": rb["metadata"]["name"], "namespace": NAMESPACE}]
        assert rb["subjects"][0]["name"] in accounts
    for owner in pod_owners(r):
        pod = owner["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] in accounts
        if pod["serviceAccountName"] in roles:  # only pods with a Role get an API token
            assert pod["automountServiceAccountToken"] is True


# --- the pre-install / pre-upgrade gate hook ---------------------------------------------------------

def test_no_hook_job_without_a_drafter(r: Rendered) -> None:
    drafter = bool(r.values["engine"]["speculativeConfig"])
    hook_on = r.values["gate"]["hook"]["enabled"]
    hooks = [o for o in r.objects if hook_annotations(o)]
    if drafter and hook_on:
        assert sorted(f"{o['kind']}" for o in hooks) == ["ConfigMap", "Job", "Role", "RoleBinding", "ServiceAccount"]
    else:
        assert hooks == [], f"{r.case}: hook objects without a drafter or with the hook off"
        assert not r.of_kind("Job")


def test_hook_annotations_and_weights(hook_r: Rendered) -> None:
    r = hook_r
    job = r.one("Job", HOOK)
    weights = {}
    for o in r.objects:
        ann = hook_annotations(o)
        if not ann:
            continue
        assert ann["helm.sh/hook"] == "pre-install,pre-upgrade"
        assert ann["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
        weights[(o["kind"], o["metadata"]["name"])] = int(ann["helm.sh/hook-weight"])
    w_job = weights[("Job", HOOK)]
    pod = job["spec"]["template"]["spec"]
    # everything the Job needs exists before it: lower weights
    needed = [("ServiceAccount", pod["serviceAccountName"]), ("Role", HOOK), ("RoleBinding", HOOK)]
    needed += [("ConfigMap", v["configMap"]["name"]) for v in pod["volumes"] if "configMap" in v]
    for key in needed:
        assert weights[key] < w_job, key
    # the binding needs its Role and ServiceAccount
    assert weights[("RoleBinding", HOOK)] > weights[("Role", HOOK)]
    assert weights[("RoleBinding", HOOK)] > weights[("ServiceAccount", HOOK)]
    assert weights == {("ConfigMap", HOOK): -10, ("ServiceAccount", HOOK): -10, ("Role", HOOK): -10,
                       ("RoleBinding", HOOK): -5, ("Job", HOOK): 0}


def test_hook_job_spec(hook_r: Rendered) -> None:
    r = hook_r
    job = r.one("Job", HOOK)
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 600
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    c = container(job, "gate")
    want = ["check", "--phase", "pre", "--plan", "/plan/plan.yaml", "--format", "text"]
    if r.values["gate"]["allowInconclusive"]:
        want.append("--allow-inconclusive")
    assert c["command"] == ["specgate"] and c["args"] == want
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/plan"]["readOnly"] is True


def test_allow_inconclusive_flag(rendered: dict[tuple[str, bool], Rendered]) -> None:
    strict = container(rendered[("drafter", False)].one("Job", HOOK), "gate")["args"]
    lenient = container(rendered[("allow-inconclusive", False)].one("Job", HOOK), "gate")["args"]
    assert "--allow-inconclusive" not in strict
    assert lenient[-1] == "--allow-inconclusive"


def test_mounted_plan_is_a_valid_plan(hook_r: Rendered, tmp_path: Path) -> None:
    """Write the hook ConfigMap out as the kubelet mounts it at /plan and load it with the gate's own
    plan loader: the plan validates and its relative config paths resolve to the mounted files."""
    from gate.plan.model import load_plan

    r = hook_r
    mount_configmap(r.one("ConfigMap", HOOK), tmp_path)
    plan = load_plan(tmp_path / "plan.yaml")
    assert plan.name == r.values["gate"]["plan"]["name"]
    assert plan.target.config == tmp_path / "target-config.json"
    assert plan.target.config.is_file()
    assert json.loads(plan.target.config.read_text())["num_hidden_layers"] in (32, 36)
    assert plan.engine.kind == r.values["engine"]["kind"]


def test_hook_args_are_accepted_by_the_real_cli(rendered: dict[tuple[str, bool], Rendered]) -> None:
    """`specgate check` must accept exactly what the Job runs."""
    from gate.cli import build_parser

    for case in ("drafter", "allow-inconclusive"):
        args = container(rendered[(case, False)].one("Job", HOOK), "gate")["args"]
        ns = build_parser().parse_args(args)
        assert ns.command == "check" and ns.phase == "pre" and str(ns.plan) == "/plan/plan.yaml"
        assert ns.format == "text"
        assert ns.allow_inconclusive is (case == "allow-inconclusive")


# --- monitoring -------------------------------------------------------------------------------------

def test_monitoring_objects_follow_the_api_and_the_flags(r: Rendered) -> None:
    mon = r.values["monitoring"]
    sm = r.of_kind("ServiceMonitor")
    pr = r.of_kind("PrometheusRule")
    assert len(sm) == int(r.api and mon["serviceMonitor"]["enabled"])
    assert len(pr) == int(r.api and mon["prometheusRule"]["enabled"] and RULES_SOURCE.exists())
    dash = [c for c in r.of_kind("ConfigMap") if c["metadata"].get("labels", {}).get("grafana_dashboard")]
    assert len(dash) == int(mon["dashboard"]["enabled"] and DASHBOARD_SOURCE.exists())


@pytest.mark.parametrize("case", ["defaults", "serve-controller"])
def test_servicemonitor_scrapes_the_exporter(rendered: dict[tuple[str, bool], Rendered], case: str) -> None:
    r = rendered[(case, True)]
    sm = r.one("ServiceMonitor", FULLNAME)
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    sel = sm["spec"]["selector"]["matchLabels"]
    selected = [s for s in r.of_kind("Service") if sel.items() <= s["metadata"]["labels"].items()]
    assert FULLNAME in [s["metadata"]["name"] for s in selected]
    ports = {p["name"] for s in selected for p in s["spec"]["ports"]}
    eps = sm["spec"]["endpoints"]
    assert eps[0] == {"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s"}
    for ep in eps:
        assert ep["port"] in ports
    assert len(eps) == 1 + int(r.values["serve"]["enabled"])


def test_prometheusrule_embeds_the_source_rules(rendered: dict[tuple[str, bool], Rendered]) -> None:
    """The rules in the PrometheusRule are exactly deploy/prometheus/specgate-rules.yaml."""
    r = rendered[("defaults", True)]
    if not RULES_SOURCE.exists():
        assert not r.of_kind("PrometheusRule")
        return
    pr = r.one("PrometheusRule", FULLNAME)
    source = yaml.safe_load(RULES_SOURCE.read_text(encoding="utf-8"))
    assert pr["spec"] == source
    alerts = [rule["alert"] for g in pr["spec"]["groups"] for rule in g["rules"] if "alert" in rule]
    assert alerts, "no alerting rules embedded"


def test_dashboard_configmap(rendered: dict[tuple[str, bool], Rendered]) -> None:
    r = rendered[("defaults", False)]  # not a CRD: rendered without the monitoring API too
    dash = [c for c in r.of_kind("ConfigMap") if c["metadata"].get("labels", {}).get("grafana_dashboard")]
    if not DASHBOARD_SOURCE.exists():
        assert dash == []
        return
    (cm,) = dash
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["data"]["specgate.json"] == DASHBOARD_SOURCE.read_text(encoding="utf-8")
    assert json.loads(cm["data"]["specgate.json"])["panels"]


# --- serve, controller, NetworkPolicy ---------------------------------------------------------------

def test_serve_and_controller_off_by_default(rendered: dict[tuple[str, bool], Rendered]) -> None:
    for api in (False, True):
        names = rendered[("defaults", api)].names()
        assert not [n for n in names if "serve" in n or "controller" in n]
        dep = engine(rendered[("defaults", api)])
        assert "specgate.io/gate" not in dep["metadata"]["labels"]


def test_serve_deployment(rendered: dict[tuple[str, bool], Rendered], monkeypatch: pytest.MonkeyPatch) -> None:
    r = rendered[("serve-controller", True)]
    dep = r.one("Deployment", f"{FULLNAME}-serve")
    c = container(dep, "serve")
    assert c["command"] == ["specgate"]
    assert env_of(c)["SPECGATE_GATE_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "gate-token", "key": "token"}
    # the real `specgate serve` parser accepts the command line, and reads the token from that variable
    from gate.cli import build_parser
    from gate.commands.serve import read_token

    ns = build_parser().parse_args(c["args"])
    assert ns.command == "serve" and ns.listen == ("0.0.0.0", 8080) and str(ns.plan) == "/plan/plan.yaml"
    monkeypatch.delenv("SPECGATE_SERVE_TOKEN", raising=False)
    monkeypatch.setenv("SPECGATE_GATE_TOKEN", "from-the-secret")
    assert read_token(ns.token_file) == "from-the-secret"
    assert c["ports"] == [{"name": "gate-http", "containerPort": 8080, "protocol": "TCP"}]
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    plan_cm = r.one("ConfigMap", vols["plan"]["configMap"]["name"])
    assert "helm.sh/hook" not in (plan_cm["metadata"].get("annotations") or {})  # outlives the hook
    assert yaml.safe_load(plan_cm["data"]["plan.yaml"]) == CASES["serve-controller"]["gate"]["plan"]
    svc = r.one("Service", f"{FULLNAME}-serve")
    assert svc["spec"]["ports"][0]["targetPort"] == "gate-http"


def test_controller_deployment(rendered: dict[tuple[str, bool], Rendered]) -> None:
    r = rendered[("serve-controller", False)]
    dep = r.one("Deployment", f"{FULLNAME}-controller")
    assert dep["spec"]["replicas"] == 2
    c = container(dep, "controller")
    env = env_of(c)
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    # the real `specgate controller` parser accepts the rendered command line
    from gate.cli import build_parser

    ns = build_parser().parse_args(c["args"])
    assert ns.command == "controller"
    assert str(ns.plan) == "/plan/plan.yaml" and ns.namespace == "$(POD_NAMESPACE)"  # expanded by the kubelet
    assert ns.lease_name == f"{FULLNAME}-controller" and ns.identity == "$(POD_NAME)"
    assert ns.deployment == FULLNAME  # the one Deployment its Role names
    assert ns.metrics_listen == "0.0.0.0:9402"
    assert c["ports"] == [{"name": "metrics", "containerPort": 9402, "protocol": "TCP"}]
    svc = r.one("Service", f"{FULLNAME}-controller")
    assert svc["metadata"]["labels"]["specgate.io/metrics"] == "true"
    assert svc["spec"]["ports"] == [{"name": "metrics", "port": 9402, "targetPort": "metrics", "protocol": "TCP"}]
    # the chart's engine Deployment is one the controller watches
    assert engine(r)["metadata"]["labels"]["specgate.io/gate"] == "true"


def test_networkpolicy(rendered: dict[tuple[str, bool], Rendered]) -> None:
    assert not rendered[("defaults", True)].of_kind("NetworkPolicy")
    r = rendered[("networkpolicy", False)]
    pols = {p["metadata"]["name"]: p for p in r.of_kind("NetworkPolicy")}
    assert set(pols) == {FULLNAME, f"{FULLNAME}-serve"}
    for pol in pols.values():
        sel = pol["spec"]["podSelector"]["matchLabels"]
        targets = [d for d in r.of_kind("Deployment") if sel.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(targets) == 1
        names = {p["name"] for c in containers(targets[0]) for p in c.get("ports", [])}
        for rule in pol["spec"]["ingress"]:
            assert {p["port"] for p in rule["ports"]} <= names
    eng = pols[FULLNAME]["spec"]["ingress"]
    assert eng[0] == {"from": [{"podSelector": {}}], "ports": [{"port": "http", "protocol": "TCP"}]}
    assert eng[1] == {"from": [{"namespaceSelector": {}}], "ports": [{"port": "metrics", "protocol": "TCP"}]}


def mount_configmap(cm: dict[str, Any], where: Path) -> Path:
    """Lay a ConfigMap out as the kubelet mounts it: one file per key."""
    where.mkdir(parents=True, exist_ok=True)
    for name, content in cm["data"].items():
        (where / name).write_text(content, encoding="utf-8")
    return where


@pytest.mark.parametrize(("case", "extra", "exit_code", "decision"), [
    ("drafter", [], 2, "INCONCLUSIVE"),            # gate inconclusive -> Job fails -> release blocked
    ("allow-inconclusive", [], 0, "INCONCLUSIVE"),  # gate.allowInconclusive=true lets it through
    ("sglang", [], 1, "FAIL"),                      # the pool does not hold the mix
    ("sglang", ["--allow-inconclusive"], 1, "FAIL"),  # allowing inconclusive never masks a fail
])
def test_hook_command_decides_the_release(rendered: dict[tuple[str, bool], Rendered], tmp_path: Path,
                                          case: str, extra: list[str], exit_code: int, decision: str) -> None:
    """Run the hook Job's exact command with the real `specgate` console script on the plan ConfigMap as
    mounted: its exit code is what Helm sees as the Job's success or failure."""
    r = rendered[(case, False)]
    job = r.one("Job", HOOK)
    c = container(job, "gate")
    mount = mount_configmap(r.one("ConfigMap", HOOK), tmp_path / "plan")
    args = [a.replace("/plan/", f"{mount}/") for a in c["args"]] + extra
    exe = Path(sys.executable).parent / c["command"][0]
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120, check=False,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert proc.returncode == exit_code, proc.stdout + proc.stderr
    assert f"decision: {decision}" in proc.stdout


def test_gate_pods_roll_when_the_plan_changes(helm: Path, tmp_path: Path) -> None:
    def checksums(plan: dict[str, Any], sub: str) -> dict[str, str]:
        values = deep_merge(CASES["serve-controller"], {"gate": {"plan": plan}})
        proc = template(helm, write_values(_mk(tmp_path / sub), values), api=False)
        assert proc.returncode == 0, proc.stderr
        return {o["metadata"]["name"]: o["spec"]["template"]["metadata"]["annotations"]["checksum/plan"]
                for o in parse_objects(proc.stdout) if o["kind"] == "Deployment" and "annotations" in
                o["spec"]["template"]["metadata"] and "checksum/plan" in o["spec"]["template"]["metadata"]["annotations"]}

    plan = CASES["serve-controller"]["gate"]["plan"]
    a = checksums(plan, "a")
    b = checksums(deep_merge(plan, {"slo": {"target_acceptance_length": 2.2}}), "b")
    assert set(a) == {f"{FULLNAME}-serve", f"{FULLNAME}-controller"}
    assert all(re.fullmatch(r"[0-9a-f]{64}", v) for v in a.values())
    assert all(a[k] != b[k] for k in a)


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_common_labels_pull_secrets_and_scheduling(rendered: dict[tuple[str, bool], Rendered]) -> None:
    labelled = rendered[("networkpolicy", True)]
    for obj in labelled.objects:
        assert obj["metadata"]["labels"]["team"] == "llm-serving", obj["metadata"]["name"]
    r = rendered[("serve-controller", True)]
    for owner in pod_owners(r):
        assert owner["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    pod = engine(r)["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert "imagePullSecrets" not in engine(rendered[("defaults", False)])["spec"]["template"]["spec"]
