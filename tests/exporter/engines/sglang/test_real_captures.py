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

CAPTURES = Path(__file__).parents[3] / "fixtures" / "sglang" / "0.5.23"
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
    n = len(doc["responses"])  # requests that finished between the two pages, one prefill token each
    assert w.drafts == v
    # decode-only (vLLM's definition): (Δgenerated − Δfinished requests) / Δverify calls
    assert w.acceptance_length == pytest.approx((g - n) / v, rel=1e-12)
    k = after["num_draft_tokens"]
    assert w.acceptance_rate == pytest.approx((g - n - v) / (v * (k - 1)), rel=1e-12)
    # the per-request answers add up to the same deltas, and each request's first token is not a verify's
    assert sum(r["meta_info"]["spec_verify_ct"] for r in doc["responses"]) == v
    assert sum(r["meta_info"]["completion_tokens"] for r in doc["responses"]) == g
    assert sum(r["meta_info"]["completion_tokens"] - 1 for r in doc["responses"]) == g - n
    assert a.streams[0].finished_requests - b.streams[0].finished_requests == n  # sglang:num_requests_total
    if arm in ("standalone", "eagle3"):  # random drafters: nothing accepted, decode-only L 1.000 (SGLang's 1.032)
        assert w.acceptance_length == pytest.approx(1.0, abs=0.005) and g / v > 1.02


# --- the real families that answer a budget line (exporter/engines/sglang.py, exporter/names.py) -------------


def _info(d: Path, which: str) -> dict:
    return json.loads((d / f"server_info-{which}.json").read_text())


def _full_side(d: Path, which: str) -> SideInfo:
    """The side info as exporter.scrape.Scraper reads /server_info (speculative settings included)."""
    from exporter.engines.sglang import speculative_settings

    info = _info(d, which)
    return SideInfo(max_total_num_tokens=info.get("max_total_num_tokens"), context_length=info.get("context_length"),
                    configured_max_total_tokens=info.get("max_total_tokens"), version=info.get("version"),
                    speculative=speculative_settings(info))


@pytest.mark.parametrize("arm", ARMS)
def test_pool_now_and_memory_bill_are_the_engines(arm: str):
    d = _arm(arm)
    after = json.loads((d / "requests.json").read_text())["counters"]["after"]
    (s,) = snapshot_from_text((d / "metrics-after.txt").read_text(), timestamp=0.0).streams
    assert s.kv_available_tokens == after["kv_available_tokens"]
    assert s.kv_used_tokens == after["kv_used_tokens"]
    assert s.kv_cache_memory_bytes == after["kv_cache_memory_gb"] * 2**30
    # SGLang's weight figure is a device-memory difference: 0 or less on CPU is not a value
    w = after["weight_memory_gb"]
    assert s.weight_memory_bytes == (w * 2**30 if w > 0 else None)


def test_a_weight_figure_at_or_below_zero_is_absent():
    d = _arm("nospec")
    text = (d / "metrics-after.txt").read_text()
    assert json.loads((d / "requests.json").read_text())["counters"]["after"]["weight_memory_gb"] <= 0
    (s,) = snapshot_from_text(text, timestamp=0.0).streams
    assert s.weight_memory_bytes is None and s.kv_cache_memory_bytes is not None


@pytest.mark.parametrize("arm", SPEC_ARMS)
def test_speculative_settings_come_from_server_info(arm: str):
    d = _arm(arm)
    info = _info(d, "after")
    snap = snapshot_from_text((d / "metrics-after.txt").read_text(), timestamp=0.0, side=_full_side(d, "after"))
    sp = snap.speculative
    assert sp is not None
    assert sp.algorithm == info["speculative_algorithm"] == arm.upper()
    assert sp.num_draft_tokens == info["speculative_num_draft_tokens"]
    assert sp.num_steps == info["speculative_num_steps"]
    assert sp.avg_accept_length == info["internal_states"][0]["avg_spec_accept_length"]


def test_no_speculation_no_settings():
    d = _arm("nospec")
    assert _full_side(d, "after").speculative is None


def test_k_falls_back_to_server_info_while_the_gauge_reads_zero():
    """SGLang refreshes spec_num_draft_tokens once per decode-log interval: the NGRAM arm's 'before' page
    (a short warm-up) reads 0 there; k comes from /server_info's speculative_num_draft_tokens."""
    d = _arm("ngram")
    doc = json.loads((d / "requests.json").read_text())
    assert doc["counters"]["before"]["num_draft_tokens"] == 0
    text = (d / "metrics-before.txt").read_text()
    (bare,) = snapshot_from_text(text, timestamp=0.0).streams
    assert bare.spec is not None and not bare.spec.num_draft_tokens  # no k without the fallback
    (s,) = snapshot_from_text(text, timestamp=0.0, side=_full_side(d, "before")).streams
    assert s.spec is not None and s.spec.num_draft_tokens == _info(d, "before")["speculative_num_draft_tokens"] == 4


def test_a_refreshed_gauge_is_kept():
    d = _arm("standalone")
    before = json.loads((d / "requests.json").read_text())["counters"]["before"]
    (s,) = snapshot_from_text((d / "metrics-before.txt").read_text(), timestamp=0.0,
                              side=_full_side(d, "before")).streams
    assert s.spec is not None and s.spec.num_draft_tokens == before["num_draft_tokens"] == 4


@pytest.mark.parametrize("arm", SPEC_ARMS)
def test_block_and_cap_length_are_passed_through_on_speculating_streams(arm: str):
    d = _arm(arm)
    text = (d / "metrics-after.txt").read_text()
    (s,) = snapshot_from_text(text, timestamp=0.0).streams
    page = {line.split("{")[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line.startswith(("sglang:spec_block_accept_length{", "sglang:spec_cap_length{"))}
    assert s.spec_block_accept_length == page["sglang:spec_block_accept_length"]
    assert s.spec_cap_length == page["sglang:spec_cap_length"]
    (n,) = snapshot_from_text((_arm("nospec") / "metrics-after.txt").read_text(), timestamp=0.0).streams
    assert n.spec_block_accept_length is None and n.spec_cap_length is None  # on the page at 0, not speculating


def test_the_exposition_and_once_json_carry_them():
    from prometheus_client.parser import text_string_to_metric_families

    from exporter.collect import exposition_of_snapshot
    from exporter.snapshot_json import snapshot_to_json

    d = _arm("ngram")
    after = json.loads((d / "requests.json").read_text())["counters"]["after"]
    snap = snapshot_from_text((d / "metrics-after.txt").read_text(), timestamp=0.0, side=_full_side(d, "after"))
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for f in text_string_to_metric_families(exposition_of_snapshot(snap)) for s in f.samples}
    lv = (("engine", "sglang"), ("model", "tiny"), ("rank", ""))
    assert got[("specgate_kv_available_tokens", lv)] == after["kv_available_tokens"]
    assert got[("specgate_kv_used_tokens", lv)] == after["kv_used_tokens"]
    assert got[("specgate_kv_cache_memory_bytes", lv)] == after["kv_cache_memory_gb"] * 2**30
    assert got[("specgate_weight_memory_bytes", lv)] == after["weight_memory_gb"] * 2**30
    assert got[("specgate_engine_speculative_info", (("algorithm", "NGRAM"), ("engine", "sglang"),
                                                     ("num_draft_tokens", "4"), ("num_steps", "0")))] == 1.0
    doc = snapshot_to_json(snap)
    assert doc["speculative"] == {"algorithm": "NGRAM", "num_draft_tokens": 4, "num_steps": 0,
                                  "avg_accept_length": _info(d, "after")["internal_states"][0]["avg_spec_accept_length"],
                                  "eagle_topk": 10, "adaptive": False}
    (st,) = doc["streams"]
    assert st["kv_available_tokens"] == after["kv_available_tokens"]


@pytest.mark.parametrize("arm", SPEC_ARMS)
def test_interval_gauges_at_zero_before_their_first_interval_are_no_anomaly(arm: str):
    """The 'before' pages (a short warm-up) may read spec_accept_length / spec_num_draft_tokens 0: not yet
    a value, so neither an impossible L below 1 nor a k of 0 is counted."""
    d = _arm(arm)
    snap = snapshot_from_text((d / "metrics-before.txt").read_text(), timestamp=0.0)
    assert not snap.anomalies.get("impossible")
