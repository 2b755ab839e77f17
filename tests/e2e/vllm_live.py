"""One arm under test: a real vLLM server, the exporter sidecar in front of it, bounded traffic,
and the exporter's page read at a moment when its sliding window is known to hold exactly
that traffic.

Why the timing matters (and how it is made exact rather than approximate): the exporter's
`specgate_spec_acceptance_length{window="30s"}` is the delta between its newest snapshot and
the newest snapshot at least 30 s older. If the page is read after the traffic ended (the
exporter's own totals already equal the engine's final counters) and before `t0 + 30 s`
(so the window's start snapshot was taken before the first request), the gauge is
1 + Δaccepted / Δdrafts over exactly the traffic, which the test reads from the engine's own
/metrics before and after. The exporter is started before the engine so that it sees the
engine's start (`specgate_engine_ready_seconds`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from harness import (
    EngineCounters,
    EngineProcess,
    ExporterProcess,
    free_port,
    log,
    sample_value,
    start_arm,
    start_exporter,
)

SLIDING_WINDOW_SECONDS = 30
WINDOW_LABEL = "30s"
BATCH_WINDOW_SECONDS = 5
SCRAPE_INTERVAL_SECONDS = 1
SLO_TARGET = 2.0
PRE_TRAFFIC_IDLE_SECONDS = 8.0  # the window's start snapshot must be older than the first request
TRAFFIC_REQUESTS = 8
TRAFFIC_MAX_TOKENS = 64
TRAFFIC_CONCURRENCY = 4

Samples = dict[str, list[tuple[dict[str, str], float]]]


@dataclass
class Traffic:
    """Bounded traffic and the engine's own counters around it (read while the engine was idle)."""

    before: EngineCounters
    after: EngineCounters
    t0: float  # time.time() just before the first request
    t1: float  # time.time() just after the last answer
    completion_tokens: int
    responses: list[dict[str, Any]] = field(default_factory=list)  # every completion body, in request order


@dataclass
class LiveArm:
    """An arm's engine + exporter, and what the test read from them."""

    arm: str
    engine: EngineProcess
    exporter: ExporterProcess
    traffic: Traffic | None = None
    reading: Samples = field(default_factory=dict)  # the exporter's page inside the exact window
    read_at: float | None = None
    windows_doc: dict[str, Any] = field(default_factory=dict)  # /api/v1/windows after the traffic
    final: Samples = field(default_factory=dict)  # the exporter's page after the last batch window closed

    def stop(self) -> None:
        """Stop both processes by PID (exporter last: it must survive the engine)."""
        try:
            self.engine.stop()
        finally:
            self.exporter.stop()


def bring_up(arm: str, model_dir: Path, python: Path, log_dir: Path, ready_timeout: float = 300.0,
             exporter_args: tuple[str, ...] = (), engine_args: tuple[str, ...] = (),
             engine_env: dict[str, str] | None = None) -> LiveArm:
    """Exporter first (it then sees the engine start), then the engine; both stopped on any failure.

    `engine_args` / `engine_env` go to the engine (e.g. per-request metrics; arctic-inference's PYTHONPATH).
    """
    port = free_port()
    exporter = start_exporter(f"http://127.0.0.1:{port}", log_dir, scrape_interval=SCRAPE_INTERVAL_SECONDS,
                              batch_window=BATCH_WINDOW_SECONDS, min_drafts=1,
                              extra_args=("--windows", WINDOW_LABEL, "--acceptance-slo-target", str(SLO_TARGET),
                                          *exporter_args))
    engine: EngineProcess | None = None
    try:
        engine = start_arm(arm, model_dir, port=port, python=python, log_dir=log_dir, extra_args=engine_args,
                           extra_env=engine_env)
        engine.wait_ready(ready_timeout)
    except BaseException:
        if engine is not None:
            engine.stop()
        exporter.stop()
        raise
    return LiveArm(arm=arm, engine=engine, exporter=exporter)


def engine_up(samples: Samples) -> bool:
    return sample_value(samples, "specgate_engine_up") == 1.0


def run_measured_traffic(live: LiveArm, spec: bool) -> None:
    """Send the bounded traffic and take the exporter reading inside the exact window."""
    exp = live.exporter
    exp.wait_for(engine_up, 30, "specgate_engine_up 1")
    up_at = time.time()
    time.sleep(PRE_TRAFFIC_IDLE_SECONDS)
    before = live.engine.counters()
    t0 = time.time()
    responses: list[dict[str, Any]] = []
    tokens = live.engine.send_traffic(TRAFFIC_REQUESTS, TRAFFIC_MAX_TOKENS, concurrency=TRAFFIC_CONCURRENCY,
                                      responses=responses)
    t1 = time.time()
    after = live.engine.counters()
    live.traffic = Traffic(before=before, after=after, t0=t0, t1=t1, completion_tokens=tokens, responses=responses)
    log(f"{live.arm}: {tokens} tokens in {t1 - t0:.1f} s; engine drafts {before.drafts} -> {after.drafts}")

    deadline = t0 + SLIDING_WINDOW_SECONDS - 0.5
    earliest = max(t1 + 2 * SCRAPE_INTERVAL_SECONDS + 0.5, up_at + SLIDING_WINDOW_SECONDS + 1.0)
    time.sleep(max(0.0, earliest - time.time()))
    while True:
        now = time.time()
        if now >= deadline:
            raise AssertionError(
                f"{live.arm}: no exporter reading inside the exact window (t0 {t0:.1f}, t1 {t1:.1f}, now {now:.1f}); "
                f"the test's timing precondition failed, not a measured value\n{exp.log_tail()}")
        page = exp.samples()
        caught_up = sample_value(page, "specgate_kv_pool_tokens", pool="target") is not None
        if spec:
            caught_up = caught_up and sample_value(page, "specgate_spec_drafts_total") == after.drafts and \
                sample_value(page, "specgate_spec_acceptance_length", window=WINDOW_LABEL) is not None
        if caught_up and time.time() < deadline:
            live.reading, live.read_at = page, now
            break
        time.sleep(0.25)

    # Let the batch window that holds the end of the traffic close, then read the history.
    def closed_after_traffic(_: Samples) -> dict[str, Any] | None:
        doc = requests.get(f"{exp.url}/api/v1/windows", timeout=5).json()
        return doc if any(w["end"] >= t1 + 1.0 for w in doc.get("windows", [])) or not spec else None

    if spec:
        live.windows_doc = exp.wait_for(closed_after_traffic, 3 * BATCH_WINDOW_SECONDS + 5,
                                        "a batch window closing after the traffic")
    else:
        time.sleep(BATCH_WINDOW_SECONDS + 1)
        live.windows_doc = requests.get(f"{exp.url}/api/v1/windows", timeout=5).json()
    live.final = exp.samples()


def window_drafts_and_accepted(doc: dict[str, Any]) -> tuple[float, float, int]:
    """Σ drafts, Σ (L − 1)·drafts and the count of non-reset windows with an L in a windows document."""
    drafts = accepted = 0.0
    n = 0
    for w in doc.get("windows", []):
        if w["reset"] or w["acceptance_length"] is None:
            continue
        drafts += w["drafts"]
        accepted += (w["acceptance_length"] - 1.0) * w["drafts"]
        n += 1
    return drafts, accepted, n


def arm_fixture(arm: str, engine_args: tuple[str, ...] = (), env_fixture: str | None = None):
    """A module-scoped pytest fixture: the arm up once per module, measured, always stopped by PID.

    `env_fixture` names a fixture whose value (a dict) is added to the engine's environment.
    """
    import pytest

    @pytest.fixture(scope="module")
    def live(vllm_python: Path, tiny_models: Path, e2e_logs: Path, e2e_record: dict,
             request: pytest.FixtureRequest) -> Any:
        env = request.getfixturevalue(env_fixture) if env_fixture else None
        lv = bring_up(arm, tiny_models, vllm_python, e2e_logs, engine_args=engine_args, engine_env=env)
        try:
            run_measured_traffic(lv, spec=arm != "nospec")
            record_arm(e2e_record, lv)
            yield lv
        finally:
            lv.stop()

    return live


def record_arm(record: dict, lv: LiveArm) -> None:
    """Numbers for the session summary (printed at the end of `make e2e`)."""
    c = lv.traffic.after if lv.traffic else None
    row = record.setdefault(lv.arm, {})
    row.update({
        "startup_seconds": lv.engine.ready_seconds, "health_seconds": lv.engine.health_seconds,
        "engine_blocks": c.num_gpu_blocks if c else None, "engine_pool_tokens": c.pool_tokens if c else None,
        "exporter_ready_seconds": sample_value(lv.reading, "specgate_engine_ready_seconds"),
        "L": sample_value(lv.reading, "specgate_spec_acceptance_length", window=WINDOW_LABEL),
        "rate": sample_value(lv.reading, "specgate_spec_acceptance_rate", window=WINDOW_LABEL),
        "traffic_tokens": lv.traffic.completion_tokens if lv.traffic else None,
        "traffic_drafts": (c.drafts - lv.traffic.before.drafts) if c and c.drafts is not None else None,
    })
