"""SGLang's pool on the memory side: STANDALONE launched without `--max-total-tokens`.

Launch settings that make memory the binding limit: no `--max-total-tokens` (the cap side is
gone) and `--mem-fraction-static 0.02`, so SGLang's KV budget — free memory after loading
both models − free memory before loading × (1 − 0.02) — is a few hundred MB of this
machine's free RAM instead of ~14 GB (SGLang's CPU default, 0.719, would allocate that).

The engine reports the figures it sized the pool from in its start-up log, rounded to 0.01 GB
(sglang_live.StartupMemory). Within that rounding the allocation must equal budget //
(target cell + draft cell) with SGLang's own draft charge: for STANDALONE and EAGLE SGLang
assumes the draft has the target's per-layer KV and charges target_cell × draft_layers /
target_layers = 1,024 × 1/2 = 512 B (srt/model_executor/pool_configurator.py), not the tiny
draft's real 256 B. Both draft pools then get that many tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sglang_checks as sc
from harness import sample_value
from sglang_live import MEMBOUND_MEM_FRACTION, SGLangArm, bring_up, engine_up

TARGET_CELL = sc.TARGET_CELL_BYTES  # 1,024
SGLANG_DRAFT_CHARGE = TARGET_CELL * 1 // 2  # 512: SGLang's rule, draft layers / target layers
DRAFT_GEOMETRY = 1 * 1 * (32 + 32) * 4  # 256: the tiny draft's own KV per token


@pytest.fixture(scope="module")
def live(sglang_python: Path, sglang_models: Path, e2e_logs: Path, e2e_record: dict):
    lv = bring_up("standalone", sglang_models, sglang_python, e2e_logs, max_total_tokens=None,
                  mem_fraction_static=MEMBOUND_MEM_FRACTION, tag="membound")
    try:
        lv.exporter.wait_for(lambda s: engine_up(s) and sample_value(s, "specgate_kv_pool_tokens", pool="target"),
                             30, "the pool on the exporter")
        lv.reading = lv.exporter.samples()
        lv.server_info = lv.engine.server_info()
        yield lv
    finally:
        lv.stop()


def _band(live: SGLangArm) -> tuple[int, int, int]:
    lo, mid, hi = sc.kv_budget_bytes(live)
    return lo, mid, hi


def test_memory_binds_and_sglang_charges_the_draft_at_the_targets_per_layer_kv(live, e2e_record):
    alloc = live.engine.counters().max_total_num_tokens
    assert live.server_info["max_total_tokens"] is None
    assert float(live.server_info["mem_fraction_static"]) == MEMBOUND_MEM_FRACTION
    lo, mid, hi = _band(live)
    cell = TARGET_CELL + SGLANG_DRAFT_CHARGE
    e2e_record.setdefault("sglang-standalone-membound", {}).update(
        startup_seconds=live.engine.ready_seconds, engine_pool_tokens=alloc, kv_budget_bytes=mid,
        predicted_tokens_band=[lo // cell, hi // cell], predicted_tokens=mid // cell)
    assert alloc > 8192, "memory did not bind above the default cap: the settings did not do what they claim"
    assert lo // cell <= alloc <= hi // cell, (alloc, lo // cell, hi // cell)
    # the draft's own geometry (256 B) would predict ~20% more: outside the logs' rounding band
    geo = TARGET_CELL + DRAFT_GEOMETRY
    assert not (lo // geo <= alloc <= hi // geo), (alloc, lo // geo, hi // geo)
    assert live.engine.startup_memory().kv_tokens == (alloc, alloc)  # the draft pool gets as many tokens
    assert sample_value(live.reading, "specgate_kv_pool_tokens", pool="target") == alloc
    sc.assert_kv_bytes_are_the_target_pool(live)


def test_gate_predicts_the_memory_side(live, sglang_models, tmp_path, e2e_record):
    alloc = live.engine.counters().max_total_num_tokens
    lo, mid, hi = _band(live)
    docs = [sc.run_budget(live, sglang_models, tmp_path, "standalone", kv_budget_bytes=b, max_total_tokens=None)
            for b in (lo, hi)]
    got = [d["pool"]["predicted_tokens"]["with_drafter"] for d in docs]
    e2e_record.setdefault("sglang-standalone-membound", {}).update(gate_predicted_band=got)
    assert got[0] <= alloc <= got[1], (got, alloc)
    assert docs[0]["drafter"]["engine_charge_bytes_per_token"] == SGLANG_DRAFT_CHARGE, docs[0]["drafter"]
