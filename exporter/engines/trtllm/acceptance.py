"""Acceptance semantics per version of this engine (issue 37 item 3): what its L counts, its rejection default.

Read through `exporter.engines.ACCEPTANCE` by `gate.model.invariants` (definition changes, assumed rejection defaults).
"""

from __future__ import annotations

from exporter.engines.versions import INF, AcceptanceDefinition

DEFINITIONS: tuple[AcceptanceDefinition, ...] = (
    AcceptanceDefinition((0,), INF, "TensorRT-LLM (accepted draft tokens, L - 1)",
                         "accepted draft tokens per step (L - 1; specgate adds the bonus token)", None, True,
                         "tensorrt_llm/_torch/speculative/interface.py"),
)
