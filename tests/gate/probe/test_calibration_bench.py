"""bench/probe_vs_reference.py's own arithmetic (issue 23 item 1): the engine's clock read from a real vLLM 0.32
page, the occupancy sampler against that page served on loopback, and the engine-corrected ratios.

The page is a real capture (tests/fixtures/vllm/metrics-draftself-during.txt: one draft-model engine with four
requests running); the served copies change only the running gauge's value."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _load_bench() -> object:
    """The bench script by its path (bench/ is no package, and its exporter.py would shadow ours on sys.path); the
    paths it adds for its own imports are taken back after."""
    saved = list(sys.path)
    try:
        name = "specgate_bench_probe_vs_reference"
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "probe_vs_reference.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = saved


pvr: Any = _load_bench()

PAGE = (ROOT / "tests" / "fixtures" / "vllm" / "metrics-draftself-during.txt").read_text()
RUNNING_LINE = 'vllm:num_requests_running{engine="0",model_name="tiny"} 4.0'


class _Engine:
    """The captured page on 127.0.0.1, its running gauge set by the test."""

    def __init__(self) -> None:
        self.running = 4.0
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                body = PAGE.replace(RUNNING_LINE, RUNNING_LINE.replace(" 4.0", f" {engine.running}")).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def engine() -> Iterator[_Engine]:
    e = _Engine()
    yield e
    e.stop()


def test_the_capture_holds_the_gauge_the_sampler_reads() -> None:
    assert RUNNING_LINE in PAGE.splitlines()
    assert pvr.RUNNING == RUNNING_LINE.split("{")[0]


def test_engine_page_reads_the_captured_counters(engine: _Engine) -> None:
    page = pvr.engine_page(engine.url)
    # the capture's own values (tests/fixtures/vllm/metrics-draftself-during.txt)
    assert page[pvr.GENERATED] == 424.0
    assert page[f"{pvr.E2E}_sum"] == pytest.approx(0.8822472095489502)
    assert page[f"{pvr.TTFT}_sum"] == pytest.approx(0.30606508255004883)


def test_engine_clock_of_a_run() -> None:
    before = {f"{pvr.E2E}_count": 10.0, f"{pvr.E2E}_sum": 3.0, pvr.GENERATED: 640.0,
              f"{pvr.TTFT}_count": 10.0, f"{pvr.TTFT}_sum": 0.1}
    after = {f"{pvr.E2E}_count": 26.0, f"{pvr.E2E}_sum": 7.8, pvr.GENERATED: 1664.0,
             f"{pvr.TTFT}_count": 26.0, f"{pvr.TTFT}_sum": 0.42}
    n, e2e, rate, ttft = pvr.EngineClock(before, after).of(8)
    assert n == 16 and e2e == pytest.approx(4.8 / 16) and ttft == pytest.approx(0.32 / 16)
    assert rate == pytest.approx(8 * 1024 / 4.8)  # C x Δgenerated / Δe2e_sum
    # nothing finished: no rate, no mean
    assert pvr.EngineClock(before, before).of(8)[:3] == (0.0, None, None)


def test_occupancy_samples_the_running_gauge(engine: _Engine) -> None:
    engine.running = 0.0  # idle before the sampler starts: its first sample may come before this thread runs again
    with pvr.Occupancy(engine.url, every=0.01) as occ:
        time.sleep(0.15)
        engine.running = 8.0
        time.sleep(0.3)
        engine.running = 0.0
        time.sleep(0.15)
    mean, samples, nonzero = occ.mean_while_busy()
    assert samples >= 5 and nonzero == 8.0 and mean == pytest.approx(8.0)  # idle before and after: left out
    assert set(occ.samples) <= {0.0, 4.0, 8.0}


def test_occupancy_of_an_idle_engine(engine: _Engine) -> None:
    engine.running = 0.0
    with pvr.Occupancy(engine.url, every=0.01) as occ:
        time.sleep(0.1)
    assert occ.mean_while_busy() == (None, 0, None)
    assert occ.samples and set(occ.samples) == {0.0}


def _run(tool: str, tps: float, engine_tps: float, tpot: float, engine_tpot: float, ttft: float,
         engine_ttft: float) -> Any:
    return pvr.Run(tool, 0, 0, 8, 32, tps, ttft, tpot, 1.0, 0.0, engine_tokens_per_second=engine_tps,
                   engine_tpot_mean=engine_tpot, engine_ttft_mean=engine_ttft)


def test_summary_holds_each_tool_against_the_engine_clock() -> None:
    """The engine ran 20 % faster during the reference's run; both tools read 95 % of its clock: the raw ratio is
    outside the goal, the engine-corrected one is 1."""
    runs = [_run("probe", 950.0, 1000.0, 0.0063, 0.006, 0.030, 0.020),
            _run("vllm-bench", 1140.0, 1200.0, 0.00525, 0.005, 0.027, 0.018)]
    row = pvr.summary(runs)[0]
    assert row["tokens_per_second_ratio"] == pytest.approx(950 / 1140)
    assert not row["tokens_per_second_within_goal"]
    assert row["engine_clock_ratio"] == pytest.approx(1000 / 1200)
    assert row["tokens_per_second_engine_corrected_ratio"] == pytest.approx(1.0)
    assert row["tokens_per_second_engine_corrected_within_goal"]
    assert row["tpot_p50_engine_corrected_ratio"] == pytest.approx((0.0063 / 0.006) / (0.00525 / 0.005))
    assert row["ttft_p50_engine_corrected_ratio"] == pytest.approx(1.5 / 1.5)
    text = pvr.as_text(pvr.summary(runs))
    assert "TPOT/engine" in text and "engine running" in text
