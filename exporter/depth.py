"""The depth actually used, per stream (issue 22; design.md "When the depth varies", exporter part).

What each engine exposes, and so what the exporter can know, is the engine's: its adapter's depth hooks
(`exporter.engines.base.EngineAdapter.configured_depth` / `variable_by_construction`, found by the snapshot's
engine kind in `exporter.engines.ADAPTERS`). By default a stream's configured maximum k is the number of its
per-position counter series (vLLM creates exactly `num_speculative_tokens` of them), else the schedule the
exporter was told; an engine with proposed-token counters (vLLM) also has the mean proposed depth
k̄ = Δdraft_tokens / Δdrafts per window (`exporter.formulas.mean_depth`). SGLang's reading of its
`/server_info` and gauges is in `exporter/engines/sglang/depth.py`.

Here: what a window's depth values are judged against (`WindowDepth`), and whether a stream's current depth
gauges moved (`gauged`, `depth_moved`; data decide, not engine names: only SGLang reports those gauges).
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.engines.base import StreamSnapshot


@dataclass(frozen=True, slots=True)
class WindowDepth:
    """What a window's depth values are judged against (`exporter.derive.window_stats`).

    `max_k`: the configured maximum (None: unknown); `variable`: the proposer drafts a different number
    of tokens every round by construction (SGLang NGRAM); `moved`: SGLang's steps / draft-token gauges
    changed at some scrape within the window; `gauged`: the stream reports those gauges (refreshed), so a
    move would have been seen."""

    max_k: int | None = None
    variable: bool = False
    moved: bool = False
    gauged: bool = False


def gauged(stream: StreamSnapshot) -> bool:
    """The stream reports SGLang's current depth, refreshed (the draft-token gauge reads 0 before SGLang's
    first decode-log interval)."""
    return stream.spec_num_draft_tokens is not None and stream.spec_num_draft_tokens > 0


def depth_moved(before: StreamSnapshot, after: StreamSnapshot) -> bool:
    """SGLang's current depth changed between two sights of a stream: its steps or draft-token gauge, both
    sights refreshed (a gauge going 0 -> 4 at the first decode-log interval is not a move)."""
    if not (gauged(before) and gauged(after)):
        return False
    return (before.spec_num_steps != after.spec_num_steps
            or before.spec_num_draft_tokens != after.spec_num_draft_tokens)
