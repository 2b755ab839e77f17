"""The monitoring-mixin alert conventions (https://monitoring.mixins.dev, mixtool lint; the "Alerts" section
of the kubernetes-mixin style guide): PascalCase names, a severity, a static `summary` (capitalised, ending in
a period), templating only in `description`, a runbook_url. Checked on the shipped rules file; the linter
itself is checked on alerts that break each rule."""

from __future__ import annotations

import re

import pytest

from tests.observability.sources import load_rules

ALERTS = [r for r in load_rules() if r.kind == "alert"]
SEVERITIES = {"critical", "warning", "info"}


def lint(alert: dict) -> list[str]:
    problems = []
    name = alert.get("alert", "")
    if not re.fullmatch(r"(?:[A-Z][a-z0-9]*|[A-Z]+(?=[A-Z][a-z]|$))+", name) or not name.startswith("Specgate"):
        problems.append(f"{name}: name is not PascalCase with the Specgate prefix")
    labels = alert.get("labels") or {}
    if labels.get("severity") not in SEVERITIES:
        problems.append(f"{name}: severity must be one of {sorted(SEVERITIES)}")
    for k, v in labels.items():
        if "{{" in str(v):
            problems.append(f"{name}: label {k} is templated")
    ann = alert.get("annotations") or {}
    summary = ann.get("summary", "")
    if not summary:
        problems.append(f"{name}: no summary")
    else:
        if "{{" in summary or "$labels" in summary or "$value" in summary:
            problems.append(f"{name}: summary is templated (templates belong in description)")
        if not summary[0].isupper():
            problems.append(f"{name}: summary does not start with a capital letter")
        if not summary.endswith("."):
            problems.append(f"{name}: summary does not end with a period")
    if not ann.get("description", "").strip():
        problems.append(f"{name}: no description")
    for k, v in ann.items():
        if k not in ("description",) and "{{" in str(v):
            problems.append(f"{name}: annotation {k} is templated (only description may be)")
    if not ann.get("runbook_url", "").startswith("https://"):
        problems.append(f"{name}: no runbook_url")
    return problems


@pytest.mark.parametrize("alert", ALERTS, ids=lambda r: r.name)
def test_shipped_alert_passes_the_mixin_lint(alert) -> None:
    assert lint(alert.raw) == []


def test_summaries_are_distinct() -> None:
    summaries = [a.raw["annotations"]["summary"] for a in ALERTS]
    assert len(set(summaries)) == len(summaries)


GOOD = {
    "alert": "SpecgateThingBroke",
    "labels": {"severity": "warning"},
    "annotations": {"summary": "A thing broke.", "description": "Thing {{ $labels.model }} broke.",
                    "runbook_url": "https://example.invalid/runbook#specgatethingbroke"},
}


@pytest.mark.parametrize(("patch", "expected"), [
    ({"annotations": {**GOOD["annotations"], "summary": "Thing {{ $labels.model }} broke."}}, "templated"),
    ({"annotations": {**GOOD["annotations"], "summary": "a thing broke."}}, "capital"),
    ({"annotations": {**GOOD["annotations"], "summary": "A thing broke"}}, "period"),
    ({"annotations": {**GOOD["annotations"], "runbook_url": "https://x/{{ $labels.model }}"}}, "only description"),
    ({"annotations": {k: v for k, v in GOOD["annotations"].items() if k != "description"}}, "no description"),
    ({"labels": {"severity": "page"}}, "severity"),
    ({"labels": {"severity": "warning", "team": "{{ $labels.team }}"}}, "label team is templated"),
    ({"alert": "specgate_thing_broke"}, "PascalCase"),
])
def test_lint_catches(patch: dict, expected: str) -> None:
    assert lint(GOOD) == []
    problems = lint({**GOOD, **patch})
    assert any(expected in p for p in problems), problems
