#!/usr/bin/env python3
"""Re-record the real guidellm 0.8.1 results that `tests/fixtures/guidellm/` holds (issue 23 item 5).

Usage: .venv/bin/python tools/guidellm_capture.py [--out DIR]

What it does, all on this machine, offline (HF_HUB_OFFLINE=1, the tiny models' local tokenizer):
1. guidellm 0.8.1 in its own venv, ~/.cache/specgate/guidellm-0.8.1/venv (`pip install guidellm==0.8.1`
   on first use: ~8 min and ~6 GB here, since it pulls torch and transformers; never the project venv);
2. the real vLLM 0.32 CPU engine on the harness's tiny nospec target (tests/e2e/vllm_live.py launches it
   exactly as `make e2e` does: 127.0.0.1, a free port, stopped by PID on the way out);
3. two `guidellm run`s against it from scenario files (synthetic text, 32 prompt tokens, 64 output tokens,
   guidellm's own `max_tokens` + `ignore_eos`, temperature 0 sent through the backend's `extras.body`):
   - `guidellm-0.8.1-concurrent.json`: `profile kind=concurrent streams=[1, 4]`, 8 requests each, the first
     2 of each a warm-up (`warmup {value: 2, mode: prefer_requests}`): two benchmarks in one file;
   - `guidellm-0.8.1-synchronous.json`: `profile kind=synchronous`, 4 requests, no warm-up.
This machine's model directory is written as `<models>` and the output directory as `<out>`; nothing else
in guidellm's JSON is changed (request ids, timestamps, generated text as guidellm wrote them).
A summary (guidellm's own medians and rates per benchmark, and the seconds each step took) goes to stdout.

After a refresh run the unit tests (tests/gate/probe/test_import_guidellm.py) and look at the diff: the
expected numbers there are guidellm's own, read from these files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import harness  # noqa: E402
import vllm_live  # noqa: E402

GUIDELLM_VERSION = "0.8.1"
DEFAULT_OUT = REPO / "tests" / "fixtures" / "guidellm"
PROMPT_TOKENS = 32
OUTPUT_TOKENS = 64


def guidellm_venv() -> Path:
    """The guidellm console script in its own cached venv, installed from PyPI on first use."""
    venv = harness.cache_root() / f"guidellm-{GUIDELLM_VERSION}" / "venv"
    exe = venv / "bin" / "guidellm"
    if not exe.exists():
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"guidellm=={GUIDELLM_VERSION}"], check=True)
    return exe


def scenario(url: str, tokenizer: Path, profile: dict[str, Any], requests: int, out: Path) -> dict[str, Any]:
    return {"spec": {
        "backend": {"kind": "openai_http", "target": url, "model": harness.SERVED_MODEL_NAME,
                    "request_format": "/v1/completions", "extras": {"body": {"temperature": 0}}},
        "profile": profile,
        "constraints": [{"kind": "max_requests", "count": requests}],
        "tokenizer": {"kind": "huggingface_auto", "model": str(tokenizer)},
        "data": [{"kind": "synthetic_text", "prompt_tokens": PROMPT_TOKENS, "output_tokens": OUTPUT_TOKENS}],
        "outputs": [{"kind": "json", "path": str(out)}],
    }}


RUNS: dict[str, tuple[dict[str, Any], int]] = {
    "concurrent": ({"kind": "concurrent", "streams": [1, 4], "warmup": {"value": 2, "mode": "prefer_requests"}}, 8),
    "synchronous": ({"kind": "synchronous"}, 4),
}


def summary(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for b in doc["benchmarks"]:
        m = b["metrics"]
        rows.append({"strategy": b["config"]["strategy"], "duration": b["duration"],
                     "requests": m["request_totals"],
                     "ttft_ms_median": m["time_to_first_token_ms"]["successful"]["median"],
                     "itl_ms_median": m["inter_token_latency_ms"]["successful"]["median"],
                     "output_tokens_per_second_mean": m["output_tokens_per_second"]["successful"]["mean"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    exe = guidellm_venv()
    seconds: dict[str, float] = {"install": time.monotonic() - t0}
    python = vllm_live.ensure_vllm()
    models = harness.ensure_models(python)
    env = {**harness._engine_env(), "HF_DATASETS_OFFLINE": "1"}
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="guidellm-capture-") as tmp:
        t1 = time.monotonic()
        with vllm_live.running_arm("nospec", models, python=python, log_dir=Path(tmp)) as eng:
            seconds["engine_start"] = time.monotonic() - t1
            for name, (profile, requests) in RUNS.items():
                raw = Path(tmp) / f"{name}.json"
                spec = Path(tmp) / f"{name}-scenario.json"
                spec.write_text(json.dumps(scenario(eng.url, models / "target", profile, requests, raw)))
                t2 = time.monotonic()
                subprocess.run([str(exe), "run", "-c", str(spec), "--disable-console-interactive"], check=True,
                               env=env, cwd=tmp, stdout=sys.stderr)
                seconds[f"guidellm_{name}"] = time.monotonic() - t2
                text = raw.read_text().replace(str(models), "<models>").replace(tmp, "<out>")
                dest = args.out / f"guidellm-{GUIDELLM_VERSION}-{name}.json"
                dest.write_text(text)
                report[dest.name] = summary(json.loads(text))
    print(json.dumps({"seconds": seconds, "files": report}, indent=1))
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    raise SystemExit(main())
