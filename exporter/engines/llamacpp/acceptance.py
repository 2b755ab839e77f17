"""Acceptance semantics per version of this engine (issue 37 item 3): what its L counts, its rejection default.

Read through `exporter.engines.ACCEPTANCE` by `gate.model.invariants` (definition changes, assumed rejection defaults).
"""

from __future__ import annotations

from exporter.engines.versions import INF, AcceptanceDefinition

DEFINITIONS: tuple[AcceptanceDefinition, ...] = (
    AcceptanceDefinition((0,), INF, "llama.cpp (n_draft_accepted / n_draft)",
                         "accepted / drafted tokens per slot", None, True, "llama-server /slots"),
)
