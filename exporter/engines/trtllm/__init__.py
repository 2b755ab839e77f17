"""TensorRT-LLM (`trtllm-serve`, PyTorch backend): names and what its `/metrics` leaves undetermined.

Written from TensorRT-LLM's source, not from a running engine (it needs a GPU): `MetricsCollector` in
`tensorrt_llm/metrics/collector.py` at NVIDIA/TensorRT-LLM commit 050f80def8df (the families, their
labels and bucket bounds; `log_request_metrics_dict` and `log_iteration_stats` for what feeds them).
The fixtures (tests/fixtures/trtllm/) are generated from those definitions by
`tools/trtllm_fixtures.py` and say so; none is a capture.

- Names: the collector prefixes every family with `trtllm_` itself (`metric_prefix`); Dynamo re-exports
  the same families as `trtllm:`; both spellings are read. Older TensorRT-LLM (the collector before
  `metric_prefix`) wrote bare `time_to_first_token_seconds`, which no prefix identifies: not read.
- Streams: the collector's labels are the server's `model_name` and `engine_type` (one value per
  server): one stream per `model_name`, rank None (attention-DP ranks report through one collector).
- Request side (`log_request_metrics_dict`, once per finished request, with `return_perf_metrics`):
  TTFT `time_to_first_token_seconds`; TPOT `time_per_output_token_seconds` (one observation per
  request: it is TensorRT-LLM's per-request TPOT, not vLLM's old per-step name); `prompt_tokens_total`,
  `generation_tokens_total`; per draft position `spec_decode_drafted_tokens_total{token_position}` and
  `spec_decode_accepted_tokens_total{token_position}`.
- Iteration side (`log_iteration_stats`, with `enable_iter_perf_stats`): `num_requests_running` /
  `_waiting`; the pool `kv_cache_max_blocks` × `kv_cache_tokens_per_block` (allocated), free slots
  `kv_cache_free_blocks` × `kv_cache_tokens_per_block`, usage `kv_cache_utilization` (used / max
  blocks); `spec_decode_num_draft_tokens_total` / `spec_decode_num_accepted_tokens_total`
  (`specDecodingStats` numDraftTokens / numAcceptedTokens, summed per iteration).
- Left out, and why:
  - draft rounds (`drafts`, so L): no family counts them. `spec_decode_drafted_tokens_total
    {token_position="0"}` equals the rounds only for a chain drafter; a tree (EAGLE `eagle_choices`,
    `max_total_draft_tokens` above `max_draft_len`) drafts several nodes at one position, and the page
    does not say which runs. The adapter exports no drafts rather than a guess, so the exporter
    derives no L or rate windows for TensorRT-LLM; the cumulative draft and accepted tokens stay in
    the snapshot (`exporter once`).
  - `spec_decode_acceptance_length` / `spec_decode_draft_overhead`: gauges of the last iteration only
    (re-sent while idle), never a window's value.
  - ITL: no per-step family. Used tokens: `kv_cache_used_blocks` counts whole blocks, not tokens.
  - `/perf_metrics`: per-request records (`tensorrt_llm/serve/_perf_metrics_schema.py`
    `SpeculativeDecodingMetrics`: acceptance_rate, total_accepted_draft_tokens, total_draft_tokens) —
    the same quantities as the counters above, per request and without rounds either; not read.
  - `*_config_info` families: their label keys are whatever the server passes; not read.

This package: the adapter here (every hook is the base's: k from the accepted-per-position series);
`schedule.py`, the `draft_len_schedule` reader (the gate's TensorRT-LLM profile and `specgate tune --emit` read
it; the exporter is told no TensorRT-LLM schedule).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from exporter.engines.base import (
    EngineAdapter,
    EngineSnapshot,
    GetJson,
    Histogram,
    ParsedPage,
    SideInfo,
    SpecCounters,
    StreamKey,
    StreamSnapshot,
)
from exporter.engines.common import (
    HistogramMemo,
    SeriesKeys,
    dense,
    finite,
    fold,
    histograms,
    per_position,
    samples,
)
from exporter.engines.versions import VersionRange

if TYPE_CHECKING:
    from exporter.engines import EngineKind  # the registry's typing spelling

KIND: Final = "trtllm"
PREFIXES: tuple[str, ...] = ("trtllm_", "trtllm:")

RUNNING = "num_requests_running"
WAITING = "num_requests_waiting"
KV_UTILIZATION = "kv_cache_utilization"
KV_MAX_BLOCKS = "kv_cache_max_blocks"
KV_FREE_BLOCKS = "kv_cache_free_blocks"
TOKENS_PER_BLOCK = "kv_cache_tokens_per_block"
PROMPT = "prompt_tokens_total"
GENERATION = "generation_tokens_total"
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
DRAFTED_POS = "spec_decode_drafted_tokens_total"
ACCEPTED_POS = "spec_decode_accepted_tokens_total"
POSITION_LABEL = "token_position"
TTFT = "time_to_first_token_seconds"
TPOT = "time_per_output_token_seconds"

GAUGES = (RUNNING, WAITING, KV_UTILIZATION, KV_MAX_BLOCKS, KV_FREE_BLOCKS, TOKENS_PER_BLOCK)
COUNTERS = (PROMPT, GENERATION, DRAFT_TOKENS, ACCEPTED)
FAMILIES = frozenset({*GAUGES, *COUNTERS, DRAFTED_POS, ACCEPTED_POS,
                      *(h + s for h in (TTFT, TPOT) for s in ("_bucket", "_count", "_sum"))})
# the labels a family must carry to be read (exporter.engines.versions.conforming; `_bucket` needs `le` anyway)
SHAPES: Mapping[str, frozenset[str]] = {DRAFTED_POS: frozenset({POSITION_LABEL}),
                                        ACCEPTED_POS: frozenset({POSITION_LABEL})}
# No running TensorRT-LLM was checked and the source read carries no version of its own (the commit's
# tensorrt_llm/version.py is not in the stored copy): no range, so `version_tested` reads "unknown".
TESTED: VersionRange | None = None


def _key(labels: Mapping[str, str]) -> StreamKey:
    return StreamKey(labels.get("model_name"), None)


def pool_tokens(max_blocks: float | None, tokens_per_block: float | None) -> int | None:
    """Allocated pool in tokens = maxNumBlocks × tokensPerBlock (KvCacheStats, primary pool)."""
    if max_blocks is None or tokens_per_block is None or tokens_per_block <= 0:
        return None
    return int(max_blocks) * int(tokens_per_block)


class TrtllmAdapter(EngineAdapter):
    """Normalises a `trtllm-serve` page into one stream per `model_name`."""

    kind: EngineKind = KIND
    prefixes = PREFIXES
    families = FAMILIES
    shapes = SHAPES
    tested_versions = TESTED

    def __init__(self) -> None:
        self._histograms: HistogramMemo[StreamKey] = HistogramMemo()
        self._keys = SeriesKeys(_key)

    def side_info(self, get_json: GetJson) -> SideInfo:
        """The version from `GET /version` (trtllm-serve's own endpoint); nothing else is read beside
        `/metrics` (module docstring: `/perf_metrics` adds no number the counters lack)."""
        ver = (get_json("/version") or {}).get("version")
        return SideInfo(version=ver if isinstance(ver, str) else None)

    def side_incomplete(self, side: SideInfo) -> bool:
        """Nothing beside `/metrics` is needed for a number: never asked again."""
        return False

    def snapshot(self, page: ParsedPage, timestamp: float, side: SideInfo | None = None) -> EngineSnapshot:
        side = side or SideInfo()
        key_of = self._keys.key
        g = {b: fold(samples(page, KIND, b), key_of, "max") for b in GAUGES}
        c = {b: fold(samples(page, KIND, b), key_of, "sum") for b in COUNTERS}
        beyond = 0
        per_pos: dict[str, dict[StreamKey, dict[int, float]]] = {DRAFTED_POS: {}, ACCEPTED_POS: {}}
        for base, into in per_pos.items():
            beyond += per_position(samples(page, KIND, base), POSITION_LABEL, key_of, into)
        ttft: dict[StreamKey, Histogram] = histograms(page, f"{KIND}:{TTFT}", self._keys, self._histograms)
        tpot: dict[StreamKey, Histogram] = histograms(page, f"{KIND}:{TPOT}", self._keys, self._histograms)
        keys: set[StreamKey] = set(ttft) | set(tpot) | set(per_pos[DRAFTED_POS]) | set(per_pos[ACCEPTED_POS])
        for folded in (*g.values(), *c.values()):
            keys |= set(folded)
        hints = ["trtllm: no draft-round counter; L not derived (drafts undetermined)"] if (
            c[DRAFT_TOKENS] or per_pos[DRAFTED_POS]) else []
        streams = []
        for key in sorted(keys, key=lambda k: k[0] or ""):
            spec = self._spec(key, c, per_pos)
            tpb = g[TOKENS_PER_BLOCK].get(key)
            free = g[KV_FREE_BLOCKS].get(key)
            streams.append(StreamSnapshot(
                model=key.model, rank=None,
                kv_pool_tokens=pool_tokens(g[KV_MAX_BLOCKS].get(key), tpb),
                kv_block_size=int(tpb) if tpb is not None and tpb > 0 else None,
                kv_usage_ratio=g[KV_UTILIZATION].get(key),
                kv_available_tokens=free * tpb if free is not None and tpb is not None and tpb > 0 else None,
                spec=spec, ttft=ttft.get(key), tpot=tpot.get(key),
                prompt_tokens=c[PROMPT].get(key), generation_tokens=c[GENERATION].get(key),
                requests_running=g[RUNNING].get(key), requests_waiting=g[WAITING].get(key),
            ))
        start = page.get("process_start_time_seconds", [])
        return EngineSnapshot(
            engine=KIND, timestamp=timestamp, streams=tuple(streams),
            process_start_time=finite(start[0][1]) if start else None,
            version=side.version, version_hints=tuple(hints),
            anomalies={"position_limit": beyond} if beyond else {},
        )

    @staticmethod
    def _spec(key: StreamKey, c: Mapping[str, Mapping[StreamKey, float]],
              per_pos: Mapping[str, Mapping[StreamKey, Mapping[int, float]]]) -> SpecCounters | None:
        """Draft and accepted tokens: the iteration counters when the page has them, else the per-position
        sums (request side); accepted per position from `spec_decode_accepted_tokens_total`. Never drafts."""
        drafted = per_pos[DRAFTED_POS].get(key, {})
        accepted = per_pos[ACCEPTED_POS].get(key, {})
        draft_tokens = c[DRAFT_TOKENS].get(key)
        accepted_tokens = c[ACCEPTED].get(key)
        if draft_tokens is None and accepted_tokens is None and not drafted and not accepted:
            return None
        if draft_tokens is None and drafted:
            draft_tokens = sum(drafted.values())
        if accepted_tokens is None and accepted:
            accepted_tokens = sum(accepted.values())
        return SpecCounters(
            drafts=None, draft_tokens=draft_tokens, accepted_tokens=accepted_tokens,
            accepted_per_position=dense(accepted),
        )
