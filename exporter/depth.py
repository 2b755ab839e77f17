"""The depth actually used, per stream (issue 22; design.md "When the depth varies", exporter part).

What each engine exposes, and so what the exporter can know:

- vLLM: proposed tokens (`spec_decode_num_draft_tokens`) and drafts, so the mean proposed depth
  k̄ = Δdraft_tokens / Δdrafts per window (`exporter.formulas.mean_depth`), and the configured maximum k
  as the number of `position` series of `spec_decode_num_accepted_tokens_per_pos` (vLLM creates exactly
  `num_speculative_tokens` of them). Its speculative config (a batch-size schedule) is served on no HTTP
  endpoint outside dev mode: the exporter knows a schedule only when told (`--speculative-config`).
- SGLang: no proposed-token counter (draft tokens are verify calls × (spec_num_draft_tokens − 1)), so no
  k̄; the configured depth from `/server_info` (`speculative_num_draft_tokens` / `speculative_num_steps`,
  SGLang's spelling `exporter.engines.sglang.depth`), and the current depth from the gauges
  `spec_num_steps` / `spec_num_draft_tokens`, which `--speculative-adaptive` moves.

Data decide, not engine names: a stream with per-position counters is read by positions, an engine
whose `/server_info` gave speculative settings by those.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.engines.base import SpeculativeSettings, StreamSnapshot
from exporter.engines.sglang.depth import SGLANG_ADAPTIVE_DEFAULT_MAX, VARIABLE_LENGTH_ALGORITHMS
from exporter.engines.sglang.depth import depth as sglang_depth


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


def _positive(v: float | None) -> int | None:
    return int(v) if v is not None and v > 0 else None


def configured_depth(speculative: SpeculativeSettings | None, stream: StreamSnapshot,
                     told: int | None = None) -> tuple[int, str] | None:
    """The configured maximum k of a speculating stream and where it was read (`names.SPEC_DEPTH_MAX`'s
    `source`), first found wins; None for a stream without speculation or when nothing says.

    1. `positions`: the stream's per-position counter series (vLLM).
    2. `server_info`: SGLang's `/server_info` settings by SGLang's rule; under `speculative_adaptive` the
       settings are the starting steps, not the largest candidate: then only with SGLang's default tiers
       (`speculative_adaptive_config` None), their largest candidate (`SGLANG_ADAPTIVE_DEFAULT_MAX`).
    3. `schedule`: the largest k of the schedule the exporter was told (`told`).
    4. `gauge`: SGLang's current `spec_num_draft_tokens` − 1, or `spec_num_steps` (never under adaptive
       speculation, where they are the current depth, not the maximum).
    """
    spec = stream.spec
    if spec is None:
        return None
    if spec.accepted_per_position:
        return len(spec.accepted_per_position), "positions"
    sp = speculative
    if sp is not None and not sp.adaptive:
        k = sglang_depth(sp.num_draft_tokens, sp.num_steps, sp.eagle_topk)
        if k is not None:
            return k, "server_info"
    if sp is not None and sp.adaptive and sp.adaptive_config is None:
        return SGLANG_ADAPTIVE_DEFAULT_MAX, "server_info"
    if told is not None:
        return told, "schedule"
    if sp is None or not sp.adaptive:
        k = sglang_depth(_positive(stream.spec_num_draft_tokens), _positive(stream.spec_num_steps), None)
        if k is not None:
            return k, "gauge"
    return None


def variable_by_construction(speculative: SpeculativeSettings | None) -> bool:
    """The engine's reported algorithm drafts a different number of tokens every round (SGLang NGRAM). vLLM
    reports no method; there the measured mean decides (`exporter.derive._depth_in_window`)."""
    algo = speculative.algorithm if speculative is not None else None
    return algo is not None and algo.upper() in VARIABLE_LENGTH_ALGORITHMS


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
