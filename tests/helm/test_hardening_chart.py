"""The chart's hardening (issue 14, items 6 and 7), rendered by the real pinned helm: the NetworkPolicy
egress option, the controller limited to the one Deployment it manages, and the exporter's port.

The RBAC grant set itself is pinned in test_helm_objects.py::test_rbac_is_least_privilege.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helm.render import CASES, FULLNAME, container, deep_merge, parse_objects, template, write_values


def render(helm: Path, tmp_path: Path, values: dict) -> list[dict]:
    proc = template(helm, write_values(tmp_path, values), api=False)
    assert proc.returncode == 0, proc.stderr
    return list(parse_objects(proc.stdout))


def engine_policy(objs: list[dict]) -> dict:
    (pol,) = [o for o in objs if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == FULLNAME]
    return pol["spec"]


def test_egress_is_open_unless_asked_for(helm: Path, tmp_path: Path):
    spec = engine_policy(render(helm, tmp_path, CASES["networkpolicy"]))
    assert spec["policyTypes"] == ["Ingress"] and "egress" not in spec


def test_egress_option_allows_dns_and_the_listed_rules_only(helm: Path, tmp_path: Path):
    registry = {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [{"port": 443, "protocol": "TCP"}]}
    values = deep_merge(CASES["networkpolicy"], {"networkPolicy": {"egress": {"enabled": True, "to": [registry]}}})
    spec = engine_policy(render(helm, tmp_path, values))
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["egress"] == [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}, registry]


def test_egress_without_dns(helm: Path, tmp_path: Path):
    values = deep_merge(CASES["networkpolicy"], {"networkPolicy": {"egress": {"enabled": True, "dns": False}}})
    spec = engine_policy(render(helm, tmp_path, values))
    assert spec["policyTypes"] == ["Ingress", "Egress"] and not spec.get("egress")  # nothing out


def test_the_controller_is_told_the_deployment_its_role_names(helm: Path, tmp_path: Path):
    objs = render(helm, tmp_path, CASES["serve-controller"])
    (role,) = [o for o in objs if o["kind"] == "Role" and o["metadata"]["name"] == f"{FULLNAME}-controller"]
    deps = [r for r in role["rules"] if "deployments" in r["resources"]]
    assert deps and all(r.get("resourceNames") == [FULLNAME] for r in deps)
    assert not [r for r in role["rules"] if "events" in r["resources"] and set(r["verbs"]) - {"create"}]
    (dep,) = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == f"{FULLNAME}-controller"]
    args = container(dep, "controller")["args"]
    assert args[args.index("--deployment") + 1] == FULLNAME


@pytest.mark.parametrize("port", [9479, 19479])
def test_the_exporter_port_is_one_value_everywhere(helm: Path, tmp_path: Path, port: int):
    values = CASES["networkpolicy"] if port == 9479 else deep_merge(CASES["networkpolicy"], {"exporter": {"port": port}})
    objs = render(helm, tmp_path, values)
    (eng,) = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == FULLNAME]
    x = container(eng, "exporter")
    assert x["ports"] == [{"name": "metrics", "containerPort": port, "protocol": "TCP"}]
    assert x["args"][x["args"].index("--listen") + 1] == f"0.0.0.0:{port}"
    (svc,) = [o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == FULLNAME]
    assert {"port": port} .items() <= next(p for p in svc["spec"]["ports"] if p["name"] == "metrics").items()
    assert 9400 not in {p.get("containerPort") for c in eng["spec"]["template"]["spec"]["containers"]
                        for p in c.get("ports", [])}  # DCGM exporter's default
