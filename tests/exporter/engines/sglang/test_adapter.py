"""SGLang adapter: every name in docs/operations/engines.md "What the exporter reads" and every SGLang trap, one test each.

Fixtures are tests/fixtures/sglang/*.txt, hand-written from the documented metric names (each
says in its first line which version it imitates). Expected numbers are computed by hand from
the fixture values; each test says which lines it uses.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.collect import exposition
from exporter.derive import derive_window
from exporter.engines import adapter, detect
from exporter.engines.base import SideInfo
from exporter.parse import parse_page
from exporter.scrape import ACCEPT, Scraper, snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState
from exporter.windows import WindowTracker
from tests.exporter.loopback_engine import LoopbackEngine

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "sglang"
M = "Qwen/Qwen3-8B"  # model of the 0.5.8 and 0.5.23 fixtures
NEXTN = "RadixArk/Qwen3.8-Flash-Next-NVFP4"  # model of the 0.4.9 fixtures and server_info (seed 000)


def page(name: str) -> str:
    return (FIX / name).read_text()


def snap(text: str, ts: float = 0.0, side: SideInfo | None = None):
    return snapshot_from_text(text, "auto", timestamp=ts, side=side)


def window(before: str, after: str, seconds: float = 60.0, min_drafts: float = 1):
    return {(w.model, w.rank): w for w in derive_window(snap(before, 0.0), snap(after, seconds), seconds, min_drafts)}


def key(labels: dict[str, str], **more: str) -> frozenset:
    return frozenset({**labels, **more}.items())


def series(text: str) -> dict[tuple[str, frozenset], float]:
    """Our exposition read back with prometheus_client's parser: (sample name, labels) -> value."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def side_from(name: str) -> SideInfo:
    """What SglangAdapter.side_info extracts, for adapter-level tests (the HTTP path is tested below)."""
    doc = json.loads(page(name))
    st = (doc.get("internal_states") or [{}])[0]
    return SideInfo(max_total_num_tokens=doc.get("max_total_num_tokens", st.get("max_total_num_tokens")),
                    context_length=doc.get("context_length"),
                    configured_max_total_tokens=doc.get("max_total_tokens"), version=doc.get("version"))


# --- fixtures say what they imitate --------------------------------------------------------------

@pytest.mark.parametrize("name,version", [
    ("sglang-0.4.9-before.txt", "0.4.9"), ("sglang-0.4.9-after.txt", "0.4.9"),
    ("sglang-0.5.8-before.txt", "0.5.8"), ("sglang-0.5.8-after.txt", "0.5.8"),
    ("sglang-0.5.8-idle-before.txt", "0.5.8"), ("sglang-0.5.8-idle-after.txt", "0.5.8"),
    ("sglang-0.5.23-before.txt", "0.5.23"), ("sglang-0.5.23-after.txt", "0.5.23"),
])
def test_fixture_header_names_the_imitated_version(name, version):
    first = page(name).split("\n", 1)[0]
    assert first.startswith(f"# specgate fixture: imitates SGLang {version} /metrics")
    assert "not a capture" in first
    assert detect(page(name)) == "sglang"


@pytest.mark.parametrize("name", ["get_server_info-0.4.9.json", "server_info-0.5.4.json"])
def test_server_info_fixtures_say_what_they_are(name):
    doc = json.loads(page(name))
    assert "not a capture" in doc["_specgate_fixture"]
    assert doc["max_total_tokens"] == 600000  # configured (seed 000: --max-total-tokens 600000)


# --- pool: gauge (>= 0.5.6) or server info; configured ceiling never taken for the allocated pool ---

def test_old_sglang_has_no_pool_gauge_so_pool_is_unknown_without_server_info():
    s = snap(page("sglang-0.4.9-after.txt"))
    (st,) = s.streams
    assert st.kv_pool_tokens is None and st.context_cap_tokens is None


@pytest.mark.parametrize("name", ["get_server_info-0.4.9.json", "server_info-0.5.4.json"])
def test_old_sglang_pool_and_context_from_server_info(name):
    s = snap(page("sglang-0.4.9-after.txt"), side=side_from(name))
    (st,) = s.streams
    assert st.kv_pool_tokens == 161728  # allocated (seed 000, NEXTN arm)
    assert st.kv_pool_configured_tokens == 600000  # configured ceiling, kept apart
    assert st.context_cap_tokens == 120000
    assert "sglang<0.5.6: max_total_num_tokens from server info" in s.version_hints


def test_pool_gauge_wins_over_server_info():
    s = snap(page("sglang-0.5.8-after.txt"), side=SideInfo(max_total_num_tokens=999, context_length=4096))
    (st,) = s.streams
    assert st.kv_pool_tokens == 161728  # sglang:max_total_num_tokens, both tp ranks
    assert st.context_cap_tokens == 4096  # 0.5.8 has no context_len gauge: from server info
    assert "sglang>=0.5.6: max_total_num_tokens gauge" in s.version_hints


def test_context_len_gauge_wins_over_server_info():
    s = snap(page("sglang-0.5.23-after.txt"), side=SideInfo(context_length=4096))
    assert {st.rank: st.context_cap_tokens for st in s.streams if st.rank is not None} == {"0": 120000, "1": 120000}


def _serve_engine(routes: dict[str, tuple[int, str, str]], seen: list) -> ThreadingHTTPServer:
    class H(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append((self.path, dict(self.headers)))
            code, ctype, body = routes.get(self.path, (404, "text/plain", "not found\n"))
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_old_sglang_over_real_loopback_http_pool_from_get_server_info_and_exposition_keeps_them_apart():
    seen: list = []
    srv = _serve_engine({
        "/metrics": (200, "text/plain; version=0.0.4", page("sglang-0.4.9-after.txt")),
        "/get_server_info": (200, "application/json", page("get_server_info-0.4.9.json")),
    }, seen)
    try:
        host, port = srv.server_address[:2]
        snap_ = Scraper(f"http://{host}:{port}", engine="auto", timeout=5.0).scrape()
    finally:
        srv.shutdown()
        srv.server_close()
    (st,) = snap_.streams
    assert (st.kv_pool_tokens, st.kv_pool_configured_tokens, st.context_cap_tokens) == (161728, 600000, 120000)
    assert snap_.version == "0.4.9"
    paths = [p for p, _ in seen]
    assert paths[0] == "/metrics" and "/server_info" in paths and "/get_server_info" in paths
    assert dict(seen[0][1])["Accept"] == ACCEPT
    st_ = ExporterState.from_settings(ExporterSettings(), started_at=0.0)
    st_.record_success(snap_, 0.0)
    got = series(exposition(st_))
    lab = {"engine": "sglang", "model": NEXTN, "rank": ""}
    assert got[("specgate_kv_pool_tokens", key(lab, pool="target"))] == 161728
    assert got[("specgate_kv_pool_configured_tokens", key(lab))] == 600000
    assert got[("specgate_context_cap_tokens", key(lab))] == 120000


def test_server_info_internal_states_pool_and_get_server_info_not_needed():
    with LoopbackEngine() as eng:  # a scripted loopback engine (tests/exporter/loopback_engine.py)
        eng.get("/metrics", body=page("sglang-0.4.9-after.txt"))
        eng.get("/server_info", json=json.loads(page("server_info-0.5.4.json")))
        s = Scraper(eng.url).scrape()
    assert s.streams[0].kv_pool_tokens == 161728  # only under internal_states[0]
    assert s.streams[0].kv_pool_configured_tokens == 600000
    assert [c.path.rsplit("/", 1)[1] for c in eng.calls] == ["metrics", "server_info"]


def test_server_info_missing_everywhere_leaves_pool_unknown_not_zero():
    with LoopbackEngine() as eng:
        eng.get("/metrics", body=page("sglang-0.4.9-after.txt"))
        eng.get("/server_info", status=404)
        eng.get("/get_server_info", body="<html>oops</html>")
        (st,) = Scraper(eng.url).scrape().streams
    assert st.kv_pool_tokens is None and st.kv_pool_configured_tokens is None and st.context_cap_tokens is None


# --- spec_accept_rate is never read; rate recomputed as (L-1)/(n-1) ---------------------------------

def test_spec_accept_rate_ignored_and_recomputed():
    w = window(page("sglang-0.5.8-before.txt"), page("sglang-0.5.8-after.txt"))[(M, None)]
    # after: spec_accept_length 2.83, spec_num_draft_tokens 4 -> (2.83-1)/(4-1) = 0.61 (gauge says 0.7075)
    assert w.acceptance_length == pytest.approx(2.83)
    assert w.acceptance_rate == pytest.approx(0.61)


def test_spec_accept_rate_value_does_not_change_anything():
    after = page("sglang-0.5.8-after.txt")
    changed = after.replace("} 0.7075", "} 0.01")
    assert changed != after
    a = window(page("sglang-0.5.8-before.txt"), after)[(M, None)]
    b = window(page("sglang-0.5.8-before.txt"), changed)[(M, None)]
    assert (a.acceptance_length, a.acceptance_rate) == (b.acceptance_length, b.acceptance_rate)
    assert "spec_accept_rate ignored (meaning changed at 0.5.6 and 0.5.11); rate recomputed" in snap(after).version_hints


def test_old_sglang_without_num_draft_tokens_has_length_but_no_rate():
    w = window(page("sglang-0.4.9-before.txt"), page("sglang-0.4.9-after.txt"))[(NEXTN, None)]
    assert w.acceptance_length == pytest.approx(2.83)
    assert w.acceptance_rate is None  # no spec_num_draft_tokens in 0.4.9: not made up
    assert w.position_acceptance_rate == ()  # gauge-only SGLang has no per-position rates


# --- idle: re-sent gauges are no new data ----------------------------------------------------------

def test_idle_resent_gauges_are_not_new_data():
    w = window(page("sglang-0.5.8-idle-before.txt"), page("sglang-0.5.8-idle-after.txt"))[(M, None)]
    assert w.generation_tokens == 0.0  # generation_tokens_total 52000 -> 52000
    assert w.acceptance_length is None and w.acceptance_rate is None


def test_idle_window_has_no_acceptance_series_in_the_exposition():
    st = ExporterState.from_settings(ExporterSettings(windows=[60.0], min_drafts=1), started_at=0.0)
    st.record_success(snap(page("sglang-0.5.8-idle-before.txt"), 0.0), 0.0)
    st.record_success(snap(page("sglang-0.5.8-idle-after.txt"), 60.0), 0.0)
    got = series(exposition(st))
    names = {n for n, _ in got}
    assert "specgate_spec_acceptance_length" not in names and "specgate_spec_acceptance_rate" not in names
    lab = {"engine": "sglang", "model": M, "rank": "", "window": "1m"}
    assert got[("specgate_decode_tokens_per_second", key(lab))] == 0.0  # generation did not grow


def test_gauge_window_after_generation_reports_the_gauge_once_generation_grew():
    tr = WindowTracker([60.0], 30.0, 1)
    tr.add(snap(page("sglang-0.5.8-before.txt"), 0.0))
    tr.add(snap(page("sglang-0.5.8-after.txt"), 60.0))
    (w,) = tr.sliding(60.0)
    assert w.acceptance_length == pytest.approx(2.83)


# --- SGLang >= 0.5.13: L = (dgen - drequests) / dverify (decode-only, vLLM's definition), per model -----

def test_verify_calls_give_length_per_model():
    ws = window(page("sglang-0.5.23-before.txt"), page("sglang-0.5.23-after.txt"))
    w = ws[(M, None)]
    # generation: (39000+13000) - (30000+10000) = 12000; verify: (13100+4700) - (10000+3600) = 4200;
    # finished requests (180+60) - (150+50) = 40, one prefill token each
    assert w.drafts == 4200
    assert w.acceptance_length == pytest.approx((12000 - 40) / 4200)  # 2.848 (SGLang's own 12000/4200: 2.857)
    assert w.accepted_tokens == 12000 - 40 - 4200
    assert w.draft_tokens == 4200 * (4 - 1)  # spec_num_draft_tokens 4 on both DP ranks
    assert w.acceptance_rate == pytest.approx(7760 / 12600)  # 0.616
    # the DP rank streams carry only scheduler gauges: no acceptance of their own
    assert ws[(M, "0")].acceptance_length is None and ws[(M, "1")].acceptance_length is None


def test_single_dp_rank_request_side_series_join_the_rank_stream():
    only0 = "".join(ln for ln in page("sglang-0.5.23-after.txt").splitlines(keepends=True) if 'dp_rank="1"' not in ln)
    before0 = "".join(ln for ln in page("sglang-0.5.23-before.txt").splitlines(keepends=True) if 'dp_rank="1"' not in ln)
    s = snap(only0)
    assert [(x.model, x.rank) for x in s.streams] == [(M, "0")]
    w = window(before0, only0)[(M, "0")]
    assert w.acceptance_length == pytest.approx((12000 - 40) / 4200)
    assert w.acceptance_rate == pytest.approx(7760 / 12600)


def test_verify_counter_reset_takes_the_window_from_the_later_page_alone():
    # swapped: verify 17800 -> 13600 went down: reset, L = (40000 - 200) / 13600 from the later page
    w = window(page("sglang-0.5.23-after.txt"), page("sglang-0.5.23-before.txt"))[(M, None)]
    assert w.reset is True
    assert w.acceptance_length == pytest.approx((40000 - 200) / 13600)


def test_no_request_counter_no_length():
    # fail closed: without num_requests_total the prefill tokens cannot be taken out, and generated / verify
    # (12000 / 4200 = 2.857) would overstate L; drafts stay, L, a and the accepted tokens are absent
    def strip(text: str) -> str:
        return "".join(ln for ln in text.splitlines(keepends=True) if "num_requests_total" not in ln)
    w = window(strip(page("sglang-0.5.23-before.txt")), strip(page("sglang-0.5.23-after.txt")))[(M, None)]
    assert w.drafts == 4200
    assert w.acceptance_length is None and w.acceptance_rate is None and w.accepted_tokens is None


# --- streams and labels ----------------------------------------------------------------------------

def test_one_stream_per_model_and_dp_rank():
    s = snap(page("sglang-0.5.23-after.txt"))
    assert {(x.model, x.rank) for x in s.streams} == {(M, None), (M, "0"), (M, "1")}
    assert len(s.streams) == 3
    by = {x.rank: x for x in s.streams}
    assert by["0"].kv_pool_tokens == by["1"].kv_pool_tokens == 161728
    assert by["0"].kv_usage_ratio == pytest.approx(0.2535) and by["1"].kv_usage_ratio == pytest.approx(0.1546)
    assert by["0"].kv_used_tokens == 41000 and by["1"].kv_used_tokens == 25000
    assert by[None].kv_pool_tokens is None  # no single pool for the per-model stream


def test_two_models_never_mix():
    a = page("sglang-0.5.23-after.txt")
    two = a + "".join(ln.replace(M, "other/model") for ln in a.splitlines(keepends=True) if not ln.startswith("#"))
    # the second model's samples are appended after the first model's families (still parseable)
    s = snap(two)
    assert len(s.streams) == 6
    assert {x.model for x in s.streams} == {M, "other/model"}
    assert s.stream("other/model", None).generation_tokens == 52000


def test_split_only_labels_folded_counters_summed_gauges_max():
    s = snap(page("sglang-0.5.23-after.txt"))
    by = {x.rank: x for x in s.streams}
    # is_streaming true + false
    assert by[None].prompt_tokens == 117000 + 39000
    assert by[None].generation_tokens == 39000 + 13000
    assert by[None].spec.verify_calls == 13100 + 4700
    assert by[None].ttft.count == 152 + 30
    assert dict(by[None].ttft.buckets)[0.5] == 110 + 22
    # tp_rank replicas and pid/engine_type/moe_ep_rank: max; priority split of num_queue_reqs: max
    assert by["0"].requests_running == 4 and by["1"].requests_running == 3
    assert by["0"].requests_waiting == 3 and by["1"].requests_waiting == 1


def test_split_only_labels_on_a_counter_pid_and_worker_addr_are_summed():
    base = page("sglang-0.5.23-after.txt")
    extra = (f'sglang:generation_tokens_total{{is_streaming="true",model_name="{M}",pid="77",worker_addr="10.0.0.2:1"}} 500.0\n')
    text = base.replace("# HELP sglang:spec_verify_calls_total", extra + "# HELP sglang:spec_verify_calls_total", 1)
    assert snap(text).stream(M, None).generation_tokens == 52000 + 500


def test_ttft_quantiles_from_bucket_deltas_with_boundaries_read_from_le():
    w = window(page("sglang-0.5.23-before.txt"), page("sglang-0.5.23-after.txt"))[(M, None)]
    # delta buckets (streaming + not): le 0.1:6, 0.25:24, 0.5:48, 1:59, 2.5:62, ..., +Inf:62
    assert w.ttft_seconds["p50"] == pytest.approx(0.25 + 0.25 * (31 - 24) / 24)
    assert w.ttft_seconds["p90"] == pytest.approx(0.5 + 0.5 * (55.8 - 48) / 11)
    assert w.ttft_seconds["p99"] == pytest.approx(1.0 + 1.5 * (61.38 - 59) / 3)


def test_queue_and_token_names():
    s = snap(page("sglang-0.4.9-after.txt"))
    (st,) = s.streams
    assert (st.requests_running, st.requests_waiting) == (6, 1)  # num_running_reqs, num_queue_reqs
    assert (st.prompt_tokens, st.generation_tokens) == (151000, 52000)
    assert st.kv_usage_ratio == pytest.approx(0.3) and st.kv_used_tokens == 48518  # token_usage, num_used_tokens
    assert st.preemptions is None  # SGLang has no preemption counter: absent, not 0


# --- spellings and *_created ----------------------------------------------------------------------

@pytest.mark.parametrize("version", ["0.4.9", "0.5.8", "0.5.23"])
def test_underscore_spelling_is_the_same_engine(version):
    b, a = page(f"sglang-{version}-before.txt"), page(f"sglang-{version}-after.txt")
    us = [x.replace("sglang:", "sglang_") for x in (b, a)]
    assert detect(us[1]) == "sglang"
    assert snap(us[1]).streams == snap(a).streams
    assert window(*us) == window(b, a)


def test_created_series_are_skipped():
    a = page("sglang-0.5.23-after.txt")
    created = (f'sglang:spec_verify_calls_created{{is_streaming="true",model_name="{M}"}} 1.7959585353645682e+09\n'
               f'sglang:generation_tokens_created{{is_streaming="true",model_name="{M}"}} 1.7959585353645682e+09\n')
    text = a.replace("# HELP sglang:num_running_reqs", created + "# HELP sglang:num_running_reqs", 1)
    parsed = parse_page(text, None)
    assert not any(k.endswith("_created") for k in parsed)
    assert snap(text).streams == snap(a).streams


def test_every_family_the_adapter_reads_is_in_a_fixture():
    seen = set()
    for f in FIX.glob("sglang-*.txt"):
        seen |= {k.split(":", 1)[1] for k in parse_page(f.read_text(), adapter("sglang").families) if ":" in k}
    assert seen == set(adapter("sglang").families)


# --- side info: the adapter reads its own endpoints (exporter.scrape calls it, with no engine branch) ---

def test_side_info_falls_back_to_get_server_info_and_walks_internal_states() -> None:
    asked: list[str] = []
    doc = {"version": "0.5.23", "context_length": 8192, "max_total_tokens": 8192, "speculative_algorithm": "EAGLE3",
           "speculative_num_draft_tokens": 4, "speculative_num_steps": 3,
           "internal_states": [{"max_total_num_tokens": 16384, "avg_spec_accept_length": 2.5}]}

    def get_json(path: str, v1: bool = False) -> dict | None:
        asked.append(path)
        return {} if path == "/server_info" else doc

    side = adapter("sglang").side_info(get_json)
    assert asked == ["/server_info", "/get_server_info"]
    assert (side.max_total_num_tokens, side.context_length, side.configured_max_total_tokens) == (16384, 8192, 8192)
    assert side.version == "0.5.23"
    assert side.speculative is not None and (side.speculative.algorithm, side.speculative.num_draft_tokens,
                                             side.speculative.num_steps, side.speculative.avg_accept_length) == \
        ("EAGLE3", 4, 3, 2.5)
    assert not adapter("sglang").side_incomplete(side)


def test_side_info_non_finite_numbers_are_unknown_not_a_crash() -> None:
    doc = {"max_total_num_tokens": float("inf"), "context_length": float("nan"), "max_total_tokens": True}
    side = adapter("sglang").side_info(lambda path, v1=False: doc)
    assert (side.max_total_num_tokens, side.context_length, side.configured_max_total_tokens) == (None, None, None)
    assert adapter("sglang").side_incomplete(side)
    assert adapter("sglang").side_incomplete(adapter("sglang").side_info(lambda path, v1=False: None))
