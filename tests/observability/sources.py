"""What the observability tests read: the shipped rules, the dashboard's queries, tool binaries.

Plain functions over the committed files, shared by the static tests and the live-Prometheus test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import promql_parser
import yaml

REPO = Path(__file__).resolve().parents[2]
MIXIN = REPO / "deploy" / "mixin"
RULES = REPO / "deploy" / "prometheus" / "specgate-rules.yaml"
RULE_TESTS = REPO / "deploy" / "prometheus" / "tests"
DASHBOARD = REPO / "dashboards" / "specgate.json"
GENERATOR = REPO / "dashboards" / "generate.py"
RUNBOOK = REPO / "docs" / "runbook.md"
RUNBOOK_URL = "https://github.com/specgate/specgate/blob/main/docs/runbook.md#"

# DESIGN.md "Exporter output": the series the exporter (and `specgate serve`/`controller`) expose, as
# Prometheus stores them (counters with _total, the histogram's _bucket/_sum/_count).
EXPORTER_SERIES = frozenset({
    "specgate_engine_up", "specgate_engine_scrape_duration_seconds", "specgate_engine_scrape_errors_total",
    "specgate_engine_anomalies_total",
    "specgate_engine_info", "specgate_kv_pool_tokens", "specgate_kv_pool_configured_tokens",
    "specgate_context_cap_tokens", "specgate_kv_usage_ratio", "specgate_spec_drafts_total",
    "specgate_spec_draft_tokens_total", "specgate_spec_accepted_tokens_total",
    "specgate_spec_accepted_tokens_per_position_total", "specgate_spec_acceptance_length",
    "specgate_spec_acceptance_rate", "specgate_spec_position_acceptance_rate",
    "specgate_spec_window_acceptance_length_bucket", "specgate_spec_window_acceptance_length_sum",
    "specgate_spec_window_acceptance_length_count", "specgate_spec_window_acceptance_fraction_bucket",
    "specgate_spec_window_acceptance_fraction_sum", "specgate_spec_window_acceptance_fraction_count",
    "specgate_spec_windows_total",
    "specgate_spec_windows_below_slo_total", "specgate_acceptance_slo_target", "specgate_ttft_seconds",
    "specgate_tpot_seconds", "specgate_itl_seconds",
    "specgate_decode_tokens_per_second", "specgate_verify_cycle_seconds", "specgate_engine_restarts_total",
    "specgate_engine_ready_seconds", "specgate_requests_running", "specgate_requests_waiting",
    "specgate_preemptions_total", "specgate_workload_demand_tokens", "specgate_gate_decisions_total",
    "specgate_gate_line_status", "specgate_engine_speculative_info", "specgate_kv_available_tokens",
    "specgate_kv_used_tokens", "specgate_kv_cache_memory_bytes", "specgate_weight_memory_bytes",
    "specgate_spec_block_accept_length", "specgate_spec_cap_length",
    "specgate_spec_depth_mean", "specgate_spec_depth_max", "specgate_spec_num_steps", "specgate_spec_num_draft_tokens",
    "specgate_spec_depth_varies", "specgate_spec_depth_scheduled",
    "specgate_spec_card_info", "specgate_spec_card_position_acceptance_rate", "specgate_spec_card_acceptance_length",
})
# Labels DESIGN.md gives our series, plus Prometheus' own (job, instance), the Operator's namespace and le,
# and the drafter revision the scrape config relabels from a pod label (the fleet rules, docs/scale.md).
ALLOWED_LABELS = frozenset({
    "model", "engine", "rank", "window", "pool", "quantile", "position", "reason", "version", "decision",
    "line", "status", "deployment", "le", "namespace", "job", "instance", "drafter_revision",
    "algorithm", "num_draft_tokens", "num_steps", "source", "basis", "row", "rates",
    "pod",  # the energy rules (issue 38): dcgm-exporter's GPU-to-pod label, joined with the scrape's pod
})
# Grafana variables -> values that make a query plain PromQL. `.*` is what "All" expands to.
GRAFANA_VARIABLES = {"$namespace": ".*", "$model": ".*", "$engine": ".*"}


@dataclass(frozen=True)
class Rule:
    group: str
    name: str  # record or alert name
    kind: str  # record | alert
    expr: str
    raw: dict


@dataclass(frozen=True)
class DashboardQuery:
    panel: str
    ref_id: str
    expr: str


def load_rules(path: Path = RULES) -> list[Rule]:
    doc = yaml.safe_load(path.read_text())
    out = []
    for g in doc["groups"]:
        for r in g["rules"]:
            kind = "record" if "record" in r else "alert"
            out.append(Rule(g["name"], r[kind], kind, r["expr"], r))
    return out


def load_dashboard(path: Path = DASHBOARD) -> dict:
    return json.loads(path.read_text())


def dashboard_queries(dash: dict) -> list[DashboardQuery]:
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append(DashboardQuery(p["title"], t["refId"], t["expr"]))
    return out


def variable_selectors(dash: dict) -> dict[str, str]:
    """name -> the series selector inside a `label_values(SELECTOR, label)` variable query."""
    out = {}
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", q)
        assert m, f"variable {v['name']}: not a label_values() query: {q}"
        out[v["name"]] = m.group(1)
    return out


def plain_promql(expr: str, rate_interval: str = "1m", range_: str = "3h") -> str:
    """A dashboard expression with Grafana's variables replaced by values Prometheus accepts."""
    for var, val in GRAFANA_VARIABLES.items():
        expr = expr.replace(var, val)
    return expr.replace("$__rate_interval", rate_interval).replace("$__range", range_)


def selectors(expr: str) -> list[promql_parser.VectorSelector]:
    """Every vector selector (plain or inside a range) of a PromQL expression."""
    found: list[promql_parser.VectorSelector] = []

    def visit(node: object) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def label_names(expr: str) -> set[str]:
    """Label names an expression matches on, groups by or joins on."""
    names: set[str] = set()

    def visit(node: object) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            names.update(m.name for m in node.matchers.matchers)
        elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            names.update(node.modifier.labels)
        elif isinstance(node, promql_parser.BinaryExpr) and node.modifier is not None:
            if node.modifier.matching is not None:
                names.update(node.modifier.matching.labels)
            names.update(node.modifier.group_labels or [])
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


_DURATION = re.compile(r"(\d+)([smhdwy])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def accelerate(text: str, factor: int = 60) -> str:
    """Rules YAML with every duration (range selectors, offsets, `for:`) divided by `factor`.

    Only for the live test: 1h becomes 60s, 5m becomes 5s, so a one-minute scenario exercises the
    burn-rate windows. Names (ratio_rate1h) stay as they are.
    """
    def seconds(m: re.Match) -> str:
        return f"{max(1, int(m.group(1)) * _UNIT_S[m.group(2)] // factor)}s"

    doc = yaml.safe_load(text)
    for g in doc["groups"]:
        for r in g["rules"]:
            r["expr"] = re.sub(r"\[([^\]]+)\]", lambda m: "[" + _DURATION.sub(seconds, m.group(1)) + "]", r["expr"])
            r["expr"] = re.sub(r"offset\s+(\d+[smhdwy])", lambda m: "offset " + _DURATION.sub(seconds, m.group(1)),
                               r["expr"])
            if "for" in r:
                r["for"] = _DURATION.sub(seconds, r["for"])
    return yaml.safe_dump(doc, sort_keys=False)


def find_tool(name: str) -> Path | None:
    """A pinned tool from PATH (make test puts .tools/bin first) or the repository's .tools/bin."""
    local = REPO / ".tools" / "bin" / name
    found = shutil.which(name)
    if found:
        return Path(found)
    return local if local.is_file() and os.access(local, os.X_OK) else None



def _mixin_overrides(config: Mapping[str, object] | None) -> str:
    """`config` as jsonnet (JSON), after refusing any key the mixin's `_config` does not have: a misspelt
    override would otherwise leave the shipped minutes in place without a word."""
    import _jsonnet

    overrides = dict(config or {})
    known = set(json.loads(_jsonnet.evaluate_snippet(
        "fields.jsonnet", "std.objectFieldsAll((import 'config.libsonnet')._config)", jpathdir=str(MIXIN))))
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"not in the mixin's _config (deploy/mixin/config.libsonnet): {', '.join(unknown)}")
    return json.dumps(overrides)


def render_rules(config: Mapping[str, object] | None = None) -> str:
    """The rules file as `make mixin` renders it (deploy/mixin/rules.jsonnet), with `config` replacing fields of
    the mixin's `_config` (deploy/mixin/config.libsonnet): rules.jsonnet's top-level argument `config`, the same
    as `jsonnet -S -J deploy/mixin --tla-code 'config={...}' deploy/mixin/rules.jsonnet`.

    Why: a live test (tests/observability/test_speculation_live.py, the e2e's k = 0 run) must see an alert reach
    firing in seconds, so it shortens the mixin's own `for:` and windows, e.g.
    `render_rules({"speculationOffWindow": "4s", "speculationOffFor": "5s"})`, instead of rewriting rendered
    YAML. No config renders the shipped file byte for byte. Unknown keys: ValueError. The mixin's YAML writer
    is slow in the Python jsonnet (several seconds); `rule_groups` gives the same rules as data, faster.
    """
    import _jsonnet

    text = _jsonnet.evaluate_file(str(MIXIN / "rules.jsonnet"), jpathdir=str(MIXIN),
                                  tla_codes={"config": _mixin_overrides(config)})
    return str(json.loads(text))


def rule_groups(config: Mapping[str, object] | None = None) -> dict[str, object]:
    """The same rules as `render_rules(config)`, as the `{"groups": [...]}` document (what the text parses to),
    without the mixin's YAML writer. `json.dumps` of it is a rules file Prometheus loads (JSON is YAML)."""
    import _jsonnet

    snippet = ("function(config) local m = (import 'mixin.libsonnet') + { _config+:: config }; "
               "{ groups: m.prometheusRules.groups + m.prometheusAlerts.groups }")
    doc = json.loads(_jsonnet.evaluate_snippet("groups.jsonnet", snippet, jpathdir=str(MIXIN),
                                               tla_codes={"config": _mixin_overrides(config)}))
    return dict(doc)
