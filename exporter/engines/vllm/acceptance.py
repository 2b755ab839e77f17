"""Acceptance semantics per version of this engine (issue 37 item 3): what its L counts, its rejection default.

Read through `exporter.engines.ACCEPTANCE` by `gate.model.invariants` (definition changes, assumed rejection defaults).
"""

from __future__ import annotations

from exporter.engines.versions import INF, AcceptanceDefinition

DEFINITIONS: tuple[AcceptanceDefinition, ...] = (
    AcceptanceDefinition((0,), (0, 31), "vLLM <= 0.31 (MRV2 rejection spelled strict|probabilistic|synthetic)",
                         "1 + accepted / drafts (bonus token counted, decode only)", None, True,
                         "vllm #35461"),
    AcceptanceDefinition((0, 32), INF, "vLLM >= 0.32 (rejection standard|synthetic|block)",
                         "1 + accepted / drafts (bonus token counted, decode only)", "standard", True,
                         "vllm 0.32.0 vllm/config/speculative.py RejectionSampleMethod"),
)
