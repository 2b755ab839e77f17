"""Bad input from a live engine: a real sidecar (`exporter.server.Sidecar`) against a loopback engine
that misbehaves on purpose. The sidecar must keep serving /metrics and /healthz, say
`specgate_engine_up 0` and why (`specgate_engine_scrape_errors_total{reason}`), and never report
a value that was not in the engine's pages.

Each test starts its own servers on 127.0.0.1 ephemeral ports and stops them. The sidecar's scrape
interval is long (one scrape at start); further scrapes are driven by the test, so nothing
depends on timing except waiting (with a deadline) for that first scrape.
"""

from __future__ import annotations

import math
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from exporter.scrape import ScrapeError, Scraper
from exporter.server import Sidecar
from exporter.settings import ExporterSettings

ROOT = Path(__file__).resolve().parents[2]
VLLM = ROOT / "tests" / "fixtures" / "vllm"
FIFTY_MB = 50 * 1000 * 1000
DRAFTS_LINE = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 522.0\n'


def capture(name: str) -> str:
    return (VLLM / f"metrics-{name}.txt").read_text()


class FakeEngine:
    """A loopback engine whose /metrics does what `mode` says; other paths answer 404."""

    def __init__(self, mode: str = "pages", pages: list[str] | None = None, sleep_s: float = 5.0) -> None:
        self.mode = mode
        self.pages = list(pages or [])
        self.sleep_s = sleep_s
        self.release = threading.Event()
        self.bytes_sent = 0
        self.metrics_requests = 0
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                if self.path != "/metrics":
                    self._reply(404, "text/plain", b"not found\n")
                    return
                engine.metrics_requests += 1
                getattr(engine, f"_{engine.mode}")(self)

            def _reply(self, code: int, ctype: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    # modes ---------------------------------------------------------------------------------
    def _pages(self, h) -> None:
        body = self.pages.pop(0) if len(self.pages) > 1 else self.pages[0]
        h._reply(200, "text/plain; version=0.0.4; charset=utf-8", body.encode())

    def _sleep(self, h) -> None:
        self.release.wait(self.sleep_s)  # longer than the scrape timeout; released at stop
        h._reply(200, "text/plain; version=0.0.4", capture("ngram-after").encode())

    def _status500(self, h) -> None:
        h._reply(500, "text/plain", b"Internal Server Error\n")

    def _html(self, h) -> None:
        h._reply(200, "text/html", b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>\n")

    def _huge(self, h, with_length: bool = False) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        if with_length:
            h.send_header("Content-Length", str(FIFTY_MB))
        h.end_headers()  # HTTP/1.0 without a length: the body runs until the connection closes
        line = b'vllm:num_requests_running{engine="0",model_name="tiny"} 0.0\n'
        chunk = line * (65536 // len(line))
        try:
            h.wfile.write(b"# TYPE vllm:num_requests_running gauge\n")
            while self.bytes_sent < FIFTY_MB:
                h.wfile.write(chunk)
                self.bytes_sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the scraper hung up: what we want

    def _drip(self, h) -> None:
        """A valid page in 40 pieces, one every 0.2 s: each read is quick, the whole page takes ~8 s."""
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        h.end_headers()
        page = capture("ngram-after").encode()
        step = len(page) // 40 + 1
        try:
            for i in range(0, len(page), step):
                h.wfile.write(page[i: i + step])
                self.bytes_sent += len(page[i: i + step])
                if self.release.wait(0.2):
                    return
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _huge_with_length(self, h) -> None:
        self._huge(h, with_length=True)

    def __enter__(self) -> FakeEngine:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def closed_port_url() -> str:
    """A loopback port that was free a moment ago and has nobody listening (engine down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@contextmanager
def sidecar(engine_url: str, **kw: object) -> Iterator[Sidecar]:
    settings = ExporterSettings(engine_url=engine_url, listen="127.0.0.1:0", scrape_interval=3600.0,
                                scrape_timeout=kw.pop("scrape_timeout", 0.5), windows=kw.pop("windows", [60.0]),
                                min_drafts=1, **kw)
    car = Sidecar(settings)
    car.start()
    try:
        yield car
    finally:
        car.stop()


def own(car: Sidecar, path: str = "/metrics") -> requests.Response:
    host, port = car.address
    return requests.get(f"http://{host}:{port}{path}", timeout=5)


Flat = dict[tuple[str, frozenset], float]


def samples(car: Sidecar) -> Flat:
    r = own(car)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(r.text) for s in fam.samples}


def wait_for(pred: Callable[[], bool], what: str, deadline_s: float = 20.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    pytest.fail(f"sidecar never got there: {what}")


def value(got: Flat, name: str, **labels: str) -> float | None:
    found = [v for (n, ls), v in got.items() if n == name and set(labels.items()) <= ls]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


def errors(car: Sidecar, reason: str) -> float:
    return value(samples(car), "specgate_engine_scrape_errors_total", reason=reason) or 0.0


def assert_failed_for(car: Sidecar, reason: str) -> Flat:
    wait_for(lambda: errors(car, reason) >= 1, f"an error counted as {reason}")
    got = samples(car)
    assert value(got, "specgate_engine_up") == 0.0
    for other in ("timeout", "connect", "http", "parse", "too_large"):
        assert value(got, "specgate_engine_scrape_errors_total", reason=other) == (1.0 if other == reason else 0.0)
    assert own(car, "/healthz").status_code == 200
    assert not any(n.startswith("specgate_spec_") for n, _ in got)  # nothing made up
    return got


def assert_all_finite(got: Flat) -> None:
    bad = {k: v for k, v in got.items() if not math.isfinite(v)}
    assert not bad, bad


# --- engine faults ---------------------------------------------------------------------------------

def test_engine_down_is_connect():
    with sidecar(closed_port_url()) as car:
        assert_failed_for(car, "connect")


def test_engine_slower_than_the_timeout_is_timeout():
    with FakeEngine("sleep", sleep_s=10.0) as eng, sidecar(eng.url, scrape_timeout=0.5) as car:
        assert_failed_for(car, "timeout")
        assert own(car, "/healthz").text == "ok\n"  # serving while the engine hangs


def test_an_engine_dripping_its_page_is_cut_off_at_the_timeout():
    # The read timeout bounds each socket read, not the page: a slow-drip engine would hold the
    # scrape loop for as long as it likes. The scrape timeout is for the whole page.
    with FakeEngine("drip") as eng, pytest.raises(ScrapeError) as e:
        Scraper(eng.url, engine="vllm", timeout=1.0).scrape()
    assert e.value.reason == "timeout" and "within 1s" in str(e.value)
    assert 0 < eng.bytes_sent < len(capture("ngram-after"))  # cut off, not read to its end


def test_http_500_is_http():
    with FakeEngine("status500") as eng, sidecar(eng.url) as car:
        assert_failed_for(car, "http")


def test_html_instead_of_metrics_is_parse():
    with FakeEngine("html") as eng, sidecar(eng.url) as car:
        assert_failed_for(car, "parse")


@pytest.mark.parametrize("mode", ["huge", "huge_with_length"])
def test_fifty_megabyte_page_is_too_large_and_the_read_stops_early(mode: str):
    with FakeEngine(mode) as eng, sidecar(eng.url) as car:
        assert_failed_for(car, "too_large")
        limit = car.settings.max_page_bytes
        wait_for(lambda: eng.metrics_requests == 1, "the one request")
    assert eng.bytes_sent < FIFTY_MB  # the engine was cut off, the page was not read to its end
    if mode == "huge_with_length":
        assert eng.bytes_sent < limit  # refused from the Content-Length header


def test_scraper_too_large_message_names_the_limit():
    with FakeEngine("huge") as eng, pytest.raises(ScrapeError) as e:
        Scraper(eng.url, timeout=5.0, max_bytes=1_000_000).scrape()
    assert e.value.reason == "too_large" and "1000000" in str(e.value)


def test_recovers_when_the_engine_comes_back():
    with FakeEngine("status500") as eng, sidecar(eng.url) as car:
        assert_failed_for(car, "http")
        eng.mode, eng.pages = "pages", [capture("ngram-after")]
        car.scrape_once()
        got = samples(car)
        assert value(got, "specgate_engine_up") == 1.0
        assert value(got, "specgate_engine_scrape_errors_total", reason="http") == 1.0  # counted, not reset
        assert value(got, "specgate_spec_drafts_total", model="tiny", rank="0") == 522


def test_while_the_engine_is_down_its_state_is_absent_not_stale():
    # Up on the ngram run (4 running at "during"), then HTTP 500: the last page's pool, usage, queue and
    # the windows ending at that page are no longer current; the exporter's own counters stay.
    pages = [capture("ngram-before"), capture("ngram-during")]
    with FakeEngine("pages", pages) as eng, sidecar(eng.url, windows=[0.001]) as car:
        wait_for(lambda: value(samples(car), "specgate_engine_up") == 1.0, "first scrape")
        time.sleep(0.01)
        car.scrape_once()
        lab = {"model": "tiny", "rank": "0"}
        up = samples(car)
        assert value(up, "specgate_kv_pool_tokens", pool="target", **lab) == 8192
        assert value(up, "specgate_requests_running", **lab) == 4
        assert value(up, "specgate_spec_acceptance_length", window="0.001s", **lab) is not None
        eng.mode = "status500"
        car.scrape_once()
        down = samples(car)
    assert value(down, "specgate_engine_up") == 0.0
    gone = ("specgate_kv_pool_tokens", "specgate_kv_usage_ratio", "specgate_requests_running",
            "specgate_requests_waiting", "specgate_spec_acceptance_length", "specgate_spec_acceptance_rate",
            "specgate_decode_tokens_per_second", "specgate_ttft_seconds")
    assert not [n for n, _ in down if n in gone]
    assert value(down, "specgate_spec_drafts_total", **lab) == value(up, "specgate_spec_drafts_total", **lab) == 126
    assert value(down, "specgate_engine_restarts_total", **lab) == 0


# --- odd but valid pages ---------------------------------------------------------------------------

def test_nan_and_inf_values_never_reach_the_exposition():
    after = (capture("ngram-after")
             .replace('vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 1170.0',
                      'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} NaN')
             .replace('vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.0',
                      'vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} +Inf')
             .replace('vllm:num_requests_running{engine="0",model_name="tiny"} 0.0',
                      'vllm:num_requests_running{engine="0",model_name="tiny"} -Inf'))
    assert after.count("NaN") == 1 and after.count("Inf}") == 0 and "} +Inf" in after and "} -Inf" in after
    with FakeEngine("pages", [capture("ngram-before"), after]) as eng, sidecar(eng.url, windows=[0.001]) as car:
        wait_for(lambda: value(samples(car), "specgate_engine_up") == 1.0, "first scrape")
        time.sleep(0.01)
        car.scrape_once()
        got = samples(car)
    assert value(got, "specgate_engine_up") == 1.0
    assert_all_finite(got)
    lab = {"model": "tiny", "rank": "0"}
    assert value(got, "specgate_kv_usage_ratio", **lab) is None  # +Inf: absent, not a number
    assert value(got, "specgate_requests_running", **lab) is None
    assert value(got, "specgate_spec_acceptance_length", **lab) is None  # accepted unknown: no L
    assert value(got, "specgate_spec_acceptance_rate", **lab) is None
    assert value(got, "specgate_spec_drafts_total", **lab) == 522  # from the page
    assert value(got, "specgate_spec_accepted_tokens_total", **lab) == 0  # ngram-before's value, kept


def test_duplicate_series_take_one_value_from_the_page():
    # the same series again with its labels in another order: the first one is taken, never the sum
    again = 'vllm:spec_decode_num_drafts_total{model_name="tiny",engine="0"} 523.0\n'
    dup = capture("ngram-after").replace(DRAFTS_LINE, DRAFTS_LINE + again)
    with FakeEngine("pages", [dup]) as eng, sidecar(eng.url) as car:
        wait_for(lambda: value(samples(car), "specgate_engine_up") == 1.0, "first scrape")
        got = samples(car)
    assert value(got, "specgate_spec_drafts_total", model="tiny", rank="0") == 522  # the first one, never 1045
    assert_all_finite(got)


def test_page_cut_mid_line_uses_the_complete_lines():
    full = capture("ngram-after")
    cut = full[: full.index('kv_cache_size_tokens="8192"') + len('kv_cache_size_tokens="81')]  # inside a label set
    with FakeEngine("pages", [cut]) as eng, sidecar(eng.url) as car:
        wait_for(lambda: value(samples(car), "specgate_engine_up") == 1.0, "first scrape")
        got = samples(car)
    assert value(got, "specgate_kv_pool_tokens", model="tiny", rank="0", pool="target") is None  # not 81
    assert value(got, "specgate_spec_drafts_total", model="tiny", rank="0") == 522  # complete lines are used
    assert_all_finite(got)


def test_counter_reset_mid_window_is_one_reset_window_from_the_later_page():
    # ngram-after -> draftself-after: drafts 522 -> 460 while accepted 1170 -> 1380 (DESIGN.md "Restarts")
    # the self-draft capture's start time is 40 s before the ngram run's (recorded first); a restart's moves
    # forward, so it is set after it here (a start time moving back is another engine: test_hardening_restarts)
    start = float(re.search(r"^process_start_time_seconds (\S+)$", capture("ngram-after"), re.M).group(1))
    later = re.sub(r"^process_start_time_seconds \S+$", f"process_start_time_seconds {start + 60.0!r}",
                   capture("draftself-after"), flags=re.M)
    pages = [capture("ngram-before"), capture("ngram-after"), later]
    with FakeEngine("pages", pages) as eng, sidecar(eng.url, windows=[0.001]) as car:
        wait_for(lambda: value(samples(car), "specgate_engine_up") == 1.0, "first scrape")
        lab = {"model": "tiny", "rank": "0", "window": "0.001s"}
        time.sleep(0.01)
        car.scrape_once()
        assert value(samples(car), "specgate_spec_acceptance_length", **lab) == pytest.approx(1 + 1170 / 522)
        time.sleep(0.01)
        car.scrape_once()
        got = samples(car)
    assert value(got, "specgate_spec_acceptance_length", **lab) == pytest.approx(1 + 1380 / 460)  # 4.00, not 1.46
    assert value(got, "specgate_spec_acceptance_rate", **lab) == pytest.approx(1380 / 1380)
    stream = {"model": "tiny", "rank": "0"}
    assert value(got, "specgate_engine_restarts_total", **stream) == 1
    assert value(got, "specgate_spec_drafts_total", **stream) == 522 + 460  # monotonic across the restart
    assert value(got, "specgate_spec_accepted_tokens_total", **stream) == 1170 + 1380
    assert all(v >= 0 for v in got.values())


# --- the CLI on a file that is not Prometheus text ---------------------------------------------------

def test_once_from_an_html_file_is_one_line_on_stderr_and_exit_3(tmp_path):
    page = tmp_path / "metrics.html"
    page.write_text("<!DOCTYPE html>\n<html><body>Sign in</body></html>\n")
    exe = Path(sys.executable).parent / "specgate"
    r = subprocess.run([str(exe), "exporter", "once", "--from-file", str(page), "--format", "json"],
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 3
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "not Prometheus text exposition" in lines[0] and "Traceback" not in r.stderr
