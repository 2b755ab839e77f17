// Renders the Prometheus rule file (jsonnet -S -J deploy/mixin deploy/mixin/rules.jsonnet); `make mixin`
// writes it to deploy/prometheus/specgate-rules.yaml. For your own _config, wrap mixin.libsonnet the same way,
// or pass an override as the top-level argument `config` (its fields replace _config's):
//   jsonnet -S -J deploy/mixin --tla-code 'config={speculationOffFor: "30s"}' deploy/mixin/rules.jsonnet
function(config={}) (import 'lib/render.libsonnet').rulesFile((import 'mixin.libsonnet') + { _config+:: config })
