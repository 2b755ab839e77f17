"""gate.checks.acceptance.served_rate: seed 000's served-rate cells are ranges and a rank test, never a "speedup" at n = 3.

Numbers: seed 000 raw cells as carried by examples/plans/seed000-qwen38-flash-next-nextn.yaml
(tokens/s, off vs NEXTN). Expected p values by hand: 3 vs 3 with every speculative cell above
every baseline cell → 1/C(6,3) = 0.05; the long cells give U = 8 of 9 → P(U ≥ 8) = 2/20 = 0.1.
"""

from __future__ import annotations

import pytest

from gate.checks.acceptance.served_rate import compare, includes_first_token_wait
from gate.stats import StatsError
from gate.status import Status

SHORT_OFF = [26.0, 19.9, 22.6]
SHORT_NEXTN = [42.6, 43.0, 42.2]
LONG_OFF = [22.5, 27.6, 24.7]
LONG_NEXTN = [27.4, 28.6, 30.1]
DENOMINATOR = "all request output tokens / entire cell wall clock including TTFT"


def test_three_against_three_all_higher_is_not_significant() -> None:
    c = compare("short", SHORT_OFF, SHORT_NEXTN, unit="tokens/s", source="seed 000 raw cells")
    assert c.higher_in_all_cells and not c.ranges_overlap
    assert c.p_higher == pytest.approx(0.05)
    assert not c.significant  # p < α is required; 0.05 is not < 0.05
    assert c.call.startswith("higher in all cells, not significant at n = 3")
    assert "speedup" not in c.call
    assert "observed 19.9–26" in c.sentence()  # the range is labelled as observed, not as an interval


def test_overlapping_ranges() -> None:
    c = compare("long-agentic", LONG_OFF, LONG_NEXTN, unit="tokens/s", source="seed 000 raw cells")
    assert c.ranges_overlap
    assert c.p_higher == pytest.approx(0.1)
    assert not c.significant
    assert c.call.startswith("observed ranges overlap, median higher, not significant at n = 3")


def test_five_against_five_can_be_significant() -> None:
    """Control: with 5 vs 5 all higher, p = 1/252 < 0.05 and the word 'speedup' is earned."""
    c = compare("m", [10, 11, 12, 13, 14], [20, 21, 22, 23, 24], unit="tokens/s", source="s")
    assert c.p_higher == pytest.approx(1 / 252)
    assert c.significant and c.call.startswith("speedup: higher in all cells, significant")


def test_alpha_changes_the_call() -> None:
    c = compare("short", SHORT_OFF, SHORT_NEXTN, unit="tokens/s", source="s", alpha=0.1)
    assert c.significant and c.call.startswith("speedup")


def test_slowdown_is_named() -> None:
    c = compare("m", [20, 21, 22, 23, 24], [10, 11, 12, 13, 14], unit="tokens/s", source="s")
    assert c.lower_in_all_cells and c.significant and c.call.startswith("slowdown")


def test_min_speedup_decides_only_when_significant() -> None:
    assert compare("short", SHORT_OFF, SHORT_NEXTN, unit="t", source="s", min_speedup=1.2).status == Status.INCONCLUSIVE
    fast = compare("m", [10, 11, 12, 13, 14], [20, 21, 22, 23, 24], unit="t", source="s", min_speedup=1.5)
    assert fast.status == Status.PASS  # ratio 22/12 = 1.83
    assert compare("m", [10, 11, 12, 13, 14], [20, 21, 22, 23, 24], unit="t", source="s",
                   min_speedup=2.0).status == Status.FAIL
    assert compare("short", SHORT_OFF, SHORT_NEXTN, unit="t", source="s").status is None


def test_first_token_caveat() -> None:
    c = compare("short", SHORT_OFF, SHORT_NEXTN, unit="tokens/s", source="s", denominator=DENOMINATOR)
    assert c.caveat is not None and "first-token waiting" in c.caveat and "including TTFT" in c.caveat
    assert compare("short", SHORT_OFF, SHORT_NEXTN, unit="tokens/s", source="s").caveat is None
    assert includes_first_token_wait(None, "served rate includes first-token waiting")
    assert not includes_first_token_wait("decode tokens / decode time", None)


def test_bad_samples_refused() -> None:
    with pytest.raises(StatsError):
        compare("m", [1.0, float("nan")], [2.0], unit="t", source="s")
    with pytest.raises(StatsError):
        compare("m", [0.0, 1.0], [2.0], unit="t", source="s")
