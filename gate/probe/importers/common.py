"""One imported benchmark run as a probe cell, and the checks every importer applies to its requests.

Why one shape for every tool: the cell's numbers must mean what a native cell's mean
(`gate.evidence.probes`): TTFT = first streamed chunk − send, TPOT of a request =
(last chunk − first chunk) / (output tokens − 1), the served rate = Σ output tokens / the run's wall
clock (first send to last token, first-token waiting included), quantiles by linear interpolation
(`gate.probe.runner.quantiles`). An importer's job is only to find those times in its tool's file and
to refuse numbers that cannot be true (`RequestTimes.problem`), with the request named.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gate.evidence.probes import Cell, ProbeError
from gate.model.invariants import IDENTITY, PLAUSIBILITY, reason
from gate.probe.runner import quantiles

# Timers of two clocks (a tool's request latency vs its own sum of chunk gaps, its wall clock vs its
# requests' spans) agree to rounding; 1 ms or 0.1 % covers the JSON's float printing and perf_counter reads.
TIME_SLACK_SECONDS = 1e-3
TIME_SLACK_FRACTION = 1e-3


def impossible(detail: str) -> ProbeError:
    """A file's numbers that cannot be one real run, as the plausibility invariant's one line (gate.model.invariants):
    every importer's checks name the rule they hold, so the hostile generator can hold each to it."""
    return ProbeError(reason(PLAUSIBILITY, detail))


def not_same(detail: str) -> ProbeError:
    """A file that contradicts what the user or its other files say about the run (concurrency, temperature): the
    identity invariant's one line."""
    return ProbeError(reason(IDENTITY, detail))


def finite_number(v: object, where: str, *, positive: bool = False) -> float:
    """A finite, non-negative number (positive: > 0), else ProbeError naming `where`."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ProbeError(f"{where} is {v!r}, not a number")
    x = float(v)
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise impossible(f"{where} is {v!r}: a time or count must be finite and {'> 0' if positive else '>= 0'}")
    return x


def whole_number(v: object, where: str) -> int:
    """A whole number >= 0 (JSON may write it as 64 or 64.0), else ProbeError."""
    x = finite_number(v, where)
    if x != int(x):
        raise impossible(f"{where} is {v!r}, not a whole number")
    return int(x)


def close(a: float, b: float) -> bool:
    return abs(a - b) <= max(TIME_SLACK_SECONDS, TIME_SLACK_FRACTION * max(abs(a), abs(b)))


@dataclass(frozen=True)
class RequestTimes:
    """One completed request as a tool timed it (seconds): from send to first chunk, and to the last chunk."""

    ttft: float
    latency: float  # send -> last chunk
    output_tokens: int
    chunk_gaps: tuple[float, ...] = ()  # between streamed chunks after the first, where the tool kept them
    start: float | None = None  # on the tool's own clock, where it kept it

    @property
    def tpot(self) -> float | None:
        """(last chunk − first chunk) / (output tokens − 1): the engines' and the probe's TPOT."""
        if self.output_tokens < 2:
            return None
        return (self.latency - self.ttft) / (self.output_tokens - 1)

    def problem(self) -> str | None:
        """Why these times cannot be one real request, or None."""
        if self.ttft > self.latency + TIME_SLACK_SECONDS:
            return f"its TTFT {self.ttft:.6g} s is longer than its whole latency {self.latency:.6g} s"
        if self.output_tokens < 1:
            return "it completed with no output tokens"
        if len(self.chunk_gaps) + 1 > self.output_tokens:
            return (f"it streamed {len(self.chunk_gaps) + 1} chunks for {self.output_tokens} output tokens "
                    "(every chunk carries at least one token)")
        if self.chunk_gaps and not close(self.ttft + sum(self.chunk_gaps), self.latency):
            return (f"its TTFT {self.ttft:.6g} s plus its chunk gaps {sum(self.chunk_gaps):.6g} s is not its "
                    f"latency {self.latency:.6g} s")
        return None


@dataclass(frozen=True)
class ImportedCell:
    """One tool run at one concurrency: its completed requests' times, its totals and what its file says."""

    concurrency: int
    requests: int  # sent, failed included
    failed: int
    wall_seconds: float
    output_tokens: int  # Σ over completed requests
    prompt_tokens: int | None
    times: tuple[RequestTimes, ...]
    output_tokens_per_request: int  # the largest a request got (the mix's output tokens)
    prompt_tokens_per_request: int | None  # one prompt length for every request, else None
    prompts_from: str | None = None
    model: str | None = None
    temperature: float | None = None
    tool_version: str | None = None
    created_at: float | None = None  # seconds since the epoch, where the file says when it ran
    warmup_requests: int | None = None
    acceptance_length: float | None = None
    acceptance_rate: float | None = None
    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None

    def cell(self, mix: str, repetition: int) -> Cell:
        ok = self.times
        return Cell(
            mix=mix, concurrency=self.concurrency, repetition=repetition, requests=self.requests,
            output_tokens=self.output_tokens, prompt_tokens=self.prompt_tokens, wall_seconds=self.wall_seconds,
            served_tokens_per_second=self.output_tokens / self.wall_seconds, failed_requests=self.failed,
            ttft_seconds=quantiles([t.ttft for t in ok]),
            tpot_seconds=quantiles([x for t in ok if (x := t.tpot) is not None]),
            chunk_gap_seconds=quantiles([g for t in ok for g in t.chunk_gaps]),
            acceptance_length=self.acceptance_length, acceptance_rate=self.acceptance_rate, drafts=self.drafts,
            draft_tokens=self.draft_tokens, accepted_tokens=self.accepted_tokens)


def check_requests(times: Sequence[RequestTimes], wall: float, where: str) -> None:
    """Each request possible on its own (`RequestTimes.problem`) and inside the run's wall clock."""
    for i, t in enumerate(times):
        bad = t.problem()
        if bad:
            raise impossible(f"{where}: request {i}: {bad}")
        if t.latency > wall + max(TIME_SLACK_SECONDS, TIME_SLACK_FRACTION * wall):
            raise impossible(f"{where}: request {i} took {t.latency:.6g} s, longer than the whole run's "
                             f"{wall:.6g} s")
    starts = [(t.start, t.start + t.latency) for t in times if t.start is not None]
    if starts:
        span = max(e for _, e in starts) - min(s for s, _ in starts)
        if span > wall + max(TIME_SLACK_SECONDS, TIME_SLACK_FRACTION * wall):
            raise impossible(f"{where}: its requests span {span:.6g} s from the first send to the last token, "
                             f"longer than its duration {wall:.6g} s")
