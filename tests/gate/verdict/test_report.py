"""Report formats: text table, JSON (DESIGN.md check shape), JUnit (one testcase per line), Markdown."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from gate.checks import LINES
from gate.plan.model import load_plan
from gate.verdict.evaluate import evaluate
from gate.verdict.report import render
from tests.gate.helpers import PLANS


def _v(name: str, allow: bool = False):
    return evaluate(load_plan(PLANS / f"{name}.yaml"), allow_inconclusive=allow)


def test_json_shape() -> None:
    doc = json.loads(render(_v("seed000-qwen38-flash-next-nextn"), "json"))
    assert doc["decision"] == "fail" and doc["phase"] == "pre"
    assert list(doc["checks"]) == list(LINES)
    for r in doc["checks"].values():
        assert set(r) == {"status", "reason", "values"}
    assert "missing" in doc["run_record"]


def test_text_table_one_row_per_line() -> None:
    text = render(_v("seed004-qwen3.6-35b-a3b-mtp"), "text")
    rows = [ln.split()[0:2] for ln in text.splitlines() if ln.split() and ln.split()[0] in LINES]
    assert rows == [["artifacts", "n/a"], ["kv_pool", "pass"], ["acceptance", "pass"], ["staging", "n/a"],
                    ["codesign", "pass"]]
    assert "decision: PASS (exit 0)" in text


def test_junit_one_testcase_per_line() -> None:
    root = ET.fromstring(render(_v("seed000-qwen38-flash-next-nextn"), "junit"))
    suite = root.find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == list(LINES)
    assert cases["kv_pool"].find("failure") is not None
    assert cases["codesign"].find("error") is not None  # inconclusive blocks
    assert cases["artifacts"].find("skipped") is not None  # n/a
    assert cases["acceptance"].find("failure") is not None  # no target before rollout: fail (issue 10)
    assert suite.get("failures") == "2" and suite.get("errors") == "1"


def test_allow_inconclusive_is_said_in_every_format() -> None:
    v = _v("seed002-ling-3.0-flash-dspark", allow=True)
    assert v.exit_code == 0
    assert "allowed by --allow-inconclusive" in render(v, "text")
    assert "allowed by --allow-inconclusive" in render(v, "markdown")
    root = ET.fromstring(render(v, "junit"))
    assert root.get("errors") == "0" and "allow-inconclusive" in render(v, "junit")
    assert json.loads(render(v, "json"))["allow_inconclusive"] is True


def test_markdown_table() -> None:
    md = render(_v("seed000-qwen38-flash-next-nextn"), "markdown")
    assert md.startswith("### specgate: **fail**")
    assert "| kv_pool | ❌ fail |" in md
    rows = [ln.split("|")[1].strip() for ln in md.splitlines() if ln.startswith("| ")]
    assert rows == ["line", *LINES]
