#!/usr/bin/env python3
"""Build the tiny target and draft models the real-vLLM e2e tests serve (no model hub here).

Usage: <vllm-venv>/bin/python tools/build_tiny_models.py OUTDIR
Writes OUTDIR/target and OUTDIR/draft: random-weight `LlamaForCausalLM`s in float32 with a
shared, locally trained byte-level BPE tokenizer (vocab 512). Needs torch, transformers and
tokenizers, so it runs with the vLLM venv's python (tools/vllm_cpu.sh prints it).

Why these sizes (their geometry is what the budget tests predict):
  * head_dim 32: the smallest head size vLLM's CPU attention backend accepts.
  * target: 2 layers x 2 KV heads x 32 x 4 B x (K,V) = 1,024 B/token -> 8 MiB = 64 blocks of 128.
  * draft:  1 layer  x 1 KV head  x 32 x 4 B x (K,V) =   256 B/token -> 8 MiB / 1,280 = 51 blocks.
Deterministic: fixed seeds (0 target, 1 draft) and a fixed training corpus, so the engine's
counters are the same run after run. Adapted from the team's vLLM-CPU reference recipe.

`--pays` also builds two larger random targets (same tokenizer, seed 0, head_dim 64) whose
forward pass is memory-bound on these CPUs, so that a verify of 4 tokens costs about one
decode step and ngram speculation can pay (tests/e2e/test_pays.py):
  * t1024x8: hidden 1024, 8 layers, 16/8 heads, FFN 2816: 95,437,824 params, 365 MB on disk.
  * t768x6:  hidden 768,  6 layers, 12/6 heads, FFN 2048: 39,724,800 params, 152 MB on disk.
They cost ~0.5 GB of cache and a few seconds to build; the default build does not make them.

`--context` builds the context target (same tokenizer, seed 0, 8,192 positions) on which a decode
step's cost grows clearly with the prompt on CPU, for the context sweep's cycle decomposition
(issue 39; t768x6's 2,048 positions move the target step by ~1.5 ms, inside the noise):
  * c512x2: hidden 512, 2 layers, 8/8 heads of 64, FFN 512: attention-heavy (no grouped KV, a thin
    MLP): 2 x 8 x 64 x 4 B x (K,V) = 8,192 B/token, so at 7,936 tokens a step reads 65 MB of KV
    against 17 MB of weights.

OUTDIR/eagle3-sglang is a random EAGLE-3 head for the target in SGLang's format
(`LlamaForCausalLMEagle3`, seed 2): one decoder layer whose attention reads
[embeds, target hidden] (256 in), hidden 128, 4/2 heads of 32, FFN 256, its own lm_head over
the full vocab (draft_vocab_size 512, no d2t/t2d). It taps one target layer:
eagle_aux_hidden_state_layer_ids [0] (SGLang: the output of layer 0, captured at layer 1's
input). SGLang's default taps (2, L//2, L-3) do not exist in a 2-layer target, and an id of
L-1 or more is never captured (SGLang captures at layer id+1's input, and there is no layer
L), so one in-range id is the only honest choice here; with one tap the fc projection
(128 -> 128) is not applied. KV: 1 layer x 2 KV heads x 32 x 4 B x 2 = 512 B/token.

vLLM's EAGLE, EAGLE-3 and MTP arms (the vLLM-CPU methods recipe; each adds one drafter layer
of the target's KV geometry, 512 B/token, so 8 MiB / 1,536 B = 42 blocks of 128):
  * OUTDIR/eagle: an EAGLE-1 head (`LlamaForCausalLM` config, seed 3): `embed_tokens`, `fc`
    (128 <- 256, no bias) and `layers.0.*` without `input_layernorm`; no `lm_head` (vLLM shares
    the target's and refuses a head that has one).
  * OUTDIR/eagle3: an EAGLE-3 head in vLLM's layout (`LlamaForCausalLMEagle3`, seed 4):
    `midlayer.*`, `fc` (128 <- 2 x 128), `norm`, `lm_head`; no `embed_tokens` (shared), no
    d2t/t2d (draft vocabulary = target's). Taps eagle_aux_hidden_state_layer_ids [0, 1] (vLLM:
    the stream entering layer j, 0 = the embeddings).
  * OUTDIR/eagle3-taps-out-of-range ([0, 3]: a 2-layer target has streams 0..2) and
    OUTDIR/eagle3-taps-duplicate ([1, 1]: vLLM keeps each tapped layer once, then the fc input
    is short and the engine crashes with a reshape error): the same head with bad taps, for the
    co-design rule (`specgate codesign` must fail them before a rollout).
  * OUTDIR/mtp-target: vLLM loads MTP layers only from inside the target, so this is the
    target's own weights (seed 0) under an `Ernie4_5_MoeForCausalLM` config with
    `moe_num_experts: 0` and `num_nextn_predict_layers: 1`, plus `model.mtp_*.0.*` weights
    (seed 5): vLLM serves it as Ernie and drafts with `ErnieMTPModel` (one token per step).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

VOCAB = 512
SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]
# (name, hidden, layers, heads, kv_heads, intermediate, seed)
MODELS: tuple[tuple[str, int, int, int, int, int, int], ...] = (
    ("target", 128, 2, 4, 2, 256, 0),
    ("draft", 64, 1, 2, 1, 128, 1),
)
# Larger targets on which speculation can pay (built only with --pays; see the docstring).
PAYS_MODELS: tuple[tuple[str, int, int, int, int, int, int], ...] = (
    ("t1024x8", 1024, 8, 16, 8, 2816, 0),
    ("t768x6", 768, 6, 12, 6, 2048, 0),
)
# EAGLE-3 head for SGLang: (name, layers, heads, kv_heads, intermediate, seed, aux layer ids)
EAGLE3_SGLANG: tuple[str, int, int, int, int, int, tuple[int, ...]] = ("eagle3-sglang", 1, 4, 2, 256, 2, (0,))
# vLLM drafter heads (see the docstring): (directory, seed, eagle_aux_hidden_state_layer_ids)
EAGLE_VLLM: tuple[str, int] = ("eagle", 3)
EAGLE3_VLLM: tuple[tuple[str, int, tuple[int, ...]], ...] = (
    ("eagle3", 4, (0, 1)),
    ("eagle3-taps-out-of-range", 4, (0, 3)),
    ("eagle3-taps-duplicate", 4, (1, 1)),
)
MTP_TARGET: tuple[str, int] = ("mtp-target", 5)
COMPLETE = ".complete"
PAYS_COMPLETE = ".complete-pays"
# The context sweep's target (built only with --context; see the docstring): (name, hidden, layers, heads,
# kv_heads, intermediate, seed) with its own position count.
CONTEXT_MODELS: tuple[tuple[str, int, int, int, int, int, int], ...] = (
    ("c512x2", 512, 2, 8, 8, 512, 0),
)
CONTEXT_POSITIONS = 8192
CONTEXT_COMPLETE = ".complete-context"


def corpus() -> list[str]:
    """A fixed synthetic corpus: repetitive enough that ngram lookup finds matches."""
    words = (
        "the quick brown fox jumps over the lazy dog speculative decoding "
        "draft target token accept reject cache block prefix prompt "
        "generation metrics prometheus exporter kv vllm sglang engine "
        "request latency throughput one two three four five six seven eight nine ten"
    ).split()
    lines = []
    for i in range(2000):
        lines.append(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(12)))
        lines.append(f"The number {i} is followed by {i + 1}.")
    return lines


def build_tokenizer(model_max_length: int = 2048):  # -> PreTrainedTokenizerFast (imported lazily: heavy)
    """Byte-level BPE trained here, wrapped for transformers, with a minimal chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    bos_id = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=model_max_length,
    )
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    return fast


def build_model(out_dir: Path, tokenizer, hidden: int, layers: int, heads: int, kv_heads: int,
                inter: int, seed: int, max_positions: int = 2048) -> int:
    """Save one random-weight Llama (float32) plus the shared tokenizer; returns its parameter count."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(cfg).to(torch.float32)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return sum(p.numel() for p in model.parameters())


def build_eagle3_sglang(out_dir: Path, tokenizer, target_hidden: int) -> int:
    """A random EAGLE-3 head in SGLang's checkpoint layout (see the module docstring); returns its params."""
    import json

    import torch
    from safetensors.torch import save_file

    _, layers, heads, kv_heads, inter, seed, aux_ids = EAGLE3_SGLANG
    hidden, head_dim, vocab = target_hidden, target_hidden // heads, len(tokenizer)
    gen = torch.Generator().manual_seed(seed)

    def w(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * 0.02).to(torch.float32)

    tensors = {
        "embed_tokens.weight": w(vocab, hidden),
        "midlayer.input_layernorm.weight": torch.ones(hidden),
        "midlayer.hidden_norm.weight": torch.ones(hidden),
        "midlayer.post_attention_layernorm.weight": torch.ones(hidden),
        "midlayer.self_attn.q_proj.weight": w(heads * head_dim, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": w(kv_heads * head_dim, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": w(kv_heads * head_dim, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": w(hidden, heads * head_dim),
        "midlayer.mlp.gate_proj.weight": w(inter, hidden),
        "midlayer.mlp.up_proj.weight": w(inter, hidden),
        "midlayer.mlp.down_proj.weight": w(hidden, inter),
        "fc.weight": w(hidden, hidden * len(aux_ids)),
        "norm.weight": torch.ones(hidden),
        "lm_head.weight": w(vocab, hidden),
    }
    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
        "max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "vocab_size": vocab, "draft_vocab_size": vocab, "target_hidden_size": hidden,
        "tie_word_embeddings": False, "torch_dtype": "float32",
        "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(aux_ids), "use_aux_hidden_state": True},
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out_dir / "model.safetensors"))
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    tokenizer.save_pretrained(out_dir)
    return sum(t.numel() for t in tensors.values())


def _llama_layer(w, prefix: str, hidden: int, heads: int, kv_heads: int, inter: int,
                 attn_in: int, input_norm: bool = True) -> dict:
    """One Llama decoder layer's tensors under `prefix` (random projections, unit norms)."""
    import torch

    head_dim = hidden // heads
    out = {
        f"{prefix}self_attn.q_proj.weight": w(heads * head_dim, attn_in),
        f"{prefix}self_attn.k_proj.weight": w(kv_heads * head_dim, attn_in),
        f"{prefix}self_attn.v_proj.weight": w(kv_heads * head_dim, attn_in),
        f"{prefix}self_attn.o_proj.weight": w(hidden, heads * head_dim),
        f"{prefix}mlp.gate_proj.weight": w(inter, hidden),
        f"{prefix}mlp.up_proj.weight": w(inter, hidden),
        f"{prefix}mlp.down_proj.weight": w(hidden, inter),
        f"{prefix}post_attention_layernorm.weight": torch.ones(hidden),
    }
    if input_norm:
        out[f"{prefix}input_layernorm.weight"] = torch.ones(hidden)
    return out


def _head_config(tokenizer, hidden: int, heads: int, kv_heads: int, inter: int, layers: int = 1) -> dict:
    return {
        "model_type": "llama", "hidden_act": "silu", "hidden_size": hidden, "intermediate_size": inter,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "head_dim": hidden // heads, "max_position_embeddings": 2048, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "vocab_size": len(tokenizer), "tie_word_embeddings": False,
        "torch_dtype": "float32", "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id,
    }


def _save_head(out_dir: Path, tensors: dict, cfg: dict, tokenizer) -> int:
    import json

    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out_dir / "model.safetensors"))
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    tokenizer.save_pretrained(out_dir)
    return sum(t.numel() for t in tensors.values())


def _randn(seed: int):
    import torch

    gen = torch.Generator().manual_seed(seed)

    def w(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * 0.02).to(torch.float32)

    return w


def build_eagle_vllm(out_dir: Path, tokenizer, target: tuple[str, int, int, int, int, int, int], seed: int) -> int:
    """vLLM's EAGLE-1 head for the target (module docstring); returns its parameter count."""
    _, hidden, _, heads, kv_heads, inter, _ = target
    w = _randn(seed)
    tensors = {"embed_tokens.weight": w(len(tokenizer), hidden), "fc.weight": w(hidden, 2 * hidden),
               **_llama_layer(w, "layers.0.", hidden, heads, kv_heads, inter, hidden, input_norm=False)}
    cfg = {"architectures": ["LlamaForCausalLM"], **_head_config(tokenizer, hidden, heads, kv_heads, inter)}
    return _save_head(out_dir, tensors, cfg, tokenizer)


def build_eagle3_vllm(out_dir: Path, tokenizer, target: tuple[str, int, int, int, int, int, int], seed: int,
                      aux_ids: tuple[int, ...]) -> int:
    """vLLM's EAGLE-3 head for the target with the given taps (module docstring); returns its params."""
    import torch

    _, hidden, _, heads, kv_heads, inter, _ = target
    w = _randn(seed)
    tensors = {**_llama_layer(w, "midlayer.", hidden, heads, kv_heads, inter, 2 * hidden),
               "midlayer.hidden_norm.weight": torch.ones(hidden),
               "fc.weight": w(hidden, hidden * len(aux_ids)), "norm.weight": torch.ones(hidden),
               "lm_head.weight": w(len(tokenizer), hidden)}
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], **_head_config(tokenizer, hidden, heads, kv_heads, inter),
           "draft_vocab_size": len(tokenizer), "target_hidden_size": hidden,
           "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(aux_ids), "use_aux_hidden_state": True}}
    return _save_head(out_dir, tensors, cfg, tokenizer)


def build_mtp_target(out_dir: Path, target_dir: Path, tokenizer, target: tuple[str, int, int, int, int, int, int],
                     seed: int) -> int:
    """The target's weights plus one MTP layer, as an Ernie 4.5 config vLLM drafts from (docstring)."""
    import json

    import torch
    from safetensors.torch import load_file

    _, hidden, layers, heads, kv_heads, inter, _ = target
    tensors = dict(load_file(str(target_dir / "model.safetensors")))
    w = _randn(seed)
    tensors.update({
        "model.mtp_emb_norm.0.weight": torch.ones(hidden), "model.mtp_hidden_norm.0.weight": torch.ones(hidden),
        "model.mtp_linear_proj.0.weight": w(hidden, 2 * hidden),
        **_llama_layer(w, "model.mtp_block.0.", hidden, heads, kv_heads, inter, hidden),
    })
    base = json.loads((target_dir / "config.json").read_text())
    cfg = {**_head_config(tokenizer, hidden, heads, kv_heads, inter, layers),
           "architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe",
           "rope_theta": base.get("rope_parameters", {}).get("rope_theta", base.get("rope_theta", 10000.0)),
           "rms_norm_eps": base.get("rms_norm_eps", 1e-6), "use_bias": False,
           "moe_num_experts": 0, "moe_layer_start_index": layers, "num_nextn_predict_layers": 1}
    return _save_head(out_dir, {k: v.contiguous() for k, v in tensors.items()}, cfg, tokenizer)


def sanity_check(model_dir: Path) -> str:
    """Reload with the Auto* classes (what vLLM's loader relies on) and decode greedily."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t = AutoTokenizer.from_pretrained(model_dir)
    m = AutoModelForCausalLM.from_pretrained(model_dir)
    ids = t("the quick brown fox", return_tensors="pt")
    out = m.generate(**ids, max_new_tokens=5, do_sample=False)
    return t.decode(out[0])


def is_complete(outdir: Path) -> bool:
    """True when a previous build finished (the marker is written last)."""
    names = [name for name, *_ in MODELS] + [EAGLE3_SGLANG[0], EAGLE_VLLM[0], MTP_TARGET[0]]
    names += [name for name, *_ in EAGLE3_VLLM]
    return (outdir / COMPLETE).is_file() and all((outdir / name / "config.json").is_file() for name in names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="writes OUTDIR/target and OUTDIR/draft")
    parser.add_argument("--force", action="store_true", help="rebuild even when OUTDIR is complete")
    parser.add_argument("--pays", action="store_true",
                        help="also build the larger targets t1024x8 and t768x6 (~0.5 GB) on which ngram can pay")
    parser.add_argument("--context", action="store_true",
                        help="also build the context target c512x2 (8,192 positions, ~17 MB)")
    args = parser.parse_args(argv)
    outdir: Path = args.outdir
    if is_complete(outdir) and not args.force:
        print(f"tiny models already built in {outdir}", file=sys.stderr)
        return extras(outdir, args)
    (outdir / COMPLETE).unlink(missing_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    tok = build_tokenizer()
    print(f"tokenizer: vocab {len(tok)}", file=sys.stderr)
    for name, hidden, layers, heads, kv_heads, inter, seed in MODELS:
        n = build_model(outdir / name, tok, hidden, layers, heads, kv_heads, inter, seed)
        print(f"saved {outdir / name}: {n} params, hidden={hidden} layers={layers} "
              f"heads={heads}/{kv_heads} head_dim={hidden // heads}", file=sys.stderr)
    for name, *_ in MODELS:
        print(f"{name} reload OK; greedy sample: {sanity_check(outdir / name)!r}", file=sys.stderr)
    n = build_eagle3_sglang(outdir / EAGLE3_SGLANG[0], tok, MODELS[0][1])
    print(f"saved {outdir / EAGLE3_SGLANG[0]}: {n} params (EAGLE-3 head for SGLang, taps {EAGLE3_SGLANG[6]})",
          file=sys.stderr)
    n = build_eagle_vllm(outdir / EAGLE_VLLM[0], tok, MODELS[0], EAGLE_VLLM[1])
    print(f"saved {outdir / EAGLE_VLLM[0]}: {n} params (EAGLE head for vLLM)", file=sys.stderr)
    for name, seed, aux_ids in EAGLE3_VLLM:
        n = build_eagle3_vllm(outdir / name, tok, MODELS[0], seed, aux_ids)
        print(f"saved {outdir / name}: {n} params (EAGLE-3 head for vLLM, taps {list(aux_ids)})", file=sys.stderr)
    n = build_mtp_target(outdir / MTP_TARGET[0], outdir / "target", tok, MODELS[0], MTP_TARGET[1])
    print(f"saved {outdir / MTP_TARGET[0]}: {n} params (target + 1 MTP layer, Ernie 4.5 config)", file=sys.stderr)
    (outdir / COMPLETE).write_text("ok\n")
    return extras(outdir, args)


def extras(outdir: Path, args: argparse.Namespace) -> int:
    """The optional targets the flags ask for, each behind its own completion marker."""
    rc = build_pays(outdir, args.force) if args.pays else 0
    return rc or (build_context(outdir, args.force) if args.context else 0)


def build_pays(outdir: Path, force: bool) -> int:
    """The larger targets of PAYS_MODELS, with the same tokenizer; their own completion marker."""
    if (outdir / PAYS_COMPLETE).is_file() and not force and all(
            (outdir / name / "config.json").is_file() for name, *_ in PAYS_MODELS):
        print(f"pays targets already built in {outdir}", file=sys.stderr)
        return 0
    (outdir / PAYS_COMPLETE).unlink(missing_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    tok = build_tokenizer()
    for name, hidden, layers, heads, kv_heads, inter, seed in PAYS_MODELS:
        n = build_model(outdir / name, tok, hidden, layers, heads, kv_heads, inter, seed)
        print(f"saved {outdir / name}: {n} params, hidden={hidden} layers={layers} "
              f"heads={heads}/{kv_heads} head_dim={hidden // heads}", file=sys.stderr)
    (outdir / PAYS_COMPLETE).write_text("ok\n")
    return 0


def build_context(outdir: Path, force: bool) -> int:
    """The context target of CONTEXT_MODELS (8,192 positions; its tokenizer says so); its own marker."""
    if (outdir / CONTEXT_COMPLETE).is_file() and not force and all(
            (outdir / name / "config.json").is_file() for name, *_ in CONTEXT_MODELS):
        print(f"context target already built in {outdir}", file=sys.stderr)
        return 0
    (outdir / CONTEXT_COMPLETE).unlink(missing_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    tok = build_tokenizer(CONTEXT_POSITIONS)
    for name, hidden, layers, heads, kv_heads, inter, seed in CONTEXT_MODELS:
        n = build_model(outdir / name, tok, hidden, layers, heads, kv_heads, inter, seed, CONTEXT_POSITIONS)
        print(f"saved {outdir / name}: {n} params, hidden={hidden} layers={layers} heads={heads}/{kv_heads} "
              f"head_dim={hidden // heads} positions={CONTEXT_POSITIONS}", file=sys.stderr)
    (outdir / CONTEXT_COMPLETE).write_text("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
