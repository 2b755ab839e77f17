"""The Prometheus fleet: every pod a selector matches, as one row of facts each, in one pass (design.md "Prometheus evidence").

Why a package of its own: at fleet size (hundreds of replicas, several models and drafter revisions)
the question is not "what is the smallest pool, the slowest pod" but "which pods hold the per-window
SLO, which do not, which cannot tell" — a per-pod table and a rule over it. The queries are a fixed
set (a few per metric, never one per pod), so the cost grows with the points returned, not with
round trips. Modules: `queries` (the PromQL, names from `exporter.names`), `grid` and `answers` (an
answer's points on the query's grid, decoded typed), `collect` (runs them in parallel against any
Prometheus-API backend: Prometheus, Thanos, Mimir, VictoriaMetrics, and builds the rows), `table`
(the typed rows and the fleet's facts), `cohorts` (canary and stable samples over the same window),
`render` (text and Markdown of the judged table's JSON). The gate's Prometheus source
(`gate.evidence.prometheus`) uses it.

Facts, never verdicts: nothing here sets a status. The acceptance line judges the rows —
`gate.checks.acceptance.fleet_rule` (a pod's verdict and the fleet's, called by
`gate.checks.acceptance.window_slo`) and `gate.checks.acceptance.cohorts` (canary against stable).
"""
