"""Vetting: evidence reaches the lines only when it is possible, recent, counted once, live and the plan's.

Why one place: every source (capture files, the exporter, a raw engine, Prometheus) hands its
`MetricsEvidence` to `gather`, and the rules for what may be believed are the same for all of
them (issue 10, "decision safety"). What fails a rule is dropped and said — an evidence error
the acceptance line reports, so the line is inconclusive with the reason, never a pass:

- numbers: finite, non-negative, physically possible at the plan's depth k (plausibility);
- time: a window ends within `lookback_seconds` of the evaluation and not in the future
  (beyond the clock-skew allowance); capture files are history and are only refused when
  they come from the future;
- counted once: the same window of the same stream delivered twice is one window;
- restarts: a window whose restart status is unknown (`reset` None: Prometheus without the
  restarts series, an engine page without `process_start_time_seconds` and no counter that
  fell) is not evidence;
- phase post: only live sources count (files are not), and the engine must be up
  (`engine_up` from the sidecar; a raw engine that answered is up);
- identity: a source that serves another model, runs another engine or another speculative
  method is not this plan's evidence (gate.model.identity); its pool and versions go too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from gate.evidence.base import AcceptanceWindow, MetricsEvidence
from gate.model import plausibility as pl
from gate.model.identity import EvidenceIdentity, match
from gate.model.invariants import APPLICABILITY, IDENTITY, MEMBER_TIME, PLAUSIBILITY, UNIQUENESS, reason


@dataclass(frozen=True)
class VetRules:
    """What the plan and the moment of evaluation say evidence must be."""

    engine: str
    served_model_name: str | None
    method: str | None
    k: int | None
    phase: str
    now: float
    lookback_seconds: float
    # The k the acceptance bounds use when the plan's depth schedule lets some batch run deeper or shallower than k
    # (Plan.bound_depth; issue 22); None: k itself.
    bound_k: int | None = None
    # Why the plan's engine settings or environment make acceptance simulated (gate.evidence.intake.plan_simulated,
    # a reason of the simulated invariant); None: no knob stated. Captures and windows show no knob themselves.
    simulated: str | None = None


# The invariant (gate.model.invariants) each kind of finding breaks, so every reason below opens with its message;
# kinds not listed (not_live, restart_unknown) are rules of the phase and of restarts, not of the registry.
KIND_INVARIANT: Mapping[str, str] = MappingProxyType({
    "non_finite": PLAUSIBILITY, "negative": PLAUSIBILITY, "out_of_range": PLAUSIBILITY, "impossible": PLAUSIBILITY,
    "undated": MEMBER_TIME, "future": MEMBER_TIME, "stale": MEMBER_TIME, "ancient": MEMBER_TIME, "duplicate": UNIQUENESS,
})


def _named(f: pl.Implausible, invariant: str | None = None) -> str:
    """A finding's reason opening with the message of the invariant it breaks (`KIND_INVARIANT`)."""
    inv = invariant or KIND_INVARIANT.get(f.kind)
    return f.reason if inv is None else reason(inv, f.reason)


def _mismatch_invariant(ident: EvidenceIdentity, rules: VetRules) -> str:
    """Identity when the source is another engine or serves another model (`match` on those alone), else
    applicability: the same deployment measured at another method, depth or without speculation."""
    bare = replace(ident, speculating=None, algorithm=None, depth=None)
    found = match(bare, served_model_name=rules.served_model_name, engine=rules.engine, method=None, k=None)
    return IDENTITY if found is not None else APPLICABILITY


def _summarise(found: list[tuple[str, pl.Implausible]]) -> list[str]:
    """One error per (source, kind): the count and the first reason (1,000 bad windows are one line)."""
    groups: dict[tuple[str, str], list[pl.Implausible]] = {}
    for source, f in found:
        groups.setdefault((source, f.kind), []).append(f)
    out = []
    for (_, _), fs in groups.items():
        more = f" ({len(fs)} windows)" if len(fs) > 1 else ""
        out.append(f"not evidence{more}: {_named(fs[0])}")
    return out


def vet_windows(windows: Sequence[AcceptanceWindow], rules: VetRules,
                is_live: Callable[[AcceptanceWindow], bool]) -> tuple[list[AcceptanceWindow], list[str]]:
    """The windows that may be believed, and one line per reason some were not."""
    found: list[tuple[str, pl.Implausible]] = []
    kept: list[AcceptanceWindow] = []
    for w in windows:
        live = is_live(w)
        if rules.phase == "post" and not live:
            found.append((w.source, pl.Implausible("not_live", f"{w.source} is a file, not live evidence "
                                                   "(the post phase judges the running engine)")))
            continue
        problem = (pl.window_values(w, rules.k if rules.bound_k is None else rules.bound_k, rules.method)
                   or pl.recency(w.end, rules.now, rules.lookback_seconds, where=f"{w.source}, {w.stream}",
                                 require_recent=live))
        if problem is None and w.reset is None:
            problem = pl.Implausible("restart_unknown", f"{w.source}, {w.stream}: whether the engine restarted inside "
                                     "the window is unknown (no restarts series / no process_start_time_seconds)")
        if problem is not None:
            found.append((w.source, problem))
            continue
        kept.append(w)
    distinct, dup = pl.distinct(kept)
    errors = _summarise(found)
    if dup is not None:
        errors.append(f"not evidence: {_named(dup)}")
    overlap = pl.overlapping(distinct)
    if overlap is not None:
        errors.append(f"not evidence: {_named(overlap, UNIQUENESS)}")  # drafts counted twice
        bad = {w.stream for w in distinct}  # drafts counted twice somewhere: no stream count can be trusted
        distinct = [w for w in distinct if w.stream not in bad]
    return distinct, errors


def vet_source(ev: MetricsEvidence, rules: VetRules) -> MetricsEvidence:
    """One source's evidence, or its errors alone when it is not this plan's or its engine is down."""
    if rules.simulated is not None and ev.windows:
        # Simulated acceptance (issue 37): the windows are the knob's numbers, not the drafter's; pools stay.
        return replace(ev, windows=[], errors=[*ev.errors, f"no acceptance evidence: {rules.simulated}"])
    if ev.identity is not None:
        mismatch = match(ev.identity, served_model_name=rules.served_model_name, engine=rules.engine,
                         method=rules.method, k=rules.k)
        if mismatch is not None and ev.identity.speculating is False and rules.method is not None:
            # Seed 000's trap: an engine running no speculation is no acceptance evidence, but its pool is
            # the pool *without* the drafter (kept, marked speculating False), not a foreign deployment.
            return replace(ev, windows=[], errors=[*ev.errors, f"no acceptance evidence: "
                                                                 f"{_named(mismatch, APPLICABILITY)}"])
        if mismatch is not None:
            named = _named(mismatch, _mismatch_invariant(ev.identity, rules))
            return MetricsEvidence(sources=list(ev.sources), errors=[*ev.errors, f"not this plan's evidence: {named}"])
    errors = list(ev.errors)
    # A fleet (gate.evidence.fleet) judges every pod's engine state in its own row: one pod down is that pod's
    # inconclusive row, not the whole fleet's evidence dropped.
    if rules.phase == "post" and ev.live and ev.fleet is None and ev.engine_up is not True:
        why = "reports engine_up 0" if ev.engine_up is False else "does not report engine_up"
        errors.append(f"{', '.join(ev.sources) or 'the source'} {why}: the engine is not known to be up, so its "
                      "windows are not live evidence")
        return MetricsEvidence(sources=list(ev.sources), errors=errors)
    out = replace(ev, errors=errors)
    if out.kv_pool is not None:
        bad = pl.pool_tokens(out.kv_pool.tokens, where=out.kv_pool.source)
        if bad is not None:
            out.errors.append(f"not evidence: {_named(bad)}")
            out.kv_pool = None
    if out.ready_seconds is not None:
        bad = pl.startup_seconds(out.ready_seconds, where=out.ready_source or "")
        if bad is not None:
            out.errors.append(f"not evidence: {_named(bad)}")
            out.ready_seconds = out.ready_source = None
    if out.context_cap_tokens is not None:
        bad = pl.number("context cap tokens", out.context_cap_tokens, low=0.0, low_inclusive=False,
                        high=float(pl.MAX_POOL_TOKENS))
        if bad is not None:
            out.errors.append(f"not evidence: {_named(bad)}")
            out.context_cap_tokens = None
    return out
