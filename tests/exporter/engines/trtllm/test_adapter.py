"""TensorRT-LLM (`trtllm-serve`) pages through the exporter.

The pages are GENERATED from TensorRT-LLM's source (tools/trtllm_fixtures.py, from
NVIDIA/TensorRT-LLM@050f80def8df tensorrt_llm/metrics/collector.py), never captured: TensorRT-LLM needs a
GPU. Expected numbers are the generator's scenario (its REQUESTS and POOL), worked out by hand below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.collect import exposition
from exporter.derive import derive_window
from exporter.engines import DetectError, detect
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState
from tools import trtllm_fixtures

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "trtllm"


def page(name: str) -> str:
    return (FIX / f"metrics-{name}.txt").read_text()


def snap(text: str, ts: float = 0.0):
    return snapshot_from_text(text, "auto", timestamp=ts)


def test_every_fixture_says_it_is_generated_and_names_its_source():
    for p in sorted(FIX.glob("*.txt")):
        head = p.read_text().splitlines()[0]
        assert head.startswith("# GENERATED, NOT CAPTURED: tools/trtllm_fixtures.py from "), p
        assert "NVIDIA/TensorRT-LLM@050f80def8df tensorrt_llm/metrics/collector.py" in head, p


def test_the_fixtures_are_what_the_generator_writes():
    """The committed pages are the generator's output (a change of either without the other fails here)."""
    for name, text in trtllm_fixtures.build().items():
        assert (FIX / f"{name}.txt").read_text() == text, name


def test_detected_as_trtllm_and_read_by_prometheus_client():
    for name in ("before", "after-2", "after-4"):
        text = page(name)
        assert detect(text) == "trtllm"
        assert {f.name for f in text_string_to_metric_families(text)} >= {
            "trtllm_spec_decode_num_draft_tokens", "trtllm_time_to_first_token_seconds"}


def test_every_number_the_source_determines():
    """After four requests: 20+31+16+45 = 112 rounds of 3 drafts (336 draft tokens), accepted per position
    17+25+12+37 = 91, 13+20+11+30 = 74, 9+14+7+14 = 44 (209 in all); pool 4096 blocks x 32 tokens."""
    (st,) = snap(page("after-4")).streams
    assert (st.model, st.rank) == ("Qwen/Qwen3-8B", None)
    assert st.kv_pool_tokens == 4096 * 32 and st.kv_block_size == 32
    assert st.kv_usage_ratio == pytest.approx(700 / 4096)  # usedNumBlocks / maxNumBlocks, the last iteration
    assert st.kv_available_tokens == (4096 - 700) * 32
    assert st.spec is not None
    assert (st.spec.draft_tokens, st.spec.accepted_tokens) == (336, 209)
    assert st.spec.accepted_per_position == (91, 74, 44)
    assert st.prompt_tokens == 512 + 1024 + 256 + 2048 and st.generation_tokens == 64 + 96 + 48 + 128
    assert st.ttft is not None and st.ttft.count == 4 and st.ttft.sum == pytest.approx(0.045 + 0.090 + 0.030 + 0.210)
    assert st.tpot is not None and st.tpot.count == 4  # TensorRT-LLM's per-request TPOT
    assert st.itl is None  # no per-step family
    assert (st.requests_running, st.requests_waiting) == (2, 1)


def test_draft_rounds_are_never_guessed():
    """No family counts draft rounds: drafts stay absent (drafted_tokens_total{token_position="0"} is the
    rounds only for a chain drafter), so no L window is derived and nothing is exported as one."""
    before, after = snap(page("after-2"), 0.0), snap(page("after-4"), 60.0)
    (st,) = after.streams
    assert st.spec is not None and st.spec.drafts is None
    assert any("L not derived" in h for h in after.version_hints)
    (w,) = derive_window(before, after, 60.0)
    assert w.drafts is None and w.acceptance_length is None and w.acceptance_rate is None
    state = ExporterState.from_settings(ExporterSettings(windows=[60.0], min_drafts=1), started_at=0.0)
    state.record_success(before, 0.0)
    state.record_success(after, 0.0)
    text = exposition(state)
    assert "specgate_spec_acceptance_length{" not in text and "specgate_spec_drafts_total{" not in text
    assert 'specgate_kv_pool_tokens{engine="trtllm",model="Qwen/Qwen3-8B"' in text
    assert 'specgate_engine_info{engine="trtllm",version="unknown",version_tested="unknown"} 1.0' in text


def test_without_iteration_stats_the_tokens_come_from_the_per_position_counters():
    """`enable_iter_perf_stats` off: no num_draft/num_accepted counters, the request-side sums remain."""
    text = re.sub(r"(?m)^trtllm_spec_decode_num_(draft|accepted)_tokens_total\{.*\n", "", page("after-4"))
    (st,) = snap(text).streams
    assert st.spec is not None and (st.spec.draft_tokens, st.spec.accepted_tokens) == (336, 209)


def test_dynamo_spelling_reads_the_same():
    """Dynamo re-exports the collector's families as `trtllm:`: the same numbers."""
    text = page("after-4").replace("\ntrtllm_", "\ntrtllm:").replace(" trtllm_", " trtllm:")
    assert snap(text).streams == snap(page("after-4")).streams


def test_a_per_position_family_without_its_position_is_left_out_and_counted():
    text = page("after-4").replace(',token_position="1"', "")
    s = snap(text)
    assert s.anomalies.get("shape") == 6  # both per-position families, 3 positions each
    (st,) = s.streams
    assert st.spec is not None and st.spec.accepted_per_position == ()
    assert (st.spec.draft_tokens, st.spec.accepted_tokens) == (336, 209)  # the iteration counters stay


def test_the_unprefixed_names_of_older_collectors_are_no_engine():
    """The collector before `metric_prefix` wrote bare names (`time_to_first_token_seconds`): nothing says
    which engine that is, so it is refused rather than guessed."""
    bare = re.sub(r"(?m)^(# (HELP|TYPE) )?trtllm_", r"\1", page("after-4"))
    with pytest.raises(DetectError):
        detect(bare)
