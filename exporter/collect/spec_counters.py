"""Speculative-decoding counters: drafts, proposed and accepted tokens, accepted per position.

Normalised across engines (SGLang's verify calls become drafts, see `exporter.engines.sglang.counts`) and
monotonic across engine restarts (the tracker adds each scrape's delta). The PromQL that the
recording rules compute from them is in `exporter.names`, next to each family. Example exposition
(tests/golden/vllm-ngram.prom)::

    # HELP specgate_spec_drafts_total Draft rounds (verify steps), monotonic across restarts
    # TYPE specgate_spec_drafts_total counter
    specgate_spec_drafts_total{engine="vllm",model="tiny",rank="0"} 522.0
    # HELP specgate_spec_draft_tokens_total Draft tokens proposed, monotonic across restarts
    # TYPE specgate_spec_draft_tokens_total counter
    specgate_spec_draft_tokens_total{engine="vllm",model="tiny",rank="0"} 1473.0
    # HELP specgate_spec_accepted_tokens_total Draft tokens accepted, monotonic across restarts
    # TYPE specgate_spec_accepted_tokens_total counter
    specgate_spec_accepted_tokens_total{engine="vllm",model="tiny",rank="0"} 1170.0
    # HELP specgate_spec_accepted_tokens_per_position_total Accepted draft tokens by draft position
    # TYPE specgate_spec_accepted_tokens_per_position_total counter
    specgate_spec_accepted_tokens_per_position_total{engine="vllm",model="tiny",position="0",rank="0"} 446.0

A stream with no speculation (no spec counters on its page) has none of these series.
"""

from __future__ import annotations

from collections.abc import Iterator

from exporter import names
from exporter.collect.families import Rows, counter, gauge, non_empty, stream_labels
from exporter.state import ExporterView


def families(v: ExporterView) -> Iterator[Rows]:
    if v.latest is None:
        return
    drafts, dtok = counter(names.SPEC_DRAFTS), counter(names.SPEC_DRAFT_TOKENS)
    acc, pos = counter(names.SPEC_ACCEPTED), counter(names.SPEC_ACCEPTED_PER_POSITION)
    for sv in v.streams:
        t = sv.totals
        if t is None or sv.stream.spec is None:
            continue
        lv = stream_labels(sv.stream.model, v.latest.engine, sv.stream.rank)
        if t.drafts is not None:
            drafts.add_metric(lv, t.drafts)
        if t.draft_tokens is not None:
            dtok.add_metric(lv, t.draft_tokens)
        if t.accepted_tokens is not None:
            acc.add_metric(lv, t.accepted_tokens)
        for i, n in enumerate(t.accepted_per_position):
            pos.add_metric((*lv, str(i)), n)
    yield from non_empty(drafts, dtok, acc, pos)
    if not v.up:
        return  # the engine's own interval gauges are engine state: absent while it is down
    block, cap = gauge(names.SPEC_BLOCK_ACCEPT_LENGTH), gauge(names.SPEC_CAP_LENGTH)
    for sv in v.streams:
        x = sv.stream
        lv = stream_labels(x.model, v.latest.engine, x.rank)
        if x.spec_block_accept_length is not None:
            block.add_metric(lv, x.spec_block_accept_length)
        if x.spec_cap_length is not None:
            cap.add_metric(lv, x.spec_cap_length)
    yield from non_empty(block, cap)
