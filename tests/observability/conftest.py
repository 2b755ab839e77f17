"""Fixtures for the observability tests: the pinned Prometheus binaries from tools/install_prometheus.sh."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.observability.sources import find_tool


def _tool(name: str) -> Path:
    path = find_tool(name)
    if path is None:
        pytest.fail(f"{name} not found on PATH or in .tools/bin: run `make tools` "
                    "(tools/install_prometheus.sh .tools/bin)")
    return path


@pytest.fixture(scope="session")
def promtool() -> Path:
    return _tool("promtool")


@pytest.fixture(scope="session")
def prometheus_bin() -> Path:
    return _tool("prometheus")
