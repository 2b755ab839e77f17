"""Sub-check: reported energy per arm (seed 004, issue 38) — tokens per joule recomputed, not echoed.

Why: seed 004 reports "2.97 vs 1.96 tok/J at 2K … 0.96 vs 0.62 at 131K" as decode tokens per second
over board watts. A plan carries those rates and watts (`evidence.reported.energy`); the line recomputes
tok/s ÷ W (gate.model.speedup.energy) and shows it beside the reported figure, so a reader sees where the
number comes from. A point without watts (seed 004 at 32K) is shown "as reported". A reported tok/J its own
rate and watts do not give never reaches here: the plan is refused (gate.plan.model.EnergyArm).

One value per arm is no sample for a rank test: this sub-check never passes or fails on it. With
`slo.min_tokens_per_joule_ratio` set and no probe records it is inconclusive and says so; with probe records
(`evidence.probes`) the ratio is judged there (gate.checks.acceptance.probes.energy_for_mix, inconclusive when
they carry no energy); without the ratio, it only reports.
"""

from __future__ import annotations

from typing import Any

from gate.checks.acceptance.finding import Finding
from gate.checks.base import CheckContext
from gate.model.speedup.energy import rate_per_watt
from gate.plan.model import EnergyArm, EnergyPoint
from gate.status import Status


def arm_tokens_per_joule(arm: EnergyArm) -> tuple[float | None, str]:
    """An arm's tok/J and how it was had: "recomputed" (tok/s ÷ W) or "reported" (no watts given)."""
    if arm.tokens_per_second is not None and arm.watts is not None:
        return rate_per_watt(arm.tokens_per_second.value, arm.watts.value), "recomputed"
    return (arm.tokens_per_joule.value if arm.tokens_per_joule is not None else None), "reported"


def _arm_json(arm: EnergyArm) -> dict[str, Any]:
    tpj, basis = arm_tokens_per_joule(arm)
    return {"tokens_per_joule": tpj, "basis": basis,
            "joules_per_accepted_token": 1 / tpj if tpj else None,
            "tokens_per_second": arm.tokens_per_second.value if arm.tokens_per_second else None,
            "watts": arm.watts.value if arm.watts else None,
            "reported_tokens_per_joule": arm.tokens_per_joule.value if arm.tokens_per_joule else None}


def point_json(p: EnergyPoint) -> dict[str, Any]:
    """One point's numbers: both arms' tok/J (recomputed or reported), J per accepted token, the ratio."""
    b, s = _arm_json(p.baseline), _arm_json(p.speculative)
    ratio = s["tokens_per_joule"] / b["tokens_per_joule"] if b["tokens_per_joule"] and s["tokens_per_joule"] \
        else None
    return {"point": p.point, "context_tokens": p.context_tokens, "kind": p.kind, "baseline": b,
            "speculative": s, "ratio": ratio}


def _clause(p: EnergyPoint) -> str:
    d = point_json(p)
    b, s = d["baseline"], d["speculative"]
    if b["tokens_per_joule"] is None or s["tokens_per_joule"] is None:
        return f"{p.point}: tokens per joule unknown"
    how = ("recomputed as tok/s ÷ W: " if b["basis"] == s["basis"] == "recomputed"
           else "as reported (no watts given)" + ": " if b["basis"] == s["basis"] == "reported" else "")
    txt = f"{p.point} {how}{s['tokens_per_joule']:.2f} vs {b['tokens_per_joule']:.2f} tok/J with vs without speculation"
    if b["basis"] == s["basis"] == "recomputed":
        txt += (f" ({s['tokens_per_second']:g} tok/s ÷ {s['watts']:g} W vs {b['tokens_per_second']:g} ÷ "
                f"{b['watts']:g} W)")
    return txt + f", ratio {d['ratio']:.3g}"


def sub(ctx: CheckContext) -> Finding:
    """The plan's reported energy points (evidence.reported.energy); nothing when there are none."""
    plan = ctx.plan
    points = plan.evidence.reported.energy
    if not points:
        return Finding()
    kinds = sorted({p.kind for p in points})
    parts = [f"reported {' and '.join(kinds)} energy: " + "; ".join(_clause(p) for p in points)]
    statuses: list[Status] = []
    if plan.slo.min_tokens_per_joule_ratio is not None and plan.evidence.probes:
        parts.append(f"min_tokens_per_joule_ratio {plan.slo.min_tokens_per_joule_ratio:g} is judged on the probe "
                     "records (evidence.probes), not on these reported values")
    elif plan.slo.min_tokens_per_joule_ratio is not None:
        statuses.append(Status.INCONCLUSIVE)
        parts.append(f"min_tokens_per_joule_ratio {plan.slo.min_tokens_per_joule_ratio:g} is not judged on one "
                     "reported value per arm (no rank test): give probe records with energy")
    else:
        parts.append("energy is reported only (no min_tokens_per_joule_ratio set)")
    return Finding.of(statuses, parts, {"energy": [point_json(p) for p in points]})
