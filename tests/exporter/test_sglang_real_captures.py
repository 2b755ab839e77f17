"""The exporter on real SGLang 0.5.23 pages (CPU), recorded by tools/refresh_sglang_captures.py.

tests/fixtures/sglang/0.5.23/<arm>/ holds SGLang's own /metrics before, during and after a
bounded greedy traffic, its /server_info and the /generate answers; requests.json carries the
counters read around the traffic. Every expected number below is read from those files (the
engine's counters, its server info, the launch flags in requests.json), never typed in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter.derive import derive_window
from exporter.engines.base import SideInfo
from exporter.scrape import snapshot_from_text

CAPTURES = Path(__file__).parents[1] / "fixtures" / "sglang" / "0.5.23"
ARMS = ("nospec", "ngram", "standalone", "eagle3")
SPEC_ARMS = ("ngram", "standalone", "eagle3")


def _arm(arm: str) -> Path:
    d = CAPTURES / arm
    assert (d / "requests.json").is_file(), f"{d} missing: record it with tools/refresh_sglang_captures.py"
    return d


def _side(d: Path, which: str) -> SideInfo:
    info = json.loads((d / f"server_info-{which}.json").read_text())
    return SideInfo(max_total_num_tokens=info.get("max_total_num_tokens"), context_length=info.get("context_length"),
                    configured_max_total_tokens=info.get("max_total_tokens"), version=info.get("version"))


def _flag(doc: dict, name: str) -> str:
    launch = doc["launch"]
    return launch[launch.index(name) + 1]


@pytest.mark.parametrize("arm", ARMS)
def test_pool_context_and_version_are_the_engines(arm: str):
    d = _arm(arm)
    doc = json.loads((d / "requests.json").read_text())
    info = json.loads((d / "server_info-after.json").read_text())
    snap = snapshot_from_text((d / "metrics-after.txt").read_text(), timestamp=0.0, side=_side(d, "after"))
    assert snap.engine == "sglang" and snap.version == info["version"] == "0.5.23"
    (stream,) = snap.streams
    assert stream.kv_pool_tokens == info["max_total_num_tokens"] == int(_flag(doc, "--max-total-tokens"))
    assert stream.kv_pool_configured_tokens == int(_flag(doc, "--max-total-tokens"))
    assert stream.context_cap_tokens == info["context_length"] == int(_flag(doc, "--context-length"))


def test_no_speculation_means_no_acceptance_although_the_gauges_are_on_the_page():
    d = _arm("nospec")
    text = (d / "metrics-after.txt").read_text()
    assert "sglang:spec_accept_length" in text and "sglang:spec_verify_calls_total" not in text
    (stream,) = snapshot_from_text(text, timestamp=0.0).streams
    assert stream.spec is None


@pytest.mark.parametrize("arm", SPEC_ARMS)
def test_window_acceptance_equals_the_engines_counters(arm: str):
    d = _arm(arm)
    doc = json.loads((d / "requests.json").read_text())
    before, after = doc["counters"]["before"], doc["counters"]["after"]
    b = snapshot_from_text((d / "metrics-before.txt").read_text(), timestamp=0.0)
    a = snapshot_from_text((d / "metrics-after.txt").read_text(), timestamp=30.0)
    (w,) = derive_window(b, a, min_drafts=1)
    v = after["verify_calls"] - before["verify_calls"]
    g = after["generation_tokens"] - before["generation_tokens"]
    assert w.drafts == v
    assert w.acceptance_length == pytest.approx(g / v, rel=1e-12)
    k = after["num_draft_tokens"]
    assert w.acceptance_rate == pytest.approx((g - v) / (v * (k - 1)), rel=1e-12)
    # the per-request answers add up to the same deltas
    assert sum(r["meta_info"]["spec_verify_ct"] for r in doc["responses"]) == v
    assert sum(r["meta_info"]["completion_tokens"] for r in doc["responses"]) == g
