"""gate.evidence.vetting: what reaches the lines is possible, recent, once, live and the plan's (issue 10, item 1).

Windows have the real exporter's shape; the numbers of the control are the real vLLM-CPU ngram arm
(L 3.2414, a 0.7943 at k 3; tests/fixtures/vllm/captures-summary.json).
"""

from __future__ import annotations

from dataclasses import replace

from gate.evidence.base import AcceptanceWindow, MetricsEvidence, PoolObservation
from gate.evidence.vetting import VetRules, vet_source, vet_windows
from gate.model.identity import EvidenceIdentity
from gate.model.plausibility import EARLIEST_EVIDENCE_TIME

NOW = 1_800_000_000.0
L, A = 1 + 1170 / 522, 1170 / 1473
LIVE = "exporter http://127.0.0.1:9479"


def _w(end: float = NOW - 10, **over: object) -> AcceptanceWindow:
    w = AcceptanceWindow(source=LIVE, stream="tiny/0", point=None, start=end - 5, end=end, reset=False,
                         drafts=522.0, acceptance_length=L, acceptance_rate=A)
    return replace(w, **over)  # type: ignore[arg-type]


def _rules(phase: str = "post", method: str = "ngram") -> VetRules:
    return VetRules(engine="vllm", served_model_name="tiny", method=method, k=3, phase=phase, now=NOW,
                    lookback_seconds=3600)


def _live(w: AcceptanceWindow) -> bool:
    return w.source == LIVE


def test_control_real_numbers_pass() -> None:
    kept, errors = vet_windows([_w(), _w(end=NOW - 5)], _rules(), _live)
    assert len(kept) == 2 and errors == []


def test_each_rule_drops_and_says_why() -> None:
    cases = {
        "outside lookback_seconds": _w(end=NOW - 7200),
        "after the evaluation time": _w(end=NOW + 3600),
        "not a finite number": _w(acceptance_length=float("nan")),
        "> 1 + k = 4": _w(acceptance_length=5.0, acceptance_rate=0.01),
        "restarted inside the window is unknown": _w(reset=None),
        "not live evidence": _w(source="captures a.txt, b.txt"),
    }
    for needle, w in cases.items():
        kept, errors = vet_windows([w], _rules(), _live)
        assert kept == [] and len(errors) == 1 and needle in errors[0], (needle, errors)


def test_pre_phase_keeps_historic_captures_but_not_future_or_pre_2024_ones() -> None:
    old = _w(end=EARLIEST_EVIDENCE_TIME + 86_400, source="captures a.txt, b.txt")  # 2024-01-02: historic, kept
    assert vet_windows([old], _rules("pre"), _live)[0] == [old]
    ancient = _w(end=1000.0, source="captures a.txt, b.txt")
    kept, errors = vet_windows([ancient], _rules("pre"), _live)
    assert kept == [] and "not dated as evidence" in errors[0] and "before 2024" in errors[0], errors
    future = _w(end=NOW + 7200, source="captures a.txt, b.txt")
    assert vet_windows([future], _rules("pre"), _live)[0] == []


def test_many_bad_windows_are_one_line() -> None:
    kept, errors = vet_windows([_w(end=60.0 + i) for i in range(1000)], _rules(), _live)
    assert kept == [] and len(errors) == 1 and "(1000 windows)" in errors[0]


def test_repeats_counted_once_and_overlaps_distrusted() -> None:
    kept, errors = vet_windows([_w()] * 1000, _rules(), _live)
    assert len(kept) == 1 and "999 repeated" in errors[0]
    kept, errors = vet_windows([_w(end=NOW - 10), replace(_w(end=NOW - 8), start=NOW - 12)], _rules(), _live)
    assert kept == [] and "overlap" in errors[0]


def test_source_identity_and_engine_up() -> None:
    ev = MetricsEvidence(windows=[_w()], sources=[LIVE], kv_pool=PoolObservation(8192, LIVE, True),
                         identity=EvidenceIdentity(LIVE, engine="vllm", models=("Qwen/Qwen3-8B",)),
                         live=True, engine_up=True)
    out = vet_source(ev, _rules())
    assert out.windows == [] and out.kv_pool is None and "not this plan's evidence" in out.errors[0]
    down = replace(ev, identity=None, engine_up=False)
    out = vet_source(down, _rules())
    assert out.windows == [] and "engine_up 0" in out.errors[0]
    ok = replace(ev, identity=None)
    assert vet_source(ok, _rules()).windows == [_w()]
    assert vet_source(replace(ok, engine_up=None), _rules("pre")).windows == [_w()]  # pre: no liveness asked


def test_impossible_side_facts_are_dropped() -> None:
    ev = MetricsEvidence(sources=[LIVE], kv_pool=PoolObservation(-5, LIVE, True), ready_seconds=float("nan"),
                         ready_source=LIVE, context_cap_tokens=0, live=True, engine_up=True)
    out = vet_source(ev, _rules())
    assert out.kv_pool is None and out.ready_seconds is None and out.context_cap_tokens is None
    assert len(out.errors) == 3


def test_one_sidecar_under_two_names_is_one_set_of_windows() -> None:
    """Uniqueness whatever the names (issue 34): the same windows from two spellings of one sidecar's URL count once;
    windows of the same interval with other counters (two capture groups with equal mtimes) stay two."""
    other = "exporter http://localhost:9479"
    kept, errors = vet_windows([_w(), _w(source=other)], _rules(), lambda w: True)
    assert len(kept) == 1 and "1 repeated window(s) counted once" in errors[0], errors
    kept, errors = vet_windows([_w(), _w(source=other, drafts=600.0)], _rules(), lambda w: True)
    assert len(kept) == 2 and errors == [], errors
