"""Sub-check 10, lossy verification (issue 37 item 2): does the plan verify drafts in a way that changes outputs?

Why on the acceptance line: every other sub-check asks whether speculation pays; this one says what it costs in
quality. Standard, block and probabilistic rejection keep the target model's distribution, so speculation is
free of quality loss; a lossy mode (vLLM main's `fly`, `exporter.engines.versions.LOSSY_REJECTION`) accepts
drafts the target would not have sampled, so its speed is bought with outputs that no longer follow the
target's distribution. The sentence is `gate.model.invariants.lossy_verification`'s; the status is a warning,
or a fail where the plan sets `engine.speculative.require_lossless`. A lossless plan adds nothing to the line
(no status, no sentence, no values), so reports of lossless plans stay as they were.
"""

from __future__ import annotations

from gate.checks.acceptance.finding import Finding
from gate.checks.base import CheckContext
from gate.model.invariants import lossy_verification
from gate.status import Status


def sub(ctx: CheckContext) -> Finding:
    spec = ctx.plan.engine.speculative
    if spec is None:
        return Finding()
    found = lossy_verification(spec.model_dump(exclude_none=True), "the plan's engine")
    if found is None:
        return Finding()
    required = spec.require_lossless is True
    status = Status.FAIL if required else Status.WARN
    tail = ("; engine.speculative.require_lossless is true: lossy verification is refused" if required
            else " (set engine.speculative.require_lossless to make this a fail)")
    return Finding(status, found + tail, {"verification": {"rejection_sample_method": spec.rejection_sample_method,
                                                          "lossless": False, "require_lossless": required}})
