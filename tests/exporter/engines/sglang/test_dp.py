"""SGLang with several DP ranks: where the acceptance length lives.

Pages are hand-written from DESIGN.md's SGLang names (not captures): scheduler gauges carry
`dp_rank`/`tp_rank`, request-side series (generation tokens, verify calls) carry no rank.
"""

from __future__ import annotations

import pytest

from exporter.derive import derive_window
from exporter.scrape import snapshot_from_text


def old_sglang_dp2(gen: float, l0: float, l1: float) -> str:
    """SGLang 0.5.8-style page: per-rank interval gauges, per-model generation counter."""
    lines = ["# TYPE sglang:generation_tokens_total counter",
             f'sglang:generation_tokens_total{{model_name="q"}} {gen}',
             "# TYPE sglang:spec_accept_length gauge"]
    for rank, length in (("0", l0), ("1", l1)):
        lines.append(f'sglang:spec_accept_length{{dp_rank="{rank}",model_name="q",tp_rank="0"}} {length}')
    lines.append("# TYPE sglang:spec_num_draft_tokens gauge")
    lines += [f'sglang:spec_num_draft_tokens{{dp_rank="{r}",model_name="q",tp_rank="0"}} 4' for r in "01"]
    return "\n".join(lines) + "\n"


def by_rank(before: str, after: str) -> dict:
    ws = derive_window(snapshot_from_text(before, timestamp=0), snapshot_from_text(after, timestamp=30))
    return {w.rank: w for w in ws}


def test_old_sglang_multi_dp_rank_gauges_that_moved_are_new_data():
    w = by_rank(old_sglang_dp2(1000, 2.5, 2.6), old_sglang_dp2(1600, 2.9, 2.6))
    assert w["0"].acceptance_length == pytest.approx(2.9)
    assert w["0"].acceptance_rate == pytest.approx((2.9 - 1) / (4 - 1))  # recomputed, never the engine's rate
    # rank 1 re-sent the same value: not new data (it may have been idle), so absent, not 2.6
    assert w["1"].acceptance_length is None


def test_old_sglang_gauges_are_not_new_data_when_the_model_did_not_generate():
    w = by_rank(old_sglang_dp2(1000, 2.5, 2.6), old_sglang_dp2(1000, 2.5, 2.6))
    assert w["0"].acceptance_length is None and w["1"].acceptance_length is None


def test_sglang_with_verify_counters_keeps_acceptance_per_model_only():
    def page(gen: float, verify: float, requests: float) -> str:
        return old_sglang_dp2(gen, 2.9, 2.7) + (
            "# TYPE sglang:spec_verify_calls_total counter\n"
            f'sglang:spec_verify_calls_total{{model_name="q"}} {verify}\n'
            "# TYPE sglang:num_requests_total counter\n"
            f'sglang:num_requests_total{{model_name="q"}} {requests}\n')

    w = by_rank(page(1000, 400, 10), page(1600, 600, 14))
    # per model, decode-only: L = (Δgeneration − Δrequests) / Δverify calls = (600 − 4) / 200 = 2.98
    assert w[None].acceptance_length == pytest.approx(2.98)
    assert w[None].acceptance_rate == pytest.approx((600 - 4 - 200) / (200 * (4 - 1)))
    # the rank gauges would duplicate it: the rank streams are not speculative streams
    assert not w["0"].has_spec and not w["1"].has_spec
