"""SGLang (0.4 – 0.5.23): names, versions and traps (docs/operations/engines.md, "What the exporter reads").

- Pool: `sglang:max_total_num_tokens` (>= 0.5.6), else `max_total_num_tokens` from
  `/server_info` or `/get_server_info`; the configured ceiling (`--max-total-tokens`) only
  from the server info.
- Context cap: `sglang:context_len` (>= 0.5.12), else `context_length` from the server info.
- Speculation: `spec_verify_calls_total` (>= 0.5.13; per finished request, no rank) with
  `generation_tokens_total`; older versions only have the interval gauges
  `spec_accept_length` (incl. bonus) and `spec_num_draft_tokens`. `spec_accept_rate`
  changed meaning at 0.5.6 and 0.5.11: it is never read, the rate is recomputed.
- `spec_num_draft_tokens` is refreshed once per decode-log interval: a short run reads 0 there, so k
  falls back to `/server_info` `speculative_num_draft_tokens`. `spec_num_steps` / `spec_num_draft_tokens`
  are also passed through as reported (`--speculative-adaptive` moves them: 3 -> 1 steps on the real
  EAGLE3 arm).
- L is decode-only, vLLM's definition: `num_requests_total` (finished requests, counted with
  `generation_tokens_total` and `spec_verify_calls_total` when a request finishes) takes each request's
  prefill token out (`exporter.formulas.decode_only_length`); a page without it has no L (fail closed:
  generated / verify calls would overstate L by requests / verify calls).
- Budget lines: `kv_available_tokens` / `kv_used_tokens` (pool now), `kv_cache_memory_usage_gb` and
  `weight_memory_usage_gb` (memory bill, GiB; weights read 0 or less on CPU: kept only when > 0),
  `spec_block_accept_length` / `spec_cap_length` (as reported). `startup_time_seconds` is per SGLang
  phase (its `tokenizer_e2e` phase is not the time to ready) and is not read.
- Streams are keyed by (`model_name`, `dp_rank`). `tp_rank`/`pp_rank` replicate the same
  scheduler state (folded by max); `is_streaming`, `engine_type`, `moe_ep_rank`, `pid`,
  `priority`, `worker_addr` only split series (counters summed, gauges max).
- Request-side series carry no rank: they join the model's only DP rank, or form a
  per-model stream with rank None when the model runs several DP ranks.
- Behind Ray Serve LLM (SGLang >= 0.5.15's Ray metric backend, `srt/observability/ray_wrappers.py`) the
  families read `ray_sglang_<base>` (`:` sanitised to `_`, Ray's `ray_` namespace) and each replica comes
  from two Ray workers: the replica actor's (the tokenizer: request counters, latency histograms; its
  `ReplicaId` set) and the rank-0 scheduler actor's (pool, KV and speculation gauges; `ReplicaId` ""), both
  tagged `application`/`deployment`/`replica` by Ray's SGLangServer (ray-project/ray#64797). The two are
  one stream keyed by the replica (`replica`, else a non-empty `ReplicaId`, else the `WorkerId`: series
  without `replica` are not joined, nothing says which replica a scheduler worker serves), rank
  `<replica>` (`<replica>/<dp_rank>` under DP); Ray's per-process labels (`WorkerId`, `ReplicaId`,
  `Component`, `NodeAddress`, `SessionName`, `Version`) split nothing. A series given by two workers of
  one replica is a repeat: the first wins, each other counts `duplicate` (never summed).

This package: the adapter and its `/server_info` reader here; `depth.py`, THE SGLang k rule and the depth
hooks (`configured_depth`, `variable_by_construction`, `counted_depth`, `settings_depth`); `counts.py`, verify
calls and the interval gauges turned into vLLM's counts (`draft_counts`, `interval_gauge_is_new`,
`rate_from_length`); `schedule.py`, the `--speculative-adaptive-config` tiers (`told_schedule`); `stream.py`, the
per-request acceptance of `meta_info` / `sglext.spec_tokens_details` (`carries_acceptance`, `request_acceptance`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final

from exporter.engines.base import (
    EngineAdapter,
    EngineSnapshot,
    GetJson,
    Histogram,
    ParsedPage,
    Sample,
    SideInfo,
    SpecCounters,
    SpeculativeSettings,
    StreamKey,
    StreamSnapshot,
)
from exporter.engines.common import HistogramMemo, SeriesKeys, finite, fold, histograms, samples
from exporter.engines.sglang import counts, stream
from exporter.engines.sglang import depth as k_rule
from exporter.engines.sglang.schedule import sglang_adaptive_schedule
from exporter.engines.versions import VersionRange

if TYPE_CHECKING:
    from exporter.engines import EngineKind  # the registry's typing spelling

KIND: Final = "sglang"
PREFIXES: tuple[str, ...] = ("sglang:", "sglang_", "ray_sglang_")  # the last: Ray Serve LLM's re-export

# A stream key before rank-less series are resolved: (model_name, Ray Serve replica or None, dp_rank, whether
# the series had a rank).
RawKey = tuple[str | None, str | None, str | None, bool]
FullKey = tuple[tuple[str, str], ...]

MAX_TOTAL = "max_total_num_tokens"
TOKEN_USAGE = "token_usage"
USED_TOKENS = "num_used_tokens"
CONTEXT_LEN = "context_len"
VERIFY_CALLS = "spec_verify_calls_total"
ACCEPT_LENGTH = "spec_accept_length"
ACCEPT_RATE = "spec_accept_rate"  # read only to note that it is ignored
NUM_DRAFT_TOKENS = "spec_num_draft_tokens"
NUM_STEPS = "spec_num_steps"
NUM_REQUESTS = "num_requests_total"  # finished requests (observe_one_finished_request)
BLOCK_ACCEPT_LENGTH = "spec_block_accept_length"
CAP_LENGTH = "spec_cap_length"
KV_AVAILABLE = "kv_available_tokens"
KV_USED = "kv_used_tokens"
KV_CACHE_MEMORY = "kv_cache_memory_usage_gb"
WEIGHT_MEMORY = "weight_memory_usage_gb"
GIB = float(2**30)  # SGLang's "GB" is bytes / 2**30 (0.007813453674316406 GB = 8,389,632 bytes on the captures)
TTFT = "time_to_first_token_seconds"
TPOT = "request_time_per_output_token_seconds"
ITL = "inter_token_latency_seconds"
PROMPT = "prompt_tokens_total"
GENERATION = "generation_tokens_total"
RUNNING = "num_running_reqs"
QUEUED = "num_queue_reqs"

GAUGES = (MAX_TOTAL, TOKEN_USAGE, USED_TOKENS, CONTEXT_LEN, ACCEPT_LENGTH, NUM_DRAFT_TOKENS, RUNNING, QUEUED,
          BLOCK_ACCEPT_LENGTH, CAP_LENGTH, KV_AVAILABLE, KV_USED, KV_CACHE_MEMORY, WEIGHT_MEMORY, NUM_STEPS)
COUNTERS = (VERIFY_CALLS, PROMPT, GENERATION, NUM_REQUESTS)
FAMILIES = frozenset({*GAUGES, *COUNTERS, ACCEPT_RATE,
                      *(h + s for h in (TTFT, TPOT, ITL) for s in ("_bucket", "_count", "_sum"))})

# Labels that split series without meaning a different stream.
SPLIT_ONLY = frozenset({"is_streaming", "engine_type", "moe_ep_rank", "pid", "priority", "worker_addr"})
# Ray's per-process tags: one value per worker process, never a split of the replica's stream.
RAY_PROCESS = frozenset({"WorkerId", "ReplicaId", "Component", "NodeAddress", "SessionName", "Version"})
RAY_REPLICA = "replica"  # Ray's SGLangServer tags both workers of a replica with it (extra_metric_labels)
_NOT_RAY = frozenset({"WorkerId", "ReplicaId"}).isdisjoint  # a series' labels carry no Ray tag (in C, per series)
_LABELS = itemgetter(0)
# A Ray series as one of its replica's: its replica and its labels but Ray's per-process ones and `replica`, as one
# string (a string keeps its hash: a page's series are looked up in a set at every scrape).
RepeatKey = str


def server_info_value(info: Mapping[str, Any], key: str) -> Any:
    """A key of SGLang's `/server_info`, top level first, then its first `internal_states` entry (where
    0.5.23 keeps `avg_spec_accept_length` and, on some launches, `max_total_num_tokens`)."""
    v = info.get(key)
    states = info.get("internal_states")
    if v is None and isinstance(states, list) and states and isinstance(states[0], dict):
        v = states[0].get(key)
    return v


def _whole(info: Mapping[str, Any], key: str) -> int | None:
    """A finite number of the server info as an int (None when absent, not a number, or not finite)."""
    v = server_info_value(info, key)
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def speculative_settings(info: Mapping[str, Any]) -> SpeculativeSettings | None:
    """SGLang's speculative settings from `/server_info` (None when it runs no speculation or does not say)."""
    algo = server_info_value(info, "speculative_algorithm")
    if not isinstance(algo, str) or not algo or algo.upper() == "NONE":
        return None
    avg = server_info_value(info, "avg_spec_accept_length")
    avg_ok = isinstance(avg, int | float) and not isinstance(avg, bool) and math.isfinite(avg) and avg >= 1.0
    adaptive = server_info_value(info, "speculative_adaptive")
    adaptive_config = server_info_value(info, "speculative_adaptive_config")
    return SpeculativeSettings(algorithm=algo, num_draft_tokens=_whole(info, "speculative_num_draft_tokens"),
                               num_steps=_whole(info, "speculative_num_steps"),
                               avg_accept_length=float(avg) if avg_ok else None,
                               eagle_topk=_whole(info, "speculative_eagle_topk"),
                               adaptive=adaptive if isinstance(adaptive, bool) else None,
                               adaptive_config=adaptive_config if isinstance(adaptive_config, str) else None)


def side_info_from(info: Mapping[str, Any]) -> SideInfo:
    """The side facts of one `/server_info` document: pool, context cap and configured ceiling (from the
    server info for versions whose `/metrics` lacks them), version, speculative settings."""
    ver = info.get("version")
    return SideInfo(max_total_num_tokens=_whole(info, "max_total_num_tokens"),
                    context_length=_whole(info, "context_length"),
                    configured_max_total_tokens=_whole(info, "max_total_tokens"),
                    version=ver if isinstance(ver, str) else None, speculative=speculative_settings(info))


def _full_key(labels: Mapping[str, str]) -> FullKey:
    """Everything but the split-only labels (and `le`): folding these away sums/maxes them."""
    return tuple(sorted((k, v) for k, v in labels.items() if k not in SPLIT_ONLY and k != "le"))


def _ray_replica(labels: Mapping[str, str]) -> str | None:
    """The Ray Serve replica of a `ray_sglang_` series (`replica`, else a non-empty `ReplicaId`, else its
    `WorkerId`); None on SGLang's own page (no Ray tag), where a `replica` label is the user's own."""
    if "WorkerId" not in labels and "ReplicaId" not in labels:
        return None
    return labels.get(RAY_REPLICA) or labels.get("ReplicaId") or labels.get("WorkerId") or None


def _rank(replica: str | None, dp: str | None) -> str | None:
    """A stream's rank: the DP rank, behind Ray prefixed by the replica (`<replica>` or `<replica>/<dp>`)."""
    if replica is None:
        return dp
    return replica if dp is None else f"{replica}/{dp}"


def _stream_key(full: FullKey) -> RawKey:
    d = dict(full)
    return (d.get("model_name"), _ray_replica(d), d.get("dp_rank"),
            "dp_rank" in d or "tp_rank" in d or "pp_rank" in d)


def _repeat_key(labels: Mapping[str, str]) -> RepeatKey:
    return repr((_ray_replica(labels), sorted((a, v) for a, v in labels.items()
                                              if a not in RAY_PROCESS and a != RAY_REPLICA)))


def _first_per_replica(page: ParsedPage, keys: SeriesKeys[RepeatKey]) -> tuple[ParsedPage, int]:
    """The page with each series of a Ray replica given once: the replica's two workers (and a restarted
    worker still served beside its successor) may repeat a series with their own `WorkerId`; the first
    wins, the others are counted (returned). SGLang's own page (no Ray tag) comes back as it is, after
    one C-level look at each series' labels."""
    out: dict[str, list[Sample]] | None = None
    repeats = 0
    key = keys.key
    for name, rows in page.items():
        if all(map(_NOT_RAY, map(_LABELS, rows))):
            continue
        seen: set[RepeatKey] = set()
        kept: list[Sample] = []
        for sample in rows:
            k = key(sample[0])
            if k in seen:
                repeats += 1
                continue
            seen.add(k)
            kept.append(sample)
        if len(kept) < len(rows):
            out = dict(page) if out is None else out
            out[name] = kept
    return (page if out is None else out), repeats


def _fold2(samples: list[Sample], how: str) -> dict[RawKey, float]:
    """Split-only labels folded by `how`, then tp/pp replicas folded by max."""
    return fold(fold(samples, _full_key, how).items(), _stream_key, "max")


class SglangAdapter(EngineAdapter):
    """Normalises an SGLang page into streams keyed by (model_name, dp_rank)."""

    kind: EngineKind = KIND
    prefixes = PREFIXES
    families = FAMILIES
    tested_versions = VersionRange((0, 4), (0, 5, 23), "0.4–0.5.23",
                                   "SGLang 0.5.23 CPU captures and the names of docs/operations/engines.md")
    schedule_setting = "speculative_adaptive_config"  # SGLang's --speculative-adaptive-config file
    told_schedule = staticmethod(sglang_adaptive_schedule)
    configured_depth = staticmethod(k_rule.configured_depth)
    variable_by_construction = staticmethod(k_rule.variable_by_construction)
    counted_depth = staticmethod(k_rule.counted_depth)
    settings_depth = staticmethod(k_rule.settings_depth)
    draft_counts = staticmethod(counts.from_verify_calls)
    interval_gauge_is_new = staticmethod(counts.interval_gauge_is_new)
    rate_from_length = staticmethod(counts.rate_from_length)
    acceptance_source = "SGLang's sglext"  # return_spec_tokens_details: an sglext.spec_tokens_details chunk
    carries_acceptance = staticmethod(stream.carries_acceptance)
    request_acceptance = staticmethod(stream.streamed_acceptance)

    def __init__(self) -> None:
        self._histograms: HistogramMemo[RawKey] = HistogramMemo()  # common.histograms
        self._raw_keys: SeriesKeys[RawKey] = SeriesKeys(lambda lb: _stream_key(_full_key(lb)))
        self._repeat_keys: SeriesKeys[RepeatKey] = SeriesKeys(_repeat_key)  # Ray pages only

    def side_info(self, get_json: GetJson) -> SideInfo:
        """`GET /server_info`, or `/get_server_info` (before 0.4.x renamed it) when that fails or is empty."""
        return side_info_from(get_json("/server_info") or get_json("/get_server_info") or {})

    def side_incomplete(self, side: SideInfo) -> bool:
        """The server info gave nothing at all (every field unknown)."""
        return side == SideInfo()

    def snapshot(self, page: ParsedPage, timestamp: float, side: SideInfo | None = None) -> EngineSnapshot:
        side = side or SideInfo()
        hints: list[str] = []
        page, repeats = _first_per_replica(page, self._repeat_keys)
        g = {b: _fold2(samples(page, KIND, b), "max") for b in GAUGES}
        c = {b: _fold2(samples(page, KIND, b), "sum") for b in COUNTERS}
        ttft_raw: dict[RawKey, Histogram] = histograms(page, f"{KIND}:{TTFT}", self._raw_keys, self._histograms)
        tpot_raw: dict[RawKey, Histogram] = histograms(page, f"{KIND}:{TPOT}", self._raw_keys, self._histograms)
        itl_raw: dict[RawKey, Histogram] = histograms(page, f"{KIND}:{ITL}", self._raw_keys, self._histograms)
        if g[MAX_TOTAL]:
            hints.append("sglang>=0.5.6: max_total_num_tokens gauge")
        elif side.max_total_num_tokens is not None:
            hints.append("sglang<0.5.6: max_total_num_tokens from server info")
        if g[CONTEXT_LEN]:
            hints.append("sglang>=0.5.12: context_len gauge")
        if c[VERIFY_CALLS]:
            hints.append("sglang>=0.5.13: spec_verify_calls_total")
        if samples(page, KIND, ACCEPT_RATE):
            hints.append("spec_accept_rate ignored (meaning changed at 0.5.6 and 0.5.11); rate recomputed")

        # Resolve rank-less (request-side) keys onto the model's only DP rank (of its Ray replica) when unambiguous.
        ranked: dict[tuple[str | None, str | None], set[str | None]] = {}
        raw_keys: list[RawKey] = [k for d in (*g.values(), *c.values()) for k in d] + list(ttft_raw)
        for model, replica, dp, has_rank in raw_keys:
            if has_rank:
                ranked.setdefault((model, replica), set()).add(dp)
        if any(k[1] is not None for k in raw_keys):
            hints.append("ray serve llm: sglang>=0.5.15 ray metric backend, a replica's two workers joined")
        origin: dict[StreamKey, tuple[str | None, str | None]] = {}  # each stream's (Ray replica, dp_rank)

        def resolve(k: RawKey) -> StreamKey:
            model, replica, dp, has_rank = k
            if not has_rank:
                ranks = ranked.get((model, replica))
                dp = next(iter(ranks)) if ranks and len(ranks) == 1 else None
            key = StreamKey(model, _rank(replica, dp))
            origin[key] = (replica, dp)
            return key

        gs = {b: fold(d.items(), resolve, "max") for b, d in g.items()}
        cs = {b: fold(d.items(), resolve, "sum") for b, d in c.items()}
        # Counters split by a split-only label, one by one (before the sum): restarts are judged per split
        # series, so a restarted `pid` behind the fold is seen (design.md "Restarts").
        split: dict[StreamKey, dict[str, float]] = {}
        for b in COUNTERS:
            for labels, value in samples(page, KIND, b):
                v = finite(value)
                if v is None or not SPLIT_ONLY.intersection(labels):
                    continue
                ray = _ray_replica(labels) is not None  # Ray's per-process tags name no split (a new WorkerId
                # after a worker restart is the same series, its counters from zero)
                series = b + "{" + ",".join(f"{k}={x}" for k, x in sorted(labels.items())
                                            if not (ray and k in RAY_PROCESS)) + "}"
                split.setdefault(resolve(_stream_key(_full_key(labels))), {})[series] = v
        ttft = {resolve(k): h for k, h in ttft_raw.items()}
        tpot = {resolve(k): h for k, h in tpot_raw.items()}
        itl = {resolve(k): h for k, h in itl_raw.items()}

        keys: set[StreamKey] = set(ttft)
        for folded in (*gs.values(), *cs.values()):
            keys |= set(folded)
        # models (of a Ray replica) whose acceptance comes from counters
        counted = {(k.model, origin[k][0]) for k in cs[VERIFY_CALLS]}
        pool_fallback = side.max_total_num_tokens
        configured_ndt = side.speculative.num_draft_tokens if side.speculative is not None else None
        ctx_fallback = side.context_length
        streams = []
        for key in sorted(keys, key=lambda k: (k[0] or "", k[1] or "")):
            model, rank = key
            replica, dp = origin[key]
            verify = cs[VERIFY_CALLS].get(key)
            length = gs[ACCEPT_LENGTH].get(key)
            ndt = gs[NUM_DRAFT_TOKENS].get(key)
            if ndt is None and dp is None and verify is not None:
                # Per-model (request-side) stream of a multi-DP model: the setting lives on its rank streams.
                ndt = max((v for k, v in gs[NUM_DRAFT_TOKENS].items() if k.model == model and origin[k][0] == replica),
                          default=None)
            if (ndt is None or ndt <= 0) and configured_ndt is not None and configured_ndt > 0 \
                    and (verify is not None or ndt is not None):
                ndt = float(configured_ndt)  # the gauge not refreshed yet (once per decode-log interval)
            spec = None
            if verify is None and (model, replica) in counted:
                pass  # L is per model once verify calls are counted; a rank's interval gauge would duplicate it
            elif verify is not None or (length is not None and length > 0) or (ndt is not None and ndt > 0):
                # SGLang's interval gauges read 0 until their first decode-log interval: not a value yet
                # (never an impossible L below 1 or k of 0 to count as an anomaly)
                spec = SpecCounters(verify_calls=verify, accept_length_gauge=length if length else None,
                                    num_draft_tokens=ndt if ndt else None)
            pool = gs[MAX_TOTAL].get(key)
            if pool is None and (len(keys) == 1 or rank is not None):
                pool = pool_fallback
            ctx = gs[CONTEXT_LEN].get(key)
            if ctx is None and (len(keys) == 1 or rank is not None):
                ctx = ctx_fallback
            streams.append(StreamSnapshot(
                model=model, rank=rank,
                kv_pool_tokens=int(pool) if pool is not None else None,
                kv_pool_configured_tokens=side.configured_max_total_tokens,
                kv_usage_ratio=gs[TOKEN_USAGE].get(key),
                kv_used_tokens=used if (used := gs[KV_USED].get(key)) is not None else gs[USED_TOKENS].get(key),
                kv_available_tokens=gs[KV_AVAILABLE].get(key),
                kv_cache_memory_bytes=kv_mem * GIB if (kv_mem := gs[KV_CACHE_MEMORY].get(key)) is not None else None,
                weight_memory_bytes=w_mem * GIB if (w_mem := gs[WEIGHT_MEMORY].get(key)) is not None and w_mem > 0
                else None,
                spec_block_accept_length=gs[BLOCK_ACCEPT_LENGTH].get(key) if spec is not None else None,
                spec_cap_length=gs[CAP_LENGTH].get(key) if spec is not None else None,
                spec_num_steps=gs[NUM_STEPS].get(key) if spec is not None else None,
                spec_num_draft_tokens=gs[NUM_DRAFT_TOKENS].get(key) if spec is not None else None,
                finished_requests=cs[NUM_REQUESTS].get(key),
                context_cap_tokens=int(ctx) if ctx is not None else None,
                spec=spec, ttft=ttft.get(key), tpot=tpot.get(key), itl=itl.get(key), prompt_tokens=cs[PROMPT].get(key),
                generation_tokens=cs[GENERATION].get(key), requests_running=gs[RUNNING].get(key),
                requests_waiting=gs[QUEUED].get(key), preemptions=None,
                split_cumulative=tuple(sorted(split.get(key, {}).items())),
            ))
        start = page.get("process_start_time_seconds", [])
        return EngineSnapshot(
            engine=KIND, timestamp=timestamp, streams=tuple(streams),
            process_start_time=finite(start[0][1]) if start else None,
            version=side.version, version_hints=tuple(hints), speculative=side.speculative,
            anomalies={"duplicate": repeats} if repeats else {},
        )
