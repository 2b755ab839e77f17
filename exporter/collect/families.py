"""Building blocks shared by the exposition areas: families from `exporter.names`, label values.

Families are created fresh on every `collect()` (prometheus_client's custom-collector pattern), from
the contract's `Family` so a name, HELP text or label set has one address. They are
`exporter.exposition` rows (the cheap form of prometheus_client's families, with the same `add_metric`):
the sidecar writes them straight to text, and the registry's collector turns them into
prometheus_client families.
"""

from __future__ import annotations

from collections.abc import Iterator

from exporter.exposition import FamilyRows, HistogramRows
from exporter.names import Family
from exporter.state import label_value

Rows = FamilyRows | HistogramRows


def gauge(f: Family) -> FamilyRows:
    return FamilyRows(f)


def counter(f: Family) -> FamilyRows:
    return FamilyRows(f)


def histogram(f: Family) -> HistogramRows:
    return HistogramRows(f)


def stream_labels(model: str | None, engine: str, rank: str | None) -> tuple[str, str, str]:
    """Values for `names.STREAM_LABELS` (model, engine, rank)."""
    return (label_value(model), engine, label_value(rank))


def bound(b: float) -> str:
    """A histogram bucket bound as exposed (`+Inf`, `2.0`)."""
    return "+Inf" if b == float("inf") else repr(float(b))


def non_empty(*fams: Rows) -> Iterator[Rows]:
    """Only families with samples: a series whose source is missing is absent, never 0."""
    for fam in fams:
        if fam.rows:
            yield fam
