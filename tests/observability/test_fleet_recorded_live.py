"""The fleet's recorded path and its raw path give the same verdicts, on a real Prometheus and a real VictoriaMetrics.

A 12-pod fleet (tests/gate/fleet_stack.py: one pod below the SLO, one that restarts in the lookback, one that drafted
nothing) with 90 minutes of history at a 30 s step is loaded into each backend, its per-pod window facts
(deploy/mixin, group specgate.fleet-facts) backfilled with the backend's own tool (tests/observability/fleet_backfill:
promtool tsdb create-blocks-from rules; vmalert -replay's queries and writes), never live rule evaluation. Then the
gate's Prometheus source judges the fleet on each path: every pod's status and the fleet's must be the same, and the
window counts too (within one window on Prometheus, whose backfill evaluates at the group's own offset: `_agree`). A plan whose target the facts were not recorded for falls back to the raw path and says why.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests

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


def _agree(rec: FleetVerdict, raw: FleetVerdict, exact: bool) -> None:
    """Every pod's status the same; windows and met windows equal (`exact`), or within one: promtool evaluates the
    group at its own offset inside each interval, as a live Prometheus does, so a counter's step between two
    samples can fall between two recorded windows (a restart then shows in neither) or inside one."""
    a, b = _by_pod(rec), _by_pod(raw)
    assert a.keys() == b.keys()
    for pod in a:
        assert a[pod][0] == b[pod][0], (pod, a[pod], b[pod])
        if exact:
            assert a[pod] == b[pod], pod
        else:
            assert abs(a[pod][1] - b[pod][1]) <= 1 and abs(a[pod][2] - b[pod][2]) <= 1, (pod, a[pod], b[pod])


def _totals_agree(rec: FleetVerdict, raw: FleetVerdict, exact: bool) -> None:
    """The lookback's totals (the recorded path sums the recorded windows, the raw path reads the counters over the
    lookback): every pod with drafts has a on both paths, equal within 1e-9 (`exact`: the windows tile the lookback)
    or within 2 % (Prometheus' per-window extrapolation); the restarts are the raw counter's on both."""
    a = {r.pod: r.facts.to_json() for r in rec.rows}  # the table's columns
    b = {r.pod: r.facts.to_json() for r in raw.rows}
    rated = [p for p in b if b[p]["acceptance_rate"] is not None]
    assert len(rated) >= 10
    for pod in rated:
        x, y = a[pod]["acceptance_rate"], b[pod]["acceptance_rate"]
        assert x is not None and abs(x - y) <= (1e-9 if exact else 0.02) * y, (pod, x, y)
        assert a[pod]["restarts"] == b[pod]["restarts"], pod
    assert sum(1 for p in rated if b[p]["restarts"]) == 1  # the restarted pod: not vacuous


def test_recorded_and_raw_paths_agree(backend: tuple[str, fleet_stack.Server, fleet_stack.FleetSpec]) -> None:
    name, server, spec = backend
    raw = _verdict(server, spec, "raw")
    rec = _verdict(server, spec, "recorded")
    assert (raw.facts.path, rec.facts.path) == ("raw", "recorded")
    _agree(rec, raw, exact=name == "victoriametrics")  # vmalert -replay's query_range steps are the raw grid
    assert (rec.status, rec.counts) == (raw.status, raw.counts)
    # the verdicts are not vacuous: the bad pod fails, the restarted pod loses its restart window, the silent
    # pod is named inconclusive, the rest pass on 60 windows
    assert [r.pod for r in rec.failed()] == [f"llm/{spec.pod(BAD)}"]
    assert f"llm/{spec.pod(SILENT)}" in [r.pod for r in rec.inconclusive()]
    restarted = next(i for i in range(spec.pods) if spec.restart_step(i) is not None)
    assert _by_pod(raw)[f"llm/{spec.pod(restarted)}"][1] == 59
    assert sum(1 for r in rec.rows if r.status.value == "pass") >= 9
    _totals_agree(rec, raw, exact=name == "victoriametrics")
    assert rec.to_json()["path"] == "recorded"
    if name == "prometheus":  # the rules API lists the group: its interval was checked
        assert "evaluated every 60s" in (rec.facts.path_reason or "")
    # answers of one value per pod: no range query on the recorded path
    auto = _verdict(server, spec, "auto")
    assert auto.facts.path == "recorded" and _by_pod(auto) == _by_pod(rec)


def test_other_target_falls_back_to_raw_and_says_why(
        backend: tuple[str, fleet_stack.Server, fleet_stack.FleetSpec]) -> None:
    _, server, spec = backend
    v = _verdict(server, spec, "auto", target=2.5)
    assert v.facts.path == "raw"
    assert "no recorded facts carry the plan's window, target and min_drafts" in (v.facts.path_reason or "")
    assert v.to_json()["path_reason"] == v.facts.path_reason
    assert [r.pod for r in v.failed()] == [f"llm/{spec.pod(BAD)}"]


def test_the_facts_were_backfilled_not_live_evaluated(
        backend: tuple[str, fleet_stack.Server, fleet_stack.FleetSpec]) -> None:
    """The facts at the start of the lookback exist: written by the backfill (live evaluation starts at now)."""
    _, server, spec = backend
    at = spec.end - 3000

    def count(rule: str) -> float:
        r = requests.get(server.url + "/api/v1/query", params={"query": f"count({rule})", "time": at}, timeout=30)
        r.raise_for_status()
        return float(r.json()["data"]["result"][0]["value"][1])

    assert count("pod:specgate_fleet_window_drafts:increase") == spec.pods - 1  # the silent pod has no drafts
    assert count("pod:specgate_fleet_window_below_target:bool") == 1  # sparse: the bad pod's window alone
