"""A family's whole histograms read by position (`common._whole_by_plan`) equal the full assembly.

When a page's bucket, count and sum series are the last page's (the parser's label mappings, by identity)
and all finite, `histograms` picks every stream's counts, count and sum out of the values by position.
Whatever path a kept memo takes, the result must be what `histograms` without a memo assembles.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from exporter.engines import common
from exporter.engines.base import StreamKey
from exporter.engines.vllm import _key
from exporter.parse import PageParser
from tests.exporter.test_adapter_memory import changed_pages
from tests.exporter.test_cold_vllm_recipe import moved

FIX = Path(__file__).resolve().parents[1] / "fixtures"
PAGES = sorted((FIX / "vllm").glob("metrics-*.txt")) + sorted((FIX / "ray").glob("metrics-*.txt"))
BASES = ("vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
         "vllm:request_time_per_output_token_seconds", "vllm:time_per_output_token_seconds")
FAMILIES = [b.split(":", 1)[1] + s for b in BASES for s in ("_bucket", "_count", "_sum")]


def full(page: Any, base: str) -> dict[StreamKey, Any]:
    return common.histograms(page, base, common.SeriesKeys(_key))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_kept_memo_gives_the_full_assembly_page_after_page(path: Path) -> None:
    text = path.read_text()
    keys, memo = common.SeriesKeys(_key), common.HistogramMemo[StreamKey]()
    parser = PageParser(FAMILIES, usable_only=True)
    for page_text in [*changed_pages(text), moved(text, 2.0), moved(text, 3.0), text]:
        for _ in range(2):
            page = parser.parse(page_text)
            for base in BASES:
                assert common.histograms(page, base, keys, memo) == full(page, base)


def _rows(n: int, value: float = 1.0) -> list[tuple[dict[str, str], float]]:
    return [({"model_name": "m", "engine": "0", "le": str(le)}, value * (i + 1)) for i, le in enumerate(range(n))]


def test_unusual_count_and_sum_series_match_the_full_assembly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count given twice for one stream (added up), a stream with a count and no buckets, a NaN sum,
    -0.0 sums: each page by a kept memo equals the full assembly, and the whole plan is taken only for a
    page whose series are the planned ones."""
    a, b = {"model_name": "m", "engine": "0"}, {"model_name": "m", "engine": "1"}
    buckets = _rows(3)
    pages: list[dict[str, list[tuple[dict[str, str], float]]]] = [
        {"h_bucket": buckets, "h_count": [(a, 3.0), (b, 5.0)], "h_sum": [(a, -0.0)]},
        {"h_bucket": buckets, "h_count": [(a, 4.0), (b, 6.0)], "h_sum": [(a, 2.0)]},
        {"h_bucket": buckets, "h_count": [(a, 4.0), (a, 6.0)], "h_sum": [(a, 2.0)]},
        {"h_bucket": buckets, "h_count": [(a, 4.0), (a, 7.0)], "h_sum": [(a, 2.0)]},
        {"h_bucket": buckets, "h_count": [(a, 4.0)], "h_sum": [(a, math.nan)]},
        {"h_bucket": buckets, "h_count": [(a, 4.0)], "h_sum": [(a, 1.0)]},
        {"h_bucket": buckets, "h_count": [(a, 4.0)], "h_sum": [(a, -0.0)]},
        {"h_bucket": [(labels, math.inf) for labels, _ in buckets], "h_count": [(a, 4.0)], "h_sum": [(a, 1.0)]},
    ]
    keys, memo = common.SeriesKeys(_key), common.HistogramMemo[StreamKey]()
    taken: list[bool] = []
    whole = common._whole_by_plan

    def counted(*args: Any) -> Any:
        got = whole(*args)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(common, "_whole_by_plan", counted)
    for page in pages:
        for _ in range(2):
            got, want = common.histograms(page, "h", keys, memo), full(page, "h")
            assert got == want
            assert repr(sorted(got.items())) == repr(sorted(want.items()))  # -0.0 spelled as in full
    # p0 plans; p0, p1 by plan; p2 breaks it (a count twice); p3, p4 (NaN) have none; p5 plans; p5, p6 by
    # plan; p7 (±Inf buckets) breaks it
    assert taken == [True, True, True, False, True, True, True, False]
