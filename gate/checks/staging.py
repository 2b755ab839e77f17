"""Budget line 4, staging: cold start to the first ready request stays within the startup budget.

Why measured: seed 002 — startup is where a latency win can disappear before the first
request; the drafter adds a second artifact to stage. The prediction (serial ≈ the sum of
the loads, overlapped ≈ the slower artifact) is shown, but only a measurement (live engine,
pod status or `evidence.reported`) passes the line. The difference with and without the
drafter is its startup tax.

Which measurement wins: the live engine's own ready time (exporter / Prometheus
`specgate_engine_ready_seconds`), else the pods' status (slowest Ready pod), else the plan's
`evidence.reported.startup_seconds`.
"""

from __future__ import annotations

from typing import Any

from gate.checks.base import CheckContext
from gate.evidence.base import StartupObservation
from gate.plan import Plan
from gate.verdict import LineResult, Status


def measured(ctx: CheckContext) -> StartupObservation | None:
    """The cold start this line judges, by the precedence in the module docstring."""
    ev = ctx.metrics
    if ev.ready_seconds is not None:
        return StartupObservation(ev.ready_seconds, ev.ready_source or "live")
    found = ctx.cluster.found if ctx.cluster is not None else None
    k = ctx.plan.evidence.kubernetes
    if found is not None and found.staging_seconds is not None and k is not None:
        return StartupObservation(found.staging_seconds, f"pod status in {k.namespace} ({found.reason})")
    rep = ctx.plan.evidence.reported.startup_seconds
    if rep is not None:
        return StartupObservation(rep.value, rep.source)
    return None


def predicted_seconds(plan: Plan) -> float | None:
    loads = plan.staging.load_seconds
    if not loads:
        return None
    if plan.staging.mode == "overlapped":
        return max(loads.values())
    return sum(loads.values())


def check(ctx: CheckContext) -> LineResult:
    """Values: budget, mode, order, warmup check, load seconds, predicted and measured seconds with the
    measurement's source, the run without the drafter and the drafter's startup tax."""
    plan = ctx.plan
    kube_note = ctx.cluster.note if ctx.cluster is not None else None
    return judge(plan, measured(ctx), kube_note)


def judge(plan: Plan, measured: StartupObservation | None, kube_note: str | None = None) -> LineResult:
    """The line for one measurement (or none) and the Kubernetes note."""
    st = plan.staging
    budget = plan.budgets.startup_seconds
    rep = plan.evidence.reported
    without = rep.startup_seconds_without_drafter
    pred = predicted_seconds(plan)
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
    if not plan.drafter_embedded:
        if st.mode is None:
            named.append("staging mode (serial|overlapped) not named")
        if not st.order:
            named.append("artifact order not named")
    pred_txt = ""
    if pred is not None:
        pred_txt = f"; predicted {pred:g} s ({st.mode or 'serial'}: {'slower artifact' if st.mode == 'overlapped' else 'sum of loads'})"
    tax_txt = ""
    if measured is not None and without is not None:
        tax_txt = f"; startup tax of the drafter {values['startup_tax_seconds']:+g} s (vs {without.value:g} s without)"
    notes = ("; " + "; ".join(named)) if named else ""
    kube = f" ({kube_note})" if kube_note else ""

    if budget is None:
        m = f"measured {measured.seconds:g} s ({measured.source})" if measured else "nothing measured"
        return LineResult(Status.INCONCLUSIVE, f"no startup budget set; {m}{pred_txt}{tax_txt}{notes}", values)
    if measured is None:
        if pred is not None and pred > budget:
            return LineResult(Status.FAIL, f"predicted cold start {pred:g} s > budget {budget:g} s even before "
                              f"measuring ({st.mode or 'serial'} staging){notes}", values)
        return LineResult(Status.INCONCLUSIVE, f"cold start to first ready request not measured (no live engine, pod "
                          f"status or evidence.reported.startup_seconds){kube}; budget {budget:g} s{pred_txt}{notes}",
                          values)
    if measured.seconds > budget:
        return LineResult(Status.FAIL, f"cold start {measured.seconds:g} s ({measured.source}) > budget {budget:g} s"
                          f"{pred_txt}{tax_txt}{notes}", values)
    status = Status.WARN if named else Status.PASS
    return LineResult(status, f"cold start {measured.seconds:g} s ({measured.source}) ≤ budget {budget:g} s"
                      f"{pred_txt}{tax_txt}{notes}", values)
