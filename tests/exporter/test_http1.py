"""`exporter.http1` reads HTTP/1.x responses as `http.client` does (the oracle), and refuses what it must.

Generated responses (status line, header sets, bodies framed by Content-Length, chunked with
extensions and trailers, or by the connection's end; interim 100 answers) are read by both readers
from the same bytes; status, headers, body and whether the connection closes must agree. The
refusals are the cases where a lax reading would mix or invent data (differing lengths, folded
lines, bad chunk sizes, short bodies), and the size limit.
"""

from __future__ import annotations

import http.client
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter import http1


class _Sock:
    """Just enough socket for http.client.HTTPResponse: `makefile` over the bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))  # type: ignore[arg-type]


def oracle(data: bytes) -> tuple[int, dict[str, str], bytes, bool]:
    r = http.client.HTTPResponse(_Sock(data), method="GET")  # type: ignore[arg-type]
    r.begin()
    body = r.read()
    names = dict.fromkeys(k.lower() for k, _ in r.getheaders())
    return r.status, {k: r.getheader(k) for k in names}, body, bool(r.will_close)  # getheader joins repeats


def ours(data: bytes, max_bytes: int = 1 << 20) -> tuple[int, dict[str, str], bytes, bool]:
    fp = io.BufferedReader(io.BytesIO(data))
    r = http1.read_head(fp)
    return r.status, r.headers, http1.read_body(fp, r, max_bytes), r.will_close


def chunked(body: bytes, sizes: list[int], ext: bool, trailers: list[tuple[str, str]]) -> bytes:
    out, i = [], 0
    for n in sizes:
        piece = body[i:i + n]
        if not piece:
            break
        out.append(f"{len(piece):x}{';name=v' if ext else ''}\r\n".encode() + piece + b"\r\n")
        i += len(piece)
    if i < len(body):
        out.append(f"{len(body) - i:X}\r\n".encode() + body[i:] + b"\r\n")
    out.append(b"0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in trailers) + b"\r\n")
    return b"".join(out)


header_names = st.sampled_from(["Content-Type", "X-Engine", "Server", "Date", "Cache-Control", "x-trace"])
header_values = st.text(alphabet=st.sampled_from(list("abc 019;=/,.-")), max_size=12).map(str.strip)


@st.composite
def responses(draw: st.DrawFn) -> bytes:
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0"]))
    status = draw(st.sampled_from([200, 200, 200, 204, 301, 404, 500, 503]))
    reason = draw(st.sampled_from(["", " OK", " Some Reason"]))
    body = draw(st.binary(max_size=300))
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    if status == 204:  # no body (RFC 9110 15.3.5); http.client would still read a chunked one
        body, framing = b"", draw(st.sampled_from(["length", "close"]))
    connection = draw(st.sampled_from([None, "close", "keep-alive", "Keep-Alive, Upgrade"]))
    headers = [(draw(header_names), draw(header_values)) for _ in range(draw(st.integers(0, 4)))]
    if framing == "length":
        headers.append(("Content-Length", str(len(body))))
        payload = body
    elif framing == "chunked":
        headers.append(("Transfer-Encoding", "chunked"))
        sizes = draw(st.lists(st.integers(1, 80), max_size=6))
        trailers = [(draw(header_names), draw(header_values)) for _ in range(draw(st.integers(0, 2)))]
        payload = chunked(body, sizes, draw(st.booleans()), trailers)
    else:
        payload = body
    if connection is not None:
        headers.append(("Connection", connection))
    headers = draw(st.permutations(headers))
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" * draw(st.integers(0, 2))
    head = f"{version} {status}{reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return interim + head.encode("latin-1") + payload


@settings(max_examples=500, deadline=None)
@given(data=responses())
def test_generated_responses_read_as_http_client_reads_them(data: bytes) -> None:
    assert ours(data) == oracle(data)


def test_a_real_answer_shape_uvicorn_sends() -> None:
    """The shape of vLLM's and SGLang's (uvicorn's) /metrics answer, keep-alive kept."""
    body = b"# HELP vllm:num_requests_running x\nvllm:num_requests_running 0.0\n"
    data = (b"HTTP/1.1 200 OK\r\ndate: Tue, 01 Dec 2026 12:00:00 GMT\r\nserver: uvicorn\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\ncontent-type: text/plain; version=0.0.4; "
            b"charset=utf-8\r\n\r\n" + body)
    assert ours(data) == oracle(data) == (200, {"date": "Tue, 01 Dec 2026 12:00:00 GMT", "server": "uvicorn",
                                                "content-length": str(len(body)),
                                                "content-type": "text/plain; version=0.0.4; charset=utf-8"},
                                          body, False)


@pytest.mark.parametrize(("data", "why"), [
    (b"", "before a status line"),
    (b"HTTP/2 200 OK\r\n\r\n", "not an HTTP/1.x status line"),
    (b"<html>\r\n\r\n", "not an HTTP/1.x status line"),
    (b"HTTP/1.1 2000 OK\r\n\r\n", "not an HTTP/1.x status line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n", "folded"),
    (b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", "malformed header line"),
    (b"HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n", "malformed header line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "bytes short of the body"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n", "bad chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n", "not followed by CRLF"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "bytes short of the body"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", "longer than"),
    (b"HTTP/1.1 200 OK\r\n" + b"X-A: 1\r\n" * 101 + b"\r\n", "more than 100 header lines"),
    (b"HTTP/1.1 200 OK\r\nX-A: 1\r\n", "ended inside the headers"),
    (b"HTTP/1.1 100 Continue\r\n\r\n" * 9 + b"HTTP/1.1 200 OK\r\n\r\n", "informational"),
])
def test_what_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(http1.ResponseError) as e:
        ours(data)
    assert why in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("framing", [
    b"Content-Length: 11\r\n\r\nhello world",
    b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    b"Connection: close\r\n\r\nhello world",
])
def test_the_size_limit_holds_for_every_framing(framing: bytes) -> None:
    data = b"HTTP/1.1 200 OK\r\n" + framing
    assert ours(data, max_bytes=11)[2] == b"hello world"
    with pytest.raises(http1.TooLarge):
        ours(data, max_bytes=10)


def test_a_body_framed_by_the_connection_end_closes_it_and_a_sized_one_keeps_it() -> None:
    assert ours(b"HTTP/1.1 200 OK\r\n\r\nabc")[3] is True
    assert ours(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")[3] is False
    assert ours(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc")[3] is True
    assert ours(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc")[3] is False


def _receiver(data: bytes, sizes: list[int]):  # noqa: ANN202
    """A `recv_into` that hands out `data` in receives of `sizes` bytes (then the rest), as a socket may."""
    state = {"at": 0, "i": 0}

    def recv_into(view: memoryview) -> int:
        at, i = state["at"], state["i"]
        n = min(len(view), len(data) - at, sizes[i] if i < len(sizes) else len(data))
        view[:n] = data[at:at + n]
        state["at"], state["i"] = at + n, i + 1
        return n

    return recv_into


@settings(max_examples=300, deadline=None)
@given(data=responses(), sizes=st.lists(st.integers(1, 97), max_size=12), size=st.sampled_from([16, 64, 4096]))
def test_the_scrapers_reader_reads_what_a_buffered_reader_reads(data: bytes, sizes: list[int], size: int) -> None:
    """`http1.Reader` (the scraper's receive buffer), fed in arbitrary receives through a buffer smaller than the
    answer (it moves held bytes to the front and grows for a body larger than itself), reads each generated answer
    as `http.client` does."""
    fp = http1.Reader(_receiver(data, sizes), size=size)
    r = http1.read_head(fp)
    assert (r.status, r.headers, http1.read_body(fp, r, 1 << 20), r.will_close) == oracle(data)


def test_the_reader_keeps_what_follows_an_answer_and_limits_lines() -> None:
    """Two answers back to back on one kept-alive connection come out one after the other; a line longer than the
    limit is cut at it (as a buffered reader's `readline(limit)` is), and the end of the connection reads b""."""
    one = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
    two = b"HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n" + b"x" * 70_000
    fp = http1.Reader(_receiver(one + two, [5, 1, 200]), size=64)
    assert http1.read_body(fp, http1.read_head(fp), 10) == b"abc"
    assert http1.read_body(fp, http1.read_head(fp), 1 << 20) == b"x" * 70_000
    assert fp.read1(10) == b"" and fp.readline(10) == b""
    fp = http1.Reader(_receiver(b"a" * 40 + b"\nb\n", []), size=64)
    assert fp.readline(16) == b"a" * 16 and fp.readline(100) == b"a" * 24 + b"\n" and fp.read(-1) == b"b\n"
