"""A hostile engine against the fetch (issue 14, items 1 and 6): one deadline for the whole exchange,
redirects not followed, no credentials in what the exporter writes.

Each test starts its own loopback engine (a raw socket server, so it can misbehave below HTTP: drip
its status line and headers, never finish them) on an ephemeral 127.0.0.1 port and stops it.
"""

from __future__ import annotations

import base64
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from exporter.scrape import REASONS, ScrapeError, Scraper
from exporter.server import Sidecar
from exporter.settings import ExporterSettings

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "tests" / "fixtures" / "vllm" / "metrics-ngram-after.txt").read_bytes()


def ok_response(body: bytes = PAGE, keep_alive: bool = False) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            + f"Content-Length: {len(body)}\r\n".encode()
            + (b"" if keep_alive else b"Connection: close\r\n") + b"\r\n" + body)


class RawEngine:
    """A loopback TCP server; `behave(conn, request_bytes)` answers each request as the test likes."""

    def __init__(self, behave: Callable[[socket.socket, bytes], None]) -> None:
        self.behave = behave
        self.requests: list[bytes] = []
        self.connections = 0
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        buf = b""
        try:
            while not self.stop.is_set():
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                req, _, buf = buf.partition(b"\r\n\r\n")
                self.requests.append(req)
                self.behave(conn, req)
        except OSError:
            pass
        finally:
            conn.close()

    def __enter__(self) -> RawEngine:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(timeout=5)


def drip(data: bytes, every_s: float, stop: threading.Event) -> Callable[[socket.socket, bytes], None]:
    def behave(conn: socket.socket, _req: bytes) -> None:
        for i in range(len(data)):
            conn.sendall(data[i: i + 1])
            if stop.wait(every_s):
                return
    return behave


@contextmanager
def sidecar(url: str, scrape_timeout: float = 1.0) -> Iterator[Sidecar]:
    """A real sidecar whose loop scrapes once at start (interval 1 h); the test drives further scrapes."""
    settings = ExporterSettings(engine_url=url, listen="127.0.0.1:0", scrape_interval=3600.0,
                                scrape_timeout=scrape_timeout, windows=[60.0], min_drafts=1)
    car = Sidecar(settings)
    car.start()
    end = time.monotonic() + 20
    while not (car.state.up or any(car.state.errors.values())) and time.monotonic() < end:
        time.sleep(0.02)  # the loop's own first scrape is over: the test's scrapes never overlap it
    try:
        yield car
    finally:
        car.stop()


def scrape_error(scraper: Scraper) -> tuple[ScrapeError, float]:
    t0 = time.monotonic()
    with pytest.raises(ScrapeError) as e:
        scraper.scrape()
    return e.value, time.monotonic() - t0


# --- one deadline for connect + headers + body ------------------------------------------------------

def test_an_engine_dripping_its_headers_is_cut_off_at_the_timeout():
    # Before: requests' read timeout bounds each socket read, and the deadline was checked only between
    # body chunks, so status line + headers dripped one byte every 0.1 s kept engine_up at 1 for minutes.
    stop = threading.Event()
    headers = b"HTTP/1.1 200 OK\r\n" + b"".join(f"X-Pad-{i}: {'x' * 20}\r\n".encode() for i in range(50))
    with RawEngine(drip(headers, 0.05, stop)) as eng:
        err, took = scrape_error(Scraper(eng.url, engine="vllm", timeout=1.0))
        stop.set()
    assert err.reason == "timeout" and "within 1s" in str(err)
    assert took < 2.0  # the whole exchange, not one read


def test_an_engine_dripping_its_status_line_is_cut_off_too():
    stop = threading.Event()
    with RawEngine(drip(b"HTTP/1.1 200 OK\r\n" * 40, 0.05, stop)) as eng:
        err, took = scrape_error(Scraper(eng.url, engine="vllm", timeout=0.7))
        stop.set()
    assert err.reason == "timeout" and took < 1.7


def test_an_engine_dripping_its_body_is_cut_off_and_the_sidecar_says_engine_down():
    stop = threading.Event()
    head, _, body = ok_response().partition(b"\r\n\r\n")

    def behave(conn: socket.socket, _req: bytes) -> None:
        conn.sendall(head + b"\r\n\r\n")
        step = len(body) // 40 + 1
        for i in range(0, len(body), step):
            conn.sendall(body[i: i + step])
            if stop.wait(0.2):
                return

    with RawEngine(behave) as eng, sidecar(eng.url, scrape_timeout=0.8) as car:
        t0 = time.monotonic()
        car.scrape_once()
        took = time.monotonic() - t0
        stop.set()
    assert took < 1.8
    assert car.state.up is False and car.state.errors["timeout"] >= 1


def test_an_engine_that_never_answers_is_a_timeout_within_the_deadline():
    with RawEngine(lambda conn, req: time.sleep(3)) as eng:
        err, took = scrape_error(Scraper(eng.url, engine="vllm", timeout=0.5))
    assert err.reason == "timeout" and took < 1.5


# --- redirects ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_and_counted_as_redirect(code: int):
    # Before: requests followed it to another port, mixing another engine's counters into this stream.
    with RawEngine(lambda conn, req: conn.sendall(ok_response())) as other:
        location = f"{other.url}/metrics".encode()

        def redirect(conn: socket.socket, _req: bytes) -> None:
            conn.sendall(f"HTTP/1.1 {code} Moved\r\nContent-Length: 0\r\n".encode()
                         + b"Location: " + location + b"\r\n\r\n")

        with RawEngine(redirect) as eng:
            err, _ = scrape_error(Scraper(eng.url, engine="vllm", timeout=2.0))
        assert other.requests == []  # never asked
    assert err.reason == "redirect" and str(code) in str(err) and "not followed" in str(err)
    assert "redirect" in REASONS


def test_a_redirect_is_counted_by_the_sidecar_and_nothing_is_exported_from_it():
    with RawEngine(lambda conn, req: conn.sendall(
            b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/metrics\r\nContent-Length: 0\r\n\r\n")) as eng, \
            sidecar(eng.url) as car:
        car.scrape_once()
    assert car.state.errors["redirect"] >= 1 and car.state.up is False


# --- keep-alive -----------------------------------------------------------------------------------------

def test_one_connection_is_kept_for_many_scrapes():
    with RawEngine(lambda conn, req: conn.sendall(ok_response(keep_alive=True))) as eng:
        sc = Scraper(eng.url, engine="vllm", timeout=2.0)
        for _ in range(5):
            assert sc.fetch() == PAGE
        sc.close()
    assert eng.connections == 1 and len(eng.requests) == 5


def test_a_kept_connection_the_engine_closed_while_idle_is_replaced_once():
    answered = []

    def once_then_close(conn: socket.socket, _req: bytes) -> None:
        conn.sendall(ok_response(keep_alive=True))  # says keep-alive, then hangs up while idle
        answered.append(1)
        conn.shutdown(socket.SHUT_RDWR)

    with RawEngine(once_then_close) as eng:
        sc = Scraper(eng.url, engine="vllm", timeout=2.0)
        assert sc.fetch() == PAGE
        time.sleep(0.1)
        assert sc.fetch() == PAGE  # not a failed scrape: the request never reached an engine
        sc.close()
    assert eng.connections == 2


# --- credentials ------------------------------------------------------------------------------------------

@contextmanager
def captured_logs() -> Iterator[list[str]]:
    lines: list[str] = []

    class H(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    h = H(level=logging.DEBUG)
    root = logging.getLogger()
    old = root.level
    root.addHandler(h)
    root.setLevel(logging.DEBUG)  # urllib3/http.client debug lines included, if anything emits them
    try:
        yield lines
    finally:
        root.removeHandler(h)
        root.setLevel(old)


def test_credentials_and_query_tokens_never_reach_errors_or_logs():
    secret_url_parts = ("admin", "p@ss:w0rd", "tok3n")
    with RawEngine(lambda conn, req: conn.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n")) as eng:
        port = eng.url.rsplit(":", 1)[1]
        url = f"http://admin:p@ss:w0rd@127.0.0.1:{port}/metrics?token=tok3n"
        with captured_logs() as logs, sidecar(url) as car:
            car.scrape_once()
        sent = b"\n".join(eng.requests)
    assert car.state.errors["http"] >= 1
    shown = "\n".join([*logs, car.state.last_error or "", repr(car.scraper)])
    for part in secret_url_parts:
        assert part not in shown, (part, shown)
    assert f"127.0.0.1:{port}/metrics?<redacted>" in (car.state.last_error or "")
    # the engine itself still gets them: basic auth from the user info, the query string as given
    assert b"GET /metrics?token=tok3n HTTP/1.1" in sent
    assert b"Authorization: Basic " + base64.b64encode(b"admin:p@ss:w0rd") in sent


def test_the_engine_down_message_has_no_user_info():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sc = Scraper(f"http://u:hunter2@127.0.0.1:{port}", engine="vllm", timeout=0.5)
    err, _ = scrape_error(sc)
    assert err.reason == "connect" and "hunter2" not in str(err) and f"127.0.0.1:{port}" in str(err)


# --- what goes on the wire, and TLS ----------------------------------------------------------------------

def test_the_request_is_one_get_with_host_accept_and_auth_and_nothing_else() -> None:
    """The client writes its own request (http.client reads the answer): exactly these header lines."""
    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(ok_response())

    with RawEngine(answer) as engine:
        port = engine.sock.getsockname()[1]
        Scraper(f"http://user:pa%40ss@127.0.0.1:{port}/engine", engine="vllm", timeout=2.0).fetch()
    lines = engine.requests[0].decode("latin-1").split("\r\n")
    auth = "Basic " + base64.b64encode(b"user:pa@ss").decode()
    assert lines == ["GET /engine/metrics HTTP/1.1", f"Host: 127.0.0.1:{port}", "Accept-Encoding: identity",
                     "Accept: text/plain; version=0.0.4", f"Authorization: {auth}"]  # (the blank line ends it)


def test_a_header_value_with_a_line_break_is_refused_not_sent() -> None:
    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(ok_response())

    with RawEngine(answer) as engine:
        sc = Scraper(engine.url, engine="vllm", timeout=2.0, api_key="key\r\nX-Injected: 1")
        assert sc._json("/v1/models", v1=True) is None  # a side endpoint: absent, and nothing sent
        with pytest.raises(ScrapeError) as e:
            sc._http.get("/v1/models", 2.0, 1024, {"Authorization": "Bearer key\r\nX-Injected: 1"})
    assert e.value.reason == "http" and "key" not in str(e.value)
    assert not any(b"X-Injected" in r for r in engine.requests)


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    import subprocess

    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=engine",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def test_an_https_engine_is_scraped_over_tls_and_its_certificate_is_checked(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A real TLS server (the standard library's, with a certificate made by openssl here): refused while
    its certificate is not trusted (one-line `connect` error), scraped once it is (SSL_CERT_FILE)."""
    import ssl
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    cert, key = _self_signed(tmp_path)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{httpd.server_address[1]}"
    try:
        with pytest.raises(ScrapeError) as e:
            Scraper(url, engine="vllm", timeout=3.0).fetch()
        assert e.value.reason == "connect" and "\n" not in str(e.value)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        sc = Scraper(url, engine="vllm", timeout=3.0)
        try:
            assert sc.fetch() == PAGE and sc.fetch() == PAGE  # twice: on the kept connection
            assert sc.scrape().stream("tiny", "0").spec.drafts == 522  # the capture's own counter
        finally:
            sc.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
