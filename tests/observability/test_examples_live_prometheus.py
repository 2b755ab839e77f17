"""examples/plans/live/post-prometheus-ngram-tiny.yaml against the live stack's real Prometheus.

Why: the Prometheus example must work against a real Prometheus, not only a fake API. The live stack
(conftest.live_stack: replay of real vLLM-CPU captures -> exporter -> Prometheus 2.42) plays the ngram
arm first; the plan — url pointed at that Prometheus, `end` at the end of the ngram phase — is judged
in phase post from history, pod by pod (fleet.pod_labels [instance]).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from gate.plan.model import plan_from_dict
from gate.verdict.evaluate import evaluate

PLAN = Path(__file__).resolve().parents[2] / "examples" / "plans" / "live" / "post-prometheus-ngram-tiny.yaml"


def test_prometheus_example_plan_in_phase_post(live_stack) -> None:
    data = yaml.safe_load(PLAN.read_text(encoding="utf-8"))
    data["evidence"]["prometheus"]["url"] = live_stack.prom.url
    # the ngram arm plays captures 0 -> 2 (two steps); judge the history up to its end
    data["evidence"]["prometheus"]["end"] = live_stack.replay_started + 2 * live_stack.step_seconds
    v = evaluate(plan_from_dict(data, base_dir=PLAN.parent, plan_path=PLAN), phase="post")
    acc = v.checks["acceptance"]
    assert acc.status.value == "pass", acc.reason
    assert v.checks["kv_pool"].status.value == "pass", v.checks["kv_pool"].reason
    assert v.decision.value == "pass", {k: r.reason for k, r in v.checks.items()}
