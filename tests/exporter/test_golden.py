"""Golden exposition files: recorded real captures in -> exact specgate_* text out, byte for byte.

The inputs are real vLLM 0.32 CPU captures (tests/fixtures/vllm/, recorded by
tools/refresh_captures.py; captures-summary.json there says how each arm ran). Each scenario feeds them to the exporter's state at
fixed times; the expected files are tests/golden/*.prom. To regenerate after a deliberate
change of the output contract: SPECGATE_UPDATE_GOLDEN=1 pytest tests/exporter/test_golden.py,
then read the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from exporter.collect import exposition
from exporter.engines.base import SideInfo
from exporter.engines.sglang import speculative_settings
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState
from tests.exporter.engines.sglang.test_restart_before_warmup import before_warmup

FIXTURES = Path(__file__).parents[1] / "fixtures"
VLLM = FIXTURES / "vllm"
GOLDEN = Path(__file__).parents[1] / "golden"

BEFORE_WARMUP = "~before-warmup"  # a fixture path suffix: the page as SGLang serves it before any request
# name: (fixture paths fed at t = start + 40 s, +70 s, +100 s ..., engine side info JSON or None)
SCENARIOS: dict[str, tuple[list[str], str | None]] = {
    "vllm-ngram": (["vllm/metrics-ngram-before", "vllm/metrics-ngram-during", "vllm/metrics-ngram-after"], None),
    "vllm-nospec": (["vllm/metrics-nospec-before", "vllm/metrics-nospec-during", "vllm/metrics-nospec-after"], None),
    "vllm-draft": (["vllm/metrics-draft-before", "vllm/metrics-draft-during", "vllm/metrics-draft-after"], None),
    "vllm-draftself": (["vllm/metrics-draftself-before", "vllm/metrics-draftself-during",
                        "vllm/metrics-draftself-after"], None),
    # the engine restarts between the ngram "after" and the self-draft "after" capture (drafts go down)
    "vllm-restart": (["vllm/metrics-ngram-before", "vllm/metrics-ngram-after", "vllm/metrics-draftself-after"], None),
    # these SGLang fixtures are hand-written from DESIGN.md's names (their first line says which version)
    "sglang-0.4.9": (["sglang/sglang-0.4.9-before", "sglang/sglang-0.4.9-after"], "sglang/get_server_info-0.4.9.json"),
    "sglang-0.5.8": (["sglang/sglang-0.5.8-before", "sglang/sglang-0.5.8-after"], None),
    "sglang-0.5.23": (["sglang/sglang-0.5.23-before", "sglang/sglang-0.5.23-after"], None),
    # real SGLang 0.5.23 CPU captures (tools/refresh_sglang_captures.py), with the /server_info the
    # exporter reads at its first scrape
    **{f"sglang-0.5.23-{arm}": ([f"sglang/0.5.23/{arm}/metrics-{w}" for w in ("before", "during", "after")],
                                f"sglang/0.5.23/{arm}/server_info-before.json")
       for arm in ("nospec", "ngram", "standalone", "eagle3")},
    # the e2e's restart on real pages: the old engine's last page, the restarted engine's page before its
    # warm-up (its 'before' page without a sample of any counter or histogram family: BEFORE_WARMUP), then
    # its real pages; SGLang has no process_start_time_seconds, the counters coming back lower are the restart
    "sglang-0.5.23-restart": (["sglang/0.5.23/ngram/metrics-after", "sglang/0.5.23/ngram/metrics-before"
                               + BEFORE_WARMUP, "sglang/0.5.23/ngram/metrics-before", "sglang/0.5.23/ngram/metrics-during",
                               "sglang/0.5.23/ngram/metrics-after"], "sglang/0.5.23/ngram/server_info-before.json"),
}


def restarted_later(texts: list[str]) -> list[str]:
    """The restart scenario's last capture with a start time after the first's: the self-draft run was
    recorded before the ngram run (its start time is 40 s earlier), and a start time moving back means
    another engine process behind the URL (design.md "Restarts"), not a restart. A restart's moves forward."""
    first = float(re.search(r"^process_start_time_seconds (\S+)$", texts[0], re.M).group(1))  # type: ignore[union-attr]
    last = re.sub(r"^process_start_time_seconds \S+$", f"process_start_time_seconds {first + 60.0!r}", texts[-1],
                  flags=re.M)
    return [*texts[:-1], last]


def side_info(path: str | None) -> SideInfo | None:
    """SGLang's /get_server_info, as exporter.scrape.Scraper reads it (pool, context, configured ceiling,
    speculative settings)."""
    if path is None:
        return None
    doc = json.loads((FIXTURES / path).read_text())
    return SideInfo(max_total_num_tokens=doc.get("max_total_num_tokens"), context_length=doc.get("context_length"),
                    configured_max_total_tokens=doc.get("max_total_tokens"), version=doc.get("version"),
                    speculative=speculative_settings(doc))


def render(names: list[str], side_path: str | None = None) -> str:
    settings = ExporterSettings(windows=[30.0, 60.0], batch_window=30.0, min_drafts=1, acceptance_slo_target=2.0,
                                workload_demand_tokens=4096)
    texts = [before_warmup((FIXTURES / f"{n.removesuffix(BEFORE_WARMUP)}.txt").read_text())
             if n.endswith(BEFORE_WARMUP) else (FIXTURES / f"{n}.txt").read_text() for n in names]
    if names == SCENARIOS["vllm-restart"][0]:
        texts = restarted_later(texts)
    side = side_info(side_path)
    first = snapshot_from_text(texts[0], timestamp=0.0)
    start = first.process_start_time if first.process_start_time is not None else 1.0e9
    state = ExporterState.from_settings(settings, started_at=start - 5.0)  # sidecar up before the engine
    for i, text in enumerate(texts):
        state.record_success(snapshot_from_text(text, timestamp=start + 40.0 + 30.0 * i, side=side), duration=0.004)
    return exposition(state)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_golden_exposition(scenario: str) -> None:
    got = render(*SCENARIOS[scenario])
    path = GOLDEN / f"{scenario}.prom"
    if os.environ.get("SPECGATE_UPDATE_GOLDEN") == "1":
        path.write_text(got)
    assert path.exists(), f"missing golden file {path}; run with SPECGATE_UPDATE_GOLDEN=1 once"
    assert got == path.read_text(), f"exposition differs from {path}"


def test_golden_files_say_what_the_counters_say() -> None:
    """Guard against blessing a wrong golden: spot-check values against the captures' own counters."""
    ngram = (GOLDEN / "vllm-ngram.prom").read_text()
    # ngram arm: 1,170 accepted / 522 drafts -> L = 1 + 1170/522 over the 60 s window (before -> after)
    assert f'specgate_spec_acceptance_length{{engine="vllm",model="tiny",rank="0",window="1m"}} {1 + 1170 / 522!r}' in ngram
    assert 'specgate_kv_pool_tokens{engine="vllm",model="tiny",pool="target",rank="0"} 8192.0' in ngram
    assert 'specgate_engine_ready_seconds{engine="vllm"} 40.0' in ngram
    nospec = (GOLDEN / "vllm-nospec.prom").read_text()
    assert "specgate_spec_acceptance" not in nospec and "specgate_spec_drafts_total" not in nospec
    restart = (GOLDEN / "vllm-restart.prom").read_text()
    assert 'specgate_engine_restarts_total{engine="vllm",model="tiny",rank="0"} 1.0' in restart
    # monotonic across the restart: 522 drafts before it + 460 from the self-draft run after it
    assert 'specgate_spec_drafts_total{engine="vllm",model="tiny",rank="0"} 982.0' in restart
    # the window spanning the restart is reset: values from the later capture alone (4.00 / 100%)
    assert 'specgate_spec_acceptance_length{engine="vllm",model="tiny",rank="0",window="30s"} 4.0' in restart
    sglang = (GOLDEN / "sglang-0.4.9.prom").read_text()
    # seed 000's numbers in the 0.4.9 server info: allocated 161,728 vs configured 600,000, never confused
    assert 'specgate_kv_pool_tokens{engine="sglang",model="RadixArk/Qwen3.8-Flash-Next-NVFP4",pool="target",rank=""} 161728.0' in sglang
    assert 'specgate_kv_pool_configured_tokens{engine="sglang",model="RadixArk/Qwen3.8-Flash-Next-NVFP4",rank=""} 600000.0' in sglang
    assert 'specgate_engine_info{engine="sglang",version="0.4.9",version_tested="true"} 1.0' in sglang
    # real SGLang NGRAM arm: L over the 1m window (before -> after) = (generated − finished requests) / verify
    # calls (decode-only, vLLM's definition), the engine's own counters in requests.json; k from /server_info
    # while spec_num_draft_tokens read 0 on 'before'
    real = json.loads((FIXTURES / "sglang" / "0.5.23" / "ngram" / "requests.json").read_text())["counters"]
    b, a = real["before"], real["after"]
    ngram_sg = (GOLDEN / "sglang-0.5.23-ngram.prom").read_text()
    length = (a["generation_tokens"] - b["generation_tokens"] - (a["requests"] - b["requests"])) \
        / (a["verify_calls"] - b["verify_calls"])
    assert f'specgate_spec_acceptance_length{{engine="sglang",model="tiny",rank="",window="1m"}} {length!r}' in ngram_sg
    assert f'specgate_spec_drafts_total{{engine="sglang",model="tiny",rank=""}} {a["verify_calls"]!r}' in ngram_sg
    assert 'specgate_kv_pool_tokens{engine="sglang",model="tiny",pool="target",rank=""} 8192.0' in ngram_sg
    assert ('specgate_engine_speculative_info{algorithm="NGRAM",engine="sglang",num_draft_tokens="4",'
            'num_steps="0"} 1.0') in ngram_sg
    assert f'specgate_kv_available_tokens{{engine="sglang",model="tiny",rank=""}} {a["kv_available_tokens"]!r}' \
        in ngram_sg
    restart_sg = (GOLDEN / "sglang-0.5.23-restart.prom").read_text()
    assert 'specgate_engine_restarts_total{engine="sglang",model="tiny",rank=""} 1.0' in restart_sg
    # the old engine's 104 verify calls + the restarted one's 104 from zero
    assert f'specgate_spec_drafts_total{{engine="sglang",model="tiny",rank=""}} {2 * a["verify_calls"]!r}' in restart_sg
    nospec_sg = (GOLDEN / "sglang-0.5.23-nospec.prom").read_text()
    assert "specgate_spec_" not in nospec_sg and "specgate_weight_memory_bytes" not in nospec_sg  # weights <= 0
    draftself = (GOLDEN / "vllm-draftself.prom").read_text()
    assert 'specgate_kv_pool_tokens{engine="vllm",model="tiny",pool="target",rank="0"} 4096.0' in draftself
