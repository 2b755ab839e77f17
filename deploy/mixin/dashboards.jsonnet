// Renders the dashboards (jsonnet -m OUTDIR deploy/mixin/dashboards.jsonnet): one file per dashboard.
(import 'mixin.libsonnet').grafanaDashboards
