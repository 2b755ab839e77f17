"""Write tests/fixtures/trtllm/*.txt: `trtllm-serve` /metrics pages GENERATED from TensorRT-LLM's source, not captured.

TensorRT-LLM needs a GPU, so no page of a running server exists here. These pages are built with
prometheus_client (the library trtllm-serve's collector uses) from the definitions in
NVIDIA/TensorRT-LLM@050f80def8df `tensorrt_llm/metrics/collector.py`:

- `MetricsCollector.__init__`: each family's name (`metric_prefix = "trtllm_"` + name), documentation,
  label names (`self.labels` = {"model_name", "engine_type"}, plus `token_position` on the per-position
  counters, `finished_reason` on `request_success_total`) and the default bucket bounds;
- `log_request_metrics_dict`: what one finished request adds (TTFT / TPOT / e2e observations, prompt and
  generation tokens, per-position drafted / accepted up to the last position with a draft);
- `log_iteration_stats`: what one iteration sets or adds (running / waiting, the KV block gauges and
  `kv_cache_utilization` = usedNumBlocks / maxNumBlocks, `specDecodingStats` numDraftTokens /
  numAcceptedTokens added to the counters, acceptanceLength / draftOverhead set as gauges).

Only the families the adapter reads, plus two it must ignore (`request_success_total`,
`e2e_request_latency_seconds`), are built. The numbers are a made-up scenario (two requests, then four),
chosen so every arithmetic identity of the source holds; the `_created` timestamps are fixed. Every page
starts with comment lines saying all this. Run: `.venv/bin/python tools/trtllm_fixtures.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict
from unittest import mock

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "trtllm"
SOURCE = "NVIDIA/TensorRT-LLM@050f80def8df tensorrt_llm/metrics/collector.py"
LABELS = {"model_name": "Qwen/Qwen3-8B", "engine_type": "trtllm"}
P = "trtllm_"
CREATED = 1764633600.0  # the fixed `_created` timestamp of every series (2025-12-02T00:00:00Z)
HEADER = (f"# GENERATED, NOT CAPTURED: tools/trtllm_fixtures.py from {SOURCE}\n"
          "# (MetricsCollector.__init__ names, labels and default buckets; log_request_metrics_dict and\n"
          "# log_iteration_stats increments) with a made-up scenario; no TensorRT-LLM server produced this page.\n")
TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                40.0, 80.0, 160.0, 640.0, 2560.0]
TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
                80.0]
E2E_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
               960.0, 1920.0, 7680.0]


@contextmanager
def _fixed_clock() -> Iterator[None]:
    with mock.patch("time.time", return_value=CREATED):
        yield


class Collector:
    """The families of MetricsCollector.__init__ the adapter reads (and two it ignores), in one registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r, lab = self.registry, list(LABELS)
        pos = [*lab, "token_position"]
        with _fixed_clock():
            self.success = Counter(P + "request_success_total", "Count of successfully processed requests.",
                                   [*lab, "finished_reason"], registry=r)
            self.e2e = Histogram(P + "e2e_request_latency_seconds",
                                 "Histogram of end to end request latency in seconds.", lab, buckets=E2E_BUCKETS,
                                 registry=r)
            self.ttft = Histogram(P + "time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                                  lab, buckets=TTFT_BUCKETS, registry=r)
            self.tpot = Histogram(P + "time_per_output_token_seconds",
                                  "Histogram of time per output token in seconds.", lab, buckets=TPOT_BUCKETS,
                                  registry=r)
            self.prompt = Counter(P + "prompt_tokens_total", "Cumulative number of prompt (input) tokens processed.",
                                  lab, registry=r)
            self.generation = Counter(P + "generation_tokens_total",
                                      "Cumulative number of generation (output) tokens produced.", lab, registry=r)
            self.utilization = Gauge(P + "kv_cache_utilization", "KV cache utilization", lab, registry=r)
            self.running = Gauge(P + "num_requests_running", "Number of active requests", lab, registry=r)
            self.waiting = Gauge(P + "num_requests_waiting", "Number of queued requests", lab, registry=r)
            self.max_blocks = Gauge(P + "kv_cache_max_blocks", "Maximum number of KV cache blocks", lab, registry=r)
            self.free_blocks = Gauge(P + "kv_cache_free_blocks", "Number of free KV cache blocks", lab, registry=r)
            self.used_blocks = Gauge(P + "kv_cache_used_blocks", "Number of used KV cache blocks", lab, registry=r)
            self.tokens_per_block = Gauge(P + "kv_cache_tokens_per_block", "Number of tokens per KV cache block",
                                          lab, registry=r)
            self.draft_tokens = Counter(P + "spec_decode_num_draft_tokens_total",
                                        "Total number of draft tokens in speculative decoding", lab, registry=r)
            self.accepted_tokens = Counter(P + "spec_decode_num_accepted_tokens_total",
                                           "Total number of accepted tokens in speculative decoding", lab, registry=r)
            self.acceptance_length = Gauge(P + "spec_decode_acceptance_length",
                                           "Acceptance length in speculative decoding", lab, registry=r)
            self.draft_overhead = Gauge(P + "spec_decode_draft_overhead", "Draft overhead in speculative decoding",
                                        lab, registry=r)
            self.drafted_pos = Counter(P + "spec_decode_drafted_tokens_total",
                                       "Total drafted tokens per speculative decoding position.", pos, registry=r)
            self.accepted_pos = Counter(P + "spec_decode_accepted_tokens_total",
                                        "Total accepted tokens per speculative decoding position.", pos, registry=r)
            # the collector creates its label children when it first logs; the server logs config at startup
            # and the first iteration before any request: make the unlabelled-by-request children exist
            for fam in (self.prompt, self.generation, self.draft_tokens, self.accepted_tokens):
                fam.labels(**LABELS)
            for h in (self.e2e, self.ttft, self.tpot):
                h.labels(**LABELS)

    def finished_request(self, *, ttft: float, tpot: float, e2e: float, prompt: int, generated: int,
                         drafted: list[int], accepted: list[int]) -> None:
        """log_request_metrics_dict for one finished request (finish reason "stop")."""
        with _fixed_clock():
            self.success.labels(**LABELS, finished_reason="stop").inc(1)
            self.e2e.labels(**LABELS).observe(e2e)
            self.ttft.labels(**LABELS).observe(ttft)
            self.tpot.labels(**LABELS).observe(tpot)
            self.prompt.labels(**LABELS).inc(prompt)
            self.generation.labels(**LABELS).inc(generated)
            last = max((i for i, d in enumerate(drafted) if d > 0), default=-1)
            for i in range(last + 1):
                if drafted[i] > 0:
                    self.drafted_pos.labels(**LABELS, token_position=str(i)).inc(drafted[i])
                if accepted[i] > 0:
                    self.accepted_pos.labels(**LABELS, token_position=str(i)).inc(accepted[i])

    def iteration(self, *, active: int, queued: int, max_blocks: int, used_blocks: int, tokens_per_block: int,
                  draft_tokens: int, accepted_tokens: int, requests_with_drafts: int) -> None:
        """log_iteration_stats for one iteration's stats (kvCacheStats, specDecodingStats)."""
        self.running.labels(**LABELS).set(active)
        self.waiting.labels(**LABELS).set(queued)
        self.utilization.labels(**LABELS).set(used_blocks / max_blocks)
        self.max_blocks.labels(**LABELS).set(max_blocks)
        self.free_blocks.labels(**LABELS).set(max_blocks - used_blocks)
        self.used_blocks.labels(**LABELS).set(used_blocks)
        self.tokens_per_block.labels(**LABELS).set(tokens_per_block)
        if draft_tokens > 0:
            self.draft_tokens.labels(**LABELS).inc(draft_tokens)
        if accepted_tokens > 0:
            self.accepted_tokens.labels(**LABELS).inc(accepted_tokens)
        if requests_with_drafts:
            # TensorRT-LLM's acceptanceLength: (accepted + requests with drafts) / requests with drafts
            self.acceptance_length.labels(**LABELS).set((accepted_tokens + requests_with_drafts) / requests_with_drafts)
        self.draft_overhead.labels(**LABELS).set(0.12)

    def page(self) -> str:
        return HEADER + generate_latest(self.registry).decode()


class Request(TypedDict):
    ttft: float
    tpot: float
    e2e: float
    prompt: int
    generated: int
    drafted: list[int]
    accepted: list[int]


# max_draft_len 3 (a chain): every round drafts 3 tokens, so drafted per position is the rounds at each position
POOL = {"max_blocks": 4096, "tokens_per_block": 32}
REQUESTS: list[Request] = [
    {"ttft": 0.045, "tpot": 0.012, "e2e": 0.81, "prompt": 512, "generated": 64, "drafted": [20, 20, 20],
     "accepted": [17, 13, 9]},
    {"ttft": 0.090, "tpot": 0.015, "e2e": 1.40, "prompt": 1024, "generated": 96, "drafted": [31, 31, 31],
     "accepted": [25, 20, 14]},
    {"ttft": 0.030, "tpot": 0.011, "e2e": 0.52, "prompt": 256, "generated": 48, "drafted": [16, 16, 16],
     "accepted": [12, 11, 7]},
    {"ttft": 0.210, "tpot": 0.020, "e2e": 2.10, "prompt": 2048, "generated": 128, "drafted": [45, 45, 45],
     "accepted": [37, 30, 14]},
]


def build() -> dict[str, str]:
    """before: after the first iteration, no request finished; after-2 / after-4: two / four requests finished,
    the iteration counters holding the same draft and accepted tokens as the per-position sums."""
    c = Collector()
    c.iteration(active=0, queued=0, max_blocks=POOL["max_blocks"], used_blocks=0,
                tokens_per_block=POOL["tokens_per_block"], draft_tokens=0, accepted_tokens=0, requests_with_drafts=0)
    pages = {"metrics-before": c.page()}
    for n, name, batch in ((2, "metrics-after-2", REQUESTS[:2]), (4, "metrics-after-4", REQUESTS[2:])):
        for req in batch:
            c.finished_request(**req)
        c.iteration(active=len(batch), queued=1, max_blocks=POOL["max_blocks"], used_blocks=300 + 100 * n,
                    tokens_per_block=POOL["tokens_per_block"],
                    draft_tokens=sum(sum(r["drafted"]) for r in batch),
                    accepted_tokens=sum(sum(r["accepted"]) for r in batch),
                    requests_with_drafts=len(batch))
        pages[name] = c.page()
    return pages


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in build().items():
        (OUT / f"{name}.txt").write_text(text)
        print(f"wrote {OUT / name}.txt")


if __name__ == "__main__":
    main()
