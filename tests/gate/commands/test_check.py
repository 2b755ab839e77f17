"""`specgate check` as a process: exit codes, JSON-only stdout, --out, --record, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.gate.helpers import CAPTURES, PLANS, REPO, serve, tiny_plan, write_plan


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gate.cli", "check", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def test_example_plans_exit_codes_and_json_only() -> None:
    for name, code in (("seed000-qwen38-flash-next-nextn", 1), ("seed002-ling-3.0-flash-dspark", 2),
                       ("seed004-qwen3.6-35b-a3b-mtp", 0)):
        p = _run("--plan", str(PLANS / f"{name}.yaml"), "--format", "json")
        assert p.returncode == code, p.stderr
        doc = json.loads(p.stdout)  # stdout is only the JSON document
        assert doc["decision"] == {0: "pass", 1: "fail", 2: "inconclusive"}[code]


def test_allow_inconclusive_exit_zero_and_says_so() -> None:
    p = _run("--plan", str(PLANS / "seed002-ling-3.0-flash-dspark.yaml"), "--allow-inconclusive")
    assert p.returncode == 0
    assert "inconclusive allowed by --allow-inconclusive" in p.stdout
    p = _run("--plan", str(PLANS / "seed000-qwen38-flash-next-nextn.yaml"), "--allow-inconclusive")
    assert p.returncode == 1  # a fail stays a fail


def test_out_and_record(tmp_path: Path) -> None:
    out, rec = tmp_path / "report.xml", tmp_path / "record.json"
    p = _run("--plan", str(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml"), "--format", "junit", "--out", str(out),
             "--record", str(rec))
    assert p.returncode == 0 and p.stdout == ""
    assert out.read_text().startswith("<?xml") and "report in" in p.stderr
    record = json.loads(rec.read_text())
    assert record["kv_pool_tokens"] == 343_699 and record["engine"] == "vllm" and "missing" in record


def test_metrics_files_on_the_command_line(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    p = _run("--plan", str(plan), "--metrics", str(CAPTURES / "metrics-draft-before.txt"),
             str(CAPTURES / "metrics-draft-after.txt"), "--format", "json")
    assert p.returncode == 1
    assert json.loads(p.stdout)["checks"]["acceptance"]["status"] == "fail"  # L 1.0 < 2.0


def test_plan_typo_is_one_line_exit_3(tmp_path: Path) -> None:
    data = tiny_plan("draft")
    data["drafter"]["kv_scope"] = "blocks"
    p = _run("--plan", str(write_plan(tmp_path / "p.yaml", data)), "--format", "json")
    assert p.returncode == 3 and p.stdout == ""
    assert p.stderr.strip().endswith("drafter.kv_scope: must be one of full|window|block")
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


def test_missing_config_and_missing_plan_exit_3(tmp_path: Path) -> None:
    data = tiny_plan("draft")
    data["target"]["config"] = "does/not/exist.json"
    p = _run("--plan", str(write_plan(tmp_path / "p.yaml", data)))
    assert p.returncode == 3 and "config file not found" in p.stderr and p.stderr.count("\n") == 1
    p = _run("--plan", str(tmp_path / "nope.yaml"))
    assert p.returncode == 3 and "plan file not found" in p.stderr and "Traceback" not in p.stderr


def test_exporter_500_post_is_inconclusive_exit_2(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draftself"))
    with serve(lambda path: (500, "text/plain", b"boom")) as url:
        p = _run("--plan", str(plan), "--phase", "post", "--metrics", url, "--format", "json")
    assert p.returncode == 2, p.stderr
    doc = json.loads(p.stdout)
    assert doc["checks"]["acceptance"]["status"] == "inconclusive" and "Traceback" not in p.stderr


def test_prometheus_timeout_is_inconclusive_exit_2(tmp_path: Path) -> None:
    data = tiny_plan("draftself")
    data["evidence"] = {"prometheus": {"timeout_seconds": 0.5}}
    plan = write_plan(tmp_path / "p.yaml", data)
    with serve(lambda path: (200, "application/json", b"{}"), delay=3.0) as url:
        p = _run("--plan", str(plan), "--phase", "post", "--prometheus", url)
    assert p.returncode == 2
    assert "did not answer within 0.5s" in p.stdout and "Traceback" not in p.stderr
