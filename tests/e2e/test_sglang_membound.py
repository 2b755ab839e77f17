"""SGLang's pool on the memory side: STANDALONE launched without `--max-total-tokens`.

Launch settings that make memory the binding limit: no `--max-total-tokens` (the cap side is
gone) and `--mem-fraction-static 0.05`, so SGLang's KV budget — free memory after loading
both models − free memory before loading × (1 − 0.05) — is about 1 GB of this
machine's free RAM instead of ~14 GB (SGLang's CPU default, 0.719, would allocate that).

The engine reports the figures it sizes the pool from in its start-up log, rounded to 0.01 GB
(sglang_live.StartupMemory), but its profile reads free RAM once more after the last of them
(after a garbage collection, with other processes on this shared machine allocating too):
measured here, the allocation came out 4.5%, 8.9% and 10.3% below the logged budget's tokens
(always below; 18 to 97 MB). So on this shared machine the memory side is proven only within
MEMORY_TOLERANCE of the budget SGLang logs, and SGLang's rule must be the closer one: the
alternative — the draft's own geometry — predicts 1,536 / 1,280 = 20% more tokens than the rule. With SGLang's own draft charge: for STANDALONE and EAGLE SGLang
assumes the draft has the target's per-layer KV and charges target_cell × draft_layers /
target_layers = 1,024 × 1/2 = 512 B (srt/model_executor/pool_configurator.py), not the tiny
draft's real 256 B. Both draft pools then get that many tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sglang_checks as sc
from harness import LiveArm, bring_up, engine_up, sample_value
from sglang_live import MEMBOUND_MEM_FRACTION, SGLANG

TARGET_CELL = sc.TARGET_CELL_BYTES  # 1,024
SGLANG_DRAFT_CHARGE = TARGET_CELL * 1 // 2  # 512: SGLang's rule, draft layers / target layers
DRAFT_GEOMETRY = 1 * 1 * (32 + 32) * 4  # 256: the tiny draft's own KV per token
MEMORY_TOLERANCE = 0.15  # relative; observed 4.5-10.3% (module docstring)


@pytest.fixture(scope="module")
def live(sglang_python: Path, sglang_models: Path, e2e_logs: Path, e2e_record: dict):
    lv = bring_up(SGLANG, "standalone", sglang_models, sglang_python, e2e_logs, max_total_tokens=None,
                  mem_fraction_static=MEMBOUND_MEM_FRACTION, tag="membound")
    try:
        lv.exporter.wait_for(lambda s: engine_up(s) and sample_value(s, "specgate_kv_pool_tokens", pool="target"),
                             30, "the pool on the exporter")
        lv.reading = lv.exporter.samples()
        lv.server_info = lv.engine.server_info()
        yield lv
    finally:
        lv.stop()


def _band(live: LiveArm) -> tuple[int, int, int]:
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
    off = mid // cell / alloc - 1
    e2e_record["sglang-standalone-membound"]["predicted_off"] = off
    assert abs(off) <= MEMORY_TOLERANCE, (alloc, mid // cell, off)
    # the draft's own geometry (256 B) predicts 20% more than SGLang's rule: farther from the allocation
    geo = TARGET_CELL + DRAFT_GEOMETRY
    assert abs(mid // geo / alloc - 1) > abs(off), (alloc, mid // geo, mid // cell)
    assert live.engine.startup_memory().kv_tokens == (alloc, alloc)  # the draft pool gets as many tokens
    assert sample_value(live.reading, "specgate_kv_pool_tokens", pool="target") == alloc
    sc.assert_kv_bytes_are_the_target_pool(live)


def test_gate_predicts_the_memory_side(live, sglang_models, tmp_path, e2e_record):
    alloc = live.engine.counters().max_total_num_tokens
    _, mid, _ = _band(live)
    doc = sc.run_budget(live, sglang_models, tmp_path, "standalone", kv_budget_bytes=mid, max_total_tokens=None)
    got = doc["pool"]["predicted_tokens"]["with_drafter"]
    e2e_record.setdefault("sglang-standalone-membound", {}).update(gate_predicted_tokens=got)
    assert got == mid // (TARGET_CELL + SGLANG_DRAFT_CHARGE)  # SGLang's accounting, not the draft's geometry
    assert abs(got / alloc - 1) <= MEMORY_TOLERANCE, (got, alloc)
    assert doc["drafter"]["engine_charge_bytes_per_token"] == SGLANG_DRAFT_CHARGE, doc["drafter"]
