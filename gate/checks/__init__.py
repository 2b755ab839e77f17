"""Floor 4: the budget lines, one module each, in one ordered registry.

Every line is `check(ctx: CheckContext) -> LineResult`, a pure function of the context
(`gate.checks.base`): it judges facts and reads no files. `LINES` is the order of the report and
of every answer; a new line is its module plus one entry here. Each is held by the plan's open placeholders
(`gate.checks.base.hold_placeholders`): a key `specgate init` left empty keeps the line that reads it from passing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from gate.checks import acceptance, artifacts, codesign, kv_pool, staging
from gate.checks.base import CheckContext, hold_placeholders
from gate.status import LineResult


def _held(line: str, check: Callable[[CheckContext], LineResult]) -> Callable[[CheckContext], LineResult]:
    """`check`, then the plan's open placeholders that this line reads (gate.checks.base.hold_placeholders)."""
    def held(ctx: CheckContext) -> LineResult:
        return hold_placeholders(line, ctx.plan, check(ctx))
    return held


# The five lines, in report order (read-only: no module-level mutable state).
CHECKS: Mapping[str, Callable[[CheckContext], LineResult]] = MappingProxyType({
    line: _held(line, check) for line, check in (
        ("artifacts", artifacts.check),
        ("kv_pool", kv_pool.check),
        ("acceptance", acceptance.check),
        ("staging", staging.check),
        ("codesign", codesign.check),
    )
})
LINES: tuple[str, ...] = tuple(CHECKS)
