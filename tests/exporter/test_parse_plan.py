"""A kept PageParser reads a page by its plan (the last page's positions) exactly as a fresh one reads it.

`PageParser.parse` keeps a `PagePlan` of the last page and, when the next page's wanted lines are the
same lines (names and label texts), builds the result from the values alone. These tests hold the
planned reading equal to the full one (a fresh parser, which has no plan) on the real vLLM capture and
on every way a next page can differ: values moved, a NaN / negative / infinite value, a repeated series,
a new or missing series, reordered lines, a timestamp, a value with `_`, a malformed value. Each case
parses the base page first so the plan exists, and checks that it did (`_plan`), so a test cannot pass
by never taking the planned path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.engines import adapter
from exporter.parse import PageParser, ParseError

CAPTURE = Path(__file__).resolve().parent.parent / "fixtures" / "vllm" / "metrics-ngram-after.txt"
FAMILIES = adapter("vllm").families

BASE = """# HELP vllm:num_requests_running Running
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
vllm:num_requests_running{engine="1",model_name="m"} 3.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.7
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 9.0
process_start_time_seconds 1.7e9
"""


def both(base: str, page: str, usable_only: bool = True) -> tuple[object, object]:
    """(planned reading, fresh reading) of `page`, each as (samples, dropped) or the ParseError text."""
    kept = PageParser(FAMILIES, usable_only=usable_only)
    kept.parse(base)
    assert kept._plan is not None  # the base page was planned: the next parse can take the planned path

    def read(p: PageParser) -> object:
        dropped: dict[str, int] = {}
        try:
            return p.parse(page, dropped), dropped
        except ParseError as e:
            return f"ParseError: {e}"
    return read(kept), read(PageParser(FAMILIES, usable_only=usable_only))


def moved(text: str, factor: float) -> str:
    """`text` with every sample value times `factor` (what the next scrape of a busy engine looks like)."""
    out = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            head, value = line.rsplit(" ", 1)
            line = f"{head} {float(value) * factor!r}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_the_real_capture_with_moving_values_is_read_by_plan_and_equal() -> None:
    capture = CAPTURE.read_text()
    kept = PageParser(FAMILIES, usable_only=True)
    kept.parse(capture)
    plan = kept._plan
    assert plan is not None
    for i in range(1, 4):
        page = moved(capture, 1 + 0.002 * i)
        dropped: dict[str, int] = {}
        got = kept.parse(page, dropped)
        assert kept._plan is plan  # read by the plan: the page had the same lines
        assert (got, dropped) == (PageParser(FAMILIES, usable_only=True).parse(page, {}), {})
        assert got["vllm:time_to_first_token_seconds_bucket"][0][1] == pytest.approx(
            PageParser(FAMILIES).parse(page)["vllm:time_to_first_token_seconds_bucket"][0][1])


def test_the_planned_result_shares_the_label_mappings() -> None:
    """The adapters key their memos by the parser's label mapping identity: the planned reading hands
    out the same mapping objects as the full one did."""
    kept = PageParser(FAMILIES, usable_only=True)
    first = kept.parse(BASE)
    second = kept.parse(moved(BASE, 2.0))
    for key, samples in first.items():
        assert [labels for labels, _ in samples] == [labels for labels, _ in second[key]]
        assert all(a is b for (a, _), (b, _) in zip(samples, second[key], strict=True))


@pytest.mark.parametrize("page", [
    moved(BASE, 1.5),
    BASE.replace("} 2.0", "} NaN"),
    BASE.replace("} 2.0", "} -2.0"),
    BASE.replace("} 2.0", "} +Inf"),
    BASE.replace("} 2.0", "} -0.0"),
    BASE.replace("} 2.0", "} 1e308").replace("} 3.0", "} 1e308"),  # the sum overflows: read in full
    BASE.replace('engine="1",model_name="m"} 3.0', 'engine="0",model_name="m"} 3.0'),  # a repeated series
    BASE.replace('engine="1"', 'engine="2"'),  # a new series
    BASE.replace('vllm:num_requests_running{engine="1",model_name="m"} 3.0\n', ""),  # one missing
    BASE.replace('{engine="0",model_name="m"} 2.0', '{model_name="m",engine="0"} 2.0'),  # same set, new text
    BASE.replace("} 2.0", "} 2.0 1700000000000"),  # a timestamp
    BASE.replace("} 2.0", "} 2_0"),
    BASE.replace("} 2.0", "} two"),
    BASE.replace("vllm:num_requests_running{", "vllm_num_requests_running{", 1),  # the other spelling
    BASE.replace("process_start_time_seconds 1.7e9\n", "process_start_time_seconds 1.7e9\n  oops\n"),
    BASE.replace("vllm:num_requests_running{engine=\"0\"", "vllm:num_requests_waiting{engine=\"0\"", 1),
    "\n".join(reversed(BASE.splitlines())) + "\n",
    BASE,
])
def test_every_kind_of_next_page_reads_as_a_fresh_parser_reads_it(page: str) -> None:
    planned, fresh = both(BASE, page)
    assert repr(planned) == repr(fresh)  # repr: NaN equals itself there, and -0.0 is not 0.0


@pytest.mark.parametrize("page", [BASE.replace("} 2.0", "} NaN"), BASE.replace("} 2.0", "} -2.0"), moved(BASE, 3.0)])
def test_without_usable_only_values_are_kept_as_written(page: str) -> None:
    planned, fresh = both(BASE, page, usable_only=False)
    assert repr(planned) == repr(fresh)


def test_repeats_are_counted_on_every_planned_page() -> None:
    page = BASE.replace('engine="1",model_name="m"} 3.0', 'engine="0",model_name="m"} 3.0')
    kept = PageParser(FAMILIES, usable_only=True)
    kept.parse(page)
    for _ in range(2):
        dropped: dict[str, int] = {}
        got = kept.parse(moved(page, 2.0), dropped)
        assert dropped == {"duplicate": 1}
        assert got["vllm:num_requests_running"] == [({"engine": "0", "model_name": "m"}, 4.0)]  # the first wins


def test_a_page_with_unusable_values_is_not_planned() -> None:
    """The plan is made only from a page whose every sample was kept: the next page is read in full."""
    kept = PageParser(FAMILIES, usable_only=True)
    kept.parse(BASE.replace("} 2.0", "} NaN"))
    assert kept._plan is None

