"""vLLM 0.32's own validation of depths, method depths and depth schedules, recorded by
tools/oracle/vllm_speculative_validation.py (vLLM's SpeculativeConfig and build_dynamic_sd_schedule_lookup called
in-process), replayed row by row against the gate's vLLM answers (issue 35.1): the plan's depth bounds
(gate.plan.model.Speculative), `gate.model.depth.depth_schedule` (vllm_schedule, then the fail-closed invariant),
and the profile's MTP and DFlash rules; `family` rows run every config of tests/fixtures/configs through vLLM
(fixed k and a schedule) for the conformance matrix (tests/gate/model/engines/test_conformance_matrix.py). Every row agrees or is listed in EXCEPTIONS.md with vLLM's answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gate.model.depth import depth_schedule
from gate.model.engines.vllm import VLLM
from gate.plan.model import Speculative
from gate.status import Status
from tests.gate.model.engines.oracle import exceptions

ORACLE = Path(__file__).resolve().parents[4] / "fixtures" / "oracle"
NAME = "vllm-0.32.0-speculative-validation.json"
DATA = json.loads((ORACLE / NAME).read_text())


def gate_answer(kind: str, inputs: dict[str, Any], max_num_seqs: int) -> dict[str, Any]:
    """The gate's answer in the recorder's shape: accepted, and for a schedule the k each batch runs."""
    method = inputs.get("method", "ngram")
    spec = {"method": method, "num_speculative_tokens": inputs["num_speculative_tokens"]}
    ranges = inputs.get("num_speculative_tokens_per_batch_size")
    if ranges is not None:
        spec["num_speculative_tokens_per_batch_size"] = ranges
    try:
        Speculative.model_validate(spec)
    except ValidationError:
        return {"accepted": False}
    k = inputs["num_speculative_tokens"]
    if kind == "method":
        if method == "mtp":
            rule = VLLM.mtp_rule(inputs["n_predict"], k)
        elif method == "dflash":
            rule = VLLM.block_rule("dflash", inputs["block_size"], k)
        else:
            return {"accepted": True}
        return {"accepted": rule.status is not Status.FAIL}
    if ranges is None:  # a fixed k (kind fixed, or a config family's fixed row)
        return {"accepted": True}
    try:
        reading = depth_schedule("vllm", spec)
    except ValueError:
        return {"accepted": False}
    assert reading.schedule is not None
    return {"accepted": True, "k_by_batch": [reading.schedule.k_at(b) for b in range(1, max_num_seqs + 1)]}


def _agrees(row: dict[str, Any], max_num_seqs: int) -> bool:
    mine = gate_answer(row["kind"], row["inputs"], max_num_seqs)
    theirs = row["answer"]
    if mine["accepted"] != theirs["accepted"]:
        return False
    return not mine["accepted"] or mine.get("k_by_batch") == theirs.get("k_by_batch")


def test_the_fixture_says_where_it_comes_from() -> None:
    assert (DATA["engine"], DATA["version"]) == ("vllm", "0.32.0")
    assert "tools/oracle/vllm_speculative_validation.py" in DATA["made_by"]
    assert "build_dynamic_sd_schedule_lookup" in DATA["call"]
    kinds = {r["kind"] for r in DATA["rows"]}
    assert kinds == {"fixed", "schedule", "method", "family"}
    # valid and invalid schedules both recorded, every refusal with vLLM's message
    assert {r["answer"]["accepted"] for r in DATA["rows"] if r["kind"] == "schedule"} == {True, False}
    assert all(r["answer"]["error"] for r in DATA["rows"] if not r["answer"]["accepted"])


@pytest.mark.parametrize("index", range(len(DATA["rows"])))
def test_row_agrees_or_is_a_stated_exception(index: int) -> None:
    row = DATA["rows"][index]
    listed = exceptions(NAME)
    if index in listed:
        assert not _agrees(row, DATA["max_num_seqs"]), f"#{index} agrees: take it off EXCEPTIONS.md"
    else:
        assert _agrees(row, DATA["max_num_seqs"]), (
            f"#{index} {row['inputs']}: vLLM {row['answer']}, gate "
            f"{gate_answer(row['kind'], row['inputs'], DATA['max_num_seqs'])}")


def test_every_listed_row_exists() -> None:
    assert all(0 <= i < len(DATA["rows"]) for i in exceptions(NAME))


def test_the_replay_can_fail() -> None:
    """A schedule the gate read with the tail dropped would disagree with vLLM's carried tail."""
    row = next(r for r in DATA["rows"] if r["inputs"].get("case") == "gap carries k"
               and r["inputs"]["num_speculative_tokens"] == 5)
    wrong = {**row, "answer": {**row["answer"], "k_by_batch": row["answer"]["k_by_batch"][:8] + [0] * 32}}
    assert _agrees(row, DATA["max_num_seqs"]) and not _agrees(wrong, DATA["max_num_seqs"])
