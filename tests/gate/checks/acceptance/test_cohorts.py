"""Canary against stable in --phase post (gate.evidence.fleet.cohorts, gate.checks.acceptance.cohorts; issue 11 item 4).

The statistic on synthetic samples with exact p-values (5 vs 5 pods, each sample one pod's median over
its windows: 1/C(10,5) = 1/252 when every canary pod is faster, 2/252 with one inversion), the classes of
issue 21 (windows of one pod are not samples, too few pods, a pod in both cohorts, a canary matcher that
also matches stable, an empty selector, another model's series, repeated or out-of-range windows), then the whole path against a real
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
                        "target_source": "traffic: the synthetic fleet's own windows", **slo})
    cohorts: dict[str, Any] = {"canary": 'drafter_revision="r1"'}
    if stable is not None:
        cohorts["stable"] = stable
    data["evidence"] = {"prometheus": {"url": url, "end": end, "selector": f'namespace="{namespace}"',
                                       "cohorts": cohorts}}
    return data


# --- the statistic, exactly ---------------------------------------------------------------------------------

WINDOWS = 5  # windows per synthetic pod (the plans' slo.min_windows)


def _pods(prefix: str, values: list[float], windows: int = WINDOWS) -> dict[str, list[float]]:
    """One pod per value, each with `windows` windows whose median is that value."""
    return {f"{prefix}{i}": [v] * windows for i, v in enumerate(values)}


def _evidence(canary_tpot: list[float], stable_tpot: list[float], canary_rate: list[float],
              stable_rate: list[float], canary_running: list[float], stable_running: list[float],
              windows: int = WINDOWS) -> CohortEvidence:
    """Each list: one value per pod (canary pods c0.., stable pods s0..)."""
    ev = CohortEvidence("Prometheus test", 60, "1m", 300, 0.0)
    for name, tpot, rate, running, acc in (("canary", canary_tpot, canary_rate, canary_running, 200),
                                           ("stable", stable_tpot, stable_rate, stable_running, 150)):
        prefix = name[0]
        t, r, q = _pods(prefix, tpot, windows), _pods(prefix, rate, windows), _pods(prefix, list(running), windows)
        ev.cohorts[name] = CohortSamples(name, "{" + prefix + "}", t, r, q, sorted({*t, *r, *q}), 100, acc)
    return ev


def _judge(plan: Any, phase: str, ev: CohortEvidence | None) -> tuple[list[Status], list[str], dict[str, Any] | None]:
    """The sub-check's Finding as (statuses, sentences, its `cohorts` values)."""
    f = cohort_check.judge(plan, phase, ev)
    return ([f.status] if f.status else []), ([f.sentence] if f.sentence else []), f.values.get("cohorts")


def test_the_statistic_on_synthetic_samples_has_exact_p_values() -> None:
    plan = plan_from_dict(_plan("x"))
    fast_tpot, slow_tpot = [0.010, 0.011, 0.012, 0.013, 0.014], [0.020, 0.021, 0.022, 0.023, 0.024]
    fast_rate, slow_rate = [130.0, 110.0, 120.0, 90.0, 140.0], [100.0, 95.0, 85.0, 80.0, 75.0]
    ev = _evidence(fast_tpot, slow_tpot, fast_rate, slow_rate, [8, 8, 8, 8, 8], [8, 8, 8, 8, 8])
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
    slow = _evidence(slow_tpot, fast_tpot, slow_rate, fast_rate, [8] * 5, [8] * 5)
    statuses, parts, values = _judge(plan, "post", slow)
    assert values is not None and statuses == [Status.FAIL] and values["tpot"]["p_slower"] == pytest.approx(1 / 252)
    assert "canary 0.022 s vs stable 0.012 s" in parts[0] and "slower at p = 0.00397" in parts[0]

    # faster, but below min_speedup on the point estimate: does not pay
    plan_min = plan_from_dict(_plan("x", min_speedup=2.0))
    statuses, parts, values = _judge(plan_min, "post", ev)
    assert statuses == [Status.FAIL] and values is not None and "below min_speedup 2" in parts[0]

    # 3 vs 3 pods can never be significant (p >= 1/20): inconclusive, never a pass
    few = _evidence([0.010] * 3, [0.020] * 3, [200.0] * 3, [100.0] * 3, [8] * 3, [8] * 3)
    assert _judge(plan_from_dict(_plan("x", min_windows=1)), "post", few)[0] == [Status.INCONCLUSIVE]
    # not judged in --phase pre; no evidence at all is inconclusive
    assert _judge(plan, "pre", ev)[0] == [] and "not judged in --phase pre" in _judge(plan, "pre", ev)[1][0]
    assert _judge(plan, "post", None)[0] == [Status.INCONCLUSIVE]
    # a plan without a stable cohort has nothing to compare
    assert _judge(plan_from_dict(_plan("x", stable=None)), "post", ev) == ([], [], None)


def test_windows_of_one_pod_are_not_samples() -> None:
    """One (or two) canary pods against as many stable pods, each with hundreds of windows, every canary window
    faster: the samples are the pods, so the test can never be significant and the verdict is inconclusive."""
    for pods, windows in ((1, 400), (2, 250)):
        ev = _evidence([0.010] * pods, [0.020] * pods, [300.0] * pods, [100.0] * pods, [8] * pods, [8] * pods,
                       windows=windows)
        statuses, parts, values = _judge(plan_from_dict(_plan("x", min_pods=2)), "post", ev)
        assert statuses == [Status.INCONCLUSIVE], parts
        if pods == 1:
            assert "fewer than slo.min_pods 2" in parts[0]
        else:  # 2 vs 2 pods: the smallest one-sided p is 1/C(4,2) = 1/6, never < alpha 0.05
            assert values is not None and values["tpot"]["p_faster"] == pytest.approx(1 / 6)
            assert values["tpot"]["n_canary"] == 2 and "medians of 2 and 2 pods" in parts[0]
    # the default min_pods is 3: two pods a side is inconclusive before any test
    ev = _evidence([0.010] * 2, [0.020] * 2, [300.0] * 2, [100.0] * 2, [8] * 2, [8] * 2, windows=300)
    statuses, parts, _ = _judge(plan_from_dict(_plan("x")), "post", ev)
    assert statuses == [Status.INCONCLUSIVE] and "fewer than slo.min_pods 3" in parts[0]
    # a pod with fewer than min_windows windows is no sample
    ev = _evidence([0.010] * 4, [0.020] * 4, [300.0] * 4, [100.0] * 4, [8] * 4, [8] * 4, windows=3)
    statuses, parts, _ = _judge(plan_from_dict(_plan("x")), "post", ev)
    assert statuses == [Status.INCONCLUSIVE] and "fewer than slo.min_windows 5" in parts[0]


def test_a_pod_in_both_cohorts_is_inconclusive_and_named() -> None:
    """Clearly faster on every number, but one pod (or every stable pod: a canary matcher that also matches
    stable) is in both cohorts: never a pass, the pods named."""
    plan = plan_from_dict(_plan("x"))
    fast = ([0.010, 0.011, 0.012, 0.013], [0.020, 0.021, 0.022, 0.023], [300.0] * 4, [100.0] * 4, [8.0] * 4, [8.0] * 4)
    ev = _evidence(*fast)
    assert _judge(plan, "post", ev)[0] == [Status.PASS]  # the control: disjoint, it pays
    ev.cohorts["canary"].pods.append("s2")
    statuses, parts, values = _judge(plan, "post", ev)
    assert statuses == [Status.INCONCLUSIVE] and "1 pod(s) in both cohorts (s2)" in parts[0]
    assert values is not None and values["pods_in_both"] == ["s2"]
    wide = _evidence(*fast)
    wide.cohorts["canary"].pods += wide.cohorts["stable"].pods  # canary matcher also matches every stable pod
    statuses, parts, _ = _judge(plan, "post", wide)
    assert statuses == [Status.INCONCLUSIVE] and "4 pod(s) in both cohorts (s0, s1, s2, s3)" in parts[0]
    assert "also matches stable pods" in parts[0]


@pytest.mark.parametrize("cohorts", [{"canary": ""}, {"canary": "  "}, {"canary": "{}"},
                                     {"canary": 'drafter_revision="r1"', "stable": ""}])
def test_an_empty_cohort_selector_is_invalid_input(cohorts: dict[str, str]) -> None:
    from gate.plan.model import PlanError

    data = _plan("x")
    data["evidence"]["prometheus"]["cohorts"] = cohorts
    with pytest.raises(PlanError, match="empty selector"):
        plan_from_dict(data)


def test_an_empty_canary_selector_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from gate.cli import main

    data = _plan("x")
    data["evidence"]["prometheus"]["cohorts"] = {"canary": "", "stable": 'drafter_revision="r0"'}
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(data))
    assert main(["check", "--plan", str(plan), "--phase", "post"]) == 3
    err = capsys.readouterr().err
    assert "empty selector" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_min_pods_is_at_least_two() -> None:
    from gate.plan.model import PlanError

    with pytest.raises(PlanError, match="min_pods"):
        plan_from_dict(_plan("x", min_pods=1))


class _Answers:
    """A Prometheus client stub: each cohort query answered from `answer(key, cohort selector)`."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def query(self, path: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        promql = params["query"]
        key = ("tpot" if names.TPOT.series in promql else "rate" if names.DECODE_RATE.series in promql
               else "running" if names.REQUESTS_RUNNING.series in promql
               else "drafts" if names.SPEC_DRAFTS.series in promql else "accepted")
        cohort = "canary" if 'drafter_revision="r1"' in promql else "stable"
        return self.answer(key, cohort, params)


def _stub_series(cohort: str, key: str, times: list[float], model: str = MODEL, pods: int = 4,
                 repeat: int = 1) -> list[dict[str, Any]]:
    if key in ("drafts", "accepted"):
        return [{"metric": {}, "value": [times[-1], "100" if key == "drafts" else "200"]}]
    value = {"tpot": 0.02 if cohort == "canary" else 0.025, "running": 8.0}.get(key)
    value = 8.0 / (0.02 if cohort == "canary" else 0.025) if value is None else value
    out = []
    for i in range(pods):
        pod = f"{cohort}-{i}"
        out.append({"metric": {"namespace": "x", "pod": pod, "model": model},
                    "values": [[t, f"{value * (1 + 0.001 * i):.6g}"] for t in times for _ in range(repeat)]})
    return out


def _stub_evidence(answer: Any, now: float | None = None, served: str | None = MODEL) -> CohortEvidence:
    from gate.evidence.fleet import cohorts as cohort_evidence

    plan = plan_from_dict(_plan("x"))
    src = plan.evidence.prometheus
    assert src is not None
    ev = cohort_evidence.collect(_Answers(answer), src, 60, 600, 6000.0, "stub", served_model_name=served, now=now)
    assert ev is not None
    return ev


def test_cohort_windows_count_once_and_only_inside_the_range() -> None:
    """A window repeated at one timestamp counts once; points off the query's grid (days before it, or
    between steps) are dropped; in post, windows that ended more than the lookback before now are dropped."""
    grid = [6000.0 - 60 * i for i in range(9, -1, -1)]  # the query's ten steps, end 6000 aligned to 60

    def answer(key: str, cohort: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        assert params.get("start", "5460.000") == "5460.000" and params.get("end", "6000.000") == "6000.000"
        off = [t - 864_000 for t in grid] + [t + 30 for t in grid[:-1]]
        return _stub_series(cohort, key, grid + off, repeat=3)

    ev = _stub_evidence(answer)
    c = ev.cohorts["canary"]
    assert ev.errors == [] and all(len(v) == 10 for v in c.tpot_seconds.values()), c.tpot_seconds
    # per pod and range query: 3 x (10 + 10 + 9) points, 10 kept: 57 off the grid, 20 repeats
    assert c.dropped == 4 * 3 * (57 + 20)
    stale = _stub_evidence(answer, now=6000.0 + 400)  # lookback 600: steps ending before 5800 are stale
    assert all(len(v) == 4 for v in stale.cohorts["canary"].tpot_seconds.values())


def test_another_models_series_or_a_pod_answered_twice_is_an_error() -> None:
    grid = [6000.0 - 60 * i for i in range(9, -1, -1)]
    for bad, said in ((lambda c, k: _stub_series(c, k, grid, model="other/model"), "serves model 'other/model'"),
                      (lambda c, k: _stub_series(c, k, grid, model=""), "an unknown model (no model label)"),
                      (lambda c, k: _stub_series(c, k, grid) + _stub_series(c, k, grid)[:1], "answered twice")):
        ev = _stub_evidence(lambda key, cohort, params, bad=bad: bad(cohort, key) if cohort == "stable"
                            else _stub_series(cohort, key, grid))
        assert ev.errors and said in ev.errors[0], ev.errors
        statuses, parts, _ = _judge(plan_from_dict(_plan("x")), "post", ev)
        assert statuses == [Status.INCONCLUSIVE] and said in parts[0]
    # the control: the same answers of the plan's model decide (the canary is faster: it pays)
    ev = _stub_evidence(lambda key, cohort, params: _stub_series(cohort, key, grid))
    assert ev.errors == [] and _judge(plan_from_dict(_plan("x")), "post", ev)[0] == [Status.PASS]


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
    # 60 one-minute windows per pod, no decoys; in post the first one or two ended more than the lookback ago
    assert PER_COHORT * 58 <= canary["samples"]["tpot_seconds"] <= PER_COHORT * 60
    assert cohorts["tpot"]["canary"] == pytest.approx(0.020, rel=0.03)
    assert cohorts["tpot"]["stable"] == pytest.approx(0.025, rel=0.03)
    assert cohorts["tokens_per_second"]["speedup"] == pytest.approx(1.25, rel=0.1)
    # one sample per pod: 4 against 4, exact (the smallest one-sided p is 1/C(8,4) = 1/70 < 0.05)
    assert cohorts["tpot"]["test_method"] == "exact" and cohorts["tpot"]["n_canary"] == PER_COHORT
    assert cohorts["tpot"]["p_faster"] == pytest.approx(1 / 70) and cohorts["sample"] == "pod"
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
    status, reason, cohorts = _line(*prom, "faster", lookback_seconds=240, min_windows=5)
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
