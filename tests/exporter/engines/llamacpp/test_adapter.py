"""exporter.engines.llamacpp: a llama-server b11434 page and its `/props` normalised to the contract.

Inputs: the real captures of tests/fixtures/llamacpp/<arm>/ (recorded from llama-server b11434 on these
CPUs by tools/refresh_llamacpp_captures.py; `summary.json` there says how each arm ran) and, for the
shapes no capture has (a restart, a position past the limit, a page before `/props` answered), small
pages written in the exact format of `server_task_result_metrics::to_metrics()` (llama.cpp b11434
tools/server/server-task.cpp): `# HELP` / `# TYPE` / one unlabelled sample per family, the per-position
family last. Expected numbers come from the captured pages' own counters (read here with a plain
regex, not the adapter), so a wrong reading fails.

The goldens tests/golden/llamacpp-<arm>.prom are rendered the way tests/exporter/test_golden.py renders
the other engines' (same settings and times; llama.cpp has no process start time, so the first page is
at 1e9 + 40 s); `SPECGATE_UPDATE_GOLDEN=1` rewrites them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from exporter.collect import exposition
from exporter.engines import adapter, detect, versions
from exporter.engines.llamacpp import LlamacppAdapter, build_version, side_info_from
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState

FIXTURES = Path(__file__).parents[3] / "fixtures" / "llamacpp"
GOLDEN = Path(__file__).parents[3] / "golden"
ARMS = tuple(sorted(p.name for p in FIXTURES.iterdir() if (p / "metrics-after.txt").exists())) \
    if FIXTURES.exists() else ()
SPEC_ARMS = tuple(a for a in ARMS if a != "nospec")


def page(prompt: float = 0, predicted: float = 0, drafts: float = 0, draft_tokens: float = 0, accepted: float = 0,
         per_pos: tuple[float, ...] = (), processing: float = 0, deferred: float = 0) -> str:
    """A page in to_metrics()'s format (counters, then gauges, then the per-position family if any)."""
    counters = {"prompt_tokens_total": prompt, "prompt_tokens_cached_total": 0, "prompt_seconds_total": 0.1,
                "tokens_predicted_total": predicted, "tokens_predicted_seconds_total": 0.2, "n_decode_total": predicted,
                "n_tokens_max": 64, "spec_decode_num_draft_tokens_total": draft_tokens,
                "spec_decode_num_accepted_tokens_total": accepted, "spec_decode_num_drafts_total": drafts}
    gauges = {"prompt_tokens_seconds": 100.0, "predicted_tokens_seconds": 50.0, "requests_processing": processing,
              "requests_deferred": deferred, "n_busy_slots_per_decode": 1}
    out = []
    for kind, items in (("counter", counters), ("gauge", gauges)):
        for name, v in items.items():
            out += [f"# HELP llamacpp:{name} x", f"# TYPE llamacpp:{name} {kind}", f"llamacpp:{name} {v:g}"]
    if per_pos:
        out += ["# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position",
                "# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter"]
        out += [f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {v:g}'
                for i, v in enumerate(per_pos)]
    return "\n".join(out) + "\n"


PROPS: dict[str, Any] = {"default_generation_settings": {"n_ctx": 512, "params": {"speculative.types": "draft-simple"}},
                         "total_slots": 4, "model_alias": "tiny", "build_info": "b11434-0000000"}


def counter(text: str, name: str) -> float:
    m = re.search(rf"^llamacpp:{name} (\S+)$", text, re.M)
    assert m, name
    return float(m.group(1))


def render(texts: list[str], props: dict[str, Any]) -> str:
    """test_golden.render's settings and clock: one page every 30 s from 1e9 + 40 s, the sidecar up 5 s before."""
    settings = ExporterSettings(windows=[30.0, 60.0], batch_window=30.0, min_drafts=1, acceptance_slo_target=2.0,
                                workload_demand_tokens=4096)
    side = side_info_from(props, {})
    start = 1.0e9
    state = ExporterState.from_settings(settings, started_at=start - 5.0)
    for i, text in enumerate(texts):
        state.record_success(snapshot_from_text(text, timestamp=start + 40.0 + 30.0 * i, side=side), duration=0.004)
    return exposition(state)


def test_detected_by_its_prefix_and_nothing_else() -> None:
    assert detect(page(prompt=1)) == "llamacpp"
    assert isinstance(adapter("llamacpp"), LlamacppAdapter)


def test_counters_map_to_the_contract() -> None:
    snap = snapshot_from_text(page(prompt=10, predicted=40, drafts=10, draft_tokens=30, accepted=12,
                                   per_pos=(7, 4, 1), processing=2, deferred=1), timestamp=1.0,
                              side=side_info_from(PROPS, {}))
    (s,) = snap.streams
    assert (s.model, s.rank, s.prompt_tokens, s.generation_tokens, s.requests_running, s.requests_waiting) == \
        ("tiny", None, 10.0, 40.0, 2.0, 1.0)
    assert s.spec is not None
    assert (s.spec.drafts, s.spec.draft_tokens, s.spec.accepted_tokens, s.spec.accepted_per_position) == \
        (10.0, 30.0, 12.0, (7.0, 4.0, 1.0))
    # /props: 512 per slot x 4 slots; the request's cap is one slot's context
    assert (s.kv_pool_tokens, s.context_cap_tokens) == (2048, 512)
    assert any("total_slots 4" in h for h in snap.version_hints)
    # no latency distribution on llama.cpp's page: absent, never 0
    assert (s.ttft, s.tpot, s.itl, s.kv_usage_ratio) == (None, None, None, None)
    assert snap.process_start_time is None


def test_zero_spec_counters_are_values() -> None:
    # every llama-server writes the three totals (0 without speculation): read as values, so the exporter's
    # count starts at the first page, not at the first round (the real draft arm lost 496 drafts otherwise)
    (s,) = snapshot_from_text(page(prompt=5, predicted=9), timestamp=1.0, side=side_info_from(PROPS, {})).streams
    assert s.spec is not None and (s.spec.drafts, s.spec.draft_tokens, s.spec.accepted_tokens) == (0.0, 0.0, 0.0)
    # a page without them (not b11434's shape): no spec stream
    bare = "\n".join(x for x in page(prompt=5).splitlines() if "spec_decode" not in x) + "\n"
    (s,) = snapshot_from_text(bare, timestamp=1.0, side=side_info_from({}, {})).streams
    assert s.spec is None


def test_side_info_from_props() -> None:
    side = side_info_from(PROPS, {})
    assert (side.max_total_num_tokens, side.context_length, dict(side.max_model_len), side.version) == \
        (2048, 512, {"tiny": 512}, "11434-0000000")
    assert side.speculative is not None and side.speculative.algorithm == "draft-simple"
    assert versions.tested(LlamacppAdapter.tested_versions, side.version) == "true"
    assert versions.tested(LlamacppAdapter.tested_versions, build_version("b9000-abc")) == "false"
    assert build_version("unknown") == "unknown" and build_version(None) is None
    # no alias: the served name from /v1/models; no slots: no pool (asked again)
    side = side_info_from({**PROPS, "model_alias": ""}, {"data": [{"id": "m"}]})
    assert dict(side.max_model_len) == {"m": 512}
    bare = side_info_from({"default_generation_settings": {"n_ctx": 512}}, {})
    assert bare.max_total_num_tokens is None and LlamacppAdapter().side_incomplete(bare)
    assert not LlamacppAdapter().side_incomplete(side_info_from(PROPS, {}))
    # hostile values are not numbers
    odd = side_info_from({"default_generation_settings": {"n_ctx": True}, "total_slots": -4}, {})
    assert (odd.max_total_num_tokens, odd.context_length) == (None, None)


def test_side_info_reads_props_first() -> None:
    asked: list[str] = []

    def get_json(path: str, v1: bool = False) -> dict[str, Any] | None:
        asked.append(path)
        return PROPS if path == "/props" else None

    assert LlamacppAdapter().side_info(get_json).max_total_num_tokens == 2048
    assert asked == ["/props"]  # an alias: /v1/models is not asked


def test_position_past_the_limit_is_dropped_and_counted() -> None:
    text = page(drafts=1, draft_tokens=1, accepted=1, per_pos=(1,)) + \
        'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="64"} 1\n'
    snap = snapshot_from_text(text, timestamp=1.0, side=side_info_from(PROPS, {}))
    assert snap.anomalies.get("position_limit") == 1
    assert snap.streams[0].spec is not None and snap.streams[0].spec.accepted_per_position == (1.0,)


def test_acceptance_length_is_one_plus_accepted_per_draft_round() -> None:
    # exporter.formulas through the state: L over the 1m window = 1 + (30 - 12) / (20 - 10)
    text = render([page(drafts=10, draft_tokens=30, accepted=12, predicted=30),
                   page(drafts=20, draft_tokens=60, accepted=30, predicted=60),
                   page(drafts=20, draft_tokens=60, accepted=30, predicted=60)], PROPS)
    assert f'specgate_spec_acceptance_length{{engine="llamacpp",model="tiny",rank="",window="1m"}} ' \
        f'{1 + 18 / 10!r}' in text
    assert 'specgate_kv_pool_tokens{engine="llamacpp",model="tiny",pool="target",rank=""} 2048.0' in text
    assert "specgate_ttft" not in text and "specgate_tpot" not in text


def test_a_restart_is_counters_going_backwards() -> None:
    text = render([page(drafts=50, draft_tokens=150, accepted=60, predicted=110),
                   page(drafts=5, draft_tokens=15, accepted=6, predicted=11)], PROPS)
    assert 'specgate_engine_restarts_total{engine="llamacpp",model="tiny",rank=""} 1.0' in text
    # monotonic across it: 50 before + 5 from zero after
    assert 'specgate_spec_drafts_total{engine="llamacpp",model="tiny",rank=""} 55.0' in text


# --- real captures (tests/fixtures/llamacpp/<arm>/) --------------------------------------------------------

def arm_texts(arm: str) -> list[str]:
    return [(FIXTURES / arm / f"metrics-{w}.txt").read_text() for w in ("before", "during", "after")]


def arm_props(arm: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / arm / "props.json").read_text())
    return doc


@pytest.mark.parametrize("arm", ARMS)
def test_golden_exposition(arm: str) -> None:
    got = render(arm_texts(arm), arm_props(arm))
    path = GOLDEN / f"llamacpp-{arm}.prom"
    if os.environ.get("SPECGATE_UPDATE_GOLDEN") == "1":
        path.write_text(got)
    assert path.exists(), f"missing golden file {path}; run with SPECGATE_UPDATE_GOLDEN=1 once"
    assert got == path.read_text(), f"exposition differs from {path}"


@pytest.mark.parametrize("arm", SPEC_ARMS)
def test_captured_arm_says_what_its_counters_say(arm: str) -> None:
    before, _, after = arm_texts(arm)
    golden = (GOLDEN / f"llamacpp-{arm}.prom").read_text()
    d = counter(after, "spec_decode_num_drafts_total") - counter(before, "spec_decode_num_drafts_total")
    a = counter(after, "spec_decode_num_accepted_tokens_total") - counter(before, "spec_decode_num_accepted_tokens_total")
    assert d > 0
    assert f'specgate_spec_acceptance_length{{engine="llamacpp",model="tiny",rank="",window="1m"}} {1 + a / d!r}' \
        in golden
    props = arm_props(arm)
    pool = props["default_generation_settings"]["n_ctx"] * props["total_slots"]
    assert f'specgate_kv_pool_tokens{{engine="llamacpp",model="tiny",pool="target",rank=""}} {float(pool)!r}' in golden


def test_captured_nospec_has_no_acceptance() -> None:
    if "nospec" not in ARMS:
        pytest.skip("no nospec capture")
    golden = (GOLDEN / "llamacpp-nospec.prom").read_text()
    assert "specgate_spec_acceptance_length{" not in golden  # no drafts, no L
    assert 'specgate_spec_drafts_total{engine="llamacpp",model="tiny",rank=""} 0.0' in golden
