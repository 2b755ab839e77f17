"""The fleet's recorded path and its raw path give the same verdicts, on a real Prometheus and a real VictoriaMetrics.

A 12-pod fleet (tests/gate/fleet_stack.py: one pod below the SLO, one that restarts in the lookback, one that drafted
nothing) with 90 minutes of history at a 30 s step is loaded into each backend, its per-pod window facts
(deploy/mixin, group specgate.fleet-facts) backfilled with the backend's own tool (tests/observability/fleet_backfill:
promtool tsdb create-blocks-from rules; vmalert -replay's queries and writes), never live rule evaluation. Then the
gate's Prometheus source judges the fleet twice, on each path, and every pod's status, window counts and the fleet's
status must be the same. A plan whose target the facts were not recorded for falls back to the raw path and says why.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.checks.acceptance.fleet_rule import FleetVerdict, judge_fleet
from gate.evidence import prometheus as prom
from gate.plan.model import SLO, PrometheusSource
from tests.gate import fleet_stack
from tests.observability import fleet_backfill

BAD, SILENT = 3, 7


@pytest.fixture(scope="module", params=["prometheus", "victoriametrics"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[str, fleet_stack.Server, fleet_stack.FleetSpec]]:
    end = int(time.time()) // 60 * 60 - 120
    spec = fleet_stack.FleetSpec(pods=12, end=end, seconds=5400, bad=(BAD,), silent=(SILENT,))
    workdir = tmp_path_factory.mktemp(request.param)
    try:
        server = getattr(fleet_stack, request.param)(spec, workdir)
    except FileNotFoundError as e:
        pytest.fail(f"{e} (tools/install_prometheus.sh, tools/install_victoriametrics.sh)")
    try:
        if request.param == "prometheus":
            server = fleet_backfill.prometheus(server, spec, workdir)
        else:
            fleet_backfill.victoriametrics(server, spec)
        yield request.param, server, spec
    finally:
        server.stop()


def _verdict(server: fleet_stack.Server, spec: fleet_stack.FleetSpec, path: str,
             target: float = 2.0) -> FleetVerdict:
    slo = SLO(target_acceptance_length=target, window_seconds=60, lookback_seconds=3600, min_windows=5,
              required_fraction=0.95)
    src = PrometheusSource(end=spec.end, timeout_seconds=60, fleet={"group_by": ["model"]})
    ev = prom.collect(src, server.url, 60, 3600, min_drafts=1, slo=slo, k=fleet_stack.K, method="draft_model",
                      path=path)
    assert ev.fleet is not None, ev.errors
    return judge_fleet(ev.fleet, slo, src.fleet, require_engine_up=True)


def _by_pod(v: FleetVerdict) -> dict[str, tuple[str, int, int]]:
    return {r.pod: (r.status.value, r.facts.windows, r.facts.met) for r in v.rows}


def test_recorded_and_raw_paths_agree(backend: tuple[str, fleet_stack.Server, fleet_stack.FleetSpec]) -> None:
    name, server, spec = backend
    raw = _verdict(server, spec, "raw")
    rec = _verdict(server, spec, "recorded")
    assert (raw.facts.path, rec.facts.path) == ("raw", "recorded")
    assert _by_pod(rec) == _by_pod(raw)
    assert (rec.status, rec.counts) == (raw.status, raw.counts)
    # the verdicts are not vacuous: the bad pod fails, the restarted pod loses its restart window, the silent
    # pod is named inconclusive, the rest pass on 60 windows
    assert [r.pod for r in rec.failed()] == [f"llm/{spec.pod(BAD)}"]
    assert f"llm/{spec.pod(SILENT)}" in [r.pod for r in rec.inconclusive()]
    restarted = next(i for i in range(spec.pods) if spec.restart_step(i) is not None)
    assert _by_pod(rec)[f"llm/{spec.pod(restarted)}"][1] < 60
    assert sum(1 for r in rec.rows if r.status.value == "pass") >= 9
    assert rec.to_json()["path"] == "recorded"
    if name == "prometheus":  # the rules API lists the group: its interval was checked
        assert "evaluated every 60s" in (rec.facts.path_reason or "")
    # answers of one value per pod: no range query on the recorded path
    auto = _verdict(server, spec, "auto")
    assert auto.facts.path == "recorded" and _by_pod(auto) == _by_pod(raw)


def test_other_target_falls_back_to_raw_and_says_why(
        backend: tuple[str, fleet_stack.Server, fleet_stack.FleetSpec]) -> None:
    _, server, spec = backend
    v = _verdict(server, spec, "auto", target=2.5)
    assert v.facts.path == "raw"
    assert "no recorded facts carry the plan's window, target and min_drafts" in (v.facts.path_reason or "")
    assert v.to_json()["path_reason"] == v.facts.path_reason
    assert [r.pod for r in v.failed()] == [f"llm/{spec.pod(BAD)}"]


def test_promtool_wrote_the_facts_not_live_evaluation(
        backend: tuple[str, fleet_stack.Server, fleet_stack.FleetSpec], tmp_path: Path) -> None:
    """The facts at the start of the lookback exist: written by the backfill (live evaluation starts at now)."""
    _, server, spec = backend
    import requests

    at = spec.end - 3000
    r = requests.get(server.url + "/api/v1/query", params={
        "query": "count(pod:specgate_fleet_window_eligible:bool)", "time": at}, timeout=30)
    r.raise_for_status()
    assert float(r.json()["data"]["result"][0]["value"][1]) == spec.pods - 1  # the silent pod has no drafts
