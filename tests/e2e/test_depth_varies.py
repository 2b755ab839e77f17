"""Depth that varies at run time, on the real engines (issue 22 item 4).

Two engine start-ups, one after the other; each is measured inside its module fixture and stopped (by PID)
before the tests judge what was read, so the two never run side by side:

vLLM 0.32 (CPU), the `draft` arm (a separate random draft model: it proposes exactly k tokens at every
step and the target accepts none, so a draft's length is the k the schedule gave that step and nothing
else), started WITH the speculative-config fragment `specgate tune --emit vllm` writes from probe records
at fixed k = 0, 1, 3 (`_probe_records`: crafted served rates whose best k is 3 at concurrency 1, 1 at 4,
none at 6 and 8; tune's bands: k = 3 at batch 1-3, 1 at 4-5, 0 from 6). The fragment is read with
exporter.engines.vllm.schedule.vllm_schedule (vLLM's own validation and lookup); the engine serving it is the proof that
vLLM 0.32 accepts it. The expected depth of a phase is that schedule's k at the phase's batch. On that one
server:

0. idle after start: a real Prometheus scrapes two exporters of the engine (one told the schedule with
   `--speculative-config`, one not) with the mixin's rules rendered with `speculationOffWindow`/
   `speculationOffFor` shortened (OFF_WINDOW/OFF_FOR); `SpecgateSpeculationOff` must stay silent;
1. concurrency 1 (one request): every step runs batch 1, so every draft is k_at(1) tokens;
2. concurrency 4 (four requests at once): the batch is 4 except while they arrive (a few steps at batch 1-3,
   where the schedule gives k = 3): the mean is k_at(4) within 10 %, and equals Δdraft_tokens / Δdrafts of the
   engine's own counters exactly;
3. concurrency 8 held for twice (window + for), at least twice for: eight streaming requests sent at once keep
   the batch at 8, where the schedule gives k = 0: no drafts, so the alert fires (warning on the exporter told
   the schedule, whose `specgate_spec_depth_scheduled` is 0; critical on the one that was not told) and
   resolves once the engine is idle again.
4. the k = 0 tax (issue 37 item 6, "plain must be plain"): a no-speculation engine of the same target and flags,
   started beside the schedule arm (their start-ups overlap; it idles through 0-3), and `specgate probe ab` at
   concurrency 8 (the schedule's k = 0 band) on both, alternated ABBA, 5 repetitions each; `specgate check` on a
   plan with that mix and the records judges the mix as plain decoding (the rank test of gate.stats): the label
   must agree with the test's outcome, the tax itself (ratio, p) is measured and recorded, not asserted.
   Measured while building it (shared 2-core machine, 2026-12): 256-token cells, 742 against 1,595 tok/s without
   speculation (0.47x, observed range 0.16-0.82, p = 1/252), TPOT p50 9.6 against 4.8 ms: taxed, the mix fails;
   1-2 drafts a cell (the arrival steps). With 64-token cells (0.35 s each) 0.41x, range 0.20-2.39, p 0.075: not
   shown slower. The probe took 27 s, the module 150 s (130 s with the 64-token cells).

Each phase's exporter page is read while the exporter's DEPTH_WINDOW sliding window holds exactly that
phase (the harness's exact-window timing, `_read_inside_window`): its start snapshot is taken after the
previous phase ended and before this one began.

SGLang 0.5.23 (CPU), the EAGLE3 arm plus `--speculative-adaptive` (default tiers; topk 1): the random head
accepts nothing, so the adaptive policy lowers `spec_num_steps` from 3 to 1 within a few requests
(issue 22's reference run: within three 48-token requests); the
exporter's `specgate_spec_num_steps` must follow and `specgate_spec_depth_varies` say 1.

Suffix decoding (the `suffix` arm, test_vllm_arms.py) adds its depth assertion there: no start-up here.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import harness
import pytest
import requests
import sglang_live
import vllm_live
import vllm_plans
from harness import PROMPTS, SPECGATE, Samples, log, parse_samples, sample_value

from exporter.engines.sglang.schedule import sglang_adaptive_schedule
from exporter.engines.vllm.schedule import vllm_schedule
from exporter.schedule import DepthSchedule

SCRAPE_SECONDS = 0.5  # the exporters' engine scrapes
# Prometheus' scrapes of the exporters and its rule evaluations. Not 0.5 s: with vLLM busy on both CPUs an exporter
# answered in 0.545 s once during a hold here (Prometheus' scrape_duration_seconds), past a 0.5 s timeout; a failed
# scrape marks the target's series stale, which empties the rule's expression and restarts its for:.
PROMETHEUS_SECONDS = 1.0
DEPTH_WINDOW_SECONDS = 15  # the exporter's sliding window: each measured phase must fit inside it
DEPTH_WINDOW = f"{DEPTH_WINDOW_SECONDS}s"
PHASE_GAP_SECONDS = 3.0  # idle between phases: the next window's start snapshot is taken in the gap
K_MAX = 3  # num_speculative_tokens of the draft arm (vllm_live.NUM_SPECULATIVE_TOKENS)
# The mixin's SpecgateSpeculationOff shortened for the live run (the shipped defaults are 5m / 10m): firing needs
# about window + for after the last draft. A 4 s rate window holds 4 scrapes of 1 s, so one failed scrape does not
# empty it (a failed scrape still marks the target's instant series stale and restarts for:).
OFF_WINDOW_SECONDS = 4
OFF_FOR_SECONDS = 4
# The k = 0 hold: HOLD_WAVES waves of HOLD_CONCURRENCY requests, each wave sent at once, HOLD_WAVE_EVERY_SECONDS
# apart, each request to the context cap (HOLD_MAX_TOKENS). The second wave runs beside the first (16 running); each
# later one waits for free slots (--max-num-seqs 16) and runs beside the one before once the one before that
# finished, so every step schedules 8 or 16 requests (the schedule's k = 0) until the last wave ends: three waves'
# time (27 s for three waves here), over three times window + for, so a restarted for: still has room to fire. Not
# streamed: sixteen streams read token by token (about 1,200 chunks a second) stalled this machine for 3 s at a
# time and the scrapes with it (the alert's for: restarted, CI red twice); unstreamed, the engine's API server and
# this process answer once per request.
HOLD_WAVES = 4
HOLD_WAVE_EVERY_SECONDS = 4.0
HOLD_LIMIT_SECONDS = 240.0  # a hold that has not ended by then failed
# The steady part of the hold begins this long after the first wave was sent: its eight are running by then, and
# a Prometheus sample (one scrape of 1 s behind the exporter's of 0.5 s) reads the engine after their arrival.
HOLD_STEADY_AFTER_SECONDS = 3.0
IDLE_SECONDS = OFF_WINDOW_SECONDS + OFF_FOR_SECONDS + 2  # long enough that the alert would have fired on idle
DEPTH_TOLERANCE = 0.10  # issue 22: the mean depth follows the schedule within 10 %
# Traffic per measured phase (temperature 0, ignore_eos, harness.PROMPTS): `concurrency` requests sent at once,
# one round. One round, because vLLM picks k by the number of requests *scheduled in a step*: a request
# arriving while others decode gives steps of a smaller batch (seen here: bursts of up to 205 drafts a second
# with eight request loops running, the running gauge at 8 and the schedule's k = 0 from batch 6), and requests
# finishing apart leave a tail of small batches (two rounds of four at once read 1.45 tokens per draft against
# the band's 1). Requests sent together are prefilled together and, with ignore_eos and the same max_tokens,
# finish in the same step.
# name -> (concurrency, max_tokens). The arrivals' few steps at batch 1-3 run the schedule's k = 3 (measured: 1.065
# tokens per draft at concurrency 4 with 192 tokens a request); longer requests dilute them.
PHASES = {"c1": (1, 128), "c4": (4, 384)}
# The hold's context cap and KV pool are raised to the tiny target's max_position_embeddings (2,048; vLLM refuses
# more): 2 x 8 x 2,048 tokens x 1,280 B (target + draft KV per token, vllm_checks.EXPECTED_BLOCKS' draft arm) = 40 MiB.
HOLD_CONCURRENCY = 8
# The engines run at this niceness (their sessions' autogroups too: vllm_live.start_arm): sixteen requests on two
# CPUs otherwise leave Prometheus and the exporters less CPU than a scrape of 1 s needs. Serving hosts give their
# sidecars their own CPU; this is the test's stand-in for that.
ENGINE_NICE = 10
HOLD_MODEL_LEN = 2048
HOLD_MAX_TOKENS = HOLD_MODEL_LEN - 64  # the prompts are well under 64 tokens
HOLD_KV_BYTES = 2 * HOLD_CONCURRENCY * HOLD_MODEL_LEN * 1280
# SGLang adaptive: requests of this many tokens, one at a time, until spec_num_steps reads 1.
SGLANG_TOKENS = 32
SGLANG_MAX_REQUESTS = 4
# Two sliding windows: the reading uses the shorter one that can still start before the first request (20 s on a
# quiet machine; a request that moved the steps took over 17 s here with the load average at 16).
SGLANG_WINDOWS_SECONDS = (20, 60)
# The k = 0 tax: one cell = TAX_CONCURRENCY requests sent at once (one wave, ignore_eos: they finish together), so
# the batch is 8 but for the arrival steps; ABBA over TAX_REPETITIONS (5 vs 5 can reach p = 1/252).
TAX_CONCURRENCY = HOLD_CONCURRENCY
TAX_REPETITIONS = 5
TAX_PROMPT_TOKENS, TAX_OUTPUT_TOKENS = 32, 256  # 64 gave 0.35 s cells: a 0.2-2.4x range of noise

# Crafted probe records for `tune --emit vllm` (served rate = output tokens / wall; baseline wall 1 s per
# cell): speedup = 1 / wall at each (k, concurrency). Best: k = 3 at 1, k = 1 at 4, none (k = 0) at 6 and 8.
SPEEDUPS: dict[int, dict[int, float]] = {1: {1: 1.30, 4: 1.20, 6: 0.95, 8: 0.90},
                                         3: {1: 1.60, 4: 1.10, 6: 0.85, 8: 0.70}}
PROBE_L = {1: 1.8, 3: 2.9}


# What tune --probe's vetting needs (the intake, gate.evidence.intake.probe_records, the same as compare's): the
# engine's version and model, the records' date, and each mix's shape.
# Each cell consistent with its mix (gate.model.plausibility.cell_mix): 4 requests x 32 prompt / 25 output tokens =
# the cells' 128 prompt and 100 output tokens (tune reads only output tokens and wall seconds).
VETTED = {"engine_version": "0.32.0", "model": "tiny", "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
          "workload": [{"name": "e2e", "prompt_tokens": 32, "output_tokens": 25, "prompts_from": "synthetic"}]}


# --- small helpers ------------------------------------------------------------------------------

def _probe_records(work: Path) -> list[Path]:
    """Probe records at fixed k = 0 (baseline), 1, 3 in specgate.probe/1 (tests/gate/tune/test_tune.py's shape)."""
    out = []
    for k in (0, 1, 3):
        cells = []
        for b in (1, 4, 6, 8):
            wall = 1.0 if k == 0 else 1.0 / SPEEDUPS[k][b]
            cells.append({"mix": "e2e", "concurrency": b, "repetition": 1, "requests": 4, "output_tokens": 100, "prompt_tokens": 128,
                          "wall_seconds": wall, "served_tokens_per_second": 100 / wall, "failed_requests": 0,
                          "ttft_seconds": {}, "tpot_seconds": {}, "chunk_gap_seconds": {},
                          "acceptance_length": None if k == 0 else PROBE_L[k], "drafts": None if k == 0 else 50})
        doc = {"schema": "specgate.probe/1", "arm": "baseline" if k == 0 else "speculative", "engine": "vllm",
               **VETTED, "speculative": None if k == 0 else {"method": "draft_model", "num_speculative_tokens": k},
               "cells": cells}
        path = work / f"probe-k{k}.json"
        path.write_text(json.dumps(doc))
        out.append(path)
    return out


def _emit_vllm_fragment(work: Path) -> tuple[dict[str, Any], str]:
    """`specgate tune --probe ... --emit vllm`: the speculative-config fragment it prints on stdout (merged over the
    probe records' speculative keys), and the predicted speedup per band it says on stderr."""
    p = subprocess.run([str(SPECGATE), "tune", "--probe", *map(str, _probe_records(work)), "--emit", "vllm"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout), p.stderr


def _alerts(prom: Any, name: str) -> list[dict[str, Any]]:
    return [a for a in prom.get("/api/v1/alerts")["alerts"] if a["labels"].get("alertname") == name]


@dataclass
class Phase:
    """One measured stretch of traffic: the engine's pages around it (idle), and the exporters' reading."""

    name: str
    concurrency: int
    before_text: str
    after_text: str
    t0: float
    t1: float
    reading: Samples = field(default_factory=dict)  # the schedule exporter's page inside the exact window
    read_at: float = 0.0
    running_max: float | None = None  # the engine's own vllm:num_requests_running, polled during the traffic

    def counters(self) -> dict[str, Any]:
        got = vllm_live.acceptance_between(vllm_live.EngineCounters.parse(self.before_text),
                                           vllm_live.EngineCounters.parse(self.after_text))
        assert got is not None, f"{self.name}: no drafts"
        return got

    def depth(self) -> float:
        c = self.counters()
        return c["draft_tokens"] / c["drafts"]


def _read_inside_window(exp: harness.ExporterProcess, t0: float, t1: float, previous_end: float,
                        after_drafts: float) -> tuple[Samples, float]:
    """The exporter's page while its DEPTH_WINDOW holds exactly [t0, t1]: after the exporter caught up with the
    engine's counters, after the window's start left the previous phase (previous_end), before it reaches t0."""
    deadline = t0 + DEPTH_WINDOW_SECONDS - 0.5
    earliest = max(t1 + 2 * SCRAPE_SECONDS + 0.5, previous_end + DEPTH_WINDOW_SECONDS + 1.5)
    time.sleep(max(0.0, earliest - time.time()))
    while time.time() < deadline:
        page = exp.samples()
        if sample_value(page, "specgate_spec_drafts_total") == after_drafts and time.time() < deadline:
            return page, time.time()
        time.sleep(0.25)
    raise AssertionError(f"no exporter reading inside the exact window (t0 {t0:.1f}, t1 {t1:.1f}, previous end "
                         f"{previous_end:.1f}, now {time.time():.1f}): the test's timing precondition failed, not a "
                         f"measured value\n{exp.log_tail()}")


def _measured_phase(name: str, eng: vllm_live.VLLMProcess, exp: harness.ExporterProcess, previous_end: float,
                    concurrency: int, max_tokens: int) -> Phase:
    time.sleep(max(0.0, previous_end + PHASE_GAP_SECONDS - time.time()))
    before = eng.metrics_text()
    seen: list[float] = []
    done = threading.Event()

    def watch() -> None:  # how many requests vLLM ran at once: the batch its schedule keyed k on
        while not done.wait(0.2):
            try:
                got = sample_value(parse_samples(eng.metrics_text(timeout=2.0)), "vllm:num_requests_running")
            except (OSError, ValueError):
                continue
            if got is not None:
                seen.append(got)

    watcher = threading.Thread(target=watch, daemon=True)
    t0 = time.time()
    watcher.start()
    try:
        eng.send_traffic(concurrency, max_tokens, concurrency=concurrency)
    finally:
        done.set()
        watcher.join(5)
    t1 = time.time()
    after = eng.metrics_text()
    ph = Phase(name, concurrency, before, after, t0, t1, running_max=max(seen, default=None))
    drafts = vllm_live.EngineCounters.parse(after).drafts
    assert drafts is not None
    ph.reading, ph.read_at = _read_inside_window(exp, t0, t1, previous_end, drafts)
    log(f"depth: {name} {t1 - t0:.1f} s, engine depth {ph.depth():.3f}, running at most {ph.running_max}, "
        f"exporter {sample_value(ph.reading, 'specgate_spec_depth_mean', window=DEPTH_WINDOW)}")
    return ph


def _hold(eng: vllm_live.VLLMProcess, poll: Callable[[], None]) -> tuple[float, float, int, float]:
    """HOLD_WAVES waves of HOLD_CONCURRENCY requests (not streamed), each wave sent at once, HOLD_WAVE_EVERY_SECONDS
    apart; the engine admits a wave once HOLD_CONCURRENCY slots are free, so from the second wave on there are 8 or
    16 running until the last wave finishes. `poll` runs about once a second meanwhile. Returns (start, end, output
    tokens served, the longest gap between two polls: how long this process stalled). The hold ends when the first
    request of the last wave returns (all of a wave finish in one step: ignore_eos, the same max_tokens)."""
    start = time.time()
    tokens = [0] * (HOLD_WAVES * HOLD_CONCURRENCY)
    errors: list[BaseException] = []
    last_wave_done = threading.Event()

    def one(i: int) -> None:
        body = {"model": harness.SERVED_MODEL_NAME, "prompt": PROMPTS[i % len(PROMPTS)],
                "max_tokens": HOLD_MAX_TOKENS, "temperature": 0, "ignore_eos": True}
        try:
            r = requests.post(f"{eng.url}/v1/completions", json=body, timeout=HOLD_LIMIT_SECONDS)
            r.raise_for_status()
            tokens[i] = int(r.json()["usage"]["completion_tokens"])
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)
            last_wave_done.set()
        finally:
            if i >= (HOLD_WAVES - 1) * HOLD_CONCURRENCY:
                last_wave_done.set()

    threads: list[threading.Thread] = []
    gap, last_poll = 0.0, time.monotonic()
    while not last_wave_done.is_set():
        sent = len(threads) // HOLD_CONCURRENCY
        if sent < HOLD_WAVES and time.time() >= start + sent * HOLD_WAVE_EVERY_SECONDS:
            for i in range(sent * HOLD_CONCURRENCY, (sent + 1) * HOLD_CONCURRENCY):
                threads.append(threading.Thread(target=one, args=(i,), daemon=True))
                threads[-1].start()
        poll()
        now = time.monotonic()
        gap, last_poll = max(gap, now - last_poll), now
        if time.time() > start + HOLD_LIMIT_SECONDS:
            raise AssertionError(f"the hold's last wave did not finish in {HOLD_LIMIT_SECONDS} s")
        last_wave_done.wait(1.0)
    end = time.time()
    for t in threads:
        t.join(HOLD_LIMIT_SECONDS)
    if errors:
        raise AssertionError(f"held traffic failed: {errors[0]!r}")
    return start, end, sum(tokens), gap


# --- Prometheus -----------------------------------------------------------------------------------

@dataclass
class Prometheus:
    popen: subprocess.Popen
    api: Any  # tests.observability.live_stack.PrometheusAPI
    log_path: Path

    def stop(self) -> None:
        harness._stop_group(self.popen, 10)


def _start_prometheus(work: Path, targets: dict[str, int]) -> Prometheus:
    """Prometheus on a free loopback port, scraping each exporter (job = its name) every PROMETHEUS_SECONDS with the
    mixin's rules rendered with SpecgateSpeculationOff's window and for: shortened (tests.observability.sources)."""
    from tests.observability.live_stack import PrometheusAPI
    from tests.observability.sources import find_tool, render_rules

    binary = find_tool("prometheus")
    assert binary is not None, "prometheus not found: run `make tools` (.tools/bin)"
    rules = work / "rules.yaml"
    rules.write_text(render_rules({"speculationOffWindow": f"{OFF_WINDOW_SECONDS}s",
                                   "speculationOffFor": f"{OFF_FOR_SECONDS}s"}))
    scrape = "".join(f"  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
                     for job, port in targets.items())
    config = work / "prometheus.yml"
    every = f"{int(PROMETHEUS_SECONDS * 1000)}ms"
    config.write_text(f"global:\n  scrape_interval: {every}\n  scrape_timeout: {every}\n  evaluation_interval: {every}\n"
                      f"rule_files:\n  - {rules}\nscrape_configs:\n{scrape}")
    port = harness.free_port()
    (work / "tsdb").mkdir()
    log_path = work / "prometheus.log"
    with log_path.open("wb") as fh:
        popen = subprocess.Popen([str(binary), f"--config.file={config}", f"--storage.tsdb.path={work / 'tsdb'}",
                                  f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                                 stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True, preexec_fn=harness._die_with_parent)
    prom = Prometheus(popen, PrometheusAPI(f"http://127.0.0.1:{port}"), log_path)
    deadline = time.time() + 30
    while not prom.api.ready():
        if popen.poll() is not None or time.time() > deadline:
            prom.stop()
            raise RuntimeError("prometheus did not become ready\n" + log_path.read_text(errors="replace")[-2000:])
        time.sleep(0.2)
    return prom


def _hold_scrapes(prom: Any, start: float, end: float) -> dict[str, dict[str, Any]]:
    """Prometheus' own view of the hold, per job, for a failing assertion to show why the alert did not fire: a
    failed scrape (up 0) marks the target's series stale and resets the rule's for:; the slowest scrape; how many
    rule evaluations saw no draft in the window."""
    span = f"{max(1, int(end - start))}s"
    at = end
    queries = {"min_up": f"min_over_time(up[{span}])",
               "max_scrape_seconds": f"max_over_time(scrape_duration_seconds[{span}])",
               "no_draft_evaluations": f"count_over_time((rate(specgate_spec_drafts_total[{OFF_WINDOW_SECONDS}s]) == 0)"
                                       f"[{span}:{int(PROMETHEUS_SECONDS * 1000)}ms])",
               "running_min": f"min_over_time(specgate_requests_running[{span}])"}
    out: dict[str, dict[str, Any]] = {}
    for key, expr in queries.items():
        try:
            answer = prom.query(expr, at=at)
        except OSError as e:  # a diagnostic: never what fails the run
            out.setdefault("error", {})[key] = str(e)
            continue
        for r in answer:
            out.setdefault(r["metric"].get("job", "?"), {})[key] = round(float(r["value"][1]), 3)
    return out


def _samples(prom: Any, expr: str, start: float, end: float) -> list[dict[str, Any]]:
    """The raw samples Prometheus stored for `expr` (an instant selector) in (start, end]: its own record, which a
    stall of this process cannot thin out."""
    return prom.query(f"{expr}[{max(1, int(end - start))}s]", at=end)


def _steady(prom: Any, start: float, end: float) -> dict[str, list[float]]:
    """The told exporter's series over the hold's steady part, as Prometheus scraped them."""
    out = {}
    for key, name in (("running", "specgate_requests_running"), ("scheduled", "specgate_spec_depth_scheduled"),
                      ("drafts", "specgate_spec_drafts_total")):
        rows = _samples(prom, f'{name}{{job="told"}}', start, end)
        out[key] = [float(v) for r in rows for _, v in r["values"]]
    return out


def _first_firing(prom: Any, start: float, end: float) -> dict[str, float]:
    """"job:severity" -> seconds after `start` of the first rule evaluation that had the alert firing (Prometheus'
    ALERTS series, written at every evaluation)."""
    rows = _samples(prom, 'ALERTS{alertname="SpecgateSpeculationOff",alertstate="firing"}', start, end)
    return {f"{r['metric'].get('job')}:{r['metric'].get('severity')}": round(min(float(t) for t, _ in r["values"]) - start, 1)
            for r in rows if r["values"]}


# --- the vLLM run -----------------------------------------------------------------------------------

@dataclass
class ScheduleRun:
    fragment: dict[str, Any]
    tune_output: str
    schedule: DepthSchedule
    phases: dict[str, Phase] = field(default_factory=dict)
    idle_alerts: list[dict[str, Any]] = field(default_factory=list)
    idle_seconds: float = 0.0
    hold_start: float = 0.0
    hold_end: float = 0.0
    hold_tokens: int = 0
    hold_poll_gap: float = 0.0  # the longest gap between two of this process' polls during the hold
    steady: dict[str, list[float]] = field(default_factory=dict)  # series -> the told job's samples (`_steady`)
    first_firing: dict[str, float] = field(default_factory=dict)  # severity -> seconds after the hold began
    hold_alert_states: list[tuple[float, str, str]] = field(default_factory=list)  # (s into the hold, job:sev, state)
    hold_scrapes: dict[str, dict[str, Any]] = field(default_factory=dict)  # job -> Prometheus' view of the hold
    after_idle_alerts: list[dict[str, Any]] = field(default_factory=list)
    check_doc: dict[str, Any] | None = None
    check_stderr: str = ""
    startup_seconds: float | None = None
    tax: dict[str, Any] = field(default_factory=dict)  # the k = 0 tax (`_k0_tax`)
    wall_seconds: float = 0.0


def _schedule_plan(models: Path, fragment: dict[str, Any], exporter_url: str) -> dict[str, Any]:
    plan = vllm_plans.plan_dict("draft", models, exporter_url=exporter_url, window_seconds=5.0)
    plan["engine"]["speculative"].update(fragment)
    plan["engine"].update(kv_cache_memory_bytes=HOLD_KV_BYTES, context_cap_tokens=HOLD_MODEL_LEN)
    return plan


def _k0_tax(work: Path, eng: vllm_live.VLLMProcess, base: vllm_live.VLLMProcess, fragment: dict[str, Any],
            models: Path) -> dict[str, Any]:
    """The schedule arm against the no-speculation arm at TAX_CONCURRENCY (k = 0 there), `probe ab` (ABBA), then
    `specgate check` on a plan of that one mix with the two records as evidence.probes."""
    spec = vllm_live.speculative_config("draft", models) | fragment  # the engine's own --speculative-config
    out = {"base": work / "tax-base.json", "spec": work / "tax-spec.json"}
    t0 = time.monotonic()
    p = subprocess.run([str(SPECGATE), "probe", "ab", "--baseline-url", base.url, "--speculative-url", eng.url,
                        "--out-baseline", str(out["base"]), "--out-speculative", str(out["spec"]),
                        "--prompt-tokens", str(TAX_PROMPT_TOKENS), "--output-tokens", str(TAX_OUTPUT_TOKENS),
                        "--concurrency", str(TAX_CONCURRENCY), "--requests", str(TAX_CONCURRENCY),
                        "--repetitions", str(TAX_REPETITIONS), "--warmup", "2", "--no-client-ceiling",
                        "--speculative-config", json.dumps(spec)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"specgate probe ab exited {p.returncode}: {p.stderr[-2000:]}"
    seconds = time.monotonic() - t0
    plan = _schedule_plan(models, fragment, "")
    plan.pop("evidence", None)
    plan["workload"] = [{"name": "k0", "concurrency": TAX_CONCURRENCY, "prompt_tokens": TAX_PROMPT_TOKENS,
                         "output_tokens": TAX_OUTPUT_TOKENS, "source": "tests/e2e/test_depth_varies.py k = 0 tax"}]
    # the module's target stands: a k = 0 band's mix is exempt from it (gate.model.invariants.target_at_mix)
    plan["evidence"] = {"probes": [str(out["base"]), str(out["spec"])]}
    res = harness.specgate_json("check", "--plan", str(harness.write_plan(work / "plan-k0.yaml", plan)),
                                "--phase", "pre")
    return {"seconds": seconds, "records": {k: json.loads(v.read_text()) for k, v in out.items()},
            "check": res.doc, "check_stderr": res.stderr}


@pytest.fixture(scope="module")
def schedule_run(vllm_python: Path, tiny_models: Path, e2e_logs: Path, e2e_record: dict,
                 tmp_path_factory: pytest.TempPathFactory) -> ScheduleRun:
    began = time.monotonic()
    work = tmp_path_factory.mktemp("depth-schedule")
    fragment, tune_out = _emit_vllm_fragment(work)
    run = ScheduleRun(fragment, tune_out, vllm_schedule(fragment["num_speculative_tokens_per_batch_size"],
                                                       fragment["num_speculative_tokens"]))
    port = harness.free_port()
    engine_url = f"http://127.0.0.1:{port}"
    common = ("--windows", DEPTH_WINDOW)
    spec_arg = json.dumps(vllm_live.speculative_config("draft", tiny_models) | fragment)
    told = harness.start_exporter(engine_url, e2e_logs, scrape_interval=SCRAPE_SECONDS, min_drafts=1,
                                  extra_args=(*common, "--speculative-config", spec_arg))
    stop: list[Callable[[], None]] = [told.stop]
    try:
        plain = harness.start_exporter(engine_url, e2e_logs, scrape_interval=SCRAPE_SECONDS, min_drafts=1,
                                       extra_args=common)
        stop.append(plain.stop)
        prom = _start_prometheus(work, {"told": told.port, "plain": plain.port})
        stop.append(prom.stop)
        eng = vllm_live.start_arm("draft", tiny_models, python=vllm_python, log_dir=e2e_logs, port=port,
                                  speculative_overrides=fragment, max_model_len=HOLD_MODEL_LEN,
                                  kv_cache_memory_bytes=HOLD_KV_BYTES,
                                  extra_args=("--max-num-seqs", str(2 * HOLD_CONCURRENCY)),  # both waves run
                                  nice=ENGINE_NICE)
        stop.append(eng.stop)
        # the k = 0 tax's no-speculation arm: the same target and flags, its start-up beside the schedule arm's
        base = vllm_live.start_arm("nospec", tiny_models, python=vllm_python, log_dir=e2e_logs,
                                   max_model_len=HOLD_MODEL_LEN, kv_cache_memory_bytes=HOLD_KV_BYTES,
                                   extra_args=("--max-num-seqs", str(2 * HOLD_CONCURRENCY)), nice=ENGINE_NICE)
        stop.append(base.stop)
        run.startup_seconds = eng.wait_ready(300)
        base.wait_ready(300)
        told.wait_for(harness.engine_up, 30, "specgate_engine_up 1")
        idle_from = time.time()
        time.sleep(IDLE_SECONDS)
        run.idle_alerts = _alerts(prom.api, "SpecgateSpeculationOff")
        run.idle_seconds = time.time() - idle_from
        previous_end = idle_from
        for name, (conc, tokens) in PHASES.items():
            ph = _measured_phase(name, eng, told, previous_end, conc, tokens)
            run.phases[name] = ph
            previous_end = ph.t1
            if name == "c4":  # the gate on the varying-depth window, while the exporter still holds it
                plan = harness.write_plan(work / "plan-schedule.yaml",
                                          _schedule_plan(tiny_models, fragment, told.url + "/metrics"))
                res = harness.specgate_json("check", "--plan", str(plan), "--phase", "post",
                                            "--metrics", told.url + "/metrics")
                run.check_doc, run.check_stderr = res.doc, res.stderr

        def poll() -> None:  # diagnostics only: what the alert said, as this process saw it
            now = time.time()
            for a in _alerts(prom.api, "SpecgateSpeculationOff"):
                sev = f"{a['labels'].get('job')}:{a['labels'].get('severity')}"
                run.hold_alert_states.append((round(now - run.hold_start, 1), sev, a["state"]))

        run.hold_start = time.time()
        run.hold_start, run.hold_end, run.hold_tokens, run.hold_poll_gap = _hold(eng, poll)
        # idle again: no request running, so the alert resolves (the rule needs requests_running > 0)
        told.wait_for(lambda s: sample_value(s, "specgate_requests_running") == 0.0, 30, "requests_running 0")
        time.sleep(3 * PROMETHEUS_SECONDS)
        run.after_idle_alerts = _alerts(prom.api, "SpecgateSpeculationOff")
        run.hold_scrapes = _hold_scrapes(prom.api, run.hold_start, run.hold_end)
        run.steady = _steady(prom.api, run.hold_start + HOLD_STEADY_AFTER_SECONDS, run.hold_end - 1)
        run.first_firing = _first_firing(prom.api, run.hold_start, run.hold_end + 2 * PROMETHEUS_SECONDS)
        run.tax = _k0_tax(work, eng, base, fragment, tiny_models)
    finally:
        for s in reversed(stop):
            s()
    run.wall_seconds = time.monotonic() - began
    e2e_record["depth-schedule"] = {
        "schedule": fragment["num_speculative_tokens_per_batch_size"], "startup_seconds": run.startup_seconds,
        **{f"{n}_depth_engine": round(p.depth(), 4) for n, p in run.phases.items()},
        **{f"{n}_running_max": p.running_max for n, p in run.phases.items()},
        **{f"{n}_depth_exporter": sample_value(p.reading, "specgate_spec_depth_mean", window=DEPTH_WINDOW)
           for n, p in run.phases.items()},
        "hold_seconds": round(run.hold_end - run.hold_start, 1), "hold_tokens": run.hold_tokens,
        "hold_poll_gap_seconds": round(run.hold_poll_gap, 1),
        **{f"firing_after_s_{k}": round(v, 1) for k, v in run.first_firing.items()},
        "hold_scrapes": run.hold_scrapes,
        "module_part_seconds": round(run.wall_seconds, 1),
        "check_acceptance": (run.check_doc or {}).get("checks", {}).get("acceptance", {}).get("reason", "")[:300],
        "k0_tax": _tax_summary(run.tax)}
    log(f"depth schedule run: {e2e_record['depth-schedule']}")
    return run


def _tax_summary(tax: dict[str, Any]) -> dict[str, Any]:
    """The k = 0 tax for the e2e summary: the point's ratio, range, p and TPOT, the gate's verdict on the mix."""
    probes = ((tax.get("check") or {}).get("checks", {}).get("acceptance", {}).get("values", {}).get("probes", {}))
    cells = (probes.get("comparison") or {}).get("cells", [])
    cell = next((c for c in cells if c["concurrency"] == TAX_CONCURRENCY), {})
    spec_cells = tax.get("records", {}).get("spec", {}).get("cells", [])
    return {"concurrency": TAX_CONCURRENCY, "probe_seconds": round(tax.get("seconds", 0.0), 1),
            **{k: cell.get(k) for k in ("baseline_tokens_per_second", "speculative_tokens_per_second", "speedup",
                                        "speedup_low", "speedup_high", "p_slower", "p_faster",
                                        "baseline_tpot_seconds", "speculative_tpot_seconds")},
            "spec_drafts_per_cell": [c.get("drafts") for c in spec_cells],
            "verdict": (probes.get("mixes") or {}).get("k0", {}).get("verdict")}


def _k_at(run: ScheduleRun, batch: int) -> int:
    return run.schedule.k_at(batch)


def test_tune_emits_a_schedule_vllm_validates(schedule_run):
    """The fragment is vLLM's own shape: num_speculative_tokens the largest k, ranges from batch 1 (vLLM's
    validation is exporter.engines.vllm.schedule.vllm_schedule's; the engine serving it below is vLLM's own acceptance)."""
    frag, sched = schedule_run.fragment, schedule_run.schedule
    assert frag["method"] == "draft_model", frag  # the probe records' speculative keys, kept under the schedule
    assert frag["num_speculative_tokens"] == sched.max_k == K_MAX, frag
    assert frag["num_speculative_tokens_per_batch_size"][0][0] == 1, frag
    # the crafted records' best k per concurrency (SPEEDUPS), the band past the crossover k = 0
    assert (sched.k_at(1), sched.k_at(4), sched.k_at(6), sched.k_at(8)) == (3, 1, 0, 0), frag
    assert "predicted" in schedule_run.tune_output, schedule_run.tune_output  # the speedup per band, labelled


def test_depth_mean_follows_the_schedule(schedule_run):
    """Expected: the schedule's k at the phase's concurrency (a draft model proposes exactly k each step), within
    10 %; and the exporter's mean equals the engine's own Δdraft_tokens / Δdrafts over the phase exactly."""
    for name, ph in schedule_run.phases.items():
        got = sample_value(ph.reading, "specgate_spec_depth_mean", window=DEPTH_WINDOW)
        assert got is not None, f"{name}: no specgate_spec_depth_mean{{window={DEPTH_WINDOW}}}"
        assert got == pytest.approx(ph.depth(), abs=1e-9), (name, got, ph.counters())
        want = _k_at(schedule_run, ph.concurrency)
        # the precondition of the comparison: vLLM keys k on how many requests a step schedules
        assert ph.running_max == ph.concurrency, \
            f"{name}: vLLM ran at most {ph.running_max} of {ph.concurrency} requests at once: the test's " \
            f"timing precondition failed, not a measured depth ({got})"
        assert abs(got - want) <= DEPTH_TOLERANCE * want, (name, got, want)
    c1 = schedule_run.phases["c1"]
    assert c1.counters()["draft_tokens"] == K_MAX * c1.counters()["drafts"]  # batch 1: every draft k = 3


def test_depth_max_and_varies(schedule_run):
    c1, c4 = schedule_run.phases["c1"].reading, schedule_run.phases["c4"].reading
    for page in (c1, c4):
        assert sample_value(page, "specgate_spec_depth_max", source="positions") == K_MAX
    assert sample_value(c1, "specgate_spec_depth_varies", window=DEPTH_WINDOW) == 0.0  # every draft was k = 3
    assert sample_value(c4, "specgate_spec_depth_varies", window=DEPTH_WINDOW) == 1.0


def test_position_rates_are_lower_bounds_when_depth_varied(schedule_run):
    """Fixed depth in the window (concurrency 1): exact; varied (concurrency 4): lower_bound, never exact."""
    def bases(page: Samples) -> set[str]:
        return {lab.get("basis", "") for lab, _ in page.get("specgate_spec_position_acceptance_rate", [])
                if lab.get("window") == DEPTH_WINDOW}

    assert bases(schedule_run.phases["c1"].reading) == {"exact"}
    assert bases(schedule_run.phases["c4"].reading) == {"lower_bound"}


def test_check_does_not_call_the_varying_runs_l_exact(schedule_run):
    doc = schedule_run.check_doc
    assert doc is not None, schedule_run.check_stderr
    acc = doc["checks"]["acceptance"]
    text = json.dumps(acc)
    assert '"exact"' not in text and "is exact" not in acc["reason"], acc
    # the plan's schedule is shown, with the largest k the bounds use (gate/checks/acceptance/depth.py)
    assert acc["values"]["depth_schedule"]["max_k"] == K_MAX, acc["values"]
    assert "bounds use its largest k = 3" in acc["reason"], acc["reason"]


def test_speculation_off_silent_on_the_idle_engine(schedule_run):
    assert schedule_run.idle_seconds >= OFF_WINDOW_SECONDS + OFF_FOR_SECONDS
    assert schedule_run.idle_alerts == [], schedule_run.idle_alerts


def test_speculation_off_fires_at_k0(schedule_run):
    """Held at batch 8-16 (k = 0): warning where the exporter was told the schedule (scheduled k 0), critical where
    it was not; both firing at the end of the hold and resolved once the engine is idle again."""
    run = schedule_run
    why = (run.first_firing, run.hold_scrapes, run.hold_alert_states, run.hold_poll_gap)
    running = run.steady["running"]
    # Prometheus' record of the told exporter: one wave of eight, then two (16), every batch in the k = 0 band
    assert len(running) >= 2 * OFF_FOR_SECONDS, (running, why)
    assert all(r >= HOLD_CONCURRENCY and _k_at(run, int(r)) == 0 for r in running), running
    assert max(running) == 2 * HOLD_CONCURRENCY, running  # the second wave ran alongside the first
    assert set(run.steady["scheduled"]) == {0.0}, run.steady["scheduled"]
    drafts = run.steady["drafts"]
    assert drafts and drafts[0] == drafts[-1], drafts  # k = 0 at batch 8: vLLM proposed nothing all along
    assert run.hold_end - run.hold_start >= 2 * (OFF_WINDOW_SECONDS + OFF_FOR_SECONDS)
    assert set(run.first_firing) == {"told:warning", "plain:critical"}, why
    assert all(v >= OFF_FOR_SECONDS for v in run.first_firing.values()), run.first_firing
    assert [a for a in run.after_idle_alerts if a["state"] == "firing"] == [], run.after_idle_alerts


def test_tune_refuses_exact_on_the_varying_capture_and_keeps_it_on_fixed_depth(schedule_run, tmp_path):
    """The engine's own pages around each phase: concurrency 1 is a fixed-depth draft-model run (every draft k = 3:
    Δdraft_tokens = 3 Δdrafts), concurrency 4 one whose depth varied (the schedule's k = 1 and 3)."""
    def tune(ph: Phase, *extra: str) -> subprocess.CompletedProcess[str]:
        b, a = tmp_path / f"{ph.name}-before.txt", tmp_path / f"{ph.name}-after.txt"
        b.write_text(ph.before_text)
        a.write_text(ph.after_text)
        return subprocess.run([str(SPECGATE), "tune", "--captures", str(b), str(a), "--format", "json", *extra],
                              capture_output=True, text=True, timeout=120)

    def points(p: subprocess.CompletedProcess[str]) -> dict[str, Any]:
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    fixed = {p["k"]: p["acceptance_basis"] for p in points(tune(schedule_run.phases["c1"]))["points"]}
    assert fixed[1] == fixed[2] == "exact" and fixed[3] == "measured", fixed
    assert tune(schedule_run.phases["c1"], "--basis", "exact").returncode == 0
    varied = points(tune(schedule_run.phases["c4"]))
    assert "exact" not in {p["acceptance_basis"] for p in varied["points"]}, varied["points"]
    assert any("lower bound" in a for a in varied["assumptions"]), varied["assumptions"]
    refused = tune(schedule_run.phases["c4"], "--basis", "exact")
    assert refused.returncode == 3 and refused.stdout == "", refused
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_k0_band_is_judged_as_plain_decoding(schedule_run):
    """Issue 37 item 6 on real vLLM 0.32: the schedule arm at concurrency 8 (k = 0) against no speculation,
    alternated, 5 repetitions each; the gate's label on the mix must be the rank test's outcome (slower at p < α:
    taxed, a fail naming the band; else free, "plain: k = 0 band"). The tax is recorded, not asserted."""
    tax = schedule_run.tax
    assert _k_at(schedule_run, TAX_CONCURRENCY) == 0
    for arm in ("base", "spec"):
        cells = tax["records"][arm]["cells"]
        assert [c["concurrency"] for c in cells] == [TAX_CONCURRENCY] * TAX_REPETITIONS, (arm, cells)
        assert all(c["requests"] == TAX_CONCURRENCY and c["failed_requests"] == 0 for c in cells), (arm, cells)
    doc = tax["check"]
    assert doc is not None, tax["check_stderr"]
    acc = doc["checks"]["acceptance"]
    probes = acc["values"]["probes"]
    cell = next(c for c in probes["comparison"]["cells"] if c["concurrency"] == TAX_CONCURRENCY)
    mix = probes["mixes"]["k0"]
    assert mix["label"] == "plain: k = 0 band" and mix["band"].startswith("batch 6+ k = 0"), mix
    alpha = probes["alpha"]
    if cell["p_slower"] < alpha:
        assert mix["verdict"] == "plain_taxed", (mix, cell)
        assert "slower than without speculation" in acc["reason"] and acc["status"] == "fail", acc["reason"]
    else:
        assert mix["verdict"] == "plain_free", (mix, cell)
        assert "plain: k = 0 band: mix k0 at concurrency 8" in acc["reason"], acc["reason"]
    assert mix["points"][0]["ratio"] == cell["speedup"] and mix["points"][0]["p_slower"] == cell["p_slower"]


# --- SGLang adaptive ----------------------------------------------------------------------------------

@dataclass
class AdaptiveRun:
    steps_before: float | None  # the exporter's specgate_spec_num_steps on the idle engine
    steps: list[float | None]  # ... after each request
    engine_steps: list[float | None]  # the engine's own sglang:spec_num_steps after each request
    reading: Samples  # the exporter's page while its window `window` holds the move (`adaptive_run`)
    window: str
    startup_seconds: float | None
    wall_seconds: float


@pytest.fixture(scope="module")
def adaptive_run(sglang_python: Path, sglang_models: Path, e2e_logs: Path, e2e_record: dict) -> Iterator[AdaptiveRun]:
    """SGLang measured and stopped here (schedule_run stops vLLM before it returns: never two engines at once).

    The reading's window must hold the move: its start snapshot taken after the exporter saw the idle engine's
    steps (`seen`) and before the first request, its end after the move. SGLang counts verify calls when a
    request finishes, so the window also has drafts once the request that moved the steps is done."""
    began = time.monotonic()
    port = harness.free_port()
    exp = harness.start_exporter(f"http://127.0.0.1:{port}", e2e_logs, scrape_interval=SCRAPE_SECONDS,
                                 extra_args=("--windows", ",".join(f"{w}s" for w in SGLANG_WINDOWS_SECONDS)))
    eng: sglang_live.SGLangProcess | None = None
    try:
        eng = sglang_live.start_sglang("eagle3", sglang_models, sglang_python, e2e_logs, port=port, tag="adaptive",
                                       extra_args=("--speculative-adaptive",))
        startup = eng.wait_ready(sglang_live.SGLANG.ready_timeout)
        exp.wait_for(lambda s: sample_value(s, "specgate_spec_num_steps") is not None, 30,
                     "specgate_spec_num_steps")
        seen = time.time()
        before = sample_value(exp.samples(), "specgate_spec_num_steps")
        time.sleep(PHASE_GAP_SECONDS)
        t0 = time.time()
        steps: list[float | None] = []
        engine_steps: list[float | None] = []
        took: list[float] = []
        for i in range(SGLANG_MAX_REQUESTS):
            r0 = time.time()
            eng.generate(PROMPTS[i % len(PROMPTS)], SGLANG_TOKENS)
            took.append(round(time.time() - r0, 1))
            es = parse_samples(eng.metrics_text()).get("sglang:spec_num_steps", [])
            engine_steps.append(es[0][1] if es else None)
            time.sleep(2 * SCRAPE_SECONDS + 0.5)
            steps.append(sample_value(exp.samples(), "specgate_spec_num_steps"))
            if steps[-1] == 1.0:
                break
        fits = [w for w in SGLANG_WINDOWS_SECONDS if time.time() < t0 + w - 1.0]
        assert fits, (f"SGLang adaptive: no window {SGLANG_WINDOWS_SECONDS} can start before the first request (t0 "
                      f"{t0:.1f}, now {time.time():.1f}): the test's timing precondition failed, not a measured value")
        w = fits[0]
        time.sleep(max(0.0, seen + w + 1.5 - time.time()))
        reading, window = exp.samples(), f"{w}s"
        assert time.time() < t0 + w - 0.5, "SGLang adaptive: the reading came too late for its window (timing)"
    finally:
        if eng is not None:
            eng.stop()
        exp.stop()
    run = AdaptiveRun(before, steps, engine_steps, reading, window, startup, time.monotonic() - began)
    e2e_record["depth-sglang-adaptive"] = {
        "steps_before": before, "steps_after_each_request": steps, "engine_steps": engine_steps,
        "request_seconds": took,
        "window": window, "depth_varies": sample_value(reading, "specgate_spec_depth_varies", window=window),
        "depth_max": [(lab.get("source"), v) for lab, v in reading.get("specgate_spec_depth_max", [])],
        "startup_seconds": startup, "module_part_seconds": round(run.wall_seconds, 1)}
    log(f"depth sglang adaptive: {e2e_record['depth-sglang-adaptive']}")
    yield run


# Not named test_sglang_*: conftest.pytest_collection_modifyitems puts test_sglang_nospec.py before the first such
# item, which would split this module.
def test_adaptive_sglang_lowers_steps_and_says_depth_varies(adaptive_run):
    run = adaptive_run
    assert run.steps_before == 3.0, run  # --speculative-num-steps 3 until the policy has seen acceptance
    assert run.steps and run.steps[-1] == 1.0, run  # the random head accepts nothing: the policy's floor
    assert run.steps == run.engine_steps, run  # the exporter reports the engine's own gauge
    assert sample_value(run.reading, "specgate_spec_depth_varies", window=run.window) == 1.0
    # under --speculative-adaptive with SGLang's default tiers the maximum is their deepest candidate (7), not the
    # starting steps /server_info shows (exporter.engines.sglang.depth.configured_depth)
    assert sample_value(run.reading, "specgate_spec_depth_max", source="server_info") == \
        sglang_adaptive_schedule(None).max_k
