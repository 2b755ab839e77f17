"""Fetching an engine's `/metrics` (and the side endpoints), and files.

One attempt per scrape — no retries that pile up; the next scrape is the retry. HTTP is one
kept-alive connection per engine: the request written here, the response read by
`exporter.http1` (status line, headers, sized or chunked body; `http.client` is its oracle in the
tests) — not requests, for three reasons a hostile or broken engine makes real:
- **one deadline for the whole exchange**: connect, request, status line, headers and body
  together take at most the scrape timeout. Every receive waits only for the time left (the
  socket is a `_DeadlineSocket`), so an engine dripping its headers one byte at a time is cut off
  like one dripping its body (a per-read timeout never fires on either);
- **redirects are not followed**: a 3xx is a failed scrape (`reason="redirect"`), never a page
  read from another port or host mixed into this engine's stream;
- cost: a scrape is well under a millisecond of client work on loopback (bench/exporter.py).
Size cap (`Content-Length` first, then while reading), `Accept: text/plain; version=0.0.4`
(engines that speak OpenMetrics would otherwise escape `vllm:` names), no compression asked.
An engine API key is sent as a bearer token to `/v1/*` only; URL user info as basic auth to the
engine itself. No proxy is used (the engine is the pod's own, on loopback). Every URL in an
error message or log line goes through `exporter.redact.redact_url` (no user info, no query).
Host names are resolved by the system resolver, which the deadline does not bound (use an
address or `localhost`, as the sidecar does).
"""

from __future__ import annotations

import base64
import json
import math
import os
import select
import socket
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from exporter import http1
from exporter.engines import DetectError, adapter, detect
from exporter.engines.base import EngineAdapter, EngineSnapshot, ParsedPage, SideInfo
from exporter.engines.versions import conforming, say_untested
from exporter.parse import PageParser, PagePlan, ParseError, _looks_like_exposition
from exporter.redact import redact_url
from exporter.sanity import check_snapshot

if TYPE_CHECKING:
    import ssl

ACCEPT = "text/plain; version=0.0.4"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
SIDE_MAX_BYTES = 4 * 1024 * 1024
REASONS = ("timeout", "connect", "http", "redirect", "parse", "too_large")
READ_CHUNK = 256 * 1024


class ScrapeError(Exception):
    """A failed scrape with its reason (one of REASONS) and a one-line message (URLs redacted)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(redact_url(message))
        self.reason = reason


class _Expired(TimeoutError):
    """The whole-exchange deadline passed (raised by a `_DeadlineSocket` before it waits again)."""


class _Stale(Exception):
    """A kept-alive connection the engine had closed while idle (nothing was answered on it)."""


def _arm(sock: socket.socket, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Expired("deadline passed")
    sock.settimeout(left)


def _wait(sock: socket.socket, deadline: float, events: int, poller: select.poll | None = None) -> None:
    """Until `sock` is ready for `events` (`select.POLLIN`/`POLLOUT`), at most until `deadline`; `poller`: one
    already registered for them (a connection's receives keep one)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Expired("deadline passed")
    if poller is None:
        poller = select.poll()
        poller.register(sock, events)
    if not poller.poll(math.ceil(left * 1000)):
        raise _Expired("deadline passed")


class _DeadlineSocket(socket.socket):
    """A socket whose every receive and send waits only until `deadline` (monotonic seconds).

    `polled` (set by `HttpClient` on a plain connection, which it puts in non-blocking mode): a send is tried
    at once and waits (`poll`, for the time left) only when the kernel has nothing for it, and receives go
    through `_polled_receiver` into the connection's `http1.Reader`, never through this socket's own methods.
    With a socket timeout every call cost three system calls (setting the timeout, poll, recv) where the
    data is usually there already: 11 per loopback scrape of a 53 KB page, 5 this way. Otherwise
    (`gate.inputs.fetch`, a TLS handshake) the socket's own timeout is set to the time left before each call.
    """

    deadline: float = float("inf")
    polled: bool = False

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        assert not self.polled, "a polled connection receives through _polled_receiver"
        _arm(self, self.deadline)
        return super().recv_into(buffer, nbytes, flags)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        assert not self.polled, "a polled connection receives through _polled_receiver"
        _arm(self, self.deadline)
        return super().recv(bufsize, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        if not self.polled:
            _arm(self, self.deadline)
            super().sendall(data, flags)
            return
        view = memoryview(data).cast("B")
        while view:
            try:
                view = view[self.send(view, flags):]
            except BlockingIOError:
                _wait(self, self.deadline, select.POLLOUT)


def _polled_receiver(sock: socket.socket) -> Callable[[memoryview], int]:
    """`recv_into` for a non-blocking plain connection: wait (`_wait`, for the time left to the socket's
    `deadline`; one poller per connection), then receive once. Waiting first, not after a receive that
    failed: the first receive of an exchange comes right after the request, when nothing can be there yet
    (a failed receive is a system call and an exception: ~0.03 ms of a cold 0.6 ms fetch)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    receive = socket.socket.recv_into.__get__(sock)

    def recv_into(view: memoryview) -> int:
        while True:
            _wait(sock, sock.deadline, select.POLLIN, poller)  # type: ignore[attr-defined]
            try:
                return receive(view)
            except BlockingIOError:  # woken with nothing to read after all
                continue

    return recv_into


@cache
def _deadline_ssl_socket() -> type[ssl.SSLSocket]:
    """The same for TLS (installed as the context's `sslsocket_class`). Made on the first https engine: `ssl`
    maps OpenSSL into the process (~4.4 MiB resident), which an http engine's sidecar never needs."""
    import ssl

    class _DeadlineSSLSocket(ssl.SSLSocket):
        deadline: float = float("inf")

        def recv_into(self, buffer: Any, nbytes: int | None = None, flags: int = 0) -> int:
            _arm(self, self.deadline)
            return super().recv_into(buffer, nbytes, flags)

        def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
            _arm(self, self.deadline)
            return super().recv(buflen, flags)

        def sendall(self, data: Any, flags: int = 0) -> None:
            _arm(self, self.deadline)
            super().sendall(data, flags)

    return _DeadlineSSLSocket


def deadline_connection(address: tuple[str, int], timeout: float | None, source_address: Any = None,
                       *args: Any) -> socket.socket:
    """`socket.create_connection` with a `_DeadlineSocket` (connect waits at most `timeout`)."""
    host, port = address
    err: OSError | None = None
    for af, socktype, proto, _, sa in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        sock = _DeadlineSocket(af, socktype, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(sa)
            return sock
        except OSError as e:
            err = e
            sock.close()
    raise err if err is not None else OSError(f"getaddrinfo returned nothing for {host}")


def tls_context() -> ssl.SSLContext:
    import ssl

    ctx = ssl.create_default_context()
    ctx.sslsocket_class = _deadline_ssl_socket()
    return ctx


def split_url(url: str) -> tuple[str, str]:
    """Engine URL (base or its /metrics) -> (base URL, metrics URL)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    path = parts.path.rstrip("/")
    if path.endswith("/metrics"):
        base_path, metrics_path = path[: -len("/metrics")], path
    else:
        base_path, metrics_path = path, path + "/metrics"
    base = urlunsplit((parts.scheme, parts.netloc, base_path, "", ""))
    return base, urlunsplit((parts.scheme, parts.netloc, metrics_path, parts.query, ""))


@dataclass
class HttpClient:
    """GETs from one engine (scheme, host, port) over one kept-alive connection, each bounded in time
    (one deadline for the whole exchange) and size; redirects are errors. Not thread-safe.

    The request is written here (a GET is a few header lines) and the answer read by
    `exporter.http1`; why not `http.client`: on a scrape every second, its request building and its
    header parsing (the `email` package) took about 0.4 ms of a 1.3 ms scrape of a 53 KB page
    when cold (bench/side_by_side.py), more than the engine's own answer on loopback.
    """

    base_url: str
    _sock: socket.socket | None = field(default=None, init=False, repr=False)
    _fp: http1.Reader | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"engine URL scheme must be http or https, not {parts.scheme!r}")
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.https else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 address
        self._host_header = host if self.port == (443 if self.https else 80) else f"{host}:{self.port}"
        self._auth: str | None = None
        if parts.username is not None:
            cred = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            self._auth = "Basic " + base64.b64encode(cred).decode()
        self._tls = tls_context() if self.https else None
        self._made: dict[tuple[str, tuple[tuple[str, str], ...]], bytes] = {}

    def close(self) -> None:
        if self._fp is not None:
            self._fp.close()
            self._fp = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _shown(self, target: str) -> str:
        """`target` as error messages show it: no user info, no query (`redact_url`)."""
        return redact_url(f"{'https' if self.https else 'http'}://{self.host}:{self.port}{target}")

    def _connection(self, deadline: float) -> tuple[socket.socket, http1.Reader, bool]:
        """The kept-alive connection (reused=True) or a new one, connected within the deadline."""
        if self._sock is not None and self._fp is not None:
            return self._sock, self._fp, True
        self.close()
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Expired("deadline passed")
        sock = deadline_connection((self.host, self.port), min(left, 3.0))
        if self._tls is not None:
            try:
                sock = self._tls.wrap_socket(sock, server_hostname=self.host)
            except BaseException:
                sock.close()
                raise
            recv_into: Callable[[memoryview], int] = sock.recv_into  # its own time limit before each receive (`_deadline_ssl_socket`)
        else:
            sock.setblocking(False)  # each send waits by `_wait` (see `_DeadlineSocket`)
            sock.polled = True  # type: ignore[attr-defined]
            recv_into = _polled_receiver(sock)
        # a buffer of READ_CHUNK: a page smaller than it comes in one receive (often with its head)
        self._sock, self._fp = sock, http1.Reader(recv_into, READ_CHUNK)
        return sock, self._fp, False

    def _request(self, target: str, headers: Mapping[str, str]) -> bytes:
        """The request bytes; a target or header value that would break its line is refused, never sent.

        The last few are remembered by target and headers: a scrape loop sends the same GET every time."""
        key = (target, tuple(headers.items()))
        made = self._made.get(key)
        if made is None:
            if len(self._made) >= 8:
                self._made.clear()
            made = self._made[key] = self._make_request(target, headers)
        return made

    def _make_request(self, target: str, headers: Mapping[str, str]) -> bytes:
        if any(c <= " " or c == "\x7f" for c in target):
            raise http1.ResponseError("the URL path holds blanks or control characters")
        lines = [f"GET {target} HTTP/1.1", f"Host: {self._host_header}", "Accept-Encoding: identity"]
        for name, value in headers.items():
            if "\r" in value or "\n" in value or "\x00" in value:
                raise http1.ResponseError(f"the {name} header value holds a line break")
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def get(self, target: str, timeout: float, max_bytes: int, headers: Mapping[str, str] | None = None) -> bytes:
        """GET `target` (path and query); the body, or ScrapeError naming `target` without secrets."""
        deadline = time.monotonic() + timeout
        hdrs = dict(headers or {})
        if self._auth is not None:
            hdrs.setdefault("Authorization", self._auth)
        try:
            request = self._request(target, hdrs)
            try:
                return self._exchange(target, request, deadline, max_bytes)
            except _Stale:  # not a retry of a failed engine: the request never reached one
                return self._exchange(target, request, deadline, max_bytes)
        except ScrapeError:
            self.close()
            raise
        except TimeoutError:
            self.close()
            raise ScrapeError("timeout", f"{self._shown(target)} did not send its whole page within {timeout:g}s") \
                from None
        except ConnectionRefusedError:
            self.close()
            raise ScrapeError("connect", f"cannot reach {self._shown(target)}: connection refused") from None
        except http1.TooLarge as e:
            self.close()
            raise ScrapeError("too_large", f"{self._shown(target)} sent {e}") from None
        except (http1.ResponseError, UnicodeEncodeError) as e:
            self.close()
            raise ScrapeError("http", f"{self._shown(target)}: {e}") from None
        except OSError as e:
            self.close()
            raise ScrapeError("connect", f"cannot reach {self._shown(target)}: {type(e).__name__}") from None

    def _exchange(self, target: str, request: bytes, deadline: float, max_bytes: int) -> bytes:
        sock, fp, reused = self._connection(deadline)
        sock.deadline = deadline  # type: ignore[attr-defined]
        try:
            sock.sendall(request)
            r = http1.read_head(fp)
        except (http1.Closed, ConnectionResetError, BrokenPipeError):
            self.close()
            if reused:
                raise _Stale() from None
            raise
        if 300 <= r.status < 400:
            where = r.header("Location") or "nowhere"
            raise ScrapeError("redirect", f"{self._shown(target)} answered HTTP {r.status} (to {where}): "
                                          "redirects are not followed")
        if r.status != 200:
            raise ScrapeError("http", f"{self._shown(target)} answered HTTP {r.status}")
        encoding = (r.header("Content-Encoding") or "identity").strip().lower()
        if encoding != "identity":
            raise ScrapeError("http", f"{self._shown(target)} sent a {encoding} body although none was asked for")
        body = http1.read_body(fp, r, max_bytes, READ_CHUNK)
        if r.will_close:
            self.close()
        return body


class PageReader:
    """Detects the engine and parses pages with one kept `PageParser` per engine kind.

    The engine is detected on the first page and again only when a page holds none of that
    engine's families (detection counts prefixes in the page's head: not worth doing every scrape).
    A page's conformance to the adapter's shapes (`conforming`: which labels each family needs) is
    a matter of its series alone, so a page read by the same plan as a page that conformed is not
    checked again (`PageParser.plan`: its pages hold that page's very label mappings): ~25 µs of a
    cold 53 KB scrape's ~0.45 ms parse + normalise (bench/side_by_side.py).
    """

    def __init__(self, engine: str = "auto") -> None:
        self.engine = engine
        self._kind: str | None = None
        self._parsers: dict[str, tuple[EngineAdapter, PageParser]] = {}
        self._conforms: dict[str, PagePlan] = {}  # per kind: the plan whose pages conform

    def _parse(self, kind: str, text: str, dropped: dict[str, int] | None) -> tuple[EngineAdapter, ParsedPage]:
        entry = self._parsers.get(kind)
        if entry is None:
            ad = adapter(kind)
            entry = self._parsers[kind] = (ad, PageParser(ad.families, usable_only=True))
        ad, parser = entry
        page = parser.parse(text, dropped)
        plan = parser.plan
        if parser.read_by_plan and plan is self._conforms.get(kind):
            return ad, page
        checked = conforming(ad, page, dropped)
        if checked is page and plan is not None:
            self._conforms[kind] = plan
        else:
            self._conforms.pop(kind, None)  # not a page that conforms, nor a plan to keep alive
        return ad, checked

    def read(self, text: str, dropped: dict[str, int] | None = None) -> tuple[EngineAdapter, ParsedPage]:
        """(adapter, parsed page); a page that is not Prometheus text raises ScrapeError("parse")."""
        try:
            if self._kind is not None:  # the parser refuses HTML/JSON itself
                ad, page = self._parse(self._kind, text, dropped)
                if any(":" in k for k in page):
                    return ad, page
                if dropped is not None:
                    dropped.clear()
            _looks_like_exposition(text)  # HTML/JSON is named as such, before "no engine families"
            self._kind = detect(text, self.engine)
            return self._parse(self._kind, text, dropped)
        except (ParseError, DetectError) as e:
            raise ScrapeError("parse", str(e)) from None


def snapshot_from_text(text: str, engine: str = "auto", timestamp: float | None = None,
                       side: SideInfo | None = None) -> EngineSnapshot:
    """Parse a page into a normalised snapshot; a page that is not Prometheus text raises ScrapeError."""
    dropped: dict[str, int] = {}
    ad, page = PageReader(engine).read(text, dropped)
    return check_snapshot(ad.snapshot(page, time.time() if timestamp is None else timestamp, side), dropped)


def read_page_file(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[bytes, float]:
    """A recorded page's bytes and modification time: regular files only, at most `max_bytes`.

    Why here and so: `exporter once --from-file` and `exporter window` take paths from a user, and a
    FIFO blocks `open()` until a writer appears while `/dev/zero` never ends. So the path is `stat`ed
    first, opened with `O_NONBLOCK`, the descriptor checked again (it may have been swapped), and the
    read stops one byte past the limit — the same rules as the gate's `gate.inputs.loading` (which the
    exporter may not import), with the scrape's own size cap.
    """
    p = Path(path)
    try:
        if not stat.S_ISREG(os.stat(p).st_mode):
            raise ScrapeError("parse", f"{p} is not a regular file")
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ScrapeError("parse", f"cannot read {p}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ScrapeError("parse", f"{p} is not a regular file")
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise ScrapeError("parse", f"{p} is over the {max_bytes:,}-byte page limit")
    except OSError as e:
        raise ScrapeError("parse", f"cannot read {p}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return b"".join(chunks), st.st_mtime


def read_file_snapshot(path: str | Path, engine: str = "auto") -> EngineSnapshot:
    """A recorded `/metrics` page from disk (`read_page_file`); its timestamp is the file's modification time."""
    p = Path(path)
    raw, mtime = read_page_file(p)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScrapeError("parse", f"{p}: not UTF-8 text, not a Prometheus exposition") from None
    try:
        return snapshot_from_text(text, engine, timestamp=mtime)
    except ScrapeError as e:
        raise ScrapeError(e.reason, f"{p}: {e}") from None


@dataclass
class Scraper:
    """Scrapes one engine; caches side information (context cap, SGLang pool) until a restart.

    Not thread-safe: one scrape loop owns it. A snapshot's `anomalies` say what reading its page
    left out and why (exporter.sanity).
    """

    url: str = field(repr=False)  # may carry user info or a token in its query: shown only redacted
    engine: str = "auto"
    timeout: float = 5.0
    max_bytes: int = DEFAULT_MAX_BYTES
    api_key: str | None = field(default=None, repr=False)
    side_retry_seconds: float = 60.0  # side info that came back empty (endpoint failed) is asked again
    _side: SideInfo | None = field(default=None, init=False, repr=False)
    _side_start: float | None = field(default=None, init=False, repr=False)
    _side_at: float = field(default=0.0, init=False, repr=False)
    _side_empty: bool = field(default=True, init=False, repr=False)  # _side == SideInfo(), kept

    def __post_init__(self) -> None:
        self.base_url, self.metrics_url = split_url(self.url)
        if self.api_key is None:
            self.api_key = os.environ.get("SPECGATE_ENGINE_API_KEY") or None
        self._http = HttpClient(self.base_url)
        parts = urlsplit(self.metrics_url)
        self._metrics_target = parts.path + (f"?{parts.query}" if parts.query else "")
        self._base_path = urlsplit(self.base_url).path
        self._reader = PageReader(self.engine)

    def __repr__(self) -> str:
        return f"Scraper({redact_url(self.metrics_url)!r}, engine={self.engine!r}, timeout={self.timeout!r})"

    def close(self) -> None:
        self._http.close()

    def _json(self, path: str, v1: bool = False) -> dict | None:
        headers = {"Authorization": f"Bearer {self.api_key}"} if v1 and self.api_key else {}
        headers["Accept"] = "application/json"
        try:
            body = self._http.get(self._base_path + path, self.timeout, SIDE_MAX_BYTES, headers)
            doc = json.loads(body)
            return doc if isinstance(doc, dict) else None
        except (ScrapeError, ValueError):
            return None

    def fetch(self) -> bytes:
        """The raw `/metrics` page (one bounded GET); raises ScrapeError with its reason."""
        return self._http.get(self._metrics_target, self.timeout, self.max_bytes, {"Accept": ACCEPT})

    def snapshot_from_page(self, raw: bytes, ts: float) -> EngineSnapshot:
        """Parse and normalise a fetched page, with side info (asked for again after a restart, and
        after `side_retry_seconds` when it came back empty)."""
        dropped: dict[str, int] = {}
        ad, page = self._reader.read(raw.decode("utf-8", errors="replace"), dropped)
        start_samples = page.get("process_start_time_seconds")
        start = start_samples[0][1] if start_samples else None
        if (self._side is None or start != self._side_start
                or (time.monotonic() - self._side_at >= self.side_retry_seconds and ad.side_incomplete(self._side))):
            before = self._side.version if self._side is not None else None
            self._side = ad.side_info(self._json)
            if self._side.version != before:  # said once per version, not at each restart or retry
                say_untested(ad, self._side.version)
            self._side_empty = self._side == SideInfo()
            self._side_start = start
            self._side_at = time.monotonic()
        return check_snapshot(ad.snapshot(page, ts, None if self._side_empty else self._side), dropped)

    def scrape(self) -> EngineSnapshot:
        """Fetch and normalise one page; raises ScrapeError with its reason."""
        raw = self.fetch()
        return self.snapshot_from_page(raw, time.time())


def scrape_once(url: str, engine: str = "auto", timeout: float = 5.0, api_key: str | None = None) -> EngineSnapshot:
    """One scrape of a live engine (the `specgate exporter once` path and the gate's live evidence)."""
    scraper = Scraper(url, engine=engine, timeout=timeout, api_key=api_key)
    try:
        return scraper.scrape()
    finally:
        scraper.close()
