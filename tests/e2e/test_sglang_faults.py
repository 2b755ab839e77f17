"""Faults on a real SGLang: killed while the gate waits, restarted (counters from zero), the reset window.

One NGRAM server (the arm with a real, in-between L). As for vLLM (test_vllm_faults.py), the
steps build on each other through module-scoped fixtures: kill, then restart; every process
is stopped by PID by the arm fixture. SGLang's page has no process_start_time_seconds: the
restart shows as counters that went down.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import sglang_checks as sc
from harness import SPECGATE, log, sample_value
from sglang_live import (
    BATCH_WINDOW_SECONDS,
    NUM_DRAFT_TOKENS,
    SCRAPE_INTERVAL_SECONDS,
    SGLangArm,
    SGLangCounters,
    arm_fixture,
    engine_up,
    start_sglang,
)
from sglang_plans import plan_dict

live = arm_fixture("ngram")

Samples = dict[str, list[tuple[dict[str, str], float]]]


@dataclass
class GateRun:
    code: int
    doc: dict | None
    stderr: str


def _plan(live: SGLangArm, models: Path, tmp: Path) -> Path:
    _, logged, _ = sc.kv_budget_bytes(live)
    return sc.write_plan(tmp / "plan-faults.yaml", plan_dict("ngram", models, kv_budget_bytes=logged,
                                                            slo_target=1.5, window_seconds=BATCH_WINDOW_SECONDS))


def _gate_against_engine(live: SGLangArm, plan: Path, kill_when_waiting: bool) -> GateRun:
    """`specgate check --phase post --metrics <engine>` (scrape, wait one SLO window, scrape), traffic
    sent while it waits; optionally the engine SIGKILLed while it waits."""
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

    def traffic() -> None:
        try:
            live.engine.generate_traffic(8, 64)
        except (requests.RequestException, OSError):  # expected when the engine is killed under it
            pass

    sender = threading.Thread(target=traffic, daemon=True)
    try:
        assert waiting.wait(60), f"the gate never started waiting for its window: {''.join(err_lines)}"
        sender.start()
        if kill_when_waiting:
            time.sleep(1.0)
            log(f"sglang faults: SIGKILL engine pid {live.engine.pid} while the gate waits")
            live.engine.kill_hard()
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if sender.is_alive():
            sender.join(timeout=300)
    reader.join(timeout=5)
    return GateRun(proc.returncode, json.loads(out) if out.strip() else None, "".join(err_lines))


@dataclass
class Killed:
    control: GateRun
    killed: GateRun
    down_page: Samples
    healthz: int


@pytest.fixture(scope="module")
def killed(live: SGLangArm, sglang_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Killed:
    plan = _plan(live, sglang_models, tmp_path_factory.mktemp("sglang-faults"))
    control = _gate_against_engine(live, plan, kill_when_waiting=False)
    run = _gate_against_engine(live, plan, kill_when_waiting=True)
    down = live.exporter.wait_for(lambda s: s if not engine_up(s) else None, 20, "specgate_engine_up 0")
    healthz = requests.get(live.exporter.url + "/healthz", timeout=5).status_code
    return Killed(control=control, killed=run, down_page=down, healthz=healthz)


def test_gate_on_sglangs_own_page_is_inconclusive_without_restart_evidence(killed: Killed):
    """Control, engine alive: SGLang's page has no process_start_time_seconds and no restart counter, so
    a window read straight from it cannot rule out a restart inside it — not evidence (fail closed). The
    exporter's page (it counts restarts) is what the gate judges SGLang from (the arm modules)."""
    doc = killed.control.doc
    assert doc is not None, killed.control.stderr
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "inconclusive", acc
    assert any("process_start_time_seconds" in e for e in acc["values"]["evidence_errors"]), acc["values"]


def test_gate_inconclusive_when_engine_stops_mid_check(killed: Killed, e2e_record: dict):
    doc = killed.killed.doc
    assert doc is not None, killed.killed.stderr
    assert killed.killed.code == 2
    assert doc["decision"] == "inconclusive"
    assert doc["checks"]["acceptance"]["status"] == "inconclusive"
    e2e_record.setdefault("sglang-faults", {})["gate_engine_killed_mid_check"] = doc["decision"]


def test_exporter_keeps_serving_and_marks_engine_down(killed: Killed):
    page = killed.down_page
    assert killed.healthz == 200
    assert sample_value(page, "specgate_engine_up") == 0.0
    assert sample_value(page, "specgate_engine_scrape_errors_total", reason="connect") >= 1
    assert sample_value(page, "specgate_spec_drafts_total") > 0


@dataclass
class Restarted:
    frozen_drafts: float
    frozen_accepted: float
    engine_after: SGLangCounters
    page: Samples
    windows: dict
    restart_time: float


@pytest.fixture(scope="module")
def restarted(live: SGLangArm, killed: Killed, sglang_python: Path, sglang_models: Path,
              e2e_logs: Path) -> Restarted:
    frozen_drafts = sample_value(killed.down_page, "specgate_spec_drafts_total")
    frozen_accepted = sample_value(killed.down_page, "specgate_spec_accepted_tokens_total")
    restart_time = time.time()
    new = start_sglang("ngram", sglang_models, sglang_python, e2e_logs, port=live.engine.port, tag="restarted")
    live.engine = new  # the arm fixture's finalizer now stops the new server
    new.wait_ready(420)
    exp = live.exporter
    exp.wait_for(engine_up, 30, "the restarted engine up")
    new.generate_traffic(8, 32)
    t1 = time.time()
    after = new.counters()

    def closed(_: Samples) -> dict | None:
        doc = requests.get(f"{exp.url}/api/v1/windows", timeout=5).json()
        return doc if any(w["end"] >= t1 + 1.0 for w in doc["windows"]) else None

    windows = exp.wait_for(closed, 3 * BATCH_WINDOW_SECONDS + 5, "a batch window after the restart")
    time.sleep(3 * SCRAPE_INTERVAL_SECONDS)
    return Restarted(frozen_drafts, frozen_accepted, after, exp.samples(), windows, restart_time)


# Found by this module on a real SGLang 0.5.23: SGLang's page has no process_start_time_seconds, and a
# restarted SGLang serves /metrics before its warm-up request, so the exporter's first scrape of the new
# engine has no spec/generation counters at all; the next one has small ones. The restart rule
# (exporter.derive.restarted) compares each counter with its last known value (the tracker's last sight,
# exporter.derive.last_known), so the family that came back lower is the restart. The same sequence, with
# pages built from the real captures, is tests/exporter/test_sglang_restart_before_warmup.py.


def test_restart_counted_and_window_marked_reset(restarted: Restarted):
    assert sample_value(restarted.page, "specgate_engine_restarts_total") == 1
    wins = restarted.windows["windows"]
    reset = [w for w in wins if w["reset"]]
    assert len(reset) >= 1
    assert any(w["start"] < restarted.restart_time < w["end"] for w in reset) or \
        any(w["end"] > restarted.restart_time for w in reset), reset
    assert all(w["acceptance_length"] is None or 1.0 <= w["acceptance_length"] <= NUM_DRAFT_TOKENS for w in wins)


def test_totals_monotonic_across_restart(restarted: Restarted):
    """Exporter total = what it had seen before the kill + the new engine's counters from zero."""
    page = restarted.page
    after = restarted.engine_after
    assert sample_value(page, "specgate_spec_drafts_total") == restarted.frozen_drafts + after.verify_calls
    assert sample_value(page, "specgate_spec_accepted_tokens_total") == \
        restarted.frozen_accepted + (after.generation_tokens - after.verify_calls)


def test_no_negative_values_anywhere(restarted: Restarted):
    negative = [(name, lab, v) for name, series in restarted.page.items() for lab, v in series if v < 0]
    assert negative == []


def test_gate_never_uses_the_reset_window(live: SGLangArm, restarted: Restarted, sglang_models: Path, tmp_path: Path):
    plan = _plan(live, sglang_models, tmp_path)
    p = subprocess.run([str(SPECGATE), "check", "--plan", str(plan), "--phase", "post", "--metrics",
                        live.exporter.url + "/metrics", "--format", "json"], capture_output=True, text=True, timeout=60)
    doc = json.loads(p.stdout)
    acc = doc["checks"]["acceptance"]
    n_reset = sum(1 for w in restarted.windows["windows"] if w["reset"])
    assert acc["values"]["windows_excluded"]["reset"] >= n_reset >= 1, acc["values"]
    assert acc["status"] in ("pass", "fail"), acc
