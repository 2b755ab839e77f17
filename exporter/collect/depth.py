"""The configured and current speculation depth per stream (issue 22; `exporter.depth` says what each
engine exposes).

Example exposition (tests/golden/vllm-ngram.prom; sglang-0.5.23-eagle3.prom for the SGLang gauges)::

    # HELP specgate_spec_depth_max Configured largest speculation depth k, by where it was read (source)
    # TYPE specgate_spec_depth_max gauge
    specgate_spec_depth_max{engine="vllm",model="tiny",rank="0",source="positions"} 3.0
    # HELP specgate_spec_num_steps SGLang's current spec_num_steps as reported
    # TYPE specgate_spec_num_steps gauge
    specgate_spec_num_steps{engine="sglang",model="tiny",rank=""} 3.0
    # HELP specgate_spec_num_draft_tokens SGLang's current spec_num_draft_tokens as reported
    # TYPE specgate_spec_num_draft_tokens gauge
    specgate_spec_num_draft_tokens{engine="sglang",model="tiny",rank=""} 4.0
    # HELP specgate_spec_depth_scheduled The k the declared schedule gives at the current batch (requests running)
    # TYPE specgate_spec_depth_scheduled gauge
    specgate_spec_depth_scheduled{engine="vllm",model="tiny",rank="0"} 3.0

`specgate_spec_depth_scheduled` exists only when the exporter was told the schedule; it is the schedule's k
at the stream's `requests_running` (batch 1 while nothing runs: the k the next request gets). Like the pools,
these are engine state: absent while the engine is down.
"""

from __future__ import annotations

from collections.abc import Iterator

from exporter import names
from exporter.collect.families import Rows, gauge, non_empty, stream_labels
from exporter.engines import ADAPTERS
from exporter.state import ExporterView


def families(v: ExporterView) -> Iterator[Rows]:
    if v.latest is None or not v.up:
        return
    told = v.schedule.max_k if v.schedule is not None else None
    configured_depth = ADAPTERS[v.latest.engine].configured_depth  # the engine's depth hook
    kmax, steps, ndt, scheduled = (gauge(names.SPEC_DEPTH_MAX), gauge(names.SPEC_NUM_STEPS),
                                   gauge(names.SPEC_NUM_DRAFT_TOKENS), gauge(names.SPEC_DEPTH_SCHEDULED))
    for sv in v.streams:
        x = sv.stream
        if x.spec is None:
            continue
        lv = stream_labels(x.model, v.latest.engine, x.rank)
        known = configured_depth(v.latest.speculative, x, told)
        if known is not None:
            kmax.add_metric((*lv, known[1]), known[0])
        if x.spec_num_steps is not None:
            steps.add_metric(lv, x.spec_num_steps)
        if x.spec_num_draft_tokens is not None:
            ndt.add_metric(lv, x.spec_num_draft_tokens)
        if v.schedule is not None:
            batch = max(int(x.requests_running), 1) if x.requests_running is not None else 1
            scheduled.add_metric(lv, v.schedule.k_at(batch))
    yield from non_empty(kmax, steps, ndt, scheduled)
