"""Plain-torch CPU ops standing in for SGLang 0.5.23's `sgl_kernel` (see ../README.md).

Each function's contract is the one of SGLang's own Triton/CUDA kernel next to the call
site (file named in each docstring); inputs are mutated in place exactly where that
kernel writes. Loops run in Python: these are for tiny models on a CPU, not for speed.
"""

from __future__ import annotations

import ctypes

import torch


class StandInMissing(NotImplementedError):
    """An op (or an op's feature) the stand-in does not provide."""


def _missing(what: str) -> StandInMissing:
    return StandInMissing(f"sgl_kernel stand-in (specgate tools/sgl_kernel_stand_in): {what} is not provided")


def _ints(t: torch.Tensor) -> list[int]:
    return [int(x) for x in t.reshape(-1).tolist()]


# --- token-slot bookkeeping -------------------------------------------------------------


def assign_req_to_token_pool_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                 start_offset: torch.Tensor, end_offset: torch.Tensor,
                                 out_cache_loc: torch.Tensor, pool_len: int) -> None:
    """req_to_token[pool[i], start[i]:end[i]] = the next end[i]-start[i] entries of out_cache_loc.

    srt/mem_cache/allocation.py `assign_req_to_token_pool` (Triton).
    """
    off = 0
    for pool, s, e in zip(_ints(req_pool_indices), _ints(start_offset), _ints(end_offset), strict=True):
        n = e - s
        if n > 0:
            req_to_token[pool, s:e] = out_cache_loc[off:off + n].to(req_to_token.dtype)
        off += n


def assign_extend_cache_locs_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                 start_offset: torch.Tensor, end_offset: torch.Tensor,
                                 out_cache_loc: torch.Tensor, pool_len: int) -> None:
    """The reverse copy: out_cache_loc packs req_to_token[pool[i], start[i]:end[i]] request after request.

    kernels/ops/speculative/cache_locs.py `assign_extend_cache_locs` (Triton).
    """
    off = 0
    for pool, s, e in zip(_ints(req_pool_indices), _ints(start_offset), _ints(end_offset), strict=True):
        n = e - s
        if n > 0:
            out_cache_loc[off:off + n] = req_to_token[pool, s:e].to(out_cache_loc.dtype)
        off += n


def assign_draft_cache_locs_contiguous_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                           seq_lens: torch.Tensor, out_cache_loc: torch.Tensor,
                                           pool_len: int, topk: int, num_steps: int) -> None:
    """Request i's topk*num_steps slots from seq_lens[i] on, at out_cache_loc[i*topk*num_steps:].

    kernels/ops/speculative/cache_locs.py `assign_draft_cache_locs_contiguous` (Triton,
    without the positions/mrope outputs, which the CPU path asserts are not asked for).
    """
    width = topk * num_steps
    for i, (pool, s) in enumerate(zip(_ints(req_pool_indices), _ints(seq_lens), strict=True)):
        out_cache_loc[i * width:(i + 1) * width] = req_to_token[pool, s:s + width].to(out_cache_loc.dtype)


def build_draft_decode_metadata_cpu(req_to_token: torch.Tensor, req_pool_indices: torch.Tensor,
                                    seq_lens: torch.Tensor, topk: int, num_steps: int,
                                    pool_len: int) -> torch.Tensor:
    """One req_to_token row per (request, candidate): the prefix, then that candidate's draft slots.

    Row b*topk + j = req_to_token[pool[b], :seq_len[b]] followed by
    req_to_token[pool[b], seq_len[b] + j*num_steps + s] for s < num_steps (page size 1:
    the layout `generate_draft_decode_kv_indices` in kernels/ops/speculative/cache_locs.py
    reads, and `assign_draft_cache_locs_contiguous` allocates). The draft backend reads
    row[:seq_len + step + 1] at draft step `step`.
    """
    pools, lens = _ints(req_pool_indices), _ints(seq_lens)
    out = torch.zeros((len(pools) * topk, pool_len), dtype=req_to_token.dtype, device=req_to_token.device)
    for b, (pool, s) in enumerate(zip(pools, lens, strict=True)):
        if s + topk * num_steps > pool_len:
            raise ValueError(f"build_draft_decode_metadata_cpu: seq_len {s} + {topk}x{num_steps} drafts "
                             f"exceed pool_len {pool_len}")
        for j in range(topk):
            row = out[b * topk + j]
            row[:s] = req_to_token[pool, :s]
            row[s:s + num_steps] = req_to_token[pool, s + j * num_steps:s + (j + 1) * num_steps]
    return out


def copy_all_layer_kv_cache_cpu(data_ptrs: torch.Tensor, strides: torch.Tensor,
                                tgt_loc: torch.Tensor, src_loc: torch.Tensor) -> None:
    """For every layer buffer (raw address, row bytes): row tgt_loc[k] = row src_loc[k].

    kernels/ops/kvcache/cache_move.py `copy_all_layer_kv_cache_tiled`: all source rows are
    read before any is written, so overlapping src/tgt sets copy like the kernel.
    """
    tgts, srcs = _ints(tgt_loc), _ints(src_loc)
    if len(tgts) != len(srcs):
        raise ValueError("copy_all_layer_kv_cache_cpu: tgt_loc and src_loc differ in length")
    for base, stride in zip(_ints(data_ptrs), _ints(strides), strict=True):
        rows = [ctypes.string_at(base + s * stride, stride) for s in srcs]
        for t, row in zip(tgts, rows, strict=True):
            ctypes.memmove(base + t * stride, row, stride)


# --- speculative accept bookkeeping -------------------------------------------------------


def fill_bonus_tokens_cpu(accept_tokens: torch.Tensor, accept_lens: torch.Tensor,
                          bonus_tokens: torch.Tensor, accept_stride: int) -> None:
    """bonus[i] = accept_tokens.flat[accept_stride*i + accept_lens[i] - 1] (the last accepted slot).

    kernels/ops/speculative/eagle.py `fill_bonus_tokens` (Triton).
    """
    flat = accept_tokens.reshape(-1)
    for i, n in enumerate(_ints(accept_lens)):
        bonus_tokens[i] = flat[accept_stride * i + n - 1]


def fill_accept_out_cache_loc_cpu(accept_index: torch.Tensor, out_cache_loc: torch.Tensor,
                                  accept_out_cache_loc: torch.Tensor) -> None:
    """Compact: the k-th accept_index entry that is not -1 writes out_cache_loc[that index] at k.

    kernels/ops/speculative/eagle.py `fill_accept_out_cache_loc` (Triton).
    """
    dst = 0
    for src in _ints(accept_index):
        if src > -1:
            accept_out_cache_loc[dst] = out_cache_loc[src]
            dst += 1


# --- trees ----------------------------------------------------------------------------------


def build_tree_kernel_efficient_cpu(parent_list: torch.Tensor, selected_index: torch.Tensor,
                                    verified_seq_len: torch.Tensor, tree_mask: torch.Tensor,
                                    positions: torch.Tensor, retrieve_index: torch.Tensor,
                                    retrieve_next_token: torch.Tensor, retrieve_next_sibling: torch.Tensor,
                                    topk: int, depth: int, draft_token_num: int,
                                    tree_mask_mode: int) -> None:
    """The EAGLE draft tree: retrieve links, positions and the tree mask, in place.

    A line-by-line port of `sgl_build_tree_kernel_efficient_triton` in
    kernels/ops/speculative/spec_tree.py (modes FULL_MASK=0 and QLEN_ONLY=1).
    """
    mode = int(tree_mask_mode)
    if mode not in (0, 1):
        raise _missing(f"build_tree_kernel_efficient_cpu tree_mask_mode {mode} (QLEN_ONLY_BITPACKING)")
    n = draft_token_num
    lens = _ints(verified_seq_len)
    bs = len(lens)
    parents = parent_list.reshape(-1)
    p_stride = parent_list.stride(0) if parent_list.dim() > 1 else parent_list.shape[0]
    sel = selected_index.reshape(-1)
    s_stride = selected_index.stride(0)
    mask = tree_mask.reshape(-1)
    pos = positions.reshape(-1)
    r_idx, r_next, r_sib = (t.reshape(-1) for t in (retrieve_index, retrieve_next_token, retrieve_next_sibling))
    prefix = 0
    for b in range(bs):
        seq_len = lens[b]
        seq_tree_idx = n * n * b + prefix * n
        prefix += seq_len

        def sel_at(k: int, b: int = b) -> int:
            return int(sel[b * s_stride + k])

        pos[b * n] = seq_len
        for i in range(n - 1, 0, -1):
            r_idx[b * n + i] = b * n + i
            parent_tb = sel_at(i - 1) // topk
            parent_position, found = 0, parent_tb == 0
            if not found:
                parent_token = int(parents[b * p_stride + parent_tb])
                for pp in range(n - 1):
                    if sel_at(pp) == parent_token:
                        parent_position, found = pp + 1, True
                        break
            if found:
                addr = b * n + parent_position
                nxt = int(r_next[addr])
                r_next[addr] = i
                if nxt != -1:
                    r_sib[b * n + i] = nxt
        r_idx[b * n] = b * n
        for x in range(n):
            if mode == 0:
                tti = seq_tree_idx + (seq_len + n) * x + seq_len + 1
            else:
                tti = n * n * b + n * x + 1
            mask[tti - 1] = 1
            mask[tti:tti + n - 1] = 0
            if x == 0:
                continue
            cur, position, go = x - 1, 0, True
            for _ in range(depth):
                if not go:
                    break
                position += 1
                mask[tti + cur] = 1
                parent_tb = sel_at(cur) // topk
                if parent_tb == 0:
                    go = False
                    continue
                parent_token = int(parents[b * p_stride + parent_tb])
                found = False
                for cp in range(n - 1):
                    if sel_at(cp) == parent_token:
                        cur, found = cp, True
                        break
                go = found
            pos[b * n + x] = position + seq_len


def verify_tree_greedy_cpu(predicts: torch.Tensor, accept_index: torch.Tensor, accept_token_num: torch.Tensor,
                           candidates: torch.Tensor, retrive_index: torch.Tensor, retrive_next_token: torch.Tensor,
                           retrive_next_sibling: torch.Tensor, target_predict: torch.Tensor) -> None:
    """Greedy tree verification: walk first-child / next-sibling links while the draft equals the target.

    A port of `verify_tree_greedy_kernel_triton` in kernels/ops/speculative/spec_tree.py
    (argument names keep SGLang's `retrive_*` spelling: it calls with keywords).
    """
    bs, n = candidates.shape[0], candidates.shape[1]
    n_spec = accept_index.shape[1]
    pred, acc = predicts.reshape(-1), accept_index.reshape(-1)
    cand, ridx = candidates.reshape(-1), retrive_index.reshape(-1)
    rnext, rsib, tgt = retrive_next_token.reshape(-1), retrive_next_sibling.reshape(-1), target_predict.reshape(-1)
    for b in range(bs):
        last = int(ridx[b * n])
        acc[b * n_spec] = last
        num_acc, cur = 0, 0
        for _ in range(1, n_spec):
            cur = int(rnext[b * n + cur])
            target = int(tgt[last])
            matched = False
            while cur != -1:
                if int(cand[b * n + cur]) == target:
                    pred[last] = target
                    num_acc += 1
                    last = int(ridx[b * n + cur])
                    acc[b * n_spec + num_acc] = last
                    matched = True
                    break
                cur = int(rsib[b * n + cur])
            if not matched:
                break
        accept_token_num[b] = num_acc
        pred[last] = tgt[last]


def reconstruct_indices_from_tree_mask(tree_mask: torch.Tensor, verified_seq_len: torch.Tensor,
                                       positions: torch.Tensor, retrive_index: torch.Tensor,
                                       retrive_next_token: torch.Tensor, retrive_next_sibling: torch.Tensor,
                                       batch_size: int, draft_token_num: int) -> None:
    """NGRAM verify metadata from an n x n ancestor mask per request, in place.

    The contract written in kernels/ops/speculative/reconstruct_tree.py: ancestors[i, j] =
    mask[i, j] & (j < i); positions = #ancestors + seq_len; parent = the largest ancestor;
    next token = the first child; next sibling = the next node with the same parent (-1
    for a root).
    """
    n = draft_token_num
    lens = _ints(verified_seq_len)
    m = tree_mask.reshape(-1)[:batch_size * n * n].reshape(batch_size, n, n).to(torch.bool)
    pos, ridx = positions.reshape(-1), retrive_index.reshape(-1)
    rnext, rsib = retrive_next_token.reshape(-1), retrive_next_sibling.reshape(-1)
    for b in range(batch_size):
        anc = [[bool(m[b, i, j]) and j < i for j in range(n)] for i in range(n)]
        parent = [max((j for j in range(n) if anc[i][j]), default=-1) for i in range(n)]
        for t in range(n):
            pos[b * n + t] = sum(anc[t]) + lens[b]
            ridx[b * n + t] = b * n + t
            rnext[b * n + t] = min((k for k in range(n) if anc[k][t]), default=-1)
            sib = min((k for k in range(t + 1, n) if parent[k] == parent[t]), default=-1)
            rsib[b * n + t] = sib if parent[t] >= 0 else -1


# --- attention --------------------------------------------------------------------------------


def _check_attention(name: str, k_buffer: torch.Tensor, key_scale: float, value_scale: float, is_cross: bool,
                     window: int, sinks: torch.Tensor | None) -> None:
    if is_cross:
        raise _missing(f"{name} cross attention")
    if window > 0:
        raise _missing(f"{name} sliding window ({window - 1})")
    if sinks is not None:
        raise _missing(f"{name} attention sinks")
    if k_buffer.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise _missing(f"{name} KV cache dtype {k_buffer.dtype}")
    if key_scale not in (0.0, 1.0) or value_scale not in (0.0, 1.0):
        raise _missing(f"{name} KV scales {key_scale}/{value_scale}")


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, visible: torch.Tensor | None,
            sm_scale: float, logit_cap: float) -> torch.Tensor:
    """q [m, H, D], k [t, Hkv, D], v [t, Hkv, Dv], visible [m, t] bool (None: all) -> [m, H, Dv]."""
    h, hkv = q.shape[1], k.shape[1]
    if h % hkv:
        raise ValueError(f"{h} query heads are not a multiple of {hkv} KV heads")
    group = h // hkv
    kf = k.float().repeat_interleave(group, dim=1)  # [t, H, D]
    vf = v.float().repeat_interleave(group, dim=1)
    scores = torch.einsum("mhd,thd->hmt", q.float(), kf) * sm_scale
    if logit_cap > 0:
        scores = logit_cap * torch.tanh(scores / logit_cap)
    if visible is not None:
        scores = scores.masked_fill(~visible.unsqueeze(0), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hmt,thd->mhd", probs, vf)


def decode_attention_cpu(query: torch.Tensor, k_buffer: torch.Tensor, v_buffer: torch.Tensor, key_scale: float,
                         value_scale: float, output: torch.Tensor, key: torch.Tensor | None,
                         value: torch.Tensor | None, loc: torch.Tensor, attn_logits: torch.Tensor,
                         req_to_token: torch.Tensor, req_pool_indices: torch.Tensor, seq_lens: torch.Tensor,
                         sm_scale: float, logit_cap: float, is_cross: bool, window: int,
                         encoder_lens: torch.Tensor | None, sinks: torch.Tensor | None) -> None:
    """One query token per sequence over its whole KV (req_to_token[pool, :seq_len]).

    srt/layers/attention/intel_amx_backend.py `forward_decode`: when key/value are given the
    kernel first writes them into the cache at `loc` (decode writes KV in-kernel).
    attn_logits is the split-K scratch of the C++ kernel; one pass needs none.
    """
    _check_attention("decode_attention_cpu", k_buffer, key_scale, value_scale, is_cross, window, sinks)
    if key is not None and value is not None:
        idx = loc.to(torch.long)
        k_buffer[idx] = key.reshape(-1, *k_buffer.shape[1:]).to(k_buffer.dtype)
        v_buffer[idx] = value.reshape(-1, *v_buffer.shape[1:]).to(v_buffer.dtype)
    for i, (pool, n) in enumerate(zip(_ints(req_pool_indices), _ints(seq_lens), strict=True)):
        slots = req_to_token[pool, :n].to(torch.long)
        out = _attend(query[i:i + 1], k_buffer[slots], v_buffer[slots], None, sm_scale, logit_cap)
        output[i] = out[0].to(output.dtype)


def extend_attention_cpu(q_extend: torch.Tensor, k_extend: torch.Tensor | None, v_extend: torch.Tensor | None,
                         o_extend: torch.Tensor, k_buffer: torch.Tensor, v_buffer: torch.Tensor, key_scale: float,
                         value_scale: float, req_to_token: torch.Tensor, req_pool_indices: torch.Tensor,
                         seq_lens: torch.Tensor, extend_seq_lens: torch.Tensor, extend_start_loc: torch.Tensor,
                         max_len_extend: int, sm_scale: float, logit_cap: float, is_cross: bool, window: int,
                         encoder_lens: torch.Tensor | None, sinks: torch.Tensor | None,
                         tree_mask: torch.Tensor | None, is_causal: bool) -> None:
    """Prefill / target verify: each sequence's new tokens over its cached prefix plus themselves.

    srt/layers/attention/intel_amx_backend.py `forward_extend`. The prefix (seq_len −
    extend_len tokens) is read from the cache through req_to_token; the new tokens' K/V
    come from k_extend/v_extend (from the cache when those are None). Visibility among the
    new tokens: causal, or the per-request n x n draft mask `tree_mask` (SGLang's CPU
    QLEN_ONLY layout: the prefix is always visible), or all.
    """
    _check_attention("extend_attention_cpu", k_buffer, key_scale, value_scale, is_cross, window, sinks)
    lens, ext, starts = _ints(seq_lens), _ints(extend_seq_lens), _ints(extend_start_loc)
    pools = _ints(req_pool_indices)
    mask_off = 0
    if tree_mask is not None:
        need = sum(e * e for e in ext)
        if tree_mask.numel() != need:
            raise _missing(f"extend_attention_cpu tree mask of {tree_mask.numel()} entries "
                           f"(only the QLEN_ONLY layout, {need} here)")
    flat_mask = tree_mask.reshape(-1).to(torch.bool) if tree_mask is not None else None
    for pool, total, e, s in zip(pools, lens, ext, starts, strict=True):
        prefix = total - e
        pre = req_to_token[pool, :prefix].to(torch.long)
        if k_extend is not None and v_extend is not None:
            kn = k_extend[s:s + e].reshape(e, *k_buffer.shape[1:])
            vn = v_extend[s:s + e].reshape(e, *v_buffer.shape[1:])
        else:
            new = req_to_token[pool, prefix:total].to(torch.long)
            kn, vn = k_buffer[new], v_buffer[new]
        k = torch.cat([k_buffer[pre].to(kn.dtype), kn])
        v = torch.cat([v_buffer[pre].to(vn.dtype), vn])
        visible: torch.Tensor | None = None
        if flat_mask is not None:
            among = flat_mask[mask_off:mask_off + e * e].reshape(e, e)
            mask_off += e * e
            visible = torch.cat([torch.ones((e, prefix), dtype=torch.bool), among], dim=1)
        elif is_causal:
            visible = torch.ones((e, total), dtype=torch.bool).tril(diagonal=prefix)
        out = _attend(q_extend[s:s + e], k, v, visible, sm_scale, logit_cap)
        o_extend[s:s + e] = out.to(o_extend.dtype)
