"""Per-window quantities from two cumulative snapshots (DESIGN.md "Derived quantities", "Restarts").

A window is (before, after) for one stream. If the stream restarted in between (any of its
counters went down, or the engine's process start time changed) every delta is taken from
`after` alone, as Prometheus' `increase()` does, and the window is marked `reset`. Counters
are never treated one by one: between two real captures drafts fell 522 -> 460 while
accepted rose 1,170 -> 1,380; per-counter handling would give L 1.46 instead of 4.00.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from exporter import formulas
from exporter.engines.base import EngineSnapshot, Histogram, StreamSnapshot

QUANTILES: tuple[tuple[str, float], ...] = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))


@dataclass(frozen=True)
class WindowStats:
    """Derived values of one stream over one window; None means absent (never a made-up 0)."""

    engine: str
    model: str | None
    rank: str | None
    seconds: float
    reset: bool
    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    accepted_per_position: tuple[float, ...] = ()
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    acceptance_length: float | None = None
    acceptance_rate: float | None = None
    position_acceptance_rate: tuple[float, ...] = ()
    ttft_seconds: dict[str, float | None] = field(default_factory=dict)
    decode_tokens_per_second: float | None = None
    verify_cycle_seconds: float | None = None
    has_spec: bool = False

    def to_json(self) -> dict:
        """The `specgate exporter window` stream shape (DESIGN.md command-line contract)."""
        return {
            "model": self.model,
            "rank": self.rank,
            "reset": self.reset,
            "drafts": self.drafts,
            "acceptance_length": self.acceptance_length,
            "acceptance_rate": self.acceptance_rate,
            "position_acceptance_rate": list(self.position_acceptance_rate),
            "ttft_seconds": {k: self.ttft_seconds.get(k) for k, _ in QUANTILES},
            "decode_tokens_per_second": self.decode_tokens_per_second,
        }


def _counters(s: StreamSnapshot) -> list[float | None]:
    """Every cumulative value of a stream, for restart detection."""
    vals: list[float | None] = [s.prompt_tokens, s.generation_tokens, s.preemptions]
    if s.spec is not None:
        vals += [s.spec.drafts, s.spec.draft_tokens, s.spec.accepted_tokens, s.spec.verify_calls]
        vals += list(s.spec.accepted_per_position)
    if s.ttft is not None:
        vals += [s.ttft.count, s.ttft.sum] + [c for _, c in s.ttft.buckets]
    return vals


def restarted(before: StreamSnapshot, after: StreamSnapshot) -> bool:
    """A stream's counters restarted when any of them decreased (start-time changes are judged by callers,
    which hold the engine-level `process_start_time`)."""
    return any(x is not None and y is not None and y < x
               for x, y in zip(_counters(before), _counters(after), strict=False))


def _delta(b: float | None, a: float | None, reset: bool) -> float | None:
    if a is None:
        return None
    if reset:
        return max(a, 0.0)
    if b is None:
        return None
    return max(a - b, 0.0)


def _hist_delta(b: Histogram | None, a: Histogram | None, reset: bool) -> list[tuple[float, float]]:
    if a is None:
        return []
    if reset:
        return list(a.buckets)
    if b is None:
        return []
    before = dict(b.buckets)
    return [(le, max(c - before.get(le, 0.0), 0.0)) for le, c in a.buckets if le in before]


def derive_stream(engine: str, before: StreamSnapshot, after: StreamSnapshot, seconds: float,
                  min_drafts: float = 1, reset: bool = False) -> WindowStats:
    """Window values of one stream. `reset` forces restart handling (deltas from `after` alone)."""
    reset = reset or restarted(before, after)
    gen = _delta(before.generation_tokens, after.generation_tokens, reset)
    prompt = _delta(before.prompt_tokens, after.prompt_tokens, reset)
    decode = gen / seconds if gen is not None and seconds > 0 else None

    drafts = draft_tokens = accepted = None
    per_pos: tuple[float, ...] = ()
    length = rate = None
    pos_rates: tuple[float, ...] = ()
    sb, sa = before.spec, after.spec
    has_spec = sa is not None
    if sa is not None:
        sbb = sb or type(sa)()
        if sa.drafts is not None:  # vLLM-style counters
            drafts = _delta(sbb.drafts, sa.drafts, reset)
            draft_tokens = _delta(sbb.draft_tokens, sa.draft_tokens, reset)
            accepted = _delta(sbb.accepted_tokens, sa.accepted_tokens, reset)
            if sa.accepted_per_position and (reset or len(sbb.accepted_per_position) == len(sa.accepted_per_position)):
                base = sbb.accepted_per_position if not reset else (0.0,) * len(sa.accepted_per_position)
                per_pos = tuple(max(y - x, 0.0) for x, y in zip(base, sa.accepted_per_position, strict=True))
        elif sa.verify_calls is not None:  # SGLang >= 0.5.13: one verify call per draft round
            drafts = _delta(sbb.verify_calls, sa.verify_calls, reset)
            if drafts is not None and gen is not None:
                accepted = max(gen - drafts, 0.0)
                if sa.num_draft_tokens is not None and sa.num_draft_tokens >= 1:
                    draft_tokens = drafts * (sa.num_draft_tokens - 1)
        if drafts is not None:
            if drafts >= max(min_drafts, 1) and accepted is not None:
                if sa.drafts is None and sa.verify_calls is not None and gen is not None:
                    length = gen / drafts
                else:
                    length = formulas.acceptance_length(accepted, drafts)
                if draft_tokens is not None:
                    rate = formulas.acceptance_rate(accepted, draft_tokens)
                pr = formulas.position_rates(per_pos, drafts)
                pos_rates = tuple(pr) if pr else ()
        elif sa.accept_length_gauge is not None:
            # Old SGLang: only the interval gauge. It is new data only when generation progressed
            # (SGLang re-sends its last value while idle). A DP-rank stream has no generation counter
            # of its own (request-side series carry no rank): there, only a gauge that moved is new.
            moved = sb is not None and sb.accept_length_gauge is not None and sb.accept_length_gauge != sa.accept_length_gauge
            if (gen is not None and gen > 0) or (gen is None and moved and not reset):
                length = sa.accept_length_gauge
                if sa.num_draft_tokens is not None:
                    rate = formulas.sglang_rate_from_length(length, sa.num_draft_tokens)

    ttft: dict[str, float | None] = {}
    tb = _hist_delta(before.ttft, after.ttft, reset)
    if tb:
        for name, q in QUANTILES:
            ttft[name] = formulas.histogram_quantile(q, tb)

    cycle = None
    running = max(x for x in (before.requests_running, after.requests_running, 0.0) if x is not None)
    if decode is not None and decode > 0 and running > 0:
        cycle_len = length if has_spec else 1.0
        if cycle_len is not None:
            cycle = formulas.verify_cycle_seconds(cycle_len, decode / running)

    return WindowStats(
        engine=engine, model=after.model, rank=after.rank, seconds=seconds, reset=reset,
        drafts=drafts, draft_tokens=draft_tokens, accepted_tokens=accepted, accepted_per_position=per_pos,
        generation_tokens=gen, prompt_tokens=prompt, acceptance_length=length, acceptance_rate=rate,
        position_acceptance_rate=pos_rates, ttft_seconds=ttft, decode_tokens_per_second=decode,
        verify_cycle_seconds=cycle, has_spec=has_spec,
    )


def derive_window(before: EngineSnapshot, after: EngineSnapshot, seconds: float | None = None,
                  min_drafts: float = 1) -> list[WindowStats]:
    """Window values of every stream present in `after`.

    A stream absent from `before` (new, or the engine restarted and changed shape) is a reset
    window. `seconds` defaults to the difference of the snapshots' timestamps.
    """
    secs = seconds if seconds is not None else max(after.timestamp - before.timestamp, 0.0)
    engine_restart = (
        before.process_start_time is not None and after.process_start_time is not None
        and before.process_start_time != after.process_start_time
    )
    out = []
    for s in after.streams:
        b = before.stream(s.model, s.rank)
        if b is None:
            out.append(derive_stream(after.engine, StreamSnapshot(s.model, s.rank), s, secs, min_drafts, reset=True))
        else:
            out.append(derive_stream(after.engine, b, s, secs, min_drafts, reset=engine_restart))
    return out
