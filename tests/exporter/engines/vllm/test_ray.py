"""vLLM behind Ray Serve LLM (`ray_vllm_*`): each replica is its own stream, with the numbers vLLM gave.

The pages are GENERATED (tools/ray_fixtures.py): the real vLLM 0.32 CPU captures of the n-gram arm
(replica a1b2c3d4) and the self-draft arm (replica e5f6a7b8), renamed and tagged as Ray's source does
(vLLM 0.32 vllm/v1/metrics/ray_wrappers.py, Ray 2.60.0's OpenTelemetry recorder). So every expected
number is the one the exporter reads from the original vLLM page of that arm.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.derive import derive_window
from exporter.engines import detect
from exporter.scrape import snapshot_from_text
from tools import ray_fixtures

FIX = Path(__file__).resolve().parents[3] / "fixtures"
A, B = "a1b2c3d4/0", "e5f6a7b8/0"  # <ReplicaId>/<engine>


def ray(window: str) -> str:
    return (FIX / "ray" / f"metrics-serve-{window}.txt").read_text()


def vllm(arm: str, window: str) -> str:
    return (FIX / "vllm" / f"metrics-{arm}-{window}.txt").read_text()


def snap(text: str, ts: float = 0.0):
    return snapshot_from_text(text, "auto", timestamp=ts)


def test_every_fixture_says_it_is_generated_and_from_what():
    for p in sorted((FIX / "ray").glob("*.txt")):
        head = p.read_text().splitlines()[:4]
        assert head[0].startswith("# GENERATED, NOT CAPTURED: tools/ray_fixtures.py"), p
        assert "ray_wrappers.py" in head[1] and "Ray 2.60.0" in head[2], p


def test_the_fixtures_are_what_the_generator_writes():
    for window in ("during", "after"):
        assert ray(window) == ray_fixtures.page(window), window


def test_detected_as_vllm_with_one_stream_per_replica():
    text = ray("after")
    assert detect(text) == "vllm"
    s = snap(text)
    assert [(st.model, st.rank) for st in s.streams] == [("tiny", A), ("tiny", B)]


@pytest.mark.parametrize(("rank", "arm"), [(A, "ngram"), (B, "draftself")])
def test_each_replica_carries_its_own_engines_numbers(rank: str, arm: str):
    """Every field of a replica's stream is the vLLM page's own: nothing summed across replicas (their pools,
    counters and restarts are separate engines')."""
    (own,) = snap(vllm(arm, "after")).streams
    got = snap(ray("after")).stream("tiny", rank)
    assert got is not None
    assert got.kv_pool_tokens == own.kv_pool_tokens and got.kv_block_size == own.kv_block_size
    assert got.spec == own.spec
    assert (got.ttft, got.tpot, got.itl) == (own.ttft, own.tpot, own.itl)
    assert (got.prompt_tokens, got.generation_tokens) == (own.prompt_tokens, own.generation_tokens)


@pytest.mark.parametrize(("rank", "arm"), [(A, "ngram"), (B, "draftself")])
def test_the_window_acceptance_is_each_replicas_own(rank: str, arm: str):
    """L over during -> after per replica = the same window on that arm's vLLM pages (Δaccepted / Δdrafts + 1)."""
    ray_w = {w.rank: w for w in derive_window(snap(ray("during"), 0.0), snap(ray("after"), 60.0), 60.0)}
    (own,) = derive_window(snap(vllm(arm, "during"), 0.0), snap(vllm(arm, "after"), 60.0), 60.0)
    w = ray_w[rank]
    assert w.drafts == own.drafts and w.acceptance_length == own.acceptance_length
    assert w.acceptance_length is not None and w.acceptance_length > 1.0


def test_outside_serve_the_worker_is_the_replica():
    """`ReplicaId` is "" outside a Serve context (ray_wrappers._get_replica_id): the worker process keys it."""
    text = ray("after").replace('ReplicaId="a1b2c3d4",', 'ReplicaId="",')
    ranks = [st.rank for st in snap(text).streams]
    assert ranks == ["04c6f0e1d2b3a4958677a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9/0", B]


def test_rays_per_process_labels_split_nothing():
    """Labels one process writes one value of (`SessionName`, `Version`, ...) are folded: the same streams."""
    text = ray("after").replace(',ReplicaId=', ',SessionName="session_2026",Version="2.60.0",ReplicaId=')
    assert snap(text).streams == snap(ray("after")).streams


def test_older_rays_colon_spelling_reads_the_same_streams():
    """Older Ray kept vLLM's colon (`ray_vllm:<base>`, ray-project/ray#52719; what Datadog's integration reads,
    DataDog/integrations-core#25213): the same pages respelled give the same streams and windows. Respelled
    here from the generated Ray 2.60 pages, not captured from an older Ray."""
    def colon(text: str) -> str:
        return "\n".join(line.replace("ray_vllm_", "ray_vllm:", 1) for line in text.splitlines()) + "\n"

    during, after = colon(ray("during")), colon(ray("after"))
    assert "ray_vllm_" not in during and "\nray_vllm:spec_decode_num_drafts_total{" in during
    assert detect(during) == "vllm"
    assert snap(during).streams == snap(ray("during")).streams
    assert snap(after).streams == snap(ray("after")).streams
    got = derive_window(snap(during, 0.0), snap(after, 60.0), 60.0)
    assert got == derive_window(snap(ray("during"), 0.0), snap(ray("after"), 60.0), 60.0) and len(got) == 2
