"""Engine adapters: one module per engine, a common snapshot model in `base`, and autodetection."""

from __future__ import annotations

import os

from exporter.engines.base import EngineAdapter
from exporter.engines.llamacpp import LlamacppAdapter
from exporter.engines.sglang import SglangAdapter
from exporter.engines.vllm import VllmAdapter

ADAPTERS: dict[str, type[EngineAdapter]] = {"vllm": VllmAdapter, "sglang": SglangAdapter,
                                           "llamacpp": LlamacppAdapter}


class DetectError(ValueError):
    """The page holds no family of a known engine."""


DETECT_BYTES = 256 * 1024  # engine families start within the first few KB; no need to scan a 1 MB page twice


def prefix_counts(text: str) -> dict[str, int]:
    """Lines starting with each adapter's prefixes, in the page's head.

    One `count` per engine: the prefixes' common stem (`vllm` for `vllm:`/`vllm_`) is counted after a
    newline, so a 256 KB head is scanned once per engine, not once per spelling.
    """
    head = text[:DETECT_BYTES]
    out = {}
    for kind, cls in ADAPTERS.items():
        stem = os.path.commonprefix(list(cls.prefixes))
        out[kind] = head.count("\n" + stem) + head.startswith(cls.prefixes)
    return out


def detect(text: str, engine: str = "auto") -> str:
    """The engine of a page: autodetected from family prefixes (more lines wins; a tie goes to the first
    adapter, vLLM), or the one asked for — which must then have families on the page (a forced
    `--engine sglang` on a vLLM page is an error, not an engine with no streams)."""
    counts = prefix_counts(text)
    if not any(counts.values()):
        prefixes = "/".join(cls.prefixes[0] for cls in ADAPTERS.values())
        raise DetectError(f"no {prefixes} metric families on the page (is this an inference engine's /metrics?)")
    if engine == "auto":
        return max(counts, key=lambda k: counts[k])  # max keeps the first of equal counts
    if counts.get(engine, 0) == 0:
        found = " and ".join(k for k, n in counts.items() if n)
        raise DetectError(f"--engine {engine}, but the page holds only {found} metric families")
    return engine


def adapter(kind: str) -> EngineAdapter:
    try:
        return ADAPTERS[kind]()
    except KeyError:
        raise ValueError(f"unknown engine {kind!r}: expected one of {', '.join(ADAPTERS)}") from None
