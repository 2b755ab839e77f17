"""Floor 0: the speculation depth k and the method sets — one address for every engine and method.

k is the number of draft tokens proposed per round that one verify can accept. It bounds the
acceptance arithmetic (`exporter.formulas`): 1 ≤ L ≤ 1 + k and a ≥ (L − 1)/k. Each engine spells
it its own way, so the spelling is read by that engine's gate profile (`gate.model.engines.<engine>`,
`BaseProfile.depth` by default), never re-derived here:

    vLLM          k = num_speculative_tokens
    SGLang        k = num_draft_tokens − 1   (the verify block holds the root token too)
                  k = num_steps              (only steps given, top-k 1: a chain of num_steps + 1)
                  k = block − 1              (DFlash/DSpark: SGLang forces the steps to 1 and drafts the
                                              drafter's block, `SglangProfile.resolve_speculative`)
                  (the rule is the exporter's, `exporter.engines.sglang.depth`; the profile reads it)
    TensorRT-LLM  k = max_draft_len, written num_speculative_tokens
    llama.cpp     k = --spec-draft-n-max, written num_speculative_tokens

Method sets (what a method needs and how it proposes):

- drafterless (`ngram`, `suffix`): proposes from the tokens themselves; no drafter artifact, no
  drafter KV; a variable-length proposer, which may draft fewer than k tokens per round;
- embedded (`mtp`, `nextn`): the drafter ships inside the target checkpoint;
- block (`dflash`, `dspark`): the drafter proposes its whole block in one forward (parallel drafting).

Drafter forward passes per verify cycle (`draft_forward_passes`; what the cost model's
`t_cycle = t_verify + passes × t_draft` and the seed-004 "per draft step" share divide by):

    drafterless              0
    block                    1
    chain or tree, SGLang    num_steps (a tree of top-k > 1 grows by one level per step, so
                             num_draft_tokens − 1 may exceed the steps); k when only k is given
    chain, other engines     k (one drafter step per proposed token: `BaseProfile.draft_steps`)

When the depth varies (issue 22): an engine may run a depth schedule instead of one k — vLLM's
`num_speculative_tokens_per_batch_size` (k by batch size), SGLang's `speculative_adaptive` (candidate
steps per batch-size tier, picked at run time), TensorRT-LLM's `draft_len_schedule` (k by batch size).
`depth_schedule` reads the plan's keys through the engine's profile (`DepthScheduler`, validated as the
engine validates them) into an `exporter.schedule.DepthSchedule`, then holds every depth it may run (each
band's, each SGLang candidate step) to 0..64 and refuses k = 0 at every batch (no speculative rollout;
`gate.model.invariants.schedule_depths`); llama.cpp runs no schedule. The bounds
then use the largest k any batch may run (`bound_depth`: 1 ≤ L ≤ 1 + k_max, a ≥ (L − 1)/k_max); k itself
(the engine's configured depth: the positions vLLM counts, SGLang's starting steps) stays what identity is
matched against.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from gate.model.engines import PROFILES, profile
from gate.model.engines.base import DepthScheduler, ScheduleReading

SpecMethod = Literal["draft_model", "eagle", "eagle3", "mtp", "nextn", "dflash", "dspark", "ngram", "suffix"]
METHODS: tuple[str, ...] = SpecMethod.__args__  # type: ignore[attr-defined]

# Methods that propose from the tokens themselves (prompt lookup; vLLM suffix decoding via arctic-inference):
# no drafter artifact, no drafter KV.
DRAFTERLESS_METHODS: frozenset[str] = frozenset({"ngram", "suffix"})
# Methods whose proposer may draft fewer than k tokens per round: the drafterless ones.
VARIABLE_LENGTH_METHODS: frozenset[str] = DRAFTERLESS_METHODS
# Methods whose drafter ships inside the target checkpoint (no second download).
EMBEDDED_METHODS: frozenset[str] = frozenset({"mtp", "nextn"})
# Methods whose drafter proposes the whole block in one forward pass (DFlash's block diffusion, DSpark's block).
BLOCK_METHODS: frozenset[str] = frozenset({"dflash", "dspark"})
# Methods that run an EAGLE head (the draft model whose layer count the co-design line bounds).
EAGLE_METHODS: frozenset[str] = frozenset({"eagle", "eagle3"})

# The largest speculative depth any engine accepts is far below this (vLLM and SGLang
# configurations use 1–16); a larger k is a typo.
MAX_SPECULATIVE_DEPTH = 64


def speculative_depth(engine: str, method: str | None = None, drafter_config: Mapping[str, Any] | None = None, /,
                      *, num_speculative_tokens: int | None = None, num_draft_tokens: int | None = None,
                      num_steps: int | None = None, eagle_topk: int | None = None) -> int | None:
    """k, the draft tokens proposed per round that one verify can accept (None when not declared).

    The engine's profile reads its own spelling (module docstring); an unknown engine is the default one's. The
    method and the drafter's config.json (None: not at hand) are passed on because an engine may resolve k from
    them, not from the keys: SGLang drafts a DFlash/DSpark drafter's block whatever its steps. (Positional, so a
    caller's `**keys` of depth keys never lands in them.)
    """
    return profile(engine).depth(num_speculative_tokens=num_speculative_tokens,
                                 num_draft_tokens=num_draft_tokens, num_steps=num_steps, eagle_topk=eagle_topk,
                                 method=method, drafter_config=drafter_config)


def draft_forward_passes(engine: str, method: str | None, *, num_speculative_tokens: int | None = None,
                         num_draft_tokens: int | None = None, num_steps: int | None = None,
                         eagle_topk: int | None = None) -> int | None:
    """Drafter forward passes one verify cycle costs (None when the plan does not say enough).

    Why a rule of its own: the cycle cost (`t_verify + passes × t_draft`) and the draft's share of
    the cycle growth divide by the drafter's steps, which are k only for a chain drafter on vLLM:
    a drafterless method runs no drafter, a block drafter (DFlash, DSpark) one forward for the whole
    block, SGLang's EAGLE family `num_steps` whatever the tree's width (module docstring). `method`
    None is read as a chain or tree drafter.
    """
    if method in DRAFTERLESS_METHODS:
        return 0
    if method in BLOCK_METHODS:
        return 1
    return profile(engine).draft_steps(num_speculative_tokens=num_speculative_tokens,
                                       num_draft_tokens=num_draft_tokens, num_steps=num_steps, eagle_topk=eagle_topk)


def schedule_owners() -> dict[str, str]:
    """Every engine's depth-schedule keys (its profile's `schedule_keys`) and the engine that owns each."""
    return {key: p.name for p in PROFILES.values() if isinstance(p, DepthScheduler) for key in p.schedule_keys}


def depth_schedule(engine: str, speculative: Mapping[str, Any], *, data_parallel: int = 1,
                   drafter_config: Mapping[str, Any] | None = None) -> ScheduleReading:
    """The depth schedule the engine runs for the plan's `engine.speculative` keys (None values left out).

    ValueError, with the engine's reason, when the engine would refuse the schedule or cannot run it. Another
    engine's schedule key is refused here, by name and owner, for every engine alike; an engine whose profile runs
    no schedule (no `DepthScheduler`) refuses every schedule key. The keys are read as the engine resolves them
    (`resolve_speculative`, with the drafter's config.json; None: not at hand): a key it overrides is a warning of
    the reading (declared, so the depth line shows it), a k it then cannot know a ValueError.
    """
    p = profile(engine)
    own = p.schedule_keys if isinstance(p, DepthScheduler) else ()
    owners = schedule_owners()
    foreign = [key for key in owners if key not in own and speculative.get(key)]
    if foreign:
        key = foreign[0]
        if not own:
            raise ValueError(f"engine.speculative.{key}: {p.name} runs no depth schedule")
        theirs = " + ".join(f"engine.speculative.{k}" for k in own)
        raise ValueError(f"engine.speculative.{key} is not {p.name}'s (it is {owners[key]}'s); {p.name}'s depth "
                         f"schedule is {theirs}")
    keys, overrides = p.resolve_speculative(speculative, drafter_config)
    if not isinstance(p, DepthScheduler):
        return ScheduleReading(None, overrides, declared=bool(overrides))
    reading = p.depth_schedule(keys, data_parallel=data_parallel)
    if overrides:
        reading = ScheduleReading(reading.schedule, reading.warnings + overrides, declared=True)
    if reading.schedule is not None:
        # Imported here: gate.model.invariants reads gate.model.plausibility, which reads this module's method sets.
        from gate.model.invariants import schedule_depths

        ks = [k for band in reading.schedule.bands for k in (band.k_min, band.k_max)]
        bad = schedule_depths(ks, f"the {p.name} depth schedule ({reading.schedule.source})", MAX_SPECULATIVE_DEPTH)
        if bad is not None:
            raise ValueError(bad)
    return reading


def bound_depth(k: int | None, reading: ScheduleReading) -> int | None:
    """The k the acceptance bounds use: the largest any batch may run under the schedule the engine runs, else k.

    (vLLM clamps a schedule to num_speculative_tokens, so there it is at most k; SGLang's adaptive tiers may
    run deeper than the starting num_steps.) A schedule of k = 0 everywhere is refused by `depth_schedule`
    (gate.model.invariants.schedule_depths); were one read, it would bound L to 1, never drop the bound.
    """
    if reading.schedule is None:
        return k
    return reading.schedule.max_k
