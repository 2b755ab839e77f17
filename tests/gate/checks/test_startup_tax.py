"""gate.checks.startup_tax: the tax in seconds set against the per-token saving (issue 10, item 5).

Numbers: seed 004 at 2K context — plain step 14.14 ms, verify cycle 31.16 ms, L 3.362 →
31.16 / 3.362 = 9.268 ms per token with speculation, 4.872 ms saved. A 10 s tax at concurrency 4
→ 4 × 10,000 / 4.872 = 8,211 tokens (8,210.7). The tax itself is illustrative (seed 004 gives no startup times).
"""

from __future__ import annotations

import pytest

from gate.checks.startup_tax import payback


def test_seed004_2k_point() -> None:
    with_ms = 31.16 / 3.362
    p = payback(10.0, 14.14, with_ms, mix="chat", concurrency=4, output_tokens=256, basis="declared step costs")
    assert p.saving_ms_per_token == pytest.approx(14.14 - with_ms)
    assert p.tokens_needed == pytest.approx(4 * 10_000 / (14.14 - with_ms))
    assert p.tokens_needed == pytest.approx(8210.7, abs=0.1)
    assert p.batches_needed == pytest.approx(p.tokens_needed / (4 * 256))
    assert "won back after 8,211 output tokens" in p.sentence()


def test_no_saving_never_pays_back() -> None:
    """The real vLLM-CPU ngram arm, unwarmed: 1,840 tokens in 4.26 s vs 2.38 s without speculation."""
    p = payback(3.0, 2380 / 1840, 4260 / 1840, mix="w", concurrency=1, output_tokens=64, basis="measured")
    assert p.tokens_needed is None and "never won back" in p.sentence()
