"""The committed Grafana dashboard: generated, deterministic, and built from parseable contract queries."""

from __future__ import annotations

import subprocess
import sys

import promql_parser
import pytest

from tests.observability.sources import (
    ALLOWED_LABELS,
    DASHBOARD,
    EXPORTER_SERIES,
    GENERATOR,
    REPO,
    dashboard_queries,
    label_names,
    load_dashboard,
    load_rules,
    plain_promql,
    selectors,
    variable_selectors,
)

DASH = load_dashboard()
QUERIES = dashboard_queries(DASH)
RECORDS = {r.name for r in load_rules() if r.kind == "record"}


def _generate() -> str:
    r = subprocess.run([sys.executable, str(GENERATOR), "--stdout"], capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_committed_dashboard_equals_generator_output() -> None:
    assert DASHBOARD.read_text() == _generate(), "dashboards/specgate.json is stale: run python dashboards/generate.py"


def test_generator_is_deterministic() -> None:
    assert _generate() == _generate()


def test_generator_check_mode_detects_drift(tmp_path) -> None:
    """--check passes on the committed file and fails on a hand-edited copy."""
    def check(path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(GENERATOR), "--check", "--out", str(path)], capture_output=True,
                              text=True, cwd=REPO, timeout=120)

    assert check(DASHBOARD).returncode == 0
    edited = tmp_path / "specgate.json"
    edited.write_text(DASHBOARD.read_text().replace('"No traffic"', '"0"', 1))
    r = check(edited)
    assert r.returncode == 1 and "stale" in r.stderr


def test_sdk_version_is_the_pinned_one() -> None:
    from importlib.metadata import version

    assert version("grafana-foundation-sdk") == "1769699379!11.6.0"


def test_rows_and_variables() -> None:
    rows = [p["title"] for p in DASH["panels"] if p["type"] == "row"]
    assert [r.split(":")[0].split(" ")[0] for r in rows] == ["Memory", "Latency", "Deploy", "Per"]
    names = [v["name"] for v in DASH["templating"]["list"]]
    assert {"namespace", "model", "engine"} <= set(names)
    for v in DASH["templating"]["list"]:
        if v["type"] == "query":
            assert v["includeAll"] and v["allValue"] == ".*", v["name"]


def _panel(title_start: str) -> dict:
    found = [p for p in DASH["panels"] if p["title"].startswith(title_start)]
    assert len(found) == 1, title_start
    return found[0]


@pytest.mark.parametrize("title", [
    "Acceptance length L per window", "Acceptance length L (5m", "Acceptance rate", "Per-position acceptance",
    "Batch windows below target", "Per-batch acceptance length", "Verify-cycle time", "Decode rate",
    "Acceptance length by engine", "Speculation depth",
])
def test_acceptance_panels_say_no_traffic_instead_of_zero(title: str) -> None:
    defaults = _panel(title)["fieldConfig"]["defaults"]
    assert defaults["noValue"] == "No traffic"
    special = [m for m in defaults["mappings"] if m["type"] == "special"]
    assert special and special[0]["options"]["match"] == "null+nan"
    assert special[0]["options"]["result"]["text"] == "No traffic"


def test_panels_cover_the_issue() -> None:
    exprs = " ".join(q.expr for q in QUERIES)
    for needle in ('pool="target"', 'pool="drafter"', "specgate_kv_pool_configured_tokens", "specgate_kv_usage_ratio",
                   "specgate_spec_acceptance_length", "specgate_acceptance_slo_target", "specgate_spec_acceptance_rate",
                   "specgate_spec_position_acceptance_rate", "specgate_ttft_seconds", "specgate_verify_cycle_seconds",
                   "specgate_decode_tokens_per_second", "specgate_engine_ready_seconds",
                   "specgate_gate_decisions_total", "specgate_gate_line_status",
                   "specgate_spec_depth_mean", "specgate_spec_depth_max", "specgate_spec_depth_scheduled",
                   "model:specgate_spec_depth_mean:ratio_rate5m"):
        assert needle in exprs, needle
    slo = _panel("Acceptance length L per window")
    assert any("specgate_acceptance_slo_target" in t["expr"] for t in slo["targets"])
    # issue 22: mean and maximum depth in the row that shows L, the scheduled k beside them
    depth = _panel("Speculation depth")
    row = [p["title"] for p in DASH["panels"]]
    assert row.index("Speculation depth: mean and maximum") > row.index("Acceptance length L (5m, from counters)")
    assert row.index("Speculation depth: mean and maximum") < next(i for i, p in enumerate(DASH["panels"])
                                                                  if p["type"] == "row" and p["title"].startswith("Deploy"))
    assert [t["legendFormat"].split(" {{")[0] for t in depth["targets"]] == ["mean", "mean", "max k", "scheduled k"]


@pytest.mark.parametrize("q", QUERIES, ids=lambda q: f"{q.panel}/{q.ref_id}")
def test_dashboard_query_parses_and_uses_contract_names(q) -> None:
    expr = plain_promql(q.expr)
    promql_parser.parse(expr)
    for sel in selectors(expr):
        assert sel.name in EXPORTER_SERIES | RECORDS, f"unknown series {sel.name}"
    assert label_names(expr) <= ALLOWED_LABELS, label_names(expr) - ALLOWED_LABELS
    if any(s.name in EXPORTER_SERIES for s in selectors(expr)):
        assert 'namespace=~"$namespace"' in q.expr, "every panel follows the namespace variable"


def test_variable_selectors_parse() -> None:
    sels = variable_selectors(DASH)
    assert set(sels) == {"namespace", "model", "engine"}
    for s in sels.values():
        promql_parser.parse(plain_promql(s))


def test_panel_ids_are_unique() -> None:
    ids = [p["id"] for p in DASH["panels"]]
    assert len(ids) == len(set(ids))
