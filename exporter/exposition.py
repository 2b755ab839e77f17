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
from math import copysign
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


def _zeros(fam: FamilyRows | HistogramRows) -> tuple[tuple[int, int], ...] | None:
    """Where `fam`'s values are zero, as (row, bucket) with bucket -1 for a histogram's sum; None when one
    of them is -0.0.

    A family's remembered text is reused when its rows compare equal to the ones it was written from;
    `==` on floats holds `-0.0 == 0.0`, which are written differently ("-0.0"). Equal values other than
    zeros are the same float, so only the zeros' signs are looked at again (`_zeros_clear`), and a text
    with "-0.0" in it is not remembered at all."""
    out: list[tuple[int, int]] = []
    if isinstance(fam, HistogramRows):
        for i, (_, buckets, sum_value) in enumerate(fam.rows):
            out.extend((i, j) for j, (_, v) in enumerate(buckets) if v == 0)
            if sum_value is not None and sum_value == 0:
                out.append((i, -1))
    else:
        out.extend((i, 1) for i, (_, v) in enumerate(fam.rows) if v == 0)
    return tuple(out) if _zeros_clear(fam, out) else None


def _zeros_clear(fam: FamilyRows | HistogramRows, zeros: Iterable[tuple[int, int]]) -> bool:
    """The values at `zeros` (from `_zeros`) have their sign bit clear: 0.0 (or 0), not -0.0."""
    if isinstance(fam, HistogramRows):
        hrows = fam.rows
        for i, j in zeros:
            v = hrows[i][2] if j < 0 else hrows[i][1][j][1]  # the sum (never None where `_zeros` saw a zero)
            if v is None or copysign(1.0, v) < 0.0:
                return False
        return True
    rows = fam.rows
    return all(copysign(1.0, rows[i][1]) > 0.0 for i, _ in zeros)


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

    Label sets repeat on every render (the same streams, windows and positions), so each line's text up
    to its value (`name{labels} `) is built once and remembered per family, keyed by the row's label
    values alone (a histogram's bucket lines by their bound text under the series' entry): a render then
    costs one look-up, one value text and one join per line. At most `LABEL_TEXTS` lines are remembered,
    then it starts over; HELP/TYPE headers too. Safe to share between the HTTP server's threads: a cache
    miss only builds a text again, and starting over swaps in new dicts.

    A family whose rows are the same as at the last two renders (info gauges, pools, settings-derived
    series, the batch windows' histogram between closes, counters without traffic) is written as the
    text it had then, HELP and TYPE included (`_texts`, one entry per family, kept only while the
    family's lines are all remembered, forgotten with them): only families with moving values are
    formatted, and a family that moved last time pays one comparison and a copy of its rows, not a
    copy of its text. Rows are equal by `==` and the zeros are 0.0 on both sides (`_zeros`), so a
    reused text is byte for byte the one the rows would be written as.
    """

    def __init__(self, label_texts: int = LABEL_TEXTS) -> None:
        self._max = label_texts
        self._size = 0  # lines remembered, over every family
        # by the family's identity (hashing one hashes every field): (family, head, its lines by label values)
        self._families: dict[int, tuple[Family, str, dict]] = {}
        # by the family's identity, as `_families`: (family, its rows at the last render, its text's pieces and
        # where its zeros are when those rows were also the render's before; None until the rows stay the same)
        self._texts: dict[int, tuple[Family, list, tuple[list[str], tuple[tuple[int, int], ...]] | None]] = {}

    def _label_text(self, names: tuple[str, ...], values: tuple[str, ...]) -> str:
        pairs = sorted(dict(zip(names, values, strict=True)).items())
        return "{" + ",".join([f'{k}="{_esc(v)}"' for k, v in pairs]) + "}" if pairs else ""

    def _family(self, f: Family) -> tuple[Family, str, dict]:
        mname = f.name + ("_total" if f.kind == "counter" else "")
        doc = f.help.replace("\\", r"\\").replace("\n", r"\n")
        got: tuple[Family, str, dict] = (f, f"# HELP {mname} {doc}\n# TYPE {mname} {f.kind}\n", {})
        self._remember(1)
        self._families[id(f)] = got
        return got

    def _remember(self, n: int) -> None:
        """Count `n` new lines; past the limit, forget every family's lines (the next render rebuilds them)."""
        self._size += n
        if self._size > self._max:
            self._size = n
            self._families = {}
            self._texts = {}

    def _line(self, lines: dict, f: Family, labels: tuple[str, ...]) -> str:
        text = f"{f.name}{'_total' if f.kind == 'counter' else ''}{self._label_text(f.labels, labels)} "
        self._remember(1)
        lines[labels] = text
        return text

    def _series(self, lines: dict, f: Family, labels: tuple[str, ...]) -> tuple[dict[str, str], str, str]:
        """A histogram series' remembered texts: bucket lines by bound text, the `_count` and `_sum` lines."""
        text = self._label_text(f.labels, labels)
        got: tuple[dict[str, str], str, str] = ({}, f"{f.name}_count{text} ", f"{f.name}_sum{text} ")
        self._remember(2)
        lines[labels] = got
        return got

    def _bucket(self, by_bound: dict[str, str], f: Family, labels: tuple[str, ...], b: str) -> str:
        text = f"{f.name}_bucket{self._label_text((*f.labels, 'le'), (*labels, b))} "
        self._remember(1)
        by_bound[b] = text
        return text

    def write(self, families: Iterable[FamilyRows | HistogramRows]) -> bytes:
        out: list[str] = []
        append, fmt = out.append, go_float
        for fam in families:
            f = fam.family
            seen = self._texts.get(id(f))
            same = seen is not None and seen[0] is f and seen[1] == fam.rows
            if seen is not None and same:
                kept = seen[2]
                if kept is not None and (not kept[1] or _zeros_clear(fam, kept[1])):
                    out += kept[0]
                    continue
            memo = self._families
            got = memo.get(id(f))
            if got is None or got[0] is not f:
                got = self._family(f)
            _, head, lines = got
            start = len(out)
            append(head)
            if isinstance(fam, HistogramRows):
                for labels, buckets, sum_value in fam.rows:
                    series = lines.get(labels) or self._series(lines, f, labels)
                    by_bound = series[0]
                    for b, v in buckets:
                        append(f"{by_bound.get(b) or self._bucket(by_bound, f, labels, b)}{fmt(v)}\n")
                    if buckets and float(buckets[0][0]) >= 0 and sum_value is not None:  # as add_metric does
                        append(f"{series[1]}{fmt(buckets[-1][1])}\n{series[2]}{fmt(sum_value)}\n")
            else:
                get = lines.get
                for labels, value in fam.rows:
                    append(f"{get(labels) or self._line(lines, f, labels)}{fmt(value)}\n")
            if self._families is memo:  # every line of it is remembered: its rows and text count in that bound
                zeros = _zeros(fam) if seen is not None and same else None
                self._texts[id(f)] = (f, seen[1], (out[start:], zeros)) if seen is not None and zeros is not None \
                    else (f, list(fam.rows), None)
        return "".join(out).encode("utf-8")
