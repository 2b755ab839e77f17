"""The tests' prometheus_client oracle: what the exporter's own writer and parser are compared against.

Why here and not in exporter/: the sidecar writes `/metrics` with `exporter.exposition.ExpositionWriter`
and parses pages with `exporter.parse`; prometheus_client's collector protocol and a second reading of
metric names are needed only to check those against prometheus_client (`generate_latest`,
`text_string_to_metric_families`), never to serve a scrape.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from exporter.collect import families
from exporter.state import ExporterState

# How the engines prefix their metric names (vLLM `vllm:`, SGLang `sglang:`; `_` in older releases).
ENGINE_PREFIXES: tuple[str, ...] = ("vllm:", "vllm_", "sglang:", "sglang_")


def split_prefix(name: str) -> tuple[str | None, str]:
    """`vllm:foo` -> ("vllm", "foo"); `sglang_foo` -> ("sglang", "foo"); other -> (None, name)."""
    for p in ENGINE_PREFIXES:
        if name.startswith(p):
            return p[:-1], name[len(p):]
    return None, name


class SpecgateCollector:
    """prometheus_client custom collector over an `ExporterState`: the exporter's rows as prometheus_client
    families (`Rows.to_metric`), one view per collect."""

    def __init__(self, state: ExporterState) -> None:
        self.state = state

    def describe(self) -> list[Metric]:
        return []  # unchecked collector: families vary with what the engine reports

    def collect(self) -> Iterator[Metric]:
        for rows in families(self.state.view()):
            yield rows.to_metric()


def registry_for(state: ExporterState) -> CollectorRegistry:
    """A private registry holding only our collector (no process/python collectors: output is exact)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(SpecgateCollector(state))
    return reg
