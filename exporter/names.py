"""The output contract in one module: every `specgate_*` name, its type, HELP text and label set.

Why one module: the collector writes these series, the gate's evidence readers, the dashboard
generator and the recording-rule tests read them. A name spelled in four places drifts; a name
imported from here cannot (design.md "Exporter output"). Only the exporter's own families and
the gate's two families are here; engine-side names (`vllm:*`, `sglang:*`) live in their adapters.

`Family.name` is what prometheus_client is given (a counter without `_total`); `Family.series`
is the sample name Prometheus stores and PromQL selects (`_total` for counters, `_bucket` /
`_sum` / `_count` for the histogram). Next to the counter families, the PromQL the shipped
recording rules (`deploy/prometheus/specgate-rules.yaml`) compute from them — as vLLM's
`SpecDecodingProm` documents its counters — so whoever changes a counter sees what reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["gauge", "counter", "histogram"]

# Label sets (design.md "Exporter output"): per-stream series carry model/engine/rank, exporter-level
# series engine only, windowed gauges add `window`; the gate's series carry no engine.
STREAM_LABELS: tuple[str, ...] = ("model", "engine", "rank")
EXPORTER_LABELS: tuple[str, ...] = ("engine",)
WINDOW_LABELS: tuple[str, ...] = (*STREAM_LABELS, "window")


@dataclass(frozen=True)
class Family:
    """One metric family of the contract."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...]

    @property
    def series(self) -> str:
        """The sample name a query selects: `<name>_total` for a counter, `<name>` otherwise."""
        return f"{self.name}_total" if self.kind == "counter" else self.name

    @property
    def stored(self) -> tuple[str, ...]:
        """Every sample name Prometheus stores for this family (a histogram stores three)."""
        if self.kind == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.series,)


# --- engine health (exporter-level: label `engine` only) -------------------------------------------------

ENGINE_UP = Family("specgate_engine_up", "gauge", "1 if the last scrape of the engine succeeded", EXPORTER_LABELS)
ENGINE_SCRAPE_DURATION = Family("specgate_engine_scrape_duration_seconds", "gauge",
                                "Duration of the last engine fetch+parse", EXPORTER_LABELS)
ENGINE_SCRAPE_ERRORS = Family("specgate_engine_scrape_errors", "counter", "Failed engine scrapes by reason",
                              ("engine", "reason"))
ENGINE_ANOMALIES = Family("specgate_engine_anomalies", "counter",
                          "Engine values left out or not trusted, by reason", ("engine", "reason"))
"""Reasons (exporter.sanity.ANOMALY_REASONS): `duplicate` (a series given twice on a page: the first is taken),
`negative` / `non_finite` (a sample no family we read can have, or a value the adapter's arithmetic made
infinite), `impossible` (values no engine can report or that cannot hold together, e.g. a pool above 2**40
tokens, a depth above 64, more accepted than proposed tokens; exporter.bounds), `position_limit` (draft
positions past 64),
`stream_limit` (streams past `--max-streams`), `multiple_engines` (a start time moving back: more than one
engine process answers the URL), `shape` (a family without a label the adapter needs to read it, e.g. a
per-position counter without its position: left out whole, exporter.engines.versions). Each is absent from
the output instead; any increase is worth a look."""
ENGINE_INFO = Family("specgate_engine_info", "gauge", "Detected engine and version",
                     ("engine", "version", "version_tested"))
"""`version_tested`: "true" when the engine's version is in the range its adapter was checked against,
"false" outside it (said once in the log; only families of the expected shape are read), "unknown" when the
engine does not say its version or the adapter has no range (exporter.engines.versions)."""
ENGINE_READY = Family("specgate_engine_ready_seconds", "gauge",
                      "Cold start to first successful scrape of a ready engine (startup staging)", EXPORTER_LABELS)
ENGINE_SPECULATIVE = Family("specgate_engine_speculative_info", "gauge",
                            "Speculative settings the engine reports (SGLang /server_info)",
                            ("engine", "algorithm", "num_draft_tokens", "num_steps"))
"""SGLang only: `speculative_algorithm` (NGRAM, STANDALONE, EAGLE3, ...), `speculative_num_draft_tokens`
and `speculative_num_steps` as `/server_info` gives them (a value it does not give is ""); absent when
the engine runs no speculation or does not say. The gate's evidence identity reads the algorithm."""
ACCEPTANCE_SLO_TARGET = Family("specgate_acceptance_slo_target", "gauge",
                               "Configured target accepted tokens per verify", EXPORTER_LABELS)
WORKLOAD_DEMAND = Family("specgate_workload_demand_tokens", "gauge",
                         "Resident tokens of the configured request mix", EXPORTER_LABELS)

# --- pools and queue (per stream; absent while the engine is down) ---------------------------------------

KV_POOL = Family("specgate_kv_pool_tokens", "gauge", "Allocated KV pool in tokens (not the configured ceiling)",
                 (*STREAM_LABELS, "pool"))
"""`pool="target"`, or `pool="drafter"` where an engine reports a separate drafter pool (none does today)."""
KV_POOL_CONFIGURED = Family("specgate_kv_pool_configured_tokens", "gauge",
                            "Configured KV ceiling in tokens, when known", STREAM_LABELS)
CONTEXT_CAP = Family("specgate_context_cap_tokens", "gauge", "Per-request context cap in tokens", STREAM_LABELS)
KV_USAGE = Family("specgate_kv_usage_ratio", "gauge", "KV pool usage, 0..1", STREAM_LABELS)
KV_AVAILABLE = Family("specgate_kv_available_tokens", "gauge", "Free KV pool slots in tokens now (SGLang)",
                     STREAM_LABELS)
KV_USED = Family("specgate_kv_used_tokens", "gauge", "KV pool slots in use in tokens now (SGLang)", STREAM_LABELS)
KV_CACHE_MEMORY = Family("specgate_kv_cache_memory_bytes", "gauge",
                         "Memory of the KV cache pools as the engine reports it (SGLang)", STREAM_LABELS)
WEIGHT_MEMORY = Family("specgate_weight_memory_bytes", "gauge",
                       "Memory of the model weights as the engine reports it, when above 0 (SGLang)", STREAM_LABELS)
"""The memory bill from SGLang's `kv_cache_memory_usage_gb` / `weight_memory_usage_gb` (GiB, times 2**30).
SGLang's weight figure is a device-memory difference: on CPU it reads 0 or less (-0.21 on the nospec
capture), so it is exported only when above 0."""
REQUESTS_RUNNING = Family("specgate_requests_running", "gauge", "Requests running in the engine", STREAM_LABELS)
REQUESTS_WAITING = Family("specgate_requests_waiting", "gauge", "Requests waiting in the engine", STREAM_LABELS)

# --- speculative-decoding counters (per stream; monotonic across engine restarts) ------------------------

SPEC_DRAFTS = Family("specgate_spec_drafts", "counter", "Draft rounds (verify steps), monotonic across restarts",
                     STREAM_LABELS)
"""Recording rule `model:specgate_spec_drafts:rate5m`:

    sum by (namespace, model, engine) (rate(specgate_spec_drafts_total[5m]))
"""
SPEC_DRAFT_TOKENS = Family("specgate_spec_draft_tokens", "counter",
                           "Draft tokens proposed, monotonic across restarts", STREAM_LABELS)
"""Acceptance rate a = accepted / proposed, `model:specgate_spec_acceptance_rate:ratio_rate5m`:

    sum by (namespace, model, engine) (rate(specgate_spec_accepted_tokens_total[5m]))
    /
    (sum by (namespace, model, engine) (rate(specgate_spec_draft_tokens_total[5m])) > 0)
"""
"""Mean proposed depth k̄ = proposed / drafts, `model:specgate_spec_depth_mean:ratio_rate5m` (what
`SpecgateSpeculationShallow` compares with a quarter of `specgate_spec_depth_max`):

    sum by (namespace, model, engine) (rate(specgate_spec_draft_tokens_total[5m]))
    /
    (sum by (namespace, model, engine) (rate(specgate_spec_drafts_total[5m])) > 0)
"""
SPEC_ACCEPTED = Family("specgate_spec_accepted_tokens", "counter",
                       "Draft tokens accepted, monotonic across restarts", STREAM_LABELS)
"""Acceptance length L = 1 + accepted / drafts (bonus token included),
`model:specgate_spec_acceptance_length:ratio_rate5m`:

    1 +
      sum by (namespace, model, engine) (rate(specgate_spec_accepted_tokens_total[5m]))
    /
      (sum by (namespace, model, engine) (rate(specgate_spec_drafts_total[5m])) > 0)
"""
SPEC_ACCEPTED_PER_POSITION = Family("specgate_spec_accepted_tokens_per_position", "counter",
                                    "Accepted draft tokens by draft position", (*STREAM_LABELS, "position"))
"""Per-position rate p_i = accepted at position i / drafts (a lower bound when the depth varies: see
`POSITION_ACCEPTANCE_RATE`),
`model_position:specgate_spec_position_acceptance:ratio_rate5m`:

    sum by (namespace, model, engine, position) (rate(specgate_spec_accepted_tokens_per_position_total[5m]))
    / on (namespace, model, engine) group_left ()
    (sum by (namespace, model, engine) (rate(specgate_spec_drafts_total[5m])) > 0)
"""
ENGINE_RESTARTS = Family("specgate_engine_restarts", "counter",
                         "Engine restarts detected (counters went down or process start time changed)", STREAM_LABELS)
PREEMPTIONS = Family("specgate_preemptions", "counter", "Engine preemptions (vLLM)", STREAM_LABELS)

SPEC_BLOCK_ACCEPT_LENGTH = Family("specgate_spec_block_accept_length", "gauge",
                                  "The engine's own spec_block_accept_length gauge, last interval (SGLang)",
                                  STREAM_LABELS)
SPEC_CAP_LENGTH = Family("specgate_spec_cap_length", "gauge", "The engine's own spec_cap_length gauge, last "
                         "interval (SGLang)", STREAM_LABELS)
"""Passed through as SGLang reports them, on speculating streams only (SGLang shows both, at 0, without
speculation too); interval values, never a window's L (that comes from the counters)."""

# --- batch windows (per stream; the per-batch SLO) --------------------------------------------------------

WINDOW_ACCEPTANCE_LENGTH = Family("specgate_spec_window_acceptance_length", "histogram",
                                  "Accepted tokens per verify, one observation per completed batch window",
                                  STREAM_LABELS)
WINDOW_ACCEPTANCE_FRACTION = Family("specgate_spec_window_acceptance_fraction", "histogram",
                                    "Share of its ceiling a batch window accepted, (L - 1) / mean proposed depth: "
                                    "0 nothing, 1 every draft token", STREAM_LABELS)
"""One observation per completed, non-reset batch window with enough drafts (as the length histogram) whose
mean proposed depth is measured:

    f = (L − 1) / k̄,  k̄ = Δdraft_tokens / Δdrafts over the window   (= Δaccepted / Δdraft_tokens)

Why beside L: L near 1 means nothing accepted (garbled output, a drafter or tokenizer that does not match the
target) and L near 1 + k everything (repetition loops), but k varies (batch-size schedules, SGLang adaptive),
so an L of 3 is a ceiling at k = 2 and ordinary at k = 5; f puts every window on one scale whatever its depth
(`SpecgateAcceptanceNearZero` / `SpecgateAcceptanceNearCeiling` count windows with f ≤ ε and f > 1 − ε from the
buckets, ε = 0.05). k̄ is measured where the engine counts drafts and proposed tokens (vLLM, llama.cpp), and on
SGLang only while its depth held still over the window (its draft tokens are verify calls × the current depth;
under NGRAM or a depth that moved they are not the window's): elsewhere, and at k̄ = 0, the window observes
nothing (its count stays below `specgate_spec_windows_total`). A value outside [0, 1] is impossible and never observed. Buckets:
`exporter.windows.WINDOW_FRACTION_BUCKETS`."""
SPEC_WINDOWS = Family("specgate_spec_windows", "counter", "Completed batch windows with enough drafts (non-reset)",
                      STREAM_LABELS)
SPEC_WINDOWS_BELOW_SLO = Family("specgate_spec_windows_below_slo", "counter",
                                "Completed batch windows below the SLO target", STREAM_LABELS)
"""Burn rate over each alert window w in 5m, 30m, 1h, 6h, `model:specgate_spec_windows_below_slo:ratio_rate<w>`:

    sum by (namespace, model, engine) (rate(specgate_spec_windows_below_slo_total[w]))
    /
    (sum by (namespace, model, engine) (rate(specgate_spec_windows_total[w])) > 0)

against the error budget `1 - global:specgate_spec_window_slo_objective:ratio`.
"""

# --- sliding windows (per stream and `window`; absent while the engine is down) --------------------------

ACCEPTANCE_LENGTH = Family("specgate_spec_acceptance_length", "gauge",
                           "Accepted tokens per verify incl. bonus (L) over the window", WINDOW_LABELS)
ACCEPTANCE_RATE = Family("specgate_spec_acceptance_rate", "gauge", "Accepted / proposed draft tokens over the window",
                         WINDOW_LABELS)
POSITION_ACCEPTANCE_RATE = Family("specgate_spec_position_acceptance_rate", "gauge",
                                  "Accepted at draft position i / drafts over the window (basis: exact, or "
                                  "lower_bound when the depth varied)", (*WINDOW_LABELS, "position", "basis"))
"""vLLM only (SGLang has no per-position counter). `basis="exact"` when every draft of the window had the
configured depth (`specgate_spec_depth_mean` equals `specgate_spec_depth_max`), else `basis="lower_bound"`.
The exact reason: vLLM's denominator is `num_drafts`, every draft of the window, including the drafts that
proposed fewer than i + 1 tokens (a batch-size schedule at a lower k, ngram or suffix finding a shorter
match) and so never had a position i. The rate of position i among the drafts that reached it is
accepted_i / drafts_reaching_i >= accepted_i / drafts; how many drafts reached position i is not in the
counters, so only the bound is known. Mean equal to the maximum means every draft was full length (no draft
exceeds the maximum), so then the denominator is exact. The recording rule over the per-position counter
(`SPEC_ACCEPTED_PER_POSITION`) divides by the same drafts and is the same lower bound when depth varies."""
CARD_POSITION_RATE = Family("specgate_spec_card_position_acceptance_rate", "gauge",
                            "The drafter's acceptance card at draft position i, in this exporter's definition "
                            "(accepted_i / drafts) at the window's depth (basis: exact, lower_bound, upper_bound)",
                            (*WINDOW_LABELS, "position", "basis"))
"""Only with `--acceptance-card` (the plan's `evidence.reported.acceptance_card`, one row: `CARD_INFO`), beside
`POSITION_ACCEPTANCE_RATE` with the same labels, so `live < 0.8 * card` matches one to one (exporter.card):

    u_i = Π_{j≤i} c_j                          (conditional card rates c_j; unconditional rates are u_i)
    exact        p_i = u_i                       (every draft of the window had the full depth)
    lower_bound  u_i · max(0, (k̄ − i) / (k_max − i)),  upper_bound u_i   (the depth varied, or nobody can tell)

Why bounds when the depth varies: the exporter's p_i divides by every draft, p_i = u_i · f_i with f_i the share
of drafts that reached position i, which the counters do not give; f is non-increasing, at most 1, and sums to the
window's mean depth k̄ (`SPEC_DEPTH_MEAN`), so f_i ≥ (k̄ − i) / (k_max − i). Live `lower_bound` p_i below a
fraction of the card's `lower_bound` means u_i itself fell below that fraction of the card's. Positions the card
does not give or past k_max are absent; so is everything while the window's live rates are (too few drafts);
`--position-gauges false` leaves it out with the live gauge. Assumes a position's acceptance does not depend
on how long its draft was."""
CARD_ACCEPTANCE_LENGTH = Family("specgate_spec_card_acceptance_length", "gauge",
                                "The drafter's acceptance card's L at the window's depth (basis: exact, "
                                "lower_bound, upper_bound)", (*WINDOW_LABELS, "basis"))
"""Beside `ACCEPTANCE_LENGTH` (exporter.card.length_values): `exact` 1 + Σ_{i<k} u_i at a fixed depth k the card
covers (or the card's own L when it was measured at that k); when the depth varies, from the card's positions
up to k_max, `lower_bound` 1 + (k̄ / k_max) Σ_{i<k_max} u_i and `upper_bound` 1 + Σ_{i<⌊k̄⌋} u_i + (k̄ − ⌊k̄⌋)
u_⌊k̄⌋. Absent where the card cannot say (an L-only card measured at another k, positions short of k_max)."""
CARD_INFO = Family("specgate_spec_card_info", "gauge", "The acceptance card the exporter was given: its row and "
                   "how its rates were stated", ("engine", "row", "rates"))
"""1 with `--acceptance-card`: `row` the card row this deployment's traffic matches (the plan's
`acceptance_card.row`, default `overall`), `rates` conditional or unconditional as the card states them."""
SPEC_DEPTH_MEAN = Family("specgate_spec_depth_mean", "gauge",
                         "Mean draft tokens proposed per draft over the window (vLLM)", WINDOW_LABELS)
"""k̄ = Δdraft_tokens / Δdrafts over the window, `exporter.formulas.mean_depth` (vLLM's counters). Absent when
the window has fewer drafts than `--min-drafts`, and on SGLang, which has no proposed-token counter (its
draft tokens are verify calls × (spec_num_draft_tokens − 1), a fixed k by construction). Below the maximum
whenever a batch-size schedule lowered k or a drafterless proposer found a shorter match (real vLLM 0.32,
schedule [[1,1,3],[2,8,1]], ngram: 2.76 at one request in flight, 1.77 at eight)."""
SPEC_DEPTH_MAX = Family("specgate_spec_depth_max", "gauge",
                        "Configured largest speculation depth k, by where it was read (source)",
                        (*STREAM_LABELS, "source"))
"""One series per speculating stream, `source` naming where k came from, first found wins:
`positions` (vLLM: the number of `position` series of `vllm:spec_decode_num_accepted_tokens_per_pos`, which
vLLM creates for exactly `num_speculative_tokens` positions; vLLM serves its speculative config on no HTTP
endpoint outside dev mode), `server_info` (SGLang `/server_info`: `speculative_num_draft_tokens − 1`, or
`speculative_num_steps` for a top-k 1 chain, never the steps for DFlash/DSpark, `exporter.engines.sglang.depth`; under `speculative_adaptive`
with SGLang's default tiers, their largest candidate step), `schedule` (the exporter was told the schedule:
`--speculative-config` / `--speculative-adaptive-config`, `exporter.schedule`'s `max_k`), `gauge` (SGLang's
current `spec_num_draft_tokens` / `spec_num_steps`, when nothing else says; adaptive speculation moves them,
so then it is the current depth). Absent when speculation is not configured, and on SGLang under
`--speculative-adaptive` with a config file the exporter was not given (its `/server_info` steps are the
starting point, not the largest candidate)."""
SPEC_NUM_STEPS = Family("specgate_spec_num_steps", "gauge", "SGLang's current spec_num_steps as reported",
                        STREAM_LABELS)
SPEC_NUM_DRAFT_TOKENS = Family("specgate_spec_num_draft_tokens", "gauge",
                               "SGLang's current spec_num_draft_tokens as reported", STREAM_LABELS)
"""SGLang's gauges on speculating streams, as the engine reports them: `--speculative-adaptive` moves them
(the real EAGLE3 arm went 3 -> 1 steps, 4 -> 2 draft tokens within three requests). SGLang refreshes them
once per decode-log interval, so they read 0 before the first one; NGRAM takes no steps (0)."""
SPEC_DEPTH_VARIES = Family("specgate_spec_depth_varies", "gauge",
                           "1 when the speculation depth varied over the window, else 0", WINDOW_LABELS)
"""vLLM: 1 when `specgate_spec_depth_mean` is below `specgate_spec_depth_max` (some draft was shorter than the
maximum: a schedule's lower k, or a drafterless proposer's shorter match; a mean equal to the maximum means
every draft was full, so ngram and suffix windows read 0 exactly when that held). SGLang: 1 for a proposer
that varies by construction (NGRAM), or when `spec_num_steps` / `spec_num_draft_tokens` moved at any scrape
within the window (adaptive speculation). Absent when the window has too few drafts or the maximum is unknown."""
SPEC_DEPTH_SCHEDULED = Family("specgate_spec_depth_scheduled", "gauge",
                              "The k the declared schedule gives at the current batch (requests running)",
                              STREAM_LABELS)
"""Only when the exporter was given the schedule (`--speculative-config JSON`, vLLM's own string;
`--speculative-adaptive-config FILE`, SGLang's file, or `default` for SGLang's built-in tiers):
`exporter.schedule.DepthSchedule.k_at(specgate_requests_running)` (for an SGLang tier, its largest candidate).
0 means the schedule itself turned speculation off at this batch (an intended stop, not a failure)."""
TTFT = Family("specgate_ttft_seconds", "gauge", "Time to first token quantile over the window",
              (*WINDOW_LABELS, "quantile"))
TPOT = Family("specgate_tpot_seconds", "gauge",
              "Time per output token quantile over the window (one observation per request; compare arms by "
              "this and tokens/s)", (*WINDOW_LABELS, "quantile"))
ITL = Family("specgate_itl_seconds", "gauge",
             "Inter-token latency quantile over the window (vLLM: one observation per engine step, so a "
             "speculative arm shows fewer, longer gaps; never compare arms by it)", (*WINDOW_LABELS, "quantile"))
DECODE_RATE = Family("specgate_decode_tokens_per_second", "gauge", "Generated tokens per second over the window",
                     WINDOW_LABELS)
VERIFY_CYCLE = Family("specgate_verify_cycle_seconds", "gauge",
                      "Verify-cycle time per running sequence over the window (seed 004 cycleMs)", WINDOW_LABELS)

# --- the gate's own series (`specgate serve`, `specgate controller`) -------------------------------------

GATE_DECISIONS = Family("specgate_gate_decisions", "counter", "Gate decisions answered, by decision.",
                        ("deployment", "decision"))
GATE_LINE_STATUS = Family("specgate_gate_line_status", "gauge",
                          "Status of each budget line in the last decision (1 for the status it had).",
                          ("deployment", "line", "status"))

EXPORTER_FAMILIES: tuple[Family, ...] = (
    ENGINE_UP, ENGINE_SCRAPE_DURATION, ENGINE_SCRAPE_ERRORS, ENGINE_ANOMALIES, ENGINE_INFO, ENGINE_SPECULATIVE,
    ENGINE_READY, ACCEPTANCE_SLO_TARGET,
    WORKLOAD_DEMAND, KV_POOL, KV_POOL_CONFIGURED, CONTEXT_CAP, KV_USAGE, REQUESTS_RUNNING, REQUESTS_WAITING,
    KV_AVAILABLE, KV_USED, KV_CACHE_MEMORY, WEIGHT_MEMORY,
    SPEC_DRAFTS, SPEC_DRAFT_TOKENS, SPEC_ACCEPTED, SPEC_ACCEPTED_PER_POSITION, SPEC_BLOCK_ACCEPT_LENGTH,
    SPEC_CAP_LENGTH, ENGINE_RESTARTS, PREEMPTIONS,
    WINDOW_ACCEPTANCE_LENGTH, WINDOW_ACCEPTANCE_FRACTION, SPEC_WINDOWS, SPEC_WINDOWS_BELOW_SLO, ACCEPTANCE_LENGTH,
    ACCEPTANCE_RATE, POSITION_ACCEPTANCE_RATE, TTFT, TPOT, ITL, DECODE_RATE, VERIFY_CYCLE,
    SPEC_DEPTH_MAX, SPEC_NUM_STEPS, SPEC_NUM_DRAFT_TOKENS, SPEC_DEPTH_SCHEDULED, SPEC_DEPTH_MEAN, SPEC_DEPTH_VARIES,
    CARD_INFO, CARD_POSITION_RATE, CARD_ACCEPTANCE_LENGTH,
)
GATE_FAMILIES: tuple[Family, ...] = (GATE_DECISIONS, GATE_LINE_STATUS)

SERIES: frozenset[str] = frozenset(s for f in (*EXPORTER_FAMILIES, *GATE_FAMILIES) for s in f.stored)
"""Every sample name of the contract as Prometheus stores it (what a rule or dashboard may select)."""

# --- recording rules (`level:metric:operation`), defined in deploy/prometheus/specgate-rules.yaml ----------

SLO_OBJECTIVE_RULE = "global:specgate_spec_window_slo_objective:ratio"
BURN_WINDOWS: tuple[str, ...] = ("5m", "30m", "1h", "6h")


def windows_below_slo_rule(window: str) -> str:
    """The recorded burn ratio over one alert window (see `SPEC_WINDOWS_BELOW_SLO`)."""
    return f"model:specgate_spec_windows_below_slo:ratio_rate{window}"


DRAFTS_RATE_RULE = "model:specgate_spec_drafts:rate5m"
ACCEPTANCE_LENGTH_RULE = "model:specgate_spec_acceptance_length:ratio_rate5m"
ACCEPTANCE_RATE_RULE = "model:specgate_spec_acceptance_rate:ratio_rate5m"
POSITION_ACCEPTANCE_RULE = "model_position:specgate_spec_position_acceptance:ratio_rate5m"
DEPTH_MEAN_RULE = "model:specgate_spec_depth_mean:ratio_rate5m"
# Fleet rules by drafter revision (docs/scale.md; `drafter_revision` comes from the scrape config).
REVISION_ACCEPTANCE_LENGTH_RULE = "model_revision:specgate_spec_acceptance_length:ratio_rate5m"
REVISION_BELOW_SLO_RULE = "model_revision:specgate_spec_windows_below_slo:ratio_rate1h"
"""The fleet rules compute, per model and drafter revision however many pods:

    1 +
      sum by (namespace, model, engine, drafter_revision) (rate(specgate_spec_accepted_tokens_total[5m]))
    /
      (sum by (namespace, model, engine, drafter_revision) (rate(specgate_spec_drafts_total[5m])) > 0)

    sum by (namespace, model, engine, drafter_revision) (rate(specgate_spec_windows_below_slo_total[1h]))
    /
    (sum by (namespace, model, engine, drafter_revision) (rate(specgate_spec_windows_total[1h])) > 0)
"""

# Energy (issue 38): dcgm-exporter's per-GPU energy counter, joined to specgate's generated tokens per pod by
# the labels dcgm-exporter sets in Kubernetes (`pod`, `namespace`, `container` of the pod holding the GPU).
# Two naming generations: the default counters file up to dcgm-exporter 4.8.x (field 156, "Total energy
# consumption since boot (in mJ)"), and from 4.9.0 (which renames the default fields DCGM 4.7 deprecates, "energy
# from millijoules to joules") DCGM 4.7's base-unit field 1611 in joules, DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL
# (NVIDIA/go-dcgm@b7fa3154 pkg/dcgm/base_unit_fields_test.go pairs it with field 156). Power likewise:
# DCGM_FI_DEV_POWER_USAGE is DCGM 4.7's deprecated alias of DCGM_FI_DEV_BOARD_POWER_WATTS (field 155, W; go-dcgm
# pkg/dcgm/alias_resolution_test.go). Not specgate's series: the rules may select them.
DCGM_ENERGY_MJ_SERIES = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
DCGM_ENERGY_J_SERIES = "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"
DCGM_POWER_SERIES = "DCGM_FI_DEV_POWER_USAGE"
DCGM_BOARD_POWER_SERIES = "DCGM_FI_DEV_BOARD_POWER_WATTS"
FOREIGN_SERIES: frozenset[str] = frozenset({DCGM_ENERGY_MJ_SERIES, DCGM_ENERGY_J_SERIES})
"""Series of other exporters that a rule joins (what a rule may select besides SERIES and `up`)."""
GPU_POWER_RULE = "pod:specgate_gpu_energy_joules:rate5m"
TOKENS_PER_JOULE_RULE = "pod:specgate_tokens_per_joule:ratio_rate5m"
"""Per pod: watts of its GPUs (either DCGM generation, mJ scaled to J),

    sum by (namespace, pod) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{pod!=""}[5m])) / 1000
    or
    sum by (namespace, pod) (rate(DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL{pod!=""}[5m]))

and generated tokens per joule (no pod without a positive energy rate):

    sum by (namespace, pod) (specgate_decode_tokens_per_second{window="5m"})
    / on (namespace, pod)
    (
      (sum by (namespace, pod) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{pod!=""}[5m])) / 1000 > 0)
      or
      (sum by (namespace, pod) (rate(DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL{pod!=""}[5m])) > 0)
    )
"""

# --- per-pod window facts (issue 40): the fleet's answers of one value per pod ------------------------------------

FLEET_FACTS_GROUP = "specgate.fleet-facts"
FLEET_FACT_PREFIX = "pod:specgate_fleet_window_"
FLEET_DRAFTS_RULE = FLEET_FACT_PREFIX + "drafts:increase"
FLEET_ACCEPTED_RULE = FLEET_FACT_PREFIX + "accepted_tokens:increase"
FLEET_RESTARTS_RULE = FLEET_FACT_PREFIX + "restarts:increase"
FLEET_DRAFT_TOKENS_RULE = FLEET_FACT_PREFIX + "draft_tokens:increase"
FLEET_ENGINE_UP_RULE = FLEET_FACT_PREFIX + "engine_up:min"
"""One group evaluated every window w (the mixin's `_config.fleetFacts`; every fact labelled slo_window_seconds,
slo_target, slo_min_drafts), per pod with its ranks pooled; at the default w = 60 s:

    sum without (rank) (increase(specgate_spec_drafts_total[60s]))
    sum without (rank) (increase(specgate_spec_accepted_tokens_total[60s]))
    sum without (rank) (increase(specgate_engine_restarts_total[60s]))
    sum without (rank) (increase(specgate_spec_draft_tokens_total[60s]))
    min_over_time(specgate_engine_up[60s])
"""
FLEET_NOT_ELIGIBLE_RULE = FLEET_FACT_PREFIX + "not_eligible:bool"
FLEET_BELOW_TARGET_RULE = FLEET_FACT_PREFIX + "below_target:bool"
FLEET_NON_FINITE_RULE = FLEET_FACT_PREFIX + "non_finite:bool"
FLEET_ELIGIBLE_DRAFTS_RULE = FLEET_FACT_PREFIX + "eligible_drafts:increase"
FLEET_ELIGIBLE_ACCEPTED_RULE = FLEET_FACT_PREFIX + "eligible_accepted_tokens:increase"
FLEET_LENGTH_RULE = FLEET_FACT_PREFIX + "acceptance_length:quotient"
FLEET_COMPOSITE_RULES: frozenset[str] = frozenset({
    FLEET_NOT_ELIGIBLE_RULE, FLEET_BELOW_TARGET_RULE, FLEET_NON_FINITE_RULE, FLEET_ELIGIBLE_DRAFTS_RULE,
    FLEET_ELIGIBLE_ACCEPTED_RULE, FLEET_LENGTH_RULE,
})
"""Composites of the drafts, accepted and restarts facts above (a window eligible: drafts ≥ min_drafts, finite, no
restart; met: eligible and L = 1 + accepted / drafts ≥ the target; …; the window counts are recorded sparse, only
where true — not eligible (nor non-finite), non-finite, eligible below the target — so a healthy pod has none, and
the gate derives eligible and met from them), generated in deploy/mixin/rules.libsonnet from those increases and held by promtool in deploy/prometheus/tests/fleet_facts_test.yaml rather than quoted here."""
FLEET_FACT_RULES: frozenset[str] = frozenset({
    FLEET_DRAFTS_RULE, FLEET_ACCEPTED_RULE, FLEET_RESTARTS_RULE, FLEET_DRAFT_TOKENS_RULE, FLEET_ENGINE_UP_RULE,
    *FLEET_COMPOSITE_RULES,
})

RECORDED: frozenset[str] = frozenset({
    SLO_OBJECTIVE_RULE, *(windows_below_slo_rule(w) for w in BURN_WINDOWS), DRAFTS_RATE_RULE,
    ACCEPTANCE_LENGTH_RULE, ACCEPTANCE_RATE_RULE, POSITION_ACCEPTANCE_RULE, DEPTH_MEAN_RULE,
    REVISION_ACCEPTANCE_LENGTH_RULE, REVISION_BELOW_SLO_RULE, GPU_POWER_RULE, TOKENS_PER_JOULE_RULE,
    *FLEET_FACT_RULES,
})
"""Every recording rule the shipped rules file defines (a test compares the two)."""
