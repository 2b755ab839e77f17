"""SGLang's speculative algorithm reaches the gate's evidence identity, from the engine and from the exporter.

Pages and /server_info are the real SGLang 0.5.23 NGRAM capture (tests/fixtures/sglang/0.5.23/ngram/).
From the engine: `gate.evidence.captures.identity_of` (what `gate.evidence.engine.from_engine` uses) reads
`EngineSnapshot.speculative`; from the exporter: `gate.evidence.sidecar.read_gauges` reads the exporter's
`specgate_engine_speculative_info{algorithm}`. `gate.model.identity.match` then holds it to the plan.
"""

from __future__ import annotations

import json
from pathlib import Path

from exporter.collect import exposition_of_snapshot
from exporter.engines.base import EngineSnapshot, SideInfo
from exporter.engines.sglang import speculative_settings
from exporter.scrape import snapshot_from_text
from gate.evidence import sidecar
from gate.evidence.base import MetricsEvidence
from gate.evidence.captures import identity_of
from gate.model.identity import match

NGRAM = Path(__file__).parents[2] / "fixtures" / "sglang" / "0.5.23" / "ngram"


def _snap(which: str) -> EngineSnapshot:
    info = json.loads((NGRAM / f"server_info-{which}.json").read_text())
    side = SideInfo(max_total_num_tokens=info.get("max_total_num_tokens"), context_length=info.get("context_length"),
                    version=info.get("version"), speculative=speculative_settings(info))
    return snapshot_from_text((NGRAM / f"metrics-{which}.txt").read_text(), timestamp=0.0, side=side)


def test_engine_evidence_names_the_algorithm_and_k_from_server_info() -> None:
    # the 'before' page: spec_num_draft_tokens still 0 (refreshed once per decode-log interval)
    ident = identity_of(_snap("before"), "engine x")
    assert ident.algorithm == "NGRAM"
    assert ident.depth == 3  # speculative_num_draft_tokens 4 counts the root
    assert match(ident, served_model_name="tiny", engine="sglang", method="ngram", k=3) is None
    wrong = match(ident, served_model_name="tiny", engine="sglang", method="eagle3", k=3)
    assert wrong is not None and "NGRAM" in wrong.reason


def test_exporter_evidence_names_the_algorithm() -> None:
    page = exposition_of_snapshot(_snap("after"))
    assert 'specgate_engine_speculative_info{algorithm="NGRAM"' in page

    ev = MetricsEvidence(sources=["exporter http://x"])
    sidecar.read_gauges(page, "http://x", ev)
    assert ev.identity is not None and ev.identity.algorithm == "NGRAM"
