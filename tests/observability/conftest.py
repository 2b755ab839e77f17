"""Fixtures for the observability tests: the pinned Prometheus binaries from tools/install_prometheus.sh."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.observability.sources import find_tool


def _tool(name: str) -> Path:
    path = find_tool(name)
    if path is None:
        pytest.fail(f"{name} not found on PATH or in .tools/bin: run `make tools` "
                    "(tools/install_prometheus.sh, tools/install_alertmanager.sh .tools/bin)")
    return path.resolve()  # the processes run in their own temp dirs: PATH may name .tools/bin relatively


@pytest.fixture(scope="session")
def promtool() -> Path:
    return _tool("promtool")


@pytest.fixture(scope="session")
def prometheus_bin() -> Path:
    return _tool("prometheus")


@pytest.fixture(scope="session")
def alertmanager_bin() -> Path:
    """Debian's Alertmanager 0.25 (tools/install_alertmanager.sh)."""
    return _tool("alertmanager")


@pytest.fixture(scope="session")
def live_stack(prometheus_bin: Path, alertmanager_bin: Path, tmp_path_factory: pytest.TempPathFactory):
    """Alertmanager <- Prometheus <- specgate exporter <- replay engine, played to the end of the scenario.

    Yields after the scenario (ngram arm, then the random-draft arm) has played and the last windows have
    aged out of the 5s burn window, so tests read history with range queries. Stopped by PID.
    """
    import time

    from tests.observability.live_stack import start_stack

    stack = start_stack(tmp_path_factory.mktemp("prometheus-live"), prometheus_bin, step_seconds=8.0,
                        alertmanager_bin=alertmanager_bin)
    try:
        while time.time() < stack.scenario_end + 15:
            for p in stack.processes:
                if p.proc.poll() is not None:
                    pytest.fail(f"{p.name} exited early\n{stack.logs()}")
            time.sleep(0.5)
        stack.finished = time.time()
        yield stack
    finally:
        for p in reversed(stack.processes):
            p.stop()
        if stack.webhook is not None:
            stack.webhook.stop()
