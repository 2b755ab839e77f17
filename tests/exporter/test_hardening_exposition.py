"""`exporter.exposition.ExpositionWriter` writes exactly what `prometheus_client.generate_latest` writes
for the same series (issue 14, item 8: the speed of a scrape cycle; the goldens pin the bytes).

Compared on the real captures played through the exporter, and on generated rows: every kind the
collector builds (gauge, counter, histogram), label values with escapes and non-ASCII text, values
Go formats differently from Python (1e6 and up), NaN and infinities, ints.
"""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from exporter.exposition import ExpositionWriter, FamilyRows, HistogramRows, go_float
from exporter.names import Family
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


class ListCollector:
    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self):
        return iter(self.families)

    def describe(self):
        return []


def registry(families: list) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(ListCollector(families))
    return reg


def test_real_captures_through_the_exporter_render_the_same_bytes():
    from exporter.collect import SpecgateExposition
    from exporter.state import ExporterState
    from tests.exporter.oracle import registry_for

    for before, after in [("vllm/metrics-ngram-before.txt", "vllm/metrics-ngram-after.txt"),
                          ("sglang/sglang-0.5.23-before.txt", "sglang/sglang-0.5.23-after.txt"),
                          ("vllm/metrics-ngram-after.txt", "vllm/metrics-draftself-after.txt")]:
        state = ExporterState.from_settings(ExporterSettings(windows=[30.0, 60.0], min_drafts=1), started_at=0.0)
        for i, name in enumerate((before, after)):
            state.record_success(snapshot_from_text((FIXTURES / name).read_text(), timestamp=100.0 + 45 * i), 0.004)
        reg = registry_for(state)
        assert SpecgateExposition(state).render() == generate_latest(reg)  # what the sidecar serves


label_values = st.text(alphabet=st.sampled_from(list('ab09 _-.:,={}#"\\\n\tµ✓<')), max_size=10)
values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**16, 10**16),
                   st.sampled_from([1e6, 999999.0, 1234567.0, 1.5e21, 0.1, -1e7, 2**53]))
label_names = st.lists(st.sampled_from(["model", "engine", "rank", "window", "pool", "position", "reason"]),
                       unique=True, max_size=4)


def test_go_float_matches_prometheus_client():
    from prometheus_client.utils import floatToGoString

    for v in (0.0, -0.0, 1.0, 522.0, 1e6, 1234567.0, 1.7959585353645682e9, 1e-300, 5e-324, -1e7, math.inf,
              -math.inf, math.nan, 0.1, 2**63):
        assert go_float(v) == floatToGoString(v)


@st.composite
def rows(draw):
    """Our own rows (`exporter.exposition.FamilyRows` / `HistogramRows`), as the collector builds them."""
    kind = draw(st.sampled_from(["gauge", "counter", "histogram"]))
    names = tuple(draw(label_names))
    fam = Family("specgate_" + draw(st.sampled_from(["a", "b_x", "c_seconds"])), kind,
                 draw(st.text(alphabet=st.sampled_from(list("ab \\\n✓")), max_size=8)), names)
    if kind == "histogram":
        out = HistogramRows(fam)
        for _ in range(draw(st.integers(0, 2))):
            bounds = sorted(set(draw(st.lists(st.floats(0.001, 1e7), min_size=1, max_size=4))))
            buckets = [(go_float(b), float(i)) for i, b in enumerate(bounds)] + [("+Inf", float(len(bounds)))]
            out.add_metric([draw(label_values) for _ in names], buckets, draw(values))
        return out
    out = FamilyRows(fam)
    for _ in range(draw(st.integers(0, 4))):
        out.add_metric([draw(label_values) for _ in names], draw(values))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fams=st.lists(rows(), max_size=5))
def test_the_writer_writes_what_generate_latest_writes_for_the_same_rows(fams: list):
    """The sidecar writes rows straight to text; the registry hands prometheus_client the same rows as
    its families (`to_metric`). Both must give the same bytes, twice over with one kept writer (its
    remembered label texts must not change a byte)."""
    writer = ExpositionWriter()
    expected = generate_latest(registry([f.to_metric() for f in fams]))
    assert writer.write(fams) == expected
    assert writer.write(fams) == expected


def test_a_full_label_memory_starts_over_without_changing_a_byte():
    fam = FamilyRows(Family("specgate_a", "gauge", "h", ("model", "rank")))
    for i in range(50):
        fam.add_metric([f"m{i}", "0"], float(i))
    writer = ExpositionWriter(label_texts=8)
    expected = generate_latest(registry([fam.to_metric()]))
    assert writer.write([fam]) == expected == writer.write([fam])
    assert writer._size <= 8 and sum(len(lines) for _, _, lines in writer._families.values()) <= 8
