"""The chart's hardening (issue 14), rendered by the real pinned helm: the NetworkPolicy egress option,
the controller limited to the one Deployment it manages, the exporter's port, and SGLang's API key kept
off every command line (a --config file written by an init container from the environment).

The RBAC grant set itself is pinned in test_helm_objects.py::test_rbac_is_least_privilege.
"""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import pytest
import yaml

from tests.helm.render import (
    AWKWARD_KEYS,
    CASES,
    ENGINE_KEY_INIT,
    FULLNAME,
    all_containers,
    container,
    deep_merge,
    env_of,
    init_containers,
    parse_objects,
    run_key_writer,
    template,
    write_values,
)


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


# --- SGLang's API key: in a --config file, never in an argv ------------------------------------------


def engine_deployment(objs: list[dict]) -> dict:
    (dep,) = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == FULLNAME]
    return dep


def argv_of(c: dict) -> list[str]:
    return [*c.get("command", []), *c.get("args", [])]


@pytest.fixture(scope="module")
def sglang_dep(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    return engine_deployment(render(helm, tmp_path_factory.mktemp("sglang"), CASES["sglang"]))


def test_sglang_api_key_is_in_no_containers_argv(sglang_dep: dict):
    """Nothing any container of the pod runs names the key or a variable holding it: `$(VAR)` in args would
    be expanded by the kubelet into the process's argv (/proc/PID/cmdline, ps)."""
    for c in all_containers(sglang_dep):
        for arg in argv_of(c):
            assert not re.match(r"--(admin[-_])?api[-_]key(=|$)", arg), f"{c['name']}: {arg!r}"
            assert "$(" not in arg, f"{c['name']}: {arg!r} expands a variable into argv"
    eng = container(sglang_dep, "engine")
    args = eng["args"]
    assert args.count("--config") == 1
    assert not [n for n in env_of(eng) if "KEY" in n], "the engine container needs no key in its environment"


def test_sglang_key_file_is_written_from_env_onto_a_memory_volume(sglang_dep: dict):
    pod = sglang_dep["spec"]["template"]["spec"]
    (init,) = init_containers(sglang_dep)
    assert init["name"] == ENGINE_KEY_INIT
    eng = container(sglang_dep, "engine")
    assert init["image"] == eng["image"]  # the engine image's python3 and PyYAML
    assert init["securityContext"] == eng["securityContext"]
    assert 'os.environ["ENGINE_API_KEY"]' in init["command"][-1]
    env = env_of(init)
    assert env["ENGINE_API_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "engine-key", "key": "api-key"}}
    path = env["ENGINE_CONFIG_FILE"]["value"]
    assert path.endswith(".yaml")  # SGLang's merger refuses any other suffix
    assert eng["args"][eng["args"].index("--config") + 1] == path
    vols = {v["name"]: v for v in pod["volumes"]}
    (wmount,) = [m for m in init["volumeMounts"] if path.startswith(m["mountPath"].rstrip("/") + "/")]
    (rmount,) = [m for m in eng["volumeMounts"] if path.startswith(m["mountPath"].rstrip("/") + "/")]
    assert wmount["name"] == rmount["name"] and not wmount.get("readOnly") and rmount["readOnly"] is True
    assert vols[rmount["name"]]["emptyDir"]["medium"] == "Memory"  # tmpfs: never on the node's disk
    assert vols[rmount["name"]]["emptyDir"]["sizeLimit"] == "1Mi"
    # only the engine reads it: the exporter sidecar gets its own copy of the key from the Secret
    assert not [m for m in container(sglang_dep, "exporter")["volumeMounts"] if m["name"] == rmount["name"]]


@pytest.mark.parametrize("key", AWKWARD_KEYS)
def test_key_writer_writes_a_yaml_file_that_reads_back_as_the_key(sglang_dep: dict, tmp_path: Path, key: str):
    """The init container's own command, run here: an ASCII YAML file, mode 0400, whose `api-key` is the key;
    rerunning it (a pod restart keeps the emptyDir) replaces the file."""
    (init,) = init_containers(sglang_dep)
    out = tmp_path / "config.yaml"
    for _ in range(2):
        proc = run_key_writer(init, key, out, python=sys.executable)
        assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o400
    raw = out.read_bytes()
    assert raw.isascii()  # whatever locale SGLang's open() decodes with
    assert yaml.safe_load(raw) == {"api-key": key}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]
    assert key not in " ".join(argv_of(init)) and key not in proc.stdout + proc.stderr


@pytest.mark.parametrize("key", ["", "-starts-with-a-dash"])
def test_key_writer_refuses_a_key_sglang_cannot_take(sglang_dep: dict, tmp_path: Path, key: str):
    """An empty key would start SGLang without auth; one starting with "-" is read as a flag by argparse
    (tests/e2e/test_sglang_api_key.py shows both on SGLang's own parser). The pod stops at the init container."""
    (init,) = init_containers(sglang_dep)
    proc = run_key_writer(init, key, tmp_path / "config.yaml", python=sys.executable)
    assert proc.returncode != 0 and "SGLang cannot take it" in proc.stderr
    assert not list(tmp_path.iterdir())


def test_vllm_still_reads_its_key_from_vllm_api_key(helm: Path, tmp_path: Path):
    dep = engine_deployment(render(helm, tmp_path, CASES["drafter"]))
    assert not init_containers(dep)
    eng = container(dep, "engine")
    assert env_of(eng)["VLLM_API_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "engine-key", "key": "api-key"}}
    assert not [a for c in all_containers(dep) for a in argv_of(c) if "api-key" in a or "$(" in a or a == "--config"]
    vols = {v["name"] for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert "engine-config" not in vols


def test_sglang_without_a_key_has_no_init_container(helm: Path, tmp_path: Path):
    values = deep_merge(CASES["sglang"], {"engine": {"apiKey": {"existingSecret": ""}}})
    dep = engine_deployment(render(helm, tmp_path, values))
    assert not init_containers(dep)
    assert "--config" not in container(dep, "engine")["args"]


def test_a_second_config_in_extra_args_fails_the_render(helm: Path, tmp_path: Path):
    """SGLang's merger raises on two --config flags: the chart says so at render time instead."""
    values = deep_merge(CASES["sglang"], {"engine": {"extraArgs": ["--config", "/etc/sglang.yaml"]}})
    proc = template(helm, write_values(tmp_path, values), api=False)
    assert proc.returncode != 0 and "SGLang takes one --config" in proc.stderr


def test_no_secret_is_expanded_into_any_argv(rendered: dict) -> None:
    """Over the whole values matrix: no container's command or args names a Secret-backed variable as
    `$(VAR)` (the kubelet would expand it into the argv), nor spells an API-key flag."""
    for (case, _api), r in rendered.items():
        for owner in [o for o in r.objects if o["kind"] in ("Deployment", "Job", "Pod")]:
            spec = owner["spec"] if owner["kind"] == "Pod" else owner["spec"]["template"]["spec"]
            for c in [*spec.get("initContainers", []), *spec["containers"]]:
                secret_vars = {e["name"] for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
                for arg in argv_of(c):
                    used = set(re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", arg))
                    assert not used & secret_vars, f"{case}: {c['name']} expands {used & secret_vars} into argv"
                    assert not re.match(r"--(admin[-_])?api[-_]key(=|$)", arg), f"{case}: {c['name']}: {arg!r}"
