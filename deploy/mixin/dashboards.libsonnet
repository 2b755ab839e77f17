// The Grafana dashboard. It is built by dashboards/generate.py (the official grafana-foundation-sdk) and
// type-checked against Grafana's schema types; `make chart-sync` copies the generated JSON next to this file
// so the mixin is self-contained when vendored. _config sets its uid, tags, refresh and timezone.
{
  local c = $._config,
  grafanaDashboards+:: {
    'specgate.json': (import 'dashboards/specgate.json') + {
      uid: c.dashboardUid,
      tags: c.dashboardTags,
      refresh: c.dashboardRefresh,
      timezone: c.dashboardTimezone,
    },
  },
}
