"""The sidecar: a scrape loop feeding `ExporterState`, and an HTTP server for our own endpoints.

Endpoints: `/metrics` (specgate_* in the classic text format — the bytes of `generate_latest`,
written faster by `exporter.collect.SpecgateExposition` — and `CONTENT_TYPE_LATEST`; a Prometheus 2.x
scraper negotiating OpenMetrics would otherwise get
names escaped), `/healthz` (the exporter itself is alive, even when the engine is down),
`/api/v1/windows` (recent completed batch windows as JSON, for the gate's post phase).
The exporter keeps serving whatever the engine does; it logs state changes, not every scrape,
through `logging` (a process that embeds the sidecar chooses the handlers; `run_sidecar`, the
command's entry point, sends them to stderr when nobody has). No URL credentials or API keys are
logged: every engine URL and scrape error goes through `exporter.redact.redact_url`.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from exporter.collect import SpecgateExposition
from exporter.exits import EXIT_INVALID
from exporter.redact import redact_url
from exporter.scrape import ScrapeError, Scraper
from exporter.settings import ExporterSettings
from exporter.state import ExporterState

# prometheus_client's CONTENT_TYPE_LATEST (the classic text format), as a literal: importing prometheus_client
# for one string held ~1.9 MiB in every sidecar (tests/exporter/test_memory_imports.py holds the two equal)
CONTENT_TYPE_LATEST = "text/plain; version=1.0.0; charset=utf-8"

log = logging.getLogger(__name__)
LOG_FORMAT = "specgate exporter: %(message)s"


def windows_document(state: ExporterState) -> dict[str, Any]:
    with state.lock:
        s = state.settings
        return {"engine": state.engine, "batch_window_seconds": s.batch_window, "min_drafts": s.min_drafts,
                "acceptance_slo_target": s.acceptance_slo_target, "engine_up": state.up,
                "windows": [w.to_json() for w in state.tracker.completed]}


def make_handler(state: ExporterState) -> type[BaseHTTPRequestHandler]:
    metrics = SpecgateExposition(state)

    class Handler(BaseHTTPRequestHandler):
        server_version = "specgate-exporter"

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, metrics.render(), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                self._send(200, b"ok\n", "text/plain; charset=utf-8")
            elif path == "/api/v1/windows":
                self._send(200, json.dumps(windows_document(state)).encode(), "application/json")
            elif path == "/":
                self._send(200, b"specgate exporter: /metrics /healthz /api/v1/windows\n", "text/plain; charset=utf-8")
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")

        do_HEAD = do_GET

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # no per-request log lines

    return Handler


class Sidecar:
    """Scrape loop + HTTP server; `start()` returns once listening, `stop()` joins both."""

    def __init__(self, settings: ExporterSettings) -> None:
        self.settings = settings
        self.state = ExporterState.from_settings(settings)
        key = settings.engine_api_key.get_secret_value() if settings.engine_api_key else None
        self.scraper = Scraper(settings.engine_url, engine=settings.engine, timeout=settings.scrape_timeout,
                               max_bytes=settings.max_page_bytes, api_key=key)
        self._stop = threading.Event()
        host, port = settings.listen_address()
        self.httpd = ThreadingHTTPServer((host, port), make_handler(self.state))
        self.httpd.daemon_threads = True
        self._threads: list[threading.Thread] = []

    @property
    def address(self) -> tuple[str, int]:
        return self.httpd.server_address[:2]  # type: ignore[return-value]

    def scrape_once(self) -> None:
        t0 = time.perf_counter()
        was_up = self.state.up
        try:
            snap = self.scraper.scrape()
        except ScrapeError as e:
            self.state.record_failure(e.reason, str(e), time.perf_counter() - t0)
            if was_up or self.state.errors[e.reason] == 1:
                log.warning("engine down (%s): %s", e.reason, redact_url(str(e)))
            return
        self.state.record_success(snap, time.perf_counter() - t0)
        if not was_up:
            log.info("engine up: %s at %s, %d stream(s)", snap.engine, redact_url(self.scraper.metrics_url),
                     len(snap.streams))

    def _loop(self) -> None:
        interval = self.settings.scrape_interval
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.scrape_once()
            next_at += interval
            now = time.monotonic()
            if next_at < now:  # a slow scrape: skip missed ticks instead of piling them up
                next_at = now
            self._stop.wait(next_at - now)

    def start(self) -> None:
        for target in (self.httpd.serve_forever, self._loop):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        for t in self._threads:
            t.join(timeout=5)


def run_sidecar(settings: ExporterSettings) -> int:
    """Run until SIGTERM/SIGINT."""
    if not logging.getLogger().handlers:  # the command itself: notices on stderr, as before
        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    try:
        car = Sidecar(settings)
    except OSError as e:
        print(f"specgate: error: cannot listen on {settings.listen}: {e.strerror or e}", file=sys.stderr)
        return EXIT_INVALID
    host, port = car.address
    log.info("listening on http://%s:%s/metrics, scraping %s every %gs", host, port,
             redact_url(car.scraper.metrics_url), settings.scrape_interval)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    car.start()
    done.wait()
    car.stop()
    log.info("stopped")
    return 0
