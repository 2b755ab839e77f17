"""Run the real helm binary on the chart and hand back the rendered objects as plain dicts.

Why a module and not only fixtures: the value cases are data shared by the lint, validate and assertion
tests, and `helm template` output is parsed once per case per session.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "specgate"
TOOLS_BIN = REPO / ".tools" / "bin"
INSTALL_SCRIPT = REPO / "tools" / "install_helm.sh"
CONFIGS = REPO / "tests" / "fixtures" / "configs"
MONITORING_API = "monitoring.coreos.com/v1"
GRAFANA_API = "grafana.integreatly.org/v1beta1"  # grafana-operator's GrafanaDashboard
RELEASE = "rel"
NAMESPACE = "llm"
FULLNAME = "rel-specgate"

# Sources that `make chart-sync` copies into the chart (source -> copy).
SYNCED_FILES: dict[Path, Path] = {
    REPO / "deploy" / "prometheus" / "specgate-rules.yaml": CHART / "files" / "specgate-rules.yaml",
    REPO / "dashboards" / "specgate.json": CHART / "files" / "specgate-dashboard.json",
}
RULES_SOURCE = REPO / "deploy" / "prometheus" / "specgate-rules.yaml"
DASHBOARD_SOURCE = REPO / "dashboards" / "specgate.json"


def _config(name: str) -> str:
    return (CONFIGS / name).read_text(encoding="utf-8")


# A vLLM ngram rollout of Qwen3-8B: the real config.json travels in the plan ConfigMap next to plan.yaml.
NGRAM_SPEC = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
NGRAM_PLAN = {
    "name": "qwen3-8b-ngram",
    "target": {"name": "Qwen/Qwen3-8B", "config": "target-config.json"},
    "engine": {"kind": "vllm", "speculative": {"method": "ngram", "num_speculative_tokens": 3}},
    "workload": [{"name": "chat", "concurrency": 8, "prompt_tokens": 2048, "output_tokens": 512}],
    "slo": {"target_acceptance_length": 2.0, "min_windows": 3},
}
NGRAM_FILES = {"target-config.json": _config("target-gqa__Qwen__Qwen3-8B.json")}

# An SGLang EAGLE-3 rollout of Llama-3.1-8B (SpecForge's drafter config).
SGLANG_SPEC = {"algorithm": "EAGLE3", "draft_model_path": "/models/llama3-8b-eagle3", "num_steps": 3,
               "eagle_topk": 1, "num_draft_tokens": 4}
SGLANG_PLAN = {
    "name": "llama31-8b-eagle3-sglang",
    "target": {"name": "meta-llama/Llama-3.1-8B-Instruct", "config": "target-config.json"},
    "drafter": {"name": "llama3-8B-eagle3", "config": "drafter-config.json"},
    "engine": {"kind": "sglang", "speculative": {"method": "eagle3", "num_steps": 3, "eagle_topk": 1,
                                                 "num_draft_tokens": 4}},
    "slo": {"target_acceptance_length": 2.5},
    # A pool smaller than the mix (the shape of seed 000's NEXTN arm: 6 x (30,185 + 512) = 184,182 > 161,728):
    # the kv_pool line fails, so the hook must fail the release even with --allow-inconclusive.
    "workload": [{"name": "long-agentic", "concurrency": 6, "prompt_tokens": 30185, "output_tokens": 512}],
    "evidence": {"reported": {"kv_pool_tokens": {"value": 161728, "source": "test: an allocated pool below the mix"}}},
}
SGLANG_FILES = {
    "target-config.json": _config("target-gqa__meta-llama__Llama-3.1-8B-Instruct.json"),
    "drafter-config.json": _config("eagle3__specforge__llama3-8B-eagle3.json"),
}

# A llama.cpp draft-model rollout (llama-server b11434's --spec-* flags; the pool is --ctx-size = 512 x 4 slots).
LLAMACPP_SPEC = {"type": "draft-simple", "draft_model": "/models/draft.gguf", "draft_n_max": 3}
LLAMACPP_PLAN = {
    "name": "qwen3-8b-llamacpp-ngram",
    "target": {"name": "Qwen/Qwen3-8B", "config": "target-config.json"},
    "engine": {"kind": "llamacpp", "speculative": {"method": "ngram", "num_speculative_tokens": 3},
               "configured_max_total_tokens": 2048},
    "workload": [{"name": "chat", "concurrency": 4, "prompt_tokens": 256, "output_tokens": 128}],
    "slo": {"target_acceptance_length": 2.0, "min_windows": 3},
}

# The values matrix. Each case renders with and without the operator APIs (monitoring.coreos.com/v1 and
# grafana.integreatly.org/v1beta1).
CASES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "drafter": {
        "engine": {"speculativeConfig": NGRAM_SPEC, "apiKey": {"existingSecret": "engine-key", "key": "api-key"}},
        "gate": {"plan": NGRAM_PLAN, "planFiles": NGRAM_FILES},
        "exporter": {"settings": {"acceptanceSloTarget": 2.0, "workloadDemandTokens": 20480}},
    },
    "allow-inconclusive": {
        "engine": {"speculativeConfig": NGRAM_SPEC},
        "gate": {"plan": NGRAM_PLAN, "planFiles": NGRAM_FILES, "allowInconclusive": True},
    },
    "sglang": {
        "engine": {"kind": "sglang", "model": "meta-llama/Llama-3.1-8B-Instruct", "port": 30000,
                   "tensorParallelSize": 2, "maxModelLen": 32768, "speculativeConfig": SGLANG_SPEC,
                   "apiKey": {"existingSecret": "engine-key", "key": "api-key"}},
        "gate": {"plan": SGLANG_PLAN, "planFiles": SGLANG_FILES},
    },
    "monitoring-off": {
        "monitoring": {"serviceMonitor": {"enabled": False}, "prometheusRule": {"enabled": False},
                       "dashboard": {"enabled": False}},
    },
    "networkpolicy": {
        "networkPolicy": {"enabled": True},
        "commonLabels": {"team": "llm-serving"},
        "serve": {"enabled": True, "token": {"existingSecret": "gate-token", "key": "token"}},
        "gate": {"plan": NGRAM_PLAN, "planFiles": NGRAM_FILES},
    },
    "llamacpp": {
        "engine": {"kind": "llamacpp", "model": "/models/target.gguf", "servedModelName": "tiny", "port": 8080,
                   "maxModelLen": 512, "speculativeConfig": LLAMACPP_SPEC},
        "gate": {"plan": LLAMACPP_PLAN, "planFiles": NGRAM_FILES},
    },
    "hook-off": {
        "engine": {"speculativeConfig": NGRAM_SPEC},
        "gate": {"plan": NGRAM_PLAN, "planFiles": NGRAM_FILES, "hook": {"enabled": False}},
    },
    # prometheus-operator users without a Service scrape, grafana-operator users, HTTPS on the gate.
    "platform": {
        "engine": {"speculativeConfig": NGRAM_SPEC},
        "gate": {"plan": NGRAM_PLAN, "planFiles": NGRAM_FILES},
        "serve": {"enabled": True, "token": {"existingSecret": "gate-token", "key": "token"},
                  "tls": {"secretName": "gate-tls"}},
        "monitoring": {"serviceMonitor": {"enabled": False}, "podMonitor": {"enabled": True},
                       "grafanaDashboard": {"enabled": True, "folder": "LLM serving"}},
    },
    "serve-controller": {
        "imagePullSecrets": [{"name": "regcred"}],
        "engine": {"speculativeConfig": NGRAM_SPEC, "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                   "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
        "gate": {"plan": NGRAM_PLAN, "planFiles": NGRAM_FILES},
        "serve": {"enabled": True, "token": {"existingSecret": "gate-token", "key": "token"}},
        "controller": {"enabled": True, "replicas": 2},
    },
}

# Cases that enable a drafter with the hook on: the pre-install/pre-upgrade gate renders.
HOOK_CASES = [c for c, v in CASES.items()
              if v.get("engine", {}).get("speculativeConfig") and v.get("gate", {}).get("hook", {}).get("enabled", True)]


@dataclass(frozen=True)
class Rendered:
    """One `helm template` result."""

    case: str
    api: bool
    values: dict[str, Any]
    objects: tuple[dict[str, Any], ...]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str) -> dict[str, Any]:
        found = [o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.case}: expected one {kind}/{name}, found {len(found)}"
        return found[0]

    def names(self) -> list[str]:
        return sorted(f"{o['kind']}/{o['metadata']['name']}" for o in self.objects)


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120, check=False)


def write_values(tmp: Path, values: dict[str, Any]) -> Path:
    path = tmp / "values.yaml"
    path.write_text(json.dumps(values), encoding="utf-8")  # JSON is YAML: no dumper ambiguity
    return path


def template(helm: Path, values_file: Path | None, api: bool, chart: Path = CHART) -> subprocess.CompletedProcess[str]:
    args = ["template", RELEASE, str(chart), "--namespace", NAMESPACE]
    if values_file is not None:
        args += ["-f", str(values_file)]
    if api:
        args += ["--api-versions", MONITORING_API, "--api-versions", GRAFANA_API]
    return run_helm(helm, *args)


def parse_objects(text: str) -> tuple[dict[str, Any], ...]:
    return tuple(d for d in yaml.safe_load_all(text) if d)


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """What helm does with -f: maps merge key by key, everything else replaces."""
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def default_values() -> dict[str, Any]:
    return yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))


def containers(pod_owner: dict[str, Any]) -> list[dict[str, Any]]:
    return pod_owner["spec"]["template"]["spec"]["containers"]


def container(pod_owner: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in containers(pod_owner) if c["name"] == name]
    assert len(found) == 1, f"container {name} not found in {pod_owner['metadata']['name']}"
    return found[0]


def env_of(c: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in c.get("env", [])}


def init_containers(pod_owner: dict[str, Any]) -> list[dict[str, Any]]:
    return pod_owner["spec"]["template"]["spec"].get("initContainers", [])


def all_containers(pod_owner: dict[str, Any]) -> list[dict[str, Any]]:
    """Init containers first, then the long-running ones: every process the pod starts."""
    return [*init_containers(pod_owner), *containers(pod_owner)]


# The init container of an SGLang engine with an API key: it writes the key into SGLang's --config file.
ENGINE_KEY_INIT = "engine-api-key"

# Quotes, backslash, colon, `#` (a YAML comment if unquoted), unicode in and beyond the BMP, a tab, YAML's
# own keywords and flow indicators: json.dumps would write the emoji as a surrogate pair PyYAML reads back wrong.
AWKWARD_KEYS = ['sk-"quoted" \'single\' back\\slash: colon #hash', "clé-ünïcode-鍵-😀", "tab\there",
                "null", "[not, a, list]", "{a: b}", "& * ! | > % @ `", "x" * 300]


def run_key_writer(init: dict[str, Any], key: str, config_file: Path, python: str,
                   timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the rendered init container's exact command, its `python3` replaced by `python` (the project's
    interpreter here, the SGLang venv's in tests/e2e), with the rendered environment: the Secret's value for
    its secretKeyRef, and the file path moved to `config_file`."""
    command = [*init["command"], *init.get("args", [])]
    assert command[0] == "python3", command
    env: dict[str, str] = {}
    for var in init["env"]:
        if "valueFrom" in var:
            assert set(var["valueFrom"]) == {"secretKeyRef"}, var
            env[var["name"]] = key
        else:
            env[var["name"]] = var["value"]
    assert env.get("ENGINE_CONFIG_FILE"), init["env"]
    env["ENGINE_CONFIG_FILE"] = str(config_file)
    return subprocess.run([python, *command[1:]], env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
