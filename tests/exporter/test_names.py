"""exporter/names.py is the output contract: it must agree with what the exporter writes, what the shipped
recording rules define and compute, and the series list the observability tests allow."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from exporter import names
from tests.observability.sources import EXPORTER_SERIES

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
RULES = REPO / "deploy" / "prometheus" / "specgate-rules.yaml"


def _records() -> dict[str, str]:
    doc = yaml.safe_load(RULES.read_text())
    return {r["record"]: r["expr"] for g in doc["groups"] for r in g["rules"] if "record" in r}


def _golden_families() -> dict[str, tuple[str, str]]:
    """name -> (type, help) over every committed golden exposition."""
    out: dict[str, tuple[str, str]] = {}
    for f in GOLDEN.glob("*.prom"):
        helps = dict(re.findall(r"^# HELP (\S+) (.*)$", f.read_text(), flags=re.M))
        for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", f.read_text(), flags=re.M):
            out[name] = (kind, helps[name])
    return out


def test_every_family_in_the_goldens_is_a_names_family_with_its_help() -> None:
    by_name = {f.series: f for f in names.EXPORTER_FAMILIES}  # the classic text format names counters `_total`
    seen = _golden_families()
    assert len(seen) >= 20, "goldens should cover most families"
    for name, (kind, help_text) in seen.items():
        fam = by_name.get(name)
        assert fam is not None, f"{name} is exposed but not in exporter/names.py"
        assert (fam.kind, fam.help) == (kind, help_text), name


def test_recorded_names_are_the_rules_file() -> None:
    assert set(_records()) == set(names.RECORDED)


def test_the_promql_in_the_counter_docstrings_is_what_the_rules_compute() -> None:
    """The docstrings next to the counter families quote the rules; whitespace aside they must match."""
    source = (REPO / "exporter" / "names.py").read_text()
    flat = " ".join(source.split())
    for record, expr in _records().items():
        if record == names.SLO_OBJECTIVE_RULE or record in names.FLEET_COMPOSITE_RULES:
            continue  # a constant; composites of quoted facts, held by promtool (fleet_facts_test.yaml)
        quoted = " ".join(expr.split())
        if record.startswith("model:specgate_spec_windows_below_slo:"):
            window = record.rsplit("ratio_rate", 1)[1]
            quoted = quoted.replace(f"[{window}]", "[w]")
        assert quoted in flat, f"{record}: its PromQL is not quoted in exporter/names.py"


def test_series_list_of_the_observability_tests_is_the_contract() -> None:
    assert names.SERIES == EXPORTER_SERIES


def test_counter_series_get_total_and_histograms_store_three() -> None:
    assert names.SPEC_DRAFTS.series == "specgate_spec_drafts_total"
    assert names.KV_POOL.series == "specgate_kv_pool_tokens"
    assert names.WINDOW_ACCEPTANCE_LENGTH.stored == (
        "specgate_spec_window_acceptance_length_bucket", "specgate_spec_window_acceptance_length_sum",
        "specgate_spec_window_acceptance_length_count")
    assert len({f.name for f in (*names.EXPORTER_FAMILIES, *names.GATE_FAMILIES)}) == \
        len(names.EXPORTER_FAMILIES) + len(names.GATE_FAMILIES)
