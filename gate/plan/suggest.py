"""Plan errors a user can act on: one line, the key's path, and "did you mean" from the whole schema.

Why a module of its own: the plan model (`gate.plan.model`) is data and its validators; turning
pydantic's error list into one sentence (the path, an engine flag mapped to its plan key, the closest
key anywhere in the schema) is a separate concern that reads only the model's field tree.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel


def _loc(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for x in loc:
        if isinstance(x, int):
            parts.append(f"[{x}]")
        else:
            parts.append(("." if parts else "") + str(x))
    return "".join(parts) or "(plan)"


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Known keys of the model that owns the location (for 'did you mean')."""
    current: Any = model
    for x in loc[:-1]:
        if isinstance(x, int):
            continue
        fields = getattr(current, "model_fields", {})
        if x not in fields:
            return []
        ann = fields[x].annotation
        current = model_in(ann)
        if current is None:
            return []
    return list(getattr(current, "model_fields", {}))


def _key_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every key of the plan schema as a dotted path (lists of models add no index)."""
    out: list[str] = []
    for name, info in model.model_fields.items():
        if info.exclude:
            continue
        out.append(prefix + name)
        sub = model_in(info.annotation)
        if sub is not None:
            out.extend(_key_paths(sub, f"{prefix}{name}."))
    return out


# Engine flags and other names newcomers write, and the plan key that holds them.
_ALIASES: dict[str, str] = {
    "gpu_memory_utilization": "engine.memory_fraction", "mem_fraction_static": "engine.memory_fraction",
    "max_model_len": "engine.context_cap_tokens", "context_length": "engine.context_cap_tokens",
    "max_total_tokens": "engine.configured_max_total_tokens", "kv_cache_dtype": "engine.kv_dtype",
    "tensor_parallel_size": "engine.tp", "tp_size": "engine.tp", "page_size": "engine.block_size",
    "speculative_config": "engine.speculative", "speculative_algorithm": "engine.speculative.method",
    "speculative_method": "engine.speculative.method", "speculative_num_steps": "engine.speculative.num_steps",
    "speculative_num_draft_tokens": "engine.speculative.num_draft_tokens",
    "speculative_eagle_topk": "engine.speculative.eagle_topk", "acceptance": "slo",
    "target_acceptance": "slo.target_acceptance_length", "acceptance_target": "slo.target_acceptance_length",
    "enable_prefix_caching": "engine.prefix_cache", "startup_budget": "budgets.startup_seconds",
}


def _suggest(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """'Did you mean' for an unknown key, from the whole schema, not only its siblings.

    An engine flag or a common name maps to its key (`gpu_memory_utilization` -> `engine.memory_fraction`);
    a key that exists elsewhere under the same name is named by its full path (`staging.startup_seconds`
    -> `budgets.startup_seconds`); else the closest key anywhere, a sibling by its name (`min_draft` ->
    `min_drafts`), any other by its full path (`startup_budget` -> `budgets.startup_seconds`, not
    `staging.load_seconds`).
    """
    key = str(loc[-1])
    here = ".".join(str(x) for x in loc[:-1] if not isinstance(x, int))
    if key in _ALIASES and _ALIASES[key] != f"{here}.{key}".lstrip("."):
        return [_ALIASES[key]]
    if here == "slo" and key == "target":
        return ["target_acceptance_length"]
    siblings = set(_fields_at(model, loc))
    paths = _key_paths(model)
    sections = {p for p in paths if any(q.startswith(p + ".") for q in paths)}
    elsewhere = [p for p in paths if p.rsplit(".", 1)[-1] == key and p.rpartition(".")[0] != here
                 and p not in sections]
    if elsewhere:
        return sorted(elsewhere, key=lambda p: (p.count("."), p))[:2]
    words = set(key.split("_"))

    def score(p: str) -> float:
        leaf = p.rsplit(".", 1)[-1]
        shared = len(words & set(p.replace(".", "_").split("_"))) / max(1, len(words))
        return (difflib.SequenceMatcher(None, key, leaf).ratio() + 0.5 * shared
                + (0.15 if p.rpartition(".")[0] == here else 0.0))

    best = max(paths, key=lambda p: (score(p), -p.count(".")), default=None)
    if best is None or score(best) < 0.6:
        return []
    return [best.rsplit(".", 1)[-1] if best.rpartition(".")[0] == here and best.rsplit(".", 1)[-1] in siblings
            else best]


def model_in(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = model_in(arg)
        if found is not None:
            return found
    return None


def _one_error(model: type[BaseModel], err: Mapping[str, Any]) -> str:
    loc = tuple(err.get("loc", ()))
    kind = err.get("type", "")
    where = _loc(loc)
    if kind == "extra_forbidden":
        close = _suggest(model, loc)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        return f"{where}: unknown key{hint}"
    if kind == "literal_error":
        expected = (err.get("ctx") or {}).get("expected", "")
        options = "|".join(x.strip().strip("'") for x in expected.replace(" or ", ",").split(",") if x.strip())
        return f"{where}: must be one of {options}"
    if kind == "missing":
        return f"{where}: required"
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{where}: {msg}"


def one_line(model: type[BaseModel], errors: Sequence[Mapping[str, Any]]) -> str:
    """The first three of pydantic's errors as one line; a typo (unknown key *and* a missing one) names the
    unknown key first."""
    ordered = sorted(errors, key=lambda err: err.get("type") != "extra_forbidden")
    shown = "; ".join(_one_error(model, err) for err in ordered[:3])
    more = f" (and {len(ordered) - 3} more)" if len(ordered) > 3 else ""
    return f"{shown}{more}"
