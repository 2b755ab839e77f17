"""SGLang behind Ray Serve LLM (`ray_sglang_*`): a replica's two workers are one stream, with the numbers SGLang gave.

The pages are GENERATED (tools/ray_sglang_fixtures.py): the real SGLang 0.5.23 CPU captures of the n-gram
arm (replica a1b2c3d4) and the EAGLE-3 arm (replica e5f6a7b8), renamed and tagged as SGLang 0.5.23's Ray
metric backend (srt/observability/ray_wrappers.py) and Ray (ray-project/ray#64797: the tokenizer worker and
the rank-0 scheduler worker of each replica, `application`/`deployment`/`replica` on both) do. So every
expected number is the one the exporter reads from the original SGLang page of that arm.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from exporter.derive import derive_window
from exporter.engines import detect
from exporter.scrape import snapshot_from_text
from tools import ray_sglang_fixtures

FIX = Path(__file__).resolve().parents[3] / "fixtures"
A, B = "a1b2c3d4", "e5f6a7b8"  # the replicas (Ray's `replica` tag)
ARMS = ((A, "ngram"), (B, "eagle3"))
WINDOWS = ("before", "during", "after")
SCHED_A = "7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b"  # replica A's rank-0 scheduler worker


def ray(window: str) -> str:
    return (FIX / "ray" / "sglang" / f"metrics-serve-{window}.txt").read_text()


def own(arm: str, window: str) -> str:
    return (FIX / "sglang" / "0.5.23" / arm / f"metrics-{window}.txt").read_text()


def snap(text: str, ts: float = 0.0):
    return snapshot_from_text(text, "auto", timestamp=ts)


def lines_of(text: str, family: str, worker: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(family + "{") and f'WorkerId="{worker}"' in ln]


def test_every_fixture_says_it_is_generated_and_from_what():
    for w in WINDOWS:
        head = ray(w).splitlines()[:5]
        assert head[0].startswith("# GENERATED, NOT CAPTURED: tools/ray_sglang_fixtures.py"), w
        assert f"tests/fixtures/sglang/0.5.23/ngram/metrics-{w}.txt" in head[0]
        assert "ray_wrappers.py" in head[1] and "ray-project/ray#64797" in head[3], w


def test_the_fixtures_are_what_the_generator_writes():
    for w in WINDOWS:
        assert ray(w) == ray_sglang_fixtures.page(w), w


def test_each_replica_shows_two_workers_as_ray_says():
    """The tokenizer worker (request counters, `ReplicaId` set) and the scheduler worker (pool, `ReplicaId` "")
    are two `WorkerId`s carrying the same `replica`: what the join is for."""
    text = ray("after")
    tok = re.search(r'^ray_sglang_spec_verify_calls_total\{[^}]*replica="a1b2c3d4",ReplicaId="a1b2c3d4",'
                    r'WorkerId="(\w+)"\} 104\.0$', text, re.M)
    sched = re.search(r'^ray_sglang_max_total_num_tokens\{[^}]*replica="a1b2c3d4",ReplicaId="",WorkerId="(\w+)"\} '
                      r'8192\.0$', text, re.M)
    assert tok is not None and sched is not None and tok[1] != sched[1] == SCHED_A
    assert "\nsglang:" not in text and "\nray_sglang_http_requests_total" not in text  # no SGLang HTTP server


def test_detected_as_sglang_with_one_stream_per_replica():
    text = ray("after")
    assert detect(text) == "sglang"
    s = snap(text)
    assert [(st.model, st.rank) for st in s.streams] == [("tiny", A), ("tiny", B)]
    assert not s.anomalies and any("ray serve llm" in h for h in s.version_hints)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize(("rank", "arm"), ARMS)
def test_each_replica_carries_its_own_engines_numbers(rank: str, arm: str, window: str):
    """Every field of a replica's stream is the SGLang page's own (pool and gauges from the scheduler worker,
    counters and histograms from the tokenizer worker): nothing summed across replicas or workers."""
    (mine,) = snap(own(arm, window)).streams
    got = snap(ray(window)).stream("tiny", rank)
    assert got is not None and got.spec is not None and got.kv_pool_tokens == 8192
    assert dataclasses.replace(got, rank=None, split_cumulative=()) == dataclasses.replace(mine, split_cumulative=())


@pytest.mark.parametrize(("rank", "arm"), ARMS)
def test_the_window_acceptance_is_each_replicas_own(rank: str, arm: str):
    """L over before -> after per replica = the same window on that arm's SGLang pages (decode-only)."""
    ray_w = {w.rank: w for w in derive_window(snap(ray("before"), 0.0), snap(ray("after"), 60.0), 60.0)}
    (mine,) = derive_window(snap(own(arm, "before"), 0.0), snap(own(arm, "after"), 60.0), 60.0)
    w = ray_w[rank]
    assert w.drafts == mine.drafts and w.acceptance_length == mine.acceptance_length
    assert w.drafts is not None and w.drafts > 0 and w.acceptance_length is not None


def test_a_series_two_workers_repeat_is_taken_once_and_counted():
    """A replica's series given again under another `WorkerId` (a restarted scheduler actor still served beside
    its successor) is a repeat: the first wins, never summed nor maxed, and it counts `duplicate`."""
    text = ray("after")
    pool = lines_of(text, "ray_sglang_max_total_num_tokens", SCHED_A)[0]
    verify = next(ln for ln in text.splitlines() if ln.startswith("ray_sglang_spec_verify_calls_total{")
                  and 'replica="a1b2c3d4"' in ln)
    m = re.search(r'WorkerId="(\w+)"', verify)
    assert m is not None
    worker = m[1]
    again = [pool.replace(SCHED_A, "f" * 56).replace("8192.0", "16384.0"),
             verify.replace(worker, "e" * 56).replace(" 104.0", " 999.0")]
    s = snap(text + "\n".join(again) + "\n")
    got = s.stream("tiny", A)
    assert got is not None and got.spec is not None
    assert got.kv_pool_tokens == 8192 and got.spec.verify_calls == 104.0
    assert s.anomalies == {"duplicate": 2}
    assert [st.rank for st in s.streams] == [A, B]


def test_rays_per_process_labels_split_nothing():
    """Ray's tags that one process writes one value of (`SessionName`, `Version`, ...) are folded: the same streams."""
    text = ray("after").replace(',WorkerId=', ',Component="core_worker",NodeAddress="10.0.0.7",'
                                             'SessionName="session_2026",Version="2.60.0",WorkerId=')
    assert snap(text).streams == snap(ray("after")).streams


def test_a_replica_under_dp_is_rank_replica_slash_dp():
    """With a `dp_rank` on the scheduler worker's series, the stream is `<replica>/<dp_rank>`; the tokenizer's
    rank-less counters join that only DP rank of their replica, not another replica's."""
    text = re.sub(r'tp_rank="0",(application="llm_app",deployment="LLMServer:tiny",replica="a1b2c3d4")',
                  r'tp_rank="0",dp_rank="0",\1', ray("after"))
    s = snap(text)
    assert [st.rank for st in s.streams] == [f"{A}/0", B]
    a = s.stream("tiny", f"{A}/0")
    assert a is not None and a.spec is not None and a.spec.verify_calls == 104.0 and a.kv_pool_tokens == 8192


def test_without_rays_replica_tag_a_scheduler_worker_is_not_guessed():
    """Before Ray tagged `replica` (a RayEngine outside Serve LLM), nothing says which replica a scheduler worker
    (`ReplicaId` "") serves: its series stay a stream of their own, keyed by its `WorkerId` (fail closed)."""
    text = re.sub(r',replica="\w+"', "", ray("after"))
    s = snap(text)
    ranks = {st.rank for st in s.streams}
    assert A in ranks and B in ranks and SCHED_A in ranks and len(ranks) == 4
    tok = s.stream("tiny", A)
    assert tok is not None and tok.kv_pool_tokens is None and tok.spec is not None and tok.spec.verify_calls == 104.0


def test_a_replica_label_on_sglangs_own_page_is_the_users():
    """On SGLang's own page (no Ray tag) a `replica` label set with `--extra-metric-labels` keys nothing."""
    text = own("ngram", "after").replace('model_name="tiny"', 'model_name="tiny",replica="r1"')
    assert [(st.model, st.rank) for st in snap(text).streams] == [("tiny", None)]
