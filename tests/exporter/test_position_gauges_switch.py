"""`--position-gauges false` (fleet scale, docs/scale.md): the per-position windowed gauges go, nothing else.

On the real ngram capture (k = 3, windows 30s and 1m) the exposition equals the golden file minus the
`specgate_spec_position_acceptance_rate` family (6 series per stream here: k x windows); the
per-position counters, from which p_i is still computed in PromQL, stay.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from exporter.collect import exposition
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings, add_run_arguments, settings_from_args
from exporter.state import ExporterState

FIXTURES = Path(__file__).parents[1] / "fixtures" / "vllm"
GOLDEN = Path(__file__).parents[1] / "golden" / "vllm-ngram.prom"
FAMILY = "specgate_spec_position_acceptance_rate"


def _render(**over: object) -> str:
    settings = ExporterSettings(windows=[30.0, 60.0], batch_window=30.0, min_drafts=1, acceptance_slo_target=2.0,
                                workload_demand_tokens=4096, **over)
    texts = [(FIXTURES / f"metrics-ngram-{n}.txt").read_text() for n in ("before", "during", "after")]
    first = snapshot_from_text(texts[0], timestamp=0.0)
    start = first.process_start_time if first.process_start_time is not None else 1.0e9
    state = ExporterState.from_settings(settings, started_at=start - 5.0)
    for i, text in enumerate(texts):
        state.record_success(snapshot_from_text(text, timestamp=start + 40.0 + 30.0 * i), duration=0.004)
    return exposition(state)


def test_switch_drops_only_the_per_position_gauges() -> None:
    golden = GOLDEN.read_text()
    assert _render() == golden  # default: unchanged
    off = _render(position_gauges=False)
    expected = "".join(line for line in golden.splitlines(keepends=True) if FAMILY not in line)
    assert off == expected
    assert sum(FAMILY + "{" in line for line in golden.splitlines()) == 6
    assert "specgate_spec_accepted_tokens_per_position_total{" in off


def test_flag_and_environment(monkeypatch: object) -> None:
    p = argparse.ArgumentParser()
    add_run_arguments(p)
    assert settings_from_args(p.parse_args(["--position-gauges", "false"])).position_gauges is False
    assert settings_from_args(p.parse_args([])).position_gauges is True
