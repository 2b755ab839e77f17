"""specgate's stand-in for SGLang's CPU kernel package `sgl_kernel` (see ../README.md).

Importing it registers `torch.ops.sgl_kernel.extend_attention_cpu` and
`decode_attention_cpu` and exposes the module-level CPU ops SGLang 0.5.23 imports. Any
other attribute is a stub that raises `NotImplementedError` naming itself when called:
SGLang imports some ops at module level that it never calls on this path, and a new
version that does call one must fail loudly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from . import ops, speculative  # noqa: F401  (speculative: `from sgl_kernel.speculative import ...`)
from .ops import (  # noqa: F401
    StandInMissing,
    assign_draft_cache_locs_contiguous_cpu,
    assign_extend_cache_locs_cpu,
    assign_req_to_token_pool_cpu,
    build_draft_decode_metadata_cpu,
    build_tree_kernel_efficient_cpu,
    copy_all_layer_kv_cache_cpu,
    fill_accept_out_cache_loc_cpu,
    fill_bonus_tokens_cpu,
    verify_tree_greedy_cpu,
)

__version__ = "0.0.0+specgate.stand.in"
STAND_IN = True

PROVIDED: tuple[str, ...] = (
    "assign_req_to_token_pool_cpu", "assign_extend_cache_locs_cpu", "assign_draft_cache_locs_contiguous_cpu",
    "build_draft_decode_metadata_cpu", "copy_all_layer_kv_cache_cpu", "fill_bonus_tokens_cpu",
    "fill_accept_out_cache_loc_cpu", "build_tree_kernel_efficient_cpu", "verify_tree_greedy_cpu",
    "speculative.reconstruct_indices_from_tree_mask",
    "torch.ops.sgl_kernel.extend_attention_cpu", "torch.ops.sgl_kernel.decode_attention_cpu",
)

_LIB = torch.library.Library("sgl_kernel", "DEF")
_LIB.define(
    "decode_attention_cpu(Tensor query, Tensor(a!) k_cache, Tensor(b!) v_cache, float key_scale, "
    "float value_scale, Tensor(c!) output, Tensor? key, Tensor? value, Tensor loc, Tensor(d!) attn_logits, "
    "Tensor req_to_token, Tensor req_pool_indices, Tensor seq_lens, float sm_scale, float logit_cap, "
    "bool is_cross, int sliding_window, Tensor? encoder_lens, Tensor? sinks) -> ()")
_LIB.define(
    "extend_attention_cpu(Tensor q_extend, Tensor? k_extend, Tensor? v_extend, Tensor(a!) o_extend, "
    "Tensor k_buffer, Tensor v_buffer, float key_scale, float value_scale, Tensor req_to_token, "
    "Tensor req_pool_indices, Tensor seq_lens, Tensor extend_seq_lens, Tensor extend_start_loc, "
    "int max_len_extend, float sm_scale, float logit_cap, bool is_cross, int sliding_window, "
    "Tensor? encoder_lens, Tensor? sinks, Tensor? tree_mask, bool is_causal) -> ()")
_LIB.impl("decode_attention_cpu", ops.decode_attention_cpu, "CPU")
_LIB.impl("extend_attention_cpu", ops.extend_attention_cpu, "CPU")


def _stub(name: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise ops._missing(f"op sgl_kernel.{name}")

    missing.__name__ = missing.__qualname__ = name
    missing.__doc__ = f"Not provided by specgate's sgl_kernel stand-in: calling it raises, naming {name}."
    return missing


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return _stub(name)
