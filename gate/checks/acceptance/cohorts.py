"""Sub-check 6: canary against stable in `--phase post`: is the canary cohort faster under the same load? (issue 11)

Why a line of its own in the acceptance check: probe records say where speculation pays on a
bench; a canary step (Argo Rollouts, Flagger, through `specgate serve`) asks it of the fleet
itself — the canary cohort against the stable one, over the same window, from the exporter's
series in Prometheus (`evidence.prometheus.cohorts`, gathered by gate.evidence.fleet.cohorts). The
statistics are the probes' (gate.stats, verdicts.by_rank_test = gate.model.speedup.pays.decide), one speed at a time, with x the
canary's samples and y the stable's. **A sample is one pod** (issue 21): its median over its
windows — the windows of one pod are not independent samples, so counting them as such let one
canary pod against one stable pod reach p = 5e-6:

    TPOT:      x = 1 / (a pod's median TPOT p50) (tokens/s per sequence), speedup = ratio of the medians
    tokens/s:  x = a pod's median generated tokens/s
    each:      one-sided Mann-Whitney U both ways (gate.stats: exact where its work is bounded, else the
               tie-corrected normal approximation, named), significant only when p < slo.alpha;
               speedup = ratio of medians with its observed range (a bootstrap interval with ≥ 10
               samples a side); verdict by `verdicts.by_rank_test` (pays / does_not_pay /
               inconclusive, slo.min_speedup on the point estimate)

A pod is a sample of a speed only with at least slo.min_windows windows of it; a cohort needs at
least slo.min_pods (default 3) such pods. The cohort verdict: **fail** when either speed does not
pay (significantly slower, or faster but below min_speedup), with both cohorts' numbers; **pass**
when both pay; **inconclusive** otherwise. Fail closed: an evidence error (a series of another
model, a pod answered twice), a pod in both cohorts (named: the canary matcher also matches
stable pods, or the two overlap), a cohort with no samples of a speed, too few pods with enough
windows, no load data, or a load mismatch (the canary's median running requests per pod outside
0.5–2× the stable's: the speeds are not comparable) is inconclusive, never a pass. Each cohort's
pooled acceptance length and pods are reported. (An empty cohort selector is refused with the
plan: gate.plan.model.Cohorts.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gate.checks.acceptance import verdicts
from gate.checks.acceptance.finding import Finding
from gate.checks.base import CheckContext
from gate.evidence.base import CohortFacts, CohortSampleFacts
from gate.model.speedup.pays import Verdict
from gate.plan.model import Plan
from gate.stats import Alternative, StatsError, mann_whitney_u, median, speedup
from gate.status import Status

LOAD_BAND = (0.5, 2.0)  # canary median running requests / stable's outside this: speeds not comparable


def _metric(name: str, unit: str, x: list[float], y: list[float], shown_x: float, shown_y: float,
            alpha: float, min_speedup: float | None) -> tuple[Verdict, str, dict[str, Any]]:
    """One speed's verdict, its sentence and numbers; x, y are rates (larger is faster)."""
    s = speedup(x, y)
    faster = mann_whitney_u(x, y, Alternative.GREATER)
    slower = mann_whitney_u(x, y, Alternative.LESS)
    verdict = verdicts.by_rank_test(faster.p_value, slower.p_value, s.speedup, alpha, min_speedup)
    p = faster.p_value if (verdict is Verdict.PAYS or faster.p_value < alpha or
                           (verdict is Verdict.INCONCLUSIVE and s.speedup >= 1)) else slower.p_value
    speeds = (f"{name} canary {shown_x:.4g} {unit} vs stable {shown_y:.4g} {unit} (medians of {s.n_x} and "
              f"{s.n_y} pods), speedup {s.speedup:.3g}x ({s.interval_kind.value} {s.low:.3g}-{s.high:.3g})")
    if verdict is Verdict.PAYS:
        why = f"{speeds}: faster at p = {p:.3g} < {alpha:g}"
    elif verdict is Verdict.DOES_NOT_PAY and faster.p_value < alpha:
        why = f"{speeds}: faster (p = {p:.3g}) but below min_speedup {min_speedup:g}"
    elif verdict is Verdict.DOES_NOT_PAY:
        why = f"{speeds}: slower at p = {p:.3g} < {alpha:g}"
    else:
        why = f"{speeds}: the rank test cannot tell the cohorts apart (p = {p:.3g}, not < {alpha:g})"
    values = {"verdict": verdict.value, "canary": shown_x, "stable": shown_y, "speedup": s.speedup,
              "speedup_low": s.low, "speedup_high": s.high, "interval_kind": s.interval_kind.value,
              "p_value": p, "p_faster": faster.p_value, "p_slower": slower.p_value, "test_method": faster.method,
              "n_canary": s.n_x, "n_stable": s.n_y}
    return verdict, why, values


NAMED = 10  # pods named in one reason


def pod_medians(by_pod: Mapping[str, Sequence[float]], min_windows: int) -> list[float]:
    """One sample per pod: its median over its windows, for pods with at least `min_windows` of them."""
    return [median(v) for _, v in sorted(by_pod.items()) if len(v) >= min_windows]


def _short(c: CohortSampleFacts, what: str, by_pod: Mapping[str, Sequence[float]], min_windows: int,
           min_pods: int) -> str | None:
    if not any(by_pod.values()):
        return f"the {c.name} cohort ({c.selector}) has no {what} samples"
    enough = len(pod_medians(by_pod, min_windows))
    if enough >= min_pods:
        return None
    short = sum(1 for v in by_pod.values() if 0 < len(v) < min_windows)
    why = f"the {c.name} cohort has {enough} pod(s) with {what} windows, fewer than slo.min_pods {min_pods}"
    if short:
        why += f" ({short} pod(s) with fewer than slo.min_windows {min_windows} windows are no sample)"
    return why


def _named(pods: list[str]) -> str:
    return ", ".join(pods[:NAMED]) + (f" and {len(pods) - NAMED} more" if len(pods) > NAMED else "")


def sub(ctx: CheckContext) -> Finding:
    """The cohort comparison of `ctx.metrics.cohorts`; nothing when the plan names no stable cohort."""
    return judge(ctx.plan, ctx.phase, ctx.metrics.cohorts)


def judge(plan: Plan, phase: str, ev: CohortFacts | None) -> Finding:
    """`sub` on its parts: the plan, the phase and the cohort evidence."""
    statuses, parts, values = _judge(plan, phase, ev)
    return Finding.of(statuses, parts, {"cohorts": values} if values is not None else {})


def _judge(plan: Plan, phase: str, ev: CohortFacts | None
           ) -> tuple[list[Status], list[str], dict[str, Any] | None]:
    src = plan.evidence.prometheus
    if src is None or src.cohorts is None or not src.cohorts.stable:
        return [], [], None
    if phase != "post":
        return [], [f"canary against stable not judged in --phase {phase} (it is a --phase post comparison)"], None
    if ev is None:
        return ([Status.INCONCLUSIVE], ["canary against stable: no cohort evidence (no Prometheus answer to "
                                        "compare; see the evidence errors)"], {"verdict": "inconclusive"})
    values: dict[str, Any] = ev.to_json()
    alpha, min_speedup = plan.slo.alpha, plan.slo.min_speedup
    min_windows, min_pods = plan.slo.min_windows, plan.slo.min_pods
    values.update(alpha=alpha, min_speedup=min_speedup, load_band=list(LOAD_BAND), min_pods=min_pods,
                  sample="pod")
    canary, stable = ev.cohorts["canary"], ev.cohorts["stable"]
    accept = "; ".join(f"{c.name} L {c.acceptance_length:.3f}" if c.acceptance_length is not None
                       else f"{c.name} L unknown (no drafts)" for c in (canary, stable))

    def inconclusive(why: str) -> tuple[list[Status], list[str], dict[str, Any]]:
        values["verdict"] = Verdict.INCONCLUSIVE.value
        values["reason"] = why
        return [Status.INCONCLUSIVE], [f"canary against stable inconclusive: {why} ({accept})"], values

    if ev.errors:
        return inconclusive("; ".join(ev.errors))
    shared = sorted(set(canary.pods) & set(stable.pods))
    if shared:
        values["pods_in_both"] = shared
        return inconclusive(f"{len(shared)} pod(s) in both cohorts ({_named(shared)}): the canary matcher "
                            f"{canary.selector} also matches stable pods of {stable.selector}; cohorts must be "
                            "disjoint")
    for c in (canary, stable):
        for what, by_pod in (("TPOT", c.tpot_seconds), ("generated tokens/s", c.tokens_per_second),
                             ("running-requests", c.running)):
            short = _short(c, what, by_pod, min_windows, min_pods)
            if short:
                return inconclusive(f"{short} over {ev.lookback_seconds} s in {ev.window_label} windows")
    run_c, run_s = pod_medians(canary.running, min_windows), pod_medians(stable.running, min_windows)
    load_c, load_s = median(run_c), median(run_s)
    values["load"] = {"canary_running_median": load_c, "stable_running_median": load_s,
                      "canary_running_range": [min(run_c), max(run_c)],
                      "stable_running_range": [min(run_s), max(run_s)],
                      "range_kind": "observed_range"}
    load_txt = (f"load: median running requests per pod canary {load_c:.3g} vs stable {load_s:.3g} "
                f"(observed ranges of the pods' medians {min(run_c):.3g}-{max(run_c):.3g} and "
                f"{min(run_s):.3g}-{max(run_s):.3g})")
    ratio = load_c / load_s if load_s > 0 else None
    if ratio is None or not LOAD_BAND[0] <= ratio <= LOAD_BAND[1]:
        return inconclusive(f"{load_txt}: outside {LOAD_BAND[0]:g}-{LOAD_BAND[1]:g}x, so the speeds are not "
                            "comparable")
    tpot_c, tpot_s = pod_medians(canary.tpot_seconds, min_windows), pod_medians(stable.tpot_seconds, min_windows)
    rate_c = pod_medians(canary.tokens_per_second, min_windows)
    rate_s = pod_medians(stable.tokens_per_second, min_windows)
    try:
        tpot = _metric("TPOT p50", "s", [1.0 / v for v in tpot_c], [1.0 / v for v in tpot_s],
                       median(tpot_c), median(tpot_s), alpha, min_speedup)
        rate = _metric("generated", "tok/s", rate_c, rate_s, median(rate_c), median(rate_s), alpha, min_speedup)
    except StatsError as e:
        return inconclusive(str(e))
    values["tpot"], values["tokens_per_second"] = tpot[2], rate[2]
    both = {tpot[0], rate[0]}
    verdict = (Verdict.DOES_NOT_PAY if Verdict.DOES_NOT_PAY in both else
               Verdict.PAYS if both == {Verdict.PAYS} else Verdict.INCONCLUSIVE)
    values["verdict"] = verdict.value
    word = {Verdict.PAYS: "pays", Verdict.DOES_NOT_PAY: "does not pay", Verdict.INCONCLUSIVE: "inconclusive"}[verdict]
    sentence = (f"canary against stable {word} ({ev.lookback_seconds} s in {ev.window_label} windows, "
                f"{len(canary.pods)} canary and {len(stable.pods)} stable pod(s)): {tpot[1]}; {rate[1]}; "
                f"{load_txt}; {accept}")
    values["reason"] = sentence
    return [verdicts.status(verdict)], [sentence], values
