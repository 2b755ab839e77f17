"""The plan reads a page by its whole lines (`exporter.parse._lines_re`: each wanted line is its planned
head, the last page's text up to the value, then the value). A value that `float()` takes but the full
reading does not (whitespace `float()` strips, a second field after a form feed) must send the page to the
full reading, which decides; so must a line the full scan stops at that the plan did not have. Each case:
the planned reading equals a fresh parser's (tests/exporter/test_parse_plan.py's `both`, which checks the
plan existed).
"""

from __future__ import annotations

import pytest

from exporter.engines import adapter
from exporter.parse import PageParser
from tests.exporter.test_parse_plan import BASE, both

LINE = 'vllm:num_requests_running{engine="0",model_name="m"} 2.0\n'


@pytest.mark.parametrize("value", [
    "2.5", "2.0 \x0c", "2.0\x0c", "\x0c2.0", "2.0\xa0", "2.0\u2028", "2.0\t", "2.0 ", "2.0\r", "2}", "2.0 3.0 4.0",
    "\u0662.5", "1e3", "inf", "nan", "", "2.0}",
])
def test_a_planned_line_with_another_value_text_reads_as_in_full(value: str) -> None:
    assert LINE in BASE
    planned, fresh = both(BASE, BASE.replace(LINE, LINE.replace(" 2.0\n", f" {value}\n")))
    assert repr(planned) == repr(fresh)


@pytest.mark.parametrize("extra", [
    "<html>\n", "  oops\n", '  vllm:num_requests_running{engine="9",model_name="m"} 1.0\n',
    'vllm:num_requests_running {engine="8"} 1.0\n', "vllm:num_requests_running\n", "vllm:num_requests_running{\n",
    "vllm:num_requests_running_extra 1.0\n", "\n", "# a comment\n",
])
def test_a_line_the_plan_did_not_have_reads_as_in_full(extra: str) -> None:
    page = BASE.replace(LINE, LINE + extra)
    planned, fresh = both(BASE, page)
    assert repr(planned) == repr(fresh)


def test_a_page_with_timestamps_or_trailing_blanks_is_not_planned_and_reads_as_in_full() -> None:
    """Its lines are not `head value`: read in full every time (engines write neither)."""
    families = adapter("vllm").families
    for page in (BASE.replace("} 2.0\n", "} 2.0 1700000000000\n"), BASE.replace("\n", "\r\n"),
                 BASE.replace("} 2.0\n", "} 2.0 \n")):
        kept = PageParser(families, usable_only=True)
        first = kept.parse(page)
        assert kept._plan is None
        assert repr(kept.parse(page)) == repr(first) == repr(PageParser(families, usable_only=True).parse(page))
