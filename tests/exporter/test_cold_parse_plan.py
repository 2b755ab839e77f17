"""The plan's one zip over the page (`PagePlan.labels`) gives each family's pairs as a fresh parser reads them,
also when a family's samples are not one run of lines (interleaved families, repeats in between)."""

from __future__ import annotations

import pytest

from exporter.parse import PageParser
from tests.exporter.test_parse_plan import FAMILIES, both, moved

INTERLEAVED = (
    'vllm:num_requests_running{engine="0",model_name="m"} 1.0\n'
    'vllm:num_requests_waiting{engine="0",model_name="m"} 2.0\n'
    'vllm:num_requests_running{engine="0",model_name="m"} 9.0\n'  # a repeat: the first wins
    'vllm:num_requests_running{engine="1",model_name="m"} 3.0\n'
    'vllm:num_requests_waiting{engine="1",model_name="m"} 4.0\n'
    'vllm:num_requests_running{engine="2",model_name="m"} 5.0\n'
)


@pytest.mark.parametrize("by", [1.0, 2.0, 7.5])
def test_interleaved_families_and_repeats_read_by_plan_as_a_fresh_parser_reads_them(by: float) -> None:
    planned, fresh = both(INTERLEAVED, moved(INTERLEAVED, by))
    assert repr(planned) == repr(fresh)


def test_the_interleaved_page_is_read_by_plan() -> None:
    kept = PageParser(FAMILIES, usable_only=True)
    kept.parse(INTERLEAVED)
    dropped: dict[str, int] = {}
    got = kept.parse(moved(INTERLEAVED, 2.0), dropped)
    assert kept.read_by_plan and dropped == {"duplicate": 1}
    assert [(labels["engine"], v) for labels, v in got["vllm:num_requests_running"]] == \
        [("0", 2.0), ("1", 6.0), ("2", 10.0)]
    assert [(labels["engine"], v) for labels, v in got["vllm:num_requests_waiting"]] == [("0", 4.0), ("1", 8.0)]
