// Renders the Prometheus rule file (jsonnet -S -J deploy/mixin deploy/mixin/rules.jsonnet); `make mixin`
// writes it to deploy/prometheus/specgate-rules.yaml. For your own _config, wrap mixin.libsonnet the same way.
(import 'lib/render.libsonnet').rulesFile(import 'mixin.libsonnet')
