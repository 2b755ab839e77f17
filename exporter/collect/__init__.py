"""The specgate_* exposition: a prometheus_client custom Collector over a frozen `ExporterView`.

`SpecgateExposition.render()` takes one view under the state's lock (`ExporterState.view`) and
writes its families outside it, area by area; each area's module shows an example of its output:

- `engine_health.exporter_level`: engine up, scrape duration/errors, info, ready, configured gauges
- `pools`: KV pool allocated/configured, context cap, usage, running/waiting requests
- `spec_counters`: drafts, proposed, accepted, accepted per position (monotonic)
- `depth`: the configured maximum depth, SGLang's current steps / draft tokens, the declared schedule's k
- `batch_windows`: the per-window acceptance histogram and SLO window counters
- `engine_health.per_stream`: restarts and preemptions per stream
- `sliding_windows`: windowed gauges (L, a, p_i with its basis, TTFT quantiles, decode rate, verify cycle,
  mean depth, whether the depth varied)
- `card`: the drafter's acceptance card in the exporter's definition, beside the live rates (only with a card)

That order is the order of the exposition (the goldens in tests/golden pin it byte for byte).
The areas build `exporter.exposition` rows; the sidecar's `/metrics` writes them with one kept
`ExpositionWriter` (`SpecgateExposition`). The same rows as prometheus_client families
(`Rows.to_metric`) are the tests' oracle: `tests/exporter/oracle.py` registers them with a
prometheus_client registry, whose `generate_latest` must write the same bytes.
Names, types and labels come from `exporter.names` (design.md "Exporter output"). Series whose
source is missing are absent, never 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from exporter.collect import batch_windows, card, depth, engine_health, pools, sliding_windows, spec_counters
from exporter.collect.families import Rows
from exporter.engines.base import EngineSnapshot
from exporter.exposition import ExpositionWriter
from exporter.settings import ExporterSettings
from exporter.state import ExporterState, ExporterView


class SpecgateExposition:
    """The sidecar's `/metrics` body: one view of the state, written by a kept `ExpositionWriter`."""

    def __init__(self, state: ExporterState) -> None:
        self.state = state
        self.writer = ExpositionWriter()

    def render(self) -> bytes:
        return self.writer.write(families(self.state.view()))


def families(v: ExporterView) -> Iterator[Rows]:
    """Every family of one view, in exposition order."""
    yield from engine_health.exporter_level(v)
    if v.latest is None:
        return
    yield from pools.families(v)
    yield from spec_counters.families(v)
    yield from depth.families(v)
    yield from batch_windows.families(v)
    yield from engine_health.per_stream(v)
    yield from sliding_windows.families(v)
    yield from card.families(v)


def exposition(state: ExporterState) -> str:
    return SpecgateExposition(state).render().decode("utf-8")


def exposition_of_snapshot(snap: EngineSnapshot, settings: ExporterSettings | None = None) -> str:
    """The specgate_* text of a single scrape (`specgate exporter once --format prom`): no scrape
    duration or ready time, which a file or a single fetch cannot tell."""
    st = ExporterState.from_settings(settings or ExporterSettings(), started_at=0.0)
    st.record_success(snap, 0.0)
    with st.lock:
        st.scrape_duration = None
        st.ready_seconds = None
    return exposition(st)
