#!/usr/bin/env python3
"""Re-record the real SGLang 0.5.23 captures the SGLang fixtures are made of.

Usage: .venv/bin/python tools/refresh_sglang_captures.py [--out DIR] [--arms nospec,ngram,...]

For each arm (nospec, ngram, standalone, eagle3; tests/e2e/sglang_live.py launches them
exactly as `make e2e` does, one at a time, stopped by PID) it writes into
--out/<arm>/ (default tests/fixtures/sglang/0.5.23/):
  metrics-before.txt    SGLang's /metrics once ready, before the traffic
  metrics-during.txt    /metrics while the traffic runs
  metrics-after.txt     /metrics after the traffic
  server_info-before.json, server_info-after.json   GET /server_info
  requests.json         the /generate answers (text, meta_info) and the counters around them
  families.txt          `name type` of every sglang: family on the after page
The traffic is bounded and greedy (8 requests × 32 tokens, 4 at a time, harness.PROMPTS),
so counters are the same run after run on the same build. This machine's model directory
is replaced by <models>; everything else (request ids, timestamps, the server's random seed,
free-memory figures) is kept as SGLang sent it.
A summary (ready seconds, pool, counters per arm) goes to stdout and <out>/captures-summary.json.

After a refresh run the unit tests and look at the diff before committing it.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import harness  # noqa: E402
import sglang_live  # noqa: E402

DEFAULT_OUT = REPO / "tests" / "fixtures" / "sglang" / sglang_live.SGLANG_VERSION
REQUESTS = 8
MAX_NEW_TOKENS = 32


def scrub(text: str, models: Path) -> str:
    return text.replace(str(models), "<models>")


def families(page: str) -> str:
    out = []
    for line in page.splitlines():
        if line.startswith("# TYPE sglang:"):
            _, _, name, kind = line.split(" ", 3)
            out.append(f"{name} {kind}")
    return "\n".join(sorted(out)) + "\n"


def counters_dict(c: sglang_live.SGLangCounters) -> dict[str, Any]:
    return {k: getattr(c, k) for k in c.__dataclass_fields__}


def record_arm(arm: str, python: Path, models: Path, out: Path, log_dir: Path) -> dict[str, Any]:
    d = out / arm
    d.mkdir(parents=True, exist_ok=True)
    eng = sglang_live.start_sglang(arm, models, python, log_dir)
    try:
        eng.wait_ready(420)
        before_page = eng.metrics_text()
        info_before = eng.server_info()
        before = sglang_live.SGLangCounters.parse(before_page)
        during: list[str] = []
        result: list[list[dict[str, Any]]] = []

        def send() -> None:
            result.append(eng.generate_traffic(REQUESTS, MAX_NEW_TOKENS))

        t = threading.Thread(target=send)
        t0 = time.time()
        t.start()
        time.sleep(1.0)
        if t.is_alive():
            during.append(eng.metrics_text())
        t.join()
        t1 = time.time()
        after_page = eng.metrics_text()
        info_after = eng.server_info()
        after = sglang_live.SGLangCounters.parse(after_page)
        responses = result[0]
        (d / "metrics-before.txt").write_text(scrub(before_page, models))
        (d / "metrics-during.txt").write_text(scrub(during[0] if during else after_page, models))
        (d / "metrics-after.txt").write_text(scrub(after_page, models))
        (d / "server_info-before.json").write_text(scrub(json.dumps(info_before, indent=1, sort_keys=True), models)
                                                   + "\n")
        (d / "server_info-after.json").write_text(scrub(json.dumps(info_after, indent=1, sort_keys=True), models)
                                                  + "\n")
        doc = {"source": f"real SGLang {sglang_live.SGLANG_VERSION} on CPU, tools/refresh_sglang_captures.py, "
                         f"arm {arm}", "launch": [scrub(a, models) for a in eng.launch],
               "requests": REQUESTS, "max_new_tokens": MAX_NEW_TOKENS, "seconds": round(t1 - t0, 3),
               "counters": {"before": counters_dict(before), "after": counters_dict(after)},
               "responses": [{"prompt": r["prompt"], "text": r["text"], "meta_info": r["meta_info"]}
                             for r in responses]}
        (d / "requests.json").write_text(json.dumps(doc, indent=1) + "\n")
        (d / "families.txt").write_text(families(after_page))
        acc = sglang_live.acceptance_between(before, after)
        return {"ready_seconds": eng.ready_seconds, "pool_tokens": after.max_total_num_tokens,
                "verify_calls": acc["drafts"] if acc else None, "L": acc["L"] if acc else None,
                "generation_tokens": after.generation_tokens - (before.generation_tokens or 0),
                "during_captured": bool(during)}
    finally:
        eng.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--arms", default=",".join(sglang_live.ARMS))
    args = p.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    unknown = [a for a in arms if a not in sglang_live.ARMS]
    if unknown:
        print(f"refresh_sglang_captures: unknown arm(s) {', '.join(unknown)}; known: {', '.join(sglang_live.ARMS)}",
              file=sys.stderr)
        return 3
    python = sglang_live.ensure_sglang()
    models = harness.ensure_models(python)
    log_dir = harness.cache_root() / "logs"
    summary: dict[str, Any] = {"engine": "sglang", "version": sglang_live.SGLANG_VERSION, "models": "<models>",
                               "arms": {}}
    for arm in arms:
        harness.log(f"refresh_sglang_captures: recording {arm}")
        summary["arms"][arm] = record_arm(arm, python, models, args.out, log_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(summary, indent=1, sort_keys=True) + "\n"
    (args.out / "captures-summary.json").write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
