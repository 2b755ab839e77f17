"""Engine adapters: one module per engine, a common snapshot model in `base`, and autodetection."""

from __future__ import annotations

from exporter.engines.base import EngineAdapter
from exporter.engines.sglang import SglangAdapter
from exporter.engines.vllm import VllmAdapter

ADAPTERS: dict[str, type] = {"vllm": VllmAdapter, "sglang": SglangAdapter}


class DetectError(ValueError):
    """The page holds no family of a known engine."""


def detect(text: str) -> str:
    """Autodetect the engine from family prefixes: whichever has more sample lines wins."""
    v = text.count("\nvllm") + text.startswith(("vllm:", "vllm_"))  # vllm: and vllm_ in one pass
    s = text.count("\nsglang") + text.startswith(("sglang:", "sglang_"))
    if v == 0 and s == 0:
        raise DetectError("no vllm:/sglang: metric families on the page (is this an inference engine's /metrics?)")
    return "vllm" if v >= s else "sglang"


def adapter(kind: str) -> EngineAdapter:
    try:
        return ADAPTERS[kind]()
    except KeyError:
        raise ValueError(f"unknown engine {kind!r}: expected one of {', '.join(ADAPTERS)}") from None
