"""SGLang's gate-side profile."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SglangProfile:
    kind: str = "sglang"

    def depth(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
              num_steps: int | None, eagle_topk: int | None) -> int | None:
        """k = `num_draft_tokens − 1` (the verify block holds the root token too); with only
        `num_steps` and top-k 1 (a chain) SGLang's default block is `num_steps + 1`, so k = `num_steps`."""
        if num_draft_tokens is not None:
            return max(num_draft_tokens - 1, 0)
        if num_steps is not None and (eagle_topk or 1) == 1:
            return num_steps
        return num_speculative_tokens

    def draft_steps(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
                    num_steps: int | None, eagle_topk: int | None) -> int | None:
        """`speculative_num_steps` drafter forwards (each grows the tree by one level of top-k); without
        steps, a chain of k (the depth)."""
        if num_steps is not None:
            return num_steps
        return self.depth(num_speculative_tokens=num_speculative_tokens, num_draft_tokens=num_draft_tokens,
                          num_steps=num_steps, eagle_topk=eagle_topk)


SGLANG = SglangProfile()
