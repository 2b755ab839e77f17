"""vLLM's gate-side profile."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VllmProfile:
    kind: str = "vllm"

    def depth(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
              num_steps: int | None, eagle_topk: int | None) -> int | None:
        """k = `num_speculative_tokens` (vLLM has no other spelling)."""
        return num_speculative_tokens

    def draft_steps(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
                    num_steps: int | None, eagle_topk: int | None) -> int | None:
        """One drafter step per proposed token: k (vLLM's EAGLE and MTP proposers loop k times; an MTP
        target with fewer layers than k reuses them, so the count is still k)."""
        return self.depth(num_speculative_tokens=num_speculative_tokens, num_draft_tokens=num_draft_tokens,
                          num_steps=num_steps, eagle_topk=eagle_topk)


VLLM = VllmProfile()
