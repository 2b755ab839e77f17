"""Sub-check 5: does it pay at the plan's request mixes? The acceptance line's probe evidence (`evidence.probes`).

Why here and not in the served-rate block: probe records (`specgate probe`) are two arms measured
the same way per (mix, concurrency), so they say *where* speculation pays and where it stops —
the crossover. A plan whose request mix sits where the probes say it does not pay fails the
acceptance line, with or without `slo.min_speedup` (this amends the first wave's rule that served
rates change the decision only when min_speedup is set: a measured slowdown at the plan's own
operating point is a fact about the rollout, not a preference); a mix where they say it pays
passes; where they cannot tell (no cell of that mix, a concurrency outside the probed range or
between a paying and a non-paying one below the crossover, a noisy point) it is inconclusive. A mix that
declares its arrival rate (`workload[].request_rate`) is placed by the same rule among the open-loop
(`--request-rate`) points and their `crossover_request_rate`, never among the closed-loop ones: a rate
between two measured rates is interpolated as a concurrency is, a rate outside them (or records without
open-loop points) is inconclusive with the rates that were measured.
The statistics and the placement are `gate.checks.acceptance.comparison` (compare, match_mix, answer_for_mix);
its verdict becomes the line's status through `verdicts` (the line's one "does it pay" rule). The
records were read once by the evidence layer (`gate.evidence.probes`, `MetricsEvidence.probes`).

Fail closed: an unreadable or malformed record, records that are not this plan's deployment
(`gate.evidence.probe_vetting.plan_defects`: its engine kind and version, served model, method and
depth k, each known; in `post` measured within the last day), records that cannot be compared (the
same arm twice, not one consistent experiment: `compare`'s vetting), or a plan without request mixes
is inconclusive with its reason, never a pass. A plan mix is judged only by a probe mix of its prompt
and output tokens: a same-named mix of another shape measured other requests, and a probe of other prompt
lengths (a context sweep, issue 39) is another context band's evidence (`other_context`, applicability).

Plain must be plain (issue 37 item 6): where the plan's declared depth schedule runs k = 0 at a closed-loop mix's
concurrency (`Plan.depth_reading`: vLLM `num_speculative_tokens_per_batch_size`, SGLang tiers, TensorRT-LLM
`draft_len_schedule`), that mix is plain decoding, so it is judged against the baseline as plain
(`plain_for_mix`, the floor's `gate.model.speedup.pays.decide_plain`), not as speculation: not shown slower by the
rank test → pass, labelled "plain: k = 0 band"; slower at p < α → fail, naming the band and the tax (served
rate and TPOT ratios with the observed range). Only where the speculative record itself ran k = 0 there (its own
recorded schedule): a record at a fixed k measured speculation, not the band (inconclusive). A mix placed by
request rate keeps the speculation rule (its batch, hence its k, is not declared).

`slo.min_tokens_per_joule_ratio` (issue 38) is judged here too, per plan mix, from the energy the records
carry at the mix's own load (`energy_for_mix`); records without energy there leave it inconclusive.
"""

from __future__ import annotations

from typing import Any

from gate.checks.acceptance import verdicts
from gate.checks.acceptance.comparison import CompareError, Comparison, answer_for_mix, compare, match_mix
from gate.checks.acceptance.finding import Finding
from gate.checks.base import CheckContext
from gate.evidence.intake import plan_defects
from gate.evidence.probes import ProbeRecord
from gate.model.depth import depth_schedule
from gate.model.invariants import APPLICABILITY, reason
from gate.model.speedup.pays import Plain, decide_plain, smallest_p
from gate.model.speedup.point import PointResult
from gate.plan.model import Plan
from gate.status import Status

PLAIN_LABEL = "plain: k = 0 band"


def sub(ctx: CheckContext) -> Finding:
    """The plan's probe evidence; nothing when it names none."""
    statuses, parts, values = _judge(ctx)
    return Finding.of(statuses, parts, {"probes": values} if values is not None else {})


def _judge(ctx: CheckContext) -> tuple[list[Status], list[str], dict[str, Any] | None]:
    plan = ctx.plan
    ev = ctx.metrics.probes
    if not plan.evidence.probes or ev is None:
        return [], [], None
    values: dict[str, Any] = {"files": list(ev.files), "min_speedup": plan.slo.min_speedup,
                              "alpha": plan.slo.alpha}
    if ev.error is not None:
        return [Status.INCONCLUSIVE], [f"probes not judged: {ev.error}"], values
    base = ev.arm("baseline")
    spec = ev.arm("speculative")
    if len(base) != 1 or len(spec) != 1:
        return ([Status.INCONCLUSIVE],
                [f"probes not judged: evidence.probes needs one baseline and one speculative record "
                 f"(got {len(base)} and {len(spec)})"], values)
    defects = plan_defects(plan, base[0], spec[0], ctx.phase, ev.read_at)
    if defects:
        more = f" (and {len(defects) - 1} more)" if len(defects) > 1 else ""
        return [Status.INCONCLUSIVE], [f"probes not judged: {defects[0]}{more}"], values
    try:
        cmp = compare(base[0], spec[0], alpha=plan.slo.alpha, min_speedup=plan.slo.min_speedup, now=ev.read_at,
                      min_tokens_per_joule_ratio=plan.slo.min_tokens_per_joule_ratio)
    except CompareError as e:
        return [Status.INCONCLUSIVE], [f"probes not judged: {e}"], values
    values["comparison"] = cmp.to_json()
    statuses: list[Status] = []
    parts: list[str] = []
    if plan.slo.per_request:
        st, text, values["per_request"] = per_request_slo(plan, spec[0])
        statuses.append(st)
        parts.append(text)
    if not plan.workload:
        return (statuses + [Status.INCONCLUSIVE],
                parts + ["probes not placed: the plan has no workload mixes, so where it would serve is unknown"],
                values)
    mixes: dict[str, Any] = {}
    energy: dict[str, Any] = {}
    ratio = plan.slo.min_tokens_per_joule_ratio
    for m in plan.workload:
        pm, unmatched = match_mix(cmp, base[0], spec[0], m.name, m.prompt_tokens, m.output_tokens)
        if pm is None:
            unmatched = other_context(cmp, base[0], spec[0], m.name, m.prompt_tokens) or unmatched
        band = plain_band(plan, m.concurrency) if m.request_rate is None and pm is not None else None
        if band is not None and pm is not None:
            st, text, mixes[m.name] = plain_for_mix(cmp, pm, m.name, m.concurrency, band, spec[0], plan)
            statuses.append(st)
            parts.append(f"probes: {text}")
        else:
            ans = answer_for_mix(cmp, pm, m.name, m.concurrency, unmatched, request_rate=m.request_rate)
            statuses.append(verdicts.status(ans.verdict))
            parts.append(f"probes: {ans.reason}")
            mixes[m.name] = ans.values()
        if ratio is not None:
            st, text, energy[m.name] = energy_for_mix(cmp, pm, m.name, m.concurrency, m.request_rate, ratio)
            statuses.append(st)
            parts.append(text)
    values["mixes"] = mixes
    if ratio is not None:
        values["energy"] = energy
    return statuses, parts, values


def plain_band(plan: Plan, concurrency: int) -> str | None:
    """The k = 0 band of the plan's depth schedule holding `concurrency` ("batch 6+ k = 0 (source)"), or None
    where the engine runs no schedule or speculates there (a band free to pick k > 0 is not plain)."""
    sched = plan.depth_reading.schedule
    if sched is None or concurrency < 1:
        return None
    b = sched.band_at(concurrency)
    if b.k_max != 0:
        return None
    return f"batch {b.start}" + ("+" if b.end is None else f"-{b.end}") + f" k = 0 of {sched.source}"


def _record_k(plan: Plan, spec: ProbeRecord, concurrency: int) -> tuple[int | None, str]:
    """The k the speculative record's own recorded schedule ran at `concurrency`, or None and why not."""
    try:
        reading = depth_schedule(plan.engine.kind, spec.speculative or {})
    except ValueError as e:
        return None, f"its recorded schedule is not one {plan.engine.kind} runs ({e})"
    if reading.schedule is None:
        return None, ("it records no depth schedule (its speculative config carries none, so it ran a fixed k): "
                      "it measured speculation, not the plan's k = 0 band")
    return reading.schedule.k_at(concurrency), ""


def _plain_point(points: list[PointResult], at: int, start: int, end: int | None) -> tuple[PointResult, ...]:
    """The point at `at`, else its two measured neighbours when both lie in the same k = 0 band; else none."""
    exact = [p for p in points if p.concurrency == at]
    if exact:
        return (exact[0],)
    lower = [p for p in points if p.concurrency < at]
    upper = [p for p in points if p.concurrency > at]
    if not lower or not upper:
        return ()
    lo, hi = lower[-1], upper[0]
    inside = lo.concurrency >= start and (end is None or hi.concurrency <= end)
    return (lo, hi) if inside else ()


def _plain_verdict(p: PointResult, alpha: float) -> tuple[Plain, str]:
    """One point of the k = 0 band judged as plain decoding (gate.model.speedup.pays.decide_plain), with its tax."""
    where = f"concurrency {p.concurrency}"
    if p.p_slower is None or p.speedup is None:
        return Plain.INCONCLUSIVE, f"{where}: {p.reason}"
    small = smallest_p(p.n_speculative, p.n_baseline)
    verdict = decide_plain(p.p_slower, alpha, p.n_speculative, p.n_baseline)
    kind = (p.interval_kind or "interval").replace("_", " ")
    tax = (f"served rate {p.speculative_tokens_per_second:.4g} vs {p.baseline_tokens_per_second:.4g} tok/s without "
           f"speculation, ratio {p.speedup:.3g}x ({kind} {p.speedup_low:.3g}-{p.speedup_high:.3g})")
    if p.speculative_tpot_seconds and p.baseline_tpot_seconds:
        tax += (f", TPOT p50 {p.speculative_tpot_seconds * 1000:.3g} vs {p.baseline_tpot_seconds * 1000:.3g} ms "
                f"({p.speculative_tpot_seconds / p.baseline_tpot_seconds - 1:+.1%})")
    if verdict is Plain.INCONCLUSIVE:
        return verdict, (f"{where}: {tax}; {p.n_speculative} against {p.n_baseline} repetitions cannot show a tax "
                         f"(the smallest p is {small:.3g}, not < {alpha:g})")
    if verdict is Plain.TAXED:
        return verdict, f"{where}: {tax}; slower at p = {p.p_slower:.3g} < {alpha:g}"
    return verdict, f"{where}: {tax}; not shown slower (p = {p.p_slower:.3g}, not < {alpha:g})"


def plain_for_mix(cmp: Comparison, probe_mix: str, plan_mix: str, concurrency: int, band: str, spec: ProbeRecord,
                  plan: Plan) -> tuple[Status, str, dict[str, Any]]:
    """A plan mix in a k = 0 band of the declared schedule, judged as plain decoding (module docstring).

    Evidence only where the speculative record itself ran k = 0 at the mix's concurrency, and at that concurrency
    (or between two measured ones of the same band, both judged alike); a point the comparison could not judge
    (failed requests, a restart, client-bound) stays inconclusive. Free passes (labelled `PLAIN_LABEL`); taxed
    fails naming the band and the tax; anything else is inconclusive, never a pass."""
    where = f"mix {plan_mix} at concurrency {concurrency} is plain decoding (the schedule's {band})"
    values: dict[str, Any] = {"verdict": Plain.INCONCLUSIVE.value, "label": PLAIN_LABEL, "band": band, "k": 0,
                              "probe_mix": probe_mix, "concurrency": concurrency, "points": []}
    k, why = _record_k(plan, spec, concurrency)
    if k != 0:
        why = why or f"its recorded schedule runs k = {k} at concurrency {concurrency}: it measured speculation"
        return Status.INCONCLUSIVE, f"{where}: not judged: the speculative probe record is no evidence of it: {why}", values
    sched = plan.depth_reading.schedule
    assert sched is not None  # plain_band found the band in it
    b = sched.band_at(concurrency)
    closed = sorted((p for p in cmp.points if p.mix == probe_mix and p.request_rate is None),
                    key=lambda p: p.concurrency)
    used = _plain_point(closed, concurrency, b.start, b.end)
    if not used:
        measured = ", ".join(str(p.concurrency) for p in closed) or "none"
        return (Status.INCONCLUSIVE, f"{where}: not judged: not measured at {concurrency} nor between two measured "
                                     f"concurrencies of the band (measured: {measured})", values)
    judged = [(_plain_verdict(p, cmp.alpha), p) for p in used]
    values["points"] = [{"concurrency": p.concurrency, "verdict": v.value, "ratio": p.speedup,
                         "ratio_low": p.speedup_low, "ratio_high": p.speedup_high, "interval_kind": p.interval_kind,
                         "p_slower": p.p_slower, "baseline_tokens_per_second": p.baseline_tokens_per_second,
                         "speculative_tokens_per_second": p.speculative_tokens_per_second,
                         "baseline_tpot_seconds": p.baseline_tpot_seconds,
                         "speculative_tpot_seconds": p.speculative_tpot_seconds} for (v, _), p in judged]
    verdicts_ = {v for (v, _), _ in judged}
    text = "; ".join(t for (_, t), _ in judged)
    if verdicts_ == {Plain.FREE}:
        values["verdict"] = Plain.FREE.value
        return Status.PASS, f"{PLAIN_LABEL}: {where}, as fast as without speculation: {text}", values
    if Plain.TAXED in verdicts_ and len(used) == 1:
        values["verdict"] = Plain.TAXED.value
        return (Status.FAIL, f"{where}, but slower than without speculation: the k = 0 tax at {text}; speculation "
                             "switched off still costs here (the draft pipeline runs at k = 0)", values)
    if verdicts_ == {Plain.TAXED}:
        values["verdict"] = Plain.TAXED.value
        return (Status.FAIL, f"{where}, but slower than without speculation on both sides of it: the k = 0 tax at "
                             f"{text}", values)
    return Status.INCONCLUSIVE, f"{where}: not judged: {text}", values


def other_context(cmp: Comparison, base: ProbeRecord, spec: ProbeRecord, mix: str, prompt_tokens: int) -> str | None:
    """Issue 39: the applicability reason when the probes measured other prompt lengths and none of this mix's.

    Why a rule of its own: a context sweep measures each length as its own mix, and acceptance and step cost both
    move with context (seed 004: L 3.36 -> 3.10, the plain step +40 % from 2K to 131K), so the nearest length is
    not this mix's evidence; the mix is judged only at its own context (else inconclusive, saying so)."""
    measured = {p.mix for p in cmp.points}
    lengths = {d.prompt_tokens for d in (*base.workload, *spec.workload)
               if d.name in measured and d.prompt_tokens is not None}
    if not lengths or prompt_tokens in lengths:
        return None
    return reason(APPLICABILITY, f"mix {mix} serves {prompt_tokens}-token prompts, the probes measured "
                  f"{', '.join(str(n) for n in sorted(lengths))}: evidence from another context band is not this "
                  "mix's evidence")


def energy_for_mix(cmp: Comparison, probe_mix: str | None, plan_mix: str, concurrency: int,
                   request_rate: float | None, ratio: float) -> tuple[Status, str, dict[str, Any] | None]:
    """`slo.min_tokens_per_joule_ratio` at a plan mix's operating point, from the probe records' energy (issue 38).

    Judged only where the records measured energy at exactly the plan's load (its concurrency, or its declared
    request rate among the open-loop points): tokens per joule are not interpolated. Anywhere else, or records
    without energy, it is inconclusive with what was measured, never a pass."""
    where = (f"mix {plan_mix} at request rate {request_rate:g}/s" if request_rate is not None
             else f"mix {plan_mix} at concurrency {concurrency}")
    head = f"tokens per joule (min_tokens_per_joule_ratio {ratio:g}), {where}"
    if probe_mix is None:
        return Status.INCONCLUSIVE, f"{head}: not judged: no probe mix of its shape", None
    mine = [e for e in cmp.energy if e.mix == probe_mix]
    here = [e for e in mine if (e.request_rate == request_rate if request_rate is not None
                                else e.request_rate is None and e.concurrency == concurrency)]
    if not here:
        have = ", ".join(f"{e.request_rate:g}/s" if e.request_rate is not None else str(e.concurrency)
                         for e in mine) or "none"
        return (Status.INCONCLUSIVE, f"{head}: not judged: the probe records carry no energy there (measured "
                                     f"with energy: {have}; give specgate probe --energy-source)", None)
    e = here[0]
    return (verdicts.status(e.result.verdict),
            f"{head} ({e.scope}, {e.method}, {e.source}): {e.result.reason}", e.to_json())


def per_request_slo(plan: Plan, spec: ProbeRecord) -> tuple[Status, str, dict[str, Any]]:
    """The target held per request (`slo.per_request`), from the per-request acceptance lengths the
    engine reported for the speculative probe record's requests (vLLM `--per-request-spec-decode-metrics`).

    share = #{requests with L_r ≥ target} / #requests; pass when share ≥ `slo.required_fraction`, fail
    below it; no target or no per-request values is inconclusive (never a pass).
    """
    target, req = plan.slo.target_acceptance_length, plan.slo.required_fraction
    lengths = sorted(x for c in spec.cells for x in (c.per_request_acceptance_length or []))
    if target is None:
        return Status.INCONCLUSIVE, "per-request SLO not judged: no acceptance target", {}
    if not lengths:
        return (Status.INCONCLUSIVE, "per-request SLO not judged: the speculative probe record has no per-request "
                                     "acceptance (vLLM: --per-request-spec-decode-metrics)", {})
    met = sum(1 for x in lengths if x >= target)
    share = met / len(lengths)
    values = {"requests": len(lengths), "met": met, "share": share, "required_fraction": req,
              "min": lengths[0], "median": lengths[len(lengths) // 2], "max": lengths[-1], "basis": "observed"}
    status = Status.PASS if share >= req else Status.FAIL
    text = (f"per request (observed in probe records): {met} of {len(lengths)} requests at L ≥ {target:g} "
            f"({share:.1%}; required {req:.0%}); L per request {lengths[0]:.3f}–{lengths[-1]:.3f} (observed range)")
    return status, text, values
