"""Contract tests of `specgate serve` over real HTTP: Argo Rollouts web metric and Flagger webhook.

Payload shapes come from the tools' docs: Argo's web provider sends GET (or POST with `body`) and reads
the JSON response (docs/analysis/web.md); Flagger POSTs `{"name", "namespace", "phase", "checksum",
"metadata": {...}}` (CanaryWebhookPayload) and treats 2xx as success (docs/usage/webhooks.md).
The evaluator is injected so each scenario is deterministic; one test goes through the real evaluator.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

import gate.webhook as webhook
from gate.checks import LINES
from gate.status import Decision, LineResult, Status
from gate.verdict.record import RunRecord
from gate.verdict.verdict import Verdict
from gate.webhook import GateConfig, make_server

TOKEN = "s3cret-gate-token"
FLAGGER_PAYLOAD = {"name": "podinfo", "namespace": "test", "phase": "Progressing",
                   "checksum": "6d7c5f8b9a", "metadata": {"test": "all"}}


def verdict(decision: str, phase: str, failing: dict[str, str] | None = None) -> Verdict:
    failing = failing or {}
    checks = {line: LineResult(Status.FAIL, failing[line]) if line in failing
              else LineResult(Status.PASS, f"{line} within budget") for line in LINES}
    if decision == "inconclusive":
        checks["acceptance"] = LineResult(Status.INCONCLUSIVE, "0 windows with ≥ 20 drafts; 3 required")
    return Verdict(decision=Decision(decision), phase=phase, checks=checks, run_record=RunRecord())


class Scripted:
    """An evaluator that answers a scripted decision and records how it was called."""

    def __init__(self, decision: str = "pass", failing: dict[str, str] | None = None) -> None:
        self.decision, self.failing = decision, failing
        self.calls: list[dict[str, Any]] = []

    def __call__(self, plan: Any, phase: str = "pre", metrics: Any = (), prometheus: Any = None) -> Verdict:
        self.calls.append({"plan": plan, "phase": phase, "metrics": metrics, "prometheus": prometheus})
        return verdict(self.decision, phase, self.failing)


def start(evaluator: Any, **config: Any) -> tuple[str, Any]:
    cfg = GateConfig(plan_path=Path("qwen-nextn.yaml"), port=0, **config)
    server = make_server(cfg, plan={"plan": "stand-in"}, evaluator=evaluator)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


@pytest.fixture
def gate_url() -> Iterator[Any]:
    servers = []

    def _start(evaluator: Any, **config: Any) -> str:
        url, server = start(evaluator, **config)
        servers.append(server)
        return url

    yield _start
    for s in servers:
        s.shutdown()
        s.server_close()


def test_listens_on_loopback_by_default() -> None:
    assert GateConfig(plan_path=Path("p.yaml")).host == "127.0.0.1"


def test_argo_get_pass_is_200_with_decision_and_lines(gate_url: Any) -> None:
    ev = Scripted("pass")
    url = gate_url(ev, prometheus="http://prom:9090", metrics=("http://exp:9479/metrics",))
    r = requests.get(f"{url}/argo", timeout=5)
    assert r.status_code == 200
    body = r.json()
    assert body["decision"] == "pass"
    assert body["phase"] == "post"  # the HTTP gate's default: during a canary
    assert set(body["checks"]) == set(LINES)
    assert body["checks"]["kv_pool"] == {"status": "pass", "reason": "kv_pool within budget"}
    assert ev.calls[0]["phase"] == "post"
    assert ev.calls[0]["prometheus"] == "http://prom:9090"
    assert ev.calls[0]["metrics"] == ("http://exp:9479/metrics",)


def test_argo_fail_is_still_200_so_argo_counts_a_failure_not_an_error(gate_url: Any) -> None:
    url = gate_url(Scripted("fail", {"acceptance": "per-window L 2.1 < target 3.0 in 7 of 10 windows"}))
    r = requests.get(f"{url}/argo", params={"phase": "post"}, timeout=5)
    assert r.status_code == 200
    assert r.json()["decision"] == "fail"
    assert r.json()["checks"]["acceptance"]["status"] == "fail"
    assert "7 of 10 windows" in r.json()["checks"]["acceptance"]["reason"]


def test_argo_post_body_as_provider_web_body_sends_it(gate_url: Any) -> None:
    ev = Scripted("pass")
    url = gate_url(ev)
    # Argo's provider.web: method POST, body "{\"phase\": \"pre\"}", Content-Type header set by the template.
    r = requests.post(f"{url}/argo", data='{"phase": "pre", "deployment": "qwen"}',
                      headers={"Content-Type": "application/json"}, timeout=5)
    assert r.status_code == 200
    assert r.json()["phase"] == "pre" and ev.calls[0]["phase"] == "pre"
    assert r.json()["deployment"] == "qwen"


def test_bad_phase_is_400(gate_url: Any) -> None:
    url = gate_url(Scripted())
    assert requests.get(f"{url}/argo", params={"phase": "later"}, timeout=5).status_code == 400


def test_flagger_pass_is_200(gate_url: Any) -> None:
    ev = Scripted("pass")
    url = gate_url(ev)
    r = requests.post(f"{url}/flagger", json=FLAGGER_PAYLOAD, timeout=5)
    assert r.status_code == 200
    assert r.json()["decision"] == "pass"
    assert r.json()["canary"] == {"name": "podinfo", "namespace": "test", "phase": "Progressing"}


def test_flagger_fail_is_403_with_reasons(gate_url: Any) -> None:
    reason = "6 × (30,185 + 512) = 184,182 resident tokens > 161,728 allocated"
    url = gate_url(Scripted("fail", {"kv_pool": reason}))
    r = requests.post(f"{url}/flagger", json={**FLAGGER_PAYLOAD, "metadata": {"phase": "pre"}}, timeout=5)
    assert r.status_code == 403
    assert r.json()["decision"] == "fail" and r.json()["phase"] == "pre"
    assert r.json()["reasons"] == [f"kv_pool: fail — {reason}"]


def test_flagger_inconclusive_blocks_too(gate_url: Any) -> None:
    url = gate_url(Scripted("inconclusive"))
    r = requests.post(f"{url}/flagger", json=FLAGGER_PAYLOAD, timeout=5)
    assert r.status_code == 403
    assert r.json()["reasons"] == ["acceptance: inconclusive — 0 windows with ≥ 20 drafts; 3 required"]


def test_flagger_payload_missing_name_is_400(gate_url: Any) -> None:
    url = gate_url(Scripted())
    r = requests.post(f"{url}/flagger", json={"namespace": "test"}, timeout=5)
    assert r.status_code == 400 and "name" in r.json()["error"]


def test_token_required_for_argo(gate_url: Any) -> None:
    ev = Scripted("pass")
    url = gate_url(ev, token=TOKEN)
    assert requests.get(f"{url}/argo", timeout=5).status_code == 401
    assert requests.get(f"{url}/argo", headers={"Authorization": "Bearer nope"}, timeout=5).status_code == 401
    ok = requests.get(f"{url}/argo", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
    assert ok.status_code == 200 and ok.json()["decision"] == "pass"
    assert len(ev.calls) == 1  # refused requests never reach the evaluator
    # health and metrics stay open for probes and scrapers
    assert requests.get(f"{url}/healthz", timeout=5).status_code == 200
    assert requests.get(f"{url}/metrics", timeout=5).status_code == 200


def test_flagger_token_in_metadata(gate_url: Any) -> None:
    url = gate_url(Scripted("pass"), token=TOKEN)
    assert requests.post(f"{url}/flagger", json=FLAGGER_PAYLOAD, timeout=5).status_code == 401
    wrong = {**FLAGGER_PAYLOAD, "metadata": {"token": "guess"}}
    assert requests.post(f"{url}/flagger", json=wrong, timeout=5).status_code == 401
    right = {**FLAGGER_PAYLOAD, "metadata": {"token": TOKEN, "test": "all"}}
    r = requests.post(f"{url}/flagger", json=right, timeout=5)
    assert r.status_code == 200
    assert TOKEN not in r.text  # the token is never echoed
    # a Bearer header works for Flagger too
    hdr = requests.post(f"{url}/flagger", json=FLAGGER_PAYLOAD, headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=5)
    assert hdr.status_code == 200


def test_tokens_compared_in_constant_time(gate_url: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bytes, bytes]] = []
    real = webhook.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(webhook.hmac, "compare_digest", spy)
    url = gate_url(Scripted(), token=TOKEN)
    requests.get(f"{url}/argo", headers={"Authorization": "Bearer guess"}, timeout=5)
    requests.post(f"{url}/flagger", json={**FLAGGER_PAYLOAD, "metadata": {"token": TOKEN}}, timeout=5)
    assert (b"guess", TOKEN.encode()) in seen
    assert (TOKEN.encode(), TOKEN.encode()) in seen


def test_oversize_body_is_413_and_not_evaluated(gate_url: Any) -> None:
    ev = Scripted()
    url = gate_url(ev, max_body_bytes=64 * 1024)
    big = {**FLAGGER_PAYLOAD, "metadata": {"pad": "x" * (70 * 1024)}}
    r = requests.post(f"{url}/flagger", json=big, timeout=5)
    assert r.status_code == 413
    r = requests.post(f"{url}/argo", data="x" * (65 * 1024), timeout=5)
    assert r.status_code == 413
    assert ev.calls == []


def test_slow_evaluation_answers_inconclusive_within_the_timeout(gate_url: Any) -> None:
    release = threading.Event()

    def stuck(plan: Any, phase: str = "pre", metrics: Any = (), prometheus: Any = None) -> Verdict:
        release.wait(30)
        return verdict("pass", phase)

    url = gate_url(stuck, timeout_s=0.3)
    try:
        r = requests.get(f"{url}/argo", timeout=10)
        assert r.status_code == 200
        assert r.json()["decision"] == "inconclusive"
        assert "did not finish within 0.3 s" in r.json()["checks"]["acceptance"]["reason"]
        f = requests.post(f"{url}/flagger", json=FLAGGER_PAYLOAD, timeout=10)
        assert f.status_code == 403 and f.json()["decision"] == "inconclusive"
    finally:
        release.set()


def test_evaluator_crash_is_inconclusive_not_500(gate_url: Any) -> None:
    def broken(plan: Any, **kw: Any) -> Verdict:
        raise ConnectionError("prometheus:9090 refused")

    url = gate_url(broken)
    r = requests.get(f"{url}/argo", timeout=5)
    assert r.status_code == 200 and r.json()["decision"] == "inconclusive"
    assert "ConnectionError: prometheus:9090 refused" in r.json()["checks"]["kv_pool"]["reason"]


def test_metrics_count_decisions_and_show_last_line_status(gate_url: Any) -> None:
    passing, failing = Scripted("pass"), Scripted("fail", {"staging": "cold start 412 s > 300 s budget"})
    current = {"ev": passing}
    url = gate_url(lambda plan, **kw: current["ev"](plan, **kw))
    requests.get(f"{url}/argo", timeout=5)
    requests.get(f"{url}/argo", timeout=5)
    current["ev"] = failing
    requests.post(f"{url}/flagger", json=FLAGGER_PAYLOAD, timeout=5)  # deployment label = canary name
    r = requests.get(f"{url}/metrics", timeout=5)
    assert r.headers["Content-Type"].startswith("text/plain")  # classic text format (CONTENT_TYPE_LATEST)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(r.text) for s in fam.samples}
    assert samples[("specgate_gate_decisions_total", (("decision", "pass"), ("deployment", "qwen-nextn")))] == 2
    assert samples[("specgate_gate_decisions_total", (("decision", "fail"), ("deployment", "podinfo")))] == 1
    key = ("specgate_gate_line_status", (("deployment", "podinfo"), ("line", "staging"), ("status", "fail")))
    assert samples[key] == 1
    assert ("specgate_gate_line_status",
            (("deployment", "qwen-nextn"), ("line", "staging"), ("status", "pass"))) in samples


def test_unknown_path_and_wrong_method(gate_url: Any) -> None:
    url = gate_url(Scripted())
    assert requests.get(f"{url}/nope", timeout=5).status_code == 404
    assert requests.get(f"{url}/flagger", timeout=5).status_code == 405


@pytest.mark.parametrize("request_line", ["POST /nope", "POST /healthz", "GET /flagger"])
def test_an_unread_body_is_never_parsed_as_the_next_request(gate_url: Any, request_line: str) -> None:
    """A keep-alive connection whose body was not read must close: else the body's bytes are answered as a
    second request (request smuggling past a proxy that reuses connections)."""
    import socket

    url = gate_url(Scripted())
    host, port = url.removeprefix("http://").split(":")
    smuggled = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(f"{request_line} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(smuggled)}\r\n\r\n".encode()
                  + smuggled)
        data = b""
        while chunk := s.recv(65536):  # the server closes after its one answer
            data += chunk
    assert data.count(b"HTTP/1.1 ") == 1, data
    assert b"specgate_gate_decisions_total" not in data


# ---- through the real evaluator (gate.verdict.evaluate) with the repository's example plans ----

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans"


def real_gate(plan_file: str) -> tuple[str, Any]:
    from gate.plan.model import load_plan

    path = EXAMPLES / plan_file
    server = make_server(GateConfig(plan_path=path, port=0, timeout_s=30), load_plan(path))  # real evaluator
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def test_real_evaluator_seed000_blocks_on_the_nextn_pool() -> None:
    url, server = real_gate("seed000-qwen38-flash-next-nextn.yaml")
    try:
        a = requests.get(f"{url}/argo", params={"phase": "pre"}, timeout=60)
        assert a.status_code == 200 and a.json()["decision"] == "fail"
        assert a.json()["checks"]["kv_pool"]["status"] == "fail"
        f = requests.post(f"{url}/flagger", json={**FLAGGER_PAYLOAD, "metadata": {"phase": "pre"}}, timeout=60)
        assert f.status_code == 403
        # seed 000: 6 × (30,185 + 512) = 184,182 resident tokens > 161,728 allocated with NEXTN
        assert any(r.startswith("kv_pool: fail — long-agentic needs 6 × (30,185 + 512) = 184,182")
                   for r in f.json()["reasons"])
    finally:
        server.shutdown()
        server.server_close()


def test_real_evaluator_seed004_allows() -> None:
    url, server = real_gate("seed004-qwen3.6-35b-a3b-mtp.yaml")
    try:
        f = requests.post(f"{url}/flagger", json={**FLAGGER_PAYLOAD, "metadata": {"phase": "pre"}}, timeout=60)
        assert f.status_code == 200 and f.json()["decision"] == "pass"
        assert f.json()["checks"]["acceptance"]["status"] == "pass"
        # post: the plan's captured windows are pre-rollout facts, not the live SLO -> inconclusive, still 200
        a = requests.get(f"{url}/argo", timeout=60)
        assert a.status_code == 200 and a.json()["decision"] == "inconclusive"
        assert "post phase needs" in a.json()["checks"]["acceptance"]["reason"]
    finally:
        server.shutdown()
        server.server_close()
