"""Record SGLang 0.5.23's own KV pool sizing of hybrid targets: the oracle for the gate's SGLang hybrid pool (issue
35.3, gate/model/engines/sglang/pools.py).

Run with the SGLang venv's python (tools/sglang_cpu.sh builds it; no server is started, no model is built, nothing
is downloaded):

    ~/.cache/specgate/sglang-cpu-0.5.23/venv/bin/python tools/oracle/sglang_kv_sizing.py [OUT.json]

SGLang's own code is called in-process: `KVCacheConfigurator.config_from_budget` (which picks the configurator with
`create_memory_pool_configurator`: `HybridSWAPoolConfigurator` or `DefaultPoolConfigurator`, and applies
`--max-total-tokens`), and for a linear-attention target first `KVCacheConfigurator._handle_max_mamba_cache` on the
budget in GB (as `_profile_available_bytes` calls it), with SGLang's own `Qwen3NextConfig` / `Qwen3_5TextConfig`
built from the fixture config for `mamba2_cache_params` and `full_attention_layer_ids`, and its
`is_hybrid_swa_model` deciding whether a sliding-window target gets the hybrid SWA pool. Constructed, not SGLang's:
the configurator record (`kvc`: layer ids, page size, dtype bf16, a model-config record with the heads of the
config; TP 1, no DCP/PP/HiSparse, not a draft worker) and the runtime-context bags those functions read
(`get_schedule()` etc., and layers/cp/utils' `get_parallel`: SGLang's defaults — swa_full_tokens_ratio 0.8, mamba_full_memory_ratio 0.9, radix cache
on, overlap on; with a drafter EAGLE, max_running_requests 48 and the row's num_draft_tokens), patched into the two
modules; `linear_attn_tp_size` is 1 and the CPU head adjustment is off (a GPU launch). The Mamba tracking ratio is
the row's (3: no_buffer; 5: extra_buffer with overlap, the CUDA default). Rows: configs x KV budgets x page sizes x
drafter (none, a 1-layer EAGLE/MTP head) x `--max-total-tokens` (unset, 100,000) x tracking ratio (linear only).
Output: tests/fixtures/oracle/sglang-0.5.23-kv-sizing.json (default). Needs only the standard library and SGLang.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "sglang-0.5.23-kv-sizing.json"
CONFIGS = ["target-hybrid-swa__openai__gpt-oss-120b.json", "target-hybrid-swa__google__gemma-3-27b-it.json",
           "target-hybrid-swa__mariocde__functiongemma-270m-onnx.json",
           "target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json",
           "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json"]
BUDGETS = [1 << 30, 8 << 30, 40 << 30, 64 << 30]
PAGES = [1, 64]
DRAFTERS = ["none", "eagle_1_layer"]
CAPS = [None, 100_000]
DRAFT_TOKENS = 4
RATIOS = [3, 5]


def text_of(raw: dict[str, Any]) -> dict[str, Any]:
    return raw.get("text_config", raw)


def layer_ids(text: dict[str, Any]) -> tuple[list[int], list[int], list[int]]:
    """(full, sliding, linear) decoder layer ids from the config's fields."""
    n = text["num_hidden_layers"]
    types = text.get("layer_types")
    if not (isinstance(types, list) and types):
        if text.get("full_attention_interval"):
            k = text["full_attention_interval"]
            types = ["full_attention" if (i + 1) % k == 0 else "linear_attention" for i in range(n)]
        else:  # Gemma-3: every 6th layer global (transformers' Gemma3TextConfig default)
            p = text.get("sliding_window_pattern") or 6
            types = ["full_attention" if (i + 1) % p == 0 else "sliding_attention" for i in range(n)]
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    return full, [i for i, t in enumerate(types) if "sliding" in t], [i for i, t in enumerate(types) if "linear" in t]


class Bags:
    """The runtime-context bags SGLang's sizing reads, at SGLang's defaults (module docstring)."""

    def __init__(self, page: int, cap: int | None, drafter: bool, ratio: int) -> None:
        self.schedule = NS(swa_full_tokens_ratio=0.8, _swa_full_tokens_ratio_explicitly_set=False,
                           mamba_full_memory_ratio=0.9, max_mamba_cache_size=None, max_total_tokens=cap,
                           page_size=page, max_running_requests=48 if drafter else None,
                           disable_overlap_schedule=False, chunked_prefill_size=8192, mem_fraction_static=0.85,
                           prefill_max_requests=None)
        self.spec = NS(speculative_algorithm="EAGLE" if drafter else None,
                       speculative_num_draft_tokens=DRAFT_TOKENS if drafter else None)
        self.memory = NS(enable_unified_memory=False, enable_hisparse=False, disable_radix_cache=False)
        self.parallel = NS(attn_dcp_size=1, attn_tp_size=1, pp_size=1, attn_cp_size=1, attn_dp_size=1)
        self.mamba = NS(enable_mamba_extra_buffer=ratio == 5, enable_mamba_extra_buffer_lazy=False,
                        enable_linear_replayssm_spec=False)
        self.context = NS(override=self.override)

    def override(self, name: str, **kw: Any) -> None:
        for k, v in kw.items():
            setattr(self.schedule, k, v)


def install(bags: Bags) -> None:
    import sglang.srt.mem_cache.kv_cache_configurator as kc
    import sglang.srt.model_executor.pool_configurator as pc

    for mod in (pc, kc):
        for name, value in (("get_schedule", bags.schedule), ("get_spec", bags.spec), ("get_memory", bags.memory),
                            ("get_parallel", bags.parallel), ("get_exec", NS(mamba=bags.mamba)),
                            ("get_context", bags.context), ("get_disagg", NS(disaggregation_mode="null"))):
            if hasattr(mod, name):
                setattr(mod, name, lambda v=value: v)
    import sglang.srt.layers.cp.utils as cp

    cp.get_parallel = lambda: NS(enable_dsa_cache_layer_split=False, attn_cp_size=1)
    kc.envs = NS(SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK=NS(get=lambda: False))
    kc.get_mamba_tracking_slots = lambda extra_buffer, overlap, lazy=False: (0 if not extra_buffer else
                                                                            2 if overlap else 1)


def one(inputs: dict[str, Any]) -> dict[str, Any]:
    import sglang.srt.configs.qwen3_next as qn
    import sglang.srt.model_executor.pool_configurator as pc
    import torch
    from sglang.srt.configs.model_config import is_hybrid_swa_model
    from sglang.srt.configs.qwen3_5 import Qwen3_5TextConfig
    from sglang.srt.configs.qwen3_next import Qwen3NextConfig
    from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    raw = json.loads((ROOT / "tests" / "fixtures" / "configs" / inputs["config"]).read_text())
    text = text_of(raw)
    drafter = inputs["drafter"] != "none"
    bags = Bags(inputs["page_size"], inputs["max_total_tokens"], drafter, inputs.get("mamba_slots_per_request", 3))
    install(bags)
    full, sliding, linear = layer_ids(text)
    mambaish = None
    if linear:
        qn.linear_attn_tp_size = lambda: 1
        qn._is_cpu = False
        cls = Qwen3_5TextConfig if "Qwen3_5" in str(raw.get("architectures")) else Qwen3NextConfig
        mambaish = cls(**{k: v for k, v in text.items() if k != "layer_types"})
    pc.mambaish_config = lambda mc: mambaish
    heads, dim = text["num_key_value_heads"], text["head_dim"]
    hybrid_swa = bool(sliding) and is_hybrid_swa_model(raw.get("architectures") or [], NS(**text))
    model_config = NS(get_num_kv_heads=lambda tp, dcp=1: heads, get_swa_num_kv_heads=lambda tp: heads,
                      head_dim=dim, v_head_dim=dim, swa_head_dim=dim, swa_v_head_dim=dim,
                      hf_config=NS(architectures=raw.get("architectures") or ["X"], model_type="x"),
                      attention_arch="MHA", context_len=text.get("max_position_embeddings", 32768))
    n = text["num_hidden_layers"]
    kvc = NS(kv_cache_dtype_str="auto", kv_cache_dtype=torch.bfloat16, model_config=model_config,
             layer_info=NS(start_layer=0, end_layer=n, num_effective_layers=n,
                           full_attention_layer_ids=full if hybrid_swa else list(range(n)),
                           swa_attention_layer_ids=sliding if hybrid_swa else []),
             is_hybrid_swa=hybrid_swa, is_draft_worker=False, pp_size=1, attn_dp_size=1,
             spec_algorithm=SpeculativeAlgorithm.EAGLE if drafter else SpeculativeAlgorithm.NONE,
             spec_aux_config=NS(eagle_draft_num_layers=1 if drafter else None, eagle_draft_swa_num_layers=None),
             fused_entry_bytes=lambda name: None, sliding_window_size=text.get("sliding_window"),
             page_size=inputs["page_size"], use_mla_backend=False, server_args=NS(enable_hisparse=False),
             mambaish_config=mambaish, hybrid_gdn_config=mambaish, hybrid_kda_config=None,
             extra_mamba_cache_bytes_per_req=0)
    kvc._calculate_mamba_ratio = lambda: KVCacheConfigurator._calculate_mamba_ratio(kvc)
    kvc._apply_token_constraints = lambda tokens: KVCacheConfigurator._apply_token_constraints(kvc, tokens)
    kvc.fused_entry_bytes = lambda name: None
    pc.compute_page_shard_scratch_bytes = lambda kvc, include_mtp=False: 0
    budget = inputs["kv_cache_memory_bytes"]
    answer: dict[str, Any] = {"pool": "hybrid_swa" if hybrid_swa else "default"}
    try:
        if mambaish is not None:
            budget = int(KVCacheConfigurator._handle_max_mamba_cache(kvc, budget / (1 << 30)) * (1 << 30))
            answer["max_mamba_cache_size"] = bags.schedule.max_mamba_cache_size
            answer["mamba_cache_per_req"] = int(mambaish.mamba2_cache_params.mamba_cache_per_req)
        config = KVCacheConfigurator.config_from_budget(kvc, budget)
    except (RuntimeError, ValueError, AssertionError) as e:
        return {"error": str(e).splitlines()[0][:200]}
    answer["max_total_num_tokens"] = config.max_total_num_tokens
    if hybrid_swa:
        answer["swa_max_total_num_tokens"] = config.swa_max_total_num_tokens
    return answer


def main() -> None:
    import sglang

    logging.disable(logging.WARNING)
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE
    rows = []
    for config in CONFIGS:
        ratios = RATIOS if "hybrid-linear" in config else [None]
        for budget in BUDGETS:
            for page in PAGES:
                for drafter in DRAFTERS:
                    for cap in CAPS:
                        for ratio in ratios:
                            inputs: dict[str, Any] = {"config": config, "kv_cache_memory_bytes": budget,
                                                      "page_size": page, "drafter": drafter, "max_total_tokens": cap}
                            if ratio is not None:
                                inputs["mamba_slots_per_request"] = ratio
                            if drafter != "none":
                                inputs["num_draft_tokens"] = DRAFT_TOKENS
                            rows.append({"inputs": inputs, "answer": one(inputs)})
    doc = {"engine": "sglang", "version": sglang.__version__,
           "call": "sglang.srt.mem_cache.kv_cache_configurator.KVCacheConfigurator: _handle_max_mamba_cache, "
                   "config_from_budget (create_memory_pool_configurator: HybridSWAPoolConfigurator, "
                   "DefaultPoolConfigurator)",
           "made_by": "tools/oracle/sglang_kv_sizing.py, run in-process with the SGLang 0.5.23 CPU venv's python "
                      "(tools/sglang_cpu.sh); configurator record and runtime bags constructed; no server, no model",
           "rows": rows}
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
