"""The per-window share of the ceiling, f = (L − 1) / k̄ (`specgate_spec_window_acceptance_fraction`, issue 37 item 5).

Why: the quality alerts count windows near nothing accepted (f <= 0.05) and near everything accepted
(f > 0.95) whatever the depth, so f must be the window's own: its k̄, not the configured maximum. Inputs: the
real vLLM 0.32 captures (tests/fixtures/vllm/, NOTES.md's counts) and pages shaped like them
(`tests.exporter.seed_pages.vllm_page`); SGLang's depth cases as the window values its adapter gives.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from exporter.collect import exposition
from exporter.derive import WindowStats, derive_window
from exporter.scrape import read_file_snapshot, snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState
from exporter.windows import WINDOW_FRACTION_BUCKETS, WindowTracker, ceiling_fraction
from tests.exporter.seed_pages import vllm_page

VLLM = Path(__file__).parents[1] / "fixtures" / "vllm"


@pytest.mark.parametrize(("arm", "fraction"), [
    # NOTES.md: ngram 522 drafts / 1,473 draft tokens / 1,170 accepted; draftself 460/1,380/1,380; draft 1,829/5,487/0
    ("ngram", 1170 / 1473),
    ("draftself", 1.0),
    ("draft", 0.0),
])
def test_real_captures_give_accepted_over_proposed(arm: str, fraction: float) -> None:
    """(L − 1) / k̄ with k̄ = draft tokens / drafts is accepted / proposed: ngram's k̄ (2.82) is below its k = 3,
    so dividing by the configured k would read 0.75, not 0.79."""
    (w,) = derive_window(read_file_snapshot(VLLM / f"metrics-{arm}-before.txt"),
                         read_file_snapshot(VLLM / f"metrics-{arm}-after.txt"), seconds=60)
    assert ceiling_fraction(w) == pytest.approx(fraction)
    assert w.depth_mean is not None and w.acceptance_length is not None
    assert ceiling_fraction(w) == pytest.approx((w.acceptance_length - 1) / w.depth_mean)


def _sglang(length: float | None, varies: bool | None, draft_tokens: float | None = 30.0,
            drafts: float | None = 10.0) -> WindowStats:
    """An SGLang window as `exporter.derive.window_stats` gives it: no proposed-token counter (no depth_mean),
    draft tokens = verify calls × the current depth."""
    return WindowStats(engine="sglang", model="m", rank=None, seconds=30.0, reset=False, drafts=drafts,
                       draft_tokens=draft_tokens, accepted_tokens=None, acceptance_length=length,
                       depth_varies=varies, has_spec=True)


def test_sglang_counts_only_while_its_depth_held_still() -> None:
    assert ceiling_fraction(_sglang(2.5, varies=False)) == pytest.approx(0.5)  # L − 1 = 1.5 of k = 3
    assert ceiling_fraction(_sglang(2.5, varies=True)) is None  # adaptive moved, or NGRAM: not the window's k̄
    assert ceiling_fraction(_sglang(2.5, varies=None)) is None  # no depth gauges: a move would go unseen
    assert ceiling_fraction(_sglang(None, varies=False)) is None  # no L


@pytest.mark.parametrize(("window", "why"), [
    (_sglang(2.5, False, draft_tokens=0.0), "k̄ = 0: no draft token proposed"),
    (_sglang(5.0, False), "L − 1 = 4 above k̄ = 3: more accepted than proposed"),
    (_sglang(2.0, False, draft_tokens=1e-320), "a subnormal k̄ makes f infinite"),
    (_sglang(2.0, False, draft_tokens=math.nan), "a non-finite k̄"),
])
def test_impossible_or_undefined_windows_observe_nothing(window: WindowStats, why: str) -> None:
    assert ceiling_fraction(window) is None, why


def test_exactly_every_token_accepted_is_one_not_past_it() -> None:
    """accepted / proposed at 100 % can round a hair above 1 through (L − 1) / k̄: still the last bucket."""
    w = _sglang(1.0 + 0.1 * 3, False, draft_tokens=0.3, drafts=1.0)  # (1.3 − 1) / 0.3 = 1.0000000000000002
    assert ceiling_fraction(w) == 1.0


def test_windows_at_a_varying_depth_land_on_one_scale() -> None:
    """A batch-size schedule: the same L = 2 is the ceiling at k̄ = 1 and a third at k̄ = 3; the histogram
    counts the first near the ceiling and the second in the middle, and nothing for a window at k̄ = 0."""
    tr = WindowTracker(windows=[60.0], batch_window=10.0, min_drafts=5, slo_target=2.0)
    pages = [
        (0, vllm_page(0, 0, 0, [0, 0, 0])),
        (10, vllm_page(10, 10, 10, [10, 0, 0])),      # k̄ 1, L 2: f 1.0 (all accepted at k = 1)
        (20, vllm_page(20, 40, 20, [20, 0, 0])),      # k̄ 3, L 2: f 1/3
        (30, vllm_page(30, 70, 20, [20, 0, 0])),      # k̄ 3, L 1: f 0 (nothing accepted)
        (40, vllm_page(40, 70, 20, [20, 0, 0])),      # k̄ 0, L 1: no fraction, still a window
        (50, vllm_page(42, 76, 26, [22, 2, 2])),      # 2 drafts < min 5: neither
    ]
    for ts, page in pages:
        tr.add(snapshot_from_text(page, timestamp=ts))
    t = tr.totals[("m", "0")]
    assert t.windows_total == 4
    assert t.fraction_hist == {1.0: 1, 0.5: 1, 0.05: 1}
    assert t.fraction_sum == pytest.approx(1 + 1 / 3)


def test_the_exposition_has_the_epsilon_bounds_and_a_count_of_observed_windows() -> None:
    st = ExporterState.from_settings(ExporterSettings(windows=[30.0], batch_window=10.0, min_drafts=1), started_at=0.0)
    for ts, page in [(0, vllm_page(0, 0, 0, [0, 0, 0])), (10, vllm_page(10, 30, 29, [10, 10, 9])),
                     (20, vllm_page(20, 60, 29, [10, 10, 9])), (30, vllm_page(30, 90, 59, [20, 20, 19]))]:
        st.record_success(snapshot_from_text(page, timestamp=1.0e9 + ts), duration=0.0)
    text = exposition(st)
    rows = {line.split("{")[0] + line.split('le="')[1].split('"')[0] if 'le="' in line else line.split("{")[0]:
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line.startswith("specgate_spec_window_acceptance_fraction")}
    b = "specgate_spec_window_acceptance_fraction_bucket"
    # f: 29/30 (near the ceiling), 0 (nothing), 1.0 (everything)
    assert rows[b + "0.05"] == 1 and rows[b + "0.9"] == 1 and rows[b + "0.95"] == 1 and rows[b + "1.0"] == 3
    assert rows[b + "+Inf"] == rows["specgate_spec_window_acceptance_fraction_count"] == 3
    assert rows["specgate_spec_window_acceptance_fraction_sum"] == pytest.approx(29 / 30 + 1)
    assert {0.05, 0.95, 1.0} <= set(WINDOW_FRACTION_BUCKETS)
