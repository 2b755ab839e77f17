"""gate.inputs.fetch: one total deadline and a size limit for every answer, against servers that misbehave
on purpose (tests/gate/inputs/fetch_servers.py). Deadlines are a few tenths of a second, so a case that
is not cut off shows as a slow test, and each case asserts its own bound on the wall clock."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gate.inputs.fetch import FetchError, deadline_in, fetch, get_json, stream, tokenize_bytes
from gate.inputs.loading import Limits
from tests.gate.inputs.fetch_servers import CHUNKED_HEAD, RawServer, Request, answer, chunk, drip, json_answer

SHORT = 0.3


@contextmanager
def within(seconds: float) -> Iterator[None]:
    t0 = time.monotonic()
    yield
    assert time.monotonic() - t0 < seconds


def test_a_plain_answer_comes_back_whole() -> None:
    with RawServer(lambda req, c: c.sendall(json_answer({"ok": [1, 2]}))) as srv:
        status, doc = get_json(srv.url + "/x?q=1", deadline=deadline_in(2), max_bytes=1000, what="x",
                               limits=Limits(1000))
    assert (status, doc) == (200, {"ok": [1, 2]})
    assert srv.requests[0].path == "/x?q=1" and srv.requests[0].headers["connection"] == "close"


@pytest.mark.parametrize("how", ["status line", "headers", "sized body", "chunked body", "to the close"])
def test_a_dripping_answer_ends_at_the_deadline(how: str) -> None:
    """Each byte comes in well inside any per-read timeout; the whole exchange still ends at the deadline."""
    pages = {
        "status line": b"HTTP/1.1 200 OK\r\n" * 50,
        "headers": b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 200 + b"\r\n\r\n",
        "sized body": b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n" + b"x" * 500,
        "chunked body": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(b"y" * 500),
        "to the close": b"HTTP/1.1 200 OK\r\n\r\n" + b"z" * 500,
    }

    def handler(req: Request, conn: socket.socket) -> None:
        data = pages[how]
        cut = data.index(b"\r\n\r\n") + 4 if how not in ("status line", "headers") else 0
        conn.sendall(data[:cut])
        drip(conn, data[cut:])

    with RawServer(handler) as srv, within(SHORT + 0.7):
        with pytest.raises(FetchError) as e:
            fetch(srv.url + "/metrics", deadline=deadline_in(SHORT), max_bytes=10_000)
    assert e.value.reason == "timeout" and f"did not answer within {SHORT:g}s" in str(e.value)


@pytest.mark.parametrize("page", [
    answer(200, b"x" * 5000),  # Content-Length over the limit: refused before the body is read
    CHUNKED_HEAD + chunk(b"x" * 3000) + chunk(b"x" * 3000) + b"0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 5000,  # to the end of the connection
])
def test_an_oversized_answer_is_refused(page: bytes) -> None:
    with RawServer(lambda req, c: c.sendall(page)) as srv, within(1.0):
        with pytest.raises(FetchError) as e:
            fetch(srv.url, deadline=deadline_in(2), max_bytes=4096)
    assert e.value.reason == "too_large"


def test_a_redirect_is_the_answer_not_followed() -> None:
    with RawServer(lambda req, c: c.sendall(answer(302, b"", extra="Location: http://127.0.0.1:9/\r\n"))) as srv:
        a = fetch(srv.url + "/v1/models", deadline=deadline_in(2), max_bytes=100)
        status, doc = get_json(srv.url, deadline=deadline_in(2), max_bytes=100, what="x", limits=Limits(100))
    assert a.status == 302 and a.headers["location"] == "http://127.0.0.1:9/" and (status, doc) == (302, None)
    assert len(srv.requests) == 2


def test_refused_and_broken_answers_are_one_line_with_the_url_redacted() -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with pytest.raises(FetchError) as e:
        fetch(f"http://u:secret@127.0.0.1:{port}/x?token=abc", deadline=deadline_in(2), max_bytes=10)
    assert e.value.reason == "connect" and "connection refused" in str(e.value)
    assert "secret" not in str(e.value) and "abc" not in str(e.value)
    with RawServer(lambda req, c: c.sendall(b"SSH-2.0-OpenSSH\r\n")) as srv:
        with pytest.raises(FetchError) as e:
            fetch(srv.url, deadline=deadline_in(2), max_bytes=10)
    assert e.value.reason == "http" and "not an HTTP/1.x status line" in str(e.value)
    with pytest.raises(FetchError, match="scheme"):
        fetch("ftp://x/", deadline=deadline_in(1), max_bytes=10)


@pytest.mark.parametrize("body, words", [(b"not json", "not valid JSON"), (b"[" * 100 + b"]" * 100, "nested"),
                                         (b'{"a": 1, "a": 2}', "duplicate"), (b'{"n": 1' + b"0" * 40 + b"}", "digits")])
def test_a_json_answer_is_read_under_the_json_limits(body: bytes, words: str) -> None:
    with RawServer(lambda req, c: c.sendall(answer(200, body))) as srv:
        with pytest.raises(FetchError) as e:
            get_json(srv.url, deadline=deadline_in(2), max_bytes=10_000, what="the answer", limits=Limits(10_000))
    assert e.value.reason == "http" and words in str(e.value)


def test_user_info_is_basic_auth_and_a_post_carries_its_body() -> None:
    with RawServer(lambda req, c: c.sendall(json_answer({}))) as srv:
        url = srv.url.replace("http://", "http://al:pw@")
        fetch(url + "/tokenize", deadline=deadline_in(2), max_bytes=100, method="POST", body=b'{"p": 1}',
              headers={"Content-Type": "application/json"})
        with pytest.raises(FetchError, match="line break"):
            fetch(srv.url, deadline=deadline_in(1), max_bytes=10, headers={"X": "a\r\nInjected: 1"})
    req = srv.requests[0]
    assert req.method == "POST" and req.body == b'{"p": 1}' and req.headers["authorization"] == "Basic YWw6cHc="
    assert len(srv.requests) == 1  # the broken header was never sent


def _sse(*events: bytes) -> bytes:
    return CHUNKED_HEAD + b"".join(chunk(b"data: " + e + b"\n\n") for e in events) + b"0\r\n\r\n"


def test_a_stream_gives_lines_as_they_arrive() -> None:
    with RawServer(lambda req, c: c.sendall(_sse(b'{"a": 1}', b"[DONE]"))) as srv:
        with stream(srv.url, deadline=deadline_in(2), max_bytes=1000, max_line=100, body=b"{}") as s:
            lines = [line for line, _ in s.lines()]
    assert s.status == 200 and lines == [b'data: {"a": 1}', b"", b"data: [DONE]", b""]


def test_a_dripping_stream_ends_at_the_deadline() -> None:
    """An event every 20 ms: each read answers at once, the stream as a whole runs past the deadline."""
    def handler(req: Request, conn: socket.socket) -> None:
        conn.sendall(CHUNKED_HEAD)
        for _ in range(500):
            conn.sendall(chunk(b'data: {"choices": [{"text": "x"}]}\n\n'))
            time.sleep(0.02)

    with RawServer(handler) as srv, within(SHORT + 0.7):
        with pytest.raises(FetchError) as e:
            with stream(srv.url, deadline=deadline_in(SHORT), max_bytes=10**7, max_line=1000, body=b"{}") as s:
                for _ in s.lines():
                    pass
    assert e.value.reason == "timeout"


@pytest.mark.parametrize("page", [
    CHUNKED_HEAD + chunk(b"data: " + b"x" * 5000),  # one line without end
    CHUNKED_HEAD + chunk(b"data: " + b"x" * 5000 + b"\n") + b"0\r\n\r\n",  # one line over the limit, ended
    CHUNKED_HEAD + b"".join(chunk(b"data: x\n") for _ in range(2000)) + b"0\r\n\r\n",  # many short lines
])
def test_an_oversized_stream_is_refused(page: bytes) -> None:
    with RawServer(lambda req, c: c.sendall(page)) as srv, within(1.0):
        with pytest.raises(FetchError) as e:
            with stream(srv.url, deadline=deadline_in(2), max_bytes=8000, max_line=1000, body=b"{}") as s:
                for _ in s.lines():
                    pass
    assert e.value.reason == "too_large"


def test_an_error_answer_on_a_stream_gives_its_message_bounded() -> None:
    with RawServer(lambda req, c: c.sendall(answer(400, b'{"error": {"message": "too long"}}'))) as srv:
        with stream(srv.url, deadline=deadline_in(2), max_bytes=1000, max_line=100, body=b"{}") as s:
            assert s.status == 400 and "too long" in s.error_text()
    with RawServer(lambda req, c: c.sendall(answer(500, b"x" * (1 << 17)))) as srv:
        with stream(srv.url, deadline=deadline_in(2), max_bytes=1000, max_line=100, body=b"{}") as s:
            assert s.status == 500 and s.error_text() == ""


def test_the_tokenize_limit_grows_with_the_text_only() -> None:
    assert tokenize_bytes(0) == 64 << 10 and tokenize_bytes(1000) == (64 << 10) + 64_000
