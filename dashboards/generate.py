"""Generate dashboards/specgate.json with the official grafana-foundation-sdk (pinned 1769699379!11.6.0).

Why a generator: the dashboard is code — reviewed, diffed and tested (every query is parsed with
promql-parser and run against a real Prometheus in tests/observability). The committed JSON must equal
this script's output (sorted keys, fixed ids), so `python dashboards/generate.py --check` fails on drift.

usage: python dashboards/generate.py [--out PATH] [--stdout | --check]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.builders import prometheus as prom_b
from grafana_foundation_sdk.builders import stat as stat_b
from grafana_foundation_sdk.builders import table as table_b
from grafana_foundation_sdk.builders import timeseries as ts_b
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common, dashboard

from exporter import names

OUT = Path(__file__).resolve().parent / "specgate.json"
UID = "specgate-overview"
DS = dashboard.DataSourceRef(type_val="prometheus", uid="${datasource}")
RUNBOOK = "https://github.com/specgate/specgate/blob/main/docs/runbook.md"

# Label matchers. Per-stream series carry model/engine/rank; exporter-level series carry engine only
# (DESIGN.md "Exporter output"); `namespace` comes from the Prometheus Operator's target labels.
STREAM = 'namespace=~"$namespace", model=~"$model", engine=~"$engine"'
EXPORTER = 'namespace=~"$namespace", engine=~"$engine"'
NO_TRAFFIC = "No traffic"
# The quality alarms' bucket bounds (deploy/mixin/config.libsonnet acceptanceNearZeroLe / acceptanceNearCeilingLe,
# both bounds of exporter.windows.WINDOW_FRACTION_BUCKETS) and the windows completed per second, > 0 (no traffic
# is no value, never NaN).
FRACTION = names.WINDOW_ACCEPTANCE_FRACTION.name
NEAR_ZERO_LE, NEAR_CEILING_LE = "0.05", "0.95"
FRACTION_RATE = f"(sum by (namespace, model, engine) (rate({FRACTION}_count{{{STREAM}}}[$__rate_interval])) > 0)"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str
    instant: bool = False


@dataclass(frozen=True)
class PanelSpec:
    """One panel: plain data, turned into SDK builders by `build_panel`."""

    title: str
    description: str
    queries: tuple[Query, ...]
    kind: str = "timeseries"  # timeseries | stat | table
    unit: str = "short"
    width: int = 12
    height: int = 8
    no_value: str | None = None
    min: float | None = None
    max: float | None = None
    dashed: tuple[str, ...] = field(default_factory=tuple)  # series names drawn as dashed lines


@dataclass(frozen=True)
class RowSpec:
    title: str
    panels: tuple[PanelSpec, ...]


def memory_row() -> RowSpec:
    return RowSpec("Memory: KV pools", (
        PanelSpec(
            "Target KV pool: allocated vs configured vs workload demand",
            "Allocated pool = what the engine actually reserved (tokens). Configured = the ceiling from the engine "
            "or settings, when known. Workload demand = concurrency x (prompt + output) of the configured request "
            "mix. Allocated below demand -> SpecgateKVPoolBelowDemand.",
            (
                Query(f'{names.KV_POOL.series}{{pool="target", {STREAM}}}', "allocated {{model}} r{{rank}}"),
                Query(f"{names.KV_POOL_CONFIGURED.series}{{{STREAM}}}", "configured {{model}} r{{rank}}"),
                Query(f"max by (namespace, engine) ({names.WORKLOAD_DEMAND.series}{{{EXPORTER}}})",
                      "workload demand {{namespace}}"),
            ),
            unit="short", dashed=("workload demand",),
        ),
        PanelSpec(
            "Drafter KV pool",
            "A separate drafter pool, where the engine reports one. vLLM puts drafter layers into the target's "
            "pool; SGLang sizes its draft pool with the target's (see the gate's kv_pool line).",
            (Query(f'{names.KV_POOL.series}{{pool="drafter", {STREAM}}}', "drafter {{model}} r{{rank}}"),),
            unit="short", width=6, no_value="Not reported by the engine",
        ),
        PanelSpec(
            "Context cap per request",
            "max_model_len (vLLM /v1/models) or context_len (SGLang).",
            (Query(f"{names.CONTEXT_CAP.series}{{{STREAM}}}", "{{model}} r{{rank}}", instant=True),),
            kind="stat", unit="short", width=6, no_value="Unknown",
        ),
        PanelSpec(
            "KV cache usage",
            "Fraction of the allocated pool in use. Full with requests waiting -> SpecgateKVCacheSaturated.",
            (Query(f"{names.KV_USAGE.series}{{{STREAM}}}", "{{model}} r{{rank}}"),),
            unit="percentunit", min=0, max=1,
        ),
        PanelSpec(
            "Preemptions per second",
            "Requests evicted because the pool could not hold the batch (vLLM only).",
            (Query(f"sum by (model, rank) (rate({names.PREEMPTIONS.series}{{{STREAM}}}[$__rate_interval]))",
                   "{{model}} r{{rank}}"),),
            unit="short", no_value="None reported",
        ),
    ))


def latency_row() -> RowSpec:
    return RowSpec("Latency and acceptance", (
        PanelSpec(
            "Acceptance length L per window vs SLO target",
            "Accepted tokens per verify, bonus token included (L = 1 + accepted / drafts), over each exporter "
            "window, and the configured target. No drafts in a window -> no value, shown as 'No traffic'.",
            (
                Query(f"{names.ACCEPTANCE_LENGTH.series}{{{STREAM}}}", "L {{model}} r{{rank}} ({{window}})"),
                Query(f"max by (namespace, engine) ({names.ACCEPTANCE_SLO_TARGET.series}{{{EXPORTER}}})",
                      "SLO target {{namespace}}"),
            ),
            no_value=NO_TRAFFIC, dashed=("SLO target",),
        ),
        PanelSpec(
            "Acceptance length L (5m, from counters)",
            f"{names.ACCEPTANCE_LENGTH_RULE}: absent when no draft was made.",
            (Query(f"{names.ACCEPTANCE_LENGTH_RULE}{{{STREAM}}}", "{{model}}", instant=True),),
            kind="stat", unit="none", width=6, no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "Batch windows below target",
            "Fraction of completed batch windows whose L fell below the target (per-batch SLO), over the burn-rate "
            "windows, against the error budget (1 - objective). Burn-rate alerts fire at 14.4x (1h & 5m) and 6x "
            "(6h & 30m) the budget.",
            (
                Query(f"{names.windows_below_slo_rule('5m')}{{{STREAM}}}", "5m {{model}}"),
                Query(f"{names.windows_below_slo_rule('30m')}{{{STREAM}}}", "30m {{model}}"),
                Query(f"{names.windows_below_slo_rule('1h')}{{{STREAM}}}", "1h {{model}}"),
                Query(f"{names.windows_below_slo_rule('6h')}{{{STREAM}}}", "6h {{model}}"),
                Query(f"1 - {names.SLO_OBJECTIVE_RULE}", "error budget"),
            ),
            unit="percentunit", width=6, no_value=NO_TRAFFIC, min=0, dashed=("error budget",),
        ),
        PanelSpec(
            "Speculation depth: mean and maximum",
            "Draft tokens proposed per draft (the k actually run), beside L: the exporter's windowed mean (vLLM) "
            f"and {names.DEPTH_MEAN_RULE} from counters, against the configured maximum k "
            "(specgate_spec_depth_max) and, where the exporter was given the schedule, the k it sets at the "
            "running batch (specgate_spec_depth_scheduled; 0 = off by design). No drafts with requests running "
            "-> SpecgateSpeculationOff; mean below a quarter of the maximum -> SpecgateSpeculationShallow.",
            (
                Query(f"{names.SPEC_DEPTH_MEAN.series}{{{STREAM}}}", "mean {{model}} r{{rank}} ({{window}})"),
                Query(f"{names.DEPTH_MEAN_RULE}{{{STREAM}}}", "mean {{model}} 5m counters"),
                Query(f"max by (namespace, model, engine, rank) ({names.SPEC_DEPTH_MAX.series}{{{STREAM}}})",
                      "max k {{model}} r{{rank}}"),
                Query(f"{names.SPEC_DEPTH_SCHEDULED.series}{{{STREAM}}}", "scheduled k {{model}} r{{rank}}"),
            ),
            unit="none", min=0, no_value=NO_TRAFFIC, dashed=("max k",),
        ),
        PanelSpec(
            "Acceptance rate",
            "Accepted / proposed draft tokens: the exporter's windowed gauge and the 5m ratio from counters.",
            (
                Query(f"{names.ACCEPTANCE_RATE.series}{{{STREAM}}}", "{{model}} r{{rank}} ({{window}})"),
                Query(f"{names.ACCEPTANCE_RATE_RULE}{{{STREAM}}}", "{{model}} 5m counters"),
            ),
            unit="percentunit", min=0, max=1, no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "Per-position acceptance",
            "p_i = accepted at draft position i / drafts. Early positions bound the later ones.",
            (
                Query(f"{names.POSITION_ACCEPTANCE_RATE.series}{{{STREAM}}}",
                      "pos {{position}} {{model}} r{{rank}} ({{window}})"),
                Query(f"{names.POSITION_ACCEPTANCE_RULE}{{{STREAM}}}",
                      "pos {{position}} {{model}} 5m counters"),
            ),
            unit="percentunit", min=0, max=1, no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "Per-batch acceptance length (p10, p50)",
            "From the histogram of per-window L (one observation per completed batch window).",
            (
                Query("histogram_quantile(0.1, sum by (namespace, model, engine, le) "
                      f"(rate({names.WINDOW_ACCEPTANCE_LENGTH.name}_bucket{{{STREAM}}}[$__rate_interval])))",
                      "p10 {{model}}"),
                Query("histogram_quantile(0.5, sum by (namespace, model, engine, le) "
                      f"(rate({names.WINDOW_ACCEPTANCE_LENGTH.name}_bucket{{{STREAM}}}[$__rate_interval])))",
                      "p50 {{model}}"),
            ),
            unit="none", no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "Batch windows at the acceptance extremes",
            "Share of completed batch windows that accepted at most 5% of their proposed draft tokens (near zero: "
            "garbled output, a mismatched drafter or tokenizer) or more than 95% (near the ceiling: repetition "
            "loops), each at its own mean depth: f = (L - 1) / mean depth, from the histogram "
            f"{names.WINDOW_ACCEPTANCE_FRACTION.name}. More than half for 10 minutes -> SpecgateAcceptanceNearZero "
            "/ SpecgateAcceptanceNearCeiling.",
            (
                Query(f"sum by (namespace, model, engine) (rate({FRACTION}_bucket{{{STREAM}, le=\"{NEAR_ZERO_LE}\"}}"
                      f"[$__rate_interval])) / {FRACTION_RATE}", "near zero {{model}}"),
                Query(f"(sum by (namespace, model, engine) (rate({FRACTION}_count{{{STREAM}}}[$__rate_interval])) - "
                      f"sum by (namespace, model, engine) (rate({FRACTION}_bucket{{{STREAM}, "
                      f"le=\"{NEAR_CEILING_LE}\"}}[$__rate_interval]))) / {FRACTION_RATE}", "near ceiling {{model}}"),
            ),
            unit="percentunit", min=0, max=1, no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "TTFT quantiles",
            "Time to first token from histogram deltas over each exporter window (p50, p90, p99).",
            (Query(f"{names.TTFT.series}{{{STREAM}}}", "p{{quantile}} {{model}} r{{rank}} ({{window}})"),),
            unit="s", no_value="No new requests",
        ),
        PanelSpec(
            "TPOT and ITL quantiles",
            "Time per output token (one observation per request) and inter-token latency (vLLM: one per engine "
            "step, so a speculative arm shows fewer, longer gaps for the same tokens). Compare arms by TPOT and "
            "tokens/s, never by ITL.",
            (Query(f"{names.TPOT.series}{{{STREAM}}}", "TPOT p{{quantile}} {{model}} r{{rank}} ({{window}})"),
             Query(f"{names.ITL.series}{{{STREAM}}}", "ITL p{{quantile}} {{model}} r{{rank}} ({{window}})")),
            unit="s", no_value="No new requests",
        ),
        PanelSpec(
            "Verify-cycle time",
            "Seconds per verify cycle per running sequence (seed 004's cycleMs): L / per-sequence decode rate. "
            "Speculation pays when L exceeds cycle / plain step time.",
            (Query(f"{names.VERIFY_CYCLE.series}{{{STREAM}}}", "{{model}} r{{rank}} ({{window}})"),),
            unit="s", width=8, no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "Decode rate",
            "Generated tokens per second over each exporter window.",
            (Query(f"{names.DECODE_RATE.series}{{{STREAM}}}", "{{model}} r{{rank}} ({{window}})"),),
            unit="suffix: tok/s", width=8, no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "Tokens per joule",
            "Generated tokens per joule per pod (issue 38): the decode rate over the watts of the pod's GPUs from "
            "dcgm-exporter's energy counter (either naming generation: mJ up to 4.8.x, J from 4.9.0), joined by "
            "dcgm-exporter's pod and namespace labels. Board energy, not wall; compare arms, not machines. Empty "
            "without dcgm-exporter.",
            (Query(f'{names.TOKENS_PER_JOULE_RULE}{{namespace=~"$namespace"}}', "{{namespace}}/{{pod}}"),),
            unit="suffix: tok/J", width=8, no_value="No GPU energy",
        ),
        PanelSpec(
            "Requests running / waiting",
            "The engine's queue. Waiting requests with a full KV cache -> SpecgateKVCacheSaturated.",
            (
                Query(f"{names.REQUESTS_RUNNING.series}{{{STREAM}}}", "running {{model}} r{{rank}}"),
                Query(f"{names.REQUESTS_WAITING.series}{{{STREAM}}}", "waiting {{model}} r{{rank}}"),
            ),
            unit="short", width=8,
        ),
    ))


def deploy_row() -> RowSpec:
    return RowSpec("Deploy: staging and gate", (
        PanelSpec(
            "Startup staging: cold start to ready",
            "Seconds from the engine's process start to the sidecar's first successful scrape, when the sidecar "
            "saw the start (the gate's staging line).",
            (Query(f"{names.ENGINE_READY.series}{{{EXPORTER}}}", "{{instance}}", instant=True),),
            kind="stat", unit="s", width=6, no_value="Start not observed",
        ),
        PanelSpec(
            "Gate decisions",
            "Decisions of `specgate serve` / `specgate controller` in the time range.",
            (Query(f'sum by (decision) (increase({names.GATE_DECISIONS.series}{{namespace=~"$namespace"}}[$__range]))',
                   "{{decision}}", instant=True),),
            kind="stat", unit="short", width=6, no_value="No gate decisions exported",
        ),
        PanelSpec(
            "Gate budget lines",
            "Current status per budget line (artifacts, kv_pool, acceptance, staging, codesign) and deployment.",
            (Query(f'max by (deployment, line, status) ({names.GATE_LINE_STATUS.series}{{namespace=~"$namespace"}})',
                   "{{deployment}} {{line}} {{status}}", instant=True),),
            kind="table", width=12, no_value="No gate lines exported",
        ),
        PanelSpec(
            "Engine restarts",
            "Restarts the sidecar detected (counters went down or the process start time changed).",
            (Query(f"sum by (instance, model, rank) (increase({names.ENGINE_RESTARTS.series}{{{STREAM}}}[$__rate_interval]))",
                   "{{instance}} {{model}} r{{rank}}"),),
            unit="short", width=8,
        ),
        PanelSpec(
            "Engine version",
            "What the exporter detected.",
            (Query(f"{names.ENGINE_INFO.series}{{{EXPORTER}}}", "{{instance}} {{engine}} {{version}}", instant=True),),
            kind="table", width=8,
        ),
        PanelSpec(
            "Exporter scrapes of the engine",
            "Engine up (1/0), last fetch+parse duration, and scrape errors per second by reason.",
            (
                Query(f"{names.ENGINE_UP.series}{{{EXPORTER}}}", "up {{instance}}"),
                Query(f"{names.ENGINE_SCRAPE_DURATION.series}{{{EXPORTER}}}", "duration s {{instance}}"),
                Query(f"sum by (instance, reason) (rate({names.ENGINE_SCRAPE_ERRORS.series}{{{EXPORTER}}}[$__rate_interval]))",
                      "errors/s {{reason}} {{instance}}"),
            ),
            unit="short", width=8,
        ),
    ))


def per_engine_row() -> RowSpec:
    by = "namespace, instance, model, engine, rank"
    return RowSpec("Per engine (instance, rank)", (
        PanelSpec(
            "Acceptance length by engine",
            "L from counters per engine instance and rank.",
            (Query(f"1 + sum by ({by}) (rate({names.SPEC_ACCEPTED.series}{{{STREAM}}}[$__rate_interval])) "
                   f"/ (sum by ({by}) (rate({names.SPEC_DRAFTS.series}{{{STREAM}}}[$__rate_interval])) > 0)",
                   "{{instance}} {{model}} r{{rank}}"),),
            unit="none", width=8, no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "Drafts per second by engine",
            "Draft rounds (verify steps) per second.",
            (Query(f"sum by ({by}) (rate({names.SPEC_DRAFTS.series}{{{STREAM}}}[$__rate_interval]))",
                   "{{instance}} {{model}} r{{rank}}"),),
            unit="short", width=8, no_value=NO_TRAFFIC,
        ),
        PanelSpec(
            "KV usage by engine",
            "KV cache usage per engine instance and rank.",
            (Query(f"max by ({by}) ({names.KV_USAGE.series}{{{STREAM}}})", "{{instance}} {{model}} r{{rank}}"),),
            unit="percentunit", width=8, min=0, max=1,
        ),
        PanelSpec(
            "Per-engine summary",
            "Allocated pool, usage and windowed L per engine instance and rank, now.",
            (
                Query(f'max by ({by}) ({names.KV_POOL.series}{{pool="target", {STREAM}}})', "pool", instant=True),
                Query(f"max by ({by}) ({names.KV_USAGE.series}{{{STREAM}}})", "usage", instant=True),
                Query(f"max by ({by}, window) ({names.ACCEPTANCE_LENGTH.series}{{{STREAM}}})", "L", instant=True),
            ),
            kind="table", width=24, no_value=NO_TRAFFIC,
        ),
    ))


def rows() -> tuple[RowSpec, ...]:
    return (memory_row(), latency_row(), deploy_row(), per_engine_row())


def _mappings(no_value: str | None) -> list[dashboard.ValueMapping]:
    """NaN/null (e.g. 0/0 when no draft was made) shown as text, never as a misleading 0."""
    if no_value is None:
        return []
    return [dashboard.SpecialValueMap(options=dashboard.DashboardSpecialValueMapOptions(
        match=dashboard.SpecialValueMatch.NULL_AND_NAN,
        result=dashboard.ValueMappingResult(text=no_value, index=0)))]


def _target(q: Query, ref_id: str) -> prom_b.Dataquery:
    t = prom_b.Dataquery().expr(q.expr).legend_format(q.legend).ref_id(ref_id).datasource(DS)
    if q.instant:
        t = t.instant().format(prom_b.prometheus.PromQueryFormat.TABLE)
    else:
        t = t.range()
    return t


def build_panel(spec: PanelSpec, panel_id: int):
    if spec.kind == "stat":
        p = (stat_b.Panel().graph_mode(common.BigValueGraphMode.NONE)
             .reduce_options(common_b.ReduceDataOptions().calcs(["lastNotNull"]).values(False)))
    elif spec.kind == "table":
        p = table_b.Panel().with_transformation(dashboard.DataTransformerConfig(id_val="merge", options={}))
    else:
        p = (ts_b.Panel().line_width(1).fill_opacity(10).span_nulls(False)
             .legend(common_b.VizLegendOptions().show_legend(True)
                     .display_mode(common.LegendDisplayMode.LIST).placement(common.LegendPlacement.BOTTOM)))
        for name in spec.dashed:
            p = p.override_by_regexp(f"^{name}.*", [
                dashboard.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]}),
                dashboard.DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": "red"}),
            ])
    p = (p.id(panel_id).title(spec.title).description(spec.description).datasource(DS)
         .unit(spec.unit).span(spec.width).height(spec.height))
    if spec.kind != "table":
        p = p.mappings(_mappings(spec.no_value))
    if spec.no_value is not None:
        p = p.no_value(spec.no_value)
    if spec.min is not None:
        p = p.min(spec.min)
    if spec.max is not None:
        p = p.max(spec.max)
    for i, q in enumerate(spec.queries):
        p = p.with_target(_target(q, chr(ord("A") + i)))
    return p


def _query_variable(name: str, label: str, query: str) -> dash_b.QueryVariable:
    return (dash_b.QueryVariable(name).label(label).datasource(DS)
            .query({"query": query, "refId": f"{name}-var", "qryType": 1})
            .refresh(dashboard.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(dashboard.VariableSort.ALPHABETICAL_ASC)
            .multi(True).include_all(True).all_value(".*")
            .current(dashboard.VariableOption(selected=True, text="All", value="$__all")))


def build_dashboard() -> dashboard.Dashboard:
    d = (dash_b.Dashboard("specgate: speculative decoding")
         .uid(UID)
         .description("Does speculative decoding pay for itself, and is it safe? KV pools, acceptance against its "
                      "per-batch SLO, latency, startup staging and gate decisions from the specgate exporter.")
         .tags(["specgate", "speculative-decoding", "vllm", "sglang"])
         .editable()
         .tooltip(dashboard.DashboardCursorSync.CROSSHAIR)
         .refresh("30s")
         .time("now-3h", "now")
         .timezone("browser")
         .link(dash_b.DashboardLink("Runbook").type(dashboard.DashboardLinkType.LINK).url(RUNBOOK)
               .target_blank(True).icon("doc"))
         .with_variable(dash_b.DatasourceVariable("datasource").label("Data source").type("prometheus"))
         .with_variable(_query_variable("namespace", "Namespace", f"label_values({names.ENGINE_UP.series}, namespace)"))
         .with_variable(_query_variable("engine", "Engine",
                                        f'label_values({names.ENGINE_UP.series}{{namespace=~"$namespace"}}, engine)'))
         .with_variable(_query_variable(
             "model", "Model",
             f'label_values({names.REQUESTS_RUNNING.series}{{namespace=~"$namespace", engine=~"$engine"}}, model)')))
    panel_id = 1
    for row in rows():
        d = d.with_row(dash_b.Row(row.title).id(panel_id))
        panel_id += 1
        for spec in row.panels:
            d = d.with_panel(build_panel(spec, panel_id))
            panel_id += 1
    built = d.build()
    # The SDK gives every variable interval-variable defaults (auto, auto_min, auto_count) that Grafana's
    # VariableModel does not define (tests/observability/test_dashboard_schema.py, tsc on @grafana/schema).
    for v in built.templating.list_val or []:
        v.auto = v.auto_min = v.auto_count = None
    return built


def render() -> str:
    """The dashboard JSON, deterministic: sorted keys, fixed ids and layout, trailing newline."""
    return json.dumps(build_dashboard(), cls=JSONEncoder, sort_keys=True, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help=f"the JSON file (default {OUT.name} next to this script)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--stdout", action="store_true", help="print instead of writing")
    g.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out differs from the output")
    args = ap.parse_args(argv)
    text = render()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        same = args.out.is_file() and args.out.read_text() == text
        if not same:
            print(f"{args.out} is stale: run python dashboards/generate.py", file=sys.stderr)
        return 0 if same else 1
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
