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


VLLM = VllmProfile()
