"""Engine adapters: one package per engine, the one engine list (`ADAPTERS`), and autodetection.

What is where:

- `base`: the engine-neutral model every later layer consumes (`EngineSnapshot`, `StreamSnapshot`,
  `SpecCounters`, `DraftCounts`, `RequestAcceptance`, ...), and `EngineAdapter`, the base class of every adapter.
  Its hooks hold each engine's rules with engine-neutral defaults (depth k, counting, depth schedules, per-request
  acceptance, the `/tokenize` field); the core (`exporter.derive`, `exporter.depth`, `exporter.windows`,
  `exporter.settings`, `exporter.schedule`, `exporter.snapshot_json`) and the gate (`gate.evidence.captures`,
  `gate.probe.per_request`, `gate.probe.workload`) find the adapter by the engine kind here, never by name.
- `common`: what the adapters share (folding split labels, histograms, per-position counters, finite values);
  `versions`: the versions each adapter was checked against.
- `<engine>/` (`vllm`, `sglang`, `trtllm`, `llamacpp`): everything the sidecar knows about one engine. Its
  `__init__` holds the adapter (names, versions, traps, the page reader and the hooks it overrides); beside it,
  where the engine has them: `depth.py` (its k rule), `counts.py` (how it counts speculation), `schedule.py`
  (its depth-schedule spelling), `stream.py` (its per-request acceptance in an answer).

A new engine on the exporter side: its package with an adapter subclassing `EngineAdapter` (overriding only the
hooks that differ), its line in `ADAPTERS` and its kind in `EngineKind` (the typing spelling of that list, held
equal to it by tests/exporter/engines/test_registry.py), both here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from exporter.engines.base import EngineAdapter
from exporter.engines.llamacpp import LlamacppAdapter
from exporter.engines.llamacpp.acceptance import DEFINITIONS as LLAMACPP_ACCEPTANCE
from exporter.engines.sglang import SglangAdapter
from exporter.engines.sglang.acceptance import DEFINITIONS as SGLANG_ACCEPTANCE
from exporter.engines.trtllm import TrtllmAdapter
from exporter.engines.trtllm.acceptance import DEFINITIONS as TRTLLM_ACCEPTANCE
from exporter.engines.versions import AcceptanceDefinition
from exporter.engines.vllm import VllmAdapter
from exporter.engines.vllm.acceptance import DEFINITIONS as VLLM_ACCEPTANCE

# The registry: one line per engine (its package holds everything else), and its spelling for typing (a Literal
# cannot be computed; tests/exporter/engines/test_registry.py holds the two equal, order included).
ADAPTERS: dict[str, type[EngineAdapter]] = {"vllm": VllmAdapter, "sglang": SglangAdapter, "trtllm": TrtllmAdapter,
                                           "llamacpp": LlamacppAdapter}
# Each engine's acceptance semantics per version (issue 37; its package's acceptance.py).
ACCEPTANCE: Mapping[str, tuple[AcceptanceDefinition, ...]] = MappingProxyType({
    "vllm": VLLM_ACCEPTANCE, "sglang": SGLANG_ACCEPTANCE, "trtllm": TRTLLM_ACCEPTANCE, "llamacpp": LLAMACPP_ACCEPTANCE})
EngineKind = Literal["vllm", "sglang", "trtllm", "llamacpp"]
# Every engine kind, in the order the CLIs list them: `--engine` choices, the plan, probe records.
ENGINE_KINDS: tuple[str, ...] = tuple(ADAPTERS)


def _stems() -> Mapping[str, str]:
    """Each prefix's stem (the prefix without its `:`/`_` separator) -> its adapter's kind: `vllm` and
    `ray_vllm` (Ray Serve's re-export) -> vllm. The parser keys a family "<kind>:<base>" by it."""
    return MappingProxyType({p[:-1]: kind for kind, cls in ADAPTERS.items() for p in cls.prefixes})


PAGE_STEMS: Mapping[str, str] = _stems()


class DetectError(ValueError):
    """The page holds no family of a known engine."""


DETECT_BYTES = 256 * 1024  # engine families start within the first few KB; no need to scan a 1 MB page twice


def prefix_counts(text: str) -> dict[str, int]:
    """Lines starting with each adapter's prefixes, in the page's head.

    One `count` per stem (`vllm` for `vllm:`/`vllm_`, `ray_vllm` for Ray Serve's `ray_vllm_`), counted after
    a newline, so a 256 KB head is scanned once per stem, not once per spelling.
    """
    head = text[:DETECT_BYTES]
    out = dict.fromkeys(ADAPTERS, 0)
    for stem, kind in PAGE_STEMS.items():
        out[kind] += head.count("\n" + stem) + head.startswith(stem)
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
