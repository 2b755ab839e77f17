"""The engine container's speculative flags for a plan, in the chart's convention.

Why here: turning the drafter on or off is an edit of the engine's args, and it must be exact
both ways — `with_speculative` adds exactly the flags the plan asks for, `strip_speculative`
removes every `--speculative-*` flag (and its value) whatever wrote it.
"""

from __future__ import annotations

import json
from typing import Any

from gate.plan.model import Plan

SGLANG_ALGORITHM = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN", "nextn": "NEXTN", "ngram": "NGRAM",
                    "draft_model": "STANDALONE", "dflash": "DFLASH", "dspark": "DSPARK"}
VLLM_METHOD = {"nextn": "mtp"}


class PlanRequestError(ValueError):
    """The request names no usable plan; said in the annotation and an Event, never a traceback."""


def speculative_config(plan: Plan) -> dict[str, Any]:
    """The engine flags' content for the plan's speculative settings.

    vLLM: the `--speculative-config` JSON. SGLang: keys that become `--speculative-<key>` flags.
    """
    spec = plan.engine.speculative
    if spec is None:
        raise PlanRequestError("the plan sets no engine.speculative: there is no drafter to turn on")
    drafter = plan.drafter
    model = drafter.name if drafter is not None and not drafter.embedded and drafter.name else None
    if plan.engine.kind == "vllm":
        cfg: dict[str, Any] = {"method": VLLM_METHOD.get(spec.method, spec.method)}
        if model:
            cfg["model"] = model
        if spec.num_speculative_tokens:
            cfg["num_speculative_tokens"] = spec.num_speculative_tokens
        return cfg
    cfg = {"algorithm": SGLANG_ALGORITHM.get(spec.method, spec.method.upper())}
    if model:
        cfg["draft_model_path"] = model
    for key in ("num_steps", "eagle_topk", "num_draft_tokens"):
        if getattr(spec, key, None):
            cfg[key] = getattr(spec, key)
    return cfg


def strip_speculative(args: list[str]) -> list[str]:
    """The engine args without any `--speculative-*` flag (and its value, `=value` or the next arg)."""
    out: list[str] = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a.startswith("--speculative-") or a.startswith("--speculative_"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            skip = "=" not in a and nxt is not None and not nxt.startswith("--")
            continue
        out.append(a)
    return out


def with_speculative(args: list[str], engine: str, cfg: dict[str, Any]) -> list[str]:
    """The engine args with exactly the plan's speculative flags (any previous ones removed)."""
    base = strip_speculative(args)
    if engine == "vllm":
        return base + ["--speculative-config", json.dumps(cfg, sort_keys=True, separators=(",", ":"))]
    flags: list[str] = []
    for k, v in cfg.items():
        flag = "--speculative-" + k.replace("_", "-")
        if v is True:
            flags.append(flag)
        elif v is not False and v is not None:
            flags += [flag, str(v)]
    return base + flags
