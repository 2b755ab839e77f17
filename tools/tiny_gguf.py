#!/usr/bin/env python3
"""Convert the tiny Llama target and draft (tools/build_tiny_models.py) to GGUF for llama-server.

Usage: <vllm-venv>/bin/python tools/tiny_gguf.py GGUF_PY_DIR HF_DIR OUT.gguf
       <vllm-venv>/bin/python tools/tiny_gguf.py GGUF_PY_DIR --shape NAME HF_DIR OUT.gguf
  --shape NAME: a tiny GGUF in another architecture's shape (SHAPES below: qwen3, gemma3, qwen35, deepseek2, eagle3,
  dflash, dspark, nemotron_h, ...), random weights, HF_DIR's tokenizer (tools/oracle/llamacpp_spec.py starts them)
  GGUF_PY_DIR: the `gguf-py` folder of the llama.cpp tree the server was built from
  (`tools/llamacpp_cpu.sh --src` prints the tree; the folder is `<tree>/gguf-py`), so the writer
  and the server are one llama.cpp build (b11434). Needs numpy, safetensors and PyYAML (the vLLM
  venv has them), not torch.

Why not llama.cpp's own `convert_hf_to_gguf.py`: it was tried first and refuses the tiny
tokenizer. It identifies a BPE pre-tokenizer by the hash of a fixed test string's token ids
(`get_vocab_base_pre`), and a 512-token BPE trained here matches no known hash:
`NotImplementedError: BPE pre-tokenizer was not recognized - update get_vocab_base_pre()`.
So this script writes the file with `gguf.GGUFWriter` (the same writer the converter uses) and
does for a plain `LlamaForCausalLM` what the converter does (conversion/llama.py `LlamaModel`):
  * metadata `llama.*` from config.json (context = max_position_embeddings, rope freq base,
    rms eps, head counts, key/value length = head_dim, rope dimension = head_dim);
  * the vocabulary as `gpt2` BPE: tokens in id order, merges, the four specials as control tokens,
    pre-tokenizer `gpt-2` (the tokenizer's ByteLevel with its regex is GPT-2's), BOS added
    (its post-processor prepends `<s>`);
  * tensors by `gguf.get_tensor_name_map(LLAMA)`, q/k rows permuted for llama.cpp's rope layout
    (`LlamaModel.permute`: reshape (heads, 2, rows/heads/2, cols), swap axes 1 and 2), all float32
    (general.file_type 0 = ALL_F32), so the KV geometry is the HF model's: per token
    2 (K,V) x layers x kv_heads x head_dim x 4 B with an F32 cache (`--cache-type-k/v f32`).
Deterministic: the same inputs give the same bytes (written to OUT.tmp, then renamed).

The other architectures (`--shape`, `write_shape`): the converter needs a real checkpoint of each (and refuses the
tiny tokenizer as above), so these are written directly: the arch's keys and tensors as gguf-py names them, random
weights, the tiny target's vocabulary. They exist for llama-server's start-up and its speculative loop (issue 35.1:
the llama.cpp fixed-k oracle on every config family's architecture), not for the text they generate.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def permute(w: Any, n_head: int) -> Any:
    """llama.cpp's rope row order for a q (n_head = heads) or k (n_head = kv heads) projection."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def add_vocabulary(w: Any, hf: Path, cfg: dict[str, Any]) -> None:
    """The HF folder's BPE vocabulary as llama.cpp's `gpt2` tokenizer (see the module's docstring)."""
    import gguf  # type: ignore[import-not-found]  # from GGUF_PY_DIR

    tok = json.loads((hf / "tokenizer.json").read_text())
    vocab: dict[str, int] = tok["model"]["vocab"]
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(cfg["vocab_size"])):
        raise SystemExit(f"{hf}: token ids are not 0..{cfg['vocab_size'] - 1}")
    special = {t["id"] for t in tok.get("added_tokens", []) if t.get("special")}
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list([t for t, _ in by_id])
    w.add_token_types([gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for _, i in by_id])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]])
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(cfg["eos_token_id"])
    if cfg.get("pad_token_id") is not None:
        w.add_pad_token_id(cfg["pad_token_id"])
    if "<unk>" in vocab:
        w.add_unk_token_id(vocab["<unk>"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)


def convert(hf: Path, out: Path) -> None:
    import gguf  # from GGUF_PY_DIR (the vendored llama.cpp tree)
    import numpy as np
    from safetensors.numpy import load_file  # type: ignore[import-not-found]  # the vLLM venv's

    cfg = json.loads((hf / "config.json").read_text())
    if cfg.get("architectures") != ["LlamaForCausalLM"]:
        raise SystemExit(f"{hf}: not a LlamaForCausalLM ({cfg.get('architectures')})")
    n_layers, n_head, n_kv = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // n_head
    rope = cfg.get("rope_parameters") or {}
    arch = gguf.MODEL_ARCH.LLAMA
    tmp = out.with_suffix(out.suffix + ".tmp")
    w = gguf.GGUFWriter(str(tmp), gguf.MODEL_ARCH_NAMES[arch])
    w.add_name(hf.name)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(n_layers)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0))))
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])

    add_vocabulary(w, hf, cfg)

    names = gguf.get_tensor_name_map(arch, n_layers)
    tensors = load_file(str(hf / "model.safetensors"))
    for name in sorted(tensors):
        data = tensors[name].astype(np.float32)
        if name.endswith("q_proj.weight"):
            data = permute(data, n_head)
        elif name.endswith("k_proj.weight"):
            data = permute(data, n_kv)
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit(f"{hf}: no GGUF name for tensor {name}")
        w.add_tensor(new, np.ascontiguousarray(data))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)


# --- tiny GGUFs in other architectures' shapes (issue 35.1: llama.cpp's fixed-k oracle beyond the tiny Llama) ---
# A shape is what llama-server's loader needs of an architecture: the GGUF arch name, its `<arch>.*` keys and its
# tensors (numpy shapes in HF order, rows = outputs; GGUF stores them reversed). Names and keys are gguf-py's
# (constants.py MODEL_TENSORS / Keys) and the converter's (conversion/*.py); what the b11434 loader requires on top
# was found by starting llama-server on the file until it loaded (its "missing tensor" / "wrong shape" lines).
# Width 64, 4 heads of 16 (2 KV heads), FFN 128; the vocabulary is the tiny target's 512 BPE tokens.
H, N_HEAD, N_KV, HEAD_DIM, FFN, VOCAB = 64, 4, 2, 16, 128, 512


@dataclass(frozen=True)
class Shape:
    """One tiny GGUF: its architecture, keys (written as `<arch>.<key>`) and tensors."""

    arch: str
    keys: dict[str, Any]
    tensors: dict[str, tuple[int, ...]]
    mask_token_id: int | None = None  # a block drafter's mask token (tokenizer.ggml.mask_token_id)


def _attention(i: int, q_in: int = H, qk_norm: bool = False) -> dict[str, tuple[int, ...]]:
    t = {f"blk.{i}.attn_norm.weight": (q_in,), f"blk.{i}.attn_q.weight": (N_HEAD * HEAD_DIM, q_in),
         f"blk.{i}.attn_k.weight": (N_KV * HEAD_DIM, q_in), f"blk.{i}.attn_v.weight": (N_KV * HEAD_DIM, q_in),
         f"blk.{i}.attn_output.weight": (H, N_HEAD * HEAD_DIM)}
    if qk_norm:
        t |= {f"blk.{i}.attn_q_norm.weight": (HEAD_DIM,), f"blk.{i}.attn_k_norm.weight": (HEAD_DIM,)}
    return t


def _mlp(i: int) -> dict[str, tuple[int, ...]]:
    return {f"blk.{i}.ffn_norm.weight": (H,), f"blk.{i}.ffn_gate.weight": (FFN, H),
            f"blk.{i}.ffn_up.weight": (FFN, H), f"blk.{i}.ffn_down.weight": (H, FFN)}


def _keys(layers: int, **more: Any) -> dict[str, Any]:
    return {"context_length": 4096, "embedding_length": H, "block_count": layers, "feed_forward_length": FFN,
            "attention.head_count": N_HEAD, "attention.head_count_kv": N_KV, "attention.key_length": HEAD_DIM,
            "attention.value_length": HEAD_DIM, "rope.dimension_count": HEAD_DIM, "rope.freq_base": 10000.0,
            "attention.layer_norm_rms_epsilon": 1e-6, "vocab_size": VOCAB, **more}


def _io() -> dict[str, tuple[int, ...]]:
    return {"token_embd.weight": (VOCAB, H), "output_norm.weight": (H,), "output.weight": (VOCAB, H)}


def qwen3(layers: int = 4) -> Shape:
    """Qwen3ForCausalLM (conversion/qwen.py Qwen3Model): Llama with per-head q/k RMS norms."""
    t = _io()
    for i in range(layers):
        t |= _attention(i, qk_norm=True) | _mlp(i)
    return Shape("qwen3", _keys(layers), t)


def llama(layers: int = 4) -> Shape:
    """A plain Llama target of 4 layers (the EAGLE-3 heads tap three of its layers)."""
    t = _io()
    for i in range(layers):
        t |= _attention(i) | _mlp(i)
    return Shape("llama", _keys(layers), t)


def eagle3(norm_before_residual: bool = False) -> Shape:
    """An EAGLE-3 head (conversion/llama.py, `draft_vocab_size` and one layer: arch `eagle3`): `fc` fuses the three
    tapped target layers, the layer's q/k/v read [embedding; hidden] (2 x width), `d2t` maps the draft vocabulary
    (here all 512 tokens) to the target's; taps and target width are keys."""
    t = {"fc.weight": (H, 3 * H), "output_norm.weight": (H,), "output.weight": (VOCAB, H), "d2t": (VOCAB,),
         "blk.0.attn_norm_2.weight": (H,)} | _attention(0, q_in=2 * H) | _mlp(0)
    t["blk.0.attn_norm.weight"] = (H,)
    return Shape("eagle3", _keys(1, target_layers=[1, 2, 3], target_hidden_size=H,
                                 norm_before_residual=norm_before_residual, norm_before_fc=False), t)


def dflash(block_size: int = 4, dspark: bool = False) -> Shape:
    """A DFlash (or DSpark: DFlash + a Markov head) block drafter on a Qwen3 target (conversion/qwen.py
    DFlashModel; arch `dflash`, both): Qwen3 layers, `fc` fusing the tapped target layers, the block size, taps."""
    t = {"fc.weight": (H, 2 * H), "enc.output_norm.weight": (H,), "output_norm.weight": (H,),
         "output.weight": (VOCAB, H), "token_embd.weight": (VOCAB, H)}
    for i in range(2):
        t |= _attention(i, qk_norm=True) | _mlp(i)
    more: dict[str, Any] = {"block_size": block_size, "target_layers": [1, 2]}
    if dspark:
        more |= {"sample_from_anchor": True, "has_confidence_head": False}
        t |= {"markov_w1.weight": (VOCAB, VOCAB), "markov_w2.weight": (VOCAB, VOCAB)}
    return Shape("dflash", _keys(2, **more), t, mask_token_id=VOCAB - 1)


N_EXPERT, EXPERT_FFN = 4, 32


def _moe(i: int) -> dict[str, tuple[int, ...]]:
    """DeepSeek-V3's MoE FFN: routed experts stacked (gguf `*_exps`), one shared expert, the router's bias."""
    return {f"blk.{i}.ffn_norm.weight": (H,), f"blk.{i}.ffn_gate_inp.weight": (N_EXPERT, H),
            f"blk.{i}.exp_probs_b.bias": (N_EXPERT,), f"blk.{i}.ffn_gate_exps.weight": (N_EXPERT, EXPERT_FFN, H),
            f"blk.{i}.ffn_up_exps.weight": (N_EXPERT, EXPERT_FFN, H),
            f"blk.{i}.ffn_down_exps.weight": (N_EXPERT, H, EXPERT_FFN),
            f"blk.{i}.ffn_gate_shexp.weight": (EXPERT_FFN, H), f"blk.{i}.ffn_up_shexp.weight": (EXPERT_FFN, H),
            f"blk.{i}.ffn_down_shexp.weight": (H, EXPERT_FFN)}


def deepseek2(nextn: int = 1, layers: int = 2) -> Shape:
    """DeepSeek-V3's MLA (conversion/deepseek.py DeepseekV2Model: arch `deepseek2`, one KV head of kv_lora_rank +
    rope dims, kv_b split into k_b (transposed) and v_b), dense FFNs (leading_dense_block_count = every block), and
    `nextn` MTP blocks after the layers (blk.{L}.nextn.*, `nextn_predict_layers`) as gguf-py names them."""
    q_lora, kv_lora, nope, rope, v = 32, 32, 16, 8, 16
    t = _io()
    for i in range(layers + nextn):
        t |= {f"blk.{i}.attn_norm.weight": (H,), f"blk.{i}.attn_q_a.weight": (q_lora, H),
              f"blk.{i}.attn_q_a_norm.weight": (q_lora,), f"blk.{i}.attn_q_b.weight": (N_HEAD * (nope + rope), q_lora),
              f"blk.{i}.attn_kv_a_mqa.weight": (kv_lora + rope, H), f"blk.{i}.attn_kv_a_norm.weight": (kv_lora,),
              f"blk.{i}.attn_k_b.weight": (N_HEAD, kv_lora, nope), f"blk.{i}.attn_v_b.weight": (N_HEAD, v, kv_lora),
              f"blk.{i}.attn_output.weight": (H, N_HEAD * v)}
        t |= _mlp(i) if i < layers else _moe(i)
        if i >= layers:
            t |= {f"blk.{i}.nextn.eh_proj.weight": (H, 2 * H), f"blk.{i}.nextn.enorm.weight": (H,),
                  f"blk.{i}.nextn.hnorm.weight": (H,), f"blk.{i}.nextn.shared_head_norm.weight": (H,)}
    keys = _keys(layers + nextn, **{"attention.head_count_kv": 1, "attention.key_length": kv_lora + rope,
                                    "attention.value_length": kv_lora, "attention.key_length_mla": nope + rope,
                                    "attention.value_length_mla": v, "rope.dimension_count": rope,
                                    "attention.q_lora_rank": q_lora, "attention.kv_lora_rank": kv_lora,
                                    "leading_dense_block_count": layers, "expert_count": N_EXPERT,
                                    "expert_used_count": 2, "expert_shared_count": 1,
                                    "expert_feed_forward_length": EXPERT_FFN, "expert_weights_scale": 1.0,
                                    "expert_weights_norm": True, "expert_gating_func": 2})
    if nextn:
        keys["nextn_predict_layers"] = nextn
    return Shape("deepseek2", keys, t)


def gemma3(layers: int = 6, window: int = 64) -> Shape:
    """Gemma-3 (conversion/gemma.py Gemma3Model: arch `gemma3`): q/k norms, post-attention and post-FFN norms, tied
    output; five sliding-window layers to one full (llama.cpp's pattern for gemma3) with `attention.sliding_window`."""
    t = {"token_embd.weight": (VOCAB, H), "output_norm.weight": (H,)}
    for i in range(layers):
        t |= _attention(i, qk_norm=True) | _mlp(i) | {f"blk.{i}.post_attention_norm.weight": (H,),
                                                     f"blk.{i}.post_ffw_norm.weight": (H,)}
    return Shape("gemma3", _keys(layers, **{"attention.sliding_window": window}), t)


def qwen35(layers: int = 4, nextn: int = 1) -> Shape:
    """Qwen3.5 (conversion/qwen.py Qwen3_5TextModel: arch `qwen35`): gated-delta-net linear attention with a full
    (gated-query) attention layer every 4th, dense FFNs, and its MTP block after the layers (blk.{L}.nextn.*)."""
    kh, vh, kd, vd, conv = 2, 4, 16, 16, 4
    qkv = 2 * kh * kd + vh * vd
    t = _io()
    for i in range(layers + nextn):
        if (i + 1) % 4 == 0 or i >= layers:  # full attention: its q carries the output gate (2 x heads x head_dim)
            t |= _attention(i, qk_norm=True) | {f"blk.{i}.attn_q.weight": (2 * N_HEAD * HEAD_DIM, H)}
        else:
            t |= {f"blk.{i}.attn_norm.weight": (H,), f"blk.{i}.attn_qkv.weight": (qkv, H),
                  f"blk.{i}.attn_gate.weight": (vh * vd, H), f"blk.{i}.ssm_beta.weight": (vh, H),
                  f"blk.{i}.ssm_alpha.weight": (vh, H), f"blk.{i}.ssm_dt.bias": (vh,), f"blk.{i}.ssm_a": (vh,),
                  f"blk.{i}.ssm_conv1d.weight": (qkv, conv), f"blk.{i}.ssm_norm.weight": (vd,),
                  f"blk.{i}.ssm_out.weight": (H, vh * vd)}
        t |= {f"blk.{i}.post_attention_norm.weight": (H,), f"blk.{i}.ffn_gate.weight": (FFN, H),
              f"blk.{i}.ffn_up.weight": (FFN, H), f"blk.{i}.ffn_down.weight": (H, FFN)}
        if i >= layers:
            t |= {f"blk.{i}.nextn.eh_proj.weight": (H, 2 * H), f"blk.{i}.nextn.enorm.weight": (H,),
                  f"blk.{i}.nextn.hnorm.weight": (H,), f"blk.{i}.nextn.shared_head_norm.weight": (H,)}
    keys = _keys(layers + nextn, **{"ssm.conv_kernel": conv, "ssm.state_size": kd, "ssm.group_count": kh,
                                    "ssm.time_step_rank": vh, "ssm.inner_size": vh * vd,
                                    "full_attention_interval": 4, "rope.dimension_count": HEAD_DIM // 4,
                                    "rope.dimension_sections": [HEAD_DIM // 8, 0, 0, 0]})
    if nextn:
        keys["nextn_predict_layers"] = nextn
    return Shape("qwen35", keys, t)


def nemotron_h(pattern: str = "MEM*EMEM*E") -> Shape:
    """Nemotron-H with MoE, as Nemotron-3-Nano (conversion/nemotron.py NemotronHModel: arch `nemotron_h_moe` where
    the config has num_experts_per_tok): `hybrid_override_pattern` M = Mamba-2, * = attention (no rope, no q/k
    norm), E = MoE (relu2 experts without a gate, one shared expert, the router's bias); one norm per block. The
    per-layer kinds are the per-layer keys: head_count_kv > 0 on attention, feed_forward_length > 0 on MoE, both 0 on
    Mamba-2 (GraniteHybridModel / NemotronHModel.set_gguf_parameters). Mamba-2: 4 heads of 16 (d_inner 64), state
    16, 2 groups, conv 4; tensors reshaped as Mamba2Model.modify_tensors writes them (A, D: (heads, 1); norm:
    (groups, d_inner / groups); conv1d squeezed)."""
    heads, head_dim, state, groups, conv = 4, 16, 16, 2, 4
    inner = heads * head_dim
    conv_dim = inner + 2 * groups * state
    t = _io()
    for i, kind in enumerate(pattern):
        t[f"blk.{i}.attn_norm.weight"] = (H,)
        if kind == "M":
            t |= {f"blk.{i}.ssm_in.weight": (2 * inner + 2 * groups * state + heads, H),
                  f"blk.{i}.ssm_conv1d.weight": (conv_dim, conv), f"blk.{i}.ssm_conv1d.bias": (conv_dim,),
                  f"blk.{i}.ssm_dt.bias": (heads,), f"blk.{i}.ssm_a": (heads, 1), f"blk.{i}.ssm_d": (heads, 1),
                  f"blk.{i}.ssm_norm.weight": (groups, inner // groups), f"blk.{i}.ssm_out.weight": (H, inner)}
        elif kind == "*":
            t |= {f"blk.{i}.attn_q.weight": (N_HEAD * HEAD_DIM, H), f"blk.{i}.attn_k.weight": (N_KV * HEAD_DIM, H),
                  f"blk.{i}.attn_v.weight": (N_KV * HEAD_DIM, H), f"blk.{i}.attn_output.weight": (H, N_HEAD * HEAD_DIM)}
        else:  # E
            t |= {f"blk.{i}.ffn_gate_inp.weight": (N_EXPERT, H), f"blk.{i}.exp_probs_b.bias": (N_EXPERT,),
                  f"blk.{i}.ffn_up_exps.weight": (N_EXPERT, EXPERT_FFN, H),
                  f"blk.{i}.ffn_down_exps.weight": (N_EXPERT, H, EXPERT_FFN),
                  f"blk.{i}.ffn_up_shexp.weight": (EXPERT_FFN, H), f"blk.{i}.ffn_down_shexp.weight": (H, EXPERT_FFN)}
    keys = _keys(len(pattern), **{
        "context_length": 1 << 20, "feed_forward_length": [EXPERT_FFN if c == "E" else 0 for c in pattern],
        "attention.head_count_kv": [N_KV if c == "*" else 0 for c in pattern], "rope.scaling.finetuned": False,
        "ssm.conv_kernel": conv, "ssm.state_size": state, "ssm.group_count": groups, "ssm.inner_size": inner,
        "ssm.time_step_rank": heads, "expert_count": N_EXPERT, "expert_used_count": 2, "expert_shared_count": 1,
        "expert_feed_forward_length": EXPERT_FFN, "expert_shared_feed_forward_length": EXPERT_FFN,
        "expert_weights_scale": 2.5, "expert_weights_norm": True, "expert_group_count": 1})
    keys["attention.layer_norm_epsilon"] = keys.pop("attention.layer_norm_rms_epsilon")  # the loader's key
    del keys["rope.dimension_count"], keys["rope.freq_base"]
    return Shape("nemotron_h_moe", keys, t)


# The shapes by name (tools/oracle/llamacpp_spec.py's rows name them; `-nomtp`: without the MTP block; `-b8`: a
# block of 8 instead of 4, the rows' second block size).
SHAPES: dict[str, Callable[[], Shape]] = {
    "llama": llama, "qwen3": qwen3, "qwen3-draft": lambda: qwen3(layers=2), "gemma3": gemma3,
    "qwen35": qwen35, "qwen35-nomtp": lambda: qwen35(nextn=0), "deepseek2": deepseek2,
    "deepseek2-nomtp": lambda: deepseek2(nextn=0), "eagle3": eagle3, "dflash": dflash,
    "dspark": lambda: dflash(dspark=True), "dflash-b8": lambda: dflash(block_size=8),
    "dspark-b8": lambda: dflash(block_size=8, dspark=True), "nemotron_h": nemotron_h}


def write_shape(shape: Shape, vocab_hf: Path, out: Path, seed: int = 0) -> None:
    """`shape` as a GGUF at OUT (random weights, seeded: the same bytes every time), with `vocab_hf`'s tokenizer;
    norms are ones, the rest N(0, 0.02), integer tensors (`d2t`) int64 zeros."""
    import gguf  # from GGUF_PY_DIR
    import numpy as np

    cfg = json.loads((vocab_hf / "config.json").read_text())
    tmp = out.with_suffix(out.suffix + ".tmp")
    w = gguf.GGUFWriter(str(tmp), shape.arch)
    w.add_name(f"tiny-{shape.arch}")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    for key, value in shape.keys.items():
        name = f"{shape.arch}.{key}"
        if isinstance(value, bool):
            w.add_bool(name, value)
        elif isinstance(value, int):
            w.add_uint32(name, value)
        elif isinstance(value, float):
            w.add_float32(name, value)
        else:
            w.add_array(name, list(value))
    add_vocabulary(w, vocab_hf, cfg)
    if shape.mask_token_id is not None:
        w.add_mask_token_id(shape.mask_token_id)
    rng = np.random.default_rng(seed)
    for name, dims in shape.tensors.items():
        if name == "d2t":
            w.add_tensor(name, np.zeros(dims, dtype=np.int64), raw_dtype=gguf.GGMLQuantizationType.I64)
        elif "norm" in name:
            w.add_tensor(name, np.ones(dims, dtype=np.float32))
        else:
            w.add_tensor(name, (rng.standard_normal(dims) * 0.02).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)


def main(argv: list[str]) -> int:
    shape = None
    if len(argv) == 6 and argv[2] == "--shape" and argv[3] in SHAPES:
        shape = SHAPES[argv[3]]()
        argv = argv[:2] + argv[4:]
    if len(argv) != 4:
        print(__doc__.split("\n\n", 2)[1], file=sys.stderr)
        return 3
    gguf_py, hf, out = Path(argv[1]), Path(argv[2]), Path(argv[3])
    sys.path.insert(0, str(gguf_py))
    out.parent.mkdir(parents=True, exist_ok=True)
    if shape is not None:
        write_shape(shape, hf, out)
    else:
        convert(hf, out)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
