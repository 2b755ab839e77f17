"""Budget line 1, artifacts: target + drafter weights (+ image) fit the storage and image budgets.

Why count two downloads: seed 002 — draft-model speculation turns one serving artifact into
two. An MTP/NEXTN head ships inside the target checkpoint and ngram has no drafter: no
second download. The storage and image budgets still apply to every plan that sets them —
the target (and image) must fit whether or not a second artifact comes with it (issue 10:
an MTP target's budget was never read). Without a budget and without a second download the
line is n/a. Unknown sizes are inconclusive unless what is known already breaks the budget.
"""

from __future__ import annotations

from typing import Any

from gate.checks.base import CheckContext
from gate.plan.model import Plan
from gate.status import LineResult, Status, combine


def _keys(unknown: list[str]) -> str:
    """The plan keys that would make the unknown sizes known."""
    return ", ".join("target.weights" if u == "target weights" else "drafter.weights" for u in unknown)


def _b(x: int | None) -> str:
    return "unknown" if x is None else f"{x:,} B"


def check(ctx: CheckContext) -> LineResult:
    """Values: weights bytes and their sources, image bytes, budgets, downloads, revisions; then
    `known_total_bytes` and the `unknown` parts when a drafter is downloaded."""
    plan, budget = ctx.plan, ctx.budget
    t = budget.target
    d = budget.drafter
    image = plan.engine.image_bytes
    values: dict[str, Any] = {
        "target_weights_bytes": t.weights_bytes, "target_weights_source": t.weights_source,
        "drafter_weights_bytes": d.weights_bytes if d else None,
        "drafter_weights_source": d.weights_source if d else None,
        "image_bytes": image, "storage_budget_bytes": plan.budgets.storage_bytes,
        "image_budget_bytes": plan.budgets.image_bytes,
        "downloads": 1 if (d is None or d.kind == "embedded") else 2,
        "target_revision": plan.target.revision, "drafter_revision": plan.drafter.revision if plan.drafter else None,
    }
    second = plan.has_drafter and not (d is not None and d.kind == "embedded")
    budgets_set = plan.budgets.storage_bytes is not None or plan.budgets.image_bytes is not None
    if not second and not budgets_set:
        why = ("no drafter artifact (ngram or no speculation): nothing added to storage" if not plan.has_drafter else
               "the drafter is an MTP head inside the target checkpoint: no second download")
        return LineResult(Status.NA, f"{why}; no storage or image budget set", values)
    if not second:
        return _one_download(plan, t.weights_bytes, image, values)

    parts = [x for x in (t.weights_bytes, d.weights_bytes if d else None) if x is not None]
    known_total = sum(parts) + (image or 0)
    unknown = [n for n, v in (("target weights", t.weights_bytes), ("drafter weights", d.weights_bytes if d else None))
               if v is None]
    values["known_total_bytes"] = known_total
    values["unknown"] = unknown
    findings: list[tuple[Status, str]] = []
    storage = plan.budgets.storage_bytes
    sum_txt = (f"target {_b(t.weights_bytes)} + drafter {_b(d.weights_bytes if d else None)}"
               + (f" + image {_b(image)}" if image is not None else ""))
    if storage is None:
        findings.append((Status.INCONCLUSIVE, f"no storage budget set (budgets.storage_bytes; {sum_txt}; two downloads)"))
    elif known_total > storage:
        findings.append((Status.FAIL, f"{sum_txt} = {known_total:,} B > storage budget {storage:,} B"))
    elif unknown:
        findings.append((Status.INCONCLUSIVE, f"{', '.join(unknown)} unknown ({_keys(unknown)}): {sum_txt} vs storage "
                                                  f"budget {storage:,} B"))
    else:
        findings.append((Status.PASS, f"{sum_txt} = {known_total:,} B ≤ storage budget {storage:,} B "
                                      f"({storage - known_total:,} B left; two downloads)"))
    img = _image_finding(plan, image)
    if img is not None:
        findings.append(img)
    status = combine([f[0] for f in findings])
    reason = "; ".join(f[1] for f in findings)
    if plan.drafter and not plan.drafter.revision:
        reason += "; drafter revision not pinned"
    return LineResult(status, reason, values)


def _image_finding(plan: Plan, image: int | None) -> tuple[Status, str] | None:
    if plan.budgets.image_bytes is None:
        return None
    if image is None:
        return Status.INCONCLUSIVE, "image size unknown (engine.image_bytes) for the image budget (budgets.image_bytes)"
    if image > plan.budgets.image_bytes:
        return Status.FAIL, f"image {image:,} B > image budget {plan.budgets.image_bytes:,} B"
    return Status.PASS, f"image {image:,} B ≤ image budget {plan.budgets.image_bytes:,} B"


def _one_download(plan: Plan, target_bytes: int | None, image: int | None, values: dict[str, Any]) -> LineResult:
    """No second artifact (MTP head, ngram, no speculation): the target (+ image) against the budgets."""
    why = "one download (the MTP head is inside the target checkpoint)" if plan.has_drafter else "one download"
    findings: list[tuple[Status, str]] = []
    storage = plan.budgets.storage_bytes
    total = (target_bytes or 0) + (image or 0)
    sum_txt = f"target {_b(target_bytes)}" + (f" + image {_b(image)}" if image is not None else "")
    values["known_total_bytes"] = total
    values["unknown"] = ["target weights"] if target_bytes is None else []
    if storage is not None:
        if total > storage:
            findings.append((Status.FAIL, f"{sum_txt} = {total:,} B > storage budget {storage:,} B ({why})"))
        elif target_bytes is None:
            findings.append((Status.INCONCLUSIVE, f"target weights unknown (target.weights): {sum_txt} vs storage "
                                                  f"budget {storage:,} B "
                                                  f"({why})"))
        else:
            findings.append((Status.PASS, f"{sum_txt} = {total:,} B ≤ storage budget {storage:,} B ({why})"))
    img = _image_finding(plan, image)
    if img is not None:
        findings.append(img)
    status = combine([f[0] for f in findings])
    return LineResult(status, "; ".join(f[1] for f in findings), values)
