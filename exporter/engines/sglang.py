"""SGLang (0.4 – 0.5.23): names, versions and traps (DESIGN.md engine table).

- Pool: `sglang:max_total_num_tokens` (>= 0.5.6), else `max_total_num_tokens` from
  `/server_info` or `/get_server_info`; the configured ceiling (`--max-total-tokens`) only
  from the server info.
- Context cap: `sglang:context_len` (>= 0.5.12), else `context_length` from the server info.
- Speculation: `spec_verify_calls_total` (>= 0.5.13; per finished request, no rank) with
  `generation_tokens_total`; older versions only have the interval gauges
  `spec_accept_length` (incl. bonus) and `spec_num_draft_tokens`. `spec_accept_rate`
  changed meaning at 0.5.6 and 0.5.11: it is never read, the rate is recomputed.
- Streams are keyed by (`model_name`, `dp_rank`). `tp_rank`/`pp_rank` replicate the same
  scheduler state (folded by max); `is_streaming`, `engine_type`, `moe_ep_rank`, `pid`,
  `priority`, `worker_addr` only split series (counters summed, gauges max).
- Request-side series carry no rank: they join the model's only DP rank, or form a
  per-model stream with rank None when the model runs several DP ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.engines.base import EngineSnapshot, ParsedPage, SideInfo, SpecCounters, StreamKey, StreamSnapshot
from exporter.engines.common import finite, fold, histograms, samples

KIND = "sglang"
PREFIXES = ("sglang:", "sglang_")

MAX_TOTAL = "max_total_num_tokens"
TOKEN_USAGE = "token_usage"
USED_TOKENS = "num_used_tokens"
CONTEXT_LEN = "context_len"
VERIFY_CALLS = "spec_verify_calls_total"
ACCEPT_LENGTH = "spec_accept_length"
ACCEPT_RATE = "spec_accept_rate"  # read only to note that it is ignored
NUM_DRAFT_TOKENS = "spec_num_draft_tokens"
TTFT = "time_to_first_token_seconds"
PROMPT = "prompt_tokens_total"
GENERATION = "generation_tokens_total"
RUNNING = "num_running_reqs"
QUEUED = "num_queue_reqs"

GAUGES = (MAX_TOTAL, TOKEN_USAGE, USED_TOKENS, CONTEXT_LEN, ACCEPT_LENGTH, NUM_DRAFT_TOKENS, RUNNING, QUEUED)
COUNTERS = (VERIFY_CALLS, PROMPT, GENERATION)
FAMILIES = frozenset({*GAUGES, *COUNTERS, ACCEPT_RATE, TTFT + "_bucket", TTFT + "_count", TTFT + "_sum"})

# Labels that split series without meaning a different stream.
SPLIT_ONLY = frozenset({"is_streaming", "engine_type", "moe_ep_rank", "pid", "priority", "worker_addr"})


@dataclass(frozen=True)
class VerifyCounts:
    """vLLM-style counts recovered from SGLang's verify calls (cumulative or over a window)."""

    drafts: float
    accepted_tokens: float | None
    draft_tokens: float | None


def from_verify_calls(verify_calls: float, generation_tokens: float | None,
                      num_draft_tokens: float | None) -> VerifyCounts:
    """SGLang >= 0.5.13 counts one verify call per draft round, and every verify emits its accepted draft
    tokens plus one bonus token: drafts = verify calls, accepted = generated - verify calls, proposed =
    verify calls x (num_draft_tokens - 1), since `spec_num_draft_tokens` counts the verified root too.
    Never negative; unknown without the generation counter or a draft-token setting of at least 1."""
    accepted = max(generation_tokens - verify_calls, 0.0) if generation_tokens is not None else None
    draft_tokens = verify_calls * (num_draft_tokens - 1) if num_draft_tokens is not None and num_draft_tokens >= 1 \
        else None
    return VerifyCounts(verify_calls, accepted, draft_tokens)


def length_from_verify_calls(generation_tokens: float, verify_calls: float) -> float:
    """L = generated tokens / verify calls (the bonus token is one of the generated tokens)."""
    return generation_tokens / verify_calls


def interval_gauge_is_new(before: SpecCounters | None, after: SpecCounters, generation: float | None,
                          reset: bool) -> bool:
    """Whether old SGLang's `spec_accept_length` gauge holds data from this window.

    SGLang re-sends its last interval value while idle, so the gauge is new only when generation
    progressed. A DP-rank stream has no generation counter of its own (request-side series carry no
    rank): there, only a gauge that moved is new (and a reset window has nothing to compare with).
    """
    if generation is not None:
        return generation > 0
    moved = (before is not None and before.accept_length_gauge is not None
             and before.accept_length_gauge != after.accept_length_gauge)
    return moved and not reset


def _full_key(labels: dict[str, str]) -> tuple:
    """Everything but the split-only labels (and `le`): folding these away sums/maxes them."""
    return tuple(sorted((k, v) for k, v in labels.items() if k not in SPLIT_ONLY and k != "le"))


def _stream_key(full: tuple) -> tuple:
    d = dict(full)
    return (d.get("model_name"), d.get("dp_rank"), "dp_rank" in d or "tp_rank" in d or "pp_rank" in d)


def _fold2(samples: list, how: str) -> dict[tuple, float]:
    """Split-only labels folded by `how`, then tp/pp replicas folded by max."""
    return fold(fold(samples, _full_key, how).items(), _stream_key, "max")


class SglangAdapter:
    """Normalises an SGLang page into streams keyed by (model_name, dp_rank)."""

    kind = KIND
    prefixes = PREFIXES
    families = FAMILIES

    def snapshot(self, page: ParsedPage, timestamp: float, side: SideInfo | None = None) -> EngineSnapshot:
        side = side or SideInfo()
        hints: list[str] = []
        g = {b: _fold2(samples(page, KIND, b), "max") for b in GAUGES}
        c = {b: _fold2(samples(page, KIND, b), "sum") for b in COUNTERS}
        ttft_raw = histograms(page, f"{KIND}:{TTFT}", lambda lb: _stream_key(_full_key(lb)))
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

        # Resolve rank-less (request-side) keys onto the model's only DP rank when unambiguous.
        ranked: dict[str | None, set] = {}
        for d in (*g.values(), *c.values(), ttft_raw):
            for model, dp, has_rank in d:
                if has_rank:
                    ranked.setdefault(model, set()).add(dp)

        def resolve(k: tuple) -> tuple:
            model, dp, has_rank = k
            if has_rank:
                return (model, dp)
            ranks = ranked.get(model)
            if ranks and len(ranks) == 1:
                return (model, next(iter(ranks)))
            return (model, None)

        g = {b: fold(d.items(), resolve, "max") for b, d in g.items()}
        c = {b: fold(d.items(), resolve, "sum") for b, d in c.items()}
        ttft = {resolve(k): h for k, h in ttft_raw.items()}

        keys: set = set(ttft)
        for d in (*g.values(), *c.values()):
            keys |= set(d)
        counted = {m for (m, _r) in c[VERIFY_CALLS]}  # models whose acceptance comes from counters
        pool_fallback = side.max_total_num_tokens
        ctx_fallback = side.context_length
        streams = []
        for key in sorted(keys, key=lambda k: (k[0] or "", k[1] or "")):
            model, rank = key
            verify = c[VERIFY_CALLS].get(key)
            length = g[ACCEPT_LENGTH].get(key)
            ndt = g[NUM_DRAFT_TOKENS].get(key)
            if ndt is None and rank is None and verify is not None:
                # Per-model (request-side) stream of a multi-DP model: the setting lives on its rank streams.
                ndt = max((v for (m, _), v in g[NUM_DRAFT_TOKENS].items() if m == model), default=None)
            spec = None
            if verify is None and model in counted:
                pass  # L is per model once verify calls are counted; a rank's interval gauge would duplicate it
            elif verify is not None or (length is not None and length > 0) or (ndt is not None and ndt > 0):
                spec = SpecCounters(verify_calls=verify, accept_length_gauge=length, num_draft_tokens=ndt)
            pool = g[MAX_TOTAL].get(key)
            if pool is None and (len(keys) == 1 or rank is not None):
                pool = pool_fallback
            ctx = g[CONTEXT_LEN].get(key)
            if ctx is None and (len(keys) == 1 or rank is not None):
                ctx = ctx_fallback
            streams.append(StreamSnapshot(
                model=model, rank=rank,
                kv_pool_tokens=int(pool) if pool is not None else None,
                kv_pool_configured_tokens=side.configured_max_total_tokens,
                kv_usage_ratio=g[TOKEN_USAGE].get(key), kv_used_tokens=g[USED_TOKENS].get(key),
                context_cap_tokens=int(ctx) if ctx is not None else None,
                spec=spec, ttft=ttft.get(key), prompt_tokens=c[PROMPT].get(key),
                generation_tokens=c[GENERATION].get(key), requests_running=g[RUNNING].get(key),
                requests_waiting=g[QUEUED].get(key), preemptions=None,
            ))
        start = page.get("process_start_time_seconds", [])
        return EngineSnapshot(
            engine=KIND, timestamp=timestamp, streams=tuple(streams),
            process_start_time=finite(start[0][1]) if start else None,
            version=side.version, version_hints=tuple(hints),
        )
