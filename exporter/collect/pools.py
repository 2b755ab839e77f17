"""Pools and queue: the engine's KV pool (allocated vs configured), context cap, usage and requests.

Example exposition (tests/golden/vllm-ngram.prom and sglang-0.4.9.prom)::

    # HELP specgate_kv_pool_tokens Allocated KV pool in tokens (not the configured ceiling)
    # TYPE specgate_kv_pool_tokens gauge
    specgate_kv_pool_tokens{engine="vllm",model="tiny",pool="target",rank="0"} 8192.0
    # HELP specgate_kv_pool_configured_tokens Configured KV ceiling in tokens, when known
    # TYPE specgate_kv_pool_configured_tokens gauge
    specgate_kv_pool_configured_tokens{engine="sglang",model="RadixArk/Qwen3.8-Flash-Next-NVFP4",rank=""} 600000.0
    # HELP specgate_kv_usage_ratio KV pool usage, 0..1
    # TYPE specgate_kv_usage_ratio gauge
    specgate_kv_usage_ratio{engine="vllm",model="tiny",rank="0"} 0.0
    # HELP specgate_requests_running Requests running in the engine
    # TYPE specgate_requests_running gauge
    specgate_requests_running{engine="vllm",model="tiny",rank="0"} 0.0

Engine state read from a page that is no longer current is absent, not stale: while the engine is
down none of these series is exposed (the gate must not read a pool from a dead engine).
"""

from __future__ import annotations

from collections.abc import Iterator

from exporter import names
from exporter.collect.families import Rows, gauge, non_empty, stream_labels
from exporter.state import ExporterView


def families(v: ExporterView) -> Iterator[Rows]:
    if v.latest is None or not v.up:
        return
    pool, conf, ctx = gauge(names.KV_POOL), gauge(names.KV_POOL_CONFIGURED), gauge(names.CONTEXT_CAP)
    usage, running, waiting = gauge(names.KV_USAGE), gauge(names.REQUESTS_RUNNING), gauge(names.REQUESTS_WAITING)
    for sv in v.streams:
        x = sv.stream
        lv = stream_labels(x.model, v.latest.engine, x.rank)
        if x.kv_pool_tokens is not None:
            pool.add_metric((*lv, "target"), x.kv_pool_tokens)
        configured = x.kv_pool_configured_tokens if x.kv_pool_configured_tokens is not None \
            else v.kv_pool_configured_tokens
        if configured is not None:
            conf.add_metric(lv, configured)
        if x.context_cap_tokens is not None:
            ctx.add_metric(lv, x.context_cap_tokens)
        if x.kv_usage_ratio is not None:
            usage.add_metric(lv, x.kv_usage_ratio)
        if x.requests_running is not None:
            running.add_metric(lv, x.requests_running)
        if x.requests_waiting is not None:
            waiting.add_metric(lv, x.requests_waiting)
    yield from non_empty(pool, conf, ctx, usage, running, waiting)
    # SGLang's own view of the pool now and its memory bill (absent on vLLM)
    avail, used = gauge(names.KV_AVAILABLE), gauge(names.KV_USED)
    kv_mem, w_mem = gauge(names.KV_CACHE_MEMORY), gauge(names.WEIGHT_MEMORY)
    for sv in v.streams:
        x = sv.stream
        lv = stream_labels(x.model, v.latest.engine, x.rank)
        for fam, value in ((avail, x.kv_available_tokens), (used, x.kv_used_tokens),
                           (kv_mem, x.kv_cache_memory_bytes), (w_mem, x.weight_memory_bytes)):
            if value is not None:
                fam.add_metric(lv, value)
    yield from non_empty(avail, used, kv_mem, w_mem)
