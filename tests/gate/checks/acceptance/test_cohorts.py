"""Canary against stable in --phase post (gate.evidence.fleet.cohorts, gate.checks.acceptance.cohorts; issue 11 item 4).

The statistic on synthetic samples with exact p-values (5 vs 5 pod-windows: 1/C(10,5) = 1/252 when
every canary sample is faster, 2/252 with one inversion), then the whole path against a real
Prometheus 2.42: the synthetic fleet of tests/gate/fleet_stack.py (backfilled by promtool) with the
exporter's TPOT, generated-tokens and running-requests gauges added, one namespace per scenario —
canary faster (pass), canary slower (fail, both speeds named), a load mismatch and too few windows
or no stable data (inconclusive) — through `evaluate` and through `specgate serve`'s Argo endpoint.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from exporter import names
from gate.checks.acceptance import cohorts as cohort_check
from gate.evidence.fleet.cohorts import CohortEvidence, CohortSamples
from gate.plan.model import plan_from_dict
from gate.status import Status
from gate.verdict.evaluate import evaluate, service_evaluator
from gate.webhook import GateConfig, make_server
from tests.gate import fleet_stack
from tests.gate.helpers import tiny_plan

MODEL = fleet_stack.MODELS[0]
# scenario -> (canary TPOT s, stable TPOT s, canary running, stable running); 4 pods per cohort each
SCENARIOS: dict[str, tuple[float, float, float, float]] = {
    "faster": (0.020, 0.025, 8.0, 8.0),
    "slower": (0.030, 0.025, 8.0, 8.0),
    "load": (0.020, 0.025, 2.0, 8.0),
}
PER_COHORT = 4


def _plan(namespace: str, stable: str | None = 'drafter_revision="r0"', url: str = "http://127.0.0.1:1",
          end: float | None = None, **slo: Any) -> dict[str, Any]:
    data = tiny_plan("draft")
    data["engine"]["served_model_name"] = MODEL
    data["slo"].update({"window_seconds": 60, "lookback_seconds": 3600, "min_windows": 5, "required_fraction": 0.9,
                        **slo})
    cohorts: dict[str, Any] = {"canary": 'drafter_revision="r1"'}
    if stable is not None:
        cohorts["stable"] = stable
    data["evidence"] = {"prometheus": {"url": url, "end": end, "selector": f'namespace="{namespace}"',
                                       "cohorts": cohorts}}
    return data


# --- the statistic, exactly ---------------------------------------------------------------------------------

def _evidence(canary_tpot: list[float], stable_tpot: list[float], canary_rate: list[float],
              stable_rate: list[float], canary_running: list[float], stable_running: list[float]) -> CohortEvidence:
    ev = CohortEvidence("Prometheus test", 60, "1m", 300, 0.0)
    ev.cohorts["canary"] = CohortSamples("canary", "{c}", canary_tpot, canary_rate, canary_running, ["a"], 100, 200)
    ev.cohorts["stable"] = CohortSamples("stable", "{s}", stable_tpot, stable_rate, stable_running, ["b"], 100, 150)
    return ev


def _judge(plan: Any, phase: str, ev: CohortEvidence | None) -> tuple[list[Status], list[str], dict[str, Any] | None]:
    """The sub-check's Finding as (statuses, sentences, its `cohorts` values)."""
    f = cohort_check.judge(plan, phase, ev)
    return ([f.status] if f.status else []), ([f.sentence] if f.sentence else []), f.values.get("cohorts")


def test_the_statistic_on_synthetic_samples_has_exact_p_values() -> None:
    plan = plan_from_dict(_plan("x"))
    ev = _evidence([0.010, 0.011, 0.012, 0.013, 0.014], [0.020, 0.021, 0.022, 0.023, 0.024],
                   [130.0, 110.0, 120.0, 90.0, 140.0], [100.0, 95.0, 85.0, 80.0, 75.0],
                   [8, 8, 8, 8, 8], [8, 8, 8, 8, 8])
    statuses, parts, values = _judge(plan, "post", ev)
    assert values is not None and statuses == [Status.PASS], parts
    tpot, rate = values["tpot"], values["tokens_per_second"]
    assert tpot["p_faster"] == pytest.approx(1 / 252) and tpot["test_method"] == "exact"
    assert tpot["speedup"] == pytest.approx(0.022 / 0.012) and tpot["interval_kind"] == "observed_range"
    assert (tpot["speedup_low"], tpot["speedup_high"]) == (pytest.approx(0.020 / 0.014), pytest.approx(0.024 / 0.010))
    # canary 90 < stable 95 and 100: U = 23 of 25 -> P(U >= 23) = 4/252 (U = 25, 24, and two ways to 23)
    assert rate["p_faster"] == pytest.approx(4 / 252)
    assert rate["speedup"] == pytest.approx(120.0 / 85.0)
    assert values["verdict"] == "pays" and "canary L 3.000; stable L 2.500" in parts[0]
    assert "observed ranges" in parts[0]

    # the same samples, swapped: significantly slower on both -> fail, both speeds named
    slow = _evidence(ev.cohorts["stable"].tpot_seconds, ev.cohorts["canary"].tpot_seconds,
                     ev.cohorts["stable"].tokens_per_second, ev.cohorts["canary"].tokens_per_second, [8] * 5, [8] * 5)
    statuses, parts, values = _judge(plan, "post", slow)
    assert values is not None and statuses == [Status.FAIL] and values["tpot"]["p_slower"] == pytest.approx(1 / 252)
    assert "canary 0.022 s vs stable 0.012 s" in parts[0] and "slower at p = 0.00397" in parts[0]

    # faster, but below min_speedup on the point estimate: does not pay
    plan_min = plan_from_dict(_plan("x", min_speedup=2.0))
    statuses, parts, values = _judge(plan_min, "post", ev)
    assert statuses == [Status.FAIL] and values is not None and "below min_speedup 2" in parts[0]

    # 3 vs 3 pod-windows can never be significant (p >= 1/20): inconclusive, never a pass
    few = _evidence([0.010] * 3, [0.020] * 3, [200.0] * 3, [100.0] * 3, [8] * 3, [8] * 3)
    assert _judge(plan_from_dict(_plan("x", min_windows=1)), "post", few)[0] == [Status.INCONCLUSIVE]
    # not judged in --phase pre; no evidence at all is inconclusive
    assert _judge(plan, "pre", ev)[0] == [] and "not judged in --phase pre" in _judge(plan, "pre", ev)[1][0]
    assert _judge(plan, "post", None)[0] == [Status.INCONCLUSIVE]
    # a plan without a stable cohort has nothing to compare
    assert _judge(plan_from_dict(_plan("x", stable=None)), "post", ev) == ([], [], None)


# --- against a real Prometheus --------------------------------------------------------------------------------

@dataclass(frozen=True)
class CohortFleet(fleet_stack.FleetSpec):
    """fleet_stack's fleet, one namespace per scenario (pods 8s..8s+7: even stable r0, odd canary r1), one model,
    plus the windowed TPOT / generated-tokens gauges (window 1m, and a 5m decoy) and running requests."""

    def scenario(self, i: int) -> str:
        return list(SCENARIOS)[i // (2 * PER_COHORT)]

    def labels(self, i: int, stream: bool = True) -> str:
        base = f'namespace="{self.scenario(i)}",pod="{self.pod(i)}",job="specgate",drafter_revision="r{i % 2}"'
        return base + (f',model="{MODEL}",engine="vllm",rank="0"' if stream else ',engine="vllm"')

    def gauges(self, i: int) -> tuple[list[float], list[float], list[float]]:
        tc, ts, rc, rs = SCENARIOS[self.scenario(i)]
        tpot, running = (tc, rc) if i % 2 else (ts, rs)
        rng = random.Random(self.seed * 7_000_003 + i)
        n = self.seconds // self.step + 1
        t = [tpot * rng.uniform(0.95, 1.05) for _ in range(n)]
        r = [running * rng.uniform(0.8, 1.2) for _ in range(n)]
        return t, [rr / tt for rr, tt in zip(r, t, strict=True)], r

    def lines(self, fmt: str, pods: range | None = None) -> Iterator[str]:
        assert fmt == "openmetrics"
        for line in super().lines(fmt, pods):
            if line != "# EOF\n":
                yield line
        times = [str(self.start + s * self.step) for s in range(self.seconds // self.step + 1)]
        for j, (fam, extra) in enumerate(((names.TPOT, ',window="1m",quantile="0.5"'),
                                          (names.DECODE_RATE, ',window="1m"'), (names.REQUESTS_RUNNING, ""))):
            yield f"# TYPE {fam.name} gauge\n"
            for i in range(self.pods):
                values = self.gauges(i)[j]
                decoys = [""] if fam is names.REQUESTS_RUNNING else ["", "decoy"]
                for decoy in decoys:
                    lab = self.labels(i) + (extra.replace('"1m"', '"5m"') if decoy else extra)
                    scale = 100.0 if decoy else 1.0
                    yield "".join(f"{fam.series}{{{lab}}} {v * scale:.6g} {t}\n" for v, t in zip(values, times,
                                                                                            strict=True))
                if fam is names.TPOT:  # a p90 series the median query must not pick up
                    lab = self.labels(i) + ',window="1m",quantile="0.9"'
                    yield "".join(f"{fam.series}{{{lab}}} 9 {t}\n" for t in times)
        yield "# EOF\n"


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    end = int(time.time()) // 60 * 60 - 60
    spec = CohortFleet(pods=len(SCENARIOS) * 2 * PER_COHORT, end=end, seconds=2 * 3600)
    try:
        server = fleet_stack.prometheus(spec, tmp_path_factory.mktemp("cohorts"))
    except FileNotFoundError as e:
        pytest.fail(f"{e} (tools/install_prometheus.sh)")
    try:
        yield server.url, end
    finally:
        server.stop()


def _line(url: str, end: int, namespace: str, **kw: Any) -> tuple[Status, str, dict[str, Any]]:
    v = evaluate(plan_from_dict(_plan(namespace, url=url, end=end, **kw)), phase="post")
    acc = v.checks["acceptance"]
    return acc.status, acc.reason, acc.values.get("cohorts") or {}


def test_canary_faster_pays_and_passes(prom: tuple[str, int]) -> None:
    status, reason, cohorts = _line(*prom, "faster")
    assert cohorts["verdict"] == "pays", reason
    assert status is Status.PASS, reason
    assert cohorts["queries"] == 10 and cohorts["window"] == "1m"
    canary, stable = cohorts["cohorts"]["canary"], cohorts["cohorts"]["stable"]
    assert len(canary["pods"]) == len(stable["pods"]) == PER_COHORT
    assert canary["samples"]["tpot_seconds"] == PER_COHORT * 60  # 60 one-minute windows per pod, no decoys
    assert cohorts["tpot"]["canary"] == pytest.approx(0.020, rel=0.03)
    assert cohorts["tpot"]["stable"] == pytest.approx(0.025, rel=0.03)
    assert cohorts["tokens_per_second"]["speedup"] == pytest.approx(1.25, rel=0.1)
    assert cohorts["tpot"]["test_method"] == "normal"  # 240 x 240 pairs: the approximation, said so
    assert 2.8 < canary["acceptance_length"] < 3.5 and 2.8 < stable["acceptance_length"] < 3.5
    assert "canary against stable pays" in reason


def test_canary_slower_fails_naming_both_speeds(prom: tuple[str, int]) -> None:
    status, reason, cohorts = _line(*prom, "slower")
    assert status is Status.FAIL and cohorts["verdict"] == "does_not_pay"
    assert "canary against stable does not pay" in reason
    assert f"TPOT p50 canary {cohorts['tpot']['canary']:.4g} s vs stable {cohorts['tpot']['stable']:.4g} s" in reason
    assert "generated canary" in reason and "tok/s vs stable" in reason and "slower at p =" in reason


def test_a_load_mismatch_is_inconclusive(prom: tuple[str, int]) -> None:
    status, reason, cohorts = _line(*prom, "load")
    assert status is Status.INCONCLUSIVE and cohorts["verdict"] == "inconclusive"
    assert "not comparable" in reason and cohorts["load"]["canary_running_median"] == pytest.approx(2.0, rel=0.1)


def test_too_few_windows_or_no_stable_data_is_inconclusive(prom: tuple[str, int]) -> None:
    status, reason, cohorts = _line(*prom, "faster", lookback_seconds=60, min_windows=5)
    assert status is Status.INCONCLUSIVE and "fewer than slo.min_windows 5" in reason, reason
    status, reason, cohorts = _line(*prom, "faster", stable='drafter_revision="r9"')
    assert status is Status.INCONCLUSIVE and "the stable cohort" in reason and "has no TPOT samples" in reason


def test_argo_and_flagger_get_it_through_specgate_serve(prom: tuple[str, int], tmp_path: Path) -> None:
    url, end = prom
    answers = {}
    for ns in ("faster", "slower"):
        cfg = GateConfig(plan_path=tmp_path / f"{ns}.yaml", port=0, timeout_s=60)
        server = make_server(cfg, plan_from_dict(_plan(ns, url=url, end=end)), evaluator=service_evaluator())
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            argo = requests.get(f"{base}/argo?phase=post", timeout=90).json()
            flagger = requests.post(f"{base}/flagger", json={"name": ns, "namespace": ns,
                                                             "metadata": {"phase": "post"}}, timeout=90)
        finally:
            server.shutdown()
            server.server_close()
        answers[ns] = (argo, flagger)
    fast_argo, _ = answers["faster"]
    slow_argo, slow_flagger = answers["slower"]
    assert "canary against stable pays" in str(fast_argo)
    assert "canary against stable does not pay" in str(slow_argo)
    assert slow_flagger.status_code == 403 and any(
        r.startswith("acceptance: fail") and "canary against stable does not pay" in r
        for r in slow_flagger.json()["reasons"])
