"""`specgate serve` and `specgate controller` as commands: real processes, the real evaluator, one-line errors.

The plan is a minimal real plan (vLLM with ngram speculation, no workload, an SLO target — without
one the acceptance line fails before rollout since issue 10): the real evaluator calls kv_pool
inconclusive (no request mix) and acceptance pass (pre) / inconclusive (post, no live windows),
so the decision is inconclusive in both phases — which must block Flagger (403) and read
`"decision": "inconclusive"` for Argo (200).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

PLAN = """\
name: qwen-ngram
target: {name: Qwen/Qwen3-8B}
engine:
  kind: vllm
  speculative: {method: ngram, num_speculative_tokens: 3}
slo: {target_acceptance_length: 2.0}
"""


def specgate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gate.cli", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    p = tmp_path / "qwen-ngram.yaml"
    p.write_text(PLAN)
    return p


@pytest.fixture
def served(plan: Path, tmp_path: Path) -> Iterator[str]:
    token = tmp_path / "token"
    token.write_text("cli-token\n")
    env = {k: v for k, v in os.environ.items() if k != "SPECGATE_GATE_TOKEN"}
    proc = subprocess.Popen([sys.executable, "-m", "gate.cli", "serve", "--plan", str(plan),
                             "--listen", "127.0.0.1:0", "--token-file", str(token)],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        assert m, line
        yield m.group(1)
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


def test_serve_answers_with_the_real_evaluator(served: str) -> None:
    auth = {"Authorization": "Bearer cli-token"}
    r = requests.get(f"{served}/argo", headers=auth, timeout=30)
    assert r.status_code == 200
    body = r.json()
    assert body["decision"] == "inconclusive" and body["phase"] == "post"
    assert body["checks"]["kv_pool"]["status"] == "inconclusive"
    assert "no request mix" in body["checks"]["kv_pool"]["reason"]
    assert body["checks"]["artifacts"]["status"] == "n/a"
    f = requests.post(f"{served}/flagger", json={"name": "qwen", "namespace": "llm", "phase": "Progressing",
                                                 "checksum": "abc", "metadata": {"token": "cli-token",
                                                                                 "phase": "pre"}}, timeout=30)
    assert f.status_code == 403 and f.json()["phase"] == "pre"
    assert any(x.startswith("kv_pool: inconclusive") for x in f.json()["reasons"])
    assert requests.get(f"{served}/argo", timeout=30).status_code == 401
    m = requests.get(f"{served}/metrics", timeout=30).text
    assert 'specgate_gate_decisions_total{decision="inconclusive",deployment="qwen-ngram"} 1.0' in m
    assert 'specgate_gate_decisions_total{decision="inconclusive",deployment="qwen"} 1.0' in m


def test_serve_help_is_the_module_docstring() -> None:
    r = specgate("serve", "--help")
    assert r.returncode == 0 and "Argo Rollouts (web metric) and Flagger (webhook)" in r.stdout


def test_serve_bad_plan_is_one_line_exit_3(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(PLAN.replace("kind: vllm", "kind: vllm\n  kv_dtyp: fp8"))
    r = specgate("serve", "--plan", str(bad), "--listen", "127.0.0.1:0")
    assert r.returncode == 3
    assert r.stderr.count("\n") == 1 and "engine.kv_dtyp: unknown key" in r.stderr and "Traceback" not in r.stderr


def test_serve_empty_token_file_is_exit_3(plan: Path, tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    r = specgate("serve", "--plan", str(plan), "--token-file", str(empty))
    assert r.returncode == 3 and "is empty" in r.stderr


def test_serve_bad_listen_is_exit_3(plan: Path) -> None:
    r = specgate("serve", "--plan", str(plan), "--listen", "nowhere")
    assert r.returncode == 3 and "HOST:PORT" in r.stderr  # gate CLI: invalid input is exit 3


def test_controller_missing_plan_is_exit_3(tmp_path: Path) -> None:
    r = specgate("controller", "--plan", str(tmp_path / "none.yaml"), "--namespace", "llm")
    assert r.returncode == 3 and "no plan at" in r.stderr and "Traceback" not in r.stderr


def test_controller_without_cluster_access_is_exit_3(plan: Path, tmp_path: Path) -> None:
    env = {"KUBECONFIG": str(tmp_path / "no-kubeconfig"), "KUBERNETES_SERVICE_HOST": ""}
    r = specgate("controller", "--plan", str(plan), "--namespace", "llm", "--metrics-listen", "", env=env)
    assert r.returncode == 3 and "no cluster access" in r.stderr and "Traceback" not in r.stderr


def test_token_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from gate.commands.serve import read_token

    monkeypatch.setenv("SPECGATE_GATE_TOKEN", "from-env")
    assert read_token(None) == "from-env"
    monkeypatch.delenv("SPECGATE_GATE_TOKEN")
    assert read_token(None) is None


def test_token_from_a_secret_with_a_trailing_newline_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kubectl create secret --from-file` keeps the file's newline; the env token must match the token file's."""
    from gate.commands.serve import read_token

    monkeypatch.setenv("SPECGATE_GATE_TOKEN", "from-env\n")
    assert read_token(None) == "from-env"


def test_serve_set_but_empty_token_variable_is_exit_3_not_an_open_gate(plan: Path) -> None:
    """The chart always sets SPECGATE_GATE_TOKEN from a Secret; an empty key there must not mean 'no token'."""
    r = specgate("serve", "--plan", str(plan), "--listen", "127.0.0.1:0", env={"SPECGATE_GATE_TOKEN": " \n"})
    assert r.returncode == 3 and "SPECGATE_GATE_TOKEN is set but empty" in r.stderr and "Traceback" not in r.stderr
