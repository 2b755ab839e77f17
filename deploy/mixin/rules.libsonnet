// specgate's recording and alerting rules. Inputs are the exporter's series (docs/design.md, "Exporter
// output"): per-stream series carry `model`, `engine` (vllm|sglang) and `rank`; exporter-level series carry
// `engine` only; windowed gauges carry `window`. Recording rules follow level:metric:operation; the `model:`
// level keeps _config.modelLabels.
//
// No traffic means no acceptance alert: every acceptance ratio divides by a rate that must be > 0, so it is
// absent (not 0, not NaN) when no batch window / no draft completed. Counters are read with rate() and
// increase() only, so an engine or exporter restart (a counter reset) cannot look like a burn.
//
// Recording rules and the alerts that read them share a group on purpose: rules of one group run in order,
// so the acceptance alerts read the ratios of the same evaluation (groups run independently of each other).
// That is why everything is under prometheusAlerts and prometheusRules has no groups of its own.
{
  local c = $._config,
  local num(x) = '%g' % x,
  local by = std.join(', ', c.modelLabels),
  local revBy = std.join(', ', c.modelLabels + [c.revisionLabel]),
  // A selector: the metric with its own matchers and _config.specgateSelector.
  local sel(metric, matchers='') =
    local all = std.filter(function(s) s != '', [matchers, c.specgateSelector]);
    metric + (if std.length(all) == 0 then '' else '{' + std.join(', ', all) + '}'),
  // '1h' -> 'hour', '6h' -> '6 hours', '5m' -> '5 minutes' (as in "over the last hour").
  local spoken(d) =
    local unit = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week' }[d[std.length(d) - 1]];
    local n = d[0:std.length(d) - 1];
    if n == '1' then unit else '%s %ss' % [n, unit],
  // A dcgm-exporter selector: the GPUs held by a pod (pod!=""), with _config.dcgmSelector.
  local dsel(metric) =
    metric + '{' + std.join(', ', std.filter(function(s) s != '', ['pod!=""', c.dcgmSelector])) + '}',
  local runbook(alert) = c.runbookURL + '#' + std.asciiLower(alert),
  local objective = 'global:specgate_spec_window_slo_objective:ratio',
  local belowSLO(w) = 'model:specgate_spec_windows_below_slo:ratio_rate' + w,

  assert std.all([std.member(c.sloWindows, b.long) && std.member(c.sloWindows, b.short) for b in c.burnRates])
         : 'every burn-rate window must be in _config.sloWindows',

  local burnAlert(b) = {
    alert: b.alert,
    expr: |||
      (
        %(long)s
          > on () group_left () (%(factor)s * (1 - %(objective)s))
      )
      and
      (
        %(short)s
          > on () group_left () (%(factor)s * (1 - %(objective)s))
      )
    ||| % { long: belowSLO(b.long), short: belowSLO(b.short), factor: num(b.factor), objective: objective },
    'for': b['for'],
    labels: { severity: b.severity },
    annotations: {
      summary: 'Acceptance-length SLO is burning its error budget %s.' % (if b.speed == 'fast' then 'fast' else 'slowly'),
      description: (
        '{{ $value | humanizePercentage }} of batch windows of model {{ $labels.model }} ({{ $labels.engine }}, '
        + 'namespace {{ $labels.namespace }}) were below the acceptance-length target over the last %s, and the '
        + 'last %s too: %sx the error budget.%s'
      ) % [spoken(b.long), spoken(b.short), num(b.factor),
           if b.speed == 'fast' then ' Speculation is no longer paying for itself at this rate.' else ''],
      runbook_url: runbook(b.alert),
    },
  },

  // SpecgateSpeculationOff, one rule per severity (the same name, as mixins do): critical unless the declared
  // schedule gives k = 0 at the running batch (specgate_spec_depth_scheduled == 0), warning where it does.
  local stream = 'job, instance, model, rank',
  local speculationOff(severity) = {
    local scheduledOff = '(%s == 0)' % sel('specgate_spec_depth_scheduled'),
    alert: 'SpecgateSpeculationOff',
    expr: |||
      (
        max without (source) (%(max)s > 0)
        and on (%(stream)s)
        (%(running)s > 0)
        and on (%(stream)s)
        (rate(%(drafts)s[%(window)s]) == 0)
      )
      %(op)s on (%(stream)s)
      %(scheduled)s
    ||| % {
      max: sel('specgate_spec_depth_max'), running: sel('specgate_requests_running'),
      drafts: sel('specgate_spec_drafts_total'), window: c.speculationOffWindow, stream: stream,
      op: if severity == 'critical' then 'unless' else 'and', scheduled: scheduledOff,
    },
    'for': c.speculationOffFor,
    labels: { severity: severity },
    annotations: {
      summary: if severity == 'critical' then 'Speculation switched itself off while requests are running.'
               else 'Speculation is off at this batch, as the declared schedule says.',
      description: (
        'Model {{ $labels.model }} rank {{ $labels.rank }} ({{ $labels.engine }}, instance {{ $labels.instance }}) '
        + 'is configured to speculate up to k = {{ $value | printf "%%.0f" }} tokens and has '
        + '{{ with printf "specgate_requests_running{job=%%q, instance=%%q, model=%%q, rank=%%q}" '
        + '$labels.job $labels.instance $labels.model $labels.rank | query }}{{ . | first | value | printf "%%.0f" }}'
        + '{{ else }}(unknown){{ end }} requests running, but proposed no drafts over the last %(window)s '
        + '(0 drafts/s), for %(for)s. '
        + (if severity == 'critical' then
             'Nothing the deployment declares sets k = 0 here: speculation switched itself off (dynamic depth, '
             + 'a schedule floor, an acceptance threshold) and every request decodes one token per step.'
           else
             'The declared schedule (specgate_spec_depth_scheduled) sets k = 0 at this batch: intended, unless '
             + 'plain decoding at this batch is not what the rollout wanted.')
      ) % { window: spoken(c.speculationOffWindow), 'for': spoken(c.speculationOffFor) },
      runbook_url: runbook('SpecgateSpeculationOff'),
    },
  },

  // Quality alarms from acceptance extremes (issue 37 item 5): the share of completed batch windows whose share of
  // their ceiling, f = (L - 1) / k-bar at each window's own mean depth (the exporter's
  // specgate_spec_window_acceptance_fraction histogram), sits at one end, from its buckets: f <= epsilon is the
  // `le` bucket, f > 1 - epsilon is the count less the `le` bucket below it. Per model (a mass of windows across
  // pods), only once enough windows completed: an idle or thin stream never alerts.
  local fraction = 'specgate_spec_window_acceptance_fraction',
  local extremeAlert(alert, share, numerator, summary, what, hint) = {
    local w = c.acceptanceExtremesWindow,
    local count = 'sum by (%s) (rate(%s[%s]))' % [by, sel(fraction + '_count'), w],
    alert: alert,
    expr: |||
      (
        (
          %(numerator)s
        )
        /
        (%(count)s > 0)
          > %(share)s
      )
      and on (%(by)s)
      (sum by (%(by)s) (increase(%(total)s[%(w)s])) >= %(min)s)
    ||| % { numerator: numerator(w, count), count: count, share: num(share), by: by,
            total: sel(fraction + '_count'), w: w, min: num(c.acceptanceExtremesMinWindows) },
    'for': c.acceptanceExtremesFor,
    labels: { severity: 'warning' },
    annotations: {
      summary: summary,
      description: (
        '{{ $value | humanizePercentage }} of the batch windows of model {{ $labels.model }} ({{ $labels.engine }}, '
        + 'namespace {{ $labels.namespace }}) over the last %(window)s %(what)s, for %(for)s (alerting above '
        + '%(share)s%%). %(hint)s'
      ) % { window: spoken(w), what: what, 'for': spoken(c.acceptanceExtremesFor), share: num(share * 100), hint: hint },
      runbook_url: runbook(alert),
    },
  },
  local pct(le) = num(std.parseJson(le) * 100),
  local nearZero = extremeAlert(
    'SpecgateAcceptanceNearZero', c.acceptanceNearZeroShare,
    function(w, count) 'sum by (%s) (rate(%s[%s]))' % [by, sel(fraction + '_bucket', 'le="%s"' % c.acceptanceNearZeroLe), w],
    'Many batch windows accept almost none of their drafts.',
    'accepted at most %s%% of the draft tokens they proposed (L at most 1 + %s k at each window\'s own depth k)'
    % [pct(c.acceptanceNearZeroLe), c.acceptanceNearZeroLe],
    'Outputs may be garbled, or the drafter or its tokenizer no longer matches the target (an upgrade, a new '
    + 'revision): every verify step now costs more than plain decoding.'
  ),
  local nearCeiling = extremeAlert(
    'SpecgateAcceptanceNearCeiling', c.acceptanceNearCeilingShare,
    function(w, count) '%s\n    -\n    sum by (%s) (rate(%s[%s]))'
                       % [count, by, sel(fraction + '_bucket', 'le="%s"' % c.acceptanceNearCeilingLe), w],
    'Many batch windows accept almost all of their drafts.',
    'accepted more than %s%% of the draft tokens they proposed (L above 1 + %s k at each window\'s own depth k)'
    % [pct(c.acceptanceNearCeilingLe), c.acceptanceNearCeilingLe],
    'Real traffic is rarely this predictable: look for repetition loops (requests repeating a span until their '
    + 'token limit) or a drafter that is the target itself.'
  ),

  // Drift against the drafter's card (issue 37 item 4): the exporter writes the card beside the live gauges with the
  // same labels (exporter/card.py), so `live < fraction * card` matches one to one, position by position at the same
  // basis; L against the card's exact L or its lower bound (never its upper bound).
  local belowCard = {
    local w = 'window="%s"' % c.cardWindow,
    alert: 'SpecgateAcceptanceBelowCard',
    expr: |||
      (
        %(live)s
          < %(fraction)s * %(card)s
      )
      or
      (
        %(liveL)s
          < ignoring (basis) %(fraction)s * %(cardL)s
      )
    ||| % { fraction: num(c.cardFraction),
            live: sel('specgate_spec_position_acceptance_rate', w),
            card: sel('specgate_spec_card_position_acceptance_rate', w),
            liveL: sel('specgate_spec_acceptance_length', w),
            cardL: sel('specgate_spec_card_acceptance_length', w + ', basis!="upper_bound"') },
    'for': c.cardFor,
    labels: { severity: 'warning' },
    annotations: {
      summary: "Live acceptance is below the drafter's acceptance card.",
      description: (
        'Model {{ $labels.model }} rank {{ $labels.rank }} ({{ $labels.engine }}, instance {{ $labels.instance }}) '
        + 'accepted {{ $value | printf "%%.3f" }}{{ if $labels.position }} at draft position {{ $labels.position }} '
        + '({{ $labels.basis }}){{ else }} tokens per verify (L){{ end }} over the last %(window)s, below %(fraction)s x '
        + "the drafter's card for the row this deployment's traffic matches, for %(for)s. The drafter, its revision, "
        + 'the engine version, the sampling settings or the traffic no longer match what the card measured.'
      ) % { window: spoken(c.cardWindow), fraction: num(c.cardFraction), 'for': spoken(c.cardFor) },
      runbook_url: runbook('SpecgateAcceptanceBelowCard'),
    },
  },

  // Per-pod window facts for the fleet verdict (docs/scale.md "Recorded window facts", issue 40): one sample per
  // window of _config.fleetFacts.windowSeconds per pod (ranks pooled: `sum without (rank)`), so the gate asks for
  // one value per pod over its lookback (sum_over_time / count_over_time) instead of pods x windows points. The
  // group's interval is the window (the gate checks it); the target and min_drafts the windows are judged by are
  // labels of every fact (slo_target, slo_min_drafts, slo_window_seconds), so a plan judged by other numbers finds
  // no facts and falls back to the raw range queries. Every rule reads the exporter's counters only (never another
  // recording rule): promtool's and vmalert's backfill evaluate each rule on its own.
  local ff = { windowSeconds: 60, target: 2, minDrafts: 1 } + (if std.objectHas(c, 'fleetFacts') then c.fleetFacts else {}),
  local ffW = '%ds' % ff.windowSeconds,
  local ffInc(metric) = 'sum without (rank) (increase(%s[%s]))' % [sel(metric), ffW],
  local ffD = ffInc('specgate_spec_drafts_total'),
  local ffA = ffInc('specgate_spec_accepted_tokens_total'),
  local ffR = ffInc('specgate_engine_restarts_total'),
  local ffAny = '(%s >= bool -Inf)' % ffD,  // 1 for every window with a drafts sample (NaN too: -Inf <= NaN is false, so 0)
  local ffNoReset = '((%s == bool 0) or %s)' % [ffR, ffAny],  // no restart series: not a reset (as the raw path)
  local ffEligible = '(%s >= bool %s) * (%s < bool +Inf) * (%s >= bool 0) * (%s < bool +Inf) * %s'
                     % [ffD, num(ff.minDrafts), ffD, ffA, ffA, ffNoReset],
  local ffLength = '(1 + %s / %s)' % [ffA, ffD],
  local ffNonFinite = '(%s * ((1 - (%s >= bool 0) * (%s < bool +Inf)) + ((%s >= bool %s) * (%s < bool +Inf) * (1 - (%s >= bool 0) * (%s < bool +Inf)) or %s * 0)))'
                      % [ffNoReset, ffD, ffD, ffD, num(ff.minDrafts), ffD, ffA, ffA, ffAny],
  local ffLabels = { slo_window_seconds: '%d' % ff.windowSeconds, slo_target: num(ff.target), slo_min_drafts: num(ff.minDrafts) },
  local ffRule(name, expr) = { record: 'pod:specgate_fleet_window_%s' % name, expr: expr, labels: ffLabels },

  prometheusRules+:: { groups+: [
    {
      name: 'specgate.fleet-facts',
      interval: ffW,
      rules: [
        ffRule('drafts:increase', ffD),
        ffRule('accepted_tokens:increase', ffA),
        ffRule('restarts:increase', ffR),
        ffRule('draft_tokens:increase', ffInc('specgate_spec_draft_tokens_total')),
        // The three window counts are recorded sparse (`> 0`: only such windows, value 1), the rarely true ones, so
        // a healthy pod has no series and the gate's sums over the lookback touch none of a healthy fleet's
        // (Prometheus' CPU per query follows the series it reads): the gate derives eligible = windows -
        // not_eligible - non_finite and met = eligible - below_target.
        // non_finite: non-finite drafts, or non-finite accepted tokens where drafts are enough; resets not counted.
        ffRule('non_finite:bool', '%s > 0' % ffNonFinite),
        // not_eligible: a drafts sample, neither eligible nor non-finite (a reset, too few drafts, no accepted).
        ffRule('not_eligible:bool', '(%s * 0 + 1) * (1 - ((%s) or %s * 0)) * (1 - (%s or %s * 0)) > 0'
                                    % [ffAny, ffEligible, ffAny, ffNonFinite, ffAny]),
        // below_target: eligible, L under the target (an eligible window's L is finite: drafts >= 1).
        ffRule('below_target:bool', '(%s) * (%s < bool %s) > 0' % [ffEligible, ffLength, num(ff.target)]),
        ffRule('eligible_drafts:increase', '%s and (%s) == 1' % [ffD, ffEligible]),
        ffRule('eligible_accepted_tokens:increase', '%s and (%s) == 1' % [ffA, ffEligible]),
        ffRule('acceptance_length:quotient', '%s and (%s) == 1' % [ffLength, ffEligible]),
        ffRule('engine_up:min', 'min_over_time(%s[%s])' % [sel('specgate_engine_up'), ffW]),
      ],
    },
  ] },

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'specgate.acceptance',
        rules: [
          { record: objective, expr: 'vector(%s)' % num(c.sloObjective) },
        ] + [
          {
            record: belowSLO(w),
            expr: |||
              sum by (%(by)s) (rate(%(below)s[%(w)s]))
              /
              (sum by (%(by)s) (rate(%(total)s[%(w)s])) > 0)
            ||| % { by: by, w: w, below: sel('specgate_spec_windows_below_slo_total'), total: sel('specgate_spec_windows_total') },
          }
          for w in c.sloWindows
        ] + [
          {
            record: 'model:specgate_spec_drafts:rate5m',
            expr: 'sum by (%s) (rate(%s[5m]))' % [by, sel('specgate_spec_drafts_total')],
          },
          // L = 1 + accepted / drafts (accepted tokens per verify, bonus token included).
          {
            record: 'model:specgate_spec_acceptance_length:ratio_rate5m',
            expr: |||
              1 +
                sum by (%(by)s) (rate(%(accepted)s[5m]))
              /
                (sum by (%(by)s) (rate(%(drafts)s[5m])) > 0)
            ||| % { by: by, accepted: sel('specgate_spec_accepted_tokens_total'), drafts: sel('specgate_spec_drafts_total') },
          },
          // a = accepted / draft tokens.
          {
            record: 'model:specgate_spec_acceptance_rate:ratio_rate5m',
            expr: |||
              sum by (%(by)s) (rate(%(accepted)s[5m]))
              /
              (sum by (%(by)s) (rate(%(draft_tokens)s[5m])) > 0)
            ||| % { by: by, accepted: sel('specgate_spec_accepted_tokens_total'), draft_tokens: sel('specgate_spec_draft_tokens_total') },
          },
          // p_i = accepted at position i / drafts.
          {
            record: 'model_position:specgate_spec_position_acceptance:ratio_rate5m',
            expr: |||
              sum by (%(by)s, position) (rate(%(per_pos)s[5m]))
              / on (%(by)s) group_left ()
              (sum by (%(by)s) (rate(%(drafts)s[5m])) > 0)
            ||| % { by: by, per_pos: sel('specgate_spec_accepted_tokens_per_position_total'), drafts: sel('specgate_spec_drafts_total') },
          },
          // Fleet rules by drafter revision (docs/scale.md): one series per model and revision however many pods,
          // so a dashboard or alert comparing revisions never touches per-pod series.
          {
            record: 'model_revision:specgate_spec_acceptance_length:ratio_rate5m',
            expr: |||
              1 +
                sum by (%(by)s) (rate(%(accepted)s[5m]))
              /
                (sum by (%(by)s) (rate(%(drafts)s[5m])) > 0)
            ||| % { by: revBy, accepted: sel('specgate_spec_accepted_tokens_total'), drafts: sel('specgate_spec_drafts_total') },
          },
          {
            record: 'model_revision:specgate_spec_windows_below_slo:ratio_rate1h',
            expr: |||
              sum by (%(by)s) (rate(%(below)s[1h]))
              /
              (sum by (%(by)s) (rate(%(total)s[1h])) > 0)
            ||| % { by: revBy, below: sel('specgate_spec_windows_below_slo_total'), total: sel('specgate_spec_windows_total') },
          },
        ] + [burnAlert(b) for b in c.burnRates] + [
          // For small fleets where burn rates are too coarse: the windowed gauge against the target, only while
          // batch windows keep completing (an idle engine, or SGLang re-sending its last gauge, does not advance
          // specgate_spec_windows_total).
          {
            alert: 'SpecgateAcceptanceBelowTarget',
            expr: |||
              (
                %(length)s
                  < on (job, instance) group_left () max by (job, instance) (%(target)s)
              )
              and on (job, instance, model, rank)
              (increase(%(windows)s[10m]) > 0)
            ||| % { length: sel('specgate_spec_acceptance_length'), target: sel('specgate_acceptance_slo_target'), windows: sel('specgate_spec_windows_total') },
            'for': '15m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Acceptance length is below its target.',
              description: 'Accepted tokens per verify for model {{ $labels.model }} rank {{ $labels.rank }} ({{ $labels.engine }}, '
                           + 'window {{ $labels.window }}, instance {{ $labels.instance }}) is {{ $value | printf "%.3g" }}, '
                           + 'below the configured target, for 15 minutes while traffic flows.',
              runbook_url: runbook('SpecgateAcceptanceBelowTarget'),
            },
          },
          {
            alert: 'SpecgateAcceptanceCollapse',
            expr: |||
              (model:specgate_spec_acceptance_rate:ratio_rate5m < %s)
              and
              (model:specgate_spec_drafts:rate5m > %s)
            ||| % [num(c.collapseAcceptanceRate), num(c.collapseDraftsPerSecond)],
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Drafts are almost never accepted.',
              description: 'Acceptance rate of model {{ $labels.model }} ({{ $labels.engine }}, namespace {{ $labels.namespace }}) '
                           + 'is {{ $value | humanizePercentage }} while drafts keep flowing: the drafter does not match the '
                           + 'target (wrong drafter, tokenizer, taps or revision). Every verify step now costs more than '
                           + 'plain decoding.',
              runbook_url: runbook('SpecgateAcceptanceCollapse'),
            },
          },
        ],
      },
      // Energy beside speed (issue 38): per pod, the watts of its GPUs from dcgm-exporter (its energy counter's
      // rate; the pod, namespace and container labels are dcgm-exporter's GPU-to-pod mapping in Kubernetes) and
      // specgate's generated tokens per second over the same pod, as tokens per joule. Both naming generations:
      // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION in mJ (dcgm-exporter <= 4.8.x, scaled to J) or, from 4.9.0, DCGM 4.7's
      // DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL in J (exporter/names.py cites both); `or` takes the first where a pod
      // has both. Absent (not 0) while the GPUs draw nothing measurable.
      {
        name: 'specgate.energy',
        rules: [
          {
            record: 'pod:specgate_gpu_energy_joules:rate5m',
            expr: |||
              sum by (namespace, pod) (rate(%(mj)s[5m])) / 1000
              or
              sum by (namespace, pod) (rate(%(j)s[5m]))
            ||| % { mj: dsel('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'), j: dsel('DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL') },
          },
          {
            record: 'pod:specgate_tokens_per_joule:ratio_rate5m',
            expr: |||
              sum by (namespace, pod) (%(tokens)s)
              / on (namespace, pod)
              (
                (sum by (namespace, pod) (rate(%(mj)s[5m])) / 1000 > 0)
                or
                (sum by (namespace, pod) (rate(%(j)s[5m])) > 0)
              )
            ||| % { tokens: sel('specgate_decode_tokens_per_second', 'window="%s"' % c.energyDecodeWindow),
                    mj: dsel('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'), j: dsel('DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL') },
          },
        ],
      },
      // Speculation that switched itself off, or runs far shallower than configured (issue 22): dynamic depth
      // going to k = 0 above a batch threshold (vLLM num_speculative_tokens_per_batch_size), a TensorRT-LLM
      // draft_len_schedule at its floor, TensorRT-LLM's acceptance_rate_threshold. SpecgateAcceptanceCollapse
      // cannot see these: it needs drafts to flow. Per stream (job, instance, model, rank): one pod that
      // stopped speculating matters even when the fleet's model-level rate still flows. Silent on an idle
      // engine (no request running) and on one without speculation (no specgate_spec_depth_max: the exporter
      // exports it only where the engine is configured to speculate).
      {
        name: 'specgate.speculation',
        rules: [
          // Mean proposed depth = draft tokens / drafts (the k actually run, averaged over verify steps).
          {
            record: 'model:specgate_spec_depth_mean:ratio_rate5m',
            expr: |||
              sum by (%(by)s) (rate(%(draft_tokens)s[5m]))
              /
              (sum by (%(by)s) (rate(%(drafts)s[5m])) > 0)
            ||| % { by: by, draft_tokens: sel('specgate_spec_draft_tokens_total'), drafts: sel('specgate_spec_drafts_total') },
          },
        ] + [
          speculationOff(severity)
          for severity in ['critical', 'warning']
        ] + [
          {
            alert: 'SpecgateSpeculationShallow',
            expr: |||
              model:specgate_spec_depth_mean:ratio_rate5m
                < on (%(by)s)
              (%(fraction)s * max by (%(by)s) (%(max)s))
            ||| % { by: by, fraction: num(c.speculationShallowFraction), max: sel('specgate_spec_depth_max') },
            'for': c.speculationShallowFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Speculation runs far shallower than configured.',
              description: (
                'Drafts of model {{ $labels.model }} ({{ $labels.engine }}, namespace {{ $labels.namespace }}) '
                + 'proposed {{ $value | printf "%%.2f" }} tokens each on average over the last 5 minutes, below '
                + '%(fraction)s x the configured maximum k = '
                + '{{ with printf "max(specgate_spec_depth_max{namespace=%%q, model=%%q, engine=%%q})" '
                + '$labels.namespace $labels.model $labels.engine | query }}{{ . | first | value | printf "%%.0f" }}'
                + '{{ else }}(unknown){{ end }}, for %(for)s. A dynamic schedule or an adaptive controller has '
                + 'moved to its floor: most of the configured depth is not used.'
              ) % { fraction: num(c.speculationShallowFraction), 'for': spoken(c.speculationShallowFor) },
              runbook_url: runbook('SpecgateSpeculationShallow'),
            },
          },
        ],
      },
      {
        name: 'specgate.quality',
        rules: [nearZero, nearCeiling],
      },
      {
        name: 'specgate.card',
        rules: [belowCard],
      },
      {
        name: 'specgate.capacity',
        rules: [
          {
            alert: 'SpecgateKVPoolBelowDemand',
            expr: |||
              %(pool)s
                < on (job, instance) group_left () max by (job, instance) (%(demand)s)
            ||| % { pool: sel('specgate_kv_pool_tokens', 'pool="target"'), demand: sel('specgate_workload_demand_tokens') },
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Allocated KV pool is smaller than the workload needs.',
              description: 'The engine allocated {{ $value | humanize }} tokens of KV pool for model {{ $labels.model }} '
                           + 'rank {{ $labels.rank }} ({{ $labels.engine }}, instance {{ $labels.instance }}), fewer than '
                           + 'the configured request mix keeps resident (specgate_workload_demand_tokens). Requests will '
                           + 'queue or be preempted.',
              runbook_url: runbook('SpecgateKVPoolBelowDemand'),
            },
          },
          {
            alert: 'SpecgateKVCacheSaturated',
            expr: |||
              (%(usage)s > %(max)s)
              and on (job, instance, model, rank)
              (%(waiting)s > 0)
            ||| % { usage: sel('specgate_kv_usage_ratio'), max: num(c.kvUsageSaturated), waiting: sel('specgate_requests_waiting') },
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'KV cache is full and requests are waiting.',
              description: 'KV cache usage of model {{ $labels.model }} rank {{ $labels.rank }} ({{ $labels.engine }}, '
                           + 'instance {{ $labels.instance }}) is {{ $value | humanizePercentage }} with requests waiting, '
                           + 'for 10 minutes.',
              runbook_url: runbook('SpecgateKVCacheSaturated'),
            },
          },
          {
            alert: 'SpecgatePreemptionsRising',
            expr: |||
              sum by (namespace, job, instance, model, engine, rank) (increase(%s[10m])) > %s
            ||| % [sel('specgate_preemptions_total'), num(c.preemptionsPer10m)],
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'Engine is preempting requests.',
              description: '{{ $value | printf "%.0f" }} requests of model {{ $labels.model }} rank {{ $labels.rank }} '
                           + '({{ $labels.engine }}, instance {{ $labels.instance }}) were preempted in the last 10 minutes: '
                           + 'the KV pool cannot hold the running batch.',
              runbook_url: runbook('SpecgatePreemptionsRising'),
            },
          },
          // Against its own trailing baseline: the mean p90 of the previous day, skipping the last hour.
          {
            alert: 'SpecgateTTFTRegression',
            expr: |||
              (
                avg_over_time(%(p90)s[10m])
                  > %(factor)s * avg_over_time(%(p90)s[1d] offset 1h)
              )
              and
              (avg_over_time(%(p90)s[10m]) > %(floor)s)
            ||| % { p90: sel('specgate_ttft_seconds', 'quantile="0.9"'), factor: num(c.ttftRegressionFactor), floor: num(c.ttftFloorSeconds) },
            'for': '10m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'TTFT p90 regressed against its baseline.',
              description: ('TTFT p90 of model {{ $labels.model }} rank {{ $labels.rank }} ({{ $labels.engine }}, window '
                            + '{{ $labels.window }}, instance {{ $labels.instance }}) averaged {{ $value | humanizeDuration }} '
                            + 'over the last 10 minutes, more than %sx its mean over the previous day.') % num(c.ttftRegressionFactor),
              runbook_url: runbook('SpecgateTTFTRegression'),
            },
          },
        ],
      },
      {
        name: 'specgate.health',
        rules: [
          // A target named like specgate, or any target that served specgate metrics within the last hour.
          {
            alert: 'SpecgateExporterDown',
            expr: |||
              (up{%(up)s} == 0)
              or on (job, instance)
              (up == 0 and on (job, instance) max by (job, instance) (max_over_time(%(engine_up)s[1h])))
            ||| % { up: c.exporterUpSelector, engine_up: sel('specgate_engine_up') },
            'for': '5m',
            labels: { severity: 'critical' },
            annotations: {
              summary: 'A specgate exporter is down.',
              description: 'Prometheus cannot scrape the specgate exporter at {{ $labels.instance }} (job {{ $labels.job }}) '
                           + 'for 5 minutes: acceptance, KV and latency alerts for it are blind.',
              runbook_url: runbook('SpecgateExporterDown'),
            },
          },
          {
            alert: 'SpecgateEngineDown',
            expr: '%s == 0' % sel('specgate_engine_up'),
            'for': '10m',
            labels: { severity: 'critical' },
            annotations: {
              summary: 'An inference engine is not answering its specgate exporter.',
              description: 'The specgate exporter at {{ $labels.instance }} has not scraped its {{ $labels.engine }} '
                           + 'engine successfully for 10 minutes.',
              runbook_url: runbook('SpecgateEngineDown'),
            },
          },
          // Intermittent or parse errors while the engine is up (a fully down engine is SpecgateEngineDown).
          {
            alert: 'SpecgateScrapeErrors',
            expr: |||
              (
                sum by (namespace, job, instance, engine, reason) (increase(%(errors)s[10m])) > 0
              )
              and on (job, instance)
              (%(engine_up)s == 1)
            ||| % { errors: sel('specgate_engine_scrape_errors_total'), engine_up: sel('specgate_engine_up') },
            'for': '15m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'A specgate exporter keeps failing to scrape its engine.',
              description: '{{ $value | printf "%.0f" }} scrapes of the {{ $labels.engine }} engine behind {{ $labels.instance }} '
                           + 'failed with reason {{ $labels.reason }} in the last 10 minutes, for 15 minutes, while other '
                           + "scrapes succeed. Derived values have gaps; a parse error means the engine's page changed.",
              runbook_url: runbook('SpecgateScrapeErrors'),
            },
          },
          {
            alert: 'SpecgateEngineRestarted',
            expr: |||
              sum by (namespace, job, instance, model, engine, rank) (increase(%s[30m])) > 0
            ||| % sel('specgate_engine_restarts_total'),
            labels: { severity: 'warning' },
            annotations: {
              summary: 'An inference engine restarted.',
              description: 'The {{ $labels.engine }} engine serving {{ $labels.model }} rank {{ $labels.rank }} behind '
                           + '{{ $labels.instance }} restarted {{ $value | printf "%.0f" }} time(s) in the last 30 minutes '
                           + '(its counters went down or its start time changed). Windows across the restart are not used '
                           + 'as acceptance evidence.',
              runbook_url: runbook('SpecgateEngineRestarted'),
            },
          },
        ],
      },
    ],
  },
}
