"""examples/argo (Argo Rollouts AnalysisTemplates) and examples/flagger (Canary, MetricTemplate) validated
against the projects' own CRD schemas at pinned tags (tests/helm/crds/README.md), strictly (unknown fields are
errors, as with an API server's strict field validation); the Argo ones also with npm
@kubernetes-models/argo-rollouts. Their queries select only recording rules the shipped rules file defines, and
the web AnalysisTemplate's request is sent, as Argo would send it, to a real `specgate serve`."""

from __future__ import annotations

import copy
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml

from exporter import names
from tests.helm.crd_schemas import CRDS, PINNED, VALIDATORS, digest
from tests.helm.crd_schemas import errors as _errors

REPO = Path(__file__).resolve().parents[2]
NPM = REPO / ".tools" / "npm"
EXAMPLES = sorted((REPO / "examples" / "argo").glob("*.yaml")) + sorted((REPO / "examples" / "flagger").glob("*.yaml"))


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_crd_files_are_the_pinned_ones() -> None:
    assert sorted(PINNED) == sorted(p.name for p in CRDS.iterdir() if p.name != "README.md")
    for name, want in PINNED.items():
        assert digest(name) == want, name
    assert {("argoproj.io/v1alpha1", "AnalysisTemplate"), ("flagger.app/v1beta1", "Canary"),
            ("flagger.app/v1beta1", "MetricTemplate")} <= set(VALIDATORS)


def test_examples_exist() -> None:
    kinds = sorted(d["kind"] for p in EXAMPLES for d in _docs(p))
    assert kinds == ["AnalysisTemplate", "AnalysisTemplate", "Canary", "MetricTemplate"], kinds


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_validates_against_its_crd(path: Path) -> None:
    for obj in _docs(path):
        assert _errors(obj) == [], path.name


def test_strict_crd_check_can_fail() -> None:
    at = _docs(REPO / "examples" / "argo" / "analysistemplate-web.yaml")[0]
    typo = copy.deepcopy(at)
    typo["spec"]["metrics"][0]["sucessCondition"] = typo["spec"]["metrics"][0].pop("successCondition")
    assert any("sucessCondition" in e for e in _errors(typo))
    wrong = copy.deepcopy(at)
    wrong["spec"]["metrics"][0]["provider"]["web"]["timeoutSeconds"] = "10"
    assert _errors(wrong)
    canary = _docs(REPO / "examples" / "flagger" / "canary.yaml")[0]
    bad = copy.deepcopy(canary)
    bad["spec"]["analysis"]["webhooks"][0]["type"] = "pre-rolout"
    assert any("pre-rolout" in e for e in _errors(bad))
    del bad["spec"]["targetRef"]
    assert any("targetRef" in e for e in _errors(bad))


# --- @kubernetes-models/argo-rollouts -----------------------------------------------------------------

def _argo_models(objs: list[dict[str, Any]], tmp_path: Path) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or not (NPM / "node_modules" / "@kubernetes-models" / "argo-rollouts").is_dir():
        pytest.fail("node or @kubernetes-models/argo-rollouts missing: run `make tools` (tools/install_npm.sh)")
    script = NPM / "validate_argo.mjs"  # resolved against .tools/npm/node_modules
    shutil.copyfile(Path(__file__).with_name("validate_argo.mjs"), script)
    data = tmp_path / "objs.json"
    data.write_text(json.dumps(objs))
    out = subprocess.run([node, str(script), str(data)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_argo_examples_validate_with_the_npm_models(tmp_path: Path) -> None:
    objs = [d for p in EXAMPLES if p.parent.name == "argo" for d in _docs(p)]
    bad = copy.deepcopy(objs[0])
    bad["spec"]["metrics"][0]["provider"].setdefault("web", {})["timeoutSeconds"] = "10"
    bad["metadata"]["name"] = "wrong-type"
    results = _argo_models([*objs, bad], tmp_path)
    assert [r["ok"] for r in results] == [True] * len(objs) + [False], results
    assert "timeoutSeconds must be integer" in results[-1]["error"]


# --- the queries and the web request ------------------------------------------------------------------

def _queries() -> list[tuple[str, str]]:
    out = []
    for p in EXAMPLES:
        for d in _docs(p):
            if d["kind"] == "AnalysisTemplate":
                out += [(p.name, m["provider"]["prometheus"]["query"]) for m in d["spec"]["metrics"]
                        if "prometheus" in m["provider"]]
            elif d["kind"] == "MetricTemplate":
                out.append((p.name, d["spec"]["query"]))
    return out


def test_queries_select_the_shipped_recording_rules() -> None:
    queries = _queries()
    assert len(queries) == 3
    for name, q in queries:
        plain = re.sub(r"\{\{\s*[\w.-]+\s*\}\}", "x", q)
        found: list[str] = []

        def visit(node: object, found: list[str] = found) -> bool:
            if isinstance(node, promql_parser.VectorSelector):
                found.append(node.name)
            return True

        promql_parser.walk(promql_parser.parse(plain), visit)
        assert found and set(found) <= set(names.RECORDED), (name, found)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_web_template_request_is_answered_by_specgate_serve(tmp_path: Path) -> None:
    """Argo's request, built from the template (url and headers with the args filled in), against a real
    `specgate serve` on loopback: 200 with a decision the two conditions can read."""
    (at,) = _docs(REPO / "examples" / "argo" / "analysistemplate-web.yaml")
    port = _free_port()
    token = "t0ken-for-the-test"
    (tmp_path / "token").write_text(token + "\n")
    args = {"gate-url": f"http://127.0.0.1:{port}", "deployment": "qwen", "token": token}
    web = at["spec"]["metrics"][0]["provider"]["web"]

    def fill(s: str) -> str:
        return re.sub(r"\{\{args\.([\w-]+)\}\}", lambda m: args[m.group(1)], s)

    plan = REPO / "examples" / "plans" / "seed004-qwen3.6-35b-a3b-mtp.yaml"
    proc = subprocess.Popen([str(REPO / ".venv" / "bin" / "specgate"), "serve", "--plan", str(plan), "--listen",
                             f"127.0.0.1:{port}", "--token-file", str(tmp_path / "token")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.time() < deadline, "specgate serve did not come up"
                time.sleep(0.2)
        req = urllib.request.Request(fill(web["url"]), method=web["method"],
                                     headers={h["key"]: fill(h["value"]) for h in web["headers"]})
        with urllib.request.urlopen(req, timeout=web["timeoutSeconds"]) as r:
            assert r.status == 200
            body = json.loads(r.read())
        assert body["phase"] == "post"
        assert body["decision"] in ("pass", "fail", "inconclusive")
        # This plan carries no live evidence: the post phase must not pass on it.
        assert body["decision"] == "inconclusive", body
        m = at["spec"]["metrics"][0]
        assert m["successCondition"] == 'result.decision == "pass"'
        assert m["failureCondition"] == 'result.decision == "fail"'
        wrong = urllib.request.Request(fill(web["url"]), headers={"Authorization": "Bearer nope"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(wrong, timeout=10)
        assert e.value.code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=10)
