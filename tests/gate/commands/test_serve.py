"""`specgate serve` against hostile callers (issue 14, item 6: the HTTP gate's part): a token sent in a
query string is never logged, gate-metric label values are bounded in number and length, an idle
connection does not hold a thread forever, and the gate redacts URLs like the exporter.

The server is the real `gate.webhook` server on 127.0.0.1 (ephemeral port) with a scripted evaluator,
as in tests/k8s/test_k8s_webhook.py.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path

import requests

from gate.inputs.redact import redact_url
from gate.verdict.gate_metrics import GateMetrics
from gate.webhook import GateConfig, GateHandler, make_server
from tests.k8s.test_k8s_webhook import Scripted


def serve(**config):
    cfg = GateConfig(plan_path=Path("qwen-nextn.yaml"), port=0, **config)
    server = make_server(cfg, plan={"plan": "stand-in"}, evaluator=Scripted("pass"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def test_a_token_in_a_query_string_is_never_logged(caplog):
    server, url = serve(token="the-real-token")
    try:
        with caplog.at_level(logging.DEBUG):
            r = requests.get(f"{url}/argo?token=sekrit-in-query&phase=post", timeout=10)
            requests.get(f"{url}/healthz?token=another-sekrit", timeout=10)
    finally:
        server.shutdown()
        server.server_close()
    assert r.status_code == 401  # a query-string token is not accepted either
    # the server's own log lines (the test's HTTP client logs its own request, token and all, at DEBUG)
    text = "\n".join(rec.getMessage() for rec in caplog.records if rec.name.startswith("gate"))
    assert "/argo?<redacted>" in text
    assert "sekrit" not in text and "the-real-token" not in text


def test_gate_metric_label_values_are_bounded_in_length_and_number():
    m = GateMetrics()
    m.record("d" * 10_000, "pass", {"kv_pool": "pass"})
    for i in range(GateMetrics.MAX_DEPLOYMENTS + 50):
        m.record(f"dep-{i}", "pass", {})
    text = m.exposition().decode()
    values = [part.split('"')[1] for part in text.split('deployment=')[1:]]
    assert max(len(v) for v in values) <= GateMetrics.MAX_LABEL_CHARS
    assert len({v for v in values}) <= GateMetrics.MAX_DEPLOYMENTS + 1  # the rest count as "other"


def test_an_idle_connection_is_closed_by_the_server():
    assert GateHandler.timeout and GateHandler.timeout <= 60
    server, url = serve()
    old = GateHandler.timeout
    GateHandler.timeout = 1  # the class's idle timeout, shortened for the test
    try:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            t0 = time.monotonic()
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finishes its headers
            s.settimeout(10)
            data = s.recv(65536)
            while data:
                data = s.recv(65536)  # the server hangs up (an error line first, or nothing)
            assert time.monotonic() - t0 < 5
    finally:
        GateHandler.timeout = old
        server.shutdown()
        server.server_close()


def test_the_gate_redacts_like_the_exporter():
    assert redact_url("from http://u:p@ss@prom:9090/api?token=x") == "from http://prom:9090/api?<redacted>"
