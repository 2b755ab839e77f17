"""Golden exposition files: recorded real captures in -> exact specgate_* text out, byte for byte.

The inputs are real vLLM 0.32 CPU captures (tests/fixtures/vllm/, from
../shared/reference/vllm-cpu/captures). Each scenario feeds them to the exporter's state at
fixed times; the expected files are tests/golden/*.prom. To regenerate after a deliberate
change of the output contract: SPECGATE_UPDATE_GOLDEN=1 pytest tests/exporter/test_golden.py,
then read the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exporter.collector import ExporterState, exposition
from exporter.scrape import read_file_snapshot, snapshot_from_text
from exporter.settings import ExporterSettings

VLLM = Path(__file__).parents[1] / "fixtures" / "vllm"
GOLDEN = Path(__file__).parents[1] / "golden"

SCENARIOS: dict[str, list[str]] = {
    # name: captures fed at t = start + 40 s, +70 s, +100 s ...
    "vllm-ngram": ["ngram-before", "ngram-during", "ngram-after"],
    "vllm-nospec": ["nospec-before", "nospec-during", "nospec-after"],
    "vllm-draft": ["draft-before", "draft-during", "draft-after"],
    "vllm-draftself": ["draftself-before", "draftself-during", "draftself-after"],
    # the engine restarts between the ngram "after" and the self-draft "after" capture (drafts go down)
    "vllm-restart": ["ngram-before", "ngram-after", "draftself-after"],
}


def render(names: list[str]) -> str:
    settings = ExporterSettings(windows=[30.0, 60.0], batch_window=30.0, min_drafts=1, acceptance_slo_target=2.0,
                                workload_demand_tokens=4096)
    first = read_file_snapshot(VLLM / f"metrics-{names[0]}.txt")
    start = first.process_start_time
    state = ExporterState.from_settings(settings, started_at=start - 5.0)  # sidecar up before the engine
    for i, name in enumerate(names):
        text = (VLLM / f"metrics-{name}.txt").read_text()
        state.record_success(snapshot_from_text(text, timestamp=start + 40.0 + 30.0 * i), duration=0.004)
    return exposition(state)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_golden_exposition(scenario: str) -> None:
    got = render(SCENARIOS[scenario])
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
    draftself = (GOLDEN / "vllm-draftself.prom").read_text()
    assert 'specgate_kv_pool_tokens{engine="vllm",model="tiny",pool="target",rank="0"} 4096.0' in draftself
