"""Faults on a real engine: killed mid-window, restarted (counters reset), answering slowly.

One `draftself` server (L is exactly 4.00 in every window, so a wrong reset handling shows
as a different number). The steps build on each other in order — kill, then restart, then
slow — through module-scoped fixtures; every process is stopped by PID by the arm fixture.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from harness import SPECGATE, EngineCounters, log, sample_value, start_arm, start_exporter
from vllm_live import BATCH_WINDOW_SECONDS, LiveArm, Samples, arm_fixture, engine_up
from vllm_plans import plan_dict, write_plan

live = arm_fixture("draftself")

MAX_PROXY_DELAY_SECONDS = 5.0  # the slow proxy never holds a request longer than this


@dataclass
class GateRun:
    code: int
    doc: dict | None
    stderr: str


def _gate_against_engine(live: LiveArm, plan: Path, kill_when_waiting: bool) -> GateRun:
    """`specgate check --phase post --metrics <engine>` (it scrapes, waits one SLO window, scrapes again),
    with traffic sent once it waits; optionally the engine is SIGKILLed while it waits."""
    cmd = [str(SPECGATE), "check", "--plan", str(plan), "--phase", "post", "--metrics", live.engine.url + "/metrics",
           "--format", "json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    err_lines: list[str] = []
    waiting = threading.Event()

    def read_err() -> None:
        for line in proc.stderr:
            err_lines.append(line)
            if "waiting" in line:
                waiting.set()

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    traffic_errors: list[BaseException] = []

    def traffic() -> None:
        try:
            live.engine.send_traffic(8, 256, concurrency=4)
        except (requests.RequestException, OSError) as e:  # expected when the engine is killed under it
            traffic_errors.append(e)

    sender = threading.Thread(target=traffic, daemon=True)
    try:
        assert waiting.wait(60), f"the gate never started waiting for its window: {''.join(err_lines)}"
        sender.start()
        if kill_when_waiting:
            time.sleep(1.0)  # requests in flight: the kill lands inside the gate's window and a scrape window
            log(f"faults: SIGKILL engine pid {live.engine.pid} while the gate waits")
            live.engine.kill_hard()
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        sender.join(timeout=300) if sender.is_alive() else None
    reader.join(timeout=5)
    return GateRun(proc.returncode, json.loads(out) if out.strip() else None, "".join(err_lines))


@dataclass
class Killed:
    control: GateRun  # the same check with the engine alive
    killed: GateRun  # the engine SIGKILLed while the check waited
    down_page: Samples  # the exporter's page once it saw the engine down
    healthz: int


@pytest.fixture(scope="module")
def killed(live: LiveArm, tiny_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Killed:
    plan = write_plan(tmp_path_factory.mktemp("faults") / "plan-engine.yaml",
                      plan_dict("draftself", tiny_models, window_seconds=BATCH_WINDOW_SECONDS))
    control = _gate_against_engine(live, plan, kill_when_waiting=False)
    run = _gate_against_engine(live, plan, kill_when_waiting=True)
    down = live.exporter.wait_for(lambda s: s if not engine_up(s) else None, 20, "specgate_engine_up 0")
    healthz = requests.get(live.exporter.url + "/healthz", timeout=5).status_code
    return Killed(control=control, killed=run, down_page=down, healthz=healthz)


def test_gate_on_live_engine_passes_acceptance(killed: Killed):
    """Control for the next test: the same check with the engine alive judges a real window."""
    doc = killed.control.doc
    assert doc is not None, killed.control.stderr
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "pass", acc
    assert "4.000" in acc["reason"]


def test_gate_inconclusive_when_engine_stops_mid_check(killed: Killed, e2e_record: dict):
    doc = killed.killed.doc
    assert doc is not None, killed.killed.stderr
    assert killed.killed.code == 2
    assert doc["decision"] == "inconclusive"
    assert doc["checks"]["acceptance"]["status"] == "inconclusive"
    assert doc["checks"]["acceptance"]["values"]["evidence_errors"], doc["checks"]["acceptance"]
    e2e_record.setdefault("faults", {})["gate_engine_killed_mid_check"] = doc["decision"]


def test_exporter_keeps_serving_and_marks_engine_down(killed: Killed):
    page = killed.down_page
    assert killed.healthz == 200
    assert sample_value(page, "specgate_engine_up") == 0.0
    assert sample_value(page, "specgate_engine_scrape_errors_total", reason="connect") >= 1
    # what was known stays known (counters do not vanish or drop while the engine is away)
    assert sample_value(page, "specgate_spec_drafts_total") > 0


@dataclass
class Restarted:
    frozen_drafts: float
    frozen_accepted: float
    engine_after: EngineCounters
    page: Samples
    windows: dict
    restart_time: float


@pytest.fixture(scope="module")
def restarted(live: LiveArm, killed: Killed, vllm_python: Path, tiny_models: Path, e2e_logs: Path) -> Restarted:
    frozen_drafts = sample_value(killed.down_page, "specgate_spec_drafts_total")
    frozen_accepted = sample_value(killed.down_page, "specgate_spec_accepted_tokens_total")
    restart_time = time.time()
    new = start_arm("draftself", tiny_models, port=live.engine.port, python=vllm_python, log_dir=e2e_logs)
    live.engine = new  # the arm fixture's finalizer now stops the new server
    new.wait_ready(300)
    exp = live.exporter
    exp.wait_for(lambda s: engine_up(s) and (sample_value(s, "specgate_engine_restarts_total") or 0) >= 1, 30,
                 "the restart detected")
    new.send_traffic(8, 64, concurrency=4)
    t1 = time.time()
    after = new.counters()

    def closed(_: Samples) -> dict | None:
        doc = requests.get(f"{exp.url}/api/v1/windows", timeout=5).json()
        return doc if any(w["end"] >= t1 + 1.0 for w in doc["windows"]) else None

    windows = exp.wait_for(closed, 3 * BATCH_WINDOW_SECONDS + 5, "a batch window after the restart")
    exp.wait_for(lambda s: sample_value(s, "specgate_spec_drafts_total") == frozen_drafts + after.drafts, 10,
                 "totals caught up")
    return Restarted(frozen_drafts, frozen_accepted, after, exp.samples(), windows, restart_time)


def test_restart_counted_and_window_marked_reset(restarted: Restarted):
    assert sample_value(restarted.page, "specgate_engine_restarts_total") == 1
    wins = restarted.windows["windows"]
    reset = [w for w in wins if w["reset"]]
    assert len(reset) >= 1
    # the window spanning the restart starts before it and ends after it
    assert any(w["start"] < restarted.restart_time < w["end"] for w in reset), reset
    # taken from the later snapshot alone, the reset window is still the engine's true 4.00, never 1.46 or negative
    assert all(w["acceptance_length"] in (None, 4.0) for w in wins), wins


def test_totals_monotonic_across_restart(restarted: Restarted):
    """Exporter total = what it had seen before the kill + the new engine's counters from zero."""
    page = restarted.page
    assert sample_value(page, "specgate_spec_drafts_total") == restarted.frozen_drafts + restarted.engine_after.drafts
    assert sample_value(page, "specgate_spec_accepted_tokens_total") == \
        restarted.frozen_accepted + restarted.engine_after.accepted


def test_no_negative_values_anywhere(restarted: Restarted):
    negative = [(name, lab, v) for name, series in restarted.page.items() for lab, v in series if v < 0]
    assert negative == []


def test_gate_never_uses_the_reset_window(live: LiveArm, restarted: Restarted, tiny_models: Path, tmp_path: Path):
    plan = write_plan(tmp_path / "plan.yaml", plan_dict("draftself", tiny_models, window_seconds=BATCH_WINDOW_SECONDS))
    p = subprocess.run([str(SPECGATE), "check", "--plan", str(plan), "--phase", "post", "--metrics",
                        live.exporter.url + "/metrics", "--format", "json"], capture_output=True, text=True, timeout=60)
    doc = json.loads(p.stdout)
    acc = doc["checks"]["acceptance"]
    n_reset = sum(1 for w in restarted.windows["windows"] if w["reset"])
    assert acc["values"]["windows_excluded"]["reset"] >= n_reset >= 1
    judged = sum(s["windows"] for s in acc["values"]["streams"])
    assert all(length == 4.0 for s in acc["values"]["streams"] for length in s["lengths"])
    assert judged >= 1
    assert acc["status"] == "pass"


class _DelayProxy:
    """A loopback proxy that answers GETs from the engine after a bounded delay."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.delay = 0.0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                time.sleep(min(proxy.delay, MAX_PROXY_DELAY_SECONDS))
                try:
                    r = requests.get(proxy.upstream + self.path, timeout=10,
                                     headers={"Accept": self.headers.get("Accept", "*/*")})
                    body = r.content
                    self.send_response(r.status_code)
                    self.send_header("Content-Type", r.headers.get("Content-Type", "text/plain"))
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (requests.RequestException, OSError):
                    pass  # the scraper gave up (timeout) and closed the socket: nothing to answer

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@dataclass
class Slow:
    ok_page: Samples
    slow_page: Samples
    slow_metrics_status: int
    recovered_page: Samples


@pytest.fixture(scope="module")
def slow(live: LiveArm, restarted: Restarted, e2e_logs: Path) -> Slow:
    proxy = _DelayProxy(live.engine.url)
    exp = None
    try:
        exp = start_exporter(proxy.url, e2e_logs, scrape_interval=1, batch_window=BATCH_WINDOW_SECONDS,
                             extra_args=("--scrape-timeout", "1", "--windows", "30s"))
        ok = exp.wait_for(lambda s: s if engine_up(s) else None, 20, "engine up through the proxy")
        proxy.delay = 3.0  # > the 1 s scrape timeout
        slow_page = exp.wait_for(
            lambda s: s if not engine_up(s) and (sample_value(s, "specgate_engine_scrape_errors_total",
                                                              reason="timeout") or 0) >= 1 else None,
            20, "a timed-out scrape")
        status = requests.get(exp.url + "/metrics", timeout=5).status_code
        proxy.delay = 0.2
        recovered = exp.wait_for(lambda s: s if engine_up(s) else None, 20, "engine up again")
        return Slow(ok, slow_page, status, recovered)
    finally:
        if exp is not None:
            exp.stop()
        proxy.close()


def test_slow_engine_marked_down_by_timeout_while_exporter_serves(slow: Slow):
    assert slow.slow_metrics_status == 200
    assert sample_value(slow.slow_page, "specgate_engine_up") == 0.0
    assert sample_value(slow.slow_page, "specgate_engine_scrape_errors_total", reason="timeout") >= 1
    assert sample_value(slow.ok_page, "specgate_engine_scrape_errors_total", reason="timeout") == 0


def test_engine_answering_in_time_again_is_up_with_the_same_pool(slow: Slow, restarted: Restarted):
    pool = restarted.engine_after.pool_tokens
    assert pool == 32 * 128
    assert sample_value(slow.recovered_page, "specgate_engine_up") == 1.0
    assert sample_value(slow.recovered_page, "specgate_kv_pool_tokens", pool="target") == pool
