"""Our family-filtered parser against the reference: prometheus_client's text parser.

Differential: for every fixture page (real vLLM captures, hand-written SGLang pages) and for
hypothesis-generated valid pages, every sample of every wanted family has the same labels and
value in both. Then the edge cases DESIGN.md's "Traps" lists: cut pages, incomplete exposition,
duplicates, and pages that are not Prometheus text at all.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from exporter.derive import derive_window
from exporter.engines import adapter
from exporter.parse import PageParser, ParseError, parse_page
from exporter.scrape import ScrapeError, snapshot_from_text
from tests.exporter.oracle import split_prefix

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAGES = sorted([*FIXTURES.glob("vllm/*.txt"), *FIXTURES.glob("sglang/*.txt")])
FAMILY_SETS = {"vllm": adapter("vllm").families, "sglang": adapter("sglang").families, "all": None}
PLAIN = ("process_start_time_seconds",)

Flat = dict[tuple[str, frozenset], float]
# `make fuzz` runs the two differential tests below much longer (SPECGATE_FUZZ_EXAMPLES, e.g. 20000).
EXAMPLES = int(os.environ.get("SPECGATE_FUZZ_EXAMPLES", "300"))


def ours(text: str, wanted) -> Flat:
    return {(k, frozenset(labels.items())): v for k, samples in parse_page(text, wanted).items() for labels, v in samples}


def oracle(text: str, wanted) -> Flat:
    """prometheus_client's reading of the same page, keyed like ours ("<engine>:<base>").

    prometheus_client returns a series given twice twice; ours keeps the first (DESIGN.md "Traps"), so the
    oracle's reading is taken the same way: first one wins, whatever the order of its labels."""
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
            out.setdefault((key, frozenset(s.labels.items())), float(s.value))
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

label_values = st.one_of(
    st.text(alphabet=st.sampled_from(list('abz09 _-./:,={}#"\\\n\tµ✓<')), max_size=12),
    st.sampled_from(["<html>", "<!DOCTYPE html>", "a}b 5", "1_000"]))
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**12), max_value=10**15),
    st.sampled_from([0.0, -0.0, 1e-300, 5e-324, 1.7959585353645682e9]),
)
# How a line is laid out: indentation, the blanks between name, labels, value and timestamp (all
# accepted by prometheus_client and by us), and whether a label set ends with a comma.
layouts = st.fixed_dictionaries({
    "indent": st.sampled_from(["", "", " ", "\t", "  \t"]),
    "before_labels": st.sampled_from(["", "", " ", "\t"]),
    "sep": st.sampled_from([" ", " ", "\t", " \t", "  "]),
    "trailing_comma": st.booleans(),
})


def fmt_value(v: float | int) -> str:
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def fmt_labels(labels: dict[str, str], order: list[str] | None = None, trailing_comma: bool = False) -> str:
    if not labels:
        return ""
    esc = {k: v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for k, v in labels.items()}
    keys = order if order is not None else list(esc)
    return "{" + ",".join(f'{k}="{esc[k]}"' for k in keys) + ("," if trailing_comma else "") + "}"


def sample_line(name: str, labels: dict[str, str], value: str, lay: dict, ts: int | None = None,
                order: list[str] | None = None) -> str:
    lab = fmt_labels(labels, order, lay["trailing_comma"])
    return (lay["indent"] + name + (lay["before_labels"] + lab if lab else "") + lay["sep"] + value
            + ("" if ts is None else lay["sep"] + str(ts)))


@st.composite
def label_sets(draw, n: int) -> list[dict[str, str]]:
    names = draw(st.lists(st.sampled_from(LABEL_NAMES), unique=True, max_size=4))
    if not names:
        n = 1  # one series without labels: more would be the same series (a duplicate)
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
        lines.append(sample_line(name, labels, fmt_value(draw(numbers)), draw(layouts), ts))
        if draw(st.integers(0, 5)) == 0:  # the same series again, its labels in another order: counted once
            order = draw(st.permutations(list(labels)))
            lines.append(sample_line(name, labels, fmt_value(draw(numbers)), draw(layouts), None, order))
    return lines


@st.composite
def histogram_family(draw) -> list[str]:
    prefix, root = draw(st.sampled_from(PREFIXES)), draw(st.sampled_from(HIST_ROOTS))
    name = prefix + root
    lines = [f"# HELP {name} A generated histogram.", f"# TYPE {name} histogram"]
    les = sorted(set(draw(st.lists(st.floats(min_value=1e-4, max_value=1e4), min_size=1, max_size=6))))
    lay = draw(layouts)
    for labels in draw(label_sets(draw(st.integers(1, 2)))):
        counts = sorted(draw(st.lists(st.integers(0, 10**6), min_size=len(les) + 1, max_size=len(les) + 1)))
        for le, c in zip([*map(repr, les), "+Inf"], counts, strict=True):
            lines.append(sample_line(f"{name}_bucket", {**labels, "le": le}, repr(float(c)), lay))
        lines.append(sample_line(f"{name}_count", labels, repr(float(counts[-1])), lay))
        lines.append(sample_line(f"{name}_sum", labels, fmt_value(draw(numbers)), lay))
    return lines


noise_family = st.sampled_from([
    ["# HELP python_gc_objects_collected_total Objects collected during gc",
     "# TYPE python_gc_objects_collected_total counter",
     'python_gc_objects_collected_total{generation="0"} 12947.0'],
    ["# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
     "# TYPE process_start_time_seconds gauge", "process_start_time_seconds 1.79595850309e+09"],
    ["# A free comment line", ""],
    ["\t# an indented comment", "   ", "\t"],
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


def oracle_or_error(text: str, wanted) -> Flat | None:
    try:
        return oracle(text, wanted)
    except ValueError:
        return None


def ours_or_error(text: str, wanted) -> Flat | None:
    try:
        return ours(text, wanted)
    except ParseError:
        return None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=pages(), families=st.sampled_from(sorted(FAMILY_SETS)))
def test_generated_pages_match_the_oracle(text: str, families: str):
    assert same(ours(text, FAMILY_SETS[families]), oracle(text, FAMILY_SETS[families]))


# Mutations of one sample line. prometheus_client refuses most of them; some it accepts. Whatever it
# does with a line we want, we do too (lines we do not want are checked by their shape only).
MUTATIONS = {
    "underscore-in-value": lambda ln: re.sub(r"([0-9])(\s*$|\s+[0-9]+\s*$)", r"_\g<1>\2", ln, count=1),
    "underscore-in-number": lambda ln: re.sub(r"(\s)([0-9])([0-9.])", r"\1\2_\3", ln[::-1], count=1)[::-1],
    "label-name-twice": lambda ln: re.sub(r'\{([a-zA-Z_]+)="', r'{\1="x",\1="', ln, count=1),
    "reserved-label-name": lambda ln: ln.replace("{", '{__x="1",', 1),
    "unterminated-labels": lambda ln: ln.replace("}", "", 1),
    "unquoted-label-value": lambda ln: re.sub(r'="([a-z0-9]+)"', r"=\1", ln, count=1),
    "word-value": lambda ln: re.sub(r"[^\s]+$", "five", ln.rstrip()),
    "no-value": lambda ln: re.sub(r"\s+[^\s]+$", "", ln.rstrip()),
    "html-label-value": lambda ln: ln.replace('="', '="<html><body>', 1),
    "tab-separated": lambda ln: ln.replace(" ", "\t"),
    "indented": lambda ln: "  \t" + ln,
    "space-before-brace": lambda ln: ln.replace("{", " {", 1),
    "no-blank-after-brace": lambda ln: re.sub(r"\}\s+", "}", ln, count=1),
    "quoted-label-name": lambda ln: re.sub(r'\{([a-zA-Z_]+)=', r'{"\1"=', ln, count=1),
    "crlf": lambda ln: ln + "\r",
}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=pages(), families=st.sampled_from(sorted(FAMILY_SETS)), mutation=st.sampled_from(sorted(MUTATIONS)),
       pick=st.integers(0, 10**6))
def test_mutated_wanted_lines_refused_exactly_when_the_oracle_refuses(text: str, families: str, mutation: str,
                                                                     pick: int):
    wanted = FAMILY_SETS[families]
    lines = text.split("\n")
    candidates = [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")
                  and _wanted_line(ln, wanted)]
    if not candidates:
        return
    i = candidates[pick % len(candidates)]
    lines[i] = MUTATIONS[mutation](lines[i])
    mutated = "\n".join(lines)
    ref = oracle_or_error(mutated, wanted)
    mine = ours_or_error(mutated, wanted)
    if ref is None:
        assert mine is None, (mutation, lines[i])
    else:
        assert mine is not None and same(mine, ref), (mutation, lines[i])


def _wanted_line(line: str, wanted) -> bool:
    name = re.match(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", line)
    if name is None:
        return False
    engine, base = split_prefix(name.group(1))
    if engine is None:
        return name.group(1) in PLAIN
    return not base.endswith("_created") and (wanted is None or base in wanted)


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


def test_duplicate_series_are_taken_once_first_wins_and_counted():
    line = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 522.0\n'
    again = 'vllm:spec_decode_num_drafts_total{model_name="tiny", engine="0"} 530.0\n'  # other order, other blanks
    text = NGRAM.replace(line, line + again + line)
    dropped: dict[str, int] = {}
    got = parse_page(text, VLLM, dropped=dropped)["vllm:spec_decode_num_drafts_total"]
    assert got == [({"engine": "0", "model_name": "tiny"}, 522.0)]
    assert dropped == {"duplicate": 2}
    assert same(ours(text, VLLM), oracle(text, VLLM))  # the oracle read first-wins too
    assert snapshot_from_text(text, "vllm", timestamp=0.0).streams[0].spec.drafts == 522.0  # never 1574


def test_a_parser_kept_between_scrapes_reads_each_page_alone():
    parser = PageParser(VLLM)
    dropped: dict[str, int] = {}
    first = parser.parse(NGRAM, dropped)
    before = (FIXTURES / "vllm" / "metrics-ngram-before.txt").read_text()
    assert same({(k, frozenset(lb.items())): v for k, s in parser.parse(before, dropped).items() for lb, v in s},
                oracle(before, VLLM))
    assert parser.parse(NGRAM, dropped) == first and dropped == {}


def test_the_label_memory_is_bounded_under_churn():
    parser = PageParser(VLLM, label_cache_entries=100)
    for i in range(50):  # 500 new model names per scrape
        page = "".join(f'vllm:num_requests_running{{model_name="m{i}-{j}",engine="0"}} {j}\n' for j in range(10))
        got = parser.parse(page)
        assert len(got["vllm:num_requests_running"]) == 10
        assert len(parser._cache) <= 100


@pytest.mark.parametrize("line, value", [
    ('vllm:num_requests_running{model_name="m",engine="0"}\t3', 3.0),
    ('\tvllm:num_requests_running{model_name="m",engine="0"} 3', 3.0),
    ('   vllm:num_requests_running {model_name="m",engine="0"}\t \t3\t1700000000000', 3.0),
    ('vllm:num_requests_running{model_name="<html><body>", engine="0"} 3', 3.0),
    ('vllm:num_requests_running{"model_name"="m",engine="0"} 3', 3.0),
])
def test_layouts_prometheus_client_accepts_are_accepted(line: str, value: float):
    text = "# TYPE vllm:num_requests_running gauge\n" + line + "\n"
    got = parse_page(text, VLLM)["vllm:num_requests_running"]
    assert [v for _, v in got] == [value] and got[0][0]["engine"] == "0"
    assert same(ours(text, VLLM), oracle(text, VLLM))


@pytest.mark.parametrize("line", [
    'vllm:num_requests_running{model_name="m",engine="0"} 1_000',
    'vllm:num_requests_running{model_name="m",engine="0"} 3 1_700',
    'vllm:num_requests_running{model_name="m",model_name="n",engine="0"} 3',
    'vllm:num_requests_running{model_name="m",engine="0"} 3 x',
])
def test_lines_prometheus_client_refuses_are_refused(line: str):
    text = "# TYPE vllm:num_requests_running gauge\n" + line + "\n"
    with pytest.raises(ValueError):
        oracle(text, VLLM)
    with pytest.raises(ParseError):
        parse_page(text, VLLM)


def test_a_label_without_a_value_is_refused_where_prometheus_client_drops_it():
    # A deliberate difference (exporter/parse.py): prometheus_client reads `{model_name=,engine="0"}` as if
    # model_name were not there, which would put this sample on another stream.
    text = 'vllm:num_requests_running{model_name=,engine="0"} 3\n'
    assert oracle(text, VLLM) == {("vllm:num_requests_running", frozenset({("engine", "0")})): 3.0}
    with pytest.raises(ParseError):
        parse_page(text, VLLM)


def test_html_inside_a_label_value_on_the_first_line_is_not_a_refusal():
    text = 'vllm:num_requests_running{model_name="<html>",engine="0"} 2\n' + NGRAM
    assert parse_page(text, VLLM)["vllm:num_requests_running"][0] == ({"model_name": "<html>", "engine": "0"}, 2.0)


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
    "traceback-mid-page": NGRAM.replace("\n# HELP vllm:", '\nTraceback (most recent call last):\n  File "/x.py", line 3, in <module>'
                                        "\n    raise ValueError(1)\nValueError: 1\n# HELP vllm:", 1),
    "tab-separated-table-header": "Element\tValue\n" + NGRAM,
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
