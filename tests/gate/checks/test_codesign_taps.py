"""Co-design of the tiny vLLM EAGLE-3 heads against their target: taps in range and distinct.

Inputs are the config.json files tools/build_tiny_models.py writes (copied to
tests/fixtures/configs/tiny-vllm-*.json; tests/e2e/test_vllm_eagle3.py runs the same checks on
the freshly built directories and serves the good head on real vLLM). The target has L = 2
layers, so vLLM's tap ids (the stream entering layer j, 0 = embeddings) range over [0, 2].
Duplicate ids crash vLLM 0.32 inside the engine (each tapped layer is captured once, the head's
fc expects one hidden state per id): the rule must fail them before a rollout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.checks.codesign import codesign
from gate.status import Status

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
TARGET = CONFIGS / "tiny-target.json"


def head(name: str) -> Path:
    return CONFIGS / f"tiny-vllm-{name}.json"


def findings(result) -> dict[str, tuple[Status, str]]:
    return {f.check: (f.status, f.detail) for f in result.findings}


def test_the_tiny_eagle3_head_passes_against_its_target() -> None:
    res = codesign(json.loads(TARGET.read_text()), json.loads(head("eagle3").read_text()), engine="vllm",
                   depth=3)
    got = findings(res)
    assert res.family == "eagle3"
    assert got["eagle3_taps"][0] is Status.PASS and "[0, 1]" in got["eagle3_taps"][1]
    assert got["eagle3_tap_duplicates"] == (Status.PASS, "taps [0, 1] are distinct")
    assert res.status is Status.PASS, res.findings


def test_an_out_of_range_tap_fails() -> None:
    res = codesign(json.loads(TARGET.read_text()), json.loads(head("eagle3-taps-out-of-range").read_text()),
                   engine="vllm", depth=3)
    got = findings(res)
    assert res.status is Status.FAIL
    assert got["eagle3_taps"][0] is Status.FAIL
    assert "[3]" in got["eagle3_taps"][1] and "[0, 2]" in got["eagle3_taps"][1]  # 3 > L = 2
    assert got["eagle3_tap_duplicates"][0] is Status.PASS  # one rule per fault


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_duplicate_tap_ids_fail(engine: str) -> None:
    res = codesign(json.loads(TARGET.read_text()), json.loads(head("eagle3-taps-duplicate").read_text()),
                   engine=engine, depth=3)
    got = findings(res)
    assert res.status is Status.FAIL
    status, detail = got["eagle3_tap_duplicates"]
    assert status is Status.FAIL
    assert "repeat [1]" in detail and "1 of the 2 hidden states" in detail
    assert got["eagle3_taps"][0] is Status.PASS  # [1, 1] is in range on both engines: only this rule catches it


def test_duplicates_among_more_taps_and_top_level_ids() -> None:
    d = json.loads(head("eagle3").read_text())
    del d["eagle_config"]
    d["eagle_aux_hidden_state_layer_ids"] = [0, 2, 0, 2, 1]  # the speculators form: ids at the top level
    got = findings(codesign(json.loads(TARGET.read_text()), d, engine="vllm"))
    assert got["eagle3_tap_duplicates"][0] is Status.FAIL and "repeat [0, 2]" in got["eagle3_tap_duplicates"][1]
    assert "3 of the 5" in got["eagle3_tap_duplicates"][1]


def test_default_taps_have_no_duplicate_finding() -> None:
    d = json.loads(head("eagle3").read_text())
    del d["eagle_config"]
    got = findings(codesign(json.loads(TARGET.read_text()), d, engine="vllm"))
    assert "eagle3_tap_duplicates" not in got  # no explicit ids: the engine's default list is checked elsewhere


@pytest.mark.parametrize("name,code,status", [("eagle3", 0, "pass"), ("eagle3-taps-out-of-range", 1, "fail"),
                                              ("eagle3-taps-duplicate", 1, "fail")])
def test_specgate_codesign_cli_exit_codes(name: str, code: int, status: str) -> None:
    p = subprocess.run([sys.executable, "-m", "gate.cli", "codesign", str(TARGET), str(head(name)),
                        "--engine", "vllm", "--num-speculative-tokens", "3", "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == code, p.stderr
    assert json.loads(p.stdout)["status"] == status
