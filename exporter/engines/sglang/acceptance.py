"""Acceptance semantics per version of this engine (issue 37 item 3): what its L counts, its rejection default.

Read through `exporter.engines.ACCEPTANCE` by `gate.model.invariants` (definition changes, assumed rejection defaults).
"""

from __future__ import annotations

from exporter.engines.versions import INF, AcceptanceDefinition

DEFINITIONS: tuple[AcceptanceDefinition, ...] = (
    AcceptanceDefinition((0,), (0, 5, 5), "SGLang < 0.5.6 (spec_accept_rate first meaning)",
                         "accept length incl. bonus and each request's prefill token (taken out)", "default",
                         True, "exporter.engines.sglang: spec_accept_rate never read, L recomputed"),
    AcceptanceDefinition((0, 5, 6), (0, 5, 10), "SGLang 0.5.6-0.5.10 (spec_accept_rate second meaning, "
                         "sglang #13212)", "accept length incl. bonus and each request's prefill token "
                         "(taken out)", "default", True, "sglang #13212"),
    AcceptanceDefinition((0, 5, 11), INF, "SGLang >= 0.5.11 (spec_accept_rate third meaning)",
                         "accept length incl. bonus and each request's prefill token (taken out)", "default",
                         True, "exporter.engines.sglang: spec_accept_rate changed at 0.5.6 and 0.5.11"),
)
