"""Fleet verdicts on two real metrics engines: the one bad pod among many good ones is named, pods with
missing data are named, a missing pod is never a pass (gate.evidence.fleet; design.md "Prometheus evidence").

Each backend holds the same synthetic fleet (tests/gate/fleet_stack.py): 40 pods x 2 h at a 30 s step,
pod 7 accepting L ~ 1.6 against a 2.0 target, pod 3 scraped (engine_up) but with no speculative
counters, pod 5 restarting once inside the lookback. Prometheus 2.42 gets it backfilled by promtool,
VictoriaMetrics 1.79 through /api/v1/import/prometheus; the same client and queries judge both.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.checks.acceptance.fleet_rule import FleetVerdict, judge_fleet
from gate.evidence import prometheus as prom
from gate.plan.model import SLO, PrometheusSource, plan_from_dict
from tests.gate import fleet_stack
from tests.gate.helpers import serve, tiny_plan

PODS = 40
BAD, SILENT, RESTARTED = 7, 3, 5
SLO_ = SLO(target_acceptance_length=2.0, window_seconds=60, lookback_seconds=3600, min_windows=5,
           required_fraction=0.95)


@pytest.fixture(scope="module", params=["prometheus", "victoriametrics"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    end = int(time.time()) // 60 * 60 - 60
    spec = fleet_stack.FleetSpec(pods=PODS, end=end, seconds=2 * 3600, bad=(BAD,), silent=(SILENT,))
    start = getattr(fleet_stack, request.param)
    try:
        server = start(spec, tmp_path_factory.mktemp(request.param))
    except FileNotFoundError as e:
        pytest.fail(f"{e} (tools/install_prometheus.sh, tools/install_victoriametrics.sh)")
    try:
        yield server.url, end
    finally:
        server.stop()


def _collect(url: str, end: int, **src: Any) -> prom.MetricsEvidence:
    return prom.collect(PrometheusSource(end=end, **src), url, SLO_.window_seconds, SLO_.lookback_seconds,
                        min_drafts=1, slo=SLO_, k=fleet_stack.K, method="draft_model")


def _judged(url: str, end: int, **src: Any) -> FleetVerdict | None:
    """The fleet's table judged as the acceptance line judges it in post (gate.checks.acceptance.fleet_rule)."""
    ev = _collect(url, end, **src)
    if ev.fleet is None:
        return None
    return judge_fleet(ev.fleet, SLO_, PrometheusSource(**src).fleet, require_engine_up=True)


def _pod(i: int) -> str:
    return f"llm/vllm-{i:05d}"


def test_the_one_bad_pod_is_named_among_good_ones(backend: tuple[str, int]) -> None:
    url, end = backend
    ev = _collect(url, end, fleet={"group_by": ["model", "drafter_revision"]})
    assert ev.errors == [] and ev.fleet is not None
    table = ev.fleet
    assert table.queries == 10  # fixed, whatever the number of pods (the pre-flight, eight, the scrape targets)
    fleet = judge_fleet(table, SLO_, PrometheusSource(fleet={"group_by": ["model", "drafter_revision"]}).fleet,
                        require_engine_up=True)
    assert len(fleet.rows) == PODS and fleet.counts["pods"] == PODS
    assert [r.pod for r in fleet.failed()] == [_pod(BAD)]
    bad = next(r.facts for r in fleet.rows if r.pod == _pod(BAD))
    assert bad.windows == 60 and bad.met == 0 and bad.below_slo_share == 1.0
    assert bad.acceptance_length == pytest.approx(fleet_stack.BAD_L, abs=0.1)
    # the pod with no speculative counters is named, never silently skipped and never a pass
    assert [(r.pod, r.reason) for r in fleet.inconclusive()] == [(_pod(SILENT), "no drafts series in the lookback")]
    restarted = next(r for r in fleet.rows if r.pod == _pod(RESTARTED))
    assert (restarted.status.value, restarted.facts.windows, restarted.facts.excluded["reset"],
            restarted.facts.restarts) == ("pass", 59, 1, pytest.approx(1.0, abs=0.05))
    good = [r.facts for r in fleet.rows if r.status.value == "pass"]
    assert len(good) == PODS - 2 and all(2.8 < (r.acceptance_length or 0) < 3.5 for r in good)
    assert all(r.engine_up is True for r in table.rows)
    assert {r.labels["drafter_revision"] for r in table.rows if r.model} == {"r0", "r1"}
    assert fleet.status.value == "fail" and _pod(BAD) in fleet.named()


def test_the_rule_and_pods_that_sent_nothing(backend: tuple[str, int]) -> None:
    url, end = backend
    sel = f'pod!="vllm-{BAD:05d}"'
    strict = _judged(url, end, selector=sel)
    assert strict is not None and strict.status.value == "inconclusive" and _pod(SILENT) in strict.named()
    lenient = _judged(url, end, selector=sel, fleet={"max_inconclusive_fraction": 0.05})
    assert lenient is not None and lenient.status.value == "pass"  # 1 of 39 inconclusive: 2.6 % ≤ 5 %
    # six pods the operator expects sent nothing at all: they count as inconclusive, never as passing
    short = _judged(url, end, selector=sel, fleet={"max_inconclusive_fraction": 0.05, "expected_pods": 45})
    assert short is not None and short.status.value == "inconclusive" and short.missing_pods == 6
    assert "6 expected but not seen" in short.reason and "6 expected pod(s) sent no series" in short.named()


def test_series_without_the_pod_label_are_named_not_pooled(backend: tuple[str, int]) -> None:
    url, end = backend
    fleet = _judged(url, end, fleet={"pod_labels": ["instance"]})
    assert fleet is not None and fleet.status.value == "inconclusive"
    assert all(r.status.value == "inconclusive" and "without a instance label" in r.reason for r in fleet.rows)


def test_specgate_check_reports_the_fleet(backend: tuple[str, int], tmp_path: Path) -> None:
    from gate.verdict.evaluate import evaluate
    from gate.verdict.report import render

    url, end = backend
    data = tiny_plan("draft")
    data["engine"]["served_model_name"] = fleet_stack.MODELS[1]  # the odd pods (7 among them) serve it
    data["slo"].update(SLO_.model_dump(include={"target_acceptance_length", "window_seconds", "lookback_seconds",
                                                "min_windows", "required_fraction"}))
    # Without a model matcher the other model's pods are in the fleet too: not this plan's evidence, named.
    data["evidence"] = {"prometheus": {"url": url, "end": end}}
    mixed = evaluate(plan_from_dict(data), phase="post").checks["acceptance"].values["fleet"]["pods"]
    assert all("not this plan's evidence" in p["reason"] for p in mixed if p["model"] == fleet_stack.MODELS[0])
    data["evidence"] = {"prometheus": {"url": url, "end": end, "selector": f'model="{fleet_stack.MODELS[1]}"',
                                       "fleet": {"max_inconclusive_fraction": 0.05}}}
    v = evaluate(plan_from_dict(data), phase="post")
    acc = v.checks["acceptance"]
    assert acc.status.value == "fail" and f"failed: {_pod(BAD)}" in acc.reason
    doc = json.loads(render(v, "json"))
    pods = doc["checks"]["acceptance"]["values"]["fleet"]["pods"]
    assert len(pods) == PODS // 2 - 1  # the odd pods but the silent one (no stream series carry its model)
    assert [p["pod"] for p in pods if p["status"] == "fail"] == [_pod(BAD)]
    assert all(p["status"] == "pass" for p in pods if p["pod"] != _pod(BAD))
    text, md = render(v, "text"), render(v, "markdown")
    assert "fleet FAIL" in text and _pod(BAD) in text and "19 pods" in text
    assert "| pod | model | windows | below SLO | L | restarts | engine up | verdict | reason |" in md
    assert f"| {_pod(BAD)} |" in md and f"| {_pod(1)} |" in md  # 18 passing pods: few enough to be listed too


def test_tenant_basic_auth_and_bearer_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mimir tenants (X-Scope-OrgID), basic auth (Thanos behind a proxy) and bearer tokens reach the backend;
    no secret reaches a report."""
    seen: list[dict[str, str]] = []
    import http.server

    orig = http.server.BaseHTTPRequestHandler.parse_request

    def spy(self: http.server.BaseHTTPRequestHandler) -> bool:
        ok = orig(self)
        seen.append({k: self.headers.get(k, "") for k in ("Authorization", "X-Scope-OrgID")})
        return ok

    monkeypatch.setattr(http.server.BaseHTTPRequestHandler, "parse_request", spy)
    monkeypatch.setenv("MIMIR_PASSWORD", "pa55-word")
    monkeypatch.setenv("THANOS_TOKEN", "t0ken")
    empty = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode()
    with serve(lambda path: (200, "application/json", empty)) as url:
        data = tiny_plan("draft")
        data["evidence"] = {"prometheus": {"url": url, "tenant": "team-a|team-b",
                                           "basic_auth": {"username": "gate", "password_env": "MIMIR_PASSWORD"}}}
        from gate.verdict.evaluate import evaluate

        v = evaluate(plan_from_dict(data), phase="post")
        assert {s["X-Scope-OrgID"] for s in seen} == {"team-a|team-b"}
        assert {s["Authorization"] for s in seen} == {"Basic " + base64.b64encode(b"gate:pa55-word").decode()}
        assert v.checks["acceptance"].status.value == "inconclusive"  # no series: named, never a pass
        seen.clear()
        data["evidence"]["prometheus"] = {"url": url, "bearer_token_env": "THANOS_TOKEN"}
        v2 = evaluate(plan_from_dict(data), phase="post")
    assert {s["Authorization"] for s in seen} == {"Bearer t0ken"} and {s["X-Scope-OrgID"] for s in seen} == {""}
    for doc in (json.dumps(v.to_json()), json.dumps(v2.to_json())):
        assert "pa55-word" not in doc and "t0ken" not in doc


def test_a_tenant_cannot_smuggle_headers() -> None:
    from gate.plan.model import PlanError

    data = tiny_plan("draft")
    data["evidence"] = {"prometheus": {"url": "http://127.0.0.1:1", "tenant": "a\r\nX-Evil: 1"}}
    with pytest.raises(PlanError, match="tenant"):
        plan_from_dict(data)


def test_pooled_by_the_backend_or_by_the_gate_the_rows_are_the_same(backend: tuple[str, int],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row is one series here, so the pre-flight asks for the series as they are and the gate pools
    (issue 26); forced to the backend's `sum by`, the same real backend gives the same table."""
    from gate.evidence.fleet.queries import FleetQueries

    url, end = backend
    gate_pooled = _judged(url, end, fleet={"group_by": ["model", "drafter_revision"]})
    monkeypatch.setattr(FleetQueries, "unpooled", lambda self: self)
    backend_pooled = _judged(url, end, fleet={"group_by": ["model", "drafter_revision"]})
    assert gate_pooled is not None and backend_pooled is not None
    assert [r.to_json() for r in gate_pooled.rows] == [r.to_json() for r in backend_pooled.rows]
    assert gate_pooled.status is backend_pooled.status and len(gate_pooled.rows) == PODS
