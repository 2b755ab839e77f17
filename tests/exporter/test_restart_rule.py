"""The one restart rule (`exporter.derive.restarted`) and the places that ask it: `derive_window`, the
tracker's per-scrape step and its sliding/batch windows. Pages come from tests/exporter/seed_pages.py
(the real vLLM 0.32 capture format); the numbers are chosen so each case can only pass one way."""

from __future__ import annotations

import os

import pytest

from exporter.derive import derive_window, restarted, stream_delta
from exporter.engines.base import Histogram, SpecCounters, StreamSnapshot
from exporter.scrape import snapshot_from_text
from exporter.windows import WindowTracker
from tests.exporter.seed_pages import vllm_page


def _stream(**kw: object) -> StreamSnapshot:
    return StreamSnapshot("m", "0", **kw)  # type: ignore[arg-type]


def test_start_time_change_is_a_restart_only_when_both_are_known() -> None:
    b = _stream(generation_tokens=100.0)
    a = _stream(generation_tokens=200.0)  # counters grew
    assert restarted(b, a, 1.0e9, 1.0e9 + 5)
    assert not restarted(b, a, 1.0e9, 1.0e9)
    assert not restarted(b, a, None, 1.0e9 + 5) and not restarted(b, a, 1.0e9, None)


def test_any_counter_going_down_is_a_restart() -> None:
    b = _stream(generation_tokens=100.0, spec=SpecCounters(drafts=50.0, accepted_tokens=90.0))
    assert restarted(b, _stream(generation_tokens=150.0, spec=SpecCounters(drafts=40.0, accepted_tokens=95.0)),
                     None, None)
    assert not restarted(b, _stream(generation_tokens=150.0, spec=SpecCounters(drafts=60.0, accepted_tokens=95.0)),
                         None, None)


def test_a_family_that_appears_is_never_compared_with_another() -> None:
    # Before: no spec counters yet, a TTFT histogram with 50 observations. After: 10 drafts appear and
    # TTFT has 60. Compared position by position, drafts 10 would meet the TTFT count 50 and read as
    # "went down"; compared by name nothing went down.
    ttft_b = Histogram.of(((1.0, 50.0), (float("inf"), 50.0)), count=50.0, sum=20.0)
    ttft_a = Histogram.of(((1.0, 60.0), (float("inf"), 60.0)), count=60.0, sum=25.0)
    b = _stream(generation_tokens=500.0, ttft=ttft_b)
    a = _stream(generation_tokens=600.0, ttft=ttft_a, spec=SpecCounters(drafts=10.0, draft_tokens=30.0,
                                                                        accepted_tokens=20.0))
    assert not restarted(b, a, None, None)


def test_a_reset_delta_is_the_later_snapshot_alone() -> None:
    b = _stream(spec=SpecCounters(drafts=522.0, draft_tokens=1473.0, accepted_tokens=1170.0))
    a = _stream(spec=SpecCounters(drafts=460.0, draft_tokens=1380.0, accepted_tokens=1380.0))
    d = stream_delta("vllm", b, a, reset=True)
    assert (d.drafts, d.draft_tokens, d.accepted_tokens, d.reset) == (460.0, 1380.0, 1380.0, True)
    assert stream_delta("vllm", None, a, reset=False).reset  # first sight: a reset delta


def _tracker(windows: list[float]) -> WindowTracker:
    return WindowTracker(windows=windows, batch_window=20.0, min_drafts=1, slo_target=2.0)


def test_a_window_spanning_a_counter_restart_is_reset_even_when_counters_grew_back() -> None:
    # Same process start time throughout (say a DP engine core restarted under one API server): the
    # restart is visible only at t=10, where drafts fell 100 -> 5. By t=20 they exceed 100 again, so
    # comparing the window's two ends alone would see no restart and take 200 - 100 as the window.
    tr = _tracker([20.0])
    tr.add(snapshot_from_text(vllm_page(100, 300, 200, [80, 70, 50]), timestamp=0))
    tr.add(snapshot_from_text(vllm_page(5, 15, 10, [4, 3, 3]), timestamp=10))
    tr.add(snapshot_from_text(vllm_page(200, 600, 500, [200, 170, 130]), timestamp=20))
    (w,) = tr.sliding(20.0)
    assert w.reset
    assert w.drafts == 200 and w.acceptance_length == pytest.approx(1 + 500 / 200)
    assert tr.totals[("m", "0")].restarts == 1
    assert tr.totals[("m", "0")].drafts == 100 + 5 + 195  # monotonic: each step's delta
    assert [c.reset for c in tr.completed] == [True]  # the batch window 0..20 spans it too: never evidence


def test_derive_window_and_the_tracker_ask_the_same_rule() -> None:
    pages = [vllm_page(100, 300, 200, [80, 70, 50]), vllm_page(150, 450, 300, [120, 100, 80]),
             vllm_page(160, 480, 320, [125, 105, 90], start=2.0e9), vllm_page(20, 60, 40, [15, 15, 10], start=2.0e9)]
    snaps = [snapshot_from_text(p, timestamp=10.0 * i) for i, p in enumerate(pages)]
    tr = _tracker([10.0])
    tr.add(snaps[0])
    for b, a in zip(snaps, snaps[1:], strict=False):
        tr.add(a)
        (w,) = derive_window(b, a)
        (s,) = tr.sliding(10.0)
        assert w.reset == s.reset == restarted(b.streams[0], a.streams[0], b.process_start_time,
                                               a.process_start_time)
    assert [r.restarted != frozenset() for r in tr.ring] == [False, False, True, True]


# --- the rule's fast form against its definition -------------------------------------------------------
# `restarted` compares the two snapshots field by field (`derive._went_down`) instead of building their
# `StreamSnapshot.cumulative` mappings; the definition is the mappings: any name both have went down.

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# 300 examples in make test; `make fuzz` runs them longer (SPECGATE_FUZZ_EXAMPLES, e.g. 20000).
EXAMPLES = int(os.environ.get("SPECGATE_FUZZ_EXAMPLES", "300"))

_val = st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.0, 5.0, 100.0]))
_bounds = st.sampled_from([(0.5, 1.0, float("inf")), (0.5, 2.0, float("inf")), (0.0, 1.0, float("inf")),
                           (-0.0, 1.0, float("inf")), (1.0, float("inf")), ()])


@st.composite
def _hist(draw: st.DrawFn) -> Histogram | None:
    les = draw(st.one_of(st.none(), _bounds))
    if les is None:
        return None
    counts = tuple(draw(st.sampled_from([0.0, 1.0, 3.0, 7.0])) for _ in les)
    return Histogram(les, counts, draw(_val), draw(_val))


@st.composite
def _snapshot(draw: st.DrawFn) -> StreamSnapshot:
    spec = None
    if draw(st.booleans()):
        spec = SpecCounters(drafts=draw(_val), draft_tokens=draw(_val), accepted_tokens=draw(_val),
                            verify_calls=draw(_val),
                            accepted_per_position=tuple(draw(st.lists(st.sampled_from([0.0, 2.0, 4.0]), max_size=3))))
    split = draw(st.dictionaries(st.sampled_from(["a{pid=1}", "a{pid=2}", "b{pid=1}"]),
                                 st.sampled_from([0.0, 3.0, 9.0]), max_size=3))
    return _stream(prompt_tokens=draw(_val), generation_tokens=draw(_val), preemptions=draw(_val), spec=spec,
                   ttft=draw(_hist()), split_cumulative=tuple(sorted(split.items())))


def _by_definition(b: StreamSnapshot, a: StreamSnapshot) -> bool:
    before = b.cumulative
    return any(x is not None and (y := before.get(k)) is not None and x < y for k, x in a.cumulative.items())


@settings(max_examples=EXAMPLES, deadline=None)
@given(b=_snapshot(), a=_snapshot())
def test_the_fast_comparison_is_the_cumulative_mapping_comparison(b: StreamSnapshot, a: StreamSnapshot) -> None:
    assert restarted(b, a, None, None) == _by_definition(b, a)


def _last_known_by_definition(last: StreamSnapshot, new: StreamSnapshot) -> StreamSnapshot:
    """`last_known` as the restart rule defines it: every cumulative value `new` lacks is `last`'s."""
    from dataclasses import replace

    def keep(n, o):
        return n if n is not None else o

    spec, ls = new.spec, last.spec
    if ls is not None:
        spec = ls if spec is None else replace(
            spec, drafts=keep(spec.drafts, ls.drafts), draft_tokens=keep(spec.draft_tokens, ls.draft_tokens),
            accepted_tokens=keep(spec.accepted_tokens, ls.accepted_tokens),
            accepted_per_position=spec.accepted_per_position or ls.accepted_per_position,
            verify_calls=keep(spec.verify_calls, ls.verify_calls))
    split = dict(last.split_cumulative) | dict(new.split_cumulative)
    return replace(new, prompt_tokens=keep(new.prompt_tokens, last.prompt_tokens),
                   generation_tokens=keep(new.generation_tokens, last.generation_tokens),
                   preemptions=keep(new.preemptions, last.preemptions), spec=spec, ttft=keep(new.ttft, last.ttft),
                   tpot=keep(new.tpot, last.tpot), itl=keep(new.itl, last.itl),
                   split_cumulative=tuple(sorted(split.items())))


@settings(max_examples=EXAMPLES, deadline=None)
@given(last=_snapshot(), new=_snapshot())
def test_last_known_returns_the_new_sight_itself_only_when_it_lacks_nothing(last: StreamSnapshot,
                                                                            new: StreamSnapshot) -> None:
    from exporter.derive import last_known

    assert last_known(last, new, reset=False) == _last_known_by_definition(last, new)
