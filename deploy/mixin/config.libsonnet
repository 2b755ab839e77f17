// The mixin's parameters. Override any of them in your own jsonnet:
//
//   (import 'specgate-mixin/mixin.libsonnet') + { _config+:: { specgateSelector: 'cluster="eu-1"', sloObjective: 0.995 } }
//
// The defaults render exactly deploy/prometheus/specgate-rules.yaml and dashboards/specgate.json (a test in
// tests/observability/test_mixin.py renders both and compares).
{
  _config+:: {
    // Added to every specgate_* selector of the rules, e.g. 'job="specgate"' or 'cluster="eu-1"'. Empty: all.
    specgateSelector: '',
    // The `up` series of specgate exporters (SpecgateExporterDown): a target named like specgate, except the
    // chart's `specgate serve` / `specgate controller` jobs, which are not exporters.
    exporterUpSelector: 'job=~".*specgate.*", job!~".*-(serve|controller)"',
    // The labels the `model:` level of the recording rules keeps.
    modelLabels: ['namespace', 'model', 'engine'],
    // The `model_revision:` level (fleet rules, docs/scale.md): modelLabels plus the drafter revision the
    // scrape config relabels from a pod label (the exporter never sets it).
    revisionLabel: 'drafter_revision',

    // Per-batch acceptance SLO: at most (1 - objective) of completed batch windows may fall below the
    // acceptance-length target (the exporter's --acceptance-slo-target, specgate_acceptance_slo_target).
    sloObjective: 0.99,
    // Multi-window burn-rate alerts (Google SRE workbook, ch. 5): a long and a short window must both burn
    // faster than `factor` x the error budget. 14.4 over 1h spends ~2% of a 30-day budget per hour.
    burnRates: [
      { alert: 'SpecgateAcceptanceSLOFastBurn', speed: 'fast', factor: 14.4, long: '1h', short: '5m', 'for': '2m', severity: 'critical' },
      { alert: 'SpecgateAcceptanceSLOSlowBurn', speed: 'slow', factor: 6, long: '6h', short: '30m', 'for': '15m', severity: 'warning' },
    ],
    // The windows recorded as model:specgate_spec_windows_below_slo:ratio_rate<w> (every burn window must be here).
    sloWindows: ['5m', '30m', '1h', '6h'],

    // Collapse: acceptance rate below this while more than `collapseDraftsPerSecond` drafts/s flow.
    collapseAcceptanceRate: 0.02,
    collapseDraftsPerSecond: 0.1,
    // KV saturation: usage above this with requests waiting.
    kvUsageSaturated: 0.95,
    // Preemptions: more than this many in 10 minutes.
    preemptionsPer10m: 10,
    // TTFT regression: p90 (10m mean) above `ttftRegressionFactor` x its mean over the previous day (offset 1h),
    // and above `ttftFloorSeconds`.
    ttftRegressionFactor: 1.5,
    ttftFloorSeconds: 0.25,

    // Speculation that switched itself off (SpecgateSpeculationOff): a stream configured to speculate
    // (specgate_spec_depth_max > 0) with requests running proposed no draft over `speculationOffWindow`, and
    // that held for `speculationOffFor`: it fires about window + for (15 minutes) after the last draft.
    // Critical, or warning where the declared schedule sets k = 0 at the running batch
    // (specgate_spec_depth_scheduled == 0). A test or an e2e shortens both with an override, e.g.
    // `jsonnet -S -J deploy/mixin --tla-code 'config={speculationOffWindow: "5s", speculationOffFor: "10s"}'
    // deploy/mixin/rules.jsonnet` (tests.observability.sources.render_rules does the same from Python).
    speculationOffWindow: '5m',
    speculationOffFor: '10m',
    // Shallow speculation (SpecgateSpeculationShallow): the 5m mean proposed depth (draft tokens per draft)
    // below this fraction of the configured maximum k, for `speculationShallowFor`.
    speculationShallowFraction: 0.25,
    speculationShallowFor: '30m',

    // Quality alarms from acceptance extremes (SpecgateAcceptanceNearZero, SpecgateAcceptanceNearCeiling): over
    // `acceptanceExtremesWindow`, the share of completed batch windows whose share of their ceiling
    // (specgate_spec_window_acceptance_fraction: f = (L - 1) / k-bar at each window's own mean depth) is at most
    // epsilon (nothing accepted: garbled output, a mismatched drafter or tokenizer) or above 1 - epsilon
    // (everything accepted: repetition loops) exceeds its share, for `acceptanceExtremesFor`, once at least
    // `acceptanceExtremesMinWindows` windows completed over the window (idle or thin traffic never alerts; the
    // exporter's batch window is 30s by default, 30 windows per stream in 15 minutes). Epsilon = 0.05: the two
    // bucket bounds as the exporter writes them (exporter.windows.WINDOW_FRACTION_BUCKETS; another epsilon needs
    // bounds there too, tests/observability/test_quality_rules.py checks).
    acceptanceNearZeroLe: '0.05',
    acceptanceNearCeilingLe: '0.95',
    acceptanceNearZeroShare: 0.5,
    acceptanceNearCeilingShare: 0.5,
    acceptanceExtremesWindow: '15m',
    acceptanceExtremesFor: '10m',
    acceptanceExtremesMinWindows: 10,

    // Drift against the drafter's acceptance card (SpecgateAcceptanceBelowCard, issue 37 item 4): live acceptance of a
    // stream over the exporter window `cardWindow` below `cardFraction` x the card (the exporter's --acceptance-card,
    // the card row the plan names, converted to the exporter's definition at that window's depth:
    // specgate_spec_card_position_acceptance_rate, specgate_spec_card_acceptance_length), for `cardFor`. Per position
    // at the live series' basis (exact against exact; lower_bound against the card's lower bound when the depth
    // varied), and L against the card's exact L or its lower bound. No card, or too few drafts in the window (no
    // live series), never alerts. `cardWindow` must be one of the exporter's --windows.
    cardFraction: 0.8,
    cardWindow: '5m',
    cardFor: '15m',

    // Energy (issue 38): added to the dcgm-exporter selectors of the energy rules (e.g. 'job="dcgm-exporter"'),
    // and the window of specgate_decode_tokens_per_second the tokens-per-joule rule divides (an exporter window).
    dcgmSelector: '',
    energyDecodeWindow: '5m',

    runbookURL: 'https://github.com/specgate/specgate/blob/main/docs/runbook.md',

    // The dashboard (built by dashboards/generate.py; the mixin imports the generated JSON).
    dashboardUid: 'specgate-overview',
    dashboardTags: ['specgate', 'speculative-decoding', 'vllm', 'sglang'],
    dashboardRefresh: '30s',
    dashboardTimezone: 'browser',
  },
}
