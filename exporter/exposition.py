"""The classic text exposition of our metric families, byte for byte what `generate_latest` writes.

Why not `prometheus_client.generate_latest`: it validates and escapes every metric and label
name on every sample (names that are ours and fixed) and formats labels through several calls
per sample; on a 32-stream page that was over half of a scrape cycle (bench/exporter.py). This
writes the same bytes — the test (tests/exporter/test_hardening_exposition.py) compares both on
the golden scenarios and on generated families — for the families the collector yields:
counter, gauge, histogram, info, untyped (OpenMetrics-only `_created`/`_gsum`/`_gcount` samples
are moved after their family, as `generate_latest` does). Names must be valid legacy names
(they are: exporter.names); label values are escaped like prometheus_client does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

_TYPE = {"counter": "counter", "gauge": "gauge", "histogram": "histogram", "summary": "summary",
         "info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped",
         "untyped": "untyped"}
_SUFFIX = {"counter": "_total", "info": "_info"}
_OM_SUFFIXES = ("_created", "_gsum", "_gcount")


def go_float(d: float) -> str:
    """`prometheus_client.utils.floatToGoString`, inlined."""
    d = float(d)
    if d == math.inf:
        return "+Inf"
    if d == -math.inf:
        return "-Inf"
    if d != d:
        return "NaN"
    s = repr(d)
    dot = s.find(".")
    if d > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return s


def _esc(v: str) -> str:
    if "\\" in v or "\n" in v or '"' in v:
        return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return v


def _line(name: str, labels: dict[str, str], value: float, timestamp: object) -> str:
    if labels:
        lab = "{" + ",".join([f'{k}="{_esc(v)}"' for k, v in sorted(labels.items())]) + "}"
    else:
        lab = ""
    ts = f" {int(float(timestamp) * 1000):d}" if timestamp is not None else ""  # type: ignore[arg-type]
    return f"{name}{lab} {go_float(value)}{ts}\n"


def render_families(metrics: Iterable[Metric]) -> bytes:
    """The text exposition (version 0.0.4) of `metrics`, as `generate_latest` would write it."""
    out: list[str] = []
    for m in metrics:
        mname = m.name + _SUFFIX.get(m.type, "")
        doc = m.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {mname} {doc}\n# TYPE {mname} {_TYPE.get(m.type, m.type)}\n")
        om: dict[str, list[str]] = {}
        for s in m.samples:
            name = s.name
            if name.endswith(_OM_SUFFIXES) and name[len(m.name):] in _OM_SUFFIXES and name.startswith(m.name):
                om.setdefault(name[len(m.name):], []).append(_line(name, s.labels, s.value, s.timestamp))
                continue
            out.append(_line(name, s.labels, s.value, s.timestamp))
        for suffix, lines in sorted(om.items()):
            out.append(f"# HELP {m.name + suffix} {doc}\n# TYPE {m.name + suffix} gauge\n")
            out.extend(lines)
    return "".join(out).encode("utf-8")


def render(registry: Collector) -> bytes:
    """`generate_latest(registry)`, faster (see the module docstring)."""
    return render_families(registry.collect())
