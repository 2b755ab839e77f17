"""Our family-filtered parser against the reference: prometheus_client's text parser.

Differential: for every fixture page (real vLLM captures, hand-written SGLang pages) and for
hypothesis-generated valid pages, every sample of every wanted family has the same labels and
value in both. Then the edge cases DESIGN.md's "Traps" lists: cut pages, incomplete exposition,
duplicates, and pages that are not Prometheus text at all.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from exporter.derive import derive_window
from exporter.engines import adapter
from exporter.parse import ParseError, parse_page, split_prefix
from exporter.scrape import ScrapeError, snapshot_from_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAGES = sorted([*FIXTURES.glob("vllm/*.txt"), *FIXTURES.glob("sglang/*.txt")])
FAMILY_SETS = {"vllm": adapter("vllm").families, "sglang": adapter("sglang").families, "all": None}
PLAIN = ("process_start_time_seconds",)

Flat = dict[tuple[str, frozenset], float]


def ours(text: str, wanted) -> Flat:
    return {(k, frozenset(labels.items())): v for k, samples in parse_page(text, wanted).items() for labels, v in samples}


def oracle(text: str, wanted) -> Flat:
    """prometheus_client's reading of the same page, keyed like ours ("<engine>:<base>"); last duplicate wins."""
    out: Flat = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            engine, base = split_prefix(s.name)
            if engine is None:
                if s.name not in PLAIN:
                    continue
                key = s.name
            elif base.endswith("_created") or (wanted is not None and base not in wanted):
                continue
            else:
                key = f"{engine}:{base}"
            out[(key, frozenset(s.labels.items()))] = float(s.value)
    return out


def same(a: Flat, b: Flat) -> bool:
    if a.keys() != b.keys():
        return False
    return all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)


# --- every fixture page -----------------------------------------------------------------------------

@pytest.mark.parametrize("families", sorted(FAMILY_SETS))
@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_fixture_pages_match_the_oracle(path: Path, families: str):
    text = path.read_text()
    mine, ref = ours(text, FAMILY_SETS[families]), oracle(text, FAMILY_SETS[families])
    assert same(mine, ref), sorted(set(mine.items()) ^ set(ref.items()))[:5]
    if families != "all" and path.parent.name == families:
        assert mine  # the engine's own families are found on its pages


# --- hypothesis-generated valid pages ---------------------------------------------------------------

WANTED_BASES = sorted(adapter("vllm").families | adapter("sglang").families)
HIST_ROOTS = sorted({b.rsplit("_", 1)[0] for b in WANTED_BASES if b.endswith("_bucket")}) + ["request_queue_time_seconds"]
SCALARS = sorted(b for b in WANTED_BASES if not b.endswith(("_bucket", "_count", "_sum"))) + [
    "num_requests_waiting_by_reason", "spec_decode_num_drafts_created", "cache_hit_rate", "engine_sleep_state"]
PREFIXES = ["vllm:", "vllm_", "sglang:", "sglang_"]
LABEL_NAMES = ["model_name", "engine", "dp_rank", "tp_rank", "position", "is_streaming", "pid", "weird_Label_9"]

label_values = st.text(alphabet=st.sampled_from(list('abz09 _-./:,={}#"\\\nµ✓')), max_size=12)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**12), max_value=10**15),
    st.sampled_from([0.0, -0.0, 1e-300, 5e-324, 1.7959585353645682e9]),
)


def fmt_value(v: float | int) -> str:
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def fmt_labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    esc = {k: v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for k, v in labels.items()}
    return "{" + ",".join(f'{k}="{v}"' for k, v in esc.items()) + "}"


@st.composite
def label_sets(draw, n: int) -> list[dict[str, str]]:
    names = draw(st.lists(st.sampled_from(LABEL_NAMES), unique=True, max_size=4))
    sets = draw(st.lists(st.fixed_dictionaries({k: label_values for k in names}), min_size=n, max_size=n,
                         unique_by=lambda d: tuple(sorted(d.items()))))
    return sets


@st.composite
def scalar_family(draw) -> list[str]:
    prefix, base = draw(st.sampled_from(PREFIXES)), draw(st.sampled_from(SCALARS))
    name = prefix + base
    typ = "counter" if base.endswith("_total") else "gauge"
    lines = [f"# HELP {name} A generated {typ}.", f"# TYPE {name} {typ}"]
    for labels in draw(label_sets(draw(st.integers(1, 3)))):
        ts = draw(st.one_of(st.none(), st.integers(0, 2**41)))
        lines.append(f"{name}{fmt_labels(labels)} {fmt_value(draw(numbers))}" + ("" if ts is None else f" {ts}"))
    return lines


@st.composite
def histogram_family(draw) -> list[str]:
    prefix, root = draw(st.sampled_from(PREFIXES)), draw(st.sampled_from(HIST_ROOTS))
    name = prefix + root
    lines = [f"# HELP {name} A generated histogram.", f"# TYPE {name} histogram"]
    les = sorted(set(draw(st.lists(st.floats(min_value=1e-4, max_value=1e4), min_size=1, max_size=6))))
    for labels in draw(label_sets(draw(st.integers(1, 2)))):
        counts = sorted(draw(st.lists(st.integers(0, 10**6), min_size=len(les) + 1, max_size=len(les) + 1)))
        for le, c in zip([*map(repr, les), "+Inf"], counts, strict=True):
            lines.append(f"{name}_bucket{fmt_labels({**labels, 'le': le})} {float(c)!r}")
        lines.append(f"{name}_count{fmt_labels(labels)} {float(counts[-1])!r}")
        lines.append(f"{name}_sum{fmt_labels(labels)} {fmt_value(draw(numbers))}")
    return lines


noise_family = st.sampled_from([
    ["# HELP python_gc_objects_collected_total Objects collected during gc",
     "# TYPE python_gc_objects_collected_total counter",
     'python_gc_objects_collected_total{generation="0"} 12947.0'],
    ["# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
     "# TYPE process_start_time_seconds gauge", "process_start_time_seconds 1.79595850309e+09"],
    ["# A free comment line", ""],
])


@st.composite
def pages(draw) -> str:
    fams = draw(st.lists(st.one_of(scalar_family(), histogram_family(), noise_family), min_size=1, max_size=8))
    names = set()
    lines: list[str] = []
    for f in fams:
        key = f[0]
        if key in names:  # one block per family: a repeated family would be a different (invalid) page
            continue
        names.add(key)
        lines += f
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=pages(), families=st.sampled_from(sorted(FAMILY_SETS)))
def test_generated_pages_match_the_oracle(text: str, families: str):
    assert same(ours(text, FAMILY_SETS[families]), oracle(text, FAMILY_SETS[families]))


def test_label_escapes_and_special_values_by_hand():
    text = ('# TYPE vllm:num_requests_running gauge\n'
            'vllm:num_requests_running{model_name="a \\"quoted\\" \\\\ back\\nslash",engine="0"} NaN\n'
            'vllm:num_requests_running{model_name="x,y=z}{#",engine="1"} +Inf\n'
            'vllm:num_requests_running{model_name="m",engine="2",} -Inf 1700000000000\n')
    got = parse_page(text, {"num_requests_running"})["vllm:num_requests_running"]
    assert got[0][0] == {"model_name": 'a "quoted" \\ back\nslash', "engine": "0"} and math.isnan(got[0][1])
    assert got[1] == ({"model_name": "x,y=z}{#", "engine": "1"}, math.inf)
    assert got[2] == ({"model_name": "m", "engine": "2"}, -math.inf)
    assert same(ours(text, None), oracle(text, None))


# --- edge cases ------------------------------------------------------------------------------------

NGRAM = (FIXTURES / "vllm" / "metrics-ngram-after.txt").read_text()
VLLM = adapter("vllm").families


def test_page_cut_mid_line_drops_the_cut_line_and_uses_the_complete_ones():
    cut_at = NGRAM.index("vllm:spec_decode_num_drafts_total{") + len('vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 52')
    cut = NGRAM[:cut_at]  # "... 522.0" arrives as "... 52"
    got = parse_page(cut, VLLM)
    assert "vllm:spec_decode_num_drafts_total" not in got  # never the made-up 52
    complete = cut[: cut.rfind("\n") + 1]
    assert same(ours(cut, VLLM), oracle(complete, VLLM))
    start = float(next(ln for ln in NGRAM.splitlines() if ln.startswith("process_start_time_seconds ")).split()[1])
    assert got["process_start_time_seconds"] == [({}, start)]  # a complete line before the cut


def test_page_cut_right_after_a_newline_keeps_every_line():
    cut = NGRAM[: NGRAM.index("# HELP vllm:spec_decode_num_draft_tokens_total")]
    assert parse_page(cut, VLLM)["vllm:spec_decode_num_drafts_total"][0][1] == 522.0


def _without(text: str, predicate) -> str:
    return "".join(ln for ln in text.splitlines(keepends=True) if not predicate(ln))


def test_histogram_without_inf_is_parsed_for_what_it_has_and_has_no_quantile():
    before = (FIXTURES / "vllm" / "metrics-ngram-before.txt").read_text()
    no_inf = [_without(t, lambda ln: ln.startswith("vllm:time_to_first_token_seconds_bucket") and 'le="+Inf"' in ln)
              for t in (before, NGRAM)]
    snap = snapshot_from_text(no_inf[1], "vllm", timestamp=60.0)
    h = snap.streams[0].ttft
    assert h.count == 11 and len(h.buckets) == 22 and not math.isinf(h.buckets[-1][0])
    (w,) = derive_window(snapshot_from_text(no_inf[0], "vllm", timestamp=0.0), snap, 60.0)
    assert all(w.ttft_seconds.get(q) is None for q in ("p50", "p90", "p99"))
    assert w.acceptance_length == pytest.approx(1 + 1170 / 522)  # the rest of the page is used


def test_trailing_type_line_without_sample_is_fine():
    text = NGRAM + "# HELP vllm:num_requests_running x\n# TYPE vllm:brand_new_family gauge\n"
    assert same(ours(text, VLLM), ours(NGRAM, VLLM))
    assert same(ours(text, VLLM), oracle(text, VLLM))


def test_missing_family_is_absent_not_zero():
    text = _without(NGRAM, lambda ln: "kv_cache_usage_perc" in ln)
    st_ = snapshot_from_text(text, "vllm", timestamp=0.0).streams[0]
    assert st_.kv_usage_ratio is None
    assert st_.spec.drafts == 522


def test_duplicate_series_keep_the_last_value_from_the_page():
    line = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 522.0\n'
    text = NGRAM.replace(line, line + line.replace("522.0", "530.0"))
    got = parse_page(text, VLLM)["vllm:spec_decode_num_drafts_total"]
    assert got == [({"engine": "0", "model_name": "tiny"}, 530.0)]
    assert same(ours(text, VLLM), oracle(text, VLLM))  # the oracle's last sample too
    assert snapshot_from_text(text, "vllm", timestamp=0.0).streams[0].spec.drafts == 530.0  # not 1052


UI_TABLE = ("Element\tValue\n"
            'vllm:spec_decode_num_drafts_total{engine="0", instance="127.0.0.1:8000", job="vllm", model_name="tiny"}\t522\n'
            'vllm:spec_decode_num_accepted_tokens_total{engine="0", instance="127.0.0.1:8000", job="vllm", model_name="tiny"}\t1170\n')
NOT_EXPOSITION = {
    "html": "<!DOCTYPE html>\n<html><head><title>vLLM</title></head><body>502 Bad Gateway</body></html>\n",
    "html-after-blank": "\n\n  <html><body><pre>vllm:spec_decode_num_drafts_total 522</pre></body></html>\n",
    "json": '{"object": "list", "data": [{"id": "tiny", "max_model_len": 2048}]}\n',
    "prometheus-api-json": '{"status":"success","data":{"resultType":"vector","result":[{"metric":'
                           '{"__name__":"vllm:spec_decode_num_drafts_total"},"value":[1795958535.3,"522"]}]}}\n',
    "json-array": '[{"metric": "vllm:spec_decode_num_drafts_total", "value": 522}]\n',
    "prometheus-ui-table": UI_TABLE,
    "prometheus-ui-html": '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Prometheus Time Series '
                          'Collection and Processing Server</title></head><body><table><tr><td>'
                          'vllm:spec_decode_num_drafts_total{engine="0"}</td><td>522</td></tr></table></body></html>\n',
    "empty": "",
    "blank": "   \n\n\t\n",
    "only-a-cut-line": 'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 52',
    "indented-garbage-mid-page": NGRAM.replace("\n# HELP vllm:", "\n   Traceback (most recent call last):\n# HELP vllm:", 1),
    "html-mid-page": NGRAM.replace("\n# HELP vllm:", "\n<hr><center>nginx</center>\n# HELP vllm:", 1),
}


@pytest.mark.parametrize("name", sorted(NOT_EXPOSITION))
def test_pages_that_are_not_prometheus_text_are_refused(name: str):
    text = NOT_EXPOSITION[name]
    with pytest.raises(ParseError) as e:
        parse_page(text, VLLM)
    assert "\n" not in str(e.value)  # one line
    with pytest.raises(ScrapeError) as e2:
        snapshot_from_text(text, "auto", timestamp=0.0)
    assert e2.value.reason == "parse"


def test_malformed_wanted_line_is_refused_not_guessed():
    bad = NGRAM.replace('vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 522.0',
                        'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} five-hundred')
    with pytest.raises(ParseError, match="malformed sample value"):
        parse_page(bad, VLLM)
    unterminated = NGRAM.replace('vllm:num_requests_running{engine="0",model_name="tiny"} 0.0',
                                 'vllm:num_requests_running{engine="0",model_name="tiny 0.0')
    with pytest.raises(ParseError):
        parse_page(unterminated, VLLM)
