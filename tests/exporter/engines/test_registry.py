"""exporter.engines: `ADAPTERS` is the one engine list, and the engine-neutral core reaches each engine's rules
through its adapter's hooks (exporter/engines/base.py), whose defaults are the engine-neutral ones."""

from __future__ import annotations

from typing import get_args

from exporter.engines import ADAPTERS, EngineKind
from exporter.engines.base import EngineAdapter, SpecCounters, StreamSnapshot
from gate.probe.workload import TOKENIZE_BODIES


def test_engine_kind_is_the_registry() -> None:
    """`EngineKind` is a Literal for typing only; it must say the registry's engines in the registry's order."""
    assert get_args(EngineKind) == tuple(ADAPTERS)


def test_every_adapter_is_registered_under_its_own_kind() -> None:
    for kind, cls in ADAPTERS.items():
        assert issubclass(cls, EngineAdapter) and cls.kind == kind


def test_tokenize_bodies_come_from_the_adapters() -> None:
    assert TOKENIZE_BODIES == ("prompt", "content")
    assert EngineAdapter.tokenize_field == "prompt"


def test_the_base_hooks_are_engine_neutral() -> None:
    """An engine that overrides nothing: k from its per-position series, else the told schedule; no verify calls,
    interval gauge, schedule reader or per-request acceptance of its own."""
    stream = StreamSnapshot(None, None, spec=SpecCounters(accepted_per_position=(3.0, 2.0, 1.0)))
    assert EngineAdapter.configured_depth(None, stream, told=5) == (3, "positions")
    assert EngineAdapter.configured_depth(None, StreamSnapshot(None, None, spec=SpecCounters()), told=5) == \
        (5, "schedule")
    assert EngineAdapter.configured_depth(None, StreamSnapshot(None, None)) is None
    assert EngineAdapter.counted_depth(SpecCounters(accepted_per_position=(1.0,))) == 1
    assert EngineAdapter.settings_depth(None) is None and not EngineAdapter.variable_by_construction(None)
    assert EngineAdapter.draft_counts(10.0, 40.0, 2.0, 4.0) is None
    assert not EngineAdapter.interval_gauge_is_new(None, SpecCounters(accept_length_gauge=2.0), 5.0, False)
    assert EngineAdapter.rate_from_length(2.0, 4.0) is None
    assert EngineAdapter.told_schedule(None) is None
    assert not EngineAdapter.carries_acceptance({"metrics": {}}, {"spec_verify_ct": 1})
    assert EngineAdapter.request_acceptance(None, None, 1) is None
