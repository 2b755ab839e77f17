"""The hostile generator for simulated acceptance (issue 37 item 1), and the rejection-mode and definition rules.

Why: an engine can fake acceptance on purpose (vLLM `rejection_sample_method: synthetic` with
`synthetic_acceptance_length` / `_rates`; SGLang `SGLANG_SIMULATE_ACC_LEN` > 0; TensorRT-LLM
`TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS` > 0), and a benchmark run with it looks exactly like a good drafter.
Every source that can carry such a knob is held to the `simulated` invariant (`gate.model.invariants`): each case
draws 20 mutations (Hypothesis, derandomized) and asserts the intake refuses every one with a reason of that
invariant; the controls (the knobs off, or only SGLang's modifiers) read clean.

Inputs in the engines' real shapes: the vLLM settings are ones vLLM 0.32's own `SpeculativeConfig` accepts
(tests/fixtures/oracle/vllm-0.32.0-speculative-knobs.json, made by tools/oracle/vllm_speculative_knobs.py); the
environment variables and their "on" rule are SGLang 0.5.23's `sglang/srt/environ.py` and TensorRT-LLM's
`tensorrt_llm/_torch/speculative/interface.py` (cited in that fixture). Captures and the sidecar show no knob
themselves: there the plan's engine settings and environment carry it (`gate.evidence.intake.plan_simulated`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.evidence.intake import plan_defects, plan_simulated, probe_records
from gate.evidence.probes import ProbeRecord
from gate.model.invariants import (
    definition_change,
    invariant_of,
    lossy_verification,
    rejection_change,
    simulated_acceptance,
)
from gate.plan.model import Plan
from tests.gate.helpers import tiny_plan
from tests.gate.hostile.test_hostile import NOW, _native, _read
from tests.gate.hostile.test_hostile_imports import TOOLS, Tool, _import
from tests.gate.hostile.test_hostile_windows import SOURCES as WINDOW_SOURCES
from tests.gate.hostile.test_hostile_windows import _evidence, _intake, _rules, _windows

MUTATIONS = settings(derandomize=True, deadline=None, max_examples=20, database=None)
ORACLE = Path(__file__).resolve().parents[2] / "fixtures" / "oracle" / "vllm-0.32.0-speculative-knobs.json"
ACCEPTED = json.loads(ORACLE.read_text())["accepted"]  # configs vLLM 0.32's SpeculativeConfig took

# vLLM settings (from the oracle's accepted configs, so each is one vLLM takes) and environments that simulate.
SIMULATING_SETTINGS = [c["config"] for c in ACCEPTED if c["config"].get("rejection_sample_method") == "synthetic"]
ENV_ON = st.one_of(
    st.floats(0.01, 16.0).map(lambda x: {"SGLANG_SIMULATE_ACC_LEN": f"{x:g}"}),
    st.floats(0.01, 16.0).map(lambda x: {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": f"{x:g}"}),
    st.integers(1, 15).map(lambda n: {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": str(n),
                                      "SGLANG_SIMULATE_ACC_METHOD": "match-expected"}),
    st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=6).map(
        lambda t: {"SGLANG_SIMULATE_ACC_LEN": t}),  # not a number: simulation cannot be ruled out
)


def _simulating_settings(data: st.DataObject, base: dict[str, Any]) -> dict[str, Any]:
    """A speculative config with vLLM's simulation on, as vLLM takes it (the oracle's), on top of `base`."""
    knob = data.draw(st.sampled_from(SIMULATING_SETTINGS))
    return {**base, **{k: v for k, v in knob.items() if k not in ("method", "num_speculative_tokens")}}


def _simulating_plan(data: st.DataObject) -> Plan:
    """The tiny ngram plan with simulation stated in its engine settings or its environment."""
    doc = tiny_plan("ngram")
    if data.draw(st.booleans()):
        doc["engine"]["speculative"] = _simulating_settings(data, doc["engine"]["speculative"])
    else:
        doc["engine"]["env"] = data.draw(ENV_ON)
    return Plan.model_validate(doc)


def _names(reasons: list[str]) -> None:
    assert reasons, "passed"
    assert "simulated" in {invariant_of(r) for r in reasons}, reasons


# --- native probe records: the record's speculative config, or the plan's knobs (the probes line) ---------------

def _native_records(data: st.DataObject) -> list[str]:
    base, spec = _native("baseline"), _native("speculative")
    if data.draw(st.booleans()):
        spec["speculative"] = _simulating_settings(data, dict(spec["speculative"]))  # type: ignore[arg-type]
        return _read(base, spec)
    plan = _simulating_plan(data)
    recs = [ProbeRecord.model_validate(d) for d in (base, spec)]
    return plan_defects(plan, recs[0], recs[1], "pre", NOW.timestamp())


# --- imports: the user's --speculative-config ------------------------------------------------------------------

def _imported(tool: Tool, tmp: Path, data: st.DataObject) -> list[str]:
    spec = _simulating_settings(data, {"method": "ngram", "num_speculative_tokens": 3})
    arm = data.draw(st.sampled_from(["speculative", "baseline"]))
    return [str(_import(tool, tmp, tool.docs(), replace(tool.settings, arm=arm, speculative=spec)))]


# --- captures and the sidecar: the plan's knobs ----------------------------------------------------------------

def _windows_of(source: str, data: st.DataObject) -> list[str]:
    src = WINDOW_SOURCES[source]
    return _intake(src, _evidence(src, _windows()), _rules(src, simulated=plan_simulated(_simulating_plan(data))))


@given(data=st.data())
@MUTATIONS
def test_native_probe_simulated(data: st.DataObject) -> None:
    _names(_native_records(data))


@pytest.mark.parametrize("source", sorted(TOOLS))
@given(data=st.data())
@MUTATIONS
def test_imports_simulated(tmp_path_factory: pytest.TempPathFactory, source: str, data: st.DataObject) -> None:
    _names(_imported(TOOLS[source], tmp_path_factory.mktemp("sim"), data))


@pytest.mark.parametrize("source", sorted(WINDOW_SOURCES))
@given(data=st.data())
@MUTATIONS
def test_windows_simulated(source: str, data: st.DataObject) -> None:
    _names(_windows_of(source, data))


# (source, invariant) pairs the cases above cover, read by test_hostile's registry check (imported there inside the
# check: this module imports test_hostile's record builders).
COVERED: dict[str, set[str]] = {"native_probe": {"simulated"}, **{s: {"simulated"} for s in TOOLS},
                                **{s: {"simulated"} for s in WINDOW_SOURCES}}


# --- controls and the rules' edges -----------------------------------------------------------------------------

@pytest.mark.parametrize("env", [
    {"SGLANG_SIMULATE_ACC_LEN": "-1"}, {"SGLANG_SIMULATE_ACC_LEN": "0"},  # SGLang's default -1: off unless > 0
    {"SGLANG_SIMULATE_ACC_METHOD": "match-expected", "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
     "SGLANG_SIMULATE_ACC_GREEDY": "1"},  # modifiers alone simulate nothing
    {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "0"}, {}])
def test_knobs_off_are_not_simulated(env: dict[str, str]) -> None:
    assert simulated_acceptance({"method": "ngram", "rejection_sample_method": "standard"}, env, "x") is None
    doc = tiny_plan("ngram")
    doc["engine"]["env"] = env
    assert plan_simulated(Plan.model_validate(doc)) is None


def test_a_real_vllm_config_is_read_not_refused() -> None:
    """Every config vLLM 0.32 accepted (the oracle) is a plan vLLM would run: the plan takes its keys."""
    for case in ACCEPTED:
        doc = tiny_plan("ngram")
        doc["engine"]["speculative"] = {**case["config"], "method": "ngram"}
        plan = Plan.model_validate(doc)
        assert (plan_simulated(plan) is not None) == (case["config"].get("rejection_sample_method") == "synthetic")


def test_init_never_writes_the_knobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gate.cli import main

    target = Path(__file__).resolve().parents[2] / "fixtures" / "configs" / "tiny-target.json"
    for method in ("ngram", "suffix"):
        out = tmp_path / f"{method}.yaml"
        assert main(["init", "--target", str(target), "--engine", "vllm", "--method", method, "--out",
                     str(out)]) == 0, capsys.readouterr().err
        text = out.read_text()
        for knob in ("rejection_sample_method", "synthetic", "SIMULATE_ACC", "FORCE_NUM_ACCEPTED", "env:"):
            assert knob not in text, (method, knob)


def test_simulated_records_through_compare_are_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gate.cli import main

    spec = _native("speculative")
    spec["speculative"] = {"method": "ngram", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic",
                           "synthetic_acceptance_length": 2.5}
    paths = []
    for name, doc in (("b", _native("baseline")), ("s", spec)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(doc))
    rc = main(["compare", *map(str, paths)])
    err = capsys.readouterr().err
    assert rc == 3 and "simulated acceptance" in err and len(err.strip().splitlines()) == 1, err


VLLM = "vllm"


@pytest.mark.parametrize(("a", "b", "same"), [
    (("0.32.0", None), ("0.32.0", None), True),  # neither states: one version, one default
    (("0.32.0", None), ("0.33.1", None), True),  # both at 0.32+'s default standard (assumed)
    (("0.32.0", "standard"), ("0.32.0", None), True),  # stated = the other's default
    (("0.32.0", "block"), ("0.32.0", None), False),  # a non-default on one side only
    (("0.32.0", "block"), ("0.32.0", "standard"), False),
    (("0.31.0", None), ("0.32.0", None), False),  # 0.31's default not recorded: not the same
    (("0.31.0", "strict"), ("0.31.0", "probabilistic"), False),
])
def test_rejection_mode_in_identity(a: tuple[str, str | None], b: tuple[str, str | None], same: bool) -> None:
    def side(name: str, v: tuple[str, str | None]) -> tuple[str, str | None, dict[str, Any]]:
        return name, v[0], {"method": "ngram"} | ({"rejection_sample_method": v[1]} if v[1] else {})

    got = rejection_change(VLLM, side("a", a), side("b", b))
    assert (got is None) == same, got
    if got is not None:
        assert invariant_of(got) == "identity" and "not comparable" in got
        if a[1] is None or b[1] is None:
            assert "assumed default" in got or "not recorded" in got, got


def test_sglang_rejection_flags() -> None:
    plain = ("a", "0.5.23", {"algorithm": "EAGLE"})
    block = ("b", "0.5.23", {"algorithm": "EAGLE", "speculative_use_block_verification": True})
    off = ("c", "0.5.23", {"algorithm": "EAGLE", "speculative_use_block_verification": False,
                           "speculative_use_rejection_sampling": False})
    assert rejection_change("sglang", plain, off) is None  # both flags off = the default
    got = rejection_change("sglang", plain, block)
    assert got is not None and "block_verification" in got and "assumed default" in got


def test_definitions_across_versions() -> None:
    # SGLang's spec_accept_rate changed meaning at 0.5.6 and 0.5.11 (sglang #13212), but specgate recomputes L
    # from counters on both sides: one quantity.
    assert definition_change("sglang", ("a", "0.5.5"), ("b", "0.5.23")) is None
    got = definition_change("trtllm", ("a", "1.2.0"), ("b", "1.3.0"))
    assert got is None
    got = definition_change("vllm", ("a", "0.31.0"), ("b", "0.32.0"))
    assert got is None  # both counted 1 + accepted / drafts exactly
    unknown = definition_change("llamacpp", ("a", "b11434"), ("b", "12000"))
    assert unknown is None  # llama.cpp's build numbers name no release: left to the version rules


def test_probe_arms_of_two_rejection_modes_are_not_one_curve() -> None:
    other = _native("speculative", k=2)
    other["speculative"] = {"method": "ngram", "num_speculative_tokens": 2, "rejection_sample_method": "block"}
    got = _read(_native("baseline"), _native("speculative"), other)
    assert any("rejection" in r and invariant_of(r) == "identity" for r in got), got


def test_lossy_verification_is_said() -> None:
    assert lossy_verification({"rejection_sample_method": "fly"}, "the plan") is not None
    assert "distribution" in str(lossy_verification({"rejection_sample_method": "fly"}, "the plan"))
    assert lossy_verification({"rejection_sample_method": "block"}, "the plan") is None


def test_the_intake_reads_simulated_records_through_probe_records() -> None:
    spec = _native("speculative")
    spec["speculative"] = {"method": "ngram", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic",
                           "synthetic_acceptance_rates": [0.9, 0.8, 0.7]}
    recs = [(f"r{i}", ProbeRecord.model_validate(d)) for i, d in enumerate((_native("baseline"), spec))]
    _names(probe_records(recs, NOW.timestamp()))


