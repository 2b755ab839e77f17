"""The Prometheus fetch is bounded (issue 21): one total deadline per query, answer bytes, series and points.

Loopback servers misbehave on purpose — drip their headers or body, send more bytes, series or points than
an answer may hold — and each ends fast as an evidence error (inconclusive), never a hang, a traceback or a
memory blow-up; an answer the size of a 10,000-pod fleet's is read, not refused.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gate.evidence import prometheus as prom
from gate.evidence.base import BadAnswer, Unreachable
from gate.plan.model import PrometheusSource, plan_from_dict
from tests.gate.helpers import tiny_plan

Handler = Callable[[socket.socket], None]


@contextmanager
def raw_server(handler: Handler) -> Iterator[str]:
    """A loopback server that hands each connection (its request read) to `handler` on a thread of its own."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop = threading.Event()

    def one(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                handler(conn)
            except OSError:
                pass

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        stop.set()
        t.join(2)
        srv.close()


def _ok(body: bytes) -> Handler:
    def handler(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    return handler


def _drip(head: bytes, then: bytes, every: float = 0.05, seconds: float = 4.0) -> Handler:
    def handler(conn: socket.socket) -> None:
        conn.sendall(head)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.sendall(then)
            time.sleep(every)
    return handler


def _client(url: str, timeout: float = 0.5) -> prom.PromClient:
    return prom.client_for(PrometheusSource(timeout_seconds=timeout), url)


def _matrix(series: int, points: int, pod: str = "vllm") -> bytes:
    result = [{"metric": {"namespace": "llm", "pod": f"{pod}-{i:05d}", "model": "meta-llama/Llama-3.1-8B-Instruct"},
               "values": [[1_700_000_000 + 60 * j, "183.33333333333334"] for j in range(points)]}
              for i in range(series)]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}},
                      separators=(",", ":")).encode()


@pytest.mark.parametrize("handler", [
    _drip(b"HTTP/1.1 200 OK\r\n", b"X"),  # a header line that never ends
    _drip(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", b"["),  # a body that never ends
    _drip(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\n[\r\n"),  # chunks that never end
], ids=["headers", "body", "chunked"])
def test_a_dripping_server_ends_at_the_deadline(handler: Handler) -> None:
    with raw_server(handler) as url:
        t0 = time.monotonic()
        with pytest.raises(Unreachable, match=r"did not answer within 0.5s"):
            _client(url).query("/api/v1/query", {"query": "up"})
        assert time.monotonic() - t0 < 2.0


def test_a_dripping_server_makes_the_line_inconclusive_fast() -> None:
    from gate.verdict.evaluate import evaluate

    with raw_server(_drip(b"HTTP/1.1 200 OK\r\n", b"X")) as url:
        data = tiny_plan("draft")
        data["evidence"] = {"prometheus": {"url": url, "timeout_seconds": 0.4}}
        t0 = time.monotonic()
        v = evaluate(plan_from_dict(data), phase="post")
        assert time.monotonic() - t0 < 5.0
    acc = v.checks["acceptance"]
    assert acc.status.value == "inconclusive" and "did not answer within 0.4s" in acc.reason


def test_an_answer_over_the_byte_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prom, "MAX_ANSWER_BYTES", 1 << 20)
    with raw_server(_ok(_matrix(200, 200))) as url:  # ~ 5 MB
        with pytest.raises(BadAnswer, match="an answer over 1 MiB"):
            _client(url, 5).query("/api/v1/query_range", {"query": "x"})


def test_answers_over_the_evaluation_budget_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prom, "MAX_TOTAL_BYTES", 1 << 20)
    body = _matrix(20, 700)  # ~ 0.48 MB each: the third answer of one client passes 1 MiB
    with raw_server(_ok(body)) as url:
        client = _client(url, 5)
        client.query("/api/v1/query_range", {"query": "x"})
        client.query("/api/v1/query_range", {"query": "x"})
        with pytest.raises(BadAnswer, match="the answers of one evaluation passed 1 MiB together"):
            client.query("/api/v1/query_range", {"query": "x"})
        _client(url, 5).query("/api/v1/query_range", {"query": "x"})  # a new evaluation has its own budget


def test_points_over_the_evaluation_budget_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers each under the per-answer limits, together over the evaluation's points: refused before parsing
    the one that passes it (nine queries of an evaluation cannot hold nine times the limit)."""
    monkeypatch.setattr(prom, "MAX_TOTAL_POINTS", 2_500)
    with raw_server(_ok(_matrix(2, 500))) as url:
        client = _client(url, 5)
        client.query("/api/v1/query_range", {"query": "x"})
        client.query("/api/v1/query_range", {"query": "x"})
        with pytest.raises(BadAnswer, match="passed 2,500 points together"):
            client.query("/api/v1/query_range", {"query": "x"})


def test_too_many_points_are_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prom, "MAX_POINTS", 1_000)
    monkeypatch.setattr(prom, "MAX_SERIES", 10)  # the byte count allows points + series

    def no_parse(*a: Any, **k: Any) -> Any:
        raise AssertionError("parsed an answer the byte count already refused")

    with raw_server(_ok(_matrix(3, 600))) as url:
        monkeypatch.setattr(prom.json, "loads", no_parse)
        with pytest.raises(BadAnswer, match="more than 1,000 points"):
            _client(url, 5).query("/api/v1/query_range", {"query": "x"})


def test_too_many_series_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prom, "MAX_SERIES", 10)
    with raw_server(_ok(_matrix(11, 1))) as url:
        with pytest.raises(BadAnswer, match="11 series, more than 10"):
            _client(url, 5).query("/api/v1/query", {"query": "x"})
    with raw_server(_ok(_matrix(10, 1))) as url:
        assert len(_client(url, 5).query("/api/v1/query", {"query": "x"})) == 10


def test_a_flood_of_points_costs_its_bytes_not_a_gigabyte() -> None:
    """55 MB of tiny points (the issue's case: ~7 million of them) is refused on its byte count, the real limits
    in force; what it cost is about its bytes, never the parsed objects (~160 B a point: > 1 GB)."""
    point = b'[1,"1"],'
    n = 55_000_000 // len(point)
    body = (b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":['
            + point * (n - 1) + b'[1,"1"]]}]}}')
    with raw_server(_ok(body)) as url:
        del body
        tracemalloc.start()
        try:
            with pytest.raises(BadAnswer, match="more than 1,500,000 points"):
                _client(url, 20).query("/api/v1/query_range", {"query": "x"})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 3 * 64 * 2**20, peak


def test_a_ten_thousand_pod_answer_is_read() -> None:
    """One range answer of the scale issue's fleet at the plan defaults: 10,000 series x 60 points (~20 MB)."""
    body = _matrix(10_000, 60)
    assert 15_000_000 < len(body) < prom.MAX_ANSWER_BYTES
    with raw_server(_ok(body)) as url:
        result = _client(url, 30).query("/api/v1/query_range", {"query": "x"})
    assert len(result) == 10_000 and len(result[0]["values"]) == 60


def test_an_error_answer_keeps_its_message_and_stays_small() -> None:
    body = json.dumps({"status": "error", "error": "bad_data: " + "x" * 1_000_000}).encode()

    def as_400(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    with raw_server(as_400) as url:
        with pytest.raises(BadAnswer, match=r"answered HTTP 400") as e:
            _client(url, 5).query("/api/v1/query", {"query": "x"})
    assert len(str(e.value)) < 1_000


def test_a_redirect_is_not_followed() -> None:
    def redirect(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere/\r\nContent-Length: 0\r\n\r\n")

    with raw_server(redirect) as url:
        with pytest.raises(BadAnswer, match="answered HTTP 302"):
            _client(url, 5).query("/api/v1/query", {"query": "x"})


def test_a_refused_port_is_named() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(Unreachable, match="connection refused"):
        _client(f"http://127.0.0.1:{port}", 2).query("/api/v1/query", {"query": "x"})
