"""Acceptance evidence from the exporter sidecar: its completed batch windows at once.

Why the sidecar first: it already keeps every batch window (`/api/v1/windows`), restart-aware,
so the gate answers from its history without waiting; its own `/metrics` adds the allocated
pool, the context cap, the engine version and the cold start (names from `exporter.names`).
A URL that answers 404 there is not a sidecar: `metrics.from_live` then scrapes it as an engine.

Both reads are bounded (`gate.inputs.fetch`, issue 21): each has one total deadline (`timeout`
for the whole exchange, so an endpoint dripping its headers is cut off like one dripping its
body — a per-read timeout never fires on either) and a size limit (`WINDOWS_BYTES`, `PAGE_BYTES`);
the windows document is parsed under `gate.inputs.loading`'s JSON limits.
"""

from __future__ import annotations

from typing import Any

from exporter import names
from exporter.scrape import split_url
from gate.evidence.base import (
    AcceptanceWindow,
    BadAnswer,
    MetricsEvidence,
    PoolObservation,
    Unreachable,
)
from gate.inputs.fetch import PAGE_BYTES, WINDOWS_BYTES, FetchError, deadline_in, fetch
from gate.inputs.loading import WINDOWS_LIMITS
from gate.inputs.redact import redact_url
from gate.model.identity import EvidenceIdentity

WINDOWS_PATH = "/api/v1/windows"


def stream_name(model: str | None, rank: str | None) -> str:
    """`model/rank` as every evidence window names its stream (`-` for an unknown part)."""
    return f"{model or '-'}/{rank if rank is not None else '-'}"


def windows_document(doc: dict[str, Any], source: str, min_drafts: float) -> MetricsEvidence:
    """The exporter's windows JSON (`/api/v1/windows`, or a file holding it) as evidence windows."""
    ev = MetricsEvidence(sources=[source])
    wins = doc.get("windows")
    if not isinstance(wins, list):
        ev.errors.append(f"{source}: no 'windows' list in the answer")
        return ev
    for w in wins:
        if not isinstance(w, dict):
            continue

        def num(key: str, w: dict[str, Any] = w) -> float | None:
            v = w.get(key)
            return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

        raw_reset = w.get("reset")
        ev.windows.append(AcceptanceWindow(
            source=source, stream=stream_name(w.get("model"), w.get("rank")), point=None,
            start=num("start"), end=num("end"), reset=raw_reset if isinstance(raw_reset, bool) else None,
            drafts=num("drafts"),
            acceptance_length=num("acceptance_length"), acceptance_rate=num("acceptance_rate")))
    if not ev.windows:
        ev.errors.append(f"{source}: the exporter has no completed batch windows yet")
    return ev


def _gauges(base: str, timeout: float, ev: MetricsEvidence) -> None:
    """Allocated pool, context cap, version and ready seconds from the sidecar's own /metrics (one bounded
    read; an answer that fails adds nothing)."""
    try:
        r = fetch(base + "/metrics", deadline=deadline_in(timeout), max_bytes=PAGE_BYTES,
                  headers={"Accept": "text/plain; version=0.0.4"})
    except FetchError:
        return
    if r.status == 200:
        read_gauges(r.text(), base, ev)


def read_gauges(page: str, base: str, ev: MetricsEvidence) -> None:
    """The sidecar's gauges out of its /metrics page `page` onto `ev` (a page that is not Prometheus text adds
    nothing)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        families = list(text_string_to_metric_families(page))
    except ValueError:
        return
    pools: list[float] = []
    ups: list[float] = []
    engine: str | None = None
    algorithm: str | None = None
    for fam in families:
        for s in fam.samples:
            if s.name == names.ENGINE_UP.series:
                ups.append(s.value)
                engine = s.labels.get("engine") or engine
            if s.name == names.KV_POOL.series and s.labels.get("pool", "target") == "target":
                pools.append(s.value)
            elif s.name == names.CONTEXT_CAP.series:
                ev.context_cap_tokens = int(s.value) if ev.context_cap_tokens is None else min(
                    ev.context_cap_tokens, int(s.value))
            elif s.name == names.ENGINE_INFO.series and s.labels.get("version"):
                ev.engine_version = s.labels["version"]
            elif s.name == names.ENGINE_SPECULATIVE.series and s.labels.get("algorithm"):
                algorithm = s.labels["algorithm"]  # SGLang's speculative_algorithm, passed through by the exporter
            elif s.name == names.ENGINE_READY.series:
                ev.ready_seconds, ev.ready_source = s.value, f"exporter {redact_url(base)} ({names.ENGINE_READY.series})"
    if pools:
        ev.kv_pool = PoolObservation(int(min(pools)), f"exporter {redact_url(base)} ({names.KV_POOL.series})")
    # engine_up: every exporter-level series says 1 (absent: the sidecar did not say, not "up").
    ev.engine_up = (all(u == 1 for u in ups)) if ups else None
    models = tuple(sorted({w.stream.rsplit("/", 1)[0] for w in ev.windows if not w.stream.startswith("-/")}))
    ev.identity = EvidenceIdentity(source=ev.sources[0] if ev.sources else base, engine=engine, models=models,
                                   algorithm=algorithm, version=ev.engine_version)


def source_name(url: str) -> str:
    base, _ = split_url(url)
    return f"exporter {redact_url(base)}"


def from_exporter(url: str, timeout: float, min_drafts: float) -> MetricsEvidence | None:
    """The sidecar's completed batch windows; None when the URL is not a specgate exporter (404).

    Raises Unreachable (no answer) or BadAnswer (an answer that is not a windows document).
    """
    base, _ = split_url(url)
    source = source_name(url)
    try:
        r = fetch(base + WINDOWS_PATH, deadline=deadline_in(timeout), max_bytes=WINDOWS_BYTES,
                  headers={"Accept": "application/json"})
    except FetchError as e:
        if e.reason == "timeout":
            raise Unreachable(f"{source} did not answer within {timeout:g}s") from None
        if e.reason == "connect":
            kind = "connection refused" if "connection refused" in str(e) else str(e)
            raise Unreachable(f"cannot reach {source}: {kind}") from None
        raise BadAnswer(f"{source}: {WINDOWS_PATH}: {e}") from None
    if r.status == 404:
        return None
    if r.status != 200:
        raise BadAnswer(f"{source} answered HTTP {r.status} on {WINDOWS_PATH}")
    try:
        doc = r.json(f"{source}: {WINDOWS_PATH}", WINDOWS_LIMITS)
    except FetchError as e:
        raise BadAnswer(str(e)) from None
    if not isinstance(doc, dict):
        raise BadAnswer(f"{source}: {WINDOWS_PATH} is not a JSON object")
    ev = windows_document(doc, source, min_drafts)
    ev.live = True
    _gauges(base, timeout, ev)
    return ev

