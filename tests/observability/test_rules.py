"""The shipped rules: promtool-clean, unit-tested, and each alert documented and wired to the runbook."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from exporter import names
from tests.observability.sources import (
    ALLOWED_LABELS,
    RULE_TESTS,
    RULES,
    RUNBOOK,
    RUNBOOK_URL,
    accelerate,
    label_names,
    load_rules,
    selectors,
)

RULE_LIST = load_rules()
ALERTS = [r for r in RULE_LIST if r.kind == "alert"]
RECORDS = [r for r in RULE_LIST if r.kind == "record"]
TEST_FILES = sorted(RULE_TESTS.glob("*.yaml"))
# Their value is always 0 (`up == 0`): the description names the target instead.
UP_DOWN_ALERTS = {"SpecgateExporterDown", "SpecgateEngineDown"}


def _run(cmd: list[str | Path]) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120)


def test_promtool_check_rules(promtool: Path) -> None:
    r = _run([promtool, "check", "rules", RULES])
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(RULE_LIST)} rules found" in r.stdout


def test_promtool_unit_tests(promtool: Path) -> None:
    assert TEST_FILES, "no promtool unit tests in deploy/prometheus/tests"
    r = _run([promtool, "test", "rules", *TEST_FILES])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("SUCCESS") == len(TEST_FILES), r.stdout


def test_accelerated_copy_is_valid(promtool: Path, tmp_path: Path) -> None:
    """The live test's time-compressed copy of the rules must still load."""
    fast = tmp_path / "fast.yaml"
    fast.write_text(accelerate(RULES.read_text()))
    r = _run([promtool, "check", "rules", fast])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[60s]" in fast.read_text() and "[1h]" not in fast.read_text()


def _unit_tested_alerts() -> dict[str, dict[str, int]]:
    """alertname -> {'fires': n, 'quiet': m} over every alert_rule_test case."""
    import yaml

    seen: dict[str, dict[str, int]] = {}
    for f in TEST_FILES:
        for t in yaml.safe_load(f.read_text())["tests"]:
            for case in t.get("alert_rule_test", []):
                c = seen.setdefault(case["alertname"], {"fires": 0, "quiet": 0})
                c["fires" if case.get("exp_alerts") else "quiet"] += 1
    return seen


@pytest.mark.parametrize("alert", ALERTS, ids=lambda r: r.name)
def test_every_alert_has_a_firing_and_a_quiet_unit_test(alert) -> None:
    cases = _unit_tested_alerts().get(alert.name)
    assert cases is not None, f"{alert.name} has no promtool unit test"
    assert cases["fires"] >= 1 and cases["quiet"] >= 1, cases


def test_each_severity_of_a_shared_alert_name_has_a_firing_unit_test() -> None:
    """An alert name carried by rules of different severities (SpecgateSpeculationOff: critical, or warning where
    the declared schedule sets k = 0) needs a firing case per severity: one per name would leave one rule
    untested. Each severity must also say something different (its own summary)."""
    import yaml

    by_name: dict[str, set[str]] = {}
    for a in ALERTS:
        by_name.setdefault(a.name, set()).add(a.raw["labels"]["severity"])
    shared = {n: sev for n, sev in by_name.items() if len([a for a in ALERTS if a.name == n]) > 1}
    assert "SpecgateSpeculationOff" in shared and shared["SpecgateSpeculationOff"] == {"critical", "warning"}
    fired: dict[str, set[str]] = {}
    for f in TEST_FILES:
        for t in yaml.safe_load(f.read_text())["tests"]:
            for case in t.get("alert_rule_test", []):
                for exp in case.get("exp_alerts") or []:
                    fired.setdefault(case["alertname"], set()).add(exp["exp_labels"]["severity"])
    for name, severities in shared.items():
        assert severities <= fired.get(name, set()), f"{name}: no firing unit test for {severities - fired[name]}"
        summaries = {a.raw["annotations"]["summary"] for a in ALERTS if a.name == name}
        assert len(summaries) == len(severities), name


@pytest.mark.parametrize("alert", ALERTS, ids=lambda r: r.name)
def test_alert_metadata(alert) -> None:
    raw = alert.raw
    assert raw["labels"]["severity"] in ("critical", "warning")
    ann = raw["annotations"]
    assert ann["summary"].strip()
    assert "{{ $labels." in ann["description"]
    if alert.name not in UP_DOWN_ALERTS:
        assert "{{ $value" in ann["description"]
    assert ann["runbook_url"] == RUNBOOK_URL + alert.name.lower()


def test_runbook_has_a_section_per_alert() -> None:
    headings = re.findall(r"^## (\S+)\s*$", RUNBOOK.read_text(), flags=re.M)
    # one section per alert name: SpecgateSpeculationOff is two rules (critical, warning) under one name
    assert sorted(headings) == sorted({a.name for a in ALERTS})
    text = RUNBOOK.read_text()
    for a in ALERTS:
        section = text.split(f"## {a.name}\n", 1)[1].split("\n## ", 1)[0]
        assert "**Meaning.**" in section and "**First three checks.**" in section, a.name
        assert re.search(r"^1\. .*^2\. .*^3\. ", section, flags=re.M | re.S), f"{a.name}: three numbered checks"


def test_recording_rule_names_follow_level_metric_operation() -> None:
    for r in RECORDS:
        parts = r.name.split(":")
        assert len(parts) == 3 and all(parts), r.name
    recorded = {r.name for r in RECORDS}
    for w in names.BURN_WINDOWS:
        assert names.windows_below_slo_rule(w) in recorded


@pytest.mark.parametrize("rule", RULE_LIST, ids=lambda r: r.name)
def test_rules_use_only_contract_series_and_labels(rule) -> None:
    records = {r.name for r in RECORDS}
    for sel in selectors(rule.expr):
        if sel.name is None:
            continue
        assert sel.name in names.SERIES | names.FOREIGN_SERIES | records | {"up"}, \
            f"{rule.name}: unknown series {sel.name}"
    assert label_names(rule.expr) <= ALLOWED_LABELS, label_names(rule.expr) - ALLOWED_LABELS


def test_objective_is_one_configurable_constant() -> None:
    """Burn-rate alerts read the objective from one recording rule, not from literals."""
    objective = [r for r in RECORDS if r.name == names.SLO_OBJECTIVE_RULE]
    assert len(objective) == 1 and objective[0].expr.strip() == "vector(0.99)"
    for a in ALERTS:
        if "windows_below_slo" in a.expr:
            assert a.expr.count(names.SLO_OBJECTIVE_RULE) == 2, a.name
            assert "0.99" not in a.expr and "0.01" not in a.expr, a.name


def test_acceptance_ratios_are_guarded_against_no_traffic() -> None:
    """Every acceptance ratio divides by a rate filtered with `> 0`: absent without traffic, never NaN."""
    for r in RECORDS:
        if "ratio" in r.name.split(":")[2] and "objective" not in r.name:
            assert re.search(r"\)\)\s*>\s*0\)", r.expr), r.name
            assert "rate(" in r.expr and "delta(" not in r.expr and "idelta(" not in r.expr, r.name
