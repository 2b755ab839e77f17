"""Building blocks shared by the exposition areas: families from `exporter.names`, label values.

Families are created fresh on every `collect()` (prometheus_client's custom-collector pattern), from
the contract's `Family` so a name, HELP text or label set has one address.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from exporter.names import Family
from exporter.state import label_value


def gauge(f: Family) -> GaugeMetricFamily:
    return GaugeMetricFamily(f.name, f.help, labels=list(f.labels))


def counter(f: Family) -> CounterMetricFamily:
    return CounterMetricFamily(f.name, f.help, labels=list(f.labels))


def histogram(f: Family) -> HistogramMetricFamily:
    return HistogramMetricFamily(f.name, f.help, labels=list(f.labels))


def stream_labels(model: str | None, engine: str, rank: str | None) -> list[str]:
    """Values for `names.STREAM_LABELS` (model, engine, rank)."""
    return [label_value(model), engine, label_value(rank)]


def bound(b: float) -> str:
    """A histogram bucket bound as exposed (`+Inf`, `2.0`)."""
    return "+Inf" if b == float("inf") else repr(float(b))


def non_empty(*fams: Metric) -> Iterator[Metric]:
    """Only families with samples: a series whose source is missing is absent, never 0."""
    for fam in fams:
        if fam.samples:
            yield fam
