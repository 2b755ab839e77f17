"""SpecgateSpeculationOff on a real Prometheus (the pinned 2.42 from .tools/), its `for:` shortened through the mixin.

Why: the promtool unit tests (deploy/prometheus/tests/speculation_test.yaml) check the rule's arithmetic on
synthetic series; this checks that the rules the mixin renders, loaded by a real Prometheus that scrapes real
HTTP pages, reach firing — with the severity and the description filled in — and that the same Prometheus keeps
an idle engine, an engine without speculation and an engine whose drafts flow silent.

The rules: `rule_groups({"speculationOffWindow": "5s", "speculationOffFor": "5s"})` (tests/observability/sources.py:
the mixin's rules with its `_config` overridden, as data; `render_rules` gives the same as the rendered text,
slower), written as JSON, which Prometheus loads as YAML. The shipped defaults are 5m and 10m; the e2e's k = 0
run shortens them the same way. Scrape and evaluation every second.

The pages: exporter-shaped, written by the exporter's own `ExpositionWriter` from the contract's families
(exporter/names.py: SPEC_DEPTH_MAX with source "positions", REQUESTS_RUNNING, SPEC_DRAFTS, SPEC_DRAFT_TOKENS,
SPEC_DEPTH_SCHEDULED, ENGINE_UP; per-stream labels STREAM_LABELS). The values are chosen, not captured: a
vLLM-like stream at k = 3 with eight requests running that proposes 30 drafts/s for the first 3 s and none
after (the shape of a batch-size schedule going to k = 0 under load, vllm issue #49548).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from exporter import names
from exporter.exposition import ExpositionWriter, FamilyRows
from tests.observability.live_stack import Process, PrometheusAPI, free_port, start, wait_for_alerts
from tests.observability.sources import rule_groups

WINDOW_S = 5
FOR_S = 5
DRAFTING_S = 3.0  # the "off" streams propose drafts for this long, then stop
DRAFTS_PER_S = 30.0
K = 3
RUNNING = 8
# Idle and no-speculation pages would fire after WINDOW_S + FOR_S (their drafts are flat, or absent, from the
# start); the off stream fires DRAFTING_S later. So once it fires, the quiet ones had longer to fire and did not.
FIRING_DEADLINE_S = 60.0
ALERT = "SpecgateSpeculationOff"


def _drafts(elapsed: float, stop: float | None) -> float:
    """Cumulative drafts: DRAFTS_PER_S until `stop` seconds (None: never stops)."""
    return DRAFTS_PER_S * (elapsed if stop is None else min(elapsed, stop))


def page(scenario: str, elapsed: float) -> bytes:
    """One exporter page for `scenario` at `elapsed` seconds since the server started."""
    stream = ("llama", "vllm", "0")  # names.STREAM_LABELS: model, engine, rank
    up = FamilyRows(names.ENGINE_UP)
    up.add_metric(("vllm",), 1.0)
    running = FamilyRows(names.REQUESTS_RUNNING)
    running.add_metric(stream, 0.0 if scenario == "idle" else float(RUNNING))
    fams: list[FamilyRows] = [up, running]
    if scenario != "nospec":
        depth_max = FamilyRows(names.SPEC_DEPTH_MAX)
        depth_max.add_metric((*stream, "positions"), float(K))
        drafts = FamilyRows(names.SPEC_DRAFTS)
        stop = {"off": DRAFTING_S, "scheduled": DRAFTING_S, "idle": 0.0, "flowing": None}[scenario]
        d = 2400.0 + _drafts(elapsed, stop)
        drafts.add_metric(stream, d)
        draft_tokens = FamilyRows(names.SPEC_DRAFT_TOKENS)
        draft_tokens.add_metric(stream, K * d)
        fams += [depth_max, drafts, draft_tokens]
        if scenario == "scheduled":  # the exporter was given the schedule: k = 0 at batch 8
            scheduled = FamilyRows(names.SPEC_DEPTH_SCHEDULED)
            scheduled.add_metric(stream, 0.0 if elapsed >= DRAFTING_S else float(K))
            fams.append(scheduled)
    return ExpositionWriter().write(fams)


SCENARIOS = ("off", "scheduled", "idle", "nospec", "flowing")


class PageServer:
    """Serves `page(<path>, elapsed)` on 127.0.0.1 (GET /off, /scheduled, /idle, /nospec, /flowing)."""

    def __init__(self, render: Callable[[str, float], bytes]) -> None:
        started = time.monotonic()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                scenario = self.path.strip("/")
                if scenario not in SCENARIOS:
                    self.send_error(404)
                    return
                body = render(scenario, time.monotonic() - started)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def prometheus_config(page_port: int, rules: Path) -> str:
    jobs = "".join(
        f"  - job_name: {s}\n    metrics_path: /{s}\n    static_configs:\n      - targets: ['127.0.0.1:{page_port}']\n"
        for s in SCENARIOS)
    return ("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {rules}\nscrape_configs:\n{jobs}")


@dataclass
class Run:
    prom: PrometheusAPI
    started: float
    firing_at: float
    alerts: list[dict]  # /api/v1/alerts when the off stream fired


def _firing(alerts: list[dict], job: str) -> bool:
    return any(a["state"] == "firing" and a["labels"]["job"] == job for a in alerts)


@pytest.fixture(scope="module")
def run(prometheus_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    workdir = tmp_path_factory.mktemp("speculation-live")
    rules = workdir / "rules.yaml"
    rules.write_text(json.dumps(rule_groups({"speculationOffWindow": f"{WINDOW_S}s", "speculationOffFor": f"{FOR_S}s"})))
    server = PageServer(page)
    port = free_port()
    (workdir / "prometheus.yml").write_text(prometheus_config(server.port, rules))
    (workdir / "tsdb").mkdir()
    proc: Process | None = None
    try:
        proc = start("prometheus", [
            str(prometheus_bin), f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn",
        ], workdir)
        prom = PrometheusAPI(f"http://127.0.0.1:{port}")
        started = time.time()
        wait_for_alerts(prom, ALERT, lambda alerts: _firing(alerts, "off"), timeout_s=FIRING_DEADLINE_S,
                        processes=[proc], started=started, what="for job off")
        firing_at = time.time()
        # the scheduled stream stopped at the same moment: give it the evaluation or two it may lag by
        alerts = wait_for_alerts(prom, ALERT, lambda alerts: _firing(alerts, "scheduled"), timeout_s=5,
                                 processes=[proc], started=firing_at, fail=False)
        yield Run(prom, started, firing_at, alerts)
    finally:
        if proc is not None:
            proc.stop()
        server.stop()


def test_speculation_off_fires_critical_with_the_numbers(run: Run) -> None:
    off = [a for a in run.alerts if a["labels"]["job"] == "off"]
    assert len(off) == 1, off
    a = off[0]
    assert a["state"] == "firing" and a["labels"]["severity"] == "critical"
    assert {k: a["labels"][k] for k in ("model", "engine", "rank")} == {"model": "llama", "engine": "vllm", "rank": "0"}
    assert "source" not in a["labels"]
    # the description's numbers: k from $value, running requests from its query, the shortened window and for
    d = a["annotations"]["description"]
    assert f"up to k = {K} tokens and has {RUNNING} requests running" in d, d
    assert f"over the last {WINDOW_S} seconds (0 drafts/s), for {FOR_S} seconds" in d, d
    # not before the drafts stopped plus the window and the for (minus a scrape and an evaluation of slack)
    print(f"\nSpecgateSpeculationOff firing {run.firing_at - run.started:.1f}s after Prometheus started "
          f"(drafts stop at {DRAFTING_S:.0f}s, window {WINDOW_S}s, for {FOR_S}s)")
    assert run.firing_at - run.started >= DRAFTING_S + FOR_S


def test_declared_schedule_at_k0_fires_warning_only(run: Run) -> None:
    scheduled = [a for a in run.alerts if a["labels"]["job"] == "scheduled"]
    assert [(a["state"], a["labels"]["severity"]) for a in scheduled] == [("firing", "warning")], scheduled
    assert "The declared schedule (specgate_spec_depth_scheduled) sets k = 0" in scheduled[0]["annotations"]["description"]


@pytest.mark.parametrize("job", ["idle", "nospec", "flowing"])
def test_silent_on_idle_no_speculation_and_flowing_drafts(run: Run, job: str) -> None:
    """Never pending, never firing, over the whole run (they had longer than the off stream to fire)."""
    history = run.prom.query_range(f'ALERTS{{alertname=~"SpecgateSpeculation.*", job="{job}"}}',
                                   run.started, time.time(), step=1.0)
    assert history == [], history
    assert not [a for a in run.alerts if a["labels"]["job"] == job]
    # and the pages were scraped: the silence is not a missing target
    assert run.prom.query(f'up{{job="{job}"}} == 1'), job
