"""Budget line 4, staging: cold start to the first ready request stays within the startup budget.

Why measured: seed 002 — startup is where a latency win can disappear before the first
request; the drafter adds a second artifact to stage. A measurement (live engine, pod status
or `evidence.reported.startup_seconds`) decides the line. Before any run with the drafter, a
whole prediction decides it, labelled predicted (issue 36: a newcomer's pre-rollout plan must
reach a decision): the target alone's reported cold start plus the drafter's load (`predicted`).
Loads alone leave the engine's start-up out, a lower bound: they can fail the budget, never pass
it. The difference with and without the drafter is its startup tax.

Which measurement wins: the live engine's own ready time (exporter / Prometheus
`specgate_engine_ready_seconds`), else the pods' status (slowest Ready pod), else the plan's
`evidence.reported.startup_seconds`.

With a second artifact to stage (a drafter that is not an MTP head inside the target), seed
002 asks to "stage checkpoints overlapped so startup does not eat the latency win" and to
"name the staging mode, the artifact order, and the warmup check": `mode: serial` (or no mode)
warns, a missing warmup check is inconclusive. Plans without a second artifact keep the line
n/a unless a startup budget is set. The startup tax (with minus without the drafter) is set
against the per-token saving (gate.checks.startup_tax): how many output tokens at the plan's
first request mix it takes to win it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.checks.base import CheckContext
from gate.checks.startup_tax import Payback, payback
from gate.evidence.base import StartupObservation
from gate.model import plausibility
from gate.plan.model import Plan
from gate.status import LineResult, Status


def measured(ctx: CheckContext) -> StartupObservation | None:
    """The cold start this line judges, by the precedence in the module docstring."""
    ev = ctx.metrics
    if ev.ready_seconds is not None:
        return StartupObservation(ev.ready_seconds, f"observed: {ev.ready_source or 'live engine'}")
    found = ctx.cluster.found if ctx.cluster is not None else None
    k = ctx.plan.evidence.kubernetes
    if found is not None and found.staging_seconds is not None and k is not None and \
            plausibility.startup_seconds(found.staging_seconds) is None:
        return StartupObservation(found.staging_seconds, f"observed: pod status in {k.namespace} ({found.reason})")
    rep = ctx.plan.evidence.reported.startup_seconds
    if rep is not None:
        return StartupObservation(rep.value, f"reported: {rep.source}")
    return None


@dataclass(frozen=True)
class Prediction:
    """A cold start predicted from the plan, and whether it can decide a pass."""

    seconds: float
    whole: bool  # True: includes the engine's own start-up (a run without the drafter); False: loads only
    basis: str


def predicted(plan: Plan) -> Prediction | None:
    """The cold start before any run with the drafter (issue 36: a pre-rollout decision on staging).

        whole       = startup_without_drafter + load_seconds.drafter        (reported run of the target alone)
        lower bound = Σ load_seconds (serial) or max load_seconds (overlapped), engine start-up not included

    Whole: the run without the drafter already holds the engine's start-up and the target's load, and the drafter's
    load is counted in full in either mode (overlapped loads share the storage link, so this errs long, never short);
    it can pass or fail the budget. The loads alone leave the engine's own start-up out: they can only fail it.
    """
    loads = plan.staging.load_seconds
    base = plan.evidence.reported.startup_seconds_without_drafter
    if base is not None and "drafter" in loads:
        return Prediction(base.value + loads["drafter"], True,
                          f"{base.value:g} s without the drafter ({base.source}) + its load {loads['drafter']:g} s")
    if not loads:
        return None
    if plan.staging.mode == "overlapped":
        return Prediction(max(loads.values()), False, "overlapped: slower artifact, engine start-up not included")
    return Prediction(sum(loads.values()), False, f"{plan.staging.mode or 'serial'}: sum of loads, engine start-up "
                      "not included")


def _wanted(plan: Plan) -> str:
    """The keys that would let this line decide before a run, only those still missing (issue 36 item 1)."""
    if plan.drafter_embedded:  # one checkpoint: no drafter load to add, only a run tells
        return "; give evidence.reported.startup_seconds (a run with the MTP head)"
    rep = plan.evidence.reported
    need = [k for k, missing in (
        ("evidence.reported.startup_seconds_without_drafter", rep.startup_seconds_without_drafter is None),
        ("staging.load_seconds.drafter", "drafter" not in plan.staging.load_seconds)) if missing]
    return (f"; give evidence.reported.startup_seconds (a run with the drafter), or {' and '.join(need)} "
            f"(a predicted cold start)")


def win_back(plan: Plan, tax_seconds: float) -> Payback | None:
    """The tax against the per-token saving at the plan's first cost point and first request mix.

    Per-token times per sequence: measured rates give 1000 / r directly; declared step costs give
    t_without = target_step_ms and t_with = verify_cycle_ms / L with L the point's measured
    acceptance length (costs[].acceptance_length) or else the SLO target (assumed: the rollout's own
    goal, not a measurement).
    """
    if not plan.costs or not plan.workload:
        return None
    c, mix = plan.costs[0], plan.workload[0]
    name = c.point or "the first cost point"
    if c.baseline_tokens_per_second and c.speculative_tokens_per_second:
        without, with_ = 1000.0 / c.baseline_tokens_per_second, 1000.0 / c.speculative_tokens_per_second
        basis = f"measured rates at {name}"
    elif c.target_step_ms is not None and c.verify_cycle_ms is not None:
        length = c.acceptance_length or plan.slo.target_acceptance_length
        if length is None:
            return None
        label = "measured L" if c.acceptance_length else "the target L, assumed"
        without, with_ = c.target_step_ms, c.verify_cycle_ms / length
        basis = f"declared step costs at {name}, {label} {length:g}"
    else:
        return None
    return payback(tax_seconds, without, with_, mix=mix.name, concurrency=mix.concurrency,
                   output_tokens=mix.output_tokens, basis=basis)


def check(ctx: CheckContext) -> LineResult:
    """Values: budget, mode, order, warmup check, load seconds, predicted and measured seconds with the
    measurement's source, the run without the drafter and the drafter's startup tax."""
    plan = ctx.plan
    kube_note = ctx.cluster.note if ctx.cluster is not None else None
    found = ctx.cluster.found if ctx.cluster is not None else None
    bad = plausibility.startup_seconds(found.staging_seconds, "pod status") if found is not None else None
    result = judge(plan, measured(ctx), kube_note)
    if bad is not None:  # a pod clock that says a negative or absurd start is not a measurement: say so
        return LineResult(result.status, f"{result.reason}; pod status not evidence: {bad.reason}", result.values)
    return result


def judge(plan: Plan, measured: StartupObservation | None, kube_note: str | None = None) -> LineResult:
    """The line for one measurement (or none) and the Kubernetes note."""
    st = plan.staging
    budget = plan.budgets.startup_seconds
    rep = plan.evidence.reported
    without = rep.startup_seconds_without_drafter
    prediction = predicted(plan)
    pred = prediction.seconds if prediction is not None else None
    values: dict[str, Any] = {
        "startup_budget_seconds": budget, "mode": st.mode, "order": st.order, "warmup_check": st.warmup_check,
        "load_seconds": dict(st.load_seconds), "predicted_seconds": pred,
        "measured_seconds": measured.seconds if measured else None, "measured_source": measured.source if measured else None,
        "without_drafter_seconds": without.value if without else None,
        "without_drafter_source": without.source if without else None,
        "startup_tax_seconds": (measured.seconds - without.value) if measured and without else None,
    }
    if not plan.has_drafter:
        return LineResult(Status.NA, "no drafter to stage (ngram or no speculation)", values)
    if plan.drafter_embedded and budget is None:
        return LineResult(Status.NA, "the MTP head loads with the target checkpoint (no second artifact to stage) "
                          "and no startup budget is set", values)

    named = []
    missing_warmup = False
    if not plan.drafter_embedded:
        if st.mode is None:
            named.append("staging mode (serial|overlapped) not named")
        elif st.mode == "serial":
            named.append("serial staging makes the drafter's load additive (seed 002: \"Stage checkpoints overlapped so "
                         "startup does not eat the latency win\")")
        if not st.order:
            named.append("artifact order not named")
        missing_warmup = not st.warmup_check
    pred_txt = f"; predicted {prediction.seconds:g} s ({prediction.basis})" if prediction is not None else ""
    tax_txt = ""
    if measured is not None and without is not None:
        tax = measured.seconds - without.value
        tax_txt = f"; startup tax of the drafter {tax:+g} s (vs {without.value:g} s without, {without.source})"
        pb = win_back(plan, tax) if tax > 0 else None
        if pb is not None:
            values["payback"] = pb.to_json()
            tax_txt += "; " + pb.sentence()
    notes = ("; " + "; ".join(named)) if named else ""
    if missing_warmup:
        notes += "; warmup check not named (seed 002: name the staging mode, the artifact order and the warmup check)"
    kube = f" ({kube_note})" if kube_note else ""

    if budget is None:
        m = f"measured {measured.seconds:g} s ({measured.source})" if measured else "nothing measured"
        return LineResult(Status.INCONCLUSIVE, f"no startup budget set (budgets.startup_seconds) for the second "
                          f"artifact; {m}{pred_txt}{tax_txt}{notes}", values)
    if measured is None:
        if prediction is not None and prediction.seconds > budget:
            return LineResult(Status.FAIL, f"predicted cold start {prediction.seconds:g} s > budget {budget:g} s "
                              f"even before measuring ({prediction.basis}){notes}", values)
        if prediction is None or not prediction.whole:
            return LineResult(Status.INCONCLUSIVE, f"cold start to first ready request not measured (no live engine "
                              f"or pod status){kube}; budget {budget:g} s{pred_txt}{_wanted(plan)}{notes}", values)
        base = rep.startup_seconds_without_drafter
        added = prediction.seconds - base.value if base is not None else 0.0
        pb = win_back(plan, added) if added > 0 else None
        if pb is not None:
            values["payback"] = pb.to_json()
        pb_txt = f"; predicted: {pb.sentence()}" if pb is not None else ""
        status = Status.INCONCLUSIVE if missing_warmup else Status.WARN if named else Status.PASS
        return LineResult(status, f"cold start predicted {prediction.seconds:g} s ({prediction.basis}) ≤ budget "
                          f"{budget:g} s (not measured: the canary's live engine measures it){pb_txt}{notes}", values)
    if measured.seconds > budget:
        return LineResult(Status.FAIL, f"cold start {measured.seconds:g} s ({measured.source}) > budget {budget:g} s"
                          f"{pred_txt}{tax_txt}{notes}", values)
    status = Status.INCONCLUSIVE if missing_warmup else Status.WARN if named else Status.PASS
    return LineResult(status, f"cold start {measured.seconds:g} s ({measured.source}) ≤ budget {budget:g} s"
                      f"{pred_txt}{tax_txt}{notes}", values)
