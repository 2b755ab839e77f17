"""Record SGLang 0.5.23's own answers on adaptive speculation: the oracle for the gate's SGLang profile (issue 35.2).

Run with the SGLang venv's python (tools/sglang_cpu.sh builds it; no server is started, nothing is downloaded):

    ~/.cache/specgate/sglang-cpu-0.5.23/venv/bin/python tools/oracle/sglang_adaptive.py [OUT.json]

It calls SGLang's functions in-process, in the order `handle_speculative_decoding` calls them
(sglang/srt/arg_groups/speculative_hook.py): `_resolve_speculative_algorithm_alias` (with a draft directory holding
a tiny Gemma-4 assistant config.json where the row names one), then `_maybe_disable_adaptive` (which calls
`adaptive_unsupported_reason` and logs SGLang's fallback line), then, where SGLang still adapts,
`_init_adaptive_speculative_params` (default tiers). The server-args object is a plain record with the fields those
functions read and SGLang's `_resolved_overrides` list, which its `declare_resolution` writes; what SGLang decided
is read back through its own `resolving_view`. Rows: every plan method × top-k (unset, 1, 4) × launch settings (SGLang's defaults, each of attention DP, EP scale join, multi-layer EAGLE,
two-batch overlap, pdmux alone, all of them), num_steps unset; the same methods × top-k with a Gemma-4 assistant
draft; and methods × top-k × num_steps (3, 4). A launch setting a row leaves out is SGLang's default (`DEFAULTS`).
Output: tests/fixtures/oracle/sglang-0.5.23-adaptive.json (default), a row per call: {"inputs": {...},
"answer": {...}}. Reading this file needs only the standard library and SGLang.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from _fixture import write

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "oracle" / "sglang-0.5.23-adaptive.json"

# The plan methods and the --speculative-algorithm the gate launches each with (gate/model/engines/sglang).
METHODS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN", "nextn": "NEXTN", "draft_model": "STANDALONE",
           "dflash": "DFLASH", "dspark": "DSPARK", "ngram": "NGRAM"}

# A Gemma-4 assistant draft as small as SGLang's get_config accepts it (the fields its validators need).
GEMMA4_ASSISTANT = {"architectures": ["Gemma4AssistantForCausalLM"], "model_type": "gemma4_assistant",
                    "text_config": {"model_type": "gemma4_text", "num_attention_heads": 4, "hidden_size": 64,
                                    "num_hidden_layers": 1, "num_key_value_heads": 1, "head_dim": 16,
                                    "intermediate_size": 128, "vocab_size": 256, "hidden_size_per_layer_input": 0,
                                    "vocab_size_per_layer_input": 0, "layer_types": ["full_attention"]}}

# SGLang's defaults for the launch settings adaptive_unsupported_reason reads, and the variations recorded.
DEFAULTS: dict[str, Any] = {"attn_dp_size": 1, "ep_join_mode": None, "enable_multi_layer_eagle": False,
                            "enable_two_batch_overlap": False, "enable_pdmux": False}
VARIANTS: list[dict[str, Any]] = [
    {}, {"attn_dp_size": 2}, {"ep_join_mode": "scale"}, {"enable_multi_layer_eagle": True},
    {"enable_two_batch_overlap": True}, {"enable_pdmux": True},
    {"attn_dp_size": 2, "ep_join_mode": "scale", "enable_multi_layer_eagle": True, "enable_two_batch_overlap": True,
     "enable_pdmux": True},
]


class _Args:
    """The server-args fields SGLang's adaptive path reads; `declare_resolution` appends to `_resolved_overrides`."""

    def __init__(self, **fields: Any) -> None:
        self._resolved_overrides: list[Any] = []
        self.__dict__.update(fields)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _one(inputs: dict[str, Any], gemma_dir: str, lines: _Lines) -> dict[str, Any]:
    from sglang.srt.arg_groups.model_override_base import resolving_view
    from sglang.srt.arg_groups.speculative_hook import (
        _init_adaptive_speculative_params,
        _maybe_disable_adaptive,
        _resolve_speculative_algorithm_alias,
    )

    draft = gemma_dir if inputs["drafter"] == "gemma4_assistant" else None
    try:
        algorithm = _resolve_speculative_algorithm_alias(METHODS[inputs["method"]], draft)
    except ValueError as e:
        return {"error": str(e)}
    args = _Args(speculative_algorithm=algorithm, speculative_eagle_topk=inputs["eagle_topk"],
                 speculative_num_steps=inputs["num_steps"], speculative_adaptive=True,
                 speculative_adaptive_config=None,
                 **{k: inputs.get(k, v) for k, v in DEFAULTS.items()})
    lines.lines.clear()
    _maybe_disable_adaptive(args)
    cfg = resolving_view(args)
    answer: dict[str, Any] = {"algorithm": algorithm, "adaptive": bool(cfg.speculative_adaptive),
                              "warning": next((x for x in lines.lines if "speculative_adaptive" in x), None)}
    if cfg.speculative_adaptive:
        try:
            _init_adaptive_speculative_params(args)
        except ValueError as e:
            answer["error"] = str(e)
            return answer
        cfg = resolving_view(args)
        answer.update(num_steps=cfg.speculative_num_steps, num_draft_tokens=cfg.speculative_num_draft_tokens,
                      eagle_topk=cfg.speculative_eagle_topk)
    return answer


def matrix() -> list[dict[str, Any]]:
    """The rows' inputs (module docstring)."""
    rows = [{"method": m, "drafter": "none", "eagle_topk": t, "num_steps": None, **v}
            for m in METHODS for t in (None, 1, 4) for v in VARIANTS]
    rows += [{"method": m, "drafter": "gemma4_assistant", "eagle_topk": t, "num_steps": None}
             for m in METHODS for t in (None, 1, 4)]
    rows += [{"method": m, "drafter": "none", "eagle_topk": t, "num_steps": s}
             for m in METHODS for t in (None, 1, 4) for s in (3, 4)]
    return rows


def record() -> dict[str, Any]:
    """SGLang's answer for every row of `matrix`."""
    import sglang

    lines = _Lines()
    logging.getLogger("sglang").addHandler(lines)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(GEMMA4_ASSISTANT))
        rows = [{"inputs": i, "answer": _one(i, d, lines)} for i in matrix()]
    return {"engine": "sglang", "version": sglang.__version__,
            "call": "sglang.srt.arg_groups.speculative_hook: _resolve_speculative_algorithm_alias, "
                    "_maybe_disable_adaptive (adaptive_unsupported_reason), _init_adaptive_speculative_params",
            "made_by": "tools/oracle/sglang_adaptive.py, run in-process with the SGLang 0.5.23 CPU venv's python "
                       "(tools/sglang_cpu.sh); no server started",
            "rows": rows}


def main(argv: list[str]) -> int:
    return write(argv, FIXTURE, record)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
