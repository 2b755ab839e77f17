#!/usr/bin/env python3
"""Launch a real SGLang 0.5.23 server on a CPU without AMX, keeping its `intel_amx` attention path.

Usage: <sglang-venv>/bin/python tools/sglang_launch.py [sglang.launch_server flags...]
(the venv comes from tools/sglang_cpu.sh; flags are SGLang's own, passed through unchanged).

Two things differ from `python -m sglang.launch_server`, and nothing else:
  1. specgate's stand-in for SGLang's CPU kernel package (tools/sgl_kernel_stand_in/, no
     CPU build of `sgl-kernel` exists on PyPI) is put first on PYTHONPATH, for this process
     and the scheduler/detokenizer processes SGLang spawns.
  2. SGLang swaps `--attention-backend intel_amx` for `torch_native` on a CPU without AMX
     (`_attention_backend_platform_fallbacks`, srt/arg_groups/overrides.py), and
     `torch_native` has no target-verify path (every speculative algorithm crashes in
     `_run_sdpa_forward_extend`). The launcher runs that one check under SGLang's own
     `override_platform(has_amx=True)`; every other reader still sees no AMX, so SGLang
     keeps its native torch layers (RMSNorm, SiLU, RoPE) and its weights unpacked.
The environment SGLang needs on CPU (SGLANG_USE_CPU_ENGINE=1, offline hub) is set here too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

STAND_IN = Path(__file__).resolve().parent / "sgl_kernel_stand_in"
ENV = {
    "SGLANG_USE_CPU_ENGINE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "SGLANG_USE_MODELSCOPE": "false",
}


def prepare_environment() -> None:
    """Stand-in first on sys.path and PYTHONPATH (inherited by spawned processes); CPU env."""
    for k, v in ENV.items():
        os.environ.setdefault(k, v)
    path = str(STAND_IN)
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != path]
    os.environ["PYTHONPATH"] = os.pathsep.join([path, *rest])
    if path not in sys.path:
        sys.path.insert(0, path)


def keep_intel_amx() -> None:
    """Run SGLang's intel_amx platform fallback check as if the CPU had AMX (that check only)."""
    from sglang.srt.arg_groups import attention_hook, overrides
    from sglang.srt.runtime_context import override_platform

    original = overrides._attention_backend_platform_fallbacks

    def fallbacks_keeping_intel_amx(view):  # type: ignore[no-untyped-def]
        if getattr(view, "attention_backend", None) == "intel_amx" and getattr(view, "device", None) == "cpu":
            with override_platform(has_amx=True):
                return original(view)
        return original(view)

    fallbacks_keeping_intel_amx.__name__ = original.__name__
    attention_hook._attention_backend_platform_fallbacks = fallbacks_keeping_intel_amx
    overrides._attention_backend_platform_fallbacks = fallbacks_keeping_intel_amx
    passes = overrides.POST_PROCESS_PASSES
    for i, fn in enumerate(passes):
        if fn is original:
            passes[i] = fallbacks_keeping_intel_amx


def main(argv: list[str]) -> None:
    prepare_environment()
    import sgl_kernel

    if not getattr(sgl_kernel, "STAND_IN", False):
        raise SystemExit(f"sglang_launch: expected specgate's sgl_kernel stand-in, found {sgl_kernel.__file__}")
    keep_intel_amx()
    import runpy

    sys.argv = ["sglang.launch_server", *argv]
    runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
