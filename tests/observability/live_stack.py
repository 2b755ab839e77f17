"""A real Prometheus scraping the real specgate exporter, which scrapes the replay engine.

Used by test_prometheus_live.py's session fixture. Every process listens on 127.0.0.1 on a free port,
keeps its data in a temp dir, and is stopped by its own PID.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.observability.sources import REPO, RULES, accelerate

VENV_BIN = REPO / ".venv" / "bin"
CAPTURES = REPO / "tests" / "fixtures" / "vllm"
REPLAY_MODELS = REPO / "exporter" / "replay_data" / "models.json"
# The scenario, in play order: the ngram arm (L 3.24 over the run, above the 2.0 target), then the arm
# with a random separate draft model (L 1.0: nothing accepted), both real vLLM-CPU captures.
SCENARIO = (
    "metrics-ngram-before.txt", "metrics-ngram-during.txt", "metrics-ngram-after.txt",
    "metrics-draft-before.txt", "metrics-draft-during.txt", "metrics-draft-after.txt",
)
ACCEPTANCE_SLO_TARGET = 2.0
# 8 MiB KV cache / 1,024 B per token (2 layers x 2 KV heads x 32 x fp32 x K,V) = 8,192 tokens (DESIGN.md).
CONFIGURED_POOL_TOKENS = 8192
# Between the ngram arm's allocated pool (8,192) and the draft arm's (51 blocks x 128 = 6,528 tokens).
WORKLOAD_DEMAND_TOKENS = 7000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Process:
    name: str
    proc: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def tail(self, n: int = 30) -> str:
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return f"--- {self.name} log ---\n" + "\n".join(lines[-n:])


def start(name: str, cmd: list[str], workdir: Path) -> Process:
    log = workdir / f"{name}.log"
    fh = log.open("w")
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=workdir)
    fh.close()
    return Process(name, proc, log)


def build_scenario(directory: Path) -> Path:
    """Numbered copies so that name order is play order; models.json gives /v1/models (context cap)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(SCENARIO, start=1):
        shutil.copyfile(CAPTURES / name, directory / f"{i:02d}-{name}")
    shutil.copyfile(REPLAY_MODELS, directory / "models.json")
    return directory


@dataclass
class PrometheusAPI:
    url: str

    def get(self, path: str, **params: object) -> dict:
        q = urllib.parse.urlencode({k: str(v) for k, v in params.items()})
        with urllib.request.urlopen(f"{self.url}{path}?{q}" if q else f"{self.url}{path}", timeout=10) as r:
            body = json.loads(r.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        params: dict[str, object] = {"query": expr}
        if at is not None:
            params["time"] = at
        return self.get("/api/v1/query", **params)["result"]

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict]:
        return self.get("/api/v1/query_range", query=expr, start=start, end=end, step=step)["result"]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False


def named_alerts(prom: PrometheusAPI, alertname: str) -> list[dict]:
    """Prometheus' /api/v1/alerts for one alert name (pending and firing)."""
    return [a for a in prom.get("/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == alertname]


def wait_for_alerts(prom: PrometheusAPI, alertname: str, until: Callable[[list[dict]], bool], *, timeout_s: float,
                    processes: Sequence[Process] = (), started: float | None = None, what: str = "",
                    fail: bool = True, poll_s: float = 0.5) -> list[dict]:
    """`alertname`'s alerts once `until(alerts)` holds, polled every `poll_s` s for at most `timeout_s` s after
    `started` (default: now). Why bounded and in one place: a rule that never fires must fail its test with what
    Prometheus showed and the processes' logs, never hang it. A process that exits fails at once; past the
    deadline it fails (`fail`) or answers the last alerts seen (a grace wait: the test then judges them)."""
    start_at = time.time() if started is None else started
    seen: list[dict] | str = "not ready"
    while True:
        for p in processes:
            if p.proc.poll() is not None:
                pytest.fail(f"{p.name} exited early\n" + "\n".join(q.tail() for q in processes))
        if prom.ready():
            seen = alerts = named_alerts(prom, alertname)
            if until(alerts):
                return alerts
        if time.time() - start_at > timeout_s:
            if not fail and isinstance(seen, list):
                return seen
            pytest.fail(f"{alertname} did not fire{' ' + what if what else ''} within {timeout_s:.0f}s; Prometheus' "
                        f"alerts: {seen}\n" + "\n".join(p.tail() for p in processes))
        time.sleep(poll_s)


class WebhookReceiver:
    """Alertmanager's webhook receiver on 127.0.0.1: keeps every notification (JSON) it is sent."""

    def __init__(self) -> None:
        self.notifications: list[dict] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.notifications.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def received(self) -> list[dict]:
        with self._lock:
            return list(self.notifications)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def alertmanager_config(webhook_url: str) -> str:
    """One route to the webhook; short group timings so a notification lands within the test."""
    return (
        "route:\n"
        "  receiver: webhook\n"
        "  group_by: [alertname, model]\n"
        "  group_wait: 1s\n"
        "  group_interval: 2s\n"
        "  repeat_interval: 1h\n"
        "receivers:\n"
        "  - name: webhook\n"
        "    webhook_configs:\n"
        f"      - url: {webhook_url}\n"
        "        send_resolved: true\n"
    )


@dataclass
class LiveStack:
    """What the live tests read after the scenario has played."""

    prom: PrometheusAPI
    step_seconds: float
    replay_started: float  # wall clock when the replay engine was started (its scenario clock)
    scenario_end: float
    processes: list[Process] = field(default_factory=list)
    finished: float = 0.0  # set by the fixture once the scenario has played
    alertmanager_url: str | None = None  # the real Alertmanager Prometheus sends its alerts to
    webhook: WebhookReceiver | None = None  # Alertmanager's receiver

    @property
    def drop_at(self) -> float:
        """When the replay starts approaching the draft arm's first real traffic (capture 4 -> 5)."""
        return self.replay_started + 3 * self.step_seconds

    def logs(self) -> str:
        return "\n".join(p.tail() for p in self.processes)


def prometheus_config(exporter_port: int, rules_file: Path, alertmanager_port: int | None = None) -> str:
    alerting = (
        "alerting:\n"
        "  alertmanagers:\n"
        "    - static_configs:\n"
        f"        - targets: ['127.0.0.1:{alertmanager_port}']\n"
    ) if alertmanager_port else ""
    return alerting + (
        "global:\n"
        "  scrape_interval: 1s\n"
        "  scrape_timeout: 1s\n"
        "  evaluation_interval: 1s\n"
        "rule_files:\n"
        f"  - {rules_file}\n"
        "scrape_configs:\n"
        "  - job_name: specgate\n"
        "    static_configs:\n"
        f"      - targets: ['127.0.0.1:{exporter_port}']\n"
    )


def start_stack(workdir: Path, prometheus_bin: Path, step_seconds: float,
                alertmanager_bin: Path | None = None) -> LiveStack:
    """Alertmanager and its webhook receiver (when given), Prometheus (it must see the good phase), then the
    exporter, then the replay engine."""
    processes: list[Process] = []
    webhook: WebhookReceiver | None = None
    am_port: int | None = None
    try:
        if alertmanager_bin is not None:
            webhook = WebhookReceiver()
            am_port = free_port()
            (workdir / "alertmanager.yml").write_text(alertmanager_config(webhook.url))
            processes.append(start("alertmanager", [
                str(alertmanager_bin), f"--config.file={workdir / 'alertmanager.yml'}",
                f"--storage.path={workdir / 'alertmanager-data'}", f"--web.listen-address=127.0.0.1:{am_port}",
                "--cluster.listen-address=", "--log.level=warn",
            ], workdir))
            deadline = time.time() + 20
            while not _ready(f"http://127.0.0.1:{am_port}/-/ready"):
                if processes[-1].proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("alertmanager did not become ready\n" + processes[-1].tail())
                time.sleep(0.2)
        rules = workdir / "specgate-rules-accelerated.yaml"
        rules.write_text(accelerate(RULES.read_text()))
        scenario = build_scenario(workdir / "scenario")
        engine_port, exporter_port, prom_port = free_port(), free_port(), free_port()
        config = workdir / "prometheus.yml"
        config.write_text(prometheus_config(exporter_port, rules, am_port))
        tsdb = workdir / "tsdb"
        tsdb.mkdir()
        processes.append(start("prometheus", [
            str(prometheus_bin), f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
            f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn",
            # Alerts reach Alertmanager within seconds (default resend delay: 1m).
            "--rules.alert.resend-delay=2s",
        ], workdir))
        prom_proc = processes[-1]
        prom = PrometheusAPI(f"http://127.0.0.1:{prom_port}")
        deadline = time.time() + 30
        while not prom.ready():
            if prom_proc.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("prometheus did not become ready\n" + prom_proc.tail())
            time.sleep(0.2)
        # The exporter starts before its engine: it sees the cold start (startup staging) and a few
        # connect errors, as a sidecar does in a pod.
        processes.append(start("exporter", [
            str(VENV_BIN / "specgate"), "exporter", "run",
            "--engine-url", f"http://127.0.0.1:{engine_port}", "--listen", f"127.0.0.1:{exporter_port}",
            "--scrape-interval", "0.5", "--batch-window", "2", "--windows", "4s",
            "--acceptance-slo-target", str(ACCEPTANCE_SLO_TARGET), "--min-drafts", "1",
            "--workload-demand-tokens", str(WORKLOAD_DEMAND_TOKENS),
            "--kv-pool-configured-tokens", str(CONFIGURED_POOL_TOKENS),
        ], workdir))
        deadline = time.time() + 20
        while not prom.query('up{job="specgate"} == 1'):
            if processes[-1].proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("prometheus never scraped the exporter\n" + "\n".join(p.tail() for p in processes))
            time.sleep(0.2)
        replay_started = time.time()
        processes.append(start("replay", [
            str(VENV_BIN / "specgate"), "replay", str(scenario), "--port", str(engine_port),
            "--step-seconds", str(step_seconds),
        ], workdir))
        return LiveStack(prom, step_seconds, replay_started,
                         replay_started + (len(SCENARIO) - 1) * step_seconds, processes,
                         alertmanager_url=f"http://127.0.0.1:{am_port}" if am_port else None, webhook=webhook)
    except BaseException:
        for p in reversed(processes):
            p.stop()
        if webhook is not None:
            webhook.stop()
        raise


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False
