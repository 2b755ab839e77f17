"""`specgate probe ab --energy-source dcgm:URL` end to end (issue 38): both arms against stand-in engines
(tests/gate/probe/probe_replay.py's ReplayEngine, replaying recorded vLLM streams) and a fake dcgm-exporter.

The fake is a tiny HTTP server serving fixtures/dcgm-*.prom — pages shaped like dcgm-exporter's documented
/metrics (the fixtures cite their sources) — whose energy counter of GPU 0 rises by a fixed 5 J on every scrape.
A cell is read once before its first request and once after its last (gate.probe.energy.EnergyMeter), so each
cell must record exactly 5 J, its source with the unit, the method and scope, and the idle baseline measured
before the run (5 J over at least --idle-seconds).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gate.cli import main
from tests.gate.probe.probe_replay import ReplayEngine

FIXTURES = Path(__file__).parent / "fixtures"
STEP_J = 5.0
IDLE_SECONDS = 0.2


class FakeDcgm:
    """A dcgm-exporter stand-in: the fixture page, GPU 0's energy counter advanced by STEP_J per scrape."""

    def __init__(self, fixture: str, series: str, unit_per_joule: float) -> None:
        self.text = (FIXTURES / fixture).read_text(encoding="utf-8")
        self.series, self.scale, self.scrapes = series, unit_per_joule, 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                with fake.lock:
                    fake.scrapes += 1
                    body = fake.page(fake.scrapes).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def page(self, n: int) -> str:
        value = (1_000_000.0 + STEP_J * n) * self.scale
        return re.sub(rf'^({self.series}\{{gpu="0",[^}}]*\}}) \S+$', lambda m: f"{m.group(1)} {value:.1f}",
                      self.text, flags=re.M)

    def __enter__(self) -> FakeDcgm:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(params=[("dcgm-4.8-energy-mj.prom", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1000.0, "mJ"),
                        ("dcgm-4.9-energy-j.prom", "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", 1.0, "J")],
                ids=["4.8-mJ", "4.9-J"])
def dcgm(request: pytest.FixtureRequest) -> Iterator[tuple[FakeDcgm, str]]:
    fixture, series, scale, unit = request.param
    with FakeDcgm(fixture, series, scale) as fake:
        yield fake, f"dcgm:{series} ({unit})"


def test_probe_ab_records_energy_per_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          dcgm: tuple[FakeDcgm, str]) -> None:
    fake, source = dcgm
    assert fake.page(1) != fake.text  # the counter line was found and rewritten
    base_out, spec_out = tmp_path / "base.json", tmp_path / "spec.json"
    with ReplayEngine("nospec") as base, ReplayEngine("ngram") as spec:
        rc = main(["probe", "ab", "--baseline-url", base.url, "--speculative-url", spec.url,
                   "--speculative-config", '{"method":"ngram","num_speculative_tokens":3}',
                   "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1", "--repetitions", "2",
                   "--requests", "1", "--warmup", "0", "--no-client-ceiling", "--no-progress",
                   "--energy-source", f"dcgm:{fake.url}", "--energy-gpus", "0",
                   "--idle-seconds", str(IDLE_SECONDS),
                   "--out-baseline", str(base_out), "--out-speculative", str(spec_out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    cells = [c for out in (base_out, spec_out) for c in json.loads(out.read_text())["cells"]]
    assert len(cells) == 4
    for c in cells:
        e = c["energy"]
        assert e["joules"] == pytest.approx(STEP_J), e
        assert (e["source"], e["method"], e["scope"], e["gpus"]) == (source, "energy counter", "board", ["0"])
        assert 0 < e["idle_watts"] <= STEP_J / IDLE_SECONDS  # 5 J over at least the idle interval
    # every cell read twice, the idle baseline at least twice: nothing read the page unaccounted for
    assert fake.scrapes >= 2 * len(cells) + 2
