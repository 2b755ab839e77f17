"""Record SGLang 0.5.23's own resolution of the speculative launch per config family: the oracle for the gate's
SGLang profile on fixed k and on `--speculative-adaptive` (issue 35.1, the conformance matrix's SGLang cells).

Run with the SGLang venv's python (tools/sglang_cpu.sh builds it; no server is started, no model is built, nothing
is downloaded):

    ~/.cache/specgate/sglang-cpu-0.5.23/venv/bin/python tools/oracle/sglang_spec_resolution.py [OUT.json]

SGLang's own entry point is called in-process: a real `ServerArgs` is constructed (its `__post_init__` leaves it
unresolved) with `model_path` a temporary folder holding the family's config.json (and
`speculative_draft_model_path` one holding the drafter's), then `handle_speculative_decoding(server_args)` runs as
`resolve_once` calls it — the alias, `_maybe_disable_adaptive` / `_init_adaptive_speculative_params`, then the
algorithm's own handler (`_handle_eagle_family`, `_handle_ngram`, `_handle_dflash`, `_handle_dspark`), which reads
the target through SGLang's `model_config_of` / `get_config`. What SGLang decided is read back through its
`resolving_view`. Set, not SGLang's defaults: `device="cuda"` (the DFlash/DSpark handlers refuse other devices; the
CPU build is only where this runs) and `page_size=1` (resolved earlier in `resolve_once`; 1 is the CUDA default).
Not reached in-process: `DFlashWorkerV2.__init__` (it needs the model), which logs "DFLASH block size mismatch"
and runs the given draft tokens where they differ from the drafter's block_size (read from its source: a
warning, not a refusal). Rows: every config family's config (one per family, the tiny e2e pair for "tiny") under
the method SGLang runs it with (a target alone: NGRAM; an MTP target: NEXTN; a drafter: its method, on a target of
its shape), fixed k = 3 spelled as the gate spells it (a chain: 3 steps, top-k 1, 4 draft tokens; NGRAM: 4 draft
tokens; a block drafter: the draft tokens its block sets, and one fewer), and `--speculative-adaptive` with no
steps given. Then, appended (earlier rows keep their numbers, which EXCEPTIONS.md cites), the block drafters' depth as
SGLang takes it (`BLOCK_ROWS`): no depth key (SGLang reads the drafter's block), only `num_steps` 4 (SGLang forces 1
and logs its override, kept as `resolution_warnings`), and DFlash's own `--speculative-dflash-block-size` 8; then families added later (`LATE_CASES`: Nemotron-H),
shaped as the first rows. Output: tests/fixtures/oracle/sglang-0.5.23-spec-resolution.json (default), a row per call.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from _fixture import write

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "fixtures" / "configs"
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "sglang-0.5.23-spec-resolution.json"

# (config, plan method, target config: None = the config is the target, drafter block size: None = a chain)
CASES: list[tuple[str, str, str | None, int | None]] = [
    ("dflash__specforge__qwen3-8b-dflash.json", "dflash", "target-gqa__Qwen__Qwen3-8B.json", 16),
    ("dspark__specforge__qwen3-8b-dspark.json", "dspark", "target-gqa__Qwen__Qwen3-8B.json", 8),
    ("eagle3__specforge__llama3-8B-eagle3.json", "eagle3", "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json", None),
    ("eagle3-safeailab__SafeAILab__EAGLE-traineagle3.json", "eagle3",
     "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json", None),
    ("eagle3-speculators__nm-testing__EAGLE3-LLaMA3.1-Instruct-8B-converted.json", "eagle3",
     "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json", None),
    ("target-gqa__Qwen__Qwen3-8B.json", "ngram", None, None),
    ("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json", "ngram", None, None),
    ("target-hybrid-swa__openai__gpt-oss-120b.json", "ngram", None, None),
    ("target-mla-mtp__deepseek-ai__DeepSeek-V3.json", "nextn", None, None),
    ("tiny-draft.json", "draft_model", "tiny-target.json", None),
    ("tiny-target.json", "ngram", None, None),
]
# Block drafters launched without the draft tokens: (config, method, target, extra ServerArgs), each a fixed row.
BLOCK_ROWS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("dflash__specforge__qwen3-8b-dflash.json", "dflash", "target-gqa__Qwen__Qwen3-8B.json", {}),
    ("dflash__specforge__qwen3-8b-dflash.json", "dflash", "target-gqa__Qwen__Qwen3-8B.json", {"num_steps": 4}),
    ("dflash__specforge__qwen3-8b-dflash.json", "dflash", "target-gqa__Qwen__Qwen3-8B.json",
     {"dflash_block_size": 8}),
    ("dspark__specforge__qwen3-8b-dspark.json", "dspark", "target-gqa__Qwen__Qwen3-8B.json", {}),
    ("dspark__specforge__qwen3-8b-dspark.json", "dspark", "target-gqa__Qwen__Qwen3-8B.json", {"num_steps": 4}),
]
# Families added after the rows above were numbered (EXCEPTIONS.md cites them): appended, shaped as CASES. Nemotron-H
# (Mamba-2 hybrid, no MTP layers): SGLang 0.5.23 serves NemotronHForCausalLM (models/nemotron_h.py), so NGRAM.
LATE_CASES: list[tuple[str, str, str | None, int | None]] = [
    ("target-hybrid-mamba__nvidia__Nemotron-3-Nano-30B-A3B__jax-llm-examples.json", "ngram", None, None),
]
# SGLang's log lines about the depth it resolves (the block drafters' overrides and inferences), recorded where said.
RESOLUTION_LINES = ("overriding speculative_num_steps", "block_size", "gamma")
ALGORITHM = {"eagle": "EAGLE", "eagle3": "EAGLE3", "nextn": "NEXTN", "ngram": "NGRAM", "draft_model": "STANDALONE",
             "dflash": "DFLASH", "dspark": "DSPARK"}
K = 3


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def settings(method: str, block: int | None) -> list[dict[str, Any]]:
    """The depth keys each row launches with (module docstring)."""
    if block is not None:
        return [{"setting": "fixed", "num_draft_tokens": block}, {"setting": "fixed", "num_draft_tokens": block - 1}]
    fixed = ({"setting": "fixed", "num_draft_tokens": K + 1} if method == "ngram" else
             {"setting": "fixed", "num_steps": K, "eagle_topk": 1, "num_draft_tokens": K + 1})
    return [fixed, {"setting": "adaptive"}]


def _folder(name: str) -> str:
    d = Path(tempfile.mkdtemp(prefix="sglang-oracle-"))
    (d / "config.json").write_text((CONFIGS / name).read_text())
    return str(d)


class _NoKernel(types.ModuleType):
    """Stands in for `sgl_kernel`, which the CPU build lacks and which `_handle_dspark`'s imports reach
    (dspark_config → … → mem_cache/memory_pool): every name is a function that refuses to run, so an import
    succeeds and any call would fail loudly; the handlers call none."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def refuse(*_: Any, **__: Any) -> Any:
            raise RuntimeError(f"sgl_kernel.{name} called in the oracle recorder")
        return refuse


def one(inputs: dict[str, Any], lines: _Lines) -> dict[str, Any]:
    from sglang.srt.arg_groups.model_override_base import resolving_view
    from sglang.srt.arg_groups.speculative_hook import handle_speculative_decoding
    from sglang.srt.server_args import ServerArgs

    target = _folder(inputs["target"] or inputs["config"])
    draft = _folder(inputs["config"]) if inputs["target"] else None
    args = ServerArgs(model_path=target, speculative_algorithm=ALGORITHM[inputs["method"]],
                      speculative_draft_model_path=draft, device="cuda", page_size=1,
                      speculative_adaptive=inputs["setting"] == "adaptive",
                      speculative_num_steps=inputs.get("num_steps"), speculative_eagle_topk=inputs.get("eagle_topk"),
                      speculative_num_draft_tokens=inputs.get("num_draft_tokens"),
                      speculative_dflash_block_size=inputs.get("dflash_block_size"))
    lines.lines.clear()
    try:
        handle_speculative_decoding(args)
    except (ValueError, NotImplementedError, AssertionError) as e:  # the temporary folders named as the flags
        said = str(e).replace(target, "<model-path>").replace(draft or "<none>", "<draft-model-path>")
        return {"error": f"{type(e).__name__}: {said}"}
    except ImportError as e:  # a module the CPU build lacks (sgl_kernel): no answer, said so
        return {"unreached": f"{type(e).__name__}: {e}"}
    cfg = resolving_view(args)
    answer = {"algorithm": cfg.speculative_algorithm, "adaptive": bool(cfg.speculative_adaptive),
              "num_steps": cfg.speculative_num_steps, "eagle_topk": cfg.speculative_eagle_topk,
              "num_draft_tokens": cfg.speculative_num_draft_tokens,
              "adaptive_warning": next((x for x in lines.lines if x.startswith("speculative_adaptive disabled")),
                                       None)}
    said = [x.replace(draft or "<none>", "<draft-model-path>") for x in lines.lines
            if any(w in x for w in RESOLUTION_LINES)]
    return {**answer, "resolution_warnings": said} if said else answer


def matrix() -> list[dict[str, Any]]:
    """The rows' inputs (module docstring)."""
    return ([{"config": c, "method": m, "target": t, **s} for c, m, t, b in CASES for s in settings(m, b)]
            + [{"config": c, "method": m, "target": t, "setting": "fixed", **x} for c, m, t, x in BLOCK_ROWS]
            + [{"config": c, "method": m, "target": t, **s} for c, m, t, b in LATE_CASES for s in settings(m, b)])


def record() -> dict[str, Any]:
    """SGLang's answer for every row of `matrix`."""
    import sglang

    lines = _Lines()
    logging.getLogger("sglang").addHandler(lines)
    sys.modules.setdefault("sgl_kernel", _NoKernel("sgl_kernel"))
    rows = [{"inputs": i, "answer": one(i, lines)} for i in matrix()]
    return {"engine": "sglang", "version": sglang.__version__,
            "call": "sglang.srt.arg_groups.speculative_hook.handle_speculative_decoding on a constructed, "
                    "unresolved sglang.srt.server_args.ServerArgs (device cuda, page_size 1); read back with "
                    "resolving_view",
            "made_by": "tools/oracle/sglang_spec_resolution.py, run in-process with the SGLang 0.5.23 CPU venv's "
                       "python (tools/sglang_cpu.sh); no server started, no model built",
            "rows": rows}


def main(argv: list[str]) -> int:
    return write(argv, FIXTURE, record)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
