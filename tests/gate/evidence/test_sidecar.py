"""The sidecar's answers are read bounded (gate.evidence.sidecar through gate.inputs.fetch; issue 21: `check
--metrics URL` hung on a header-dripping `/api/v1/windows`). Servers that drip, lie and oversize on purpose
(tests/gate/inputs/fetch_servers.py); the deadline is a few tenths of a second, and each case asserts it."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable

import pytest

from gate.evidence.base import BadAnswer, Unreachable
from gate.evidence.metrics import from_live
from gate.evidence.sidecar import WINDOWS_PATH, from_exporter
from gate.inputs.fetch import WINDOWS_BYTES
from tests.gate.inputs.fetch_servers import RawServer, Request, answer, drip, json_answer

SHORT = 0.3
WINDOW = {"model": "tiny", "rank": "0", "start": 100.0, "end": 110.0, "reset": False, "drafts": 50.0,
          "acceptance_length": 2.4, "acceptance_rate": 0.47}
PAGE = b"# TYPE specgate_kv_pool_tokens gauge\nspecgate_kv_pool_tokens{pool=\"target\"} 8192\n"


def sidecar(windows: Callable[[socket.socket], None], metrics: Callable[[socket.socket], None] | None = None
            ) -> Callable[[Request, socket.socket], None]:
    def handler(req: Request, conn: socket.socket) -> None:
        if req.path == WINDOWS_PATH:
            windows(conn)
        elif req.path == "/metrics" and metrics is not None:
            metrics(conn)
        elif req.path == "/metrics":
            conn.sendall(answer(200, PAGE, "text/plain"))
        else:
            conn.sendall(answer(404))
    return handler


def test_a_sidecar_answers_its_windows_and_gauges() -> None:
    with RawServer(sidecar(lambda c: c.sendall(json_answer({"windows": [WINDOW, WINDOW | {"start": 110.0}]})))) as srv:
        ev = from_exporter(srv.url, 2.0, 10)
    assert ev is not None and len(ev.windows) == 2 and ev.windows[0].acceptance_length == 2.4
    assert ev.kv_pool is not None and ev.kv_pool.tokens == 8192


def test_not_a_sidecar_is_none() -> None:
    with RawServer(sidecar(lambda c: c.sendall(answer(404)))) as srv:
        assert from_exporter(srv.url, 2.0, 10) is None


@pytest.mark.parametrize("how", ["headers", "body"])
def test_a_dripping_windows_answer_ends_at_the_timeout(how: str) -> None:
    body = json.dumps({"windows": [WINDOW] * 20}).encode()
    whole = answer(200, body)

    def windows(conn: socket.socket) -> None:
        if how == "headers":
            drip(conn, whole)
        else:
            cut = whole.index(b"\r\n\r\n") + 4
            conn.sendall(whole[:cut])
            drip(conn, whole[cut:])

    with RawServer(sidecar(windows)) as srv:
        t0 = time.monotonic()
        with pytest.raises(Unreachable, match=f"did not answer within {SHORT:g}s"):
            from_exporter(srv.url, SHORT, 10)
        ev = from_live(srv.url, 1.0, 1, 10, timeout=SHORT)  # what `check --metrics URL` asks
        took = time.monotonic() - t0
    assert took < 2 * SHORT + 0.8
    assert any("did not answer within" in e for e in ev.errors) and not ev.windows


@pytest.mark.parametrize("page, words", [
    (answer(200, b"x").replace(b"Content-Length: 1", f"Content-Length: {WINDOWS_BYTES + 1}".encode()),
     "bytes (limit"),  # announced over the limit: refused before a byte of the body
    (answer(200, b"[" * 200 + b"]" * 200), "nested deeper"),
    (answer(200, b'{"windows": [], "windows": [1]}'), "duplicate"),
    (answer(200, b"<html>"), "not valid JSON"),
    (answer(200, b"[1, 2]"), "not a JSON object"),
    (b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/\r\nContent-Length: 0\r\n\r\n", "HTTP 302"),
])
def test_a_broken_windows_answer_is_a_bad_answer_in_one_line(page: bytes, words: str) -> None:
    with RawServer(sidecar(lambda c: c.sendall(page))) as srv:
        t0 = time.monotonic()
        with pytest.raises(BadAnswer) as e:
            from_exporter(srv.url, 2.0, 10)
        assert time.monotonic() - t0 < 1.0
        assert len(srv.requests) == 1  # a redirect is not followed
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_refused_port_is_unreachable() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(Unreachable, match="connection refused"):
        from_exporter(f"http://127.0.0.1:{port}", 1.0, 10)


def test_a_dripping_gauge_page_adds_nothing_and_ends_at_the_timeout() -> None:
    """The windows came; the sidecar's own /metrics drips: the evidence has the windows and no pool, in time."""
    with RawServer(sidecar(lambda c: c.sendall(json_answer({"windows": [WINDOW]})),
                           metrics=lambda c: drip(c, answer(200, PAGE, "text/plain")))) as srv:
        t0 = time.monotonic()
        ev = from_exporter(srv.url, SHORT, 10)
        took = time.monotonic() - t0
    assert ev is not None and len(ev.windows) == 1 and ev.kv_pool is None and took < SHORT + 0.8
