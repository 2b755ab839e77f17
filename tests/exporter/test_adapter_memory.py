"""What an adapter remembers between scrapes (`SeriesKeys`, `HistogramMemo`) never changes a snapshot.

The exporter keeps one parser and one adapter per engine kind for its whole life (`PageReader`): the
parser hands out the same label mapping for a series on every page, and the adapter remembers each
series' stream key, the bucket layouts and, per histogram family, where each bucket series falls.
Every snapshot must equal the one a fresh parser and adapter make of the same page. Pages: the real
captures in tests/fixtures (vLLM 0.32 on CPU; SGLang 0.5.23 on CPU), and pages changed from them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.engines import adapter, common
from exporter.parse import PageParser

FIX = Path(__file__).resolve().parents[1] / "fixtures"
VLLM = [FIX / "vllm" / f"metrics-{arm}-{when}.txt" for arm in ("ngram", "draft", "nospec")
        for when in ("before", "during", "after")]
SGLANG = [FIX / "sglang" / f"sglang-0.5.23-{when}.txt" for when in ("before", "after")] + \
    [FIX / "sglang" / f"sglang-0.5.23-cpu-nospec-{when}.txt" for when in ("before", "after")]


def fresh(kind: str, text: str):
    ad = adapter(kind)
    return ad.snapshot(PageParser(ad.families, usable_only=True).parse(text), 0.0)


def changed_pages(text: str) -> list[str]:
    """The page itself, then with one TTFT bucket series more (a new model), one bucket value
    changed, one bucket gone, a bucket series written twice (the first is taken), and the TTFT
    buckets in reverse order (the adapter sorts them by `le`)."""
    lines = text.splitlines(keepends=True)
    ttft = [n for n, line in enumerate(lines) if "time_to_first_token_seconds_bucket{" in line]
    i, j = ttft[0], ttft[-1] + 1
    extra = lines[i].replace('model_name="', 'model_name="other-')
    bumped = lines[i].rsplit(" ", 1)[0] + " 12345.0\n"
    return [text, "".join(lines[:i] + [extra] + lines[i:]), "".join(lines[:i] + [bumped] + lines[i + 1:]),
            "".join(lines[:i] + lines[i + 1:]), "".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]),
            "".join(lines[:i] + lines[i:j][::-1] + lines[j:]), text]


@pytest.mark.parametrize(("kind", "paths"), [("vllm", VLLM), ("sglang", SGLANG)])
def test_a_kept_adapter_gives_what_a_fresh_one_gives_page_after_page(kind: str, paths: list[Path]) -> None:
    ad = adapter(kind)
    parser = PageParser(ad.families, usable_only=True)
    for path in paths:
        for text in changed_pages(path.read_text()):
            for _ in range(2):  # the second time round the family plans are in place
                assert ad.snapshot(parser.parse(text), 0.0) == fresh(kind, text), path.name


def test_a_planned_family_is_read_by_position_and_a_changed_one_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan is used when the bucket series are the last page's, and not when one differs."""
    text = (FIX / "vllm" / "metrics-ngram-after.txt").read_text()
    ad = adapter("vllm")
    parser = PageParser(ad.families, usable_only=True)
    calls: list[str] = []
    full = common._buckets_in_full

    def counting(rows, base, keys, memo):  # type: ignore[no-untyped-def]
        calls.append(base)
        return full(rows, base, keys, memo)

    changed = changed_pages(text)[2]  # one bucket value changed: same series, other value
    more = changed_pages(text)[1]  # one series more
    want_changed, want_more = fresh("vllm", changed), fresh("vllm", more)  # before counting: a fresh adapter plans
    monkeypatch.setattr(common, "_buckets_in_full", counting)
    first = ad.snapshot(parser.parse(text), 0.0)
    assert len(calls) == 3  # TTFT, TPOT, ITL: planned now
    assert ad.snapshot(parser.parse(text), 0.0) == first and len(calls) == 3  # by position
    assert ad.snapshot(parser.parse(changed), 0.0) == want_changed and len(calls) == 3
    assert ad.snapshot(parser.parse(more), 0.0) == want_more  # TTFT in full (and planned again)
    assert calls[3:] == ["vllm:time_to_first_token_seconds"]


def test_a_non_finite_bucket_on_a_planned_family_is_left_out_as_in_full() -> None:
    """A parser that keeps NaN (the oracle tests' kind) hands the adapter a NaN bucket: the plan is not
    used for that page, and the bucket is left out as the full path leaves it out."""
    text = (FIX / "vllm" / "metrics-ngram-after.txt").read_text()
    lines = text.splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if "time_to_first_token_seconds_bucket{" in line)
    nan_page = "".join(lines[:i] + [lines[i].rsplit(" ", 1)[0] + " NaN\n"] + lines[i + 1:])
    ad = adapter("vllm")
    parser = PageParser(ad.families)  # keeps NaN samples
    ad.snapshot(parser.parse(text), 0.0)
    got = ad.snapshot(parser.parse(nan_page), 0.0)
    want = adapter("vllm").snapshot(PageParser(ad.families).parse(nan_page), 0.0)
    assert got == want
    assert len(got.streams[0].ttft.les) == len(fresh("vllm", text).streams[0].ttft.les) - 1


def test_series_keys_start_over_when_full() -> None:
    keys = common.SeriesKeys(lambda labels: labels.get("model_name"), limit=4)
    mappings = [{"model_name": f"m{i}", "le": str(i)} for i in range(10)]
    assert [keys.key(m) for m in mappings] == [f"m{i}" for i in range(10)]
    assert [keys._entry(m)[2] for m in mappings] == [float(i) for i in range(10)]  # the le bound, as a float
    assert len(keys._memo) <= 4
