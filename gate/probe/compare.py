"""Does speculation pay? Two probe records → per (mix, concurrency) speedup, rank test, verdict, crossover.

Why: "it is slower than without it — where is the crossover?" is the users' most frequent
complaint about speculative decoding, and a high acceptance length does not answer it (the
first wave's ngram arm accepted L 3.24 and still served 1,840 tokens in 4.26 s against 2.38 s
without speculation). Only the two arms' served rates, measured the same way, answer it.

Per point (mix, concurrency), with x = the speculative arm's served rates (one per repetition)
and y = the baseline's:

    speedup = median(x) / median(y)                                   (gate.stats.speedup)
    speedup_low/high = min(x)/max(y) .. max(x)/min(y)                 interval_kind "observed_range"
                       (a percentile bootstrap instead when both arms have ≥ 10 repetitions)
    p_faster = P(U ≥ u | H0), p_slower = P(U ≤ u | H0)                one-sided exact Mann-Whitney U
    verdict  = pays          if p_faster < α and (min_speedup unset or speedup ≥ min_speedup)
               does_not_pay  if p_slower < α, or p_faster < α but speedup < min_speedup
               inconclusive  otherwise (the ranks cannot tell the arms apart)
    p_value  = the one-sided p in the direction of the point estimate (p_faster when speedup ≥ 1)

Each direction is its own one-sided test at α: the chance of calling a no-difference point
"pays" is ≤ α, and of calling it "does_not_pay" ≤ α. Measured break-even (seed 004,
L* = cycle / step) where the speculative arm's acceptance is known, from decode time only:

    step = TPOT_baseline, cycle = L × TPOT_speculative  →  L* = L × TPOT_spec / TPOT_base

(medians over repetitions of the cells' TPOT p50), so speculation pays in decode iff L > L*.
crossover_concurrency of a mix: between the last concurrency that pays and the next measured one
that does not, interpolated linearly where the speedup crosses the threshold (1, or min_speedup):
c1 + (s1 − t) / (s1 − s2) · (c2 − c1) (gate.stats.crossover); null when there is no such pair.

Fail closed: a point with a failed request, a cell whose engine restarted, a non-finite or zero
rate, or cells in only one arm is inconclusive with its reason; two records of the same arm, and
records that are not one consistent experiment (gate.evidence.probe_vetting: another engine, build or
model, or one left unknown; mixes of another shape; a copied cell; a rate that is not tokens / wall;
acceptance on the wrong arm or beyond 1 + k; dates unknown, in the future or over a day apart) are
refused (CompareError); α must lie in (0, 0.2] (gate.model.plausibility.MAX_ALPHA).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gate.evidence.probe_vetting import client_bound, pair_defects, record_defects
from gate.evidence.probes import Cell, MixSpec, ProbeRecord
from gate.inputs.jsontext import printable
from gate.model.plausibility import MAX_ALPHA
from gate.stats import Alternative, StatsError, crossover, mann_whitney_u, speedup

DEFAULT_ALPHA = 0.05
TEST_NAME = "one-sided exact Mann-Whitney U on served tokens/s per repetition"


class CompareError(ValueError):
    """Records that cannot be compared (wrong arms, different engines or models): exit 3."""


class Verdict(StrEnum):
    PAYS = "pays"
    DOES_NOT_PAY = "does_not_pay"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class PointResult:
    """One (mix, concurrency): the numbers and the sentence that explain its verdict."""

    mix: str
    concurrency: int
    verdict: Verdict
    reason: str
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    interval_kind: str | None = None
    p_value: float | None = None
    p_faster: float | None = None
    p_slower: float | None = None
    test_method: str | None = None
    n_baseline: int = 0
    n_speculative: int = 0
    baseline_tokens_per_second: float | None = None
    speculative_tokens_per_second: float | None = None
    baseline_tpot_seconds: float | None = None
    speculative_tpot_seconds: float | None = None
    acceptance_length: float | None = None
    break_even_acceptance_length: float | None = None
    request_rate: float | None = None  # open loop: arrivals per second (concurrency is then the cells' request cap)
    pair_apart_seconds: float | None = None  # probe ab: the largest gap between paired cells of this point

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["verdict"] = self.verdict.value
        return d


@dataclass(frozen=True)
class Comparison:
    """All points, the crossover of each mix, and the inputs that decided them."""

    points: tuple[PointResult, ...]
    crossovers: dict[str, float | None]
    crossover_between: dict[str, tuple[int, int] | None]
    alpha: float
    min_speedup: float | None
    baseline: dict[str, Any] = field(default_factory=dict)
    speculative: dict[str, Any] = field(default_factory=dict)
    # Open loop (issue 23): per mix, where speculation stops paying in requests per second.
    rate_crossovers: dict[str, float | None] = field(default_factory=dict)
    rate_crossover_between: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    pairing: dict[str, Any] | None = None  # probe ab: order and how far apart the paired cells were measured

    @property
    def crossover_request_rate(self) -> float | None:
        """The lowest request-rate crossover over the mixes; None when none (or no open-loop points)."""
        found = [c for c in self.rate_crossovers.values() if c is not None]
        return min(found) if found else None

    @property
    def crossover_concurrency(self) -> float | None:
        """The lowest crossover over the mixes (with one mix: its crossover)."""
        found = [c for c in self.crossovers.values() if c is not None]
        return min(found) if found else None

    def point(self, mix: str, concurrency: int) -> PointResult | None:
        return next((p for p in self.points if p.mix == mix and p.concurrency == concurrency
                     and p.request_rate is None), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "cells": [p.to_json() for p in self.points],
            "crossover_concurrency": self.crossover_concurrency,
            "crossovers": {m: {"concurrency": c, "between": list(b) if (b := self.crossover_between[m]) else None}
                           for m, c in self.crossovers.items()},
            "crossover_request_rate": self.crossover_request_rate,
            "rate_crossovers": {m: {"request_rate": c, "between": list(rb) if (rb := self.rate_crossover_between[m])
                                    else None} for m, c in self.rate_crossovers.items()},
            "alpha": self.alpha, "min_speedup": self.min_speedup, "test": TEST_NAME,
            "baseline": self.baseline, "speculative": self.speculative, "pairing": self.pairing,
        }


def _about(r: ProbeRecord) -> dict[str, Any]:
    return {"engine": r.engine, "engine_version": r.engine_version, "model": r.model,
            "speculative": r.speculative, "repetitions": r.repetitions, "warmup_requests": r.warmup_requests}


def _check_pair(base: ProbeRecord, spec: ProbeRecord, now: float) -> None:
    """The arms in order, each consistent with itself, and the two one experiment (gate.evidence.probe_vetting):
    the first defect is the CompareError, with how many more were found."""
    if base.arm != "baseline":
        raise CompareError(f"the first record is the {base.arm} arm; expected BASELINE then SPECULATIVE")
    if spec.arm != "speculative":
        raise CompareError(f"the second record is the {spec.arm} arm; expected BASELINE then SPECULATIVE")
    defects = [*record_defects(base), *record_defects(spec), *pair_defects(base, spec, now)]
    if defects:
        more = f" (and {len(defects) - 1} more)" if len(defects) > 1 else ""
        raise CompareError(defects[0] + more)


Point = tuple[str, int, float | None]  # (mix, concurrency, request_rate): Cell.point


def _group(cells: Sequence[Cell]) -> dict[Point, list[Cell]]:
    out: dict[Point, list[Cell]] = {}
    for c in cells:
        out.setdefault(c.point, []).append(c)
    return out


def _median_or_none(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def decide(p_faster: float, p_slower: float, point_speedup: float, alpha: float,
           min_speedup: float | None) -> Verdict:
    """The verdict rule of the module docstring, on its own (gate.checks.acceptance.cohorts judges canary against
    stable by it too): pays when faster at p < α and at least min_speedup; does not pay when slower at
    p < α, or faster but below min_speedup; inconclusive otherwise."""
    if p_faster < alpha:
        return Verdict.PAYS if min_speedup is None or point_speedup >= min_speedup else Verdict.DOES_NOT_PAY
    if p_slower < alpha:
        return Verdict.DOES_NOT_PAY
    return Verdict.INCONCLUSIVE


def judge_point(mix: str, concurrency: int, base: Sequence[Cell], spec: Sequence[Cell],
                alpha: float = DEFAULT_ALPHA, min_speedup: float | None = None,
                request_rate: float | None = None, bound: Sequence[str] = ()) -> PointResult:
    """The verdict of one point from its cells (the formulas are in the module docstring); `bound`: why cells
    of the point are client-bound (gate.evidence.probe_vetting.client_bound): then inconclusive, no evidence."""
    name = f"{mix} at " + (f"request rate {request_rate:g}/s" if request_rate is not None
                           else f"concurrency {concurrency}")
    apart = [c.pair_apart_seconds for c in (*base, *spec) if c.pair_apart_seconds is not None]
    extra: dict[str, Any] = {"request_rate": request_rate, "pair_apart_seconds": max(apart) if apart else None}
    if not base or not spec:
        missing = "baseline" if not base else "speculative"
        return PointResult(mix, concurrency, Verdict.INCONCLUSIVE, f"{name}: no {missing} cells",
                           n_baseline=len(base), n_speculative=len(spec), **extra)
    for arm, cells in (("baseline", base), ("speculative", spec)):
        failed = sum(c.failed_requests for c in cells)
        if failed:
            return PointResult(mix, concurrency, Verdict.INCONCLUSIVE,
                               f"{name}: {failed} failed request(s) in the {arm} arm; its rates are not comparable",
                               n_baseline=len(base), n_speculative=len(spec), **extra)
        if any(c.metrics_reset for c in cells):
            return PointResult(mix, concurrency, Verdict.INCONCLUSIVE,
                               f"{name}: the {arm} engine restarted during a cell",
                               n_baseline=len(base), n_speculative=len(spec), **extra)
    if bound:
        more = f" (and {len(bound) - 1} more)" if len(bound) > 1 else ""
        return PointResult(mix, concurrency, Verdict.INCONCLUSIVE, f"{name}: {bound[0]}{more}",
                           n_baseline=len(base), n_speculative=len(spec), **extra)
    x = [c.served_tokens_per_second for c in spec]
    y = [c.served_tokens_per_second for c in base]
    try:
        s = speedup(x, y)
        faster = mann_whitney_u(x, y, Alternative.GREATER)
        slower = mann_whitney_u(x, y, Alternative.LESS)
    except StatsError as e:
        return PointResult(mix, concurrency, Verdict.INCONCLUSIVE, f"{name}: {e}",
                           n_baseline=len(base), n_speculative=len(spec), **extra)
    tpot_b = _median_or_none([c.tpot_seconds.p50 for c in base])
    tpot_s = _median_or_none([c.tpot_seconds.p50 for c in spec])
    length = _median_or_none([c.acceptance_length for c in spec])
    l_star = length * tpot_s / tpot_b if length is not None and tpot_s and tpot_b else None
    speeds = (f"speculative {s.median_x:.4g} tok/s vs baseline {s.median_y:.4g} tok/s (medians of "
              f"{s.n_x} and {s.n_y}), speedup {s.speedup:.3g}x ({s.interval_kind.value} "
              f"{s.low:.3g}-{s.high:.3g})")
    verdict = decide(faster.p_value, slower.p_value, s.speedup, alpha, min_speedup)
    if verdict is Verdict.PAYS:
        p = faster.p_value
        why = f"pays: {speeds}; faster at p = {p:.3g} < {alpha:g}"
    elif faster.p_value < alpha:
        p = faster.p_value
        why = (f"does not pay: {speeds}; significantly faster (p = {p:.3g}) but below min_speedup "
               f"{min_speedup:g}")
    elif verdict is Verdict.DOES_NOT_PAY:
        p = slower.p_value
        why = f"does not pay: {speeds}; slower at p = {p:.3g} < {alpha:g}"
    else:
        p = faster.p_value if s.speedup >= 1 else slower.p_value
        why = (f"inconclusive: {speeds}; the rank test cannot tell the arms apart (p = {p:.3g}, "
               f"not < {alpha:g}); this is no speedup and no slowdown")
    return PointResult(
        mix, concurrency, verdict, f"{name} {why}", speedup=s.speedup, speedup_low=s.low, speedup_high=s.high,
        interval_kind=s.interval_kind.value, p_value=p, p_faster=faster.p_value, p_slower=slower.p_value,
        test_method=faster.method, n_baseline=len(base), n_speculative=len(spec),
        baseline_tokens_per_second=s.median_y, speculative_tokens_per_second=s.median_x,
        baseline_tpot_seconds=tpot_b, speculative_tpot_seconds=tpot_s, acceptance_length=length,
        break_even_acceptance_length=l_star, **extra)


def _load(p: PointResult) -> float:
    """Where a point sits on its axis: its request rate (open loop), else its concurrency."""
    return p.request_rate if p.request_rate is not None else float(p.concurrency)


def _crossover(points: Sequence[PointResult], threshold: float) -> tuple[float | None, tuple[Any, Any] | None]:
    """Where one mix stops paying (gate.stats.crossover on the points' verdicts): between the last paying load and
    the next measured one that does not pay. The load is the concurrency, or for open-loop points (pass those of
    one kind only) the request rate."""
    found = crossover([(p.request_rate if p.request_rate is not None else p.concurrency, p.speedup,
                        None if p.verdict is Verdict.INCONCLUSIVE else p.verdict is Verdict.PAYS) for p in points],
                      threshold)
    return (None, None) if found is None else found


def compare(base: ProbeRecord, spec: ProbeRecord, alpha: float = DEFAULT_ALPHA,
            min_speedup: float | None = None, now: float | None = None) -> Comparison:
    """Judge every point either record measured, once the pair is vetted (`now`, default the clock: what the
    records' dates are judged against)."""
    if not 0 < alpha <= MAX_ALPHA:
        raise CompareError(f"alpha must be in (0, {MAX_ALPHA:g}], got {alpha!r}")
    if min_speedup is not None and not min_speedup > 0:
        raise CompareError(f"min_speedup must be positive, got {min_speedup!r}")
    _check_pair(base, spec, time.time() if now is None else now)
    gb, gs = _group(base.cells), _group(spec.cells)
    keys = sorted(set(gb) | set(gs), key=lambda k: (k[0], k[2] is not None, k[2] or 0.0, k[1]))

    def bound(key: Point) -> list[str]:
        return [why for rec, g in ((base, gb), (spec, gs)) for c in g.get(key, [])
                if (why := client_bound(rec, c)) is not None]

    points = tuple(judge_point(m, c, gb.get((m, c, r), []), gs.get((m, c, r), []), alpha, min_speedup,
                               request_rate=r, bound=bound((m, c, r))) for m, c, r in keys)
    crossovers: dict[str, float | None] = {}
    between: dict[str, tuple[int, int] | None] = {}
    rate_cross: dict[str, float | None] = {}
    rate_between: dict[str, tuple[float, float] | None] = {}
    for mix in dict.fromkeys(m for m, _, _ in keys):
        closed = [p for p in points if p.mix == mix and p.request_rate is None]
        # open-loop points of a mix are on another axis (requests/s): their own crossover
        opened = [p for p in points if p.mix == mix and p.request_rate is not None]
        if closed:
            crossovers[mix], between[mix] = _crossover(closed, min_speedup or 1.0)
        if opened:
            rate_cross[mix], rate_between[mix] = _crossover(opened, min_speedup or 1.0)
    return Comparison(points, crossovers, between, alpha, min_speedup, _about(base), _about(spec),
                      rate_crossovers=rate_cross, rate_crossover_between=rate_between, pairing=_pairing(base, spec))


def _pairing(base: ProbeRecord, spec: ProbeRecord) -> dict[str, Any] | None:
    """How the arms were interleaved (`probe ab`: ABBA) and how far apart paired cells were measured: the
    largest and median |start_spec − start_base| over cells of one point and repetition, from the cells'
    `started_at` (the records' own clocks; None when either arm did not record it)."""
    starts = {(*c.point, c.repetition): c.started_at for c in base.cells if c.started_at is not None}
    gaps = [abs(c.started_at - starts[k]) for c in spec.cells
            if c.started_at is not None and (k := (*c.point, c.repetition)) in starts]
    order = base.pairing.order if base.pairing is not None and spec.pairing is not None else None
    if not gaps and order is None:
        return None
    return {"order": order, "pairs": len(gaps), "max_apart_seconds": max(gaps) if gaps else None,
            "median_apart_seconds": statistics.median(gaps) if gaps else None}


def _fmt(v: float | None, spec: str = ".3g") -> str:
    return "-" if v is None else format(v, spec)


def as_text(c: Comparison) -> str:
    """A table a person reads: one row per point, then the crossover and the test used."""
    head = (f"{'mix':<16} {'conc':>4} {'base tok/s':>10} {'spec tok/s':>10} {'speedup':>8} "
            f"{'range':>13} {'p':>8} {'L':>5} {'L*':>5}  verdict")
    lines = [head]
    for p in c.points:
        rng = f"{_fmt(p.speedup_low)}-{_fmt(p.speedup_high)}" if p.speedup_low is not None else "-"
        load = str(p.concurrency) if p.request_rate is None else f"{p.request_rate:g}/s"
        lines.append(f"{p.mix:<16} {load:>4} {_fmt(p.baseline_tokens_per_second, '.1f'):>10} "
                     f"{_fmt(p.speculative_tokens_per_second, '.1f'):>10} {_fmt(p.speedup):>8} {rng:>13} "
                     f"{_fmt(p.p_value):>8} {_fmt(p.acceptance_length):>5} "
                     f"{_fmt(p.break_even_acceptance_length):>5}  {p.verdict.value}")
    for mix, at in c.crossovers.items():
        b = c.crossover_between[mix]
        lines.append(f"crossover ({mix}): " + (f"concurrency {at:.3g} (between {b[0]} and {b[1]})" if at is not None
                                               and b else "none measured"))
    for mix, at in c.rate_crossovers.items():
        rb = c.rate_crossover_between[mix]
        lines.append(f"crossover ({mix}, open loop): " + (
            f"request rate {at:.3g}/s (between {rb[0]:g} and {rb[1]:g}/s)" if at is not None and rb
            else "none measured"))
    if c.pairing is not None:
        pr = c.pairing
        apart = (f"paired cells measured {pr['median_apart_seconds']:.3g} s apart (median; at most "
                 f"{pr['max_apart_seconds']:.3g} s) over {pr['pairs']} pairs" if pr["pairs"] else "no paired cells")
        lines.append(f"pairing: {'ABBA by specgate probe ab, ' if pr['order'] else ''}{apart}")
    kind = {p.interval_kind for p in c.points if p.interval_kind}
    normal = [f"{p.mix} at {p.concurrency if p.request_rate is None else f'{p.request_rate:g}/s'}"
              for p in c.points if p.test_method == "normal"]
    test = TEST_NAME if not normal else (  # gate.stats chooses the exact test by its cost
        f"{TEST_NAME.replace('exact ', '')}: exact, except the normal approximation with tie correction "
        f"at {', '.join(normal)} (the exact count would cost too much there)")
    lines.append(f"test: {test}, alpha {c.alpha:g}"
                 + (f", min_speedup {c.min_speedup:g}" if c.min_speedup is not None else "")
                 + ("; range = observed min-max of the ratios, not a confidence interval"
                    if "observed_range" in kind else ""))
    for p in c.points:
        lines.append(f"- {p.reason}")
    # Mix names come from the records: a line break or an escape in one must not forge a row (printable).
    return "\n".join(printable(line) for line in lines)


@dataclass(frozen=True)
class MixAnswer:
    """Where one plan mix sits in a comparison: the verdict there, the sentence, the numbers used. A mix with a
    declared `request_rate` is placed among the open-loop points (then `crossover_request_rate`), else among
    the closed-loop ones at its concurrency."""

    verdict: Verdict
    reason: str
    probe_mix: str | None = None
    concurrency: int | None = None
    crossover_concurrency: float | None = None
    points: tuple[PointResult, ...] = ()
    request_rate: float | None = None
    crossover_request_rate: float | None = None

    def values(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "probe_mix": self.probe_mix, "concurrency": self.concurrency,
                "crossover_concurrency": self.crossover_concurrency, "request_rate": self.request_rate,
                "crossover_request_rate": self.crossover_request_rate,
                "points": [{k: p.to_json()[k] for k in ("concurrency", "request_rate", "verdict", "speedup",
                                                        "speedup_low", "speedup_high", "p_value",
                                                        "baseline_tokens_per_second",
                                                        "speculative_tokens_per_second")} for p in self.points]}


def _described(base: ProbeRecord, spec: ProbeRecord) -> dict[str, MixSpec]:
    return {m.name: m for m in (*spec.workload, *base.workload)}


def _tokens(prompt: int | None, output: int | None) -> str:
    return f"{'unknown' if prompt is None else prompt} prompt / {'unknown' if output is None else output} output tokens"


def match_mix(comparison: Comparison, base: ProbeRecord, spec: ProbeRecord, name: str,
              prompt_tokens: int | None, output_tokens: int | None) -> tuple[str | None, str | None]:
    """The probe mix standing for a plan mix, matched by shape (prompt and output tokens), the name only
    choosing among mixes of that shape; else None and why (a same-named mix of another shape is other
    requests, and a probe mix whose prompt tokens are unknown has no shape to match)."""
    measured = {p.mix for p in comparison.points}
    shapes = {m: (d.prompt_tokens, d.output_tokens) for m, d in _described(base, spec).items() if m in measured}
    want = (prompt_tokens, output_tokens)
    same = sorted(m for m, shape in shapes.items() if shape == want and None not in shape)
    if name in same:
        return name, None
    if len(same) == 1:
        return same[0], None
    if same:
        return None, f"several probe mixes have its shape ({', '.join(same)}), none of its name"
    if name in shapes:
        got = shapes[name]
        why = ("its prompt tokens are unknown (the probe's own prompts), so its shape cannot be shown to be the "
               "plan's" if got[0] is None else "other requests")
        return None, (f"probe mix {name} is {_tokens(*got)}, the plan's mix {_tokens(*want)}: {why}")
    return None, None


def answer_for_mix(comparison: Comparison, probe_mix: str | None, plan_mix: str, concurrency: int,
                   unmatched: str | None = None, request_rate: float | None = None) -> MixAnswer:
    """The verdict at a plan mix's operating point, failing closed.

    The operating point is the mix's declared `request_rate` (requests/s) when it has one, placed among the
    probe's open-loop points (`--request-rate`) of that mix; else its concurrency, placed among the closed-loop
    points (`--concurrency`). The two axes are never mixed: an open-loop cell's concurrency is only its
    request count, and a closed-loop cell has no arrival rate. On either axis, with x the plan's load:
    measured at x: that point's verdict. Between two measured loads with the same decisive verdict: that
    verdict. Between one that pays and one that does not: does_not_pay at or past the interpolated crossover
    (`crossover_concurrency` / `crossover_request_rate` of the mix), inconclusive below it (an interpolation
    never passes). Outside the measured range, no point on the mix's axis (a declared rate with closed-loop
    probes only), or no probe mix for the plan mix (`unmatched`: why): inconclusive, with what was measured.
    """
    if probe_mix is None:
        have = ", ".join(sorted({p.mix for p in comparison.points})) or "none"
        why = f"; {unmatched}" if unmatched else ""
        return MixAnswer(Verdict.INCONCLUSIVE, f"mix {plan_mix}: no probe cells of this mix (probe mixes: {have}; "
                         f"matched by prompt and output tokens){why}", request_rate=request_rate)
    mine = [p for p in comparison.points if p.mix == probe_mix]
    if request_rate is None:
        pts = [p for p in mine if p.request_rate is None]
        cross = comparison.crossovers.get(probe_mix)
        where = f"mix {plan_mix} at concurrency {concurrency}"
        if not pts:
            rates = sorted({p.request_rate for p in mine if p.request_rate is not None})
            return MixAnswer(Verdict.INCONCLUSIVE, f"{where}: the probe records have only open-loop points of this "
                             f"mix (request rates {', '.join(f'{r:g}/s' for r in rates)}), no concurrency to place it "
                             f"at; declare its workload request_rate or probe it with --concurrency", probe_mix,
                             concurrency, cross, crossover_request_rate=comparison.rate_crossovers.get(probe_mix))
        verdict, reason, used = _place(pts, float(concurrency), cross, where, "concurrency", "")
        return MixAnswer(verdict, reason, probe_mix, concurrency, cross, used)
    pts = [p for p in mine if p.request_rate is not None]
    cross = comparison.rate_crossovers.get(probe_mix)
    where = f"mix {plan_mix} at request rate {request_rate:g}/s"
    if not pts:
        closed = sorted({p.concurrency for p in mine if p.request_rate is None})
        verdict, reason, used = (Verdict.INCONCLUSIVE, f"{where} (declared request_rate): the probe records have no "
                                 f"open-loop points of this mix (measured concurrencies: "
                                 f"{', '.join(map(str, closed)) or 'none'}); probe it with --request-rate", ())
    else:
        verdict, reason, used = _place(pts, request_rate, cross, where, "request rate", "/s")
    return MixAnswer(verdict, reason, probe_mix, concurrency, comparison.crossovers.get(probe_mix), used,
                     request_rate=request_rate, crossover_request_rate=cross)


def _place(points: Sequence[PointResult], at: float, cross: float | None, where: str, axis: str,
           unit: str) -> tuple[Verdict, str, tuple[PointResult, ...]]:
    """`answer_for_mix`'s rule on one axis, "concurrency" or "request rate" (points of one kind; `_load` is their
    place on it, `unit` what follows a number)."""
    axes = "concurrencies" if axis == "concurrency" else f"{axis}s"
    pts = sorted(points, key=_load)
    cross_txt = f"; crossover at {axis} {cross:.3g}{unit}" if cross is not None else "; no crossover measured"
    exact = next((p for p in pts if _load(p) == at), None)
    if exact is not None:
        return exact.verdict, f"{where}: {exact.reason}{cross_txt}", (exact,)
    lower = [p for p in pts if _load(p) < at]
    upper = [p for p in pts if _load(p) > at]
    if not lower or not upper:
        measured = ", ".join(f"{_load(p):g}{unit}" for p in pts)
        return (Verdict.INCONCLUSIVE, f"{where}: not measured and outside the probed {axes} ({measured}){cross_txt}",
                tuple(pts))
    lo, hi = lower[-1], upper[0]
    a, b = f"{_load(lo):g}{unit}", f"{_load(hi):g}{unit}"
    if lo.verdict is hi.verdict and lo.verdict is not Verdict.INCONCLUSIVE:
        return (lo.verdict, f"{where}: between measured {a} and {b}, both {lo.verdict.value} ({lo.reason}; "
                f"{hi.reason}){cross_txt}", (lo, hi))
    if cross is not None and _load(lo) <= cross <= _load(hi) and at >= cross:
        return (Verdict.DOES_NOT_PAY, f"{where}: at or past the crossover at {axis} {cross:.3g}{unit} ({lo.reason}; "
                f"{hi.reason})", (lo, hi))
    return (Verdict.INCONCLUSIVE, f"{where}: not measured; between {a} ({lo.verdict.value}) and {b} "
            f"({hi.verdict.value}){cross_txt}", (lo, hi))
