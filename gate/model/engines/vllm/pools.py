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
k does not move it: vLLM 0.32 reads k for sliding layers only as `extra_retained_tokens`
(`num_prefill_lookahead_tokens` - 1: k - 1 for multi-module MTP, 0 for every other method), tokens a request
holds below max_model_len, never `num_gpu_blocks` (the oracle's `swa_k` rows).
Linear-attention hybrids (Gated DeltaNet: Qwen3-Next, Qwen3.5). vLLM first sets the attention block so that one
attention page holds a layer's whole state (`Platform._align_hybrid_block_size`): block = the backend's kernel
multiple (32 on the CPU backend, 16 for FlashAttention, or the user's larger `--block-size`) x cdiv(state page,
that multiple x attention bytes per token); the state page is then padded to the attention page, so every layer has
one page size and the groups above apply (one full-attention group, the linear layers in groups of as many). The
block hangs on the attention backend and the block vLLM starts from (without --block-size 16 with FlashAttention,
128 on CPU; the step is max(multiple, start)), which the configs do not decide: the plan's `engine.block_size` is
the one vLLM reports after alignment, and one below what the state needs is refused (no prediction, with both minima). A
request takes cdiv(max_model_len, block) blocks in each full group and, whatever its length, 2 blocks in each linear
group with prefix caching (vLLM's default for hybrids: `mamba_cache_mode` "align"; 1 in "none"), so the pool in
tokens is vLLM's own `kv_cache_size_tokens` at `max_model_len`. That prices requests at `max_model_len`: shorter ones
pay the same state blocks, so the prediction carries `RequestBlocks` and the kv_pool line judges a mix in blocks,
concurrency x (full groups x cdiv(prompt + output, block) + linear groups x state blocks) <= num_gpu_blocks.
With k draft tokens (`num_speculative_tokens`; MTP, the common case on these) vLLM widens every linear layer's conv
state by k columns (`gated_delta_net_state_shape(num_spec=k)`, so the aligned block may grow), gives every linear
group k more state blocks per request (`MambaSpec.num_speculative_blocks`), and puts the MTP layer's full attention
(the target's heads) in the full-attention bucket, which sets the group size (13 full beside 36 linear: groups of
13). `vllm_blocks_per_request(num_speculative_blocks=k)` sizes that exactly (the oracle's MTP rows), and so does the
profile's prediction given the plan's k and the target's config (`linear_state_with_drafts`): the block checked
against the widened state, the drafter's layers in the groups, `RequestBlocks` holding 2 + k (1 + k) state blocks per
linear group. Where k, the config's conv kernel or the drafter's layers are unknown (an MTP head whose config names no
layer count), no pool with the drafter, said in a note. A drafterless method (ngram, suffix) is sized the same way
with no drafter layer: vLLM widens the state and adds the k blocks for every speculative method
(`MambaBase.get_kv_cache_spec` reads `num_speculative_tokens`; the oracle's ngram rows), so its pool "with the
drafter" is the pool with speculation. Mamba-2 hybrids (Nemotron-H) are sized the same way, one `MambaSpec` per
Mamba-2 layer, its state as vLLM's Nemotron-H class sizes it (`vllm_mamba2_state`: the SSM state in float32 unless
the config names another `mamba_ssm_cache_dtype`) and, in align mode only, one prefill checkpoint block more per
request in each Mamba-2 group (`MambaMixer2.get_kv_cache_spec`: `num_prefill_checkpoint_blocks=1`, priced by
`MambaSpec.max_memory_usage_bytes` as 2 + 1 + k; "none" stays 1 + k, and 0.32 has no other mode); other Mamba-2
architectures (Granite-4.0-H, Bamba, Falcon-H1, Zamba2: other field names and state dtype rules) get no prediction, said in a note. On either kind, a drafter whose
attention page differs from the target's (EAGLE heads, draft models) makes vLLM unify pages into groups of two
block sizes (the oracle's hybrid-drafter-pages rows): no pool with it, said in a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.model.config import ConfigError, ModelConfig, resolve_text_config
from gate.model.dtypes import DTYPE_BYTES, canonical_dtype
from gate.model.engines.base import PoolPrediction, RequestBlocks
from gate.model.geometry import KVGeometry, kv_geometry


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class LayerSpec:
    """One KV layer as vLLM's manager sees it: full attention, or sliding with its window; bytes per token."""

    kind: str  # "full" | "sliding" | "linear" (a MambaSpec: a Gated DeltaNet or Mamba-2 state padded to the page)
    bytes_per_token: int
    window: int | None = None
    state_bytes: int | None = None
    checkpoint_blocks: int = 0  # MambaSpec.num_prefill_checkpoint_blocks: 1 for Mamba-2 (MambaMixer2), 0 for GDN

    @property
    def key(self) -> tuple[str, int, int | None, int]:
        """Layers with equal keys share a spec (vLLM groups equal `KVCacheSpec`s)."""
        return self.kind, self.bytes_per_token, self.window, self.checkpoint_blocks


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
    buckets: dict[tuple[str, int, int | None, int], int] = {}
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
                            max_in_flight_tokens: int, extra_retained_tokens: int = 0,
                            mamba_cache_mode: str = "align", num_speculative_blocks: int = 0) -> int:
    """Blocks one request at `max_model_len` takes from the shared pool, summed over the groups (a linear group:
    `MambaSpec.max_memory_usage_bytes`, 2 pages and its prefill checkpoint ones in "align" mode, 1 in "none", plus
    one per draft token; vLLM 0.32 has no other mode)."""
    total = 0
    for g in groups:
        if g.spec.kind == "linear":
            total += (2 + g.spec.checkpoint_blocks if mamba_cache_mode == "align" else 1) + num_speculative_blocks
        elif g.spec.kind == "sliding" and g.spec.window is not None:
            held = min(g.spec.window - 1 + extra_retained_tokens + max_in_flight_tokens, max_model_len)
            total += _cdiv(held, block_size) + 1
        else:
            total += _cdiv(max_model_len, block_size)
    return total


def vllm_capacity_tokens(num_blocks: int, groups: list[Group], block_size: int, max_model_len: int,
                         max_in_flight_tokens: int, extra_retained_tokens: int = 0,
                         mamba_cache_mode: str = "align", num_speculative_blocks: int = 0) -> int:
    """vLLM's `kv_cache_size_tokens` (`get_kv_cache_capacity`): max concurrency at max_model_len x max_model_len."""
    per_request = vllm_blocks_per_request(groups, block_size, max_model_len, max_in_flight_tokens,
                                          extra_retained_tokens, mamba_cache_mode, num_speculative_blocks)
    return int(num_blocks / per_request * max_model_len)


def vllm_aligned_block(attention_bytes_per_token: int, state_bytes: int, kernel_multiple: int,
                       start_block_size: int = 16) -> int:
    """The block `Platform._align_hybrid_block_size` sets: the smallest multiple of max(kernel multiple, start block)
    whose attention page (block x one layer's bytes per token) holds the state page; never below the start block."""
    if attention_bytes_per_token <= 0 or kernel_multiple <= 0 or start_block_size <= 0:
        raise ValueError("bytes per token, kernel multiple and block must be positive")
    step = max(kernel_multiple, start_block_size)
    block = step * _cdiv(state_bytes, step * attention_bytes_per_token)
    block = kernel_multiple * _cdiv(block, kernel_multiple)
    return max(block, start_block_size)


# The kernel block multiples of the attention backends vLLM 0.32 picks for these models
# (`get_supported_kernel_block_sizes`): CPU_ATTN MultipleOf(32); FLASH_ATTN (and Flex, Triton) MultipleOf(16).
KERNEL_MULTIPLES: dict[str, int] = {"FlashAttention": 16, "the CPU backend": 32}
# The block vLLM 0.32 starts from without --block-size: CacheConfig.DEFAULT_BLOCK_SIZE 16 (FlashAttention's preferred
# block on CUDA), 128 on CPU (`CpuPlatform.check_and_update_config`); the alignment then steps by max(multiple, it).
DEFAULT_START_BLOCKS: dict[str, int] = {"FlashAttention": 16, "the CPU backend": 128}


def layer_specs(geom: KVGeometry, mamba_state: int | None = None) -> list[LayerSpec] | None:
    """The KV layers of a geometry as vLLM specs; None where vLLM's layout is not modelled (Mamba-2 layers without
    `mamba_state`, vLLM's state of one of them: `vllm_mamba2_state`; Mamba-2 beside Gated DeltaNet layers; a state of
    unknown size; state layers without one page size of attention to pad their state to, or beside sliding ones).

    A state layer's spec takes the attention layers' bytes per token: after alignment its page is theirs."""
    attn = {x.bytes_per_token for x in geom.layers if x.kind == "full_attention"}
    kinds = {x.kind for x in geom.layers}
    if "mamba" in kinds and (mamba_state is None or "linear_attention" in kinds):
        return None
    if kinds & {"linear_attention", "mamba"} and (len(attn) != 1 or kinds & {"sliding_attention", "mla"}):
        return None
    out: list[LayerSpec] = []
    for x in geom.layers:
        if x.kind == "linear_attention":
            if x.state_bytes is None:
                return None
            out.append(LayerSpec("linear", next(iter(attn)), state_bytes=x.state_bytes))
        elif x.kind == "mamba":
            out.append(LayerSpec("linear", next(iter(attn)), state_bytes=mamba_state, checkpoint_blocks=1))
        elif x.kind == "sliding_attention":
            out.append(LayerSpec("sliding", x.bytes_per_token, x.window))
        elif x.kind in ("full_attention", "mla"):
            out.append(LayerSpec("full", x.bytes_per_token))
    return out


def linear_state_with_drafts(config: Mapping[str, Any], target: KVGeometry, depth: int) -> int | None:
    """A Gated DeltaNet layer's state (bytes, per rank) with `depth` draft tokens: vLLM's conv state then holds
    kernel - 1 + k columns (`gated_delta_net_state_shape(num_spec=k)`), which is the state of a conv kernel k wider,
    so the geometry's one state rule (gate.model.geometry) sizes it. None where the config gives no kernel or no
    state."""
    text = resolve_text_config(dict(config))
    kernel = text.get("linear_conv_kernel_dim")
    if not isinstance(kernel, int) or isinstance(kernel, bool):
        return None
    try:
        wide = kv_geometry(ModelConfig(dict(config), {**text, "linear_conv_kernel_dim": kernel + depth}),
                           dtype=target.dtype, tp=target.tp)
    except ConfigError:
        return None
    states = [x.state_bytes for x in wide.layers if x.kind == "linear_attention"]
    return None if not states or None in states else max(x for x in states if x is not None)


# The architectures whose Mamba-2 state vLLM 0.32 sizes as `vllm_mamba2_state` does (`NemotronHForCausalLM`'s
# `get_mamba_state_shape_from_config` / `get_mamba_state_dtype_from_config`, `NemotronHForCausalLMConfig` for the
# SSM dtype; `MODELS_CONFIG_MAP` gives the Puzzle variant the same rule).
NEMOTRON_H_ARCHITECTURES = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM")


def vllm_mamba2_state(config: Mapping[str, Any] | None, target: KVGeometry, depth: int = 0) -> int | str:
    """A Mamba-2 layer's state (bytes, per rank) as vLLM 0.32 sizes it for Nemotron-H, or why it cannot be sized.

    `mamba2_state_shape`: a conv state of conv_kernel - 1 + k columns of (mamba_num_heads x mamba_head_dim + 2 x
    n_groups x ssm_state_size) / tp values in the model dtype (mamba_cache_dtype auto), and an SSM state of
    mamba_num_heads / tp x mamba_head_dim x ssm_state_size values in `mamba_ssm_cache_dtype`: vLLM sets it for
    Nemotron-H to the config's value, else float32 (`NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype`), so
    it is not the model-dtype state of gate.model.geometry. k draft tokens widen the conv state by k columns."""
    if config is None:
        return "the target's config.json is not given (vLLM's state depends on its architecture and fields)"
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and len(archs) == 1 else None
    if arch not in NEMOTRON_H_ARCHITECTURES:
        return (f"the architecture {arch!r} is not modelled (vLLM's Mamba-2 state is sized here for "
                f"{' / '.join(NEMOTRON_H_ARCHITECTURES)}; other Mamba-2 classes name their fields and state dtypes "
                "differently)")
    text = resolve_text_config(dict(config))
    keys = ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel")
    vals = [v for v in (text.get(k) for k in keys) if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    model_dtype = target.heads.state_dtype
    if len(vals) != len(keys) or model_dtype is None:
        return f"the config does not give all of {', '.join(keys)} as positive integers"
    heads, head_dim, state, groups, kernel = vals
    tp = target.tp
    groups += 0 if groups % tp == 0 else tp - groups  # extra_groups_for_head_shards
    conv_dim = heads * head_dim + 2 * groups * state
    if heads % tp or conv_dim % tp:
        return f"tp {tp} does not divide the Mamba-2 heads ({heads}) and conv channels ({conv_dim}) (vLLM refuses)"
    ssm_dtype = text.get("mamba_ssm_cache_dtype", "float32")
    if ssm_dtype not in ("auto", "float32", "bfloat16", "float16"):  # vLLM's MambaDType
        return f"mamba_ssm_cache_dtype {ssm_dtype!r} is none of vLLM's (auto, float32, bfloat16, float16)"
    conv_bytes = DTYPE_BYTES[model_dtype]
    ssm_bytes = conv_bytes if ssm_dtype == "auto" else DTYPE_BYTES[canonical_dtype(ssm_dtype)]
    return ((kernel - 1 + depth) * (conv_dim // tp) * conv_bytes
            + (heads // tp) * head_dim * state * ssm_bytes)


def vllm_hybrid_prediction(kv_cache_memory_bytes: int, target: KVGeometry, drafter: KVGeometry | None,
                           has_drafter: bool, block_size: int, max_model_len: int | None,
                           notes: tuple[str, ...] = (), depth: int | None = None,
                           draft_state_bytes: int | None = None,
                           config: Mapping[str, Any] | None = None) -> PoolPrediction:
    """The hybrid pool with and without the drafter's layers (vLLM puts them in the same pool).

    Blocks are vLLM's `num_gpu_blocks` exactly; tokens are its capacity at `max_model_len` with the sliding layers
    charged in full (module docstring), None without `max_model_len` or where the layout is not modelled. On a
    linear hybrid the drafter's pool needs `depth` (k) and `draft_state_bytes` (a linear layer's state with k draft
    tokens, `linear_state_with_drafts`); a `depth` without a drafter (ngram, suffix) prices the speculation alone.
    Mamba-2 layers take their state, with and without k, from the target's `config` (`vllm_mamba2_state`).
    """
    out = list(notes)
    mamba: int | None = None
    if any(x.kind == "mamba" for x in target.layers):
        state = vllm_mamba2_state(config, target)
        if isinstance(state, str):
            out.append(f"no predicted pool: vLLM's Mamba-2 state cannot be sized: {state}")
            return PoolPrediction(block_size, None, None, None, None, tuple(out))
        mamba = state
        wide = None if depth is None else vllm_mamba2_state(config, target, depth)
        draft_state_bytes = wide if isinstance(wide, int) else None
    t_specs = layer_specs(target, mamba)
    if t_specs is None:
        out.append("no predicted pool: vLLM's layout of these linear-attention/Mamba layers is not modelled (Gated "
                   "DeltaNet or Nemotron-H Mamba-2 layers of known state beside one kind of full attention are)")
        return PoolPrediction(block_size, None, None, None, None, tuple(out))
    linear = [x for x in t_specs if x.kind == "linear"]
    if linear:
        d_linear = layer_specs(drafter) if drafter is not None else None
        return _linear_prediction(kv_cache_memory_bytes, t_specs, d_linear, has_drafter, block_size, max_model_len,
                                  out, depth, draft_state_bytes)

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


def _linear_prediction(kv_cache_memory_bytes: int, specs: list[LayerSpec], d_specs: list[LayerSpec] | None,
                       has_drafter: bool, block_size: int, max_model_len: int | None,
                       out: list[str], depth: int | None = None, draft_state: int | None = None) -> PoolPrediction:
    """A Gated DeltaNet or Mamba-2 hybrid: the block as vLLM reports it after alignment, checked against the state it must hold;
    with a drafter, the pool with its layers and k speculative state blocks (`_linear_drafter_pool`); with k and no
    drafter (ngram, suffix), the same without drafter layers."""
    per_token = _attention_bytes(specs)
    state = max(x.state_bytes or 0 for x in specs if x.kind == "linear")
    if block_size * per_token < state:
        out.append(f"no predicted pool: {_below_state(block_size, per_token, state, 'a linear layer')}: give "
                   "engine.block_size as vLLM reports it after alignment")
        return PoolPrediction(block_size, None, None, None, None, tuple(out))
    groups = vllm_kv_groups(specs)
    blocks = vllm_num_blocks(kv_cache_memory_bytes, groups, block_size)
    tokens = None if max_model_len is None else vllm_capacity_tokens(blocks, groups, block_size, max_model_len,
                                                                      max_model_len)
    linear_groups = sum(1 for g in groups if g.spec.kind == "linear")
    checkpoint = _checkpoint_blocks(groups)
    per_request = RequestBlocks(block_size, len(groups) - linear_groups, linear_groups, 0, checkpoint)
    ckpt = (f" (2 + {checkpoint} prefill checkpoint per Mamba-2 group: MambaMixer2.get_kv_cache_spec)"
            if checkpoint else "")
    out.append(f"vLLM hybrid KV manager, linear attention: {block_size}-token blocks (engine.block_size, as vLLM "
               f"reports it after aligning the attention page to the {state:,} B state), "
               f"{len(groups) - linear_groups} full-attention and {linear_groups} linear group(s) of "
               f"{groups[0].layers} layers draw from one pool of {blocks:,} blocks; every request holds "
               f"{per_request.state_groups * per_request.state_blocks(True)} state blocks whatever its length with "
               f"prefix caching{ckpt} (vLLM's default: mamba_cache_mode align), {linear_groups} without; mixes are "
               "judged in blocks")
    if max_model_len is None:
        out.append("vLLM hybrid pool: blocks only; its pool in tokens is its capacity at --max-model-len: "
                   "give engine.context_cap_tokens")
    else:
        out.append(f"tokens = vLLM's kv_cache_size_tokens: blocks / (blocks per {max_model_len:,}-token request) x "
                   f"{max_model_len:,} (prefix caching on); shorter requests pay the same state blocks, so fewer of "
                   "their tokens fit")
    if not has_drafter and depth is None:
        return PoolPrediction(block_size, tokens, tokens, blocks, blocks, tuple(out), per_request)
    blocks_with, with_d, with_request = _linear_drafter_pool(kv_cache_memory_bytes, specs,
                                                             (d_specs or []) if has_drafter else None, block_size,
                                                             max_model_len, depth, draft_state, out)
    return PoolPrediction(block_size, tokens, with_d, blocks, blocks_with, tuple(out), with_request or per_request,
                          per_request)


def _checkpoint_blocks(groups: list[Group]) -> int:
    """Prefill checkpoint blocks per request in each linear group in align mode (1 for Mamba-2, 0 for Gated
    DeltaNet: vLLM only groups linear layers of equal `num_prefill_checkpoint_blocks`)."""
    return max((g.spec.checkpoint_blocks for g in groups if g.spec.kind == "linear"), default=0)


def _attention_bytes(specs: list[LayerSpec]) -> int:
    """One full-attention layer's bytes per token (every linear layer's page is padded to it)."""
    return next(x.bytes_per_token for x in specs if x.kind == "full")


def _below_state(block_size: int, per_token: int, state: int, what: str) -> str:
    given = ", ".join(f"{vllm_aligned_block(per_token, state, m, block_size):,} with {name}"
                      for name, m in KERNEL_MULTIPLES.items())
    default = ", ".join(f"{vllm_aligned_block(per_token, state, m, DEFAULT_START_BLOCKS[name]):,} with {name} "
                        f"(from {DEFAULT_START_BLOCKS[name]})" for name, m in KERNEL_MULTIPLES.items())
    return (f"a {block_size}-token block's attention page ({block_size * per_token:,} B) cannot hold {what}'s state "
            f"({state:,} B); vLLM raises the block to fit it from the block it starts at "
            f"(Platform._align_hybrid_block_size): from --block-size {block_size}, {given}; without --block-size, "
            f"{default}")


def _linear_drafter_pool(kv_cache_memory_bytes: int, specs: list[LayerSpec], d_specs: list[LayerSpec] | None,
                         block_size: int, max_model_len: int | None, depth: int | None, draft_state: int | None,
                         out: list[str]) -> tuple[int | None, int | None, RequestBlocks | None]:
    """(blocks, tokens, per-request blocks) with the drafter on a linear hybrid, as vLLM 0.32 sizes them (the
    oracle's MTP rows): each linear layer's conv state widened by k columns (`draft_state`; the block must hold it),
    the drafter's layers in the groups, and each linear group k more state blocks per request
    (MambaSpec.num_speculative_blocks). `d_specs` None: a drafterless method (ngram, suffix), no drafter layers but
    the same widening and blocks (vLLM reads num_speculative_tokens whatever the method). None, with a note, where k,
    the widened state or the drafter's layers are unknown: blocks without the speculative ones would pass mixes vLLM
    cannot hold."""
    drafterless = d_specs is None
    missing = [what for what, gone in (
        ("the plan's k (engine.speculative.num_speculative_tokens)", depth is None),
        ("the target config's conv kernel, which k widens (Gated DeltaNet: linear_conv_kernel_dim; Nemotron-H "
         "Mamba-2: conv_kernel)",
         draft_state is None),
        ("the drafter's KV layers (an MTP head: the target's num_nextn_predict_layers / mtp_num_hidden_layers)",
         not drafterless and not d_specs)) if gone]
    if depth is None or draft_state is None or missing:
        out.append("no predicted pool with the drafter: with k draft tokens vLLM widens each linear layer's conv "
                   "state by k columns (gated_delta_net_state_shape) and gives each linear group k more state blocks "
                   "per request (MambaSpec.num_speculative_blocks: 2 + k with prefix caching, 1 + k without), "
                   f"drafterless methods too; unknown here: {'; '.join(missing)}")
        return None, None, None
    per_token = _attention_bytes(specs)
    if block_size * per_token < draft_state:
        out.append(f"no predicted pool with the drafter: with k = {depth} draft tokens "
                   f"{_below_state(block_size, per_token, draft_state, 'a widened linear layer')}"
                   f"{' (drafterless methods too: vLLM reads num_speculative_tokens)' if drafterless else ''}: give "
                   "engine.block_size as vLLM reports it with speculation")
        return None, None, None
    layers = d_specs or []
    other = sorted({x.bytes_per_token for x in layers} - {per_token})
    if other:
        out.append(f"no predicted pool with the drafter: its attention holds {', '.join(f'{b:,}' for b in other)} B "
                   f"per token per layer, the target's {per_token:,}, so their pages differ; vLLM then unifies them "
                   "(unify_kv_cache_spec_page_size: the target's attention blocks grow by the page ratio, every "
                   "state page is padded to the largest, so groups draw blocks of different sizes; block-outermost "
                   "KV layouts pack groups instead: _get_packed_kv_cache_groups), which one block size per pool "
                   "cannot hold: not modelled (EAGLE heads and draft models shaped unlike the target; MTP layers, "
                   "with the target's heads, are)")
        return None, None, None
    try:
        groups = vllm_kv_groups(specs + layers)
    except ValueError as e:
        out.append(f"no predicted pool with the drafter: {e}")
        return None, None, None
    blocks = vllm_num_blocks(kv_cache_memory_bytes, groups, block_size)
    tokens = None if max_model_len is None else vllm_capacity_tokens(
        blocks, groups, block_size, max_model_len, max_model_len, num_speculative_blocks=depth)
    linear_groups = sum(1 for g in groups if g.spec.kind == "linear")
    checkpoint = _checkpoint_blocks(groups)
    who = (f"with speculation (k = {depth}, a drafterless method: no drafter layer; "
           if drafterless else f"with the drafter (k = {depth}): its {len(layers)} attention layer(s) join the pool (")
    out.append(f"{who}{len(groups) - linear_groups} full-attention and {linear_groups} linear group(s) of "
               f"{groups[0].layers} layers, {blocks:,} blocks); each linear layer's conv state widens by {depth} "
               f"column(s) to {draft_state:,} B (gated_delta_net_state_shape, within the {block_size}-token block) "
               f"and each request holds 2 + {f'{checkpoint} + ' if checkpoint else ''}{depth} state blocks per linear "
               f"group with prefix caching, 1 + {depth} without (MambaSpec.num_speculative_blocks"
               f"{', num_prefill_checkpoint_blocks' if checkpoint else ''})")
    return blocks, tokens, RequestBlocks(block_size, len(groups) - linear_groups, linear_groups, depth, checkpoint)
