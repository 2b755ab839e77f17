// The rule file as text, for any configured mixin:
//   (import 'lib/render.libsonnet').rulesFile((import 'mixin.libsonnet') + { _config+:: { sloObjective: 0.995 } })
local yaml = import 'yaml.libsonnet';

{
  rulesFile(mixin)::
    local c = mixin._config;
    local header = |||
  # specgate recording and alerting rules. GENERATED from deploy/mixin (jsonnet) by `make mixin`: edit the
  # mixin, not this file (tests/observability/test_mixin.py fails on drift). The Helm chart includes it as-is.
  #
  # Inputs are the exporter's series (docs/design.md, "Exporter output"): per-stream series carry `model`,
  # `engine` (vllm|sglang) and `rank`; exporter-level series carry `engine` only; windowed gauges carry
  # `window`. Recording rules follow level:metric:operation; the `model:` level keeps (%(by)s).
  #
  # Parameters (deploy/mixin/config.libsonnet; the unit tests in deploy/prometheus/tests use these defaults):
  #   - per-batch acceptance SLO objective: the recording rule global:specgate_spec_window_slo_objective:ratio
  #     (%(objective)s = at most %(budget)s%% of batch windows may fall below the acceptance-length target).
  #   - burn-rate factors: %(burns)s.
  #   - the target L itself is the exporter's specgate_acceptance_slo_target (its --acceptance-slo-target).
  #   - collapse: acceptance rate below %(collapse)s while more than %(drafts)s drafts/s flow.
  #   - KV saturation: usage above %(kv)s with requests waiting; preemptions: more than %(pre)s in 10 minutes.
  #   - TTFT regression: p90 (10m mean) above %(ttft)sx its mean over the previous day (offset 1h), and above %(floor)s s.
  #   - speculation off: configured to speculate, requests running, no draft over %(offWindow)s, for %(offFor)s;
  #     shallow: 5m mean proposed depth below %(shallow)s x the configured maximum, for %(shallowFor)s.
  #
  # No traffic means no acceptance alert: every acceptance ratio divides by a rate that must be > 0, so it is
  # absent (not 0, not NaN) when no batch window / no draft completed. Counters are read with rate() and
  # increase() only, so an engine or exporter restart (a counter reset) cannot look like a burn. Recording
  # rules come first in their group: rules of one group run in order, so the acceptance alerts read the
  # ratios of the same evaluation.
||| % {
  by: std.join(', ', c.modelLabels),
  objective: '%g' % c.sloObjective,
  budget: '%g' % ((1 - c.sloObjective) * 100),
  burns: std.join(' and ', ['%g (%s: %s & %s)' % [b.factor, b.speed, b.long, b.short] for b in c.burnRates]),
  collapse: '%g' % c.collapseAcceptanceRate,
  drafts: '%g' % c.collapseDraftsPerSecond,
  kv: '%g' % c.kvUsageSaturated,
  pre: '%g' % c.preemptionsPer10m,
  ttft: '%g' % c.ttftRegressionFactor,
  floor: '%g' % c.ttftFloorSeconds,
  offWindow: c.speculationOffWindow,
  offFor: c.speculationOffFor,
  shallow: '%g' % c.speculationShallowFraction,
  shallowFor: c.speculationShallowFor,
    };
    header + yaml.manifest({ groups: mixin.prometheusRules.groups + mixin.prometheusAlerts.groups }),
}
