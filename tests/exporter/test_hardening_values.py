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
