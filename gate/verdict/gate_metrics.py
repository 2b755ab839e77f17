"""The gate's own series: `specgate_gate_decisions_total{deployment,decision}` and
`specgate_gate_line_status{deployment,line,status}` (names from `exporter.names`).

Why a custom collector owned by one server or controller (no module-level registry): two
gates in one process — as in tests — never share counts, and the label values, which come
from callers, are bounded (MAX_DEPLOYMENTS; the rest count as `other`) and cut at MAX_LABEL_CHARS.

    specgate_gate_decisions_total{decision="pass",deployment="qwen"} 3.0
    specgate_gate_line_status{deployment="qwen",line="kv_pool",status="pass"} 1.0
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from exporter import names
from gate.verdict.answer import GateAnswer


class GateMetrics:
    """Counts answers per deployment and decision; keeps each deployment's last line statuses."""

    MAX_DEPLOYMENTS = 256  # label values come from callers: bound the series count
    MAX_LABEL_CHARS = 128  # and each value's length (Kubernetes names are at most 63 or 253 characters)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._decisions: dict[tuple[str, str], int] = {}
        self._lines: dict[str, dict[str, str]] = {}
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def record(self, deployment: str, decision: str, lines: dict[str, str]) -> None:
        with self._lock:
            if len(deployment) > self.MAX_LABEL_CHARS:  # a caller's value: bounded in length too
                deployment = deployment[: self.MAX_LABEL_CHARS - 1] + "…"
            if deployment not in self._lines and len(self._lines) >= self.MAX_DEPLOYMENTS:
                deployment = "other"
            key = (deployment, decision)
            self._decisions[key] = self._decisions.get(key, 0) + 1
            self._lines[deployment] = dict(lines)

    def record_answer(self, deployment: str, answer: GateAnswer) -> None:
        self.record(deployment, answer.decision.value, answer.line_statuses())

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            decisions = dict(self._decisions)
            lines = {d: dict(v) for d, v in self._lines.items()}
        fam = names.GATE_DECISIONS
        counter = CounterMetricFamily(fam.name, fam.help, labels=list(fam.labels))
        for (dep, dec), n in sorted(decisions.items()):
            counter.add_metric([dep, dec], n)
        yield counter
        fam = names.GATE_LINE_STATUS
        gauge = GaugeMetricFamily(fam.name, fam.help, labels=list(fam.labels))
        for dep, per_line in sorted(lines.items()):
            for line, status in sorted(per_line.items()):
                gauge.add_metric([dep, line, status], 1)
        yield gauge

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
