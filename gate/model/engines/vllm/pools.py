"""vLLM 0.32's hybrid KV pool: sliding-window and full-attention layers in one block pool, sized as vLLM sizes it.

Why here: a hybrid target (gpt-oss, Gemma-3) is no uniform pool of `bytes // (bytes per token x block)`. vLLM's
hybrid KV cache manager (vllm/v1/core/kv_cache_utils.py, on for the CPU platform too: `support_hybrid_kv_cache`)
groups the layers by spec, pads every group to the same number of layers, and hands every group's block table its
block ids from ONE shared pool. What follows mirrors, with the names of 0.32:

- `_get_kv_cache_groups_uniform_page_size`: layers bucketed by spec (one bucket per window size); group size =
  the smallest bucket, or the largest when it is < 1.5 x the smallest; each bucket split into cdiv(n, size) groups.
- `get_kv_cache_config_from_groups` / `_get_kv_cache_bytes_per_block`: one block = the widest group's pages,
  group size x page; `num_blocks = available // bytes_per_block` (`num_gpu_blocks`).
- `get_kv_cache_capacity` / `get_max_concurrency_for_kv_cache_config`: a request at `max_model_len` takes
  cdiv(max_model_len, block) blocks in every full group and cdiv(min(window - 1 + in-flight, max_model_len), block)
  + 1 in every sliding group (`SlidingWindowSpec.max_admission_blocks_per_request`); vLLM's reported
  `kv_cache_size_tokens` = int(num_blocks / blocks per request x max_model_len).

Pool tokens of a hybrid, as the gate judges them: that capacity with the sliding layers charged their whole
`max_model_len` (in-flight = max_model_len). It is what every request of up to window - 1 + in-flight tokens really
costs (its sliding layers then hold all its tokens), so it is the pool for the mixes the gate judges; vLLM's own
`kv_cache_size_tokens` is larger (it prices requests at max_model_len, their sliding layers at window - 1 +
in-flight tokens, in-flight = `--max-num-batched-tokens` x concurrent batches, which the plan does not carry).
Linear-attention and Mamba hybrids are not sized here: vLLM first aligns the attention block to the Mamba page per attention backend
(`Platform._align_hybrid_block_size`), which the configs alone do not decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.model.engines.base import PoolPrediction
from gate.model.geometry import KVGeometry


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class LayerSpec:
    """One KV layer as vLLM's manager sees it: full attention, or sliding with its window; bytes per token."""

    kind: str  # "full" | "sliding"
    bytes_per_token: int
    window: int | None = None

    @property
    def key(self) -> tuple[str, int, int | None]:
        """Layers with equal keys share a spec (vLLM groups equal `KVCacheSpec`s)."""
        return self.kind, self.bytes_per_token, self.window


@dataclass(frozen=True)
class Group:
    """One KV cache group: its spec, how many layers (padding included) share its block table, and their bytes
    per token together (one block of the group is `bytes_per_token x block`)."""

    spec: LayerSpec
    layers: int
    bytes_per_token: int


def vllm_kv_groups(layers: list[LayerSpec]) -> list[Group]:
    """vLLM's KV cache groups for layers of one page size (`get_kv_cache_groups`, the uniform-page-size path).

    All layers of one spec: one group (`_get_kv_cache_groups_uniform_spec`); all full attention, or all sliding with
    one window, of any sizes: one group too (`UniformTypeKVCacheSpecs`); else buckets by spec padded to one group size.
    ValueError when the page sizes differ between kinds (vLLM then repacks or unifies pages: not modelled).
    """
    if not layers:
        raise ValueError("no KV layers")
    kinds = {(x.kind, x.window) for x in layers}
    if len(kinds) == 1:
        return [Group(layers[0], len(layers), sum(x.bytes_per_token for x in layers))]
    if len({x.bytes_per_token for x in layers}) != 1:
        raise ValueError("layers of different page sizes next to sliding-window layers: vLLM repacks them "
                         "(_get_packed_kv_cache_groups / unify_kv_cache_spec_page_size), not modelled")
    buckets: dict[tuple[str, int, int | None], int] = {}
    for x in layers:
        buckets[x.key] = buckets.get(x.key, 0) + 1
    smallest, largest = min(buckets.values()), max(buckets.values())
    size = largest if largest < smallest * 1.5 else smallest
    spec_of = {x.key: x for x in layers}
    groups: list[Group] = []
    for key, n in buckets.items():
        groups += [Group(spec_of[key], size, size * spec_of[key].bytes_per_token)] * _cdiv(n, size)
    return groups


def vllm_num_blocks(available_bytes: int, groups: list[Group], block_size: int) -> int:
    """`num_gpu_blocks`: available // the widest group's bytes per block (its layers' bytes per token x block)."""
    if available_bytes < 0 or block_size <= 0:
        raise ValueError("available bytes must not be negative and the block size must be positive")
    per_block = max(g.bytes_per_token for g in groups) * block_size
    return available_bytes // per_block


def vllm_blocks_per_request(groups: list[Group], block_size: int, max_model_len: int,
                            max_in_flight_tokens: int, extra_retained_tokens: int = 0) -> int:
    """Blocks one request at `max_model_len` takes from the shared pool, summed over the groups."""
    total = 0
    for g in groups:
        if g.spec.kind == "sliding" and g.spec.window is not None:
            held = min(g.spec.window - 1 + extra_retained_tokens + max_in_flight_tokens, max_model_len)
            total += _cdiv(held, block_size) + 1
        else:
            total += _cdiv(max_model_len, block_size)
    return total


def vllm_capacity_tokens(num_blocks: int, groups: list[Group], block_size: int, max_model_len: int,
                         max_in_flight_tokens: int, extra_retained_tokens: int = 0) -> int:
    """vLLM's `kv_cache_size_tokens` (`get_kv_cache_capacity`): max concurrency at max_model_len x max_model_len."""
    per_request = vllm_blocks_per_request(groups, block_size, max_model_len, max_in_flight_tokens,
                                          extra_retained_tokens)
    return int(num_blocks / per_request * max_model_len)


def layer_specs(geom: KVGeometry) -> list[LayerSpec] | None:
    """The KV layers of a geometry as vLLM specs; None when a layer is linear-attention/Mamba (not modelled)."""
    out: list[LayerSpec] = []
    for x in geom.layers:
        if x.kind in ("linear_attention", "mamba"):
            return None
        if x.kind == "sliding_attention":
            out.append(LayerSpec("sliding", x.bytes_per_token, x.window))
        elif x.kind in ("full_attention", "mla"):
            out.append(LayerSpec("full", x.bytes_per_token))
    return out


def vllm_hybrid_prediction(kv_cache_memory_bytes: int, target: KVGeometry, drafter: KVGeometry | None,
                           has_drafter: bool, block_size: int, max_model_len: int | None,
                           notes: tuple[str, ...] = ()) -> PoolPrediction:
    """The hybrid pool with and without the drafter's layers (vLLM puts them in the same pool).

    Blocks are vLLM's `num_gpu_blocks` exactly; tokens are its capacity at `max_model_len` with the sliding layers
    charged in full (module docstring), None without `max_model_len` or where the layout is not modelled.
    """
    out = list(notes)
    t_specs = layer_specs(target)
    if t_specs is None:
        out.append("no predicted pool: vLLM aligns the attention block to the linear-attention/Mamba state page per "
                   "attention backend (Platform._align_hybrid_block_size); not modelled from the configs")
        return PoolPrediction(block_size, None, None, None, None, tuple(out))

    def one(specs: list[LayerSpec]) -> tuple[int | None, int | None]:
        try:
            groups = vllm_kv_groups(specs)
        except ValueError as e:
            out.append(f"no predicted pool: {e}")
            return None, None
        blocks = vllm_num_blocks(kv_cache_memory_bytes, groups, block_size)
        if max_model_len is None:
            return blocks, None
        return blocks, vllm_capacity_tokens(blocks, groups, block_size, max_model_len, max_model_len)

    blocks_without, without = one(t_specs)
    blocks_with = with_d = None
    if not has_drafter:
        blocks_with, with_d = blocks_without, without
    else:
        d_specs = layer_specs(drafter) if drafter is not None else None
        if d_specs is None:
            out.append("no predicted pool with the drafter: its KV layers are unknown or not modelled")
        else:
            blocks_with, with_d = one(t_specs + d_specs)
    if max_model_len is None:
        out.append("vLLM hybrid pool: blocks only; its pool in tokens is its capacity at --max-model-len: "
                   "give engine.context_cap_tokens")
    else:
        out.append(f"vLLM hybrid KV manager: sliding-window and full-attention groups draw {block_size}-token "
                   f"blocks from one pool; tokens = blocks / (blocks per {max_model_len:,}-token request) x "
                   f"{max_model_len:,}, every layer holding every token (what requests of up to window - 1 + in-flight "
                   "tokens cost; vLLM's own kv_cache_size_tokens prices max_model_len-long requests and is larger)")
    return PoolPrediction(block_size, without, with_d, blocks_without, blocks_with, tuple(out))
