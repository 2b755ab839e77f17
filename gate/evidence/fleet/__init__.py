"""Fleet verdicts: every pod a Prometheus selector matches, judged in one pass (design.md "Prometheus evidence").

Why a package of its own: at fleet size (hundreds of replicas, several models and drafter revisions)
the question is not "what is the smallest pool, the slowest pod" but "which pods hold the per-window
SLO, which do not, which cannot tell" — a per-pod table and a rule over it. The queries are a fixed
set (a few per metric, never one per pod), so the cost grows with the points returned, not with
round trips. Modules: `queries` (the PromQL, names from `exporter.names`), `collect` (runs them in
parallel against any Prometheus-API backend: Prometheus, Thanos, Mimir, VictoriaMetrics), `table`
(the typed rows and fleet result), `rule` (a pod's verdict and the fleet's), `render` (text and
Markdown). The gate's Prometheus source (`gate.evidence.prometheus`) uses it; the acceptance line
reads its result.
"""
