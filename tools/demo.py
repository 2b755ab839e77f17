#!/usr/bin/env python3
"""`make demo`: the replay engine (real vLLM ngram captures) -> the exporter -> live specgate_* values.

Starts both on free loopback ports, prints the headline values every few seconds, then stops
both by PID. `--engine vllm-cpu` runs the same path against a real vLLM on CPU
(tools/demo_vllm.py).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
SHOW = (
    "specgate_engine_up", "specgate_kv_pool_tokens", "specgate_context_cap_tokens",
    "specgate_spec_acceptance_length", "specgate_spec_acceptance_rate", "specgate_spec_position_acceptance_rate",
    "specgate_spec_windows_total", "specgate_spec_windows_below_slo_total", "specgate_ttft_seconds",
    "specgate_decode_tokens_per_second", "specgate_verify_cycle_seconds",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"demo: {url} did not come up within {timeout:g}s")


def show(metrics_url: str) -> None:
    text = requests.get(metrics_url, timeout=2).text
    rows = [ln for ln in text.splitlines() if ln.startswith(SHOW) and 'window="5m"' not in ln]
    print("\n".join("  " + r for r in rows) or "  (no values yet)", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=["replay", "vllm-cpu"], default="replay")
    ap.add_argument("--seconds", type=float, default=24.0, help="how long to watch (default 24)")
    args = ap.parse_args()
    if args.engine == "vllm-cpu":
        sys.path.insert(0, str(ROOT / "tools"))
        import demo_vllm  # noqa: PLC0415

        return int(demo_vllm.main() or 0)

    specgate = [sys.executable, "-m", "gate.cli"]
    rport, xport = free_port(), free_port()
    procs: list[subprocess.Popen] = []
    try:
        print(f"demo: replaying real vLLM ngram captures on 127.0.0.1:{rport}", flush=True)
        procs.append(subprocess.Popen([*specgate, "replay", "--port", str(rport), "--step-seconds", "4", "--loop"],
                                      start_new_session=True))
        wait_http(f"http://127.0.0.1:{rport}/metrics")
        print(f"demo: exporter on http://127.0.0.1:{xport}/metrics (batch window 4s, SLO target L >= 2.0)",
              flush=True)
        procs.append(subprocess.Popen(
            [*specgate, "exporter", "run", "--engine-url", f"http://127.0.0.1:{rport}", "--listen",
             f"127.0.0.1:{xport}", "--scrape-interval", "1", "--windows", "8s,5m", "--batch-window", "4",
             "--min-drafts", "1", "--acceptance-slo-target", "2.0"], start_new_session=True))
        wait_http(f"http://127.0.0.1:{xport}/healthz")
        t_end = time.monotonic() + args.seconds
        while time.monotonic() < t_end:
            time.sleep(6)
            print(f"--- {time.strftime('%H:%M:%S')} specgate_* (8s window) ---", flush=True)
            show(f"http://127.0.0.1:{xport}/metrics")
        return 0
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)
        print("demo: stopped replay and exporter", flush=True)


if __name__ == "__main__":
    sys.exit(main())
