"""vLLM adapter: every name in docs/operations/engines.md "What the exporter reads" and every vLLM trap, one test each.

Pages are the real vLLM 0.32 CPU captures in tests/fixtures/vllm/ or variants of them made by
editing text (renaming a family, relabelling `engine`, rewriting `cache_config_info` labels), so
every other line stays what a real engine wrote. Expected numbers come from the captures
(ngram-after: drafts 522, draft tokens 1473, accepted 1170, per position 446/393/331; pool
kv_cache_size_tokens 8192 = num_gpu_blocks 64 x block_size 128).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.collect import exposition
from exporter.derive import derive_window
from exporter.engines import adapter, detect
from exporter.parse import parse_labels, parse_page
from exporter.scrape import ACCEPT, Scraper, snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.snapshot_json import snapshot_to_json
from exporter.state import ExporterState
from tests.exporter.loopback_engine import LoopbackEngine

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "vllm"
CACHE_INFO_RE = re.compile(r"^vllm:cache_config_info\{(.*)\} (\S+)$", re.M)
START_RE = re.compile(r"^process_start_time_seconds \S+$", re.M)


def page(name: str) -> str:
    return (FIX / f"metrics-{name}.txt").read_text()


def snap(text: str, ts: float = 0.0):
    return snapshot_from_text(text, "auto", timestamp=ts)


def window(before: str, after: str, seconds: float = 60.0):
    return {(w.model, w.rank): w for w in derive_window(snap(before, 0.0), snap(after, seconds), seconds)}


def cache_info(text: str, drop: tuple[str, ...] = (), **set_labels: str) -> str:
    """The page with its `vllm:cache_config_info` labels edited (every such line)."""
    def edit(m: re.Match) -> str:
        labels = {k: v for k, v in parse_labels(m.group(1)).items() if k not in drop}
        labels.update(set_labels)
        body = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        return f"vllm:cache_config_info{{{body}}} {m.group(2)}"
    out, n = CACHE_INFO_RE.subn(edit, text)
    assert n >= 1
    return out


def with_engines(text: str, engines: tuple[str, ...]) -> str:
    """Every `engine="0"` sample repeated for each engine label, inside its family block (DP page)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("#") and 'engine="0"' in line:
            out.extend(line.replace('engine="0"', f'engine="{e}"') for e in engines)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def series(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def exposed(*snaps) -> dict[tuple[str, frozenset], float]:
    st = ExporterState.from_settings(ExporterSettings(windows=[60.0], min_drafts=1), started_at=0.0)
    for s in snaps:
        st.record_success(s, 0.0)
    return series(exposition(st))


# --- every name in the engine table, on the real capture -------------------------------------------

def test_every_engine_table_name_on_the_real_capture():
    s = snap(page("ngram-after"))
    (st,) = s.streams
    assert (st.model, st.rank) == ("tiny", "0")
    assert st.kv_pool_tokens == 8192 and st.kv_block_size == 128
    assert st.kv_usage_ratio == 0.0
    assert (st.spec.drafts, st.spec.draft_tokens, st.spec.accepted_tokens) == (522, 1473, 1170)
    assert st.spec.accepted_per_position == (446, 393, 331)
    assert st.ttft.count == 11 and st.ttft.buckets[-1] == (float("inf"), 11)
    assert (st.prompt_tokens, st.generation_tokens) == (651, 1840)
    assert (st.requests_running, st.requests_waiting, st.preemptions) == (0, 0, 0)
    assert st.context_cap_tokens is None  # not in /metrics: from /v1/models (below)
    start_line = next(ln for ln in page("ngram-after").splitlines() if ln.startswith("process_start_time_seconds "))
    assert s.process_start_time == pytest.approx(float(start_line.split()[1]))


def test_every_family_the_adapter_reads_is_in_the_captures_or_renamed():
    seen = set()
    for f in FIX.glob("metrics-*.txt"):
        seen |= {k.split(":", 1)[1] for k in parse_page(f.read_text(), adapter("vllm").families) if ":" in k}
    old_itl = {f"time_per_output_token_seconds{s}" for s in ("_bucket", "_count", "_sum")}  # ITL's name until 0.13
    assert set(adapter("vllm").families) - seen == {"gpu_cache_usage_perc", *old_itl}  # the pre-0.9.2 name


@pytest.mark.parametrize("name", ["nospec-after", "draft-after", "draftself-after", "ngram-after",
                                  "ngram-kvmetrics-after"])
def test_autodetects_vllm_on_every_capture(name):
    assert detect(page(name)) == "vllm"


# --- kv usage: kv_cache_usage_perc (>= 0.9.2) else gpu_cache_usage_perc ----------------------------

def test_kv_cache_usage_perc_is_read():
    s = snap(page("ngram-during"))
    assert s.streams[0].kv_usage_ratio == pytest.approx(0.06349206349206349)
    assert "vllm>=0.9.2: kv_cache_usage_perc" in s.version_hints


def test_gpu_cache_usage_perc_on_older_vllm():
    old = page("ngram-during").replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    s = snap(old)
    assert s.streams[0].kv_usage_ratio == pytest.approx(0.06349206349206349)
    assert "vllm<0.9.2: gpu_cache_usage_perc" in s.version_hints


def test_new_usage_name_wins_when_both_are_present():
    both = page("ngram-during").replace(
        "# HELP vllm:kv_cache_usage_perc",
        'vllm:gpu_cache_usage_perc{engine="0",model_name="tiny"} 0.5\n# HELP vllm:kv_cache_usage_perc', 1)
    assert snap(both).streams[0].kv_usage_ratio == pytest.approx(0.06349206349206349)


# --- pool: kv_cache_size_tokens, else num_gpu_blocks x block_size ----------------------------------

def test_pool_prefers_kv_cache_size_tokens():
    text = cache_info(page("ngram-after"), kv_cache_size_tokens="6000")  # disagrees with 64 x 128
    assert snap(text).streams[0].kv_pool_tokens == 6000


def test_pool_from_blocks_times_block_size_without_kv_cache_size_tokens():
    text = cache_info(page("draft-after"), drop=("kv_cache_size_tokens",))  # draft arm: 51 blocks of 128
    st = snap(text).streams[0]
    assert st.kv_pool_tokens == 51 * 128 == 6528
    assert st.kv_block_size == 128


def test_num_gpu_blocks_none_means_unknown_not_zero():
    text = cache_info(page("ngram-after"), drop=("kv_cache_size_tokens",), num_gpu_blocks="None")
    s = snap(text)
    assert s.streams[0].kv_pool_tokens is None
    assert 'num_gpu_blocks="None": allocated pool unknown' in s.version_hints
    assert not any(n == "specgate_kv_pool_tokens" for n, _ in exposed(s))


def test_dp_summed_num_gpu_blocks_divided_by_engines_seen_with_a_hint():
    # vLLM DP puts the SUM (64 + 64 = 128) on every engine's cache_config_info
    text = cache_info(with_engines(page("ngram-after"), ("0", "1")), drop=("kv_cache_size_tokens",), num_gpu_blocks="128")
    s = snap(text)
    assert {(x.model, x.rank): x.kv_pool_tokens for x in s.streams} == {("tiny", "0"): 8192, ("tiny", "1"): 8192}
    assert any("num_gpu_blocks is the sum over 2 engines" in h for h in s.version_hints)


def test_dp_prefers_per_engine_kv_cache_size_tokens_and_needs_no_division():
    text = with_engines(cache_info(page("ngram-after"), num_gpu_blocks="115"), ("0", "1"))
    text, n = re.subn(r'(vllm:cache_config_info\{[^\n]*engine="1"[^\n]*kv_cache_size_tokens=")8192"', r'\g<1>6528"', text)
    assert n == 1  # engine 1 allocated fewer tokens than engine 0; the summed block count (115) fits neither
    s = snap(text)
    assert {x.rank: x.kv_pool_tokens for x in s.streams} == {"0": 8192, "1": 6528}
    assert not any("sum over" in h for h in s.version_hints)


# --- streams: one per (model, engine); cache_config_info has no model -------------------------------

def test_one_stream_per_model_and_engine_counters_not_summed_across_engines():
    s = snap(with_engines(page("ngram-after"), ("0", "1", "2")))
    assert {(x.model, x.rank) for x in s.streams} == {("tiny", "0"), ("tiny", "1"), ("tiny", "2")}
    assert all(x.spec.drafts == 522 for x in s.streams)


def test_cache_config_info_alone_forms_its_own_stream_with_model_null():
    lines = page("ngram-after").splitlines()
    only = [ln for ln in lines if ln.startswith(("# HELP vllm:cache_config_info", "# TYPE vllm:cache_config_info",
                                                  "vllm:cache_config_info"))]
    s = snap("\n".join(only) + "\n")
    assert [(x.model, x.rank, x.kv_pool_tokens) for x in s.streams] == [(None, "0", 8192)]
    assert snapshot_to_json(s)["streams"][0]["model"] is None


def test_cache_config_info_belongs_to_every_stream_with_its_engine_label():
    out = []  # a second model on the same engine, each copy inside its family block
    for ln in page("ngram-after").splitlines():
        out.append(ln)
        if not ln.startswith("#") and 'model_name="tiny"' in ln:
            out.append(ln.replace('model_name="tiny"', 'model_name="tiny-b"'))
    two_models = "\n".join(out) + "\n"
    s = snap(two_models)
    assert {(x.model, x.rank, x.kv_pool_tokens) for x in s.streams} == {("tiny", "0", 8192), ("tiny-b", "0", 8192)}


def test_cache_config_info_without_engine_labels_goes_to_the_only_stream():
    text = page("ngram-after").replace('engine="0",', "").replace(',engine="0"', "")
    s = snap(text)
    assert [(x.model, x.rank, x.kv_pool_tokens) for x in s.streams] == [("tiny", None, 8192)]


# --- spellings and *_created -----------------------------------------------------------------------

def test_underscore_spelling_gives_the_same_streams_and_windows():
    b, a = page("ngram-before"), page("ngram-after")
    ub, ua = b.replace("vllm:", "vllm_"), a.replace("vllm:", "vllm_")
    assert "vllm:" not in ua and detect(ua) == "vllm"
    assert snap(ua).streams == snap(a).streams
    w = window(ub, ua)[("tiny", "0")]
    assert w.acceptance_length == pytest.approx(1 + 1170 / 522)  # 3.241
    assert w.acceptance_rate == pytest.approx(1170 / 1473)  # 0.794


def test_mixed_spellings_on_one_page():
    a = page("ngram-after")
    mixed = a.replace("vllm:spec_decode_num_draft_tokens_total", "vllm_spec_decode_num_draft_tokens_total")
    mixed = mixed.replace("vllm:time_to_first_token_seconds", "vllm_time_to_first_token_seconds")
    assert snap(mixed).streams == snap(a).streams


def test_created_series_skipped_even_where_a_substring_match_would_take_them():
    text = page("ngram-after")
    naive = [float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines()
             if "spec_decode_num_drafts" in ln and not ln.startswith("#")]
    assert sorted(naive)[0] == 522 and sorted(naive)[1] > 1.7e9  # the trap: _created is a timestamp
    assert snap(text).streams[0].spec.drafts == 522
    assert not any(k.endswith("_created") for k in parse_page(text, None))


def test_created_series_before_total_and_typed_counter_still_skipped():
    text = page("ngram-after").replace(
        "# HELP vllm:spec_decode_num_drafts_total",
        "# TYPE vllm:spec_decode_num_drafts_created counter\n"
        'vllm:spec_decode_num_drafts_created{engine="0",model_name="tiny"} 1.79e9\n'
        "# HELP vllm:spec_decode_num_drafts_total", 1)
    assert snap(text).streams[0].spec.drafts == 522


# --- histograms: boundaries read from le -----------------------------------------------------------

def _scale_le(text: str, factor: float) -> str:
    def f(m: re.Match) -> str:
        return f'le="{float(m.group(1)) * factor!r}"'
    return "\n".join(re.sub(r'le="([0-9.e+-]+)"', f, ln) if ln.startswith("vllm:time_to_first_token_seconds_bucket")
                     else ln for ln in text.splitlines()) + "\n"


def test_ttft_boundaries_are_read_from_the_page():
    b, a = page("ngram-before"), page("ngram-after")
    w = window(b, a)[("tiny", "0")]
    w10 = window(_scale_le(b, 10.0), _scale_le(a, 10.0))[("tiny", "0")]
    assert w.ttft_seconds["p50"] is not None
    for q in ("p50", "p90", "p99"):
        assert w10.ttft_seconds[q] == pytest.approx(10 * w.ttft_seconds[q])


# --- context cap from /v1/models; API key to /v1/* only; Accept header ----------------------------

BASE = "http://vllm.test:8000"
MODELS = {"object": "list", "data": [{"id": "tiny", "object": "model", "max_model_len": 2048}]}
# The engine in these tests is a scripted loopback server (tests/exporter/loopback_engine.py): the
# exporter fetches with http.client, not requests, so a request mock would not see it.


def _guarded_models(request):
    """vLLM started with --api-key: /v1/* answers 401 without the bearer token."""
    if request.headers.get("Authorization") != "Bearer sekrit-token":
        return (401, {}, '{"error": "Unauthorized"}')
    import json
    return (200, {"Content-Type": "application/json"}, json.dumps(MODELS))


def test_api_key_from_env_sent_as_bearer_to_v1_only_and_accept_header_on_metrics(monkeypatch):
    monkeypatch.setenv("SPECGATE_ENGINE_API_KEY", "sekrit-token")
    with LoopbackEngine() as eng:
        eng.get("/metrics", body=page("ngram-after"))
        eng.add_callback("/v1/models", _guarded_models)
        eng.get("/version", json={"version": "0.32.0"})
        s = Scraper(eng.url).scrape()
    assert s.stream("tiny", "0").context_cap_tokens == 2048
    assert s.version == "0.32.0"
    headers = {c.path: c.headers for c in eng.calls}
    assert headers["/v1/models"]["Authorization"] == "Bearer sekrit-token"
    assert "Authorization" not in headers["/metrics"]
    assert "Authorization" not in headers["/version"]
    assert headers["/metrics"]["Accept"] == ACCEPT == "text/plain; version=0.0.4"


def test_without_the_key_a_guarded_engine_still_scrapes_and_context_is_unknown(monkeypatch):
    monkeypatch.delenv("SPECGATE_ENGINE_API_KEY", raising=False)
    with LoopbackEngine() as eng:
        eng.get("/metrics", body=page("ngram-after"))
        eng.add_callback("/v1/models", _guarded_models)
        eng.get("/version", status=404)
        s = Scraper(eng.url).scrape()
    assert s.stream("tiny", "0").context_cap_tokens is None
    assert s.stream("tiny", "0").spec.drafts == 522


def test_the_key_reaches_the_sidecar_settings_and_never_its_reprs(monkeypatch):
    monkeypatch.setenv("SPECGATE_ENGINE_API_KEY", "sekrit-token")
    st = ExporterSettings()
    assert st.engine_api_key.get_secret_value() == "sekrit-token"
    assert "sekrit" not in repr(st) and "sekrit" not in str(st.model_dump())
    assert "sekrit" not in repr(Scraper(BASE))


def test_context_cap_read_once_and_again_after_a_restart():
    restarted = START_RE.sub("process_start_time_seconds 1.8e+09", page("ngram-after"))
    with LoopbackEngine() as eng:
        for body in (page("ngram-before"), page("ngram-after"), restarted):
            eng.get("/metrics", body=body)
        eng.get("/v1/models", json=MODELS)
        eng.get("/v1/models", json={"data": [{"id": "tiny", "max_model_len": 4096}]})
        eng.get("/version", json={"version": "0.32.0"})
        sc = Scraper(eng.url, api_key=None)
        caps = [sc.scrape().stream("tiny", "0").context_cap_tokens for _ in range(3)]
    assert caps == [2048, 2048, 4096]
    assert sum(c.path.endswith("/v1/models") for c in eng.calls) == 2


def test_context_cap_asked_again_when_v1_models_failed_without_a_restart():
    # /v1/models answered 503 on the first scrape (engine busy): the cap must not stay unknown until the
    # engine restarts. Asked again after side_retry_seconds (0 here); an answered one is not asked again.
    with LoopbackEngine() as eng:
        eng.get("/metrics", body=page("ngram-after"))
        eng.get("/v1/models", status=503)
        eng.get("/v1/models", json=MODELS)
        eng.get("/version", json={"version": "0.32.0"})
        sc = Scraper(eng.url, api_key=None)
        sc.side_retry_seconds = 0.0
        caps = [sc.scrape().stream("tiny", "0").context_cap_tokens for _ in range(4)]
    assert caps == [None, 2048, 2048, 2048]
    assert sum(c.path.endswith("/v1/models") for c in eng.calls) == 2


# --- side info: the adapter reads its own endpoints (exporter.scrape calls it, with no engine branch) ---

def test_side_info_reads_v1_models_with_the_key_and_version_without() -> None:
    asked: list[tuple[str, bool]] = []
    docs = {"/v1/models": {"data": [{"id": "m", "max_model_len": 4096}, {"id": "n", "max_model_len": "x"}, 7]},
            "/version": {"version": "0.11.0"}}

    def get_json(path: str, v1: bool = False) -> dict | None:
        asked.append((path, v1))
        return docs.get(path)

    side = adapter("vllm").side_info(get_json)
    assert asked == [("/v1/models", True), ("/version", False)]
    assert side.max_model_len == {"m": 4096} and side.version == "0.11.0" and side.speculative is None
    assert not adapter("vllm").side_incomplete(side)


def test_side_info_of_failed_endpoints_is_unknown_and_incomplete() -> None:
    side = adapter("vllm").side_info(lambda path, v1=False: None)
    assert side.max_model_len == {} and side.version is None
    assert adapter("vllm").side_incomplete(side)
