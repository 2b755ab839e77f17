"""Issue 10 details below the CLI: restart status unknown, special tokens, general availability, drafter change.

Prometheus answers here come from a loopback fake speaking the real HTTP API's JSON (`/api/v1/query_range`
matrix, `/api/v1/query` vector); the exporter windows document has the real `/api/v1/windows` shape.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qs, urlparse

from gate.checks import codesign
from gate.checks.base import CheckContext
from gate.evidence import prometheus as prom
from gate.evidence.base import AcceptanceWindow, MetricsEvidence
from gate.evidence.sidecar import windows_document
from gate.model.budget import compute_budget
from gate.model.facts import artifact_facts
from gate.plan import PrometheusSource, plan_from_dict
from gate.record_previous import PreviousRecord, compare
from gate.verdict import Status
from tests.gate.helpers import CONFIGS, serve, tiny_plan


def _prom(with_restarts: bool):
    now = time.time()
    labels = {"pod": "p", "model": "tiny", "rank": "0", "engine": "vllm"}

    def matrix(value: float) -> dict[str, Any]:
        return {"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": labels, "values": [[now - 60, str(value)], [now, str(value)]]}]}}

    def route(path: str) -> tuple[int, str, bytes]:
        q = parse_qs(urlparse(path).query).get("query", [""])[0]
        if "query_range" in path:
            if "restarts" in q:
                doc = matrix(0.0) if with_restarts else {"status": "success",
                                                          "data": {"resultType": "matrix", "result": []}}
            elif "accepted" in q:
                doc = matrix(200.0)
            elif "draft_tokens" in q:
                doc = matrix(300.0)
            else:
                doc = matrix(100.0)
        else:
            doc = {"status": "success", "data": {"resultType": "vector", "result": [
                {"metric": labels, "value": [now, "1"]}]}} if "engine_up" in q else {
                "status": "success", "data": {"resultType": "vector", "result": []}}
        return 200, "application/json", json.dumps(doc).encode()

    return serve(route)


def test_prometheus_without_restarts_series_is_unknown_not_no_restart() -> None:
    with _prom(with_restarts=False) as url:
        ev = prom.collect(PrometheusSource(), url, 60, 600, 1)
    assert ev.windows and all(w.reset is None for w in ev.windows)
    with _prom(with_restarts=True) as url:  # control: the series is there and says 0
        ev = prom.collect(PrometheusSource(), url, 60, 600, 1)
    assert ev.windows and all(w.reset is False for w in ev.windows) and ev.engine_up is True and ev.live


def test_sidecar_window_without_reset_flag_is_unknown() -> None:
    doc = {"windows": [{"model": "tiny", "rank": "0", "start": 1.0, "end": 2.0, "drafts": 10,
                        "acceptance_length": 2.0, "acceptance_rate": 0.5}]}
    assert windows_document(doc, "exporter x", 1).windows[0].reset is None
    doc["windows"][0]["reset"] = False
    assert windows_document(doc, "exporter x", 1).windows[0].reset is False


def _ctx(data: dict[str, Any], **over: Any) -> CheckContext:
    plan = plan_from_dict(data)
    facts = artifact_facts(plan)
    return CheckContext(plan=plan, phase="pre", facts=facts, budget=compute_budget(plan, facts), **over)


def test_special_token_mismatch_warns(tmp_path: Any) -> None:
    cfg = json.loads((CONFIGS / "tiny-draft.json").read_text(encoding="utf-8"))
    cfg["eos_token_id"] = 7  # the target's is 2
    (tmp_path / "d.json").write_text(json.dumps(cfg), encoding="utf-8")
    data = tiny_plan("draft")
    data["drafter"]["config"] = str(tmp_path / "d.json")
    r = codesign.check(_ctx(data))
    assert r.status is Status.WARN and "eos_token_id drafter [7] vs target [2]" in r.reason
    assert codesign.check(_ctx(tiny_plan("draft"))).status is Status.PASS  # control: the real tiny pair


def test_old_sglang_warns_for_generally_available_methods() -> None:
    data: dict[str, Any] = {"name": "x", "target": {"name": "deepseek-ai/DeepSeek-V3",
                                    "config": str(CONFIGS / "target-mla-mtp__deepseek-ai__DeepSeek-V3.json")},
            "engine": {"kind": "sglang", "version": "0.4.9", "tp": 1,
                       "speculative": {"method": "nextn", "num_steps": 1, "num_draft_tokens": 2}},
            "slo": {"target_acceptance_length": 1.5}}
    r = codesign.check(_ctx(data))
    assert r.status is Status.WARN and "predates nextn's general availability in sglang 0.5.18" in r.reason
    data["engine"]["version"] = "0.5.23"
    assert codesign.check(_ctx(data)).status is Status.PASS


def test_drafter_change_says_the_budget_was_recomputed_and_target_change_needs_new_windows() -> None:
    prev = PreviousRecord("rec.json", "p", "r1", "d0", "pass", 1000.0)
    r = codesign.check(_ctx(tiny_plan("draft"), previous=compare(prev, "r1", "r1")))
    assert r.status is Status.PASS and "drafter changed (d0 → r1): the KV budget was recomputed" in r.reason
    prev = PreviousRecord("rec.json", "p", "r0", "r1", "pass", 1000.0)
    r = codesign.check(_ctx(tiny_plan("draft"), previous=compare(prev, "r1", "r1")))
    assert r.status is Status.INCONCLUSIVE and "target changed: a new acceptance check is needed" in r.reason
    newer = AcceptanceWindow("exporter x", "tiny/0", None, 1000.0, 1060.0, False, 100.0, 3.0, 0.7)
    r = codesign.check(_ctx(tiny_plan("draft"), previous=compare(prev, "r1", "r1"),
                            metrics=MetricsEvidence(windows=[newer])))
    assert r.status is Status.PASS and "1 acceptance window(s) are newer" in r.reason
