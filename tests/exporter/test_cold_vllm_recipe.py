"""The vLLM adapter's recipe (`VllmAdapter._by_recipe`) gives what reading the page in full gives.

A page whose series are the last page's (the parser's label mappings, by identity) is normalised by
position: each stream's values are picked out of the families' values where the page read in full
found them. Every snapshot a kept adapter makes must equal the one a fresh adapter (the full reading)
makes of the same page, whichever path it took; and the recipe must be taken when only values moved.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from exporter.engines import adapter
from exporter.engines.vllm import VllmAdapter
from exporter.parse import PageParser
from tests.exporter.seed_pages import vllm_page
from tests.exporter.test_adapter_memory import changed_pages

FIX = Path(__file__).resolve().parents[1] / "fixtures"
PAGES = sorted((FIX / "vllm").glob("metrics-*.txt")) + sorted((FIX / "ray").glob("metrics-*.txt"))
_VALUE = re.compile(r"^([a-z_:]+(?:\{[^\n]*\})?) ([0-9.e+-]+)$", re.M)


def fresh(text: str, usable_only: bool = True):
    ad = adapter("vllm")
    return ad.snapshot(PageParser(ad.families, usable_only=usable_only).parse(text), 0.0)


def moved(text: str, by: float) -> str:
    """The page with every sample's value moved (the same series, the same order)."""
    return _VALUE.sub(lambda m: f"{m.group(1)} {float(m.group(2)) * by + by}", text)


def dp_page() -> str:
    """Two data-parallel engines of one model, and a second model on engine 0."""
    a = vllm_page(10, 30, 20, [8, 7, 5], generation=100, running=2, engine="0")
    b = vllm_page(11, 33, 21, [9, 7, 5, 1], generation=120, running=1, engine="1")
    c = vllm_page(0, 0, 0, [], generation=5, model="other", engine="0")
    skip = ("#", "process_start")
    c = "".join(line + "\n" for line in c.splitlines() if "cache_config_info" not in line)  # engine 0's pool: a's
    return a + "".join(line + "\n" for page in (b, c) for line in page.splitlines() if not line.startswith(skip))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_kept_adapter_gives_the_full_reading_page_after_page(path: Path) -> None:
    text = path.read_text()
    ad = adapter("vllm")
    parser = PageParser(ad.families, usable_only=True)
    for page in [*changed_pages(text), text, moved(text, 2.0), moved(text, 3.0), text]:
        for _ in range(2):
            assert ad.snapshot(parser.parse(page), 0.0) == fresh(page), path.name


def test_the_recipe_is_taken_when_only_values_moved_and_equals_the_full_reading(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ad = adapter("vllm")
    parser = PageParser(ad.families, usable_only=True)
    full: list[int] = []
    in_full = VllmAdapter._in_full

    def counted(self: VllmAdapter, *args: Any, **kwargs: Any) -> Any:
        full.append(self is ad)
        return in_full(self, *args, **kwargs)

    monkeypatch.setattr(VllmAdapter, "_in_full", counted)
    page = dp_page()
    for by in (1.0, 2.0, 5.0, 7.0):
        text = moved(page, by)
        snap = ad.snapshot(parser.parse(text), 0.0)
        assert snap == fresh(text)
    assert sum(full) == 1  # the first page in full, the others by recipe
    assert [(s.model, s.rank) for s in snap.streams] == [("m", "0"), ("m", "1"), ("other", "0")]
    assert snap.streams[1].spec is not None and len(snap.streams[1].spec.accepted_per_position) == 4


@pytest.mark.parametrize("usable_only", [True, False])
def test_unusual_values_take_the_full_path_or_match_it(usable_only: bool) -> None:
    """NaN (read as written by a parser that keeps it), -0.0 at a position, a series given twice with a
    label that folds away, a position past the limit: the kept adapter gives what the full reading gives."""
    base = dp_page()
    pages = [base, base.replace(' 8\n', ' -0.0\n', 1), base.replace(' 8\n', ' NaN\n', 1), base,
             base + 'vllm:generation_tokens_total{engine="0",model_name="m",extra="x"} 4.0\n',
             base + 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="99"} 1\n',
             base]
    ad = adapter("vllm")
    parser = PageParser(ad.families, usable_only=usable_only)
    for page in pages:
        for _ in range(2):
            got, want = ad.snapshot(parser.parse(page), 0.0), fresh(page, usable_only)
            assert got == want
            assert repr(got) == repr(want)  # -0.0 and 0.0 are equal: their spelling tells them apart
