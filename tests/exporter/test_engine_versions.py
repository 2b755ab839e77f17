"""Engine versions the adapters were not checked against (exporter.engines.versions).

The tested ranges are the adapters' own data (vLLM 0.8–0.33, SGLang 0.4–0.5.23, TensorRT-LLM none);
the pages are the real vLLM 0.32 CPU captures (tests/fixtures/vllm/) served by a loopback engine whose
`/version` says what each test needs.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from exporter.collect import exposition
from exporter.engines import ADAPTERS, versions
from exporter.engines.versions import VersionRange, conforming, release
from exporter.parse import parse_page
from exporter.scrape import Scraper, snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState
from tests.exporter.loopback_engine import LoopbackEngine

VLLM = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"


def page(name: str) -> str:
    return (VLLM / f"metrics-{name}.txt").read_text()


@pytest.mark.parametrize(("text", "rel"), [("0.32.0", (0, 32, 0)), ("v0.10.1rc1", (0, 10, 1)),
                                           ("0.5.23+cpu", (0, 5, 23)), ("1.3.0rc10", (1, 3, 0)),
                                           ("dev", None), ("", None), (None, None)])
def test_release_numbers(text, rel):
    assert release(text) == rel


@pytest.mark.parametrize(("kind", "version", "verdict"), [
    ("vllm", "0.8.0", "true"), ("vllm", "0.32.0", "true"), ("vllm", "0.33.4", "true"),
    ("vllm", "0.34.0", "false"), ("vllm", "0.7.3", "false"), ("vllm", "1.0.0", "false"),
    ("sglang", "0.4.9", "true"), ("sglang", "0.5.23", "true"), ("sglang", "0.5.24", "false"),
    ("sglang", "0.3.6", "false"), ("vllm", None, "unknown"), ("vllm", "main", "unknown"),
    ("trtllm", "1.3.0", "unknown"),  # no range: nothing was checked against a running TensorRT-LLM
])
def test_each_adapters_range(kind, version, verdict):
    assert versions.tested(versions.tested_range(ADAPTERS[kind]), version) == verdict


def test_a_range_admits_every_patch_of_its_last_number():
    rng = VersionRange((0, 4), (0, 5, 23), "0.4–0.5.23", "test")
    assert rng.admits((0, 4)) and rng.admits((0, 5, 23, 1)) and not rng.admits((0, 5, 24))


def test_a_family_without_the_label_it_is_read_by_is_left_out_and_counted():
    """vLLM's per-position counter needs `position`; a page that dropped it is not summed into position
    nothing: the family is absent and its samples counted as shape."""
    ad = ADAPTERS["vllm"]()
    text = page("ngram-after").replace('position="', 'slot="')
    found: dict[str, int] = {}
    kept = conforming(ad, parse_page(text, ad.families), found)
    assert "vllm:spec_decode_num_accepted_tokens_per_pos_total" not in kept
    assert found == {"shape": 3}  # positions 0, 1, 2
    snap = snapshot_from_text(text)
    (st,) = snap.streams
    assert snap.anomalies.get("shape") == 3
    assert st.spec is not None and st.spec.accepted_per_position == () and st.spec.drafts == 522


def test_a_conforming_page_is_passed_through_untouched():
    ad = ADAPTERS["vllm"]()
    parsed = parse_page(page("ngram-after"), ad.families)
    found: dict[str, int] = {}
    assert conforming(ad, parsed, found) is parsed and found == {}


def _scrape_three(version: str, caplog: pytest.LogCaptureFixture) -> tuple[str, list[str]]:
    with LoopbackEngine() as eng:
        eng.get("/metrics", page("ngram-after"))
        eng.get("/version", json={"version": version})
        eng.get("/v1/models", json={"data": [{"id": "tiny", "max_model_len": 2048}]})
        scraper = Scraper(eng.url + "/metrics", timeout=2.0)
        st = ExporterState.from_settings(ExporterSettings(windows=[60.0]), started_at=0.0)
        with caplog.at_level(logging.WARNING, logger="exporter.engines.versions"):
            for _ in range(3):
                st.record_success(scraper.scrape(), 0.01)
        scraper.close()
    return exposition(st), [r.getMessage() for r in caplog.records if r.name == "exporter.engines.versions"]


def test_an_untested_version_is_said_once_and_labelled(caplog):
    text, said = _scrape_three("0.40.1", caplog)
    assert 'specgate_engine_info{engine="vllm",version="0.40.1",version_tested="false"} 1.0' in text
    assert len(said) == 1 and "vllm 0.40.1 is outside" in said[0] and "0.8–0.33" in said[0]


def test_a_tested_version_is_labelled_and_not_logged(caplog):
    text, said = _scrape_three("0.32.0", caplog)
    assert 'specgate_engine_info{engine="vllm",version="0.32.0",version_tested="true"} 1.0' in text
    assert said == []
    assert 'specgate_engine_anomalies_total{engine="vllm",reason="shape"} 0.0' in text
