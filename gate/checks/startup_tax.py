"""The drafter's startup tax and the output tokens it takes to win it back (seed 002 line 4).

Why: "Startup time is where a latency win can disappear before the first request." A tax in
seconds means little until it is set against what speculation saves per token. Per running
sequence, one output token costs `t_without` ms without speculation (the plain target step)
and `t_with = t_cycle / L` ms with it (one verify cycle yields L tokens; seed 004's
arithmetic). With c sequences decoding together, each step saves (t_without − t_with) of
wall time and emits c tokens, so

    tax           = startup_with_drafter − startup_without_drafter            (s)
    saving        = t_without − t_with                                          (ms per token, per sequence)
    tokens_needed = c · tax · 1000 / saving                                     (output tokens at the mix's concurrency)
    requests      = tokens_needed / (c · output_tokens)                         (batches of the mix)

A saving ≤ 0 never wins the tax back (speculation is not faster per token there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Payback:
    """How many output tokens of one request mix pay back the startup tax."""

    tax_seconds: float
    per_token_ms_without: float
    per_token_ms_with: float
    saving_ms_per_token: float
    mix: str
    concurrency: int
    output_tokens: int
    tokens_needed: float | None  # None: never (no per-token saving)
    batches_needed: float | None
    basis: str  # where t_without / t_with come from, labelled declared / measured / predicted / assumed

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def sentence(self) -> str:
        if self.tokens_needed is None:
            return (f"the startup tax of {self.tax_seconds:g} s is never won back at {self.mix}: "
                    f"{self.per_token_ms_with:.3f} ms per token with speculation vs {self.per_token_ms_without:.3f} "
                    f"without ({self.basis})")
        return (f"the {self.tax_seconds:g} s startup tax is won back after {self.tokens_needed:,.0f} output tokens at "
                f"{self.mix} (concurrency {self.concurrency}; ≈ {self.batches_needed:,.1f} batches of "
                f"{self.output_tokens} tokens per request), saving {self.saving_ms_per_token:.3f} ms per token per "
                f"sequence ({self.basis})")


def payback(tax_seconds: float, per_token_ms_without: float, per_token_ms_with: float, *, mix: str,
            concurrency: int, output_tokens: int, basis: str) -> Payback:
    """Apply the module docstring's formulas."""
    saving = per_token_ms_without - per_token_ms_with
    tokens = batches = None
    if saving > 0:
        tokens = concurrency * max(tax_seconds, 0.0) * 1000.0 / saving
        per_batch = concurrency * output_tokens
        batches = tokens / per_batch if per_batch > 0 else None
    return Payback(tax_seconds=tax_seconds, per_token_ms_without=per_token_ms_without,
                   per_token_ms_with=per_token_ms_with, saving_ms_per_token=saving, mix=mix, concurrency=concurrency,
                   output_tokens=output_tokens, tokens_needed=tokens, batches_needed=batches, basis=basis)
