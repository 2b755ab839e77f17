"""Window derivation: seed 004's vectors, the real captures, restarts, min_drafts, the tracker."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.derive import derive_window
from exporter.scrape import read_file_snapshot, snapshot_from_text
from exporter.windows import WindowTracker
from tests.exporter.seed_pages import vllm_page

VLLM = Path(__file__).parents[1] / "fixtures" / "vllm"


def snap(name: str):
    return read_file_snapshot(VLLM / f"metrics-{name}.txt")


def window(before_text: str, after_text: str, seconds: float = 60.0, min_drafts: float = 1):
    b = snapshot_from_text(before_text, timestamp=0.0)
    a = snapshot_from_text(after_text, timestamp=seconds)
    (w,) = derive_window(b, a, min_drafts=min_drafts)
    return w


# Seed 004: drafts 467, draft tokens 1,401, accepted 434+371+298 = 1,103 at 2K;
# drafts 423, draft tokens 1,269, accepted 359+290+240 = 889 at 131K (DESIGN.md "Seed 004 test vectors").
@pytest.mark.parametrize(("drafts", "draft_tokens", "per_pos", "length", "rate"), [
    (467, 1401, [434, 371, 298], 3.362, 0.787),
    (423, 1269, [359, 290, 240], 3.102, 0.701),
])
def test_seed004_vectors(drafts, draft_tokens, per_pos, length, rate):
    before = vllm_page(0, 0, 0, [0, 0, 0])
    after = vllm_page(drafts, draft_tokens, sum(per_pos), per_pos)
    w = window(before, after)
    assert round(w.acceptance_length, 3) == length
    assert round(w.acceptance_rate, 3) == rate
    assert w.position_acceptance_rate == pytest.approx([p / drafts for p in per_pos])
    assert not w.reset


@pytest.mark.parametrize(("arm", "length", "rate"), [
    # NOTES.md: ngram 522 drafts / 1,473 draft tokens / 1,170 accepted; draftself 460/1,380/1,380;
    # draft 1,829/5,487/0.
    ("ngram", 1 + 1170 / 522, 1170 / 1473),
    ("draftself", 4.0, 1.0),
    ("draft", 1.0, 0.0),
])
def test_real_capture_windows(arm, length, rate):
    (w,) = derive_window(snap(f"{arm}-before"), snap(f"{arm}-after"), seconds=60)
    assert w.acceptance_length == pytest.approx(length)
    assert w.acceptance_rate == pytest.approx(rate)
    assert round(w.acceptance_length, 2) == {"ngram": 3.24, "draftself": 4.0, "draft": 1.0}[arm]


def test_nospec_has_no_acceptance():
    (w,) = derive_window(snap("nospec-before"), snap("nospec-after"), seconds=60)
    assert w.acceptance_length is None and w.acceptance_rate is None and not w.has_spec
    assert w.position_acceptance_rate == ()


def test_restart_takes_all_deltas_from_the_later_capture():
    # ngram-after -> draftself-after: drafts fall 522 -> 460 while accepted rises 1,170 -> 1,380.
    # Per-counter handling would give 1 + (1380-1170)/460 = 1.46; DESIGN.md requires 4.00 / 100%.
    (w,) = derive_window(snap("ngram-after"), snap("draftself-after"), seconds=60)
    assert w.reset
    assert w.acceptance_length == pytest.approx(4.0)
    assert w.acceptance_rate == pytest.approx(1.0)
    assert w.drafts == 460


def test_process_start_change_is_a_restart_even_when_counters_grew():
    before = vllm_page(100, 300, 150, [60, 50, 40], start=1.0e9)
    after = vllm_page(200, 600, 600, [200, 200, 200], start=1.0e9 + 500)
    w = window(before, after)
    assert w.reset
    assert w.acceptance_length == pytest.approx(1 + 600 / 200)


def test_min_drafts_makes_acceptance_absent_not_zero():
    before = vllm_page(0, 0, 0, [0, 0, 0])
    after = vllm_page(5, 15, 15, [5, 5, 5])
    w = window(before, after, min_drafts=10)
    assert w.drafts == 5
    assert w.acceptance_length is None and w.acceptance_rate is None
    assert window(before, after, min_drafts=5).acceptance_length == pytest.approx(4.0)


def test_nothing_negative_is_reported():
    before = vllm_page(500, 1500, 1200, [450, 400, 350], generation=9000)
    after = vllm_page(10, 30, 3, [2, 1, 0], generation=50)
    w = window(before, after)
    assert w.reset
    for v in (w.drafts, w.draft_tokens, w.accepted_tokens, w.generation_tokens, w.acceptance_length):
        assert v is not None and v >= 0


def test_verify_cycle_from_decode_rate_per_sequence():
    # 400 generated tokens in 10 s with 2 running sequences -> 20 tok/s per sequence; L = 1 + 60/20 = 4
    # -> cycle = L / r = 4 / 20 = 0.2 s (seed 004's cycleMs definition).
    before = vllm_page(0, 0, 0, [0, 0, 0], generation=0, running=2)
    after = vllm_page(20, 60, 60, [20, 20, 20], generation=400, running=2)
    w = window(before, after, seconds=10)
    assert w.decode_tokens_per_second == pytest.approx(40.0)
    assert w.verify_cycle_seconds == pytest.approx(0.2)


def _tracker(**kw) -> WindowTracker:
    args = {"windows": [60.0], "batch_window": 30.0, "min_drafts": 1, "slo_target": 2.0}
    args.update(kw)
    return WindowTracker(**args)


def test_tracker_counters_stay_monotonic_across_a_restart():
    tr = _tracker()
    tr.add(snapshot_from_text(vllm_page(100, 300, 200, [80, 70, 50]), timestamp=0))
    tr.add(snapshot_from_text(vllm_page(150, 450, 300, [120, 100, 80]), timestamp=10))
    tr.add(snapshot_from_text(vllm_page(20, 60, 60, [20, 20, 20], start=2.0e9), timestamp=20))
    t = tr.totals[("m", "0")]
    assert t.restarts == 1
    assert t.drafts == 150 + 20 and t.accepted_tokens == 300 + 60
    assert t.accepted_per_position == [140, 120, 100]


def test_a_stream_missing_from_one_page_is_not_counted_twice():
    # Two DP engines on one page; the middle page is cut after engine 0's lines (a cut page is parsed
    # for what it has), so engine 1 is missing from it. Nothing ran: engine 1's totals must stay 40.
    both = vllm_page(100, 300, 200, [80, 70, 50]) + vllm_page(40, 120, 90, [35, 30, 25], engine="1")
    cut = both[: both.index('engine="1"')]
    tr = _tracker()
    tr.add(snapshot_from_text(both, timestamp=0))
    tr.add(snapshot_from_text(cut, timestamp=10))
    assert tr.latest.stream("m", "1") is None
    tr.add(snapshot_from_text(both, timestamp=20))
    t = tr.totals[("m", "1")]
    assert (t.drafts, t.draft_tokens, t.accepted_tokens) == (40, 120, 90)  # not 80, 240, 180
    assert t.accepted_per_position == [35, 30, 25] and t.restarts == 0
    # ... while a restart during the gap still counts the later values alone.
    tr.add(snapshot_from_text(cut, timestamp=30))
    tr.add(snapshot_from_text(vllm_page(100, 300, 200, [80, 70, 50], start=2e9)
                              + vllm_page(5, 15, 10, [5, 3, 2], engine="1", start=2e9), timestamp=40))
    t = tr.totals[("m", "1")]
    assert (t.drafts, t.accepted_tokens, t.restarts) == (45, 100, 1)


def test_batch_windows_feed_slo_counters_and_skip_reset_windows():
    tr = _tracker(batch_window=10.0, min_drafts=5)
    pages = [
        (0, vllm_page(0, 0, 0, [0, 0, 0])),
        (10, vllm_page(10, 30, 30, [10, 10, 10])),      # L 4.0 >= 2.0
        (20, vllm_page(20, 60, 30, [10, 10, 10])),      # L 1.0 <  2.0
        (30, vllm_page(22, 66, 30, [10, 10, 10])),      # 2 drafts < min 5: no value, not counted
        (40, vllm_page(5, 15, 15, [5, 5, 5], start=5e9)),  # restart: reset window, never evidence
    ]
    for ts, page in pages:
        tr.add(snapshot_from_text(page, timestamp=ts))
    t = tr.totals[("m", "0")]
    assert t.windows_total == 2 and t.windows_below_slo == 1
    assert [w.reset for w in tr.completed] == [False, False, False, True]
    assert [w.acceptance_length for w in tr.completed][:3] == [4.0, 1.0, None]


def test_sliding_window_needs_a_snapshot_old_enough_and_marks_restarts():
    tr = _tracker(windows=[20.0])
    tr.add(snapshot_from_text(vllm_page(0, 0, 0, [0, 0, 0]), timestamp=0))
    tr.add(snapshot_from_text(vllm_page(10, 30, 30, [10, 10, 10]), timestamp=10))
    assert tr.sliding(20.0) == []
    tr.add(snapshot_from_text(vllm_page(5, 15, 0, [0, 0, 0], start=3e9), timestamp=20))
    tr.add(snapshot_from_text(vllm_page(25, 75, 60, [20, 20, 20], start=3e9), timestamp=25))
    (w,) = tr.sliding(20.0)
    assert w.reset  # the window from t=0 to t=25 spans the restart at t=20
    assert w.acceptance_length == pytest.approx(1 + 60 / 25)


def test_settings_read_windows_and_durations_from_the_environment(monkeypatch):
    from exporter.settings import ExporterSettings, duration_label

    monkeypatch.setenv("SPECGATE_WINDOWS", "1m,5m,30s")
    monkeypatch.setenv("SPECGATE_BATCH_WINDOW", "45s")
    s = ExporterSettings()
    assert s.windows == [60.0, 300.0, 30.0] and s.batch_window == 45.0
    assert [duration_label(x) for x in s.windows] == ["1m", "5m", "30s"]


def test_a_restart_resets_the_windows_across_it_until_it_leaves_the_ring():
    """The tracker counts the ring entries at which the rule fired (to skip the search when there are
    none); a window across a restart is reset while the restart's entry is in the ring, and a window
    after it has left the ring is not (the ring keeps only what the longest window needs)."""
    tr = _tracker(windows=[20.0])
    tr.add(snapshot_from_text(vllm_page(0, 0, 0, [0, 0, 0]), timestamp=0))
    tr.add(snapshot_from_text(vllm_page(5, 15, 0, [0, 0, 0], start=3e9), timestamp=10))  # restart
    for t in range(15, 80, 5):
        n = 5 + 2 * (t - 10)
        tr.add(snapshot_from_text(vllm_page(n, 3 * n, n, [n, 0, 0], start=3e9), timestamp=t))
        if t < 20:
            assert tr.sliding(20.0) == []  # no snapshot old enough yet
            continue
        (w,) = tr.sliding(20.0)
        start = max(e.snapshot.timestamp for e in tr.ring if e.snapshot.timestamp <= t - 20.0 + 1e-9)
        assert w.reset == (start < 10 <= t), t
        assert tr._fired_in_ring == sum(bool(e.restarted) for e in tr.ring)
