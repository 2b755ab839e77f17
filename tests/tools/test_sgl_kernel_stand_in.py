"""Every op of specgate's sgl_kernel stand-in (tools/sgl_kernel_stand_in) against a plain reference.

Needs torch, which the project's own venv does not carry (a CPU torch is ~1 GB and nothing
else in `make test` needs it): `make e2e` runs this file with the SGLang venv's python
(tools/sglang_cpu.sh installs pytest there), before any SGLang server starts. Under plain
`make test` the whole module is skipped for that reason.

References are written independently of the stand-in: index loops for the slot
bookkeeping, `torch.nn.functional.scaled_dot_product_attention` for attention, trees worked
out by hand, and, when SGLang is importable, SGLang's own Triton kernels for the tree ops
run under Triton's CPU interpreter (in a subprocess: TRITON_INTERPRET must be set before
the kernels are defined).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="runs in `make e2e` with the SGLang venv's python (needs torch)")

STAND_IN = Path(__file__).resolve().parents[2] / "tools" / "sgl_kernel_stand_in"
sys.path.insert(0, str(STAND_IN))

import sgl_kernel  # noqa: E402
from sgl_kernel import ops  # noqa: E402

F = torch.nn.functional


def test_it_is_the_stand_in_not_a_real_kernel_package():
    assert sgl_kernel.STAND_IN is True
    assert Path(sgl_kernel.__file__).resolve().parent.parent == STAND_IN.resolve()


def test_an_op_it_lacks_raises_naming_itself():
    from sgl_kernel import rotate_input_ids_cpu  # imported at module level by SGLang's MTP path, not provided

    with pytest.raises(NotImplementedError, match="sgl_kernel.rotate_input_ids_cpu"):
        rotate_input_ids_cpu(torch.zeros(1))
    with pytest.raises(NotImplementedError, match=r"sgl_kernel\.speculative\.something_new"):
        sgl_kernel.speculative.something_new()
    with pytest.raises(AttributeError):
        sgl_kernel.__wrapped__  # noqa: B018  (dunder lookups stay AttributeErrors: tools probe them)


def test_an_unregistered_torch_op_fails_naming_itself():
    with pytest.raises((AttributeError, RuntimeError), match="fused_add_rmsnorm_cpu"):
        torch.ops.sgl_kernel.fused_add_rmsnorm_cpu  # noqa: B018


def test_unsupported_attention_features_raise():
    q = torch.zeros(1, 2, 4)
    kb = torch.zeros(4, 1, 4)
    args = dict(query=q, k_buffer=kb, v_buffer=kb.clone(), key_scale=1.0, value_scale=1.0, output=q.clone(),
                key=None, value=None, loc=torch.zeros(0, dtype=torch.long), attn_logits=torch.zeros(1),
                req_to_token=torch.zeros(1, 4, dtype=torch.int32), req_pool_indices=torch.zeros(1, dtype=torch.long),
                seq_lens=torch.ones(1, dtype=torch.long), sm_scale=1.0, logit_cap=0.0, is_cross=False, window=0,
                encoder_lens=None, sinks=None)
    for change, name in (({"window": 9}, "sliding window"), ({"is_cross": True}, "cross attention"),
                         ({"sinks": torch.zeros(2)}, "attention sinks"), ({"key_scale": 0.5}, "KV scales")):
        with pytest.raises(NotImplementedError, match=name):
            ops.decode_attention_cpu(**{**args, **change})


# --- slot bookkeeping -------------------------------------------------------------------------


def _pool(rows: int = 4, width: int = 16) -> torch.Tensor:
    return (torch.arange(rows * width, dtype=torch.int32).reshape(rows, width) * 7) % 101


def test_assign_req_to_token_pool_writes_each_request_range():
    r2t = torch.zeros(4, 16, dtype=torch.int32)
    pools, start, end = torch.tensor([2, 0, 3]), torch.tensor([1, 0, 5]), torch.tensor([4, 2, 5])
    out = torch.tensor([10, 11, 12, 20, 21], dtype=torch.int64)
    sgl_kernel.assign_req_to_token_pool_cpu(pools, r2t, start, end, out, 16)
    want = torch.zeros(4, 16, dtype=torch.int32)
    want[2, 1:4] = torch.tensor([10, 11, 12])
    want[0, 0:2] = torch.tensor([20, 21])
    assert torch.equal(r2t, want)


def test_assign_extend_cache_locs_packs_request_ranges():
    r2t = _pool()
    pools, start, end = torch.tensor([1, 3]), torch.tensor([2, 0]), torch.tensor([5, 2])
    out = torch.full((5,), -1, dtype=torch.int64)
    sgl_kernel.assign_extend_cache_locs_cpu(pools, r2t, start, end, out, 16)
    want = [int(r2t[1, j]) for j in range(2, 5)] + [int(r2t[3, j]) for j in range(0, 2)]
    assert out.tolist() == want


def test_assign_draft_cache_locs_contiguous():
    r2t = _pool()
    pools, lens = torch.tensor([3, 1]), torch.tensor([4, 6])
    topk, steps = 2, 3
    out = torch.full((2 * topk * steps,), -1, dtype=torch.int64)
    sgl_kernel.assign_draft_cache_locs_contiguous_cpu(pools, r2t, lens, out, 16, topk, steps)
    want = [int(r2t[3, 4 + k]) for k in range(6)] + [int(r2t[1, 6 + k]) for k in range(6)]
    assert out.tolist() == want


def test_build_draft_decode_metadata_rows_are_prefix_then_own_draft_slots():
    r2t = _pool(3, 20)
    pools, lens = torch.tensor([2, 0]), torch.tensor([5, 3])
    topk, steps = 2, 3
    got = sgl_kernel.build_draft_decode_metadata_cpu(r2t, pools, lens, topk, steps, 20)
    assert got.shape == (4, 20) and got.dtype == r2t.dtype
    for b, (p, s) in enumerate(((2, 5), (0, 3))):
        for j in range(topk):
            row = got[b * topk + j].tolist()
            assert row[:s] == r2t[p, :s].tolist()
            assert row[s:s + steps] == [int(r2t[p, s + j * steps + k]) for k in range(steps)]
            assert row[s + steps:] == [0] * (20 - s - steps)


def test_copy_all_layer_kv_cache_copies_rows_in_every_layer_reading_before_writing():
    layers = [torch.arange(6 * 4, dtype=torch.float32).reshape(6, 4) + 100 * i for i in range(2)]
    before = [t.clone() for t in layers]
    ptrs = torch.tensor([t.data_ptr() for t in layers], dtype=torch.int64)
    strides = torch.tensor([t.stride(0) * t.element_size() for t in layers], dtype=torch.int64)
    tgt, src = torch.tensor([1, 2]), torch.tensor([2, 4])  # row 2 is both read and written
    sgl_kernel.copy_all_layer_kv_cache_cpu(ptrs, strides, tgt, src)
    for t, b in zip(layers, before, strict=True):
        want = b.clone()
        want[1], want[2] = b[2], b[4]
        assert torch.equal(t, want)


def test_fill_bonus_tokens_takes_the_last_accepted_slot():
    acc = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    lens = torch.tensor([3, 1])
    bonus = torch.zeros(2, dtype=acc.dtype)
    sgl_kernel.fill_bonus_tokens_cpu(acc, lens, bonus, 4)
    assert bonus.tolist() == [7, 9]


def test_fill_accept_out_cache_loc_compacts_accepted_entries():
    accept_index = torch.tensor([0, 2, -1, 4, -1, 5])
    out_cache_loc = torch.tensor([100, 101, 102, 103, 104, 105])
    dst = torch.full((4,), -1, dtype=torch.int64)
    sgl_kernel.fill_accept_out_cache_loc_cpu(accept_index, out_cache_loc, dst)
    assert dst.tolist() == [100, 102, 104, 105]


# --- trees --------------------------------------------------------------------------------


def _ngram_mask() -> torch.Tensor:
    """Nodes 0..4: 0 root; 1, 2 children of 0; 3 child of 1; 4 child of 2 (rows: self + ancestors)."""
    anc = {0: [], 1: [0], 2: [0], 3: [0, 1], 4: [0, 2]}
    m = torch.zeros(5, 5, dtype=torch.bool)
    for i, a in anc.items():
        m[i, i] = True
        for j in a:
            m[i, j] = True
    return m


def test_reconstruct_indices_from_tree_mask_by_hand():
    n, bs = 5, 2
    mask = torch.stack([_ngram_mask(), torch.ones(n, n, dtype=torch.bool).tril()]).reshape(-1)  # 2nd: a chain
    seq = torch.tensor([10, 3])
    pos, ridx, rnext, rsib = (torch.full((bs * n,), -9, dtype=torch.int64) for _ in range(4))
    sgl_kernel.speculative.reconstruct_indices_from_tree_mask(mask, seq, pos, ridx, rnext, rsib, bs, n)
    assert pos.tolist()[:5] == [10, 11, 11, 12, 12]
    assert rnext.tolist()[:5] == [1, 3, 4, -1, -1]
    assert rsib.tolist()[:5] == [-1, 2, -1, -1, -1]
    # the chain: every node's parent is the previous one, no siblings
    assert pos.tolist()[5:] == [3, 4, 5, 6, 7]
    assert rnext.tolist()[5:] == [1, 2, 3, 4, -1]
    assert rsib.tolist()[5:] == [-1] * 5
    assert ridx.tolist() == list(range(bs * n))


def test_verify_tree_greedy_by_hand():
    # one request, the tree above; draft tokens per node; the target predicts 1 after node 0,
    # 9 after node 2 (so node 2 matches, node 1 does not), 4 after node 4, 6 after node 4's parent...
    cand = torch.tensor([[50, 7, 1, 3, 9]])
    ridx = torch.arange(5).reshape(1, 5)
    rnext = torch.tensor([[1, 3, 4, -1, -1]])
    rsib = torch.tensor([[-1, 2, -1, -1, -1]])
    target = torch.tensor([[1, 0, 9, 0, 42]])  # after 0 -> 1 (node 2), after 2 -> 9 (node 4), after 4 -> 42
    predicts = torch.full((5,), -1, dtype=torch.int64)
    accept_index = torch.full((1, 4), -1, dtype=torch.int64)
    accept_num = torch.zeros(1, dtype=torch.int64)
    sgl_kernel.verify_tree_greedy_cpu(predicts=predicts, accept_index=accept_index, accept_token_num=accept_num,
                                      candidates=cand, retrive_index=ridx, retrive_next_token=rnext,
                                      retrive_next_sibling=rsib, target_predict=target)
    assert accept_num.tolist() == [2]
    assert accept_index.tolist() == [[0, 2, 4, -1]]
    assert predicts.tolist() == [1, -1, 9, -1, 42]


def test_build_tree_chain_topk1_qlen_only():
    # topk 1, depth 3, 4 draft tokens: a chain; QLEN_ONLY mask is n x n lower-triangular.
    bs, topk, depth, n = 1, 1, 3, 4
    parent_list = torch.tensor([[-1, 0, 1]])
    selected = torch.tensor([[0, 1, 2]])
    seq = torch.tensor([7])
    mask = torch.full((bs * n * n,), True)
    pos = torch.zeros(bs * n, dtype=torch.int64)
    ridx, rnext, rsib = (torch.full((bs, n), -1, dtype=torch.int64) for _ in range(3))
    sgl_kernel.build_tree_kernel_efficient_cpu(parent_list, selected, seq, mask, pos, ridx, rnext, rsib,
                                               topk, depth, n, 1)
    assert pos.tolist() == [7, 8, 9, 10]
    assert rnext.tolist() == [[1, 2, 3, -1]]
    assert rsib.tolist() == [[-1, -1, -1, -1]]
    assert ridx.tolist() == [[0, 1, 2, 3]]
    assert torch.equal(mask.reshape(n, n), torch.ones(n, n, dtype=torch.bool).tril())


def test_build_tree_bitpacking_mode_is_refused():
    with pytest.raises(NotImplementedError, match="QLEN_ONLY_BITPACKING"):
        sgl_kernel.build_tree_kernel_efficient_cpu(*([torch.zeros(1)] * 8), 1, 1, 1, 2)


_TRITON_CHECK = r'''
import json, os, sys, torch
sys.path.insert(0, sys.argv[1])
import sgl_kernel
from sglang.kernels.ops.speculative import spec_tree
from sglang.kernels.ops.speculative.reconstruct_tree import reconstruct_indices_from_tree_mask_triton
g = torch.Generator().manual_seed(0)
res = {}
# build_tree: random EAGLE trees (topk 2, depth 3, 6 draft tokens), as EAGLE's draft produces them
bs, topk, depth, n = 3, 2, 3, 6
parent_list = torch.cat([torch.full((bs, 1), -1), torch.arange(topk * (depth - 1)).repeat(bs, 1)], 1)
sel = torch.stack([torch.randperm(topk + topk * topk * (depth - 1), generator=g)[: n - 1].sort().values
                   for _ in range(bs)])
seq = torch.tensor([5, 9, 2])
for mode in (0, 1):
    outs = []
    for fn in (spec_tree.sgl_build_tree_kernel_triton, sgl_kernel.build_tree_kernel_efficient_cpu):
        size = (int(seq.sum()) * n + n * n * bs) if mode == 0 else n * n * bs
        mask = torch.full((size,), True)
        pos = torch.zeros(bs * n, dtype=torch.int64)
        ridx, rnext, rsib = (torch.full((bs, n), -1, dtype=torch.int64) for _ in range(3))
        fn(parent_list, sel, seq, mask, pos, ridx, rnext, rsib, topk, depth, n, mode)
        outs.append([mask.tolist(), pos.tolist(), ridx.tolist(), rnext.tolist(), rsib.tolist()])
    res[f"build_tree_mode{mode}"] = outs[0] == outs[1]
# verify_tree_greedy on those trees with random targets (small vocab so matches happen)
mask = torch.full((n * n * bs,), True); pos = torch.zeros(bs * n, dtype=torch.int64)
ridx, rnext, rsib = (torch.full((bs, n), -1, dtype=torch.int64) for _ in range(3))
sgl_kernel.build_tree_kernel_efficient_cpu(parent_list, sel, seq, mask, pos, ridx, rnext, rsib, topk, depth, n, 1)
ok = True
for trial in range(20):
    cand = torch.randint(0, 3, (bs, n), generator=g)
    tgt = torch.randint(0, 3, (bs, n), generator=g)
    outs = []
    for fn in (spec_tree.verify_tree_greedy_triton, None):
        p = torch.full((bs * n,), -1, dtype=torch.int64); a = torch.full((bs, depth + 1), -1, dtype=torch.int64)
        k = torch.zeros(bs, dtype=torch.int64)
        if fn is None:
            sgl_kernel.verify_tree_greedy_cpu(predicts=p, accept_index=a, accept_token_num=k, candidates=cand,
                retrive_index=ridx, retrive_next_token=rnext, retrive_next_sibling=rsib, target_predict=tgt)
        else:
            fn(p, a, k, cand, ridx, rnext, rsib, tgt)
        outs.append([p.tolist(), a.tolist(), k.tolist()])
    ok = ok and outs[0] == outs[1]
res["verify_tree_greedy"] = ok
# reconstruct_indices_from_tree_mask on random ancestor-closed masks
ok = True
for trial in range(10):
    bs2, n2 = 2, 5
    masks = []
    for b in range(bs2):
        parent = [-1] + [int(torch.randint(0, i, (1,), generator=g)) for i in range(1, n2)]
        m = torch.zeros(n2, n2, dtype=torch.bool)
        for i in range(n2):
            j = i
            while j >= 0:
                m[i, j] = True; j = parent[j]
        masks.append(m)
    mask = torch.stack(masks).reshape(-1); seq2 = torch.tensor([4, 11])
    outs = []
    for fn in (reconstruct_indices_from_tree_mask_triton, sgl_kernel.speculative.reconstruct_indices_from_tree_mask):
        t = [torch.full((bs2 * n2,), -9, dtype=torch.int64) for _ in range(4)]
        fn(mask, seq2, *t, bs2, n2)
        outs.append([x.tolist() for x in t])
    ok = ok and outs[0] == outs[1]
res["reconstruct_indices_from_tree_mask"] = ok
print(json.dumps(res))
'''


@pytest.mark.skipif(importlib.util.find_spec("sglang") is None, reason="SGLang not importable here")
def test_tree_ops_equal_sglangs_own_triton_kernels_under_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "SGLANG_USE_CPU_ENGINE": "1",
           "PYTHONPATH": str(STAND_IN), "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([sys.executable, "-c", _TRITON_CHECK, str(STAND_IN)], capture_output=True, text=True,
                       env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res == {"build_tree_mode0": True, "build_tree_mode1": True, "verify_tree_greedy": True,
                   "reconstruct_indices_from_tree_mask": True}, res


# --- attention --------------------------------------------------------------------------------


def _kv_cache(slots: int, hkv: int, d: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(slots, hkv, d, generator=gen), torch.randn(slots, hkv, d, generator=gen)


def _ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float) -> torch.Tensor:
    """q [m,H,D], k/v [t,Hkv,D], mask [m,t] -> [m,H,D] via SDPA with GQA expanded by hand."""
    h, hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(h // hkv, dim=1)
    v = v.repeat_interleave(h // hkv, dim=1)
    out = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                         attn_mask=mask, scale=scale)
    return out.transpose(0, 1)


def test_decode_attention_writes_kv_then_attends_over_the_whole_sequence():
    g = torch.Generator().manual_seed(1)
    h, hkv, d, slots = 4, 2, 8, 32
    kb, vb = _kv_cache(slots, hkv, d, g)
    r2t = torch.zeros(3, 16, dtype=torch.int32)
    r2t[1, :5] = torch.tensor([3, 9, 4, 20, 7])
    r2t[2, :3] = torch.tensor([11, 2, 30])
    pools, lens = torch.tensor([1, 2]), torch.tensor([5, 3])
    loc = torch.tensor([7, 30])  # the new token of each sequence is its last slot
    q = torch.randn(2, h, d, generator=g)
    knew, vnew = torch.randn(2, hkv, d, generator=g), torch.randn(2, hkv, d, generator=g)
    out = torch.zeros(2, h, d)
    torch.ops.sgl_kernel.decode_attention_cpu(q, kb, vb, 1.0, 1.0, out, knew, vnew, loc, torch.zeros(2, h, 8, d + 1),
                                              r2t, pools, lens, 0.3, 0.0, False, 0, None, None)
    assert torch.equal(kb[7], knew[0]) and torch.equal(vb[30], vnew[1])
    for i, (p, n) in enumerate(((1, 5), (2, 3))):
        idx = r2t[p, :n].long()
        want = _ref(q[i:i + 1], kb[idx], vb[idx], None, 0.3)
        assert torch.allclose(out[i:i + 1], want, atol=1e-6), (out[i] - want).abs().max()


def test_decode_attention_logit_cap():
    g = torch.Generator().manual_seed(2)
    kb, vb = _kv_cache(8, 1, 4, g)
    q = torch.randn(1, 1, 4, generator=g) * 10
    r2t = torch.arange(8, dtype=torch.int32).reshape(1, 8)
    out = torch.zeros(1, 1, 4)
    ops.decode_attention_cpu(q, kb, vb, 1.0, 1.0, out, None, None, torch.zeros(0, dtype=torch.long), torch.zeros(1),
                             r2t, torch.tensor([0]), torch.tensor([8]), 1.0, 5.0, False, 0, None, None)
    s = 5.0 * torch.tanh((q[0, 0] @ kb[:, 0].T) / 5.0)
    want = torch.softmax(s, -1) @ vb[:, 0]
    assert torch.allclose(out[0, 0], want, atol=1e-6)


def test_extend_attention_causal_prefill_over_a_cached_prefix():
    g = torch.Generator().manual_seed(3)
    h, hkv, d, slots = 4, 2, 8, 40
    kb, vb = _kv_cache(slots, hkv, d, g)
    r2t = torch.zeros(2, 20, dtype=torch.int32)
    r2t[0, :6] = torch.tensor([1, 2, 3, 30, 31, 32])  # prefix 3 cached, 3 new
    r2t[1, :4] = torch.tensor([5, 6, 7, 8])  # no prefix, 4 new
    ext, total, starts = torch.tensor([3, 4]), torch.tensor([6, 4]), torch.tensor([0, 3])
    q = torch.randn(7, h, d, generator=g)
    kx, vx = torch.randn(7, hkv, d, generator=g), torch.randn(7, hkv, d, generator=g)
    kb[r2t[0, 3:6].long()], vb[r2t[0, 3:6].long()] = kx[:3], vx[:3]  # what set_kv_buffer did before the call
    kb[r2t[1, :4].long()], vb[r2t[1, :4].long()] = kx[3:], vx[3:]
    out = torch.zeros(7, h, d)
    torch.ops.sgl_kernel.extend_attention_cpu(q, kx, vx, out, kb, vb, 1.0, 1.0, r2t, torch.tensor([0, 1]), total,
                                              ext, starts, 4, 0.25, 0.0, False, 0, None, None, None, True)
    for (p, pre, e, s) in ((0, 3, 3, 0), (1, 0, 4, 3)):
        idx = r2t[p, :pre + e].long()
        mask = torch.ones(e, pre + e, dtype=torch.bool).tril(diagonal=pre)
        want = _ref(q[s:s + e], kb[idx], vb[idx], mask, 0.25)
        assert torch.allclose(out[s:s + e], want, atol=1e-6)
    # without k/v the new tokens' K/V come from the cache: same result
    out2 = torch.zeros(7, h, d)
    ops.extend_attention_cpu(q, None, None, out2, kb, vb, 1.0, 1.0, r2t, torch.tensor([0, 1]), total, ext, starts,
                             4, 0.25, 0.0, False, 0, None, None, None, True)
    assert torch.allclose(out, out2, atol=1e-6)


def test_extend_attention_target_verify_with_a_tree_mask():
    g = torch.Generator().manual_seed(4)
    h, hkv, d, n = 2, 1, 4, 5
    kb, vb = _kv_cache(32, hkv, d, g)
    r2t = torch.arange(32, dtype=torch.int32).reshape(2, 16)
    pre = torch.tensor([6, 2])
    total = pre + n
    tree = torch.stack([_ngram_mask(), torch.ones(n, n, dtype=torch.bool).tril()])
    q = torch.randn(2 * n, h, d, generator=g)
    kx = torch.cat([kb[r2t[b, pre[b]:total[b]].long()] for b in range(2)])
    vx = torch.cat([vb[r2t[b, pre[b]:total[b]].long()] for b in range(2)])
    out = torch.zeros(2 * n, h, d)
    ops.extend_attention_cpu(q, kx, vx, out, kb, vb, 1.0, 1.0, r2t, torch.tensor([0, 1]), total,
                             torch.tensor([n, n]), torch.tensor([0, n]), n, 0.5, 0.0, False, 0, None, None,
                             tree.reshape(-1), True)
    for b in range(2):
        p = int(pre[b])
        idx = r2t[b, :p + n].long()
        mask = torch.cat([torch.ones(n, p, dtype=torch.bool), tree[b]], dim=1)
        want = _ref(q[b * n:(b + 1) * n], kb[idx], vb[idx], mask, 0.5)
        assert torch.allclose(out[b * n:(b + 1) * n], want, atol=1e-6)
    with pytest.raises(NotImplementedError, match="QLEN_ONLY"):
        ops.extend_attention_cpu(q, kx, vx, out, kb, vb, 1.0, 1.0, r2t, torch.tensor([0, 1]), total,
                                 torch.tensor([n, n]), torch.tensor([0, n]), n, 0.5, 0.0, False, 0, None, None,
                                 torch.ones(3, dtype=torch.bool), True)
