"""Issue 10 details below the CLI: restart status unknown, special tokens, general availability, drafter change.

The exporter windows document has the real `/api/v1/windows` shape. (Prometheus' "no restarts series is
unknown" rule lives with the per-pod fleet judgement, gate.checks.acceptance.fleet_rule, and is tested with the
fleet: tests/gate/evidence/test_fleet*.py, tests/gate/checks/acceptance/test_fleet_judged.py.)
"""

from __future__ import annotations

import json
from typing import Any

from gate.bill.budget import compute_budget
from gate.bill.facts import artifact_facts
from gate.checks import codesign
from gate.checks.base import CheckContext
from gate.evidence.base import AcceptanceWindow, MetricsEvidence
from gate.evidence.previous import PreviousRecord, compare
from gate.evidence.sidecar import windows_document
from gate.plan.model import plan_from_dict
from gate.status import Status
from tests.gate.helpers import CONFIGS, tiny_plan


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


def test_codesign_command_not_checked_exits_inconclusive(tmp_path: Any) -> None:
    """`specgate codesign` on a DFlash drafter whose hidden_size was removed: not checked → exit 2, not 0."""
    from gate.cli import main

    cfg = json.loads((CONFIGS / "dflash__specforge__qwen3-8b-dflash.json").read_text(encoding="utf-8"))
    cfg.pop("hidden_size", None)
    (tmp_path / "d.json").write_text(json.dumps(cfg), encoding="utf-8")
    target = str(CONFIGS / "target-gqa__Qwen__Qwen3-8B.json")
    assert main(["codesign", target, str(tmp_path / "d.json"), "--engine", "sglang", "--format", "json"]) == 2
    real = str(CONFIGS / "dflash__specforge__qwen3-8b-dflash.json")  # control: the real pair is checked
    assert main(["codesign", target, real, "--engine", "sglang", "--format", "json"]) in (0, 1)


def test_implausible_pod_start_is_not_a_measurement() -> None:
    """Kubernetes evidence goes through plausibility too: a negative cold start (clock skew between the pod's
    scheduled and ready times) is not measured; the reported 40.7 s then decides, and the reason says why."""
    from gate.checks import staging
    from gate.evidence.gather import ClusterEvidence
    from gate.evidence.pods import KubeEvidence

    data = tiny_plan("draft")
    data["evidence"] = {"kubernetes": {"namespace": "llm", "selector": "app=x"},
                        "reported": {"startup_seconds": {"value": 40.7, "source": "reference ready time"}}}
    bad = ClusterEvidence(found=KubeEvidence("llm", "app=x", staging_seconds=-12.0, reason="1 pod"))
    r = staging.check(_ctx(data, cluster=bad))
    assert "reported: reference ready time" in r.reason and "startup seconds -12 must be > 0" in r.reason
    good = ClusterEvidence(found=KubeEvidence("llm", "app=x", staging_seconds=30.0, reason="1 pod"))
    assert "observed: pod status in llm" in staging.check(_ctx(data, cluster=good)).reason  # control


def test_absurd_depth_is_invalid() -> None:
    """k bounds every acceptance length (L ≤ 1 + k): 99,999,999,999 draft tokens per round is a typo, refused."""
    import pytest

    from gate.plan.model import PlanError

    data = tiny_plan("draft")
    data["engine"]["speculative"]["num_speculative_tokens"] = 99_999_999_999
    with pytest.raises(PlanError, match="num_speculative_tokens: Input should be less than or equal to 64"):
        plan_from_dict(data)
