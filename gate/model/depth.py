"""Floor 0: the speculation depth k and the method sets — one address for every engine and method.

k is the number of draft tokens proposed per round that one verify can accept. It bounds the
acceptance arithmetic (`exporter.formulas`): 1 ≤ L ≤ 1 + k and a ≥ (L − 1)/k. Each engine spells
it its own way, so the spelling is read by that engine's gate profile (`gate.model.engines`):

    vLLM     k = num_speculative_tokens
    SGLang   k = num_draft_tokens − 1        (the verify block holds the root token too)
             k = num_steps                    (only steps given, top-k 1: a chain of num_steps + 1)

Method sets (what a method needs and how it proposes):

- drafterless (`ngram`, `suffix`): proposes from the tokens themselves; no drafter artifact, no
  drafter KV; a variable-length proposer, which may draft fewer than k tokens per round;
- embedded (`mtp`, `nextn`): the drafter ships inside the target checkpoint.
"""

from __future__ import annotations

from typing import Literal

SpecMethod = Literal["draft_model", "eagle", "eagle3", "mtp", "nextn", "dflash", "dspark", "ngram", "suffix"]
METHODS: tuple[str, ...] = SpecMethod.__args__  # type: ignore[attr-defined]

# Methods that propose from the tokens themselves (prompt lookup; vLLM suffix decoding via arctic-inference):
# no drafter artifact, no drafter KV.
DRAFTERLESS_METHODS: frozenset[str] = frozenset({"ngram", "suffix"})
# Methods whose proposer may draft fewer than k tokens per round: the drafterless ones.
VARIABLE_LENGTH_METHODS: frozenset[str] = DRAFTERLESS_METHODS
# Methods whose drafter ships inside the target checkpoint (no second download).
EMBEDDED_METHODS: frozenset[str] = frozenset({"mtp", "nextn"})

# The largest speculative depth any engine accepts is far below this (vLLM and SGLang
# configurations use 1–16); a larger k is a typo.
MAX_SPECULATIVE_DEPTH = 64


def speculative_depth(engine: str, *, num_speculative_tokens: int | None = None,
                      num_draft_tokens: int | None = None, num_steps: int | None = None,
                      eagle_topk: int | None = None) -> int | None:
    """k, the draft tokens proposed per round that one verify can accept (None when not declared).

    The engine's profile reads its own spelling (module docstring); an unknown engine is vLLM's.
    """
    from gate.model.engines import profile

    return profile(engine).depth(num_speculative_tokens=num_speculative_tokens,
                                 num_draft_tokens=num_draft_tokens, num_steps=num_steps, eagle_topk=eagle_topk)
