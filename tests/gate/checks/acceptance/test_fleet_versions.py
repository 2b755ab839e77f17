"""A fleet whose pods run two acceptance definitions is not comparable (issue 37 item 3; window_slo.mixed_definitions).

Versions are what `specgate_engine_info{version}` says per pod (gate.evidence.prometheus reads them at the fleet's
end; MetricsEvidence.engine_versions). The adapters' tables today convert every vLLM and SGLang definition exactly
to specgate's L, so a real mixed fleet (vLLM 0.31 and 0.32 pods) stays comparable; the refusal is shown with vLLM's
<= 0.31 row marked inexact (as an engine whose counters specgate could not convert would be), monkeypatched into
`gate.model.invariants.ACCEPTANCE`. The rows are the hand-written facts of test_fleet_judged.py.
"""

from __future__ import annotations

import dataclasses

import pytest

from exporter.engines import ACCEPTANCE
from gate.checks import acceptance
from gate.checks.acceptance.window_slo import mixed_definitions
from gate.evidence.base import MetricsEvidence
from gate.evidence.prometheus import _pod_versions
from gate.model import invariants
from gate.plan.model import PrometheusSource
from gate.status import Status
from tests.gate.checks.acceptance.test_fleet_judged import _plan, _row, _table
from tests.gate.helpers import context


@pytest.fixture
def inexact_031(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = tuple(dataclasses.replace(d, exact=False) if d.high == (0, 31) else d for d in ACCEPTANCE["vllm"])
    monkeypatch.setattr(invariants, "ACCEPTANCE", {**ACCEPTANCE, "vllm": rows})


def _line(versions: dict[str, str]) -> tuple[Status, str]:
    ev = MetricsEvidence(windows=[], errors=[], fleet=_table(_row("a", 10), _row("b", 10)), engine_versions=versions)
    r = acceptance.check(dataclasses.replace(context(_plan(), "post"), metrics=ev))
    return r.values["fleet"]["status"], r.reason


def test_real_tables_keep_a_mixed_vllm_fleet_comparable() -> None:
    assert mixed_definitions("vllm", {"a": "0.31.2", "b": "0.32.0"}) is None
    status, reason = _line({"a": "0.31.2", "b": "0.32.0"})
    assert status == "pass" and "not comparable" not in reason


@pytest.mark.usefixtures("inexact_031")
def test_pods_on_two_definitions_are_not_comparable_naming_both() -> None:
    found = mixed_definitions("vllm", {"b": "0.32.0", "a": "0.31.2", "c": "0.32.1"})
    assert found is not None and found.startswith("not the same deployment: not comparable: pod a (0.31.2)")
    assert "vLLM <= 0.31" in found and "vLLM >= 0.32" in found
    status, reason = _line({"a": "0.31.2", "b": "0.32.0"})
    assert "not comparable" in reason and "fleet pass" in reason
    r = acceptance.check(dataclasses.replace(context(_plan(), "post"), metrics=MetricsEvidence(
        fleet=_table(_row("a", 10), _row("b", 10)), engine_versions={"a": "0.31.2", "b": "0.32.0"})))
    assert r.status is Status.INCONCLUSIVE
    # one version, or versions unknown: nothing to refuse
    assert mixed_definitions("vllm", {"a": "0.31.2", "b": "0.31.2"}) is None
    assert mixed_definitions("vllm", {}) is None


class _Client:
    """Answers the info query as Prometheus' /api/v1/query does (a vector of the exporter's info series)."""

    def __init__(self, result: list[dict[str, object]] | Exception) -> None:
        self.result = result

    def query(self, path: str, params: dict[str, str]) -> object:
        assert path == "/api/v1/query" and params["query"].startswith("specgate_engine_info")
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_versions_are_read_per_pod_from_engine_info() -> None:
    from gate.evidence.base import EvidenceError

    src = PrometheusSource(url="http://p")
    answer = [{"metric": {"__name__": "specgate_engine_info", "engine": "vllm", "version": "0.32.0",
                          "version_tested": "true", "pod": "a"}, "value": [1.0, "1"]},
              {"metric": {"__name__": "specgate_engine_info", "engine": "vllm", "version": "0.31.2",
                          "version_tested": "false", "instance": "10.0.0.2:9479"}, "value": [1.0, "1"]},
              {"metric": {"__name__": "specgate_engine_info", "engine": "vllm", "pod": "c"}, "value": [1.0, "1"]}]
    got = _pod_versions(_Client(answer), src, 1.0, "Prometheus p")  # type: ignore[arg-type]
    assert got == {"a": "0.32.0", "10.0.0.2:9479": "0.31.2"}
    assert _pod_versions(_Client(EvidenceError("down")), src, 1.0, "Prometheus p") == {}  # type: ignore[arg-type]
