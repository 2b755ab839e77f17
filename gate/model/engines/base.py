"""The protocol every gate-side engine profile meets (one instance per engine, frozen, no state)."""

from __future__ import annotations

from typing import Protocol


class EngineProfile(Protocol):
    """What the gate knows of one engine."""

    @property
    def kind(self) -> str:
        """The plan's `engine.kind` (and the exporter adapter's kind)."""
        ...

    def depth(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
              num_steps: int | None, eagle_topk: int | None) -> int | None:
        """k from the engine's own spelling of it (None when not declared)."""
        ...

    def draft_steps(self, *, num_speculative_tokens: int | None, num_draft_tokens: int | None,
                    num_steps: int | None, eagle_topk: int | None) -> int | None:
        """Drafter forward passes per verify cycle of a chain or tree drafter (None when not declared)."""
        ...
