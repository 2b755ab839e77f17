"""TPOT and ITL window quantiles (specgate_tpot_seconds, specgate_itl_seconds; `tpot_seconds` / `itl_seconds`
in the window JSON) equal hand computations from real captures' buckets.

Captures: tests/fixtures/vllm/metrics-ngram-{before,after}.txt (vLLM 0.32.0 on CPU, the first wave's ngram
arm) and tests/fixtures/sglang/sglang-0.5.23-cpu-nospec-{before,after}.txt (SGLang 0.5.23 on CPU, tiny
target, no speculation; the team's SGLang-CPU reference capture). Quantiles interpolate linearly inside
the bucket that holds rank q x count, from the previous bound (0 below the first), as histogram_quantile.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.derive import derive_window
from exporter.scrape import snapshot_from_text

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def window(before: Path, after: Path):
    b = snapshot_from_text(before.read_text(), timestamp=0.0)
    a = snapshot_from_text(after.read_text(), timestamp=60.0)
    (w,) = derive_window(b, a)
    return w


def test_vllm_ngram_tpot_and_itl_from_the_capture_buckets() -> None:
    w = window(FIX / "vllm/metrics-ngram-before.txt", FIX / "vllm/metrics-ngram-after.txt")
    # TPOT: 11 requests, all in (0, 0.01]: p = 0.01 x (q x 11) / 11
    assert w.tpot_seconds == {"p50": pytest.approx(0.005), "p90": pytest.approx(0.009), "p99": pytest.approx(0.0099)}
    # ITL: 667 observations for 1,840 tokens (one per engine step, not per token): 618 in (0, 0.01],
    # 49 in (0.01, 0.025]. p50 = 0.01 x 333.5/618; p90 = 0.01 x 600.3/618; p99 = 0.01 + 0.015 x (660.33 - 618)/49
    assert w.itl_seconds["p50"] == pytest.approx(0.01 * 333.5 / 618)
    assert w.itl_seconds["p90"] == pytest.approx(0.01 * 600.3 / 618)
    assert w.itl_seconds["p99"] == pytest.approx(0.01 + 0.015 * (660.33 - 618) / 49)
    doc = w.to_json()
    assert doc["tpot_seconds"] == w.tpot_seconds and doc["itl_seconds"]["p99"] == w.itl_seconds["p99"]


def test_sglang_cpu_tpot_from_the_capture_buckets() -> None:
    w = window(FIX / "sglang/sglang-0.5.23-cpu-nospec-before.txt", FIX / "sglang/sglang-0.5.23-cpu-nospec-after.txt")
    # TPOT deltas: 8 in (0.002, 0.004], 4 in (0.004, 0.006] (before: 1 there, after 13 by 0.006): 12 requests
    assert w.tpot_seconds["p50"] == pytest.approx(0.002 + 0.002 * 6 / 8)
    assert w.tpot_seconds["p90"] == pytest.approx(0.004 + 0.002 * (10.8 - 8) / 4)
    assert w.tpot_seconds["p99"] == pytest.approx(0.004 + 0.002 * (11.88 - 8) / 4)
    # ITL is absent from the before page (SGLang creates the family at its first streamed gap, 600 on the
    # after page): the window cannot tell what happened inside it, so no ITL value (absent, never 0),
    # the rule TTFT follows too
    assert w.itl_seconds == {}


def test_absent_histograms_are_absent_not_zero() -> None:
    w = window(FIX / "sglang/sglang-0.5.8-before.txt", FIX / "sglang/sglang-0.5.8-after.txt")
    assert w.tpot_seconds == {} and w.itl_seconds == {}
    assert w.to_json()["tpot_seconds"] == {"p50": None, "p90": None, "p99": None}


def test_vllm_itl_under_its_old_name() -> None:
    """Before 0.13 vLLM called the ITL histogram `vllm:time_per_output_token_seconds`: the same buckets
    under the old name give the same ITL (the renamed page is the real capture with the name replaced)."""
    pages = [(FIX / f"vllm/metrics-ngram-{x}.txt").read_text().replace(
        "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds") for x in ("before", "after")]
    b, a = snapshot_from_text(pages[0], timestamp=0.0), snapshot_from_text(pages[1], timestamp=60.0)
    (w,) = derive_window(b, a)
    assert w.itl_seconds["p50"] == pytest.approx(0.01 * 333.5 / 618)


# --- the windows' quantile pass against its definition ------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from exporter import formulas  # noqa: E402


@settings(max_examples=1000, deadline=None)
@given(bounds=st.lists(st.one_of(st.floats(-5, 50), st.just(float("inf")), st.just(0.0)), max_size=6),
       counts=st.lists(st.sampled_from([0.0, 1.0, 2.0, 10.0, 11.0]), min_size=6, max_size=6))
def test_histogram_quantiles_is_histogram_quantile_per_q(bounds: list[float], counts: list[float]) -> None:
    """`formulas.histogram_quantiles` (one pass over sorted bounds, what the windows use) gives what
    `formulas.histogram_quantile` gives for each quantile, for sorted, unsorted and repeated bounds."""
    les, cs = tuple(bounds), tuple(counts[: len(bounds)])
    qs = (0.5, 0.9, 0.99)
    expected = [formulas.histogram_quantile(q, list(zip(les, cs, strict=True))) for q in qs]
    assert formulas.histogram_quantiles(qs, les, cs) == expected
    les_sorted = tuple(sorted(set(les)))
    cs_sorted = tuple(sorted(cs[: len(les_sorted)]))
    expected = [formulas.histogram_quantile(q, list(zip(les_sorted, cs_sorted, strict=True))) for q in qs]
    assert formulas.histogram_quantiles(qs, les_sorted, cs_sorted) == expected
