"""The fleet's pure parts: the rule over counts, the fixed query set, selector handling, the text table."""

from __future__ import annotations

from gate.evidence.fleet import render
from gate.evidence.fleet.queries import FleetQueries, matchers, selector
from gate.plan.model import SLO, FleetRule
from gate.status import Status, fleet_status, window_slo_status


def test_fleet_rule() -> None:
    def counts(rule: FleetRule):  # noqa: ANN202 - the rule's two fractions, as fleet_status takes them
        return lambda *n: fleet_status(*n, max_failed_fraction=rule.max_failed_fraction,
                                       max_inconclusive_fraction=rule.max_inconclusive_fraction)
    strict, lenient = counts(FleetRule()), counts(FleetRule(max_inconclusive_fraction=0.1, max_failed_fraction=0.01))
    assert strict(0, 0, 100, 0)[0] is Status.PASS
    assert strict(1, 0, 999, 0)[0] is Status.FAIL
    assert strict(0, 1, 999, 0)[0] is Status.INCONCLUSIVE
    assert strict(0, 0, 999, 1)[0] is Status.INCONCLUSIVE  # a pod that sent nothing
    assert lenient(1, 5, 994, 0)[0] is Status.PASS  # 0.1 % failed ≤ 1 %, 0.5 % unknown ≤ 10 %
    assert lenient(11, 0, 989, 0)[0] is Status.FAIL  # 1.1 % > 1 %
    assert lenient(0, 3, 0, 0)[0] is Status.INCONCLUSIVE  # nobody passed
    assert strict(0, 0, 0, 0) == (Status.INCONCLUSIVE, "no pod matched the selector")


def test_window_rule_is_the_acceptance_lines() -> None:
    slo = SLO(target_acceptance_length=2.0, required_fraction=0.9, min_windows=5)
    assert window_slo_status(4, 4, min_windows=slo.min_windows, required_fraction=slo.required_fraction) is Status.INCONCLUSIVE
    assert window_slo_status(10, 9, min_windows=slo.min_windows, required_fraction=slo.required_fraction) is Status.PASS
    assert window_slo_status(10, 8, min_windows=slo.min_windows, required_fraction=slo.required_fraction) is Status.FAIL


def test_the_query_set_does_not_depend_on_the_fleet() -> None:
    q = FleetQueries('{namespace="llm",model="m"}', ("namespace", "pod"), ("model", "drafter_revision"), 60, 3600)
    qs = q.all()
    assert len(qs) == 9 and [x.kind for x in qs].count("range") == 3
    assert all("sum by (namespace, pod, model, drafter_revision)" in x.promql for x in qs
               if x.key not in ("engine_up", "targets"))
    targets = next(x for x in qs if x.key == "targets")
    assert targets.promql == ('count by (namespace, pod, model, drafter_revision) (count by (namespace, pod, model, '
                              'drafter_revision, instance) (specgate_spec_drafts_total{namespace="llm",model="m"})) > 1')
    up = next(x for x in qs if x.key == "engine_up")
    assert up.promql == 'min by (namespace, pod) (specgate_engine_up{namespace="llm"})'  # model dropped


def test_selectors() -> None:
    assert matchers('a="x", b=~"y.*",c!="z\\"q"') == [("a", "=", '"x"'), ("b", "=~", '"y.*"'), ("c", "!=", '"z\\"q"')]
    assert matchers("not a selector") is None
    assert selector('{a="x"}', 'b="y"') == '{a="x",b="y"}'
    assert selector(None) == "{}"
    assert selector('a="x",model="m",rank="0"', drop=("model", "rank")) == '{a="x"}'


def test_text_table_names_failures_and_counts_passing_pods() -> None:
    def row(i: int, status: str) -> dict[str, object]:
        return {"pod": f"p{i:02d}", "model": "m", "windows": 60, "below_slo_share": 0.0 if status == "pass" else 1.0,
                "acceptance_length": 3.0, "restarts": 0.0, "engine_up": True, "status": status,
                "reason": "0/60 windows ≥ 2" if status == "fail" else ""}
    fleet = {"source": "Prometheus x", "selector": "{}", "lookback_seconds": 3600, "window_seconds": 60,
             "queries": 8, "seconds": 0.1, "status": "fail", "reason": "1 fail", "missing_pods": 2,
             "pods": [row(i, "fail" if i == 7 else "pass") for i in range(30)]}
    text = render.to_text(fleet)
    assert "p07: fail — 0/60 windows ≥ 2" in text and "… and 29 passing pod(s)" in text
    assert "2 expected pod(s) sent no series at all" in text and "p08" not in text
    md = render.to_markdown(fleet)
    assert "| p07 | m | 60 | 100.0% | 3.000 | 0 | yes | fail | 0/60 windows ≥ 2 |" in md


def test_the_model_label_is_always_queried() -> None:
    """group_by without `model` (or empty) still asks for it: a row of another model, or of none, is told apart."""
    for group_by in ((), ("drafter_revision",)):
        q = FleetQueries("{}", ("instance",), group_by, 60, 3600)
        assert q.row_labels == ("instance", *group_by, "model")
        assert all(f"by ({', '.join(q.row_labels)})" in x.promql for x in q.all() if x.key not in ("engine_up",))
    # pod and instance both row labels: nothing can pool behind a row, no targets query
    assert [x.key for x in FleetQueries("{}", ("pod", "instance"), (), 60, 60).all()][-1] == "engine_up"
