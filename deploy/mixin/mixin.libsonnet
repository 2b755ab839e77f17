// specgate monitoring mixin (https://monitoring.mixins.dev conventions): _config, prometheusRules,
// prometheusAlerts and grafanaDashboards. Self-contained: no jsonnet-bundler dependencies.
(import 'config.libsonnet')
+ (import 'rules.libsonnet')
+ (import 'dashboards.libsonnet')
