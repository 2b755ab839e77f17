"""Prometheus evidence against a real Prometheus (the pinned 2.42 binary) holding backfilled history.

History is written with `promtool tsdb create-blocks-from openmetrics`, so the windows are
known exactly and nothing waits for scrapes. Two pods of one deployment: pod-a accepts
L = 3.0 per window except one window in which it restarted (reset: never evidence, even
though its L there is 1.0); pod-b accepts L = 1.2. Judged per pod, the fleet fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from gate.checks.acceptance.fleet_rule import judge_fleet
from gate.evidence import prometheus as prom
from gate.plan.model import SLO, PrometheusSource, plan_from_dict
from tests.gate.helpers import REPO, serve, tiny_plan

TOOLS = REPO / ".tools" / "bin"
STEP = 15  # seconds between samples
WINDOW = 60
WINDOWS = 10
RESTART_WINDOW = 4  # pod-a restarts inside the 5th window


def _tool(name: str) -> Path:
    found = shutil.which(name) or (str(TOOLS / name) if (TOOLS / name).exists() else None)
    if not found:
        pytest.fail(f"{name} not found on PATH or in .tools/bin (run tools/install_prometheus.sh .tools/bin)")
    return Path(found)


def _history(t0: int) -> str:
    """OpenMetrics text: cumulative specgate_* counters for two pods, sample every 15 s."""
    fams: dict[str, list[str]] = {"specgate_spec_drafts": [], "specgate_spec_accepted_tokens": [],
                                  "specgate_spec_draft_tokens": [], "specgate_engine_restarts": [],
                                  "specgate_engine_up": []}
    n = WINDOW * WINDOWS // STEP
    for pod, acc_per_step in (("pod-a", 50), ("pod-b", 5)):
        drafts = accepted = restarts = 0
        labels = f'pod="{pod}",model="tiny",rank="0",engine="vllm"'
        for i in range(n + 1):
            t = t0 + STEP * i
            if i > 0:
                drafts += 25
                in_restart = pod == "pod-a" and (RESTART_WINDOW * WINDOW < STEP * i <= (RESTART_WINDOW + 1) * WINDOW)
                accepted += 0 if in_restart else acc_per_step
                if in_restart and STEP * i == RESTART_WINDOW * WINDOW + STEP:
                    restarts += 1
            fams["specgate_spec_drafts"].append(f"specgate_spec_drafts_total{{{labels}}} {drafts} {t}")
            fams["specgate_spec_accepted_tokens"].append(f"specgate_spec_accepted_tokens_total{{{labels}}} {accepted} {t}")
            fams["specgate_spec_draft_tokens"].append(f"specgate_spec_draft_tokens_total{{{labels}}} {3 * drafts} {t}")
            fams["specgate_engine_restarts"].append(f"specgate_engine_restarts_total{{{labels}}} {restarts} {t}")
            fams["specgate_engine_up"].append(f'specgate_engine_up{{pod="{pod}",engine="vllm"}} 1 {t}')
    out = []
    for fam, lines in fams.items():
        out.append(f"# TYPE {fam} {'gauge' if fam == 'specgate_engine_up' else 'counter'}")
        out += lines
    out.append("# EOF")
    return "\n".join(out) + "\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def prom_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, float]]:
    d = tmp_path_factory.mktemp("prom")
    # The history ends now: the post phase only believes windows that ended within lookback_seconds of the
    # evaluation (issue 10), so backfilled history from hours ago would be stale there.
    t0 = int(time.time()) - WINDOW * WINDOWS
    t0 -= t0 % WINDOW
    (d / "history.om").write_text(_history(t0))
    subprocess.run([str(_tool("promtool")), "tsdb", "create-blocks-from", "openmetrics", "-q",
                    str(d / "history.om"), str(d / "data")], check=True, capture_output=True)
    (d / "prometheus.yml").write_text("global:\n  scrape_interval: 1h\n")
    port = _free_port()
    proc = subprocess.Popen([str(_tool("prometheus")), f"--config.file={d / 'prometheus.yml'}",
                             f"--storage.tsdb.path={d / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                if requests.get(url + "/-/ready", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.time() > deadline or proc.poll() is not None:
                pytest.fail("Prometheus did not become ready")
            time.sleep(0.2)
        yield url, float(t0 + WINDOW * WINDOWS)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _src(end: float, **kw) -> PrometheusSource:
    return PrometheusSource(end=end, **kw)


def test_per_pod_windows_with_restart_marked_reset(prom_server: tuple[str, float]) -> None:
    url, end = prom_server
    slo = SLO(target_acceptance_length=2.0, window_seconds=WINDOW, min_windows=5, required_fraction=0.9)
    ev = prom.collect(_src(end), url, WINDOW, WINDOW * WINDOWS, min_drafts=1, slo=slo)
    assert ev.errors == [] and ev.windows == [] and ev.fleet is not None
    rows = {r.pod: r for r in ev.fleet.rows}
    a, b = rows["pod-a"], rows["pod-b"]
    # pod-a: one window reset (its L 1.0 there is never evidence), 9 windows of 100 drafts, 200 accepted per
    # minute -> L = 3.0 (increase() extrapolation scales both counters alike); pod-b: 20 per 100 -> L = 1.2
    assert (a.windows, a.excluded["reset"], a.restarts) == (WINDOWS - 1, 1, pytest.approx(1.0))
    assert a.acceptance_length == pytest.approx(3.0) and a.min_acceptance_length == pytest.approx(3.0)
    assert (b.windows, b.met, b.acceptance_length) == (WINDOWS, 0, pytest.approx(1.2))
    fleet = judge_fleet(ev.fleet, slo, _src(end).fleet, require_engine_up=True)  # as the acceptance line judges it
    assert [r.status.value for r in fleet.rows if r.pod in ("pod-a", "pod-b")] == ["pass", "fail"]
    assert fleet.status.value == "fail" and ev.fleet.queries == 10  # the pre-flight, eight, the scrape targets


def test_fleet_judged_per_pod(prom_server: tuple[str, float]) -> None:
    from gate.verdict.evaluate import evaluate

    url, end = prom_server
    data = tiny_plan("draft")
    # Two windows of slack on the lookback: the history's first window must still count as recent while the
    # test runs (the post phase drops windows that ended more than lookback_seconds ago).
    data["slo"].update(target_acceptance_length=2.0, window_seconds=WINDOW, min_windows=5, required_fraction=0.9,
                       lookback_seconds=WINDOW * (WINDOWS + 2))
    data["evidence"] = {"prometheus": {"url": url, "end": end}}
    v = evaluate(plan_from_dict(data), phase="post")
    acc = v.checks["acceptance"]
    assert acc.status.value == "fail"
    pods = {p["pod"]: p for p in acc.values["fleet"]["pods"]}
    a, b = pods["pod-a"], pods["pod-b"]
    assert (a["status"], a["windows"], a["met"]) == ("pass", WINDOWS - 1, WINDOWS - 1)
    assert (b["status"], b["met"]) == ("fail", 0)
    assert a["excluded"]["reset"] == 1
    assert "failed: pod-b" in acc.reason
    data["evidence"]["prometheus"]["selector"] = 'pod="pod-a"'
    v = evaluate(plan_from_dict(data), phase="post")
    # the fleet passes on pod-a alone (the line's other inputs, L* and the target's source, are not this test's)
    assert v.checks["acceptance"].values["fleet"]["status"] == "pass", v.checks["acceptance"].reason
    assert v.checks["acceptance"].status.value != "fail"


def test_no_matching_series_is_an_error(prom_server: tuple[str, float]) -> None:
    url, end = prom_server
    ev = prom.collect(_src(end, selector='pod="nope"'), url, WINDOW, 600, 1)
    assert ev.windows == [] and "no specgate_spec_drafts_total series" in ev.errors[0]


def test_timeout_is_inconclusive_not_a_traceback() -> None:
    with serve(lambda path: (200, "application/json", b"{}"), delay=3.0) as url:
        data = tiny_plan("draft")
        data["evidence"] = {"prometheus": {"url": url, "timeout_seconds": 0.5}}
        from gate.verdict.evaluate import evaluate

        v = evaluate(plan_from_dict(data), phase="post")
    acc = v.checks["acceptance"]
    assert acc.status.value == "inconclusive"
    assert "did not answer within 0.5s" in acc.reason
    assert v.decision.value != "pass"


def test_auth_headers_sent_and_never_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, str] = {}

    def route(path: str):
        return 401, "application/json", b'{"status":"error","error":"unauthorized"}'

    import http.server

    orig = http.server.BaseHTTPRequestHandler.parse_request

    def spy(self):  # record the Authorization header the gate sent
        ok = orig(self)
        seen["auth"] = self.headers.get("Authorization", "")
        return ok

    monkeypatch.setattr(http.server.BaseHTTPRequestHandler, "parse_request", spy)
    monkeypatch.setenv("PROM_TOKEN", "s3cret-token")
    with serve(route) as url:
        data = tiny_plan("draft")
        data["evidence"] = {"prometheus": {"url": url, "bearer_token_env": "PROM_TOKEN"}}
        from gate.verdict.evaluate import evaluate

        v = evaluate(plan_from_dict(data), phase="post")
    assert seen["auth"] == "Bearer s3cret-token"
    assert "HTTP 401: unauthorized" in v.checks["acceptance"].reason
    import json

    assert "s3cret-token" not in json.dumps(v.to_json())


def test_missing_token_env_is_invalid_input(monkeypatch: pytest.MonkeyPatch) -> None:
    from gate.plan.model import PlanError

    monkeypatch.delenv("NO_SUCH_TOKEN_ENV", raising=False)
    src = PrometheusSource(bearer_token_env="NO_SUCH_TOKEN_ENV")
    with pytest.raises(PlanError, match="NO_SUCH_TOKEN_ENV is not set"):
        prom.client_for(src, "http://127.0.0.1:1")
    assert "NO_SUCH_TOKEN_ENV" not in os.environ


def test_credentials_in_urls_never_reach_reports_or_progress() -> None:
    """`--prometheus https://user:pass@host` or an exporter URL with credentials: reasons, values and
    progress lines name the source without them (the record already redacted its source list)."""
    import json

    from gate.verdict.evaluate import evaluate

    said: list[str] = []
    with serve(lambda path: (500, "application/json", b'{"status":"error","error":"boom"}')) as url:
        secret_url = url.replace("http://", "http://admin:hunter2@")
        data = tiny_plan("draft")
        v = evaluate(plan_from_dict(data), phase="post", prometheus=secret_url, metrics=[secret_url],
                     progress=said.append, sleep=lambda s: None)
    doc = json.dumps(v.to_json())
    assert v.checks["acceptance"].status.value == "inconclusive"
    assert "HTTP 500" in v.checks["acceptance"].reason and "127.0.0.1" in v.checks["acceptance"].reason
    assert "hunter2" not in doc and "admin:" not in doc
    assert not any("hunter2" in s for s in said)
