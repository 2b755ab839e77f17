"""Floor 0: acceptance counters by draft position — what one run at depth k measured, and how windows pool.

Why on the floor: the counters are plain numbers (drafts, accepted per position), and every rule on
them — p_i, L(k), whether the depth varied, how windows sum — is arithmetic the acceptance line's
depth advice and `specgate tune` share. Reading them from capture pages is the evidence layer's
(`gate.evidence.positions`); this module reads nothing.

vLLM accepts drafted tokens prefix-wise (position i counts only if positions 0..i-1 were), so one
window at depth k gives

    p_i  = accepted_i / drafts        (i = 0 .. k-1)
    L(k) = 1 + Σ_i p_i                (exporter.formulas.length_from_rates)

When the depth varies (issue 22: a vLLM schedule, a drafterless proposer that found fewer tokens,
SGLang's adaptive steps) a draft may stop short of position i, yet vLLM still divides
`accepted_i` by every draft. Then p_i = accepted_i / drafts counts the short drafts as misses at
position i: it is a **lower bound** of the rate a run that always drafted k tokens would show,
and from counters alone the number of drafts that reached position i is unknown. The counters
say the depth varied when Δdraft_tokens < k · Δdrafts (`PositionCounters.depth_varied`; a fixed
depth drafts exactly k per draft, so draft_tokens = k · drafts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from exporter import formulas
from gate.status import InputError

__all__ = ["REPORTED_TAG", "CountersError", "PositionCounters", "pooled"]

# How a counters source says its numbers were reported, not measured: gate.evidence.captures.counters_source
# writes "SOURCE (reported: WHERE)" for capture pages marked reported; pooling joins sources, so the tag survives.
REPORTED_TAG = " (reported: "


class CountersError(InputError):
    """Unusable acceptance counters (a restart inside the window, counters that are not per position):
    one line; tune's `TuneInputError` (gate.model.speedup.curves) is this class."""


@dataclass(frozen=True)
class PositionCounters:
    """What one run at depth k measured for one operating point: drafts and accepted per position.

    `accepted_per_position` is empty when the source gives only L (then `acceptance_length` is set).
    """

    point: str | None
    k: int
    drafts: float
    accepted_per_position: tuple[float, ...]
    source: str
    acceptance_length: float | None = None
    # Δvllm:spec_decode_num_draft_tokens over the same window (None where the source gives none).
    draft_tokens: float | None = None

    def __post_init__(self) -> None:
        if self.k < 1:
            raise CountersError(f"{self.source}: depth k must be at least 1 (got {self.k})")
        if self.accepted_per_position:
            if len(self.accepted_per_position) != self.k:
                raise CountersError(f"{self.source}: {len(self.accepted_per_position)} per-position counters "
                                    f"for depth k = {self.k}")
            if self.drafts <= 0:
                raise CountersError(f"{self.source}: no drafts, so no acceptance by position")
            prev = self.drafts
            for i, a in enumerate(self.accepted_per_position):
                if a < 0 or a > prev + 1e-9:
                    raise CountersError(
                        f"{self.source}: accepted at position {i} is {a:g}, more than at position {i - 1} "
                        f"({prev:g}) or below 0; vLLM accepts prefix-wise, so these are not per-position counters")
                prev = a
        elif self.acceptance_length is None:
            raise CountersError(f"{self.source}: neither per-position counters nor an acceptance length")

    @property
    def reported(self) -> bool:
        """Someone reported these counters (their source says so, `REPORTED_TAG`): reported stays reported, never
        "measured" — one reported sample makes a pool reported (the weaker label wins)."""
        return REPORTED_TAG in self.source

    @property
    def resolved(self) -> bool:
        """Per-position counters are known, so L(k') for k' <= k is exact arithmetic."""
        return bool(self.accepted_per_position)

    @property
    def mean_depth(self) -> float | None:
        """Draft tokens proposed per draft, Δdraft_tokens / Δdrafts (None when unknown)."""
        if self.draft_tokens is None or self.drafts <= 0:
            return None
        return self.draft_tokens / self.drafts

    @property
    def depth_varied(self) -> str | None:
        """Why these counters come from a run whose depth varied (module docstring), or None: fewer draft tokens
        than k per draft (half a token of rounding allowed over the window)."""
        mean = self.mean_depth
        if mean is None or self.draft_tokens is None or self.draft_tokens >= self.k * self.drafts - 0.5:
            return None
        return (f"{self.source}: {mean:.2f} draft tokens per draft, below k = {self.k} (Δdraft_tokens "
                f"{self.draft_tokens:g} < k · Δdrafts {self.k * self.drafts:g}): the depth varied")

    @property
    def position_rates(self) -> tuple[float, ...]:
        """p_i = accepted_i / drafts."""
        return tuple(a / self.drafts for a in self.accepted_per_position)

    @property
    def measured_length(self) -> float:
        """L(k) = 1 + Σ p_i (or the L the source gave)."""
        if self.resolved:
            return formulas.length_from_rates(self.position_rates)
        assert self.acceptance_length is not None
        return self.acceptance_length


def pooled(samples: Sequence[PositionCounters], point: str | None, source: str) -> PositionCounters:
    """Several windows (or streams) at the same depth summed into one: counters add, ratios do not."""
    if not samples:
        raise CountersError(f"{source}: no acceptance counters")
    ks = {s.k for s in samples}
    if len(ks) > 1:
        raise CountersError(f"{source}: windows at different depths ({', '.join(map(str, sorted(ks)))}); "
                            "give one depth per operating point")
    k = ks.pop()
    drafts = sum(s.drafts for s in samples)
    draft_tokens = (sum(s.draft_tokens for s in samples if s.draft_tokens is not None)
                    if all(s.draft_tokens is not None for s in samples) else None)
    if all(s.resolved for s in samples):
        per_pos = tuple(sum(s.accepted_per_position[i] for s in samples) for i in range(k))
        return PositionCounters(point, k, drafts, per_pos, source, draft_tokens=draft_tokens)
    length = formulas.pooled_length((s.measured_length, s.drafts) for s in samples)
    if length is None:  # no drafts anywhere: nothing to weigh by
        length = sum(s.measured_length for s in samples) / len(samples)
    return PositionCounters(point, k, drafts, (), source, acceptance_length=length, draft_tokens=draft_tokens)
