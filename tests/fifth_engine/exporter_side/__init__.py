"""The stub engine's adapter: a page of `stub:` families, one stream per `model_name`.

Its families are vLLM's spelling of the same quantities (drafts, draft tokens, accepted tokens, accepted per
position, generation tokens, running requests), so every hook is the base adapter's: k from the per-position
series, no verify calls, no schedule, no per-request acceptance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.engines.base import (
    EngineAdapter,
    EngineSnapshot,
    GetJson,
    ParsedPage,
    SideInfo,
    SpecCounters,
    StreamKey,
    StreamSnapshot,
)
from exporter.engines.common import SeriesKeys, dense, fold, per_position, samples

KIND = "stub"
RUNNING, GENERATION = "num_requests_running", "generation_tokens_total"
DRAFTS, DRAFT_TOKENS, ACCEPTED = ("spec_decode_num_drafts_total", "spec_decode_num_draft_tokens_total",
                                  "spec_decode_num_accepted_tokens_total")
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
COUNTERS = (GENERATION, DRAFTS, DRAFT_TOKENS, ACCEPTED)


def _key(labels: Mapping[str, str]) -> StreamKey:
    return StreamKey(labels.get("model_name"), None)


class StubAdapter(EngineAdapter):
    """Normalises a `stub:` page; overrides no hook."""

    kind: Any = KIND  # a registered engine also adds its kind to `EngineKind`, beside `ADAPTERS`
    prefixes = ("stub:",)
    families = frozenset({RUNNING, *COUNTERS, PER_POSITION})
    shapes: Mapping[str, frozenset[str]] = {PER_POSITION: frozenset({"position"})}
    tested_versions = None

    def __init__(self) -> None:
        self._keys = SeriesKeys(_key)

    def side_info(self, get_json: GetJson) -> SideInfo:
        return SideInfo()

    def side_incomplete(self, side: SideInfo) -> bool:
        return False

    def snapshot(self, page: ParsedPage, timestamp: float, side: SideInfo | None = None) -> EngineSnapshot:
        key_of = self._keys.key
        running = fold(samples(page, KIND, RUNNING), key_of, "max")
        c = {b: fold(samples(page, KIND, b), key_of, "sum") for b in COUNTERS}
        by_position: dict[StreamKey, dict[int, float]] = {}
        per_position(samples(page, KIND, PER_POSITION), "position", key_of, by_position)
        keys = set(running) | set(by_position) | {k for folded in c.values() for k in folded}
        streams = []
        for key in sorted(keys, key=lambda k: k.model or ""):
            spec = SpecCounters(drafts=c[DRAFTS].get(key), draft_tokens=c[DRAFT_TOKENS].get(key),
                                accepted_tokens=c[ACCEPTED].get(key),
                                accepted_per_position=dense(by_position.get(key, {})))
            streams.append(StreamSnapshot(model=key.model, rank=None, spec=spec,
                                          generation_tokens=c[GENERATION].get(key),
                                          requests_running=running.get(key)))
        return EngineSnapshot(engine=KIND, timestamp=timestamp, streams=tuple(streams))  # type: ignore[arg-type]
