"""ExporterState hands the collector a frozen view: exposition never holds the scrape loop's lock, and
what one exposition shows is one consistent moment. Input: the real vLLM 0.32 ngram captures."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from exporter.collect import exposition
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState
from tests.exporter.oracle import SpecgateCollector

VLLM = Path(__file__).parents[1] / "fixtures" / "vllm"


def _state() -> ExporterState:
    st = ExporterState.from_settings(ExporterSettings(windows=[60.0], batch_window=30.0, min_drafts=1),
                                     started_at=0.0)
    for i, phase in enumerate(("before", "after")):
        text = (VLLM / f"metrics-ngram-{phase}.txt").read_text()
        st.record_success(snapshot_from_text(text, timestamp=1000.0 + 60.0 * i), 0.0)
    return st


def test_families_are_yielded_outside_the_lock() -> None:
    st = _state()
    families = SpecgateCollector(st).collect()
    next(families)
    assert not st.lock.locked()  # a slow /metrics reader does not stop the scrape loop
    # ... and a scrape recorded mid-exposition does not change what this exposition shows.
    st.record_failure("connect", "refused", 0.0)
    rest = {f.name: f for f in families}
    assert "specgate_kv_pool_tokens" in rest and "specgate_spec_acceptance_length" in rest


def test_the_view_is_a_copy_not_the_trackers_objects() -> None:
    st = _state()
    v = st.view()
    (sv,) = v.streams
    assert sv.totals is not None and sv.totals.drafts == 522  # the ngram capture's drafts (after)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sv.totals.drafts = 0  # type: ignore[misc]
    st.tracker.totals[sv.stream.key].drafts = 1.0
    assert sv.totals.drafts == 522
    (window,) = v.sliding
    assert window.label == "1m" and window.stats[0].acceptance_length == pytest.approx(1 + 1170 / 522)


def test_while_the_engine_is_down_the_view_has_no_windows_and_the_page_no_pool() -> None:
    st = _state()
    st.record_failure("timeout", "timed out", 5.0)
    v = st.view()
    assert v.sliding == () and not v.up
    page = exposition(st)
    assert "specgate_kv_pool_tokens" not in page and "specgate_spec_drafts_total" in page  # counters stay


def test_log_lines_carry_no_engine_credentials(caplog: pytest.LogCaptureFixture) -> None:
    """The sidecar's own log lines (engine up/down) go through exporter.redact: no user info, no query."""
    from exporter.server import Sidecar

    settings = ExporterSettings(engine_url="http://user:s3cret@127.0.0.1:9/metrics?token=abc", listen="127.0.0.1:0",
                                scrape_timeout=0.5)
    car = Sidecar(settings)
    try:
        with caplog.at_level("INFO", logger="exporter.server"):
            car.scrape_once()  # port 9 (discard) on loopback: nobody listens, the engine is down
    finally:
        car.httpd.server_close()
    assert caplog.records and caplog.records[0].name == "exporter.server"
    assert "engine down" in caplog.text
    assert "s3cret" not in caplog.text and "token=abc" not in caplog.text
