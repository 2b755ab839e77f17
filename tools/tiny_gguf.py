#!/usr/bin/env python3
"""Convert the tiny Llama target and draft (tools/build_tiny_models.py) to GGUF for llama-server.

Usage: <vllm-venv>/bin/python tools/tiny_gguf.py GGUF_PY_DIR HF_DIR OUT.gguf
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
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def permute(w: Any, n_head: int) -> Any:
    """llama.cpp's rope row order for a q (n_head = heads) or k (n_head = kv heads) projection."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def convert(hf: Path, out: Path) -> None:
    import gguf  # type: ignore[import-not-found]  # from GGUF_PY_DIR (the vendored llama.cpp tree)
    import numpy as np
    from safetensors.numpy import load_file  # type: ignore[import-not-found]  # the vLLM venv's

    cfg = json.loads((hf / "config.json").read_text())
    if cfg.get("architectures") != ["LlamaForCausalLM"]:
        raise SystemExit(f"{hf}: not a LlamaForCausalLM ({cfg.get('architectures')})")
    tok = json.loads((hf / "tokenizer.json").read_text())
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


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__.split("\n\n", 2)[1], file=sys.stderr)
        return 3
    gguf_py, hf, out = Path(argv[1]), Path(argv[2]), Path(argv[3])
    sys.path.insert(0, str(gguf_py))
    out.parent.mkdir(parents=True, exist_ok=True)
    convert(hf, out)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
