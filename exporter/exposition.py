"""The classic text exposition of our families, byte for byte what `generate_latest` writes for them.

Why not `prometheus_client.generate_latest`: it validates and escapes every metric and label
name on every sample (names that are ours and fixed) and formats labels through several calls
per sample; on a 32-stream page that was over half of a scrape cycle (bench/exporter.py). The
collectors build rows (`FamilyRows`, `HistogramRows`: gauge, counter, histogram — the kinds of
`exporter.names`), an `ExpositionWriter` writes them; `to_metric()` gives the same series as
prometheus_client families, and the tests (tests/exporter/test_hardening_exposition.py) want
`generate_latest` of those to be the writer's bytes, on the real captures and on generated rows.
Names must be valid legacy names (they are: exporter.names); label values are escaped like
prometheus_client does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from exporter.names import Family

if TYPE_CHECKING:  # prometheus_client is imported by to_metric() only: the sidecar's scrape cycle never needs it
    from prometheus_client.core import Metric

_SPECIAL = {"inf": "+Inf", "-inf": "-Inf", "nan": "NaN"}


def go_float(d: float) -> str:
    """`prometheus_client.utils.floatToGoString`, inlined (tests/exporter/test_hardening_exposition.py
    compares the two): Python's repr, with Go's names for the infinities and NaN, and Go's switch to
    an exponent for positive numbers of 8 or more integer digits."""
    s = repr(d) if type(d) is float else repr(float(d))
    dot = s.find(".")
    if dot > 6 and s[0] != "-":
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    if dot < 0:  # "1e+16", or inf / nan
        return _SPECIAL.get(s, s)
    return s


def _esc(v: str) -> str:
    if "\\" in v or "\n" in v or '"' in v:
        return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return v


LABEL_TEXTS = 16_384  # label texts an ExpositionWriter remembers between renders (then it starts over)


class FamilyRows:
    """One gauge or counter family as the collector builds it: label values and a value per series.

    The cheap form of a prometheus_client family (`add_metric` takes the same arguments): the
    sidecar's `/metrics` writes rows straight to text (`ExpositionWriter`), and `to_metric()` gives
    the prometheus_client family for a registry's `collect()` — the same series, so `generate_latest`
    of the registry is the writer's bytes (tests/exporter/test_hardening_exposition.py).
    """

    __slots__ = ("family", "rows")

    def __init__(self, family: Family) -> None:
        self.family = family
        self.rows: list[tuple[tuple[str, ...], float]] = []

    def add_metric(self, labels: Sequence[str], value: float) -> None:
        self.rows.append((labels if type(labels) is tuple else tuple(labels), value))

    def to_metric(self) -> Metric:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        f = self.family
        m = (CounterMetricFamily if f.kind == "counter" else GaugeMetricFamily)(f.name, f.help, labels=list(f.labels))
        for labels, value in self.rows:
            m.add_metric(labels, value)
        return m


class HistogramRows:
    """One histogram family as the collector builds it: label values, (bound, cumulative count) buckets
    and the sum per series (prometheus_client's `HistogramMetricFamily.add_metric` arguments)."""

    __slots__ = ("family", "rows")

    def __init__(self, family: Family) -> None:
        self.family = family
        self.rows: list[tuple[tuple[str, ...], tuple[tuple[str, float], ...], float | None]] = []

    def add_metric(self, labels: Sequence[str], buckets: Sequence[tuple[str, float]], sum_value: float | None) -> None:
        self.rows.append((tuple(labels), tuple(buckets), sum_value))

    def to_metric(self) -> Metric:
        from prometheus_client.core import HistogramMetricFamily

        f = self.family
        m = HistogramMetricFamily(f.name, f.help, labels=list(f.labels))
        for labels, buckets, sum_value in self.rows:
            m.add_metric(labels, list(buckets), sum_value)
        return m


class ExpositionWriter:
    """Writes our families' rows as the text exposition, the bytes `generate_latest` writes for them.

    Label sets repeat on every render (the same streams, windows and positions), so each label text
    is built once and remembered (at most `LABEL_TEXTS`, then it starts over); HELP/TYPE headers too.
    Safe to share between the HTTP server's threads: a cache miss only builds a text again.
    """

    def __init__(self, label_texts: int = LABEL_TEXTS) -> None:
        self._max = label_texts
        self._labels: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
        self._heads: dict[int, tuple[Family, str]] = {}  # by the family's identity (hashing one hashes every field)

    def _label_text(self, names: tuple[str, ...], values: tuple[str, ...]) -> str:
        key = (names, values)
        text = self._labels.get(key)
        if text is None:
            pairs = sorted(dict(zip(names, values, strict=True)).items())
            text = "{" + ",".join([f'{k}="{_esc(v)}"' for k, v in pairs]) + "}" if pairs else ""
            if len(self._labels) >= self._max:
                self._labels.clear()
            self._labels[key] = text
        return text

    def _head(self, f: Family) -> str:
        got = self._heads.get(id(f))
        if got is not None and got[0] is f:
            return got[1]
        mname = f.name + ("_total" if f.kind == "counter" else "")
        doc = f.help.replace("\\", r"\\").replace("\n", r"\n")
        head = f"# HELP {mname} {doc}\n# TYPE {mname} {f.kind}\n"
        if len(self._heads) >= self._max:
            self._heads.clear()
        self._heads[id(f)] = (f, head)
        return head

    def write(self, families: Iterable[FamilyRows | HistogramRows]) -> bytes:
        out: list[str] = []
        append, texts, label_text, fmt = out.append, self._labels, self._label_text, go_float
        for fam in families:
            f = fam.family
            names = f.labels
            append(self._head(f))
            if isinstance(fam, HistogramRows):
                bucket_names = (*names, "le")
                bucket, count, total = f.name + "_bucket", f.name + "_count", f.name + "_sum"
                for labels, buckets, sum_value in fam.rows:
                    for b, v in buckets:
                        key = (bucket_names, (*labels, b))
                        text = texts.get(key) or label_text(*key)
                        append(f"{bucket}{text} {fmt(v)}\n")
                    if buckets and float(buckets[0][0]) >= 0 and sum_value is not None:  # as add_metric does
                        text = texts.get((names, labels)) or label_text(names, labels)
                        append(f"{count}{text} {fmt(buckets[-1][1])}\n{total}{text} {fmt(sum_value)}\n")
                continue
            name = f.name + ("_total" if f.kind == "counter" else "")
            for labels, value in fam.rows:
                append(f"{name}{texts.get((names, labels)) or label_text(names, labels)} {fmt(value)}\n")
        return "".join(out).encode("utf-8")
