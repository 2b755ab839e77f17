"""`PageReader` checks a page's shape (`conforming`) once per plan: the pages one plan reads hold the same series.

On the real vLLM capture: a page that conforms is checked when its plan is made and not again while the
plan reads the next pages (counted by wrapping `conforming`); a page whose per-position family lacks its
`position` label is left out and counted as `shape` on every scrape, planned or not; a page that breaks the
plan is checked again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter import scrape
from exporter.scrape import PageReader

CAPTURE = (Path(__file__).resolve().parent.parent / "fixtures" / "vllm" / "metrics-ngram-after.txt").read_text()
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times `PageReader` called `conforming` (the real one)."""
    calls: list[int] = []
    real = scrape.conforming

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(scrape, "conforming", counted)
    return calls


DRAFTS = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 522.0\n'


def moved(text: str, step: int) -> str:
    """`text` with the drafts counter advanced by `step` (what the next scrape of a busy engine shows)."""
    assert DRAFTS in text
    return text.replace(DRAFTS, DRAFTS.replace("522.0", f"{522 + step}.0"))


def test_a_conforming_page_is_checked_once_per_plan(checks: list[int]) -> None:
    reader = PageReader("vllm")
    first = reader.read(CAPTURE, {})[1]
    assert len(checks) == 1 and PER_POSITION in first
    for step in range(1, 4):
        dropped: dict[str, int] = {}
        page = reader.read(moved(CAPTURE, step), dropped)[1]
        assert reader._parsers["vllm"][1].read_by_plan  # the planned path, which is what skips the check
        assert page == PageReader("vllm").read(moved(CAPTURE, step), {})[1] and dropped == {}
    assert len(checks) == 1 + 3  # the fresh readers' own checks; the kept reader checked only its first page
    broken = CAPTURE.replace('engine="0"', 'engine="1"', 1)  # another series: the plan does not fit
    reader.read(broken, {})
    assert not reader._parsers["vllm"][1].read_by_plan and len(checks) == 1 + 3 + 1


def test_a_family_without_its_label_is_left_out_on_every_scrape() -> None:
    reader = PageReader("vllm")
    text = CAPTURE.replace('position="', 'slot="')
    for step in range(3):
        dropped: dict[str, int] = {}
        page = reader.read(moved(text, step), dropped)[1]
        assert reader._parsers["vllm"][1].read_by_plan == (step > 0)
        assert PER_POSITION not in page and dropped == {"shape": 3}  # positions 0, 1, 2
