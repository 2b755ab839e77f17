"""The quality alarms (issue 37 item 5) read the exporter's histogram at bounds it really writes.

Why: `SpecgateAcceptanceNearZero` / `SpecgateAcceptanceNearCeiling` select `le="0.05"` and `le="0.95"` of
`specgate_spec_window_acceptance_fraction`. A bound the exporter does not write (another epsilon in the mixin's
config, a bucket removed from `exporter.windows.WINDOW_FRACTION_BUCKETS`, a spelling such as "0.050") selects
nothing, and the alerts go silent without an error: promtool's tests feed the series they name, so only this
comparison with the exporter catches it.
"""

from __future__ import annotations

import json

import _jsonnet

from exporter import names
from exporter.collect.families import bound
from exporter.windows import WINDOW_FRACTION_BUCKETS
from tests.observability.sources import MIXIN, load_rules

QUALITY = ("SpecgateAcceptanceNearZero", "SpecgateAcceptanceNearCeiling")


def _config() -> dict:
    return json.loads(_jsonnet.evaluate_snippet("config", "(import 'config.libsonnet')._config",
                                                jpathdir=[str(MIXIN)]))


def test_the_configured_bounds_are_bounds_the_exporter_writes() -> None:
    c = _config()
    written = {bound(b) for b in WINDOW_FRACTION_BUCKETS}
    for key in ("acceptanceNearZeroLe", "acceptanceNearCeilingLe"):
        assert c[key] in written, f"{key} = {c[key]!r} is not a bucket bound of {sorted(written)}"
    # the two ends of one epsilon
    assert float(c["acceptanceNearZeroLe"]) == round(1 - float(c["acceptanceNearCeilingLe"]), 12)


def test_each_quality_alert_reads_its_bound_and_a_guarded_count() -> None:
    c = _config()
    rules = {r.name: r for r in load_rules() if r.kind == "alert" and r.name in QUALITY}
    assert sorted(rules) == sorted(QUALITY)
    fam = names.WINDOW_ACCEPTANCE_FRACTION.name
    for name, le in zip(QUALITY, (c["acceptanceNearZeroLe"], c["acceptanceNearCeilingLe"]), strict=True):
        expr = rules[name].expr
        assert f'{fam}_bucket{{le="{le}"}}' in expr, name
        assert f"rate({fam}_count[" in expr and "> 0)" in expr, name  # no share without windows
        assert f"increase({fam}_count[" in expr and f">= {c['acceptanceExtremesMinWindows']}" in expr, name


def test_the_dashboard_panel_reads_the_alerts_bounds() -> None:
    """The panel of the two shares shows what the alerts count: the same `le` bounds."""
    from dashboards import generate

    c = _config()
    assert (generate.NEAR_ZERO_LE, generate.NEAR_CEILING_LE) == (c["acceptanceNearZeroLe"], c["acceptanceNearCeilingLe"])
