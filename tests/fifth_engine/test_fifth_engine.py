"""A fifth engine is one package per side and two registry lines (issue 31).

The stub registers itself as the two registry lines would, for the length of a test, and meets:
- the adapter protocol tests (tests/exporter/engines/test_registry.py) and the profile protocol tests
  (tests/gate/model/engines/test_profiles.py), run unchanged over the registries that now hold it;
- the engine-neutral exporter core: detection by prefix, a snapshot, and a window through `derive_window`,
  whose depth and L come from the base hooks, with no engine name compared anywhere;
- the gate's engine-neutral callers: `profile("stub")`, k through `gate.model.depth`, a predicted pool;
- the guard: once registered, "stub" is an engine name no file outside its packages may use.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator, Mapping
from string import Template
from types import MappingProxyType

import pytest

import exporter.engines as exporter_engines
import gate.model.engines as gate_engines
from exporter import parse
from exporter.derive import derive_window
from exporter.formulas import acceptance_length
from tests import test_engines_as_folders as guard
from tests.exporter.engines import test_registry
from tests.fifth_engine.exporter_side import StubAdapter
from tests.fifth_engine.gate_side import STUB
from tests.gate.model.engines import test_profiles

PAGE = """# TYPE stub:num_requests_running gauge
stub:num_requests_running{model_name="m"} 2
stub:generation_tokens_total{model_name="m"} $gen
stub:spec_decode_num_drafts_total{model_name="m"} $drafts
stub:spec_decode_num_draft_tokens_total{model_name="m"} $draft_tokens
stub:spec_decode_num_accepted_tokens_total{model_name="m"} $accepted
stub:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",position="0"} $p0
stub:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",position="1"} $p1
stub:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",position="2"} $p2
"""


def _registry(adapters: dict[str, type], profiles: Mapping[str, object]) -> None:
    """The registries as they would be at import, and what is derived from them at import: the page stems, the
    parser's stem order and its compiled scans (exporter.parse reads the stems once)."""
    exporter_engines.ADAPTERS.clear()
    exporter_engines.ADAPTERS.update(adapters)
    exporter_engines.PAGE_STEMS = parse.PAGE_STEMS = exporter_engines._stems()
    parse._STEM_ORDER = tuple(sorted(parse.PAGE_STEMS, key=len, reverse=True))
    parse._STEMS = "|".join(map(re.escape, parse._STEM_ORDER))
    parse._scan_re.cache_clear()
    parse._lines_re.cache_clear()
    gate_engines.PROFILES = MappingProxyType(dict(profiles))
    test_profiles.PROFILES = gate_engines.PROFILES


@pytest.fixture
def registered() -> Iterator[None]:
    """The two registry lines a fifth engine adds (`ADAPTERS["stub"]`, `PROFILES["stub"]`), for one test."""
    adapters, profiles = dict(exporter_engines.ADAPTERS), gate_engines.PROFILES
    _registry({**adapters, "stub": StubAdapter}, {**profiles, "stub": STUB})
    try:
        yield
    finally:
        _registry(adapters, profiles)
        importlib.reload(guard)  # the guard as the four engines' registries make it


def _page(**counts: float) -> str:
    return Template(PAGE).substitute(counts)


def test_the_adapter_protocol_tests_pass(registered: None) -> None:
    test_registry.test_every_adapter_is_registered_under_its_own_kind()
    assert "stub" in exporter_engines.ADAPTERS and exporter_engines.adapter("stub").kind == "stub"


@pytest.mark.parametrize("member_test", ["test_every_profile_answers_every_member"])
def test_the_profile_protocol_tests_pass(registered: None, member_test: str) -> None:
    for kind in gate_engines.PROFILES:
        getattr(test_profiles, member_test)(kind)
    test_profiles.test_profiles_are_frozen()
    assert gate_engines.profile("stub") is STUB


def test_the_exporter_core_reads_it_by_its_hooks(registered: None) -> None:
    first, second = (_page(gen=100, drafts=10, draft_tokens=30, accepted=15, p0=8, p1=5, p2=2),
                     _page(gen=160, drafts=30, draft_tokens=90, accepted=45, p0=24, p1=15, p2=6))
    assert exporter_engines.detect(first) == "stub"
    a = exporter_engines.adapter("stub")
    before, after = a.snapshot(parse.parse_page(first), 0.0), a.snapshot(parse.parse_page(second), 10.0)
    [w] = derive_window(before, after)
    assert w.acceptance_length == acceptance_length(30, 20) == 2.5  # 1 + accepted / drafts, window deltas
    assert w.position_acceptance_rate == (0.8, 0.5, 0.2)
    assert StubAdapter.configured_depth(None, after.streams[0]) == (3, "positions")  # the base hook's k


def test_the_gate_asks_its_profile(registered: None) -> None:
    from gate.model.depth import speculative_depth

    p = gate_engines.profile("stub")
    assert p.depth(num_speculative_tokens=4, num_draft_tokens=None, num_steps=None, eagle_topk=None) == 4
    assert callable(speculative_depth)
    pool = p.predict_pool(kv_cache_memory_bytes=8 << 20, target_bytes_per_token=1024, draft_charge=256,
                          has_drafter=True, block_size=None, configured_max_total_tokens=None)
    assert (pool.without_drafter, pool.with_drafter) == (8192, 6544)  # 512 and 409 blocks of 16


def test_once_registered_its_name_is_guarded(registered: None) -> None:
    """The engine-name guard reads the registry: no edit to the test makes "stub" a guarded name."""
    importlib.reload(guard)
    assert list(guard.engine_named(ast.parse("if plan.engine.kind == 'stub':\n    pass\n")))
    assert "exporter/engines/stub/" in guard.OWNERS and "gate/model/engines/stub/" in guard.OWNERS
    assert tuple(exporter_engines.ADAPTERS) == tuple(gate_engines.PROFILES)  # the two registry lines agree


def test_unregistered_it_is_no_engine() -> None:
    assert not list(guard.engine_named(ast.parse("kind = 'stub'\n")))
