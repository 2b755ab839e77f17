"""Engine adapters: one module per engine, a common snapshot model in `base`, and autodetection."""

from __future__ import annotations

from exporter.engines.base import EngineAdapter
from exporter.engines.sglang import SglangAdapter
from exporter.engines.vllm import VllmAdapter

ADAPTERS: dict[str, type] = {"vllm": VllmAdapter, "sglang": SglangAdapter}


class DetectError(ValueError):
    """The page holds no family of a known engine."""


DETECT_BYTES = 256 * 1024  # engine families start within the first few KB; no need to scan a 1 MB page twice


def prefix_counts(text: str) -> dict[str, int]:
    """Lines starting with each engine's prefix (`vllm:` and `vllm_` in one pass), in the page's head."""
    head = text[:DETECT_BYTES]
    return {"vllm": head.count("\nvllm") + head.startswith(("vllm:", "vllm_")),
            "sglang": head.count("\nsglang") + head.startswith(("sglang:", "sglang_"))}


def detect(text: str, engine: str = "auto") -> str:
    """The engine of a page: autodetected from family prefixes (more lines wins), or the one asked for —
    which must then have families on the page (a forced `--engine sglang` on a vLLM page is an error,
    not an engine with no streams)."""
    counts = prefix_counts(text)
    if not any(counts.values()):
        raise DetectError("no vllm:/sglang: metric families on the page (is this an inference engine's /metrics?)")
    if engine == "auto":
        return "vllm" if counts["vllm"] >= counts["sglang"] else "sglang"
    if counts.get(engine, 0) == 0:
        found = " and ".join(k for k, n in counts.items() if n)
        raise DetectError(f"--engine {engine}, but the page holds only {found} metric families")
    return engine


def adapter(kind: str) -> EngineAdapter:
    try:
        return ADAPTERS[kind]()
    except KeyError:
        raise ValueError(f"unknown engine {kind!r}: expected one of {', '.join(ADAPTERS)}") from None
