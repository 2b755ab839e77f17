"""Does speculation pay? Two probe records → per (mix, concurrency) verdicts, crossovers, and a plan mix's answer.

Why: "it is slower than without it — where is the crossover?" is the users' most frequent
complaint about speculative decoding, and a high acceptance length does not answer it (the
first wave's ngram arm accepted L 3.24 and still served 1,840 tokens in 4.26 s against 2.38 s
without speculation). Only the two arms' served rates, measured the same way, answer it.

Why in the checks: the acceptance line's probes sub-check judges a plan's mixes with it
(`match_mix`, `answer_for_mix`), and `specgate compare` (a face) prints it; the tool that writes
the records never reads them back. Each point's numbers and verdict are floor 0
(gate.model.speedup.point: speedup, rank tests, L*; gate.model.speedup.pays: the verdict rule);
here are the records around them: which cells are evidence, the points of a pair, their crossover.

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
from typing import Any

from gate.evidence.intake import client_bound, pair_defects, record_defects
from gate.evidence.probes import Cell, MixSpec, ProbeRecord
from gate.model.plausibility import DEFAULT_ALPHA, MAX_ALPHA
from gate.model.speedup.energy import EnergyResult, judge_energy, one_arm_energy, tokens_per_joule
from gate.model.speedup.pays import Verdict
from gate.model.speedup.point import TEST_NAME, PointResult, Repetition, judge_rates
from gate.stats import crossover


class CompareError(ValueError):
    """Records that cannot be compared (wrong arms, different engines or models): exit 3."""


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
    # Issue 38: tokens per joule per point where both arms measured energy in every cell (else empty).
    energy: tuple[EnergyPoint, ...] = ()
    min_tokens_per_joule_ratio: float | None = None

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
            # only with energy, so a comparison of records without it reads exactly as before
            **({"energy": [e.to_json() for e in self.energy],
                "min_tokens_per_joule_ratio": self.min_tokens_per_joule_ratio} if self.energy else {}),
        }


@dataclass(frozen=True)
class EnergyPoint:
    """Tokens per joule of both arms at one point (issue 38), labelled by where the joules come from."""

    mix: str
    concurrency: int
    request_rate: float | None
    source: str  # the sources of both arms' readings, joined when they differ
    method: str  # "energy counter", "integrated power", or both joined
    scope: str  # "board" or "wall" (or both joined: then the arms are not comparable in absolute terms)
    baseline_idle_watts: float | None
    speculative_idle_watts: float | None
    result: EnergyResult

    def to_json(self) -> dict[str, Any]:
        return {"mix": self.mix, "concurrency": self.concurrency, "request_rate": self.request_rate,
                "source": self.source, "method": self.method, "scope": self.scope,
                "baseline_idle_watts": self.baseline_idle_watts,
                "speculative_idle_watts": self.speculative_idle_watts, **self.result.to_json()}


def _joined(values: Sequence[str]) -> str:
    return " + ".join(dict.fromkeys(values))


def _idle(cells: Sequence[Cell]) -> float | None:
    known = [c.energy.idle_watts for c in cells if c.energy is not None and c.energy.idle_watts is not None]
    return statistics.median(known) if known else None


def judge_energy_point(point: Point, base: Sequence[Cell], spec: Sequence[Cell], alpha: float,
                       min_ratio: float | None, one_arm: str | None = None) -> EnergyPoint | None:
    """Tokens per joule at one point: output tokens ÷ joules per cell, both arms through the speed test
    (gate.model.speedup.energy.judge_energy); None unless every cell of both arms carries energy, or — energy on
    one arm only (`one_arm`, the intake's reason) — inconclusive with that reason. A cell with a failed request or
    a restart is no evidence, as for speed: the point is then inconclusive."""
    mix, conc, rate = point
    readings = [c.energy for c in (*base, *spec) if c.energy is not None]
    label = dict(source=_joined([e.source for e in readings]), method=_joined([e.method for e in readings]),
                 scope=_joined([e.scope for e in readings]))
    if one_arm is not None and readings:
        return EnergyPoint(mix, conc, rate, baseline_idle_watts=_idle(base), speculative_idle_watts=_idle(spec),
                           result=EnergyResult(Verdict.INCONCLUSIVE, one_arm, n_baseline=len(base),
                                               n_speculative=len(spec)), **label)
    if not base or not spec or any(c.energy is None for c in (*base, *spec)):
        return None
    dirty = [c for c in (*base, *spec) if c.failed_requests or c.metrics_reset]
    if dirty:
        result = EnergyResult(Verdict.INCONCLUSIVE, "tokens per joule not compared: a cell with a failed request "
                              "or an engine restart is no evidence", n_baseline=len(base), n_speculative=len(spec))
    else:
        tpj = [[tokens_per_joule(c.output_tokens, c.energy.joules) if c.energy else None for c in cells]
               for cells in (base, spec)]
        if any(v is None for arm in tpj for v in arm):
            result = EnergyResult(Verdict.INCONCLUSIVE, "tokens per joule not compared: a cell read no energy "
                                  "(0 J)", n_baseline=len(base), n_speculative=len(spec))
        else:
            result = judge_energy([v for v in tpj[0] if v is not None], [v for v in tpj[1] if v is not None],
                                  alpha, min_ratio)
    return EnergyPoint(mix, conc, rate, baseline_idle_watts=_idle(base), speculative_idle_watts=_idle(spec),
                       result=result, **label)


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


def judge_point(mix: str, concurrency: int, base: Sequence[Cell], spec: Sequence[Cell],
                alpha: float = DEFAULT_ALPHA, min_speedup: float | None = None,
                request_rate: float | None = None, bound: Sequence[str] = ()) -> PointResult:
    """The verdict of one point from its cells (gate.model.speedup.point.judge_rates on their numbers), failing
    closed first (module docstring); `bound`: why cells of the point are client-bound
    (gate.evidence.probe_vetting.client_bound): then inconclusive, no evidence."""
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
    return judge_rates(mix, concurrency, name,
                       [Repetition(c.served_tokens_per_second, c.tpot_seconds.p50) for c in base],
                       [Repetition(c.served_tokens_per_second, c.tpot_seconds.p50, c.acceptance_length) for c in spec],
                       alpha, min_speedup, **extra)


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
            min_speedup: float | None = None, now: float | None = None,
            min_tokens_per_joule_ratio: float | None = None) -> Comparison:
    """Judge every point either record measured, once the pair is vetted (`now`, default the clock: what the
    records' dates are judged against); where both arms read energy, tokens per joule too (issue 38)."""
    if not 0 < alpha <= MAX_ALPHA:
        raise CompareError(f"alpha must be in (0, {MAX_ALPHA:g}], got {alpha!r}")
    if min_speedup is not None and not min_speedup > 0:
        raise CompareError(f"min_speedup must be positive, got {min_speedup!r}")
    if min_tokens_per_joule_ratio is not None and not min_tokens_per_joule_ratio > 0:
        raise CompareError(f"min_tokens_per_joule_ratio must be positive, got {min_tokens_per_joule_ratio!r}")
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
    one_arm = one_arm_energy(base, spec)  # energy on one arm only: not judged (the intake's reason)
    energy = tuple(e for k in keys if (e := judge_energy_point(k, gb.get(k, []), gs.get(k, []), alpha,
                                                                min_tokens_per_joule_ratio, one_arm)) is not None)
    return Comparison(points, crossovers, between, alpha, min_speedup, _about(base), _about(spec),
                      rate_crossovers=rate_cross, rate_crossover_between=rate_between, pairing=_pairing(base, spec),
                      energy=energy, min_tokens_per_joule_ratio=min_tokens_per_joule_ratio)


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
