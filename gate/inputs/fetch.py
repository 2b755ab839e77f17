"""Bounded HTTP for the gate and its tools: one total deadline and a size limit for every answer.

Why not `requests`: its timeout is per read (connect, then each receive), so an endpoint that drips
its status line, its headers or its body one byte a second never times out, and it reads a body of
any size into memory. An answer is as much input as a file is, so it gets the same treatment as
`gate.inputs.loading` gives files — a limit, and one line when it is broken — plus a deadline:
- **one deadline for the whole exchange**: connect, request, status line, headers and body together
  end at `deadline` (monotonic seconds). The sockets are the exporter's (`exporter.scrape`'s
  deadline sockets: every receive waits only for the time left), the framing is the exporter's
  reader (`exporter.http1`, with `http.client` as its oracle in tests/exporter);
- **a size limit per answer** (`max_bytes`; for a stream also `max_line`, the longest event line),
  checked against `Content-Length` first and then while reading;
- **redirects are not followed**: a 3xx is handed back as the answer it is (the callers take 200
  only), never a body fetched from another host;
- one connection per exchange (`Connection: close`): the gate's reads are a handful per run, the
  probe's streams one per request; no kept-alive connection can be stale or shared between threads.
Host names are resolved by the system resolver, which the deadline does not bound (use an address
or `localhost`). Every failure is a `FetchError` with a reason and a one-line message whose URL is
redacted (`exporter.redact.redact_url`: no user info, no query).

Limits per kind of answer (the callers pass them; the sizes say why):
| answer | limit |
|---|---|
| an engine's or the exporter's `/metrics` page | `PAGE_BYTES` = the exporter's scrape cap, 16 MiB |
| the exporter's `/api/v1/windows` | `WINDOWS_BYTES` = the windows file limit, 16 MiB |
| `/v1/models`, `/version`, `/server_info` | `SIDE_BYTES` = the exporter's side-endpoint cap, 4 MiB |
| `/tokenize` of a text of n words | `tokenize_bytes(n)` = 64 KiB + 64 bytes per word |
| an error answer's body (its message) | `ERROR_BYTES` = 64 KiB |
"""

from __future__ import annotations

import base64
import io
import re
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from exporter import http1
from exporter.redact import redact_url
from exporter.scrape import (  # the exporter's deadline sockets and TLS
    DEFAULT_MAX_BYTES,
    SIDE_MAX_BYTES,
    deadline_connection,
    tls_context,
)
from gate.inputs.loading import WINDOWS_LIMITS, Limits, parse_json
from gate.status import InputError

PAGE_BYTES = DEFAULT_MAX_BYTES
WINDOWS_BYTES = WINDOWS_LIMITS.max_bytes
SIDE_BYTES = SIDE_MAX_BYTES
ERROR_BYTES = 64 << 10
CONNECT_SECONDS = 10.0  # the connect itself, inside the deadline
READ_CHUNK = 64 << 10
REASONS = ("timeout", "connect", "http", "too_large")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")


def tokenize_bytes(words: int) -> int:
    """A `/tokenize` answer for a text of `words` words: ids of at most ~8 digits, a few per word, and the
    answer's own keys (vLLM: count, max_model_len, tokens, token_strs)."""
    return (64 << 10) + 64 * max(words, 0)


class FetchError(Exception):
    """A failed exchange: `reason` (one of REASONS) and a one-line message, URLs redacted."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(" ".join(redact_url(message).split()))
        self.reason = reason


@dataclass(frozen=True)
class Answer:
    """One whole answer: status, headers (lower-cased names) and body (at most the limit asked for)."""

    url: str  # redacted
    status: int
    headers: Mapping[str, str]
    body: bytes

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self, what: str, limits: Limits) -> Any:
        """The body as one JSON document under `limits` (`gate.inputs.loading.parse_json`); FetchError("http")
        naming `what` when it is not one."""
        try:
            return parse_json(self.text(), what, limits)
        except InputError as e:
            raise FetchError("http", str(e)) from None


def deadline_in(seconds: float) -> float:
    """The monotonic time `seconds` from now."""
    return time.monotonic() + seconds


@dataclass
class _Target:
    url: str
    shown: str
    https: bool
    host: str
    port: int
    host_header: str
    path: str
    auth: str | None

    @classmethod
    def of(cls, url: str) -> _Target:
        parts = urlsplit(url)
        shown = redact_url(url)
        if parts.scheme not in ("http", "https"):
            raise FetchError("connect", f"{shown}: the URL scheme must be http or https")
        try:
            port = parts.port
        except ValueError:
            raise FetchError("connect", f"{shown}: bad port") from None
        https = parts.scheme == "https"
        host = parts.hostname or "127.0.0.1"
        port = port or (443 if https else 80)
        bracketed = f"[{host}]" if ":" in host else host
        host_header = bracketed if port == (443 if https else 80) else f"{bracketed}:{port}"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        auth = None
        if parts.username is not None:
            cred = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            auth = "Basic " + base64.b64encode(cred).decode()
        return cls(url, shown, https, host, port, host_header, path, auth)

    def request(self, method: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        """The request bytes; a target or header value that would break its line is refused, never sent."""
        if any(c <= " " or c == "\x7f" for c in self.path):
            raise FetchError("connect", f"{self.shown}: the URL path holds blanks or control characters")
        lines = [f"{method} {self.path} HTTP/1.1", f"Host: {self.host_header}", "Accept-Encoding: identity",
                 "Connection: close"]
        hdrs = dict(headers)
        if self.auth is not None:
            hdrs.setdefault("Authorization", self.auth)
        if body is not None:
            hdrs["Content-Length"] = str(len(body))
        for name, value in hdrs.items():
            if any(c in value for c in "\r\n\x00"):
                raise FetchError("connect", f"{self.shown}: the {name} header value holds a line break")
            lines.append(f"{name}: {value}")
        try:
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        except UnicodeEncodeError:
            raise FetchError("connect", f"{self.shown}: a header is not Latin-1 text") from None
        return head + (body or b"")


@contextmanager
def _failures(shown: str, seconds: float) -> Iterator[None]:
    """Every way an exchange goes wrong as one FetchError naming the (redacted) URL."""
    try:
        yield
    except FetchError:
        raise
    except TimeoutError:  # socket.timeout, and the deadline socket's own expiry
        raise FetchError("timeout", f"{shown} did not answer within {seconds:.3g}s") from None
    except ConnectionRefusedError:
        raise FetchError("connect", f"cannot reach {shown}: connection refused") from None
    except http1.TooLarge as e:
        raise FetchError("too_large", f"{shown} sent {e}") from None
    except http1.ResponseError as e:
        raise FetchError("http", f"{shown}: {e}") from None
    except (OSError, ValueError) as e:  # resets, TLS errors, resolver errors; a bad IDNA host name
        raise FetchError("connect", f"cannot reach {shown}: {type(e).__name__}") from None


@dataclass
class _Exchange:
    """An open connection whose request is sent and whose status line and headers are read."""

    target: _Target
    sock: socket.socket
    fp: io.BufferedReader
    head: http1.Response
    seconds: float  # the deadline as a length, for messages
    _closed: bool = field(default=False, init=False)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.fp.close()
            self.sock.close()


def _open(url: str, method: str, headers: Mapping[str, str] | None, body: bytes | None,
          deadline: float) -> _Exchange:
    target = _Target.of(url)
    seconds = max(deadline - time.monotonic(), 0.0)
    request = target.request(method, headers or {}, body)
    sock: socket.socket | None = None
    with _failures(target.shown, seconds):
        if seconds <= 0:
            raise TimeoutError
        sock = deadline_connection((target.host, target.port), min(seconds, CONNECT_SECONDS))
        try:
            if target.https:
                sock = tls_context().wrap_socket(sock, server_hostname=target.host)
            sock.deadline = deadline  # type: ignore[attr-defined]
            sock.sendall(request)
            fp = sock.makefile("rb")
            try:
                head = http1.read_head(fp)
            except BaseException:
                fp.close()
                raise
        except BaseException:
            sock.close()
            raise
    return _Exchange(target, sock, fp, head, seconds)


def fetch(url: str, *, deadline: float, max_bytes: int, method: str = "GET",
          headers: Mapping[str, str] | None = None, body: bytes | None = None) -> Answer:
    """One whole answer, by `deadline` (monotonic seconds, `deadline_in(s)`) and at most `max_bytes` of body.

    Any status comes back (the caller decides what a 404 or a 3xx means); a body over the limit, an
    answer unfinished at the deadline or a broken one is a FetchError."""
    ex = _open(url, method, headers, body, deadline)
    try:
        with _failures(ex.target.shown, ex.seconds):
            data = http1.read_body(ex.fp, ex.head, max_bytes, READ_CHUNK)
    finally:
        ex.close()
    return Answer(ex.target.shown, ex.head.status, ex.head.headers, data)


class Stream:
    """An answer read as it arrives: `lines()` gives each line with the time its bytes came in."""

    def __init__(self, ex: _Exchange, max_bytes: int, max_line: int) -> None:
        self._ex = ex
        self.status = ex.head.status
        self.headers = ex.head.headers
        self.max_bytes = max_bytes
        self.max_line = max_line

    def error_text(self) -> str:
        """The body of a non-200 answer (its message), at most ERROR_BYTES; '' when it is longer or broken."""
        try:
            with _failures(self._ex.target.shown, self._ex.seconds):
                return http1.read_body(self._ex.fp, self._ex.head, ERROR_BYTES, READ_CHUNK).decode("utf-8", "replace")
        except FetchError:
            return ""

    def _pieces(self) -> Iterator[bytes]:
        """The body as the connection delivers it: chunk by chunk, or read by read."""
        fp, r = self._ex.fp, self._ex.head
        total = 0
        if r.bodiless:
            return
        if r.chunked:
            while True:
                line = fp.readline(http1.MAX_LINE + 1)
                if len(line) > http1.MAX_LINE:
                    raise http1.ResponseError(f"a chunk size line longer than {http1.MAX_LINE} bytes")
                size_text = line.split(b";", 1)[0].strip()
                if _CHUNK_SIZE.fullmatch(size_text) is None:
                    raise http1.ResponseError(f"bad chunk size line {line[:40]!r}")
                size = int(size_text, 16)
                if size == 0:
                    return  # trailers are not read: the connection is closed after the stream
                total += size
                if total > self.max_bytes:
                    raise http1.TooLarge(f"more than {self.max_bytes} bytes")
                data = fp.read(size)
                if len(data) != size or fp.read(2) != b"\r\n":
                    raise http1.ResponseError("the connection ended inside a chunk")
                yield data
        left = r.length
        if left is not None and left > self.max_bytes:
            raise http1.TooLarge(f"{left} bytes (limit {self.max_bytes})")
        while left is None or left > 0:
            data = fp.read1(READ_CHUNK if left is None else min(left, READ_CHUNK))
            if not data:
                if left:
                    raise http1.ResponseError(f"the connection ended {left} bytes short of the body")
                return
            total += len(data)
            if total > self.max_bytes:
                raise http1.TooLarge(f"more than {self.max_bytes} bytes")
            if left is not None:
                left -= len(data)
            yield data

    def lines(self) -> Iterator[tuple[bytes, float]]:
        """Each line (without its line break) and the monotonic time its last bytes arrived; a line longer
        than `max_line`, a body over `max_bytes` or the deadline is a FetchError."""
        buf = b""
        with _failures(self._ex.target.shown, self._ex.seconds):
            for piece in self._pieces():
                now = time.monotonic()
                buf += piece
                *done, buf = buf.split(b"\n")
                if len(buf) > self.max_line:
                    raise http1.TooLarge(f"a line longer than {self.max_line} bytes")
                for line in done:
                    if len(line) > self.max_line:
                        raise http1.TooLarge(f"a line longer than {self.max_line} bytes")
                    yield line.rstrip(b"\r"), now
            if buf:
                yield buf.rstrip(b"\r"), time.monotonic()


@contextmanager
def stream(url: str, *, deadline: float, max_bytes: int, max_line: int, method: str = "POST",
           headers: Mapping[str, str] | None = None, body: bytes | None = None) -> Iterator[Stream]:
    """An answer to read line by line as it arrives (server-sent events), under the same deadline and a
    size limit for the whole body and for one line; the connection is closed on leaving the block."""
    ex = _open(url, method, headers, body, deadline)
    try:
        yield Stream(ex, max_bytes, max_line)
    finally:
        ex.close()


def get_json(url: str, *, deadline: float, max_bytes: int, what: str, limits: Limits,
             headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
    """(status, document) of a GET; the document is None unless the status is 200 (then it must be JSON)."""
    hdrs = {"Accept": "application/json", **(headers or {})}
    answer = fetch(url, deadline=deadline, max_bytes=max_bytes, headers=hdrs)
    if answer.status != 200:
        return answer.status, None
    return 200, answer.json(what, limits)


__all__ = ["ERROR_BYTES", "PAGE_BYTES", "SIDE_BYTES", "WINDOWS_BYTES", "Answer", "FetchError", "Stream",
           "deadline_in", "fetch", "get_json", "stream", "tokenize_bytes"]
