"""deploy/mixin (jsonnet, PyPI `jsonnet`): its defaults render exactly the committed rule file and dashboard, and
its _config really parameterises them (selectors, SLO objective, burn factors), still promtool-clean."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import _jsonnet
import pytest
import yaml

from exporter import names
from tests.observability.sources import (
    DASHBOARD,
    REPO,
    RULES,
    load_rules,
    render_rules,
    rule_groups,
    selectors,
)

MIXIN = REPO / "deploy" / "mixin"


def _eval(snippet: str) -> object:
    return json.loads(_jsonnet.evaluate_snippet("test.jsonnet", snippet, jpathdir=str(MIXIN)))


def _rules_text(config: str = "{}") -> str:
    return _eval(f"(import 'lib/render.libsonnet').rulesFile((import 'mixin.libsonnet') + {{ _config+:: {config} }})")


def test_rules_file_is_the_rendered_mixin() -> None:
    rendered = json.loads(_jsonnet.evaluate_file(str(MIXIN / "rules.jsonnet")))
    assert rendered == RULES.read_text(), (
        "deploy/prometheus/specgate-rules.yaml differs from the mixin: edit deploy/mixin, then "
        "`make mixin chart-sync`")


def test_yaml_writer_is_faithful() -> None:
    """The mixin's own YAML writer (plain, folded and literal scalars) reads back as the jsonnet value."""
    value = _eval("local m = import 'mixin.libsonnet'; { groups: m.prometheusRules.groups + m.prometheusAlerts.groups }")
    assert yaml.safe_load(RULES.read_text()) == value


def test_dashboard_is_the_rendered_mixin() -> None:
    rendered = json.loads(_jsonnet.evaluate_file(str(MIXIN / "dashboards.jsonnet")))
    assert set(rendered) == {"specgate.json"}
    assert rendered["specgate.json"] == json.loads(DASHBOARD.read_text())


def test_mixin_dashboard_copy_is_the_generated_one() -> None:
    copy = MIXIN / "dashboards" / "specgate.json"
    assert copy.read_bytes() == DASHBOARD.read_bytes(), f"{copy.relative_to(REPO)} is stale: run `make chart-sync`"


def test_mixin_has_the_conventional_fields() -> None:
    m = _eval("local m = import 'mixin.libsonnet'; { [k]: std.objectHasAll(m, k) for k in "
              "['_config', 'prometheusRules', 'prometheusAlerts', 'grafanaDashboards'] }")
    assert all(m.values()), m


def test_selector_reaches_every_specgate_selector(promtool: Path, tmp_path: Path) -> None:
    text = _rules_text("{ specgateSelector: 'cluster=\"eu-1\"' }")
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    records = set(names.RECORDED)
    seen = 0
    for rule in load_rules(path):
        for sel in selectors(rule.expr):
            if sel.name is None or sel.name in records or not sel.name.startswith("specgate_"):
                continue
            matchers = {(m.name, m.value) for m in sel.matchers.matchers}
            assert ("cluster", "eu-1") in matchers, f"{rule.name}: {sel.name} lacks the selector"
            seen += 1
    assert seen >= 20
    r = subprocess.run([str(promtool), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_objective_and_burn_factors_come_from_config(promtool: Path, tmp_path: Path) -> None:
    text = _rules_text("{ sloObjective: 0.995, burnRates: [super.burnRates[0] + { factor: 10 }, super.burnRates[1]] }")
    rules = {r.name: r for r in load_rules_from_text(text, tmp_path)}
    assert rules[names.SLO_OBJECTIVE_RULE].expr == "vector(0.995)"
    fast = rules["SpecgateAcceptanceSLOFastBurn"]
    assert fast.expr.count("(10 * (1 - global:specgate_spec_window_slo_objective:ratio))") == 2
    assert "10x the error budget" in fast.raw["annotations"]["description"]
    assert "at most 0.5% of batch windows" in text
    r = subprocess.run([str(promtool), "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_burn_window_without_its_recording_rule_is_refused() -> None:
    with pytest.raises(RuntimeError, match="every burn-rate window must be in _config.sloWindows"):
        _rules_text("{ burnRates: [super.burnRates[0] + { long: '3h' }] }")


def test_dashboard_config_overrides() -> None:
    d = _eval("((import 'mixin.libsonnet') + { _config+:: { dashboardUid: 'mine', dashboardTags: ['x'] } })"
              ".grafanaDashboards['specgate.json']")
    assert d["uid"] == "mine" and d["tags"] == ["x"]
    assert d["panels"] == json.loads(DASHBOARD.read_text())["panels"]


def load_rules_from_text(text: str, tmp_path: Path):
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return load_rules(path)


def test_speculation_off_timings_come_from_config(promtool: Path, tmp_path: Path) -> None:
    """What the live test and the e2e do: render_rules / rule_groups shorten SpecgateSpeculationOff's window and
    `for:` through the mixin's _config (both severities), the shipped defaults stay minutes, and a key the mixin
    does not have is refused."""
    shipped = [r for r in load_rules() if r.name == "SpecgateSpeculationOff"]
    assert [(r.raw["for"], r.raw["labels"]["severity"]) for r in shipped] == [("10m", "critical"), ("10m", "warning")]
    assert all("rate(specgate_spec_drafts_total[5m]) == 0" in r.expr for r in shipped)
    fast = {"speculationOffWindow": "4s", "speculationOffFor": "5s", "speculationShallowFor": "7s"}
    text = render_rules(fast)
    assert yaml.safe_load(text) == rule_groups(fast)
    rules = load_rules_from_text(text, tmp_path)
    off = [r for r in rules if r.name == "SpecgateSpeculationOff"]
    assert [r.raw["for"] for r in off] == ["5s", "5s"]
    assert all("rate(specgate_spec_drafts_total[4s]) == 0" in r.expr for r in off)
    assert "over the last 4 seconds (0 drafts/s), for 5 seconds" in off[0].raw["annotations"]["description"]
    assert next(r for r in rules if r.name == "SpecgateSpeculationShallow").raw["for"] == "7s"
    assert "# specgate recording and alerting rules." in text  # the file's header, as make mixin writes it
    r = subprocess.run([str(promtool), "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    with pytest.raises(ValueError, match="speculationOfFor"):
        rule_groups({"speculationOfFor": "5s"})
