"""Chart conventions: Artifact Hub metadata in Chart.yaml (home, sources, maintainers, artifacthub.io/*
annotations that match what the chart deploys) and the `helm test` hook Pod, whose script is run here for
real against a live specgate exporter on loopback (replaying real vLLM captures) and against one whose
engine is down."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm.render import CHART, FULLNAME, NAMESPACE, REPO, Rendered, default_values

CHART_META = yaml.safe_load((CHART / "Chart.yaml").read_text())
SPECGATE = REPO / ".venv" / "bin" / "specgate"
# https://artifacthub.io/docs/topics/annotations/helm/ (the categories Artifact Hub accepts).
CATEGORIES = {"ai-machine-learning", "database", "integration-delivery", "monitoring-logging", "networking",
              "security", "storage", "streaming-messaging"}


def test_chart_has_home_sources_and_maintainers() -> None:
    assert CHART_META["home"].startswith("https://")
    assert CHART_META["sources"] and all(s.startswith("https://") for s in CHART_META["sources"])
    for m in CHART_META["maintainers"]:
        assert m["name"] and (m.get("url", "").startswith("https://") or "@" in m.get("email", "")), m


def test_artifacthub_annotations() -> None:
    ann = CHART_META["annotations"]
    assert all(k.startswith("artifacthub.io/") for k in ann), ann.keys()
    assert ann["artifacthub.io/category"] in CATEGORIES
    assert ann["artifacthub.io/prerelease"] == ("true" if CHART_META["version"].startswith("0.") else "false")
    for key in ("artifacthub.io/links", "artifacthub.io/recommendations"):
        items = yaml.safe_load(ann[key])
        assert items and all(i["url"].startswith("https://") for i in items), key


def test_artifacthub_images_are_what_the_values_deploy() -> None:
    """Artifact Hub scans the listed images: they must be the chart's own defaults, tag for tag."""
    v = default_values()
    expected = {f"{v['image']['repository']}:{v['image']['tag'] or CHART_META['appVersion']}"}
    expected |= {f"{i['repository']}:{i['tag']}" for i in v["engine"]["images"].values()}
    listed = {i["image"] for i in yaml.safe_load(CHART_META["annotations"]["artifacthub.io/images"])}
    assert listed == expected


def _test_pods(r: Rendered) -> list[dict[str, Any]]:
    return [o for o in r.objects if o["kind"] == "Pod"
            and (o["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"]


def test_helm_test_pod_reads_the_exporter_through_the_service(r: Rendered) -> None:
    pods = _test_pods(r)
    if not r.values["tests"]["enabled"]:
        assert pods == []
        return
    (pod,) = pods
    assert pod["metadata"]["annotations"]["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Never" and spec["automountServiceAccountToken"] is False
    (c,) = spec["containers"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    env = {e["name"]: e["value"] for e in c["env"]}
    svc = r.one("Service", FULLNAME)
    (port,) = [p["port"] for p in svc["spec"]["ports"] if p["name"] == "metrics"]
    assert env["SPECGATE_TEST_URL"] == f"http://{FULLNAME}.{NAMESPACE}.svc:{port}/metrics"


def test_tests_can_be_switched_off(helm: Path, tmp_path: Path) -> None:
    from tests.helm.render import parse_objects, template, write_values

    out = template(helm, write_values(tmp_path, {"tests": {"enabled": False}}), api=False)
    assert out.returncode == 0, out.stderr
    assert not [o for o in parse_objects(out.stdout) if o["kind"] == "Pod"]


# --- the Pod's script, run for real ------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _script_and_env(rendered: dict[tuple[str, bool], Rendered]) -> tuple[list[str], dict[str, str]]:
    (pod,) = _test_pods(rendered[("defaults", False)])
    (c,) = pod["spec"]["containers"]
    return c["command"] + c["args"], {e["name"]: e["value"] for e in c["env"]}


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 20) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, "process exited early"
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{url} never answered")


@pytest.fixture
def exporter_with_engine(tmp_path: Path):
    """`specgate replay` (real vLLM captures) and the exporter scraping it; both stopped by PID."""
    engine_port, exporter_port = _free_port(), _free_port()
    procs = []
    try:
        procs.append(subprocess.Popen([str(SPECGATE), "replay", "--port", str(engine_port), "--loop"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait_http(f"http://127.0.0.1:{engine_port}/metrics", procs[0])
        procs.append(subprocess.Popen([str(SPECGATE), "exporter", "run", "--engine-url",
                                       f"http://127.0.0.1:{engine_port}", "--listen", f"127.0.0.1:{exporter_port}",
                                       "--scrape-interval", "0.5"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait_http(f"http://127.0.0.1:{exporter_port}/metrics", procs[1])
        yield exporter_port, engine_port, procs
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)


def _run_script(cmd: list[str], env: dict[str, str], url: str, deadline: str) -> subprocess.CompletedProcess:
    assert cmd[:2] == ["python", "-c"]
    run_env = {**os.environ, **env, "SPECGATE_TEST_URL": url, "SPECGATE_TEST_DEADLINE_SECONDS": deadline}
    return subprocess.run([sys.executable, *cmd[1:]], env=run_env, capture_output=True, text=True, timeout=60)


def test_helm_test_script_passes_against_a_live_exporter(rendered, exporter_with_engine) -> None:
    cmd, env = _script_and_env(rendered)
    exporter_port, _, _ = exporter_with_engine
    out = _run_script(cmd, env, f"http://127.0.0.1:{exporter_port}/metrics", "20")
    assert out.returncode == 0, out.stderr
    assert "specgate_engine_up 1" in out.stdout


def test_helm_test_script_fails_when_the_engine_is_down(rendered, exporter_with_engine) -> None:
    cmd, env = _script_and_env(rendered)
    exporter_port, _, procs = exporter_with_engine
    procs[0].terminate()
    procs[0].wait(timeout=10)
    time.sleep(1.5)  # a few scrape intervals: the exporter notices
    out = _run_script(cmd, env, f"http://127.0.0.1:{exporter_port}/metrics", "3")
    assert out.returncode == 1
    assert "specgate_engine_up is 0" in out.stderr


def test_helm_test_script_fails_without_an_exporter(rendered) -> None:
    cmd, env = _script_and_env(rendered)
    out = _run_script(cmd, env, f"http://127.0.0.1:{_free_port()}/metrics", "1")
    assert out.returncode == 1 and "fail:" in out.stderr
