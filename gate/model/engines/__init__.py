"""Floor 0: one gate-side profile per engine — what the gate must know of an engine, in one package each.

Why: the gate's lines, the bill, `specgate init` and the controller's engine arguments all need a few
engine-specific facts (how the engine spells the depth k, what it charges for the drafter's KV, its
memory-fraction default, its speculative flags, its tap convention, …). Each engine's facts live in
`gate/model/engines/<engine>/` (the profile in `__init__.py`, its pool arithmetic or schedule writer beside
it) behind the `EngineProfile` protocol, with `BaseProfile`'s defaults (`base.py`), so a new engine is one
package here plus one line in `PROFILES` (and its adapter in `exporter/engines/`), and no other module
compares engine names.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gate.model.engines.base import EngineProfile, ScheduleWriter
from gate.model.engines.llamacpp import LLAMACPP
from gate.model.engines.sglang import SGLANG
from gate.model.engines.trtllm import TRTLLM
from gate.model.engines.vllm import VLLM

# The registry: one line per engine (its profile package holds everything else).
PROFILES: Mapping[str, EngineProfile] = MappingProxyType({p.kind: p for p in (VLLM, SGLANG, TRTLLM, LLAMACPP)})
# The engine a command assumes when none is named (`specgate codesign --engine`): the registry's first.
DEFAULT_KIND: str = next(iter(PROFILES))
# The engines whose depth schedule `specgate tune --emit` writes (their profiles are `ScheduleWriter`s).
SCHEDULE_WRITERS: tuple[str, ...] = tuple(kind for kind, p in PROFILES.items() if isinstance(p, ScheduleWriter))


def _in_words(kinds: list[str]) -> str:
    return ", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else "".join(kinds)


# The plan's `engine.kind` in words, each with its provenance when not from runs (the plan schema's description).
KINDS_IN_WORDS: str = _in_words([p.kind + (f" ({p.provenance})" if p.provenance else "") for p in PROFILES.values()])


def profile(kind: str) -> EngineProfile:
    """The profile of engine `kind`; an unknown kind gets the default engine's (the plan model refuses unknown
    kinds)."""
    return PROFILES.get(kind, PROFILES[DEFAULT_KIND])
