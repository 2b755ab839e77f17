"""Per-window quantities from two cumulative snapshots (design.md "Derived quantities", "Restarts").

Three steps, each with one address:
- `restarted()` is THE restart rule: a stream restarted between two snapshots when the engine's
  process start time changed or any of its counters went down (against its last known value: the
  tracker's last sight, `last_known()`, keeps values a page left out). Every caller (`derive_window`, the
  tracker's per-scrape step, its sliding and batch windows) asks it; nothing else decides a reset.
- `stream_delta()` turns two snapshots of a stream into a `StreamDelta`: what its counters gained,
  as Prometheus' `increase()` does. On a reset every delta is taken from `after` alone; counters are
  never treated one by one: between two real captures drafts fell 522 -> 460 while accepted rose
  1,170 -> 1,380; per-counter handling would give L 1.46 instead of 4.00.
- `window_stats()` turns a delta into `WindowStats` (L, a, p_i, TTFT quantiles, decode rate, cycle),
  with the arithmetic of `exporter.formulas` and the engine's own rules from its adapter's hooks
  (`exporter.engines.base.EngineAdapter`, found by the engine kind in `exporter.engines.ADAPTERS`).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace
from typing import Any

from exporter import formulas
from exporter.depth import WindowDepth, depth_moved, gauged
from exporter.engines import ADAPTERS
from exporter.engines.base import EngineSnapshot, Histogram, SpecCounters, StreamSnapshot

QUANTILES: tuple[tuple[str, float], ...] = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
QUANTILE_NAMES = tuple(name for name, _ in QUANTILES)
QUANTILE_VALUES = tuple(q for _, q in QUANTILES)
# a histogram's observations within a window: bucket bounds (sorted) and the count that fell at or below each
Buckets = tuple[tuple[float, ...], tuple[float, ...]]


def restarted(before: StreamSnapshot, after: StreamSnapshot,
              before_start: float | None, after_start: float | None) -> bool:
    """The restart rule: the engine's process start time changed (both known and different), or any
    cumulative value of the stream went down. Start times are the engine's `process_start_time` as
    seen with each snapshot.

    Each value is compared with its last known one: the tracker's last sight of a stream is
    `last_known(...)`, which keeps a value a page left out. A restarted SGLang (no
    `process_start_time_seconds`) serves `/metrics` before its warm-up, with no counters at all; the
    next page has small ones. Against the previous page alone nothing went down; against the last
    known values the counters did: a family that disappears and comes back lower is a restart.

    "Any cumulative value" is `StreamSnapshot.cumulative`, compared name by name where both snapshots
    have the name; `_went_down` is that comparison without building the two mappings (it runs for
    every stream at every scrape and for every sliding window; tests/exporter/test_restart_rule.py
    holds it equal to the mapping form)."""
    if before_start is not None and after_start is not None and before_start != after_start:
        return True
    return _went_down(before, after)


def _lower(new: float | None, old: float | None) -> bool:
    return new is not None and old is not None and new < old


def _went_down(b: StreamSnapshot, a: StreamSnapshot) -> bool:
    """Some value of `a.cumulative` is below the same name's value in `b.cumulative`."""
    if (_lower(a.prompt_tokens, b.prompt_tokens) or _lower(a.generation_tokens, b.generation_tokens)
            or _lower(a.preemptions, b.preemptions) or _lower(a.finished_requests, b.finished_requests)):
        return True
    sa, sb = a.spec, b.spec
    if sa is not None and sb is not None:
        if (_lower(sa.drafts, sb.drafts) or _lower(sa.draft_tokens, sb.draft_tokens)
                or _lower(sa.accepted_tokens, sb.accepted_tokens) or _lower(sa.verify_calls, sb.verify_calls)):
            return True
        if any(map(operator.lt, sa.accepted_per_position, sb.accepted_per_position)):
            return True
    ha, hb = a.ttft, b.ttft
    if ha is not None and hb is not None:
        if _lower(ha.count, hb.count) or _lower(ha.sum, hb.sum):
            return True
        if ha.les is hb.les or (ha.les == hb.les and 0.0 not in ha.les):  # same bounds: position by position
            if any(map(operator.lt, ha.counts, hb.counts)):
                return True
        else:  # by the bound's name, as `cumulative` does (0.0 and -0.0 are two names there)
            before = {repr(le): c for le, c in zip(hb.les, hb.counts, strict=True)}
            if any((y := before.get(repr(le))) is not None and x < y
                   for le, x in zip(ha.les, ha.counts, strict=True)):
                return True
    if a.split_cumulative and b.split_cumulative:
        before_split = dict(b.split_cumulative)
        if any((y := before_split.get(k)) is not None and x < y for k, x in a.split_cumulative):
            return True
    return False


def _keep(new: float | None, old: float | None) -> float | None:
    return new if new is not None else old


def _lacks(new: object, old: object) -> bool:
    return new is None and old is not None


def _complete(last: StreamSnapshot, new: StreamSnapshot) -> bool:
    """`new` has every cumulative value `last` had (the usual page): nothing to carry over."""
    if (_lacks(new.prompt_tokens, last.prompt_tokens) or _lacks(new.generation_tokens, last.generation_tokens)
            or _lacks(new.preemptions, last.preemptions) or _lacks(new.finished_requests, last.finished_requests)
            or _lacks(new.ttft, last.ttft)
            or _lacks(new.tpot, last.tpot) or _lacks(new.itl, last.itl) or _lacks(new.spec, last.spec)):
        return False
    sn, sl = new.spec, last.spec
    if sn is not None and sl is not None and (
            _lacks(sn.drafts, sl.drafts) or _lacks(sn.draft_tokens, sl.draft_tokens)
            or _lacks(sn.accepted_tokens, sl.accepted_tokens) or _lacks(sn.verify_calls, sl.verify_calls)
            or (not sn.accepted_per_position and sl.accepted_per_position)):
        return False
    if last.split_cumulative:
        names = {k for k, _ in new.split_cumulative}
        return all(k in names for k, _ in last.split_cumulative)
    return True


def last_known(last: StreamSnapshot, new: StreamSnapshot, reset: bool) -> StreamSnapshot:
    """A stream's last sight after the step `last` -> `new`: `new`, with every cumulative value it lacks
    carried over from `last`, so the restart rule and the next delta compare with the last value the
    engine reported, not with a page that had none. After a restart (`reset`) nothing is carried: the
    old process's values would make the new one's counters look lower again."""
    if reset or _complete(last, new):
        return new
    spec = new.spec
    ls = last.spec
    if ls is not None:
        if spec is None:
            spec = ls
        else:
            spec = replace(spec, drafts=_keep(spec.drafts, ls.drafts),
                           draft_tokens=_keep(spec.draft_tokens, ls.draft_tokens),
                           accepted_tokens=_keep(spec.accepted_tokens, ls.accepted_tokens),
                           accepted_per_position=spec.accepted_per_position or ls.accepted_per_position,
                           verify_calls=_keep(spec.verify_calls, ls.verify_calls))
    split = dict(last.split_cumulative) | dict(new.split_cumulative)
    return replace(new, prompt_tokens=_keep(new.prompt_tokens, last.prompt_tokens),
                   generation_tokens=_keep(new.generation_tokens, last.generation_tokens),
                   preemptions=_keep(new.preemptions, last.preemptions), spec=spec,
                   finished_requests=_keep(new.finished_requests, last.finished_requests),
                   ttft=new.ttft if new.ttft is not None else last.ttft,
                   tpot=new.tpot if new.tpot is not None else last.tpot,
                   itl=new.itl if new.itl is not None else last.itl,
                   split_cumulative=tuple(sorted(split.items())))


@dataclass(slots=True)
class StreamDelta:
    """What one stream's counters gained between two snapshots; None means unknown (never a made-up 0).

    `reset`: the stream restarted (or is new) in between, so every value is `after`'s own. Speculation
    counts are normalised to vLLM's (drafts, proposed, accepted), whatever the engine counted.
    Not frozen, and never changed once built: one is built per stream and window at every scrape, and
    a frozen dataclass's `__init__` (one `object.__setattr__` per field) cost more than the arithmetic.
    """

    reset: bool
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    preemptions: float | None = None
    finished_requests: float | None = None  # SGLang: requests that finished in the window
    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    accepted_per_position: tuple[float, ...] = ()
    # latency observations within the window, per bucket bound (None: unknown)
    ttft: Buckets | None = None
    tpot: Buckets | None = None
    itl: Buckets | None = None


def _delta(b: float | None, a: float | None, reset: bool) -> float | None:
    if a is None:
        return None
    if reset:
        return max(a, 0.0)
    if b is None:
        return None
    return max(a - b, 0.0)


def _hist_delta(b: Histogram | None, a: Histogram | None, reset: bool) -> Buckets | None:
    """The observations between two cumulative histograms, per bound (bounds `b` lacks are left out)."""
    if a is None:
        return None
    if reset:
        return a.les, tuple(a.counts)
    if b is None:
        return None
    if a.les is b.les or a.les == b.les:
        d = tuple(map(operator.sub, a.counts, b.counts))
        if d and min(d) < 0.0:  # a bucket that went down gained nothing (as max(c - p, 0.0))
            d = tuple([x if x > 0.0 else 0.0 for x in d])
        return a.les, d
    before = dict(zip(b.les, b.counts, strict=True))
    pairs = [(le, max(c - before.get(le, 0.0), 0.0)) for le, c in zip(a.les, a.counts, strict=True) if le in before]
    return tuple(le for le, _ in pairs), tuple(c for _, c in pairs)


def stream_delta(engine: str, before: StreamSnapshot | None, after: StreamSnapshot, reset: bool,
                 latency: bool = True) -> StreamDelta:
    """Deltas of one stream of `engine` (whose adapter turns verify calls into drafts, `draft_counts`);
    `before` None (a stream seen for the first time) is a reset.

    `reset` is the caller's verdict from `restarted()`: this function never judges restarts itself.
    `latency=False` leaves the latency histograms out (None): the monotonic totals have no use for them.
    """
    reset = reset or before is None
    b = before or StreamSnapshot(after.model, after.rank)
    gen = _delta(b.generation_tokens, after.generation_tokens, reset)
    finished = _delta(b.finished_requests, after.finished_requests, reset)
    drafts = draft_tokens = accepted = None
    per_pos: tuple[float, ...] = ()
    sa = after.spec
    if sa is not None:
        sb = b.spec or SpecCounters()
        if sa.drafts is not None:  # vLLM-style counters
            drafts = _delta(sb.drafts, sa.drafts, reset)
            draft_tokens = _delta(sb.draft_tokens, sa.draft_tokens, reset)
            accepted = _delta(sb.accepted_tokens, sa.accepted_tokens, reset)
            if sa.accepted_per_position and (reset or len(sb.accepted_per_position) == len(sa.accepted_per_position)):
                base = sb.accepted_per_position if not reset else (0.0,) * len(sa.accepted_per_position)
                per_pos = tuple(max(y - x, 0.0) for x, y in zip(base, sa.accepted_per_position, strict=True))
        elif sa.verify_calls is not None:
            verify = _delta(sb.verify_calls, sa.verify_calls, reset)
            if verify is not None:
                drafts = verify
                if gen is not None:
                    counts = ADAPTERS[engine].draft_counts(verify, gen, finished, sa.num_draft_tokens)
                    if counts is not None:
                        accepted, draft_tokens = counts.accepted_tokens, counts.draft_tokens
    return StreamDelta(
        reset=reset, generation_tokens=gen, prompt_tokens=_delta(b.prompt_tokens, after.prompt_tokens, reset),
        preemptions=_delta(b.preemptions, after.preemptions, reset), finished_requests=finished, drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted, accepted_per_position=per_pos, ttft=_hist_delta(b.ttft, after.ttft, reset) if latency else None,
        tpot=_hist_delta(b.tpot, after.tpot, reset) if latency else None,
        itl=_hist_delta(b.itl, after.itl, reset) if latency else None,
    )


@dataclass(slots=True)
class WindowStats:
    """Derived values of one stream over one window; None means absent (never a made-up 0).

    Not frozen, for the reason `StreamDelta` is not; nothing changes one once built."""

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
    # TPOT: per request; ITL: per engine step on vLLM (a speculative arm has fewer, longer gaps for the
    # same tokens): compare arms by TPOT and tokens/s, never by ITL.
    tpot_seconds: dict[str, float | None] = field(default_factory=dict)
    itl_seconds: dict[str, float | None] = field(default_factory=dict)
    decode_tokens_per_second: float | None = None
    verify_cycle_seconds: float | None = None
    has_spec: bool = False
    # the depth actually used (`exporter.depth`): mean proposed depth (vLLM), the configured maximum, whether
    # the depth varied in the window, and so the per-position rates' basis ("exact" / "lower_bound")
    depth_mean: float | None = None
    depth_max: int | None = None
    depth_varies: bool | None = None
    position_basis: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The `specgate exporter window` stream shape (design.md command-line contract)."""
        return {
            "model": self.model,
            "rank": self.rank,
            "reset": self.reset,
            "drafts": self.drafts,
            "acceptance_length": self.acceptance_length,
            "acceptance_rate": self.acceptance_rate,
            "position_acceptance_rate": list(self.position_acceptance_rate),
            "position_basis": self.position_basis,
            "depth_mean": self.depth_mean,
            "depth_max": self.depth_max,
            "depth_varies": self.depth_varies,
            "ttft_seconds": {k: self.ttft_seconds.get(k) for k, _ in QUANTILES},
            "tpot_seconds": {k: self.tpot_seconds.get(k) for k, _ in QUANTILES},
            "itl_seconds": {k: self.itl_seconds.get(k) for k, _ in QUANTILES},
            "decode_tokens_per_second": self.decode_tokens_per_second,
        }


def _quantiles(h: Buckets | None) -> dict[str, float | None]:
    """p50/p90/p99 of a histogram delta (linear inside a bucket, like histogram_quantile); {} when empty."""
    if h is None or not h[0]:
        return {}
    return dict(zip(QUANTILE_NAMES, formulas.histogram_quantiles(QUANTILE_VALUES, h[0], h[1]), strict=True))


def _possible(length: float | None, rate: float | None, pos_rates: tuple[float, ...]) -> bool:
    """An acceptance length is at least 1 (it counts the bonus token); a rate is a fraction."""
    return ((length is None or length >= 1.0) and (rate is None or 0.0 <= rate <= 1.0)
            and all(0.0 <= p <= 1.0 for p in pos_rates))


def _depth_in_window(sa: SpecCounters, d: StreamDelta, dk: WindowDepth) -> tuple[float | None, bool | None]:
    """(mean proposed depth, whether the depth varied) over a window with enough drafts.

    vLLM (proposed-token counter): k̄ = Δdraft_tokens / Δdrafts, varied iff k̄ is below the maximum (no draft
    proposes more than the maximum, so k̄ equal to it means every draft was full). SGLang (verify calls):
    no proposed-token counter, so no k̄; varied for a proposer that varies by construction (NGRAM) or when
    its steps / draft-token gauges moved within the window; unknown (None) without those gauges."""
    if sa.drafts is not None:
        if d.draft_tokens is None or d.drafts is None:
            return None, None
        mean = formulas.mean_depth(d.draft_tokens, d.drafts)
        if mean is None or dk.max_k is None:
            return mean, None
        return mean, mean < dk.max_k - 1e-9
    if dk.variable or dk.moved:
        return None, True
    return None, (False if dk.gauged else None)


def window_stats(engine: str, before: StreamSnapshot | None, after: StreamSnapshot, d: StreamDelta,
                 seconds: float, min_drafts: float = 1, depth: WindowDepth | None = None) -> WindowStats:
    """Window values of one stream from its delta (`before`/`after` give the gauges: running requests,
    old SGLang's interval acceptance gauge). `depth`: what is known of the stream's depth (`WindowDepth`;
    None: nothing, so no depth values and per-position rates on the `lower_bound` basis).

    SGLang's L is decode-only (`exporter.formulas.decode_only_length`): (Δgenerated − Δfinished requests)
    / Δverify calls; without the request counter there is no L (fail closed, the adapter's `draft_counts`).
    Old SGLang's interval gauge is read through the adapter's `interval_gauge_is_new` / `rate_from_length`."""
    gen = d.generation_tokens
    decode = gen / seconds if gen is not None and seconds > 0 else None
    length = rate = None
    pos_rates: tuple[float, ...] = ()
    mean_depth: float | None = None
    varies: bool | None = None
    dk = depth or WindowDepth()
    sa = after.spec
    if sa is not None:
        if d.drafts is not None:
            enough = d.drafts >= max(min_drafts, 1)
            if enough and d.accepted_tokens is not None:
                if sa.drafts is None and sa.verify_calls is not None and gen is not None \
                        and d.finished_requests is not None:
                    length = formulas.decode_only_length(gen, d.finished_requests, d.drafts)
                else:
                    length = formulas.acceptance_length(d.accepted_tokens, d.drafts)
                if d.draft_tokens is not None:
                    rate = formulas.acceptance_rate(d.accepted_tokens, d.draft_tokens)
                pr = formulas.position_rates(d.accepted_per_position, d.drafts)
                pos_rates = tuple(pr) if pr else ()
            if enough:
                mean_depth, varies = _depth_in_window(sa, d, dk)
        elif sa.accept_length_gauge is not None:
            sb = before.spec if before is not None else None
            rules = ADAPTERS[engine]
            if rules.interval_gauge_is_new(sb, sa, gen, d.reset):
                length = sa.accept_length_gauge
                if sa.num_draft_tokens is not None:
                    rate = rules.rate_from_length(length, sa.num_draft_tokens)
    if not _possible(length, rate, pos_rates):
        # more accepted than proposed, L below 1, a position above 1: no acceptance value for this window
        # (design.md "Restarts": nothing impossible is exported)
        length, rate, pos_rates = None, None, ()
    if mean_depth is not None and dk.max_k is not None and mean_depth > dk.max_k + 1e-9:
        mean_depth, varies = None, None  # deeper than the configured maximum: impossible, not exported

    ttft = _quantiles(d.ttft)

    cycle = None
    b_running = before.requests_running if before is not None else None
    running = max(x for x in (b_running, after.requests_running, 0.0) if x is not None)
    if decode is not None and decode > 0 and running > 0:
        cycle_len = length if sa is not None else 1.0
        if cycle_len is not None:
            cycle = formulas.verify_cycle_seconds(cycle_len, decode / running)

    return WindowStats(
        engine=engine, model=after.model, rank=after.rank, seconds=seconds, reset=d.reset,
        drafts=d.drafts, draft_tokens=d.draft_tokens, accepted_tokens=d.accepted_tokens,
        accepted_per_position=d.accepted_per_position, generation_tokens=gen, prompt_tokens=d.prompt_tokens,
        acceptance_length=length, acceptance_rate=rate, position_acceptance_rate=pos_rates, ttft_seconds=ttft,
        tpot_seconds=_quantiles(d.tpot), itl_seconds=_quantiles(d.itl),
        decode_tokens_per_second=decode, verify_cycle_seconds=cycle, has_spec=sa is not None,
        depth_mean=mean_depth, depth_max=dk.max_k if sa is not None else None, depth_varies=varies,
        position_basis=("exact" if varies is False else "lower_bound") if pos_rates else None,
    )


def derive_window(before: EngineSnapshot, after: EngineSnapshot, seconds: float | None = None,
                  min_drafts: float = 1) -> list[WindowStats]:
    """Window values of every stream present in `after`.

    A stream absent from `before` (new, or the engine restarted and changed shape) is a reset
    window. `seconds` defaults to the difference of the snapshots' timestamps.
    """
    secs = seconds if seconds is not None else max(after.timestamp - before.timestamp, 0.0)
    rules = ADAPTERS[after.engine]  # the engine's depth hooks
    out = []
    for s in after.streams:
        b = before.stream(s.model, s.rank)
        reset = b is None or restarted(b, s, before.process_start_time, after.process_start_time)
        known = rules.configured_depth(after.speculative, s)
        dk = WindowDepth(max_k=known[0] if known is not None else None,
                         variable=rules.variable_by_construction(after.speculative),
                         moved=b is not None and not reset and depth_moved(b, s), gauged=gauged(s))
        out.append(window_stats(after.engine, b, s, stream_delta(after.engine, b, s, reset), secs, min_drafts, dk))
    return out
