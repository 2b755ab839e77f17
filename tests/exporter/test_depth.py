"""The depth actually used (issue 22 item 1) and SGLang's decode-only L (issue 23 item 6), on real captures.

Inputs: tests/fixtures/dynamic-depth/ (README there: vLLM 0.32 ngram with the schedule [[1,1,3],[2,8,1]],
SGLang 0.5.23 EAGLE3 with --speculative-adaptive). Expected numbers are the captures' own counters. SGLang's
DFlash k from SGLang's own resolution and source (`DFLASH` below says which).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter import formulas
from exporter.collect import exposition
from exporter.engines.base import SideInfo, SpecCounters, SpeculativeSettings, StreamSnapshot
from exporter.engines.sglang.depth import (
    SGLANG_ADAPTIVE_DEFAULT_MAX,
    configured_depth,
    counted_depth,
    depth,
    settings_depth,
)
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings, told_schedule
from exporter.state import ExporterState

D = Path(__file__).parents[1] / "fixtures" / "dynamic-depth"
VLLM = [f"vllm-schedule-metrics-{n}.txt" for n in ("0-start", "1-after-c1", "2-after-c8")]
SGL = ["sglang-adaptive-metrics-0-start.txt", "sglang-adaptive-metrics-1-after.txt"]
CONFIG = ('{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1,'
          '"num_speculative_tokens_per_batch_size":[[1,1,3],[2,8,1]]}')


def _run(files: list[str], side: SideInfo | None = None, **settings: object) -> ExporterState:
    """Each capture one scrape 60 s apart, windows 1m (each window spans one step)."""
    st = ExporterState.from_settings(ExporterSettings(windows=[60.0], batch_window=60.0, min_drafts=1,
                                                      **settings), started_at=0.0)  # type: ignore[arg-type]
    for i, f in enumerate(files):
        st.record_success(snapshot_from_text((D / f).read_text(), timestamp=1000.0 + 60.0 * i, side=side), 0.0)
    return st


def _samples(st: ExporterState) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k not in ("engine", "model", "rank")))):
            s.value for fam in text_string_to_metric_families(exposition(st)) for s in fam.samples}


def test_vllm_mean_depth_follows_the_schedule_and_positions_are_lower_bounds():
    c1 = _samples(_run(VLLM[:2]))
    c8 = _samples(_run(VLLM))
    w = (("window", "1m"),)
    assert c1[("specgate_spec_depth_mean", w)] == pytest.approx(276 / 100)  # 2.76: one in flight, k = 3
    assert c8[("specgate_spec_depth_mean", w)] == pytest.approx(404 / 228)  # 1.77: eight in flight, k = 1 mostly
    for got in (c1, c8):
        assert got[("specgate_spec_depth_max", (("source", "positions"),))] == 3.0  # three position series
        assert got[("specgate_spec_depth_varies", w)] == 1.0
        assert ("specgate_spec_depth_scheduled", ()) not in got  # not told the schedule
    # per position over the c8 window, marked lower bounds: (188-56)/228, (64-32)/228, (40-20)/228
    for i, acc in enumerate((132, 32, 20)):
        key = ("specgate_spec_position_acceptance_rate", (("basis", "lower_bound"), ("position", str(i)), *w))
        assert c8[key] == pytest.approx(acc / 228)
    assert not any(k[0] == "specgate_spec_position_acceptance_rate" and ("basis", "exact") in k[1] for k in c8)


def test_vllm_told_the_schedule_exports_the_scheduled_k():
    got = _samples(_run(VLLM, speculative_config=CONFIG))
    assert got[("specgate_spec_depth_scheduled", ())] == 3.0  # 0 running: batch 1, k = 3
    assert got[("specgate_spec_depth_max", (("source", "positions"),))] == 3.0  # the engine's own count first
    sched = told_schedule(ExporterSettings(speculative_config=CONFIG))
    assert sched is not None and [sched.k_at(b) for b in (1, 2, 8, 9, 100)] == [3, 1, 1, 1, 1]


def test_a_fixed_depth_window_is_exact():
    # a draft model proposes exactly k every round: the real draft arm, 5487 draft tokens = 3 x 1829 drafts
    fx = Path(__file__).parents[1] / "fixtures" / "vllm"
    st = ExporterState.from_settings(ExporterSettings(windows=[60.0], min_drafts=1), started_at=0.0)
    for i, name in enumerate(("metrics-draft-before.txt", "metrics-draft-after.txt")):
        st.record_success(snapshot_from_text((fx / name).read_text(), timestamp=60.0 * i), 0.0)
    got = _samples(st)
    w = (("window", "1m"),)
    assert got[("specgate_spec_depth_varies", w)] == 0.0
    assert got[("specgate_spec_depth_mean", w)] == got[("specgate_spec_depth_max", (("source", "positions"),))]
    pos = [k for k in got if k[0] == "specgate_spec_position_acceptance_rate"]
    assert pos and all(("basis", "exact") in k[1] for k in pos)


def test_sglang_adaptive_gauges_move_and_the_depth_varies():
    st = _run(SGL)
    got = _samples(st)
    assert got[("specgate_spec_num_steps", ())] == 1.0 and got[("specgate_spec_num_draft_tokens", ())] == 2.0
    assert got[("specgate_spec_depth_varies", (("window", "1m"),))] == 1.0  # steps 3 -> 1 within the window
    assert ("specgate_spec_depth_mean", (("window", "1m"),)) not in got  # no proposed-token counter on SGLang
    # without /server_info the maximum is the gauge's current depth; with it under adaptive, the default tiers'
    assert got[("specgate_spec_depth_max", (("source", "gauge"),))] == 1.0
    adaptive = SideInfo(speculative=SpeculativeSettings(algorithm="EAGLE3", num_draft_tokens=4, num_steps=3,
                                                        eagle_topk=1, adaptive=True))
    got = _samples(_run(SGL, side=adaptive))
    assert got[("specgate_spec_depth_max", (("source", "server_info"),))] == SGLANG_ADAPTIVE_DEFAULT_MAX == 7
    told = _samples(_run(SGL, speculative_adaptive_config="default"))
    assert told[("specgate_spec_depth_scheduled", ())] == 7.0  # batch 1's tier: candidates 1, 3, 5, 7


def test_sglang_adaptive_with_an_unknown_config_file_has_no_maximum():
    side = SideInfo(speculative=SpeculativeSettings(algorithm="EAGLE3", num_draft_tokens=4, num_steps=3,
                                                    eagle_topk=1, adaptive=True, adaptive_config="/etc/t.json"))
    (stream,) = snapshot_from_text((D / SGL[1]).read_text(), timestamp=0.0, side=side).streams
    assert configured_depth(side.speculative, stream) is None  # its steps are the start, not the largest
    assert configured_depth(side.speculative, stream, told=5) == (5, "schedule")


def test_sglang_decode_only_length_on_the_real_adaptive_capture():
    st = _run(SGL)
    (w,) = st.tracker.sliding(60.0)
    assert (w.generation_tokens, w.drafts) == (144, 141)
    assert w.acceptance_length == pytest.approx(1.000, abs=1e-12)  # (144 - 3) / 141; SGLang's 144/141 = 1.021
    assert formulas.decode_only_length(144, 3, 141) == 1.0
    meta = json.loads((D / "sglang-adaptive-generate-meta.json").read_text())["meta_info"]
    assert formulas.decode_only_length(meta["completion_tokens"], 1, meta["spec_verify_ct"]) == 1.0
    assert meta["spec_accept_length"] == pytest.approx(48 / 47)  # the engine's own, prefill included
    (cw,) = list(st.tracker.completed)
    assert cw.acceptance_length == pytest.approx(1.0)  # the batch window too


def test_sglang_spelling_of_k():
    assert depth(4, 3, 1) == 3 and depth(None, 3, 1) == 3 and depth(None, 3, 4) is None
    assert depth(0, None, None) == 0 and depth(None, None, None) is None


# SGLang 0.5.23's resolved DFlash launch as `/server_info` reports it (`build_server_info` is `resolved_dict()`):
# the shape of SGLang's own resolution in tests/fixtures/oracle/sglang-0.5.23-spec-resolution.json (its DFLASH
# rows: `_handle_dflash` forces num_steps and top-k to 1, draft tokens = the drafter's block_size 16). No DFlash
# capture exists (the CPU build refuses DFlash); the gauges' shape is from SGLang's source: metrics_reporter.py
# `_active_spec_config_snapshot` (the DFlash worker has no `speculative_num_steps`, so the gauge reads the
# resolved 1; `spec_num_draft_tokens` = its block) and `draft_per_round = num_draft_tokens - 1`.
DFLASH = SpeculativeSettings(algorithm="DFLASH", num_draft_tokens=16, num_steps=1, eagle_topk=1, adaptive=False)


@pytest.mark.parametrize("algorithm", ["DFLASH", "DSPARK", "dflash"])
def test_sglang_block_drafters_k_is_the_block_minus_one_never_the_steps(algorithm: str):
    assert depth(16, 1, 1, algorithm) == 15  # the worker drafts positions 1..15 of the block
    assert depth(None, 1, 1, algorithm) is None  # steps forced to 1 say nothing of the block
    assert depth(None, 1, 1) == 1 and depth(None, 1, 1, "EAGLE3") == 1  # a chain's steps are its k


def test_sglang_dflash_configured_depth_from_server_info_and_gauges():
    stream = StreamSnapshot(model="m", rank="0", spec=SpecCounters(verify_calls=10.0, num_draft_tokens=16.0),
                            spec_num_steps=1.0, spec_num_draft_tokens=16.0)
    assert configured_depth(DFLASH, stream) == (15, "server_info")
    assert stream.spec is not None and counted_depth(stream.spec) == 15 and settings_depth(DFLASH) == 15
    unrefreshed = replace(stream, spec_num_draft_tokens=0.0)  # a gauge not refreshed yet, steps already 1
    no_tokens = replace(DFLASH, num_draft_tokens=None)
    assert configured_depth(no_tokens, unrefreshed) is None  # k = 1 from the steps would be a depth never run
    assert configured_depth(no_tokens, stream) == (15, "gauge")
    assert configured_depth(no_tokens, unrefreshed, told=15) == (15, "schedule")


@pytest.mark.parametrize(("flags", "needle"), [
    ({"speculative_config": "{not json"}, "--speculative-config"),
    ({"speculative_config": '{"num_speculative_tokens":3,"num_speculative_tokens_per_batch_size":[[2,8,1]]}'},
     "--speculative-config"),
    ({"speculative_adaptive_config": "/nonexistent/adaptive.json"}, "--speculative-adaptive-config"),
    ({"speculative_config": CONFIG, "speculative_adaptive_config": "default"}, "not both"),
])
def test_a_schedule_that_does_not_read_is_one_line(flags: dict[str, str], needle: str):
    with pytest.raises(ValueError, match="invalid setting") as e:
        told_schedule(ExporterSettings(**flags))  # type: ignore[arg-type]
    assert needle in str(e.value) and "\n" not in str(e.value)
