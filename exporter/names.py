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
`negative` / `non_finite` (a sample no family we read can have), `impossible` (values that cannot hold
together, e.g. more accepted than proposed tokens), `position_limit` (draft positions past 64),
`stream_limit` (streams past `--max-streams`), `multiple_engines` (a start time moving back: more than one
engine process answers the URL). Each is absent from the output instead; any increase is worth a look."""
ENGINE_INFO = Family("specgate_engine_info", "gauge", "Detected engine and version", ("engine", "version"))
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
"""Per-position rate p_i = accepted at position i / drafts,
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
                                  "Accepted at draft position i / drafts over the window", (*WINDOW_LABELS, "position"))
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
    WINDOW_ACCEPTANCE_LENGTH, SPEC_WINDOWS, SPEC_WINDOWS_BELOW_SLO, ACCEPTANCE_LENGTH, ACCEPTANCE_RATE,
    POSITION_ACCEPTANCE_RATE, TTFT, TPOT, ITL, DECODE_RATE, VERIFY_CYCLE,
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

RECORDED: frozenset[str] = frozenset({
    SLO_OBJECTIVE_RULE, *(windows_below_slo_rule(w) for w in BURN_WINDOWS), DRAFTS_RATE_RULE,
    ACCEPTANCE_LENGTH_RULE, ACCEPTANCE_RATE_RULE, POSITION_ACCEPTANCE_RULE,
    REVISION_ACCEPTANCE_LENGTH_RULE, REVISION_BELOW_SLO_RULE,
})
"""Every recording rule the shipped rules file defines (a test compares the two)."""
