"""The engine container's speculative flags for a plan, in the chart's convention.

Why here: turning the drafter on or off is an edit of the engine's args, and it must be exact
both ways — `with_speculative` adds exactly the flags the plan asks for, `strip_speculative`
removes every `--speculative-*` flag (and its value) whatever wrote it.
"""

from __future__ import annotations

from typing import Any

from gate.model.engines import PROFILES, profile
from gate.plan.model import Plan


class PlanRequestError(ValueError):
    """The request names no usable plan; said in the annotation and an Event, never a traceback."""


def speculative_config(plan: Plan) -> dict[str, Any]:
    """The engine flags' content for the plan's speculative settings (the engine profile's
    `speculative_config`: vLLM's `--speculative-config` JSON, SGLang's `--speculative-<key>` keys)."""
    spec = plan.engine.speculative
    if spec is None:
        raise PlanRequestError("the plan sets no engine.speculative: there is no drafter to turn on")
    drafter = plan.drafter
    model = drafter.name if drafter is not None and not drafter.embedded and drafter.name else None
    return profile(plan.engine.kind).speculative_config(
        spec.method, model, num_speculative_tokens=spec.num_speculative_tokens, num_steps=spec.num_steps,
        eagle_topk=spec.eagle_topk, num_draft_tokens=spec.num_draft_tokens)


def strip_speculative(args: list[str], engine: str | None = None) -> list[str]:
    """The engine args without any of the engine's speculative flags (its profile's
    `speculative_flag_prefixes`: `--speculative-*` on vLLM and SGLang, `--spec-*` on llama.cpp) and their
    values (`=value` or the next arg). Without an engine (turning speculation off when the plan could not be
    read), every profile's prefixes: no engine here has a flag of another's speculative spelling."""
    if engine is None:
        prefixes = tuple(p for prof in PROFILES.values() for p in prof.speculative_flag_prefixes)
    else:
        prefixes = profile(engine).speculative_flag_prefixes
    out: list[str] = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a.startswith(prefixes):
            nxt = args[i + 1] if i + 1 < len(args) else None
            skip = "=" not in a and nxt is not None and not nxt.startswith("--")
            continue
        out.append(a)
    return out


def with_speculative(args: list[str], engine: str, cfg: dict[str, Any]) -> list[str]:
    """The engine args with exactly the plan's speculative flags (any previous ones removed)."""
    return strip_speculative(args, engine) + profile(engine).speculative_flags(cfg)
