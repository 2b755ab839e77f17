"""Every value an engine adapter reads is bounded once (issue 34, item 2; `exporter.sanity`, `exporter.bounds`).

Planted on each engine's real fixture page (tests/fixtures/): a pool of 1.6e301 tokens (or one past the
float's range, which made the exposition raise `OverflowError`), depths of 1e300 (SGLang's gauges and
`/server_info`, adaptive candidate steps, vLLM and TensorRT-LLM schedules), values an adapter's arithmetic
turns non-finite, ±Inf and NaN samples, and each family written twice. Each is absent from the exposition and
from `exporter once --format json`, counted under its anomaly reason, and the sidecar's `/metrics` answers.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from exporter.bounds import MAX_DEPTH, MAX_POOL_TOKENS
from exporter.collect import exposition
from exporter.engines.base import SideInfo
from exporter.engines.llamacpp import side_info_from as llamacpp_side
from exporter.engines.sglang import side_info_from as sglang_side
from exporter.engines.sglang.schedule import sglang_adaptive_schedule
from exporter.engines.trtllm.schedule import trtllm_schedule
from exporter.engines.vllm.schedule import vllm_told_schedule
from exporter.scrape import snapshot_from_text
from exporter.server import Sidecar
from exporter.settings import ExporterSettings
from exporter.snapshot_json import snapshot_to_json
from exporter.state import ExporterState
from gate.cli import main
from tests.exporter.loopback_engine import LoopbackEngine

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VLLM = (FIXTURES / "vllm" / "metrics-ngram-after.txt").read_text()
SGLANG = (FIXTURES / "sglang" / "0.5.23" / "eagle3" / "metrics-after.txt").read_text()
SGLANG_INFO: dict[str, Any] = json.loads((FIXTURES / "sglang" / "0.5.23" / "eagle3" / "server_info-before.json").read_text())
TRTLLM = (FIXTURES / "trtllm" / "metrics-after-4.txt").read_text()
LLAMACPP = (FIXTURES / "llamacpp" / "draft" / "metrics-after.txt").read_text()
LLAMACPP_PROPS: dict[str, Any] = json.loads((FIXTURES / "llamacpp" / "draft" / "props.json").read_text())
PAGES = {"vllm": VLLM, "sglang": SGLANG, "trtllm": TRTLLM, "llamacpp": LLAMACPP}
SAMPLE = re.compile(r"^([a-z_:]+(?:\{[^}]*\})?) (\S+)$", re.M)

Flat = dict[tuple[str, frozenset[tuple[str, str]]], float]


def side_of(engine: str, info: dict[str, Any] | None = None) -> SideInfo | None:
    if engine == "sglang":
        return sglang_side(SGLANG_INFO if info is None else info)
    if engine == "llamacpp":
        return llamacpp_side(LLAMACPP_PROPS if info is None else info, {})
    return None


def render(engine: str, *pages: str, side: SideInfo | None = None) -> tuple[str, Flat, list[dict[str, Any]]]:
    """The exposition after `pages` (30 s apart), its samples, and each page's `exporter once` JSON document."""
    state = ExporterState.from_settings(ExporterSettings(windows=[30.0], min_drafts=1), started_at=0.0)
    docs = []
    for i, page in enumerate(pages):
        snap = snapshot_from_text(page, engine, timestamp=1e9 + 30.0 * i, side=side)
        state.record_success(snap, 0.0)
        docs.append(snapshot_to_json(snap))
    text = exposition(state)
    flat = {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}
    return text, flat, docs


def anomaly(flat: Flat, engine: str, reason: str) -> float:
    return flat[("specgate_engine_anomalies_total", frozenset({("engine", engine), ("reason", reason)}))]


def values(flat: Flat, name: str) -> list[float]:
    return [v for (n, _), v in flat.items() if n == name]


def no_unbounded_number(text: str, docs: list[dict[str, Any]]) -> None:
    """No value past the bounds, ±Inf or NaN in the exposition (bucket bounds `le="+Inf"` aside) or the JSON."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        value = float(line.rsplit(" ", 1)[1])
        assert value == value and abs(value) < 1e30, line
    dumped = json.dumps(docs)
    assert "Infinity" not in dumped and "NaN" not in dumped
    assert all(abs(v) < 1e30 for v in numbers(docs)), dumped[:200]


def numbers(doc: object) -> list[float]:
    """Every number of a JSON document (bools aside)."""
    if isinstance(doc, dict):
        return [v for x in doc.values() for v in numbers(x)]
    if isinstance(doc, list):
        return [v for x in doc for v in numbers(x)]
    return [doc] if isinstance(doc, int | float) and not isinstance(doc, bool) else []


def pools(doc: dict[str, Any]) -> list[object]:
    return [s["kv_pool_tokens"] for s in doc["streams"]]


# --- pools: within 2**40 tokens, larger is impossible and not exported ---------------------------------------

HUGE_POOL: dict[str, tuple[Callable[[str], str], dict[str, Any] | None]] = {
    "vllm": (lambda p: p.replace('kv_cache_size_tokens="8192"', 'kv_cache_size_tokens="1.6e301"'), None),
    "sglang": (lambda p: re.sub(r"^(sglang:max_total_num_tokens\{[^}]*\}) \S+", r"\1 1.6e301", p, flags=re.M), None),
    "trtllm": (lambda p: re.sub(r"^(trtllm_kv_cache_max_blocks\{[^}]*\}) \S+", r"\1 1e300", p, flags=re.M), None),
    # one slot's n_ctx past the float's range: pool = n_ctx × slots, an int `float()` cannot hold
    "llamacpp": (lambda p: p, {**LLAMACPP_PROPS, "default_generation_settings": {
        **LLAMACPP_PROPS["default_generation_settings"], "n_ctx": 10**310}}),
}


@pytest.mark.parametrize("engine", sorted(HUGE_POOL))
def test_a_pool_past_the_bound_is_not_exported_and_counted(engine: str) -> None:
    plant, info = HUGE_POOL[engine]
    page = plant(PAGES[engine])
    assert page != PAGES[engine] or info is not None
    text, flat, docs = render(engine, page, side=side_of(engine, info))
    assert values(flat, "specgate_kv_pool_tokens") == []
    assert anomaly(flat, engine, "impossible") >= 1
    assert all(p is None for p in pools(docs[0]))
    no_unbounded_number(text, docs)
    _, clean, clean_docs = render(engine, PAGES[engine], side=side_of(engine))
    assert anomaly(clean, engine, "impossible") == 0  # the capture itself is within the bounds
    assert any(p is not None and 0 < p <= MAX_POOL_TOKENS for p in pools(clean_docs[0])) or engine == "trtllm"


def test_a_pool_at_the_bound_is_kept() -> None:
    page = VLLM.replace('kv_cache_size_tokens="8192"', f'kv_cache_size_tokens="{MAX_POOL_TOKENS}"')
    _, flat, docs = render("vllm", page)
    assert values(flat, "specgate_kv_pool_tokens") == [float(MAX_POOL_TOKENS)]
    assert anomaly(flat, "vllm", "impossible") == 0 and pools(docs[0]) == [MAX_POOL_TOKENS]


# --- depths: at most 64, wherever they are read ---------------------------------------------------------------

def test_sglang_depth_gauges_of_1e300_are_not_exported_and_counted() -> None:
    page = re.sub(r"^(sglang:spec_num_(?:steps|draft_tokens)\{[^}]*\}) \S+", r"\1 1e300", SGLANG, flags=re.M)
    assert page.count(" 1e300") == 2
    text, flat, docs = render("sglang", page, side=side_of("sglang"))
    assert values(flat, "specgate_spec_num_steps") == [] and values(flat, "specgate_spec_num_draft_tokens") == []
    assert all(v <= MAX_DEPTH for v in values(flat, "specgate_spec_depth_max"))
    assert anomaly(flat, "sglang", "impossible") >= 2
    (stream,) = docs[0]["streams"]
    assert stream["spec_num_steps"] is None and stream["spec_num_draft_tokens"] is None
    no_unbounded_number(text, docs)


def test_sglang_server_info_depths_of_1e300_are_not_read() -> None:
    info = {**SGLANG_INFO, "speculative_num_steps": 10**300, "speculative_num_draft_tokens": 10**300}
    text, flat, docs = render("sglang", SGLANG, side=side_of("sglang", info))
    assert all(v <= MAX_DEPTH for v in values(flat, "specgate_spec_depth_max"))
    assert anomaly(flat, "sglang", "impossible") >= 2
    assert docs[0]["speculative"]["num_steps"] is None and docs[0]["speculative"]["num_draft_tokens"] is None
    no_unbounded_number(text, docs)


@pytest.mark.parametrize("steps", [MAX_DEPTH + 1, 1000, 10**12])
def test_adaptive_candidate_steps_past_64_are_refused(steps: int) -> None:
    with pytest.raises(ValueError, match="above 64"):
        sglang_adaptive_schedule({"1": {"candidate_steps": [1, steps]}})
    assert sglang_adaptive_schedule({"1": {"candidate_steps": [1, MAX_DEPTH]}}).max_k == MAX_DEPTH


def test_vllm_and_trtllm_schedules_past_64_are_refused() -> None:
    with pytest.raises(ValueError, match="above 64"):
        vllm_told_schedule({"num_speculative_tokens": 1000, "num_speculative_tokens_per_batch_size": [[1, 8, 1000]]})
    with pytest.raises(ValueError, match="above 64"):
        trtllm_schedule({1: 10**12}, 10**12)
    assert trtllm_schedule({1: MAX_DEPTH}, MAX_DEPTH).max_k == MAX_DEPTH


# --- non-finite: never exported ---------------------------------------------------------------------------------

def test_a_value_the_adapters_arithmetic_makes_infinite_is_not_exported() -> None:
    # 1e308 GiB of KV memory is finite; in bytes (× 2**30) it is +Inf
    page = re.sub(r"^(sglang:kv_cache_memory_usage_gb\{[^}]*\}) \S+", r"\1 1e308", SGLANG, flags=re.M)
    text, flat, docs = render("sglang", page, side=side_of("sglang"))
    assert values(flat, "specgate_kv_cache_memory_bytes") == []
    assert anomaly(flat, "sglang", "non_finite") == 1
    no_unbounded_number(text, docs)


@pytest.mark.parametrize("engine", sorted(PAGES))
@pytest.mark.parametrize("bad", ["NaN", "+Inf", "-Inf"])
def test_non_finite_samples_are_never_exported(engine: str, bad: str) -> None:
    page = SAMPLE.sub(lambda m: f"{m.group(1)} {bad}", PAGES[engine])
    text, flat, docs = render(engine, PAGES[engine], page, side=side_of(engine))
    assert anomaly(flat, engine, "non_finite") >= 1
    no_unbounded_number(text, docs)


@pytest.mark.parametrize("engine", sorted(PAGES))
@pytest.mark.parametrize("big", ["1.7976931348623157e308", "1e300"])
def test_every_value_at_the_floats_limit_neither_raises_nor_exports_inf(engine: str, big: str) -> None:
    page = SAMPLE.sub(lambda m: f"{m.group(1)} {big}", PAGES[engine])
    for pages in ((page,), (PAGES[engine], page), (page, PAGES[engine])):
        text, _, docs = render(engine, *pages, side=side_of(engine))
        for line in text.splitlines():
            assert line.startswith("#") or not line.endswith(("Inf", "NaN")), line
        dumped = json.dumps(docs)
        assert "Infinity" not in dumped and "NaN" not in dumped


# --- duplicates: the first series wins, each repeat counted -----------------------------------------------------

def without_anomalies(flat: Flat) -> Flat:
    return {k: v for k, v in flat.items() if k[0] not in ("specgate_engine_anomalies_total",)}


@pytest.mark.parametrize("engine", sorted(PAGES))
def test_each_family_written_twice_is_taken_once_and_counted(engine: str) -> None:
    page = PAGES[engine]
    _, once, docs_once = render(engine, page, side=side_of(engine))
    _, twice, docs_twice = render(engine, page + page, side=side_of(engine))
    assert without_anomalies(twice) == without_anomalies(once)
    assert docs_twice == docs_once
    assert anomaly(twice, engine, "duplicate") >= 3 and anomaly(once, engine, "duplicate") == 0


def test_llamacpp_repeats_with_other_labels_are_not_summed() -> None:
    # llama.cpp writes each family once (no labels but `position`): a second series is a repeat whatever its labels
    copy = re.sub(r"^(llamacpp:\w+)\{", r'\1{x="1",', LLAMACPP, flags=re.M)
    copy = re.sub(r"^(llamacpp:\w+) ", r'\1{x="1"} ', copy, flags=re.M)
    assert copy.count('x="1"') > 10
    _, once, docs_once = render("llamacpp", LLAMACPP, side=side_of("llamacpp"))
    _, twice, docs_twice = render("llamacpp", LLAMACPP + copy, side=side_of("llamacpp"))
    assert docs_twice == docs_once and docs_once[0]["streams"][0]["spec"]["drafts"] == 496
    assert without_anomalies(twice) == without_anomalies(once)
    assert anomaly(twice, "llamacpp", "duplicate") == 10  # 7 families read once each, 3 positions


# --- the sidecar keeps answering; `exporter once --format json` never raises -------------------------------------

def serve_llamacpp(engine: LoopbackEngine, props: dict[str, Any]) -> None:
    engine.get("/metrics", LLAMACPP)
    engine.get("/props", json=props)


def overflowing_props() -> dict[str, Any]:
    return HUGE_POOL["llamacpp"][1] or {}


def sidecar_page(engine: LoopbackEngine) -> requests.Response:
    """The sidecar's `/metrics` once its scrape loop (one scrape at start) has read the engine."""
    settings = ExporterSettings(engine_url=engine.url, listen="127.0.0.1:0", scrape_interval=3600.0,
                                scrape_timeout=2.0, windows=[60.0], min_drafts=1)
    car = Sidecar(settings)
    car.start()
    try:
        host, port = car.address
        end = time.monotonic() + 20.0
        while True:
            r = requests.get(f"http://{host}:{port}/metrics", timeout=5)
            if r.status_code != 200 or "specgate_engine_info{" in r.text or time.monotonic() > end:
                return r
            time.sleep(0.05)
    finally:
        car.stop()


def test_the_sidecar_answers_metrics_with_an_overflowing_llamacpp_pool() -> None:
    with LoopbackEngine() as engine:
        serve_llamacpp(engine, overflowing_props())
        r = sidecar_page(engine)
    assert r.status_code == 200
    flat = {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(r.text) for s in fam.samples}
    assert values(flat, "specgate_kv_pool_tokens") == [] and anomaly(flat, "llamacpp", "impossible") >= 1
    assert values(flat, "specgate_engine_up") == [1.0]


def test_the_sidecar_answers_metrics_with_an_overflowing_trtllm_pool() -> None:
    page = re.sub(r"^(trtllm_kv_cache_(?:max_blocks|tokens_per_block)\{[^}]*\}) \S+", r"\1 1e300", TRTLLM, flags=re.M)
    with LoopbackEngine() as engine:
        engine.get("/metrics", page)
        r = sidecar_page(engine)
    assert r.status_code == 200 and "specgate_kv_pool_tokens{" not in r.text
    assert 'specgate_engine_up{engine="trtllm"} 1.0' in r.text


@pytest.mark.parametrize("fmt", ["json", "prom"])
def test_once_never_raises_on_an_overflowing_pool(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    with LoopbackEngine() as engine:
        serve_llamacpp(engine, overflowing_props())
        rc = main(["exporter", "once", "--engine-url", engine.url, "--engine", "llamacpp", "--format", fmt])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Infinity" not in out and "NaN" not in out and "e+30" not in out
    if fmt == "json":
        assert json.loads(out)["streams"][0]["kv_pool_tokens"] is None
