"""Nothing negative, non-finite or impossible is exported (issue 14, item 5).

A hostile or broken engine page carries `kv_pool_tokens -1024`, `kv_usage_ratio -0.5`,
`requests_running -3`, preemptions −5, NaN and ±Inf. Every family we read is a count, a ratio, a
size or a time: such a sample is absent from what the exporter uses, and counted by reason.
"""

from __future__ import annotations

import math
from pathlib import Path

from exporter.engines import adapter
from exporter.parse import PageParser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NGRAM = (FIXTURES / "vllm" / "metrics-ngram-after.txt").read_text()
VLLM = adapter("vllm").families


def test_the_scrape_parser_leaves_out_and_counts_negative_and_non_finite_samples():
    page = ('vllm:num_requests_running{model_name="m",engine="0"} -3\n'
            'vllm:num_requests_running{model_name="m",engine="1"} 2\n'
            'vllm:kv_cache_usage_perc{model_name="m",engine="0"} -0.5\n'
            'vllm:num_preemptions_total{model_name="m",engine="0"} -5\n'
            'vllm:spec_decode_num_drafts_total{model_name="m",engine="0"} NaN\n'
            'vllm:spec_decode_num_drafts_total{model_name="m",engine="0"} 7\n'  # a repeat: not a replacement
            'vllm:prompt_tokens_total{model_name="m",engine="0"} +Inf\n'
            'vllm:generation_tokens_total{model_name="m",engine="0"} -Inf\n'
            'vllm:num_requests_waiting{model_name="m",engine="0"} -0.0\n')
    dropped: dict[str, int] = {}
    got = PageParser(VLLM, usable_only=True).parse(page, dropped)
    assert got["vllm:num_requests_running"] == [({"model_name": "m", "engine": "1"}, 2.0)]
    assert got["vllm:kv_cache_usage_perc"] == [] and got["vllm:num_preemptions_total"] == []
    assert got["vllm:spec_decode_num_drafts_total"] == []
    assert got["vllm:prompt_tokens_total"] == [] and got["vllm:generation_tokens_total"] == []
    assert got["vllm:num_requests_waiting"][0][1] == 0.0  # -0.0 is zero
    assert dropped == {"negative": 3, "non_finite": 3, "duplicate": 1}


def test_the_oracle_reading_keeps_them():
    page = 'vllm:num_requests_running{model_name="m",engine="0"} -3\nvllm:kv_cache_usage_perc{engine="0"} NaN\n'
    got = PageParser(VLLM).parse(page)
    assert got["vllm:num_requests_running"][0][1] == -3.0 and math.isnan(got["vllm:kv_cache_usage_perc"][0][1])


def test_a_real_capture_loses_nothing():
    dropped: dict[str, int] = {}
    assert PageParser(VLLM, usable_only=True).parse(NGRAM, dropped) == PageParser(VLLM).parse(NGRAM)
    assert dropped == {}


# --- through the exporter: absent from the exposition, counted by reason --------------------------------

def exported(*pages: str) -> dict[tuple[str, frozenset], float]:
    from prometheus_client.parser import text_string_to_metric_families

    from exporter.collect import exposition
    from exporter.scrape import snapshot_from_text
    from exporter.settings import ExporterSettings
    from exporter.state import ExporterState

    state = ExporterState.from_settings(ExporterSettings(windows=[30.0], min_drafts=1), started_at=0.0)
    for i, p in enumerate(pages):
        state.record_success(snapshot_from_text(p, "vllm", timestamp=100.0 + 40.0 * i), 0.0)
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(exposition(state)) for s in fam.samples}


def anomaly(got: dict, reason: str) -> float:
    return got[("specgate_engine_anomalies_total", frozenset({("engine", "vllm"), ("reason", reason)}))]


def hostile(page: str) -> str:
    return (page
            .replace('kv_cache_size_tokens="8192"', 'kv_cache_size_tokens="-1024"')
            .replace('vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.0',
                     'vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} -0.5')
            .replace('vllm:num_requests_running{engine="0",model_name="tiny"} 0.0',
                     'vllm:num_requests_running{engine="0",model_name="tiny"} -3')
            .replace('vllm:num_preemptions_total{engine="0",model_name="tiny"} 0.0',
                     'vllm:num_preemptions_total{engine="0",model_name="tiny"} -5'))


def test_negative_values_of_every_kind_are_absent_and_counted():
    page = hostile(NGRAM)
    assert page.count("-") > NGRAM.count("-")
    got = exported(page)
    lab = {("engine", "vllm"), ("model", "tiny"), ("rank", "0")}
    names = {n for n, ls in got if lab <= ls}
    for gone in ("specgate_kv_usage_ratio", "specgate_requests_running", "specgate_preemptions_total"):
        assert gone not in names, gone
    assert not [v for (n, ls), v in got.items() if n == "specgate_kv_pool_tokens"]  # -1024 is no pool
    assert all(v >= 0 for v in got.values())
    assert anomaly(got, "negative") == 4  # usage, running, preemptions, and the pool (a label of cache_config_info)
    assert ("specgate_spec_drafts_total", frozenset(lab)) in got  # the rest of the page is used


def test_a_usage_above_one_and_more_accepted_than_proposed_are_impossible():
    page = (NGRAM.replace('vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.0',
                          'vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 31.5')
            .replace('vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 1170.0',
                     'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 99999.0'))
    got = exported(page)
    names = {n for n, _ in got}
    assert "specgate_kv_usage_ratio" not in names
    assert "specgate_spec_accepted_tokens_total" not in names and "specgate_spec_drafts_total" not in names
    assert anomaly(got, "impossible") == 2


def test_mutated_windows_never_give_a_rate_above_one_or_l_below_one():
    before = (FIXTURES / "vllm" / "metrics-ngram-before.txt").read_text()
    after = NGRAM.replace('vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 1170.0',
                          'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 60000.0')
    got = exported(before, after)
    for (n, _), v in got.items():
        if n == "specgate_spec_acceptance_rate" or n == "specgate_spec_position_acceptance_rate":
            assert 0.0 <= v <= 1.0, (n, v)
        if n == "specgate_spec_acceptance_length":
            assert v >= 1.0, v


def test_a_window_whose_deltas_are_impossible_has_no_acceptance_value():
    # Each page is consistent on its own (accepted <= proposed), the window between them is not: 800
    # accepted of 10 proposed would be a rate of 80 and L of 81. Absent, not exported.
    from exporter.derive import derive_window
    from exporter.scrape import snapshot_from_text

    def page(acc: int, proposed: int, drafts: int) -> str:
        return (NGRAM.replace('vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 1170.0',
                              f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="tiny"}} {acc}.0')
                .replace('vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 1473.0',
                         f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="tiny"}} {proposed}.0')
                .replace('vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 522.0',
                         f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="tiny"}} {drafts}.0'))

    a, b = page(100, 1000, 400), page(900, 1010, 410)
    assert "1010.0" in b and "900.0" in b
    (w,) = derive_window(snapshot_from_text(a, "vllm", timestamp=0.0), snapshot_from_text(b, "vllm", timestamp=30.0),
                         30.0, min_drafts=1)
    assert w.acceptance_length is None and w.acceptance_rate is None and w.position_acceptance_rate == ()
