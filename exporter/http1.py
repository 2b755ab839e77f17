"""Reading one HTTP/1.1 response: the framing the scraper needs and no more (RFC 9112).

Why not `http.client.HTTPResponse`: it hands the header block to the `email` package, which on a
scrape every second cost about 0.15 ms of a 1.3 ms loopback scrape of a 53 KB page when the
process is cold (bench/side_by_side.py; this reader's head takes about 0.01 ms) — the one part
of a fetch that is ours to make cheaper. `http.client` stays the oracle:
tests/exporter/test_http1.py reads the same generated responses with both and wants the same
status, headers, body and connection state.

What it reads:
- the status line: `HTTP/1.0` or `HTTP/1.1`, a three-digit code; informational (1xx) answers are
  skipped, at most `MAX_INTERIM` of them;
- header lines: at most `MAX_HEADERS`, each at most `MAX_LINE` bytes; names are case-insensitive
  (kept lower-cased), a repeated header is joined with ", " as `http.client` does; an obsolete
  folded line (starting with a blank) is refused, as RFC 9112 lets a client do;
- the body: none for 204 and 304; `Transfer-Encoding` ending in `chunked` (chunk extensions ignored, trailers read and
  dropped), else `Content-Length` (differing repeats refused), else to the end of the connection;
  at most `max_bytes` in every case (`TooLarge`).
Anything else is a `ResponseError` with a one-line message. What it reads from is a `Source`: the
scraper's `Reader` (below) or any buffered reader (`socket.makefile`, the gate's fetch); time limits
are the receive function's (`exporter.scrape`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

MAX_LINE = 65_536  # http.client's _MAXLINE
MAX_HEADERS = 100  # http.client's _MAXHEADERS
MAX_INTERIM = 8  # 1xx answers skipped before the final one
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")


class Source(Protocol):
    """What the reads below need of a connection: a buffered reader's `readline`, `read` and `read1`."""

    def readline(self, limit: int = -1, /) -> bytes: ...

    def read(self, n: int = -1, /) -> bytes: ...

    def read1(self, n: int = -1, /) -> bytes: ...


class Reader:
    """A connection's receive buffer, filled by one `recv_into` callable (`Source` for the reads below).

    Why not `socket.makefile`: its buffered reader receives through `socket.SocketIO` and the socket's own
    method, two Python layers, and with a non-blocking socket each wait starts with a receive that fails;
    the scraper's callable polls first, for the time left to the exchange's deadline, and receives once.
    On a scrape every second of a 53 KB loopback page that was ~0.1 ms less of a ~0.6 ms fetch
    (docs/scale.md, issue 40). `recv_into(view)` returns how many bytes it put at the start of `view`,
    0 at the end of the connection; it raises on a timeout. A read longer than the buffer grows it to that
    read's size (`_grow`; a sized body is at most the caller's size limit), and it stays that size.
    """

    __slots__ = ("_buf", "_view", "_start", "_end", "_recv_into")

    def __init__(self, recv_into: Callable[[memoryview], int], size: int = 256 * 1024) -> None:
        self._buf = bytearray(size)
        self._view = memoryview(self._buf)
        self._start = self._end = 0
        self._recv_into = recv_into

    def _fill(self) -> int:
        """One receive after the buffered bytes (moved to the front when the buffer's end is reached)."""
        start, end = self._start, self._end
        if start == end:
            start = end = self._start = self._end = 0
        elif end == len(self._buf):
            self._buf[: end - start] = self._view[start:end]
            start, end = self._start, self._end = 0, end - start
        n = self._recv_into(self._view[end:])
        self._end = end + n
        return n

    def _take(self, n: int) -> bytes:
        start = self._start
        self._start = start + n
        return bytes(self._view[start:start + n])

    def readline(self, limit: int = -1, /) -> bytes:
        """Up to and including the next `\\n`, at most `limit` bytes (`limit` < 0: no limit; a line longer than
        the buffer grows it); what is left at the end of the connection."""
        while True:
            start, end = self._start, self._end
            i = self._buf.find(b"\n", start, end if limit < 0 else min(end, start + limit))
            if i >= 0:
                return self._take(i + 1 - start)
            if 0 <= limit <= end - start:
                return self._take(limit)
            if end - start == len(self._buf):
                self._grow(2 * len(self._buf))
            if self._fill() == 0:
                return self._take(self._end - self._start)

    def read(self, n: int = -1, /) -> bytes:
        """`n` bytes, fewer only at the end of the connection (`n` < 0: to the end of the connection)."""
        if n < 0:
            parts = []
            while chunk := self.read1(len(self._buf)):
                parts.append(chunk)
            return b"".join(parts)
        if n > len(self._buf):
            self._grow(n)
        held = self._end - self._start
        while held < n:
            if self._start and len(self._buf) - self._start < n:  # room for all of it after the held bytes
                self._buf[:held] = self._view[self._start:self._end]
                self._start, self._end = 0, held
            if self._fill() == 0:
                break
            held = self._end - self._start
        return self._take(min(n, held))

    def _grow(self, n: int) -> None:
        """A buffer of `n` bytes (rounded up to 64 KiB) with the held bytes at its start, kept for the next reads:
        a page larger than the buffer is received into warm memory on every scrape after its first, where a
        buffer of its own each time cost ~0.7 ms of page faults on a 1.27 MB page (the body is still copied
        out once, as a buffered reader's `read` does)."""
        held = self._end - self._start
        buf = bytearray(-(-n // 65536) * 65536)
        buf[:held] = self._view[self._start:self._end]
        self._view.release()
        self._buf, self._view = buf, memoryview(buf)
        self._start, self._end = 0, held

    def read1(self, n: int = -1, /) -> bytes:
        """What is buffered (after one receive when nothing is), at most `n` bytes; b"" at the end."""
        if self._end == self._start and self._fill() == 0:
            return b""
        held = self._end - self._start
        return self._take(held if n < 0 else min(n, held))

    def close(self) -> None:
        self._view.release()


class ResponseError(Exception):
    """The answer is not an HTTP/1.x response this reader takes (one-line message)."""


class Closed(ResponseError):
    """The connection ended before a status line: nothing was answered on it."""


class TooLarge(ResponseError):
    """The body is longer than allowed."""


@dataclass(frozen=True)
class Response:
    """A response's status line and headers; the body is read with `read_body`."""

    version: int  # 10 or 11
    status: int
    headers: dict[str, str]  # lower-cased names

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def bodiless(self) -> bool:
        """204 No Content and 304 Not Modified have no body, whatever their headers say."""
        return self.status in (204, 304)

    @property
    def chunked(self) -> bool:
        if self.bodiless:
            return False
        te = self.headers.get("transfer-encoding")
        return te is not None and te.rsplit(",", 1)[-1].strip().lower() == "chunked"

    @property
    def length(self) -> int | None:
        """`Content-Length` when the body is framed by it (no Transfer-Encoding), else None."""
        if self.bodiless:
            return 0
        if "transfer-encoding" in self.headers:
            return None
        cl = self.headers.get("content-length")
        if cl is None:
            return None
        values = {v.strip() for v in cl.split(",")}
        if len(values) != 1 or not (v := values.pop()).isdigit():
            raise ResponseError(f"bad Content-Length {cl[:40]!r}")
        return int(v)

    @property
    def will_close(self) -> bool:
        """The connection ends with this response (it cannot be kept for the next request)."""
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if "close" in tokens:
            return True
        if self.version == 10 and "keep-alive" not in tokens and "keep-alive" not in self.headers:
            return True
        if self.bodiless:
            return False
        te = self.headers.get("transfer-encoding")
        if te is not None and not self.chunked:
            return True  # a body that ends with the connection
        return te is None and "content-length" not in self.headers  # to the end of the connection


def _line(fp: Source, what: str) -> bytes:
    line = fp.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise ResponseError(f"{what} longer than {MAX_LINE} bytes")
    return line


def _status(line: bytes) -> tuple[int, int]:
    text = line.decode("latin-1").rstrip("\r\n")
    version, _, rest = text.partition(" ")
    code = rest[:3]
    if version not in ("HTTP/1.0", "HTTP/1.1") or len(code) != 3 or not code.isdigit() or rest[3:4] not in ("", " "):
        raise ResponseError(f"not an HTTP/1.x status line: {text[:60]!r}")
    return (10 if version == "HTTP/1.0" else 11), int(code)


def _headers(fp: Source) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        line = _line(fp, "a header line")
        if line in (b"\r\n", b"\n"):
            return headers
        if not line:
            raise ResponseError("the connection ended inside the headers")
        text = line.decode("latin-1").rstrip("\r\n")
        if text[:1] in (" ", "\t"):
            raise ResponseError("a folded (obsolete) header line")
        name, sep, value = text.partition(":")
        if not sep or _TOKEN.fullmatch(name) is None:
            raise ResponseError(f"malformed header line {text[:60]!r}")
        key, value = name.lower(), value.strip(" \t")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    raise ResponseError(f"more than {MAX_HEADERS} header lines")


def read_head(fp: Source) -> Response:
    """The final response's status line and headers (informational answers skipped)."""
    for _ in range(MAX_INTERIM + 1):
        line = _line(fp, "the status line")
        if not line:
            raise Closed("the connection ended before a status line")
        version, status = _status(line)
        headers = _headers(fp)
        if not 100 <= status < 200:
            return Response(version, status, headers)
    raise ResponseError(f"more than {MAX_INTERIM} informational answers")


def _exactly(fp: Source, n: int) -> bytes:
    data = fp.read(n)
    if len(data) != n:
        raise ResponseError(f"the connection ended {n - len(data)} bytes short of the body")
    return data


def read_body(fp: Source, r: Response, max_bytes: int, chunk: int = 256 * 1024) -> bytes:
    """The body of `r` (read after `read_head`), at most `max_bytes` (`TooLarge` past them)."""
    parts: list[bytes] = []
    total = 0
    if r.chunked:
        while True:
            line = _line(fp, "a chunk size line")
            size_text = line.split(b";", 1)[0].strip()
            if _CHUNK_SIZE.fullmatch(size_text) is None:
                raise ResponseError(f"bad chunk size line {line[:40]!r}")
            size = int(size_text, 16)
            if size == 0:
                while _line(fp, "a trailer line") not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            total += size
            if total > max_bytes:
                raise TooLarge(f"more than {max_bytes} bytes")
            parts.append(_exactly(fp, size))
            if _exactly(fp, 2) != b"\r\n":
                raise ResponseError("a chunk not followed by CRLF")
    length = r.length
    if length is not None:
        if length > max_bytes:
            raise TooLarge(f"{length} bytes (limit {max_bytes})")
        return _exactly(fp, length)
    while data := fp.read1(chunk):
        total += len(data)
        if total > max_bytes:
            raise TooLarge(f"more than {max_bytes} bytes")
        parts.append(data)
    return b"".join(parts)
