"""Bounds a hostile engine cannot push past (issue 14, item 4): draft positions ≤ 64, a settable cap on
streams (default 256), streams forgotten after a settable time unseen, memory bounded under churn.

Pages are the real vLLM 0.32 ngram capture (tests/fixtures/vllm/) with lines added the way the
issue's hostile tester did: `position="200000"`, 500 new model names per scrape.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from exporter.collect import exposition
from exporter.engines.base import MAX_POSITIONS
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NGRAM = (FIXTURES / "vllm" / "metrics-ngram-after.txt").read_text()
POS_LINE = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="%d"} %d\n'


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def anomalies(state: ExporterState, reason: str) -> float:
    got = samples(exposition(state))
    return got[("specgate_engine_anomalies_total", frozenset({("engine", "vllm"), ("reason", reason)}))]


def test_a_position_past_64_is_dropped_and_counted_not_200001_series():
    page = NGRAM + POS_LINE % (200000, 5) + POS_LINE % (3000000, 5) + POS_LINE % (MAX_POSITIONS, 1)
    snap = snapshot_from_text(page, "vllm", timestamp=0.0)
    (st,) = snap.streams
    assert len(st.spec.accepted_per_position) == 3  # the capture's own 0..2
    assert snap.anomalies["position_limit"] == 3
    state = ExporterState.from_settings(ExporterSettings(), started_at=0.0)
    state.record_success(snap, 0.0)
    got = samples(exposition(state))
    assert len([k for k in got if k[0] == "specgate_spec_accepted_tokens_per_position_total"]) == 3
    assert anomalies(state, "position_limit") == 3


def test_position_63_is_kept():
    snap = snapshot_from_text(NGRAM + POS_LINE % (MAX_POSITIONS - 1, 1), "vllm", timestamp=0.0)
    assert len(snap.streams[0].spec.accepted_per_position) == MAX_POSITIONS
    assert "position_limit" not in snap.anomalies


def churn_page(i: int, per_page: int = 500) -> str:
    """The capture plus `per_page` model names never seen before (the issue's churn pattern)."""
    extra = "".join(f'vllm:num_requests_running{{engine="0",model_name="churn-{i}-{j}"}} 1.0\n'
                    f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="churn-{i}-{j}"}} {j}.0\n'
                    for j in range(per_page))
    return NGRAM + extra


def test_streams_past_the_cap_are_dropped_and_counted():
    state = ExporterState.from_settings(ExporterSettings(max_streams=10), started_at=0.0)
    state.record_success(snapshot_from_text(churn_page(0, 50), "vllm", timestamp=0.0), 0.0)
    assert len(state.tracker.totals) == 10 and len(state.tracker.latest.streams) == 10
    assert anomalies(state, "stream_limit") == 41  # 51 streams on the page, 10 kept
    kept = sorted(k.model for k in state.tracker.totals)
    assert kept == sorted(f"churn-0-{j}" for j in range(50))[:10]  # the first ones in the page's stream order


def test_streams_unseen_past_the_ttl_are_forgotten():
    state = ExporterState.from_settings(ExporterSettings(max_streams=600, stream_ttl=60.0), started_at=0.0)
    state.record_success(snapshot_from_text(churn_page(0, 20), "vllm", timestamp=0.0), 0.0)
    assert len(state.tracker.totals) == 21
    state.record_success(snapshot_from_text(NGRAM, "vllm", timestamp=30.0), 0.0)
    assert len(state.tracker.totals) == 21  # unseen for 30 s: still known
    state.record_success(snapshot_from_text(NGRAM, "vllm", timestamp=61.0), 0.0)
    assert set(state.tracker.totals) == {("tiny", "0")}


def test_memory_stays_bounded_under_500_new_model_names_per_scrape():
    # The issue: 500 new model names per scrape grew RSS from 212 to 822 MiB (chart limit 256 Mi). With the
    # default cap (256) and expiry, the tracked state stops growing once the cap is reached.
    state = ExporterState.from_settings(ExporterSettings(), started_at=0.0)
    gc.collect()
    tracemalloc.start()
    try:
        sizes = []
        for i in range(40):
            state.record_success(snapshot_from_text(churn_page(i), "vllm", timestamp=5.0 * i), 0.0)
            exposition(state)
            if i in (10, 39):
                gc.collect()
                sizes.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert len(state.tracker.totals) <= 256
    assert all(len(e.snapshot.streams) <= 256 for e in state.tracker.ring)
    assert sizes[1] - sizes[0] < 8 * 1024 * 1024, sizes  # 29 more scrapes of churn: no growth to speak of
    assert sizes[1] < 64 * 1024 * 1024, sizes
    assert anomalies(state, "stream_limit") >= 39 * 500
