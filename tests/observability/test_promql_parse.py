"""Every PromQL expression we ship, rules and dashboard, parses with promql-parser."""

from __future__ import annotations

import promql_parser
import pytest

from tests.observability.sources import dashboard_queries, load_dashboard, load_rules, plain_promql

EXPRS = [(f"rule {r.name}", r.expr) for r in load_rules()] + [
    (f"panel {q.panel}/{q.ref_id}", plain_promql(q.expr)) for q in dashboard_queries(load_dashboard())
]


@pytest.mark.parametrize(("where", "expr"), EXPRS, ids=[w for w, _ in EXPRS])
def test_parses(where: str, expr: str) -> None:
    ast = promql_parser.parse(expr)
    assert ast is not None, where


def test_parser_rejects_broken_promql() -> None:
    """The parse check can fail: a typo is an error, not a pass."""
    with pytest.raises(ValueError):
        promql_parser.parse("sum by (model (rate(specgate_spec_drafts_total[5m]))")


def test_there_is_something_to_parse() -> None:
    assert sum(w.startswith("rule ") for w, _ in EXPRS) == 43  # 25 recording (11 fleet facts: issue 40) + 18 alerting rules (energy: issue 38; quality, card: issue 37)
    assert sum(w.startswith("panel ") for w, _ in EXPRS) >= 30
