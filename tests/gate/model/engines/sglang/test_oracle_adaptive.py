"""SGLang 0.5.23's own adaptive decisions, recorded by tools/oracle/sglang_adaptive.py (SGLang's functions called
in-process), replayed against the gate's SGLang profile (issue 35.2): every row agrees or is a stated exception."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gate.model.depth import depth_schedule
from gate.model.engines.sglang import adaptive_decision, fallback_warning
from tests.gate.model.engines.oracle import exceptions

ORACLE = Path(__file__).resolve().parents[4] / "fixtures" / "oracle"
CONFIGS = ORACLE.parent / "configs"
# The block drafters' real configs (block_size 16; DSpark gamma 7): SGLang reads their block (`_handle_dflash` /
# `_handle_dspark`), so a plan's reading is given them, as Plan.depth_reading gives the drafter's config.
BLOCK_CONFIGS = {"dflash": "dflash__specforge__qwen3-8b-dflash.json", "dspark": "dspark__specforge__qwen3-8b-dspark.json"}
FIXTURE = ORACLE / "sglang-0.5.23-adaptive.json"
LAUNCH = ("attn_dp_size", "ep_join_mode", "enable_multi_layer_eagle", "enable_two_batch_overlap", "enable_pdmux")
DRAFTERS = {"none": (), "gemma4_assistant": ("Gemma4AssistantForCausalLM",)}


def gate_answer(inputs: dict[str, Any]) -> dict[str, Any]:
    """The profile's answer in the recorder's shape (tools/oracle/sglang_adaptive.py `_one`)."""
    launch = {k: inputs[k] for k in LAUNCH if k in inputs}
    try:
        d = adaptive_decision(inputs["method"], drafter_architectures=DRAFTERS[inputs["drafter"]],
                              eagle_topk=inputs["eagle_topk"], num_steps=inputs["num_steps"], **launch)
    except ValueError as e:
        return {"error": str(e)}
    answer: dict[str, Any] = {"algorithm": d.algorithm, "adaptive": d.reason is None,
                              "warning": None if d.reason is None else fallback_warning(d.reason)}
    if d.start is not None:
        answer.update(num_steps=d.start[0], num_draft_tokens=d.start[1], eagle_topk=d.start[2])
    return answer


def _gate_or_error(inputs: dict[str, Any]) -> dict[str, Any]:
    """`gate_answer`, where SGLang's steps check refuses after the adaptive check (the error carries the rest)."""
    answer = gate_answer(inputs)
    if "error" in answer and inputs["num_steps"] is not None and "--speculative-num-steps" in answer["error"]:
        d = adaptive_decision(inputs["method"], drafter_architectures=DRAFTERS[inputs["drafter"]],
                              eagle_topk=inputs["eagle_topk"], num_steps=None)
        return {"algorithm": d.algorithm, "adaptive": True, "warning": None, "error": answer["error"]}
    return answer


def test_the_fixture_says_where_it_comes_from() -> None:
    data = json.loads(FIXTURE.read_text())
    assert (data["engine"], data["version"]) == ("sglang", "0.5.23")
    assert "tools/oracle/sglang_adaptive.py" in data["made_by"] and "_maybe_disable_adaptive" in data["call"]
    methods = {r["inputs"]["method"] for r in data["rows"]}
    assert methods == {"eagle", "eagle3", "mtp", "nextn", "draft_model", "dflash", "dspark", "ngram"}
    # every branch of adaptive_unsupported_reason, the alias's refusal and the steps check were reached
    said = {(r["answer"].get("warning") or r["answer"].get("error") or "adapts").split(" (")[0] for r in data["rows"]}
    for branch in ("only EAGLE/EAGLE3", "speculative_eagle_topk=4", "attention DP", "enable_multi_layer_eagle",
                   "enable_two_batch_overlap", "enable_pdmux", "FROZEN_KV_MTP", "Gemma4AssistantForCausalLM",
                   "--speculative-num-steps=4", "adapts"):
        assert any(branch in s for s in said) or any(branch in json.dumps(r) for r in data["rows"]), branch


def test_every_row_agrees_with_sglang() -> None:
    rows = json.loads(FIXTURE.read_text())["rows"]
    stated = exceptions(FIXTURE.name)
    wrong = [(i, r["inputs"], r["answer"], _gate_or_error(r["inputs"])) for i, r in enumerate(rows)
             if _gate_or_error(r["inputs"]) != r["answer"]]
    assert [w for w in wrong if w[0] not in stated] == []
    assert sorted(stated) == sorted(i for i, *_ in wrong), "EXCEPTIONS.md lists a row that agrees"


def test_the_plans_reading_follows_sglang() -> None:
    """Rows a plan can spell (no drafter architecture, SGLang's default launch settings): the plan's reading
    adapts where SGLang adapts, warns SGLang's own line where it falls back, refuses where SGLang refuses.

    A block drafter (DFlash, DSpark) falls back, and SGLang runs it at 1 step with the drafter's block whatever
    its steps (`_handle_dflash` / `_handle_dspark`): the gate judges the static k = block − 1 (DFlash 16 − 1,
    DSpark gamma 7 + 1 − 1) and, where the plan gave num_steps, warns SGLang's override too. Before, such a plan
    was refused (the gate's k would have been read from the steps); now it is read as SGLang reads it, and
    refused only without the drafter's config (`test_block_steps_without_the_drafter_config_are_refused`)."""
    rows = [r for r in json.loads(FIXTURE.read_text())["rows"]
            if r["inputs"]["drafter"] == "none" and not any(k in r["inputs"] for k in LAUNCH)]
    assert len(rows) >= 8 * 3 * 3
    block_steps = 0
    for row in rows:
        inputs, answer = row["inputs"], row["answer"]
        spec = {"method": inputs["method"], "speculative_adaptive": True,
                **{k: inputs[k] for k in ("eagle_topk", "num_steps") if inputs[k] is not None}}
        config = BLOCK_CONFIGS.get(inputs["method"])
        cfg = None if config is None else json.loads((CONFIGS / config).read_text())
        if "error" in answer:
            with pytest.raises(ValueError, match=re.escape(answer["error"])):
                depth_schedule("sglang", spec, drafter_config=cfg)
            continue
        reading = depth_schedule("sglang", spec, drafter_config=cfg)
        if answer["adaptive"]:
            assert reading.schedule is not None and not reading.warnings, inputs
            continue
        assert reading.schedule is None and reading.warnings[0].startswith(f"SGLang: {answer['warning']} ("), inputs
        if config is None:
            continue
        k = 15 if inputs["method"] == "dflash" else 7
        assert reading.warnings[0].endswith(f"(the gate judges the static k = {k})"), inputs
        name = "DFLASH" if inputs["method"] == "dflash" else "DSpark"
        steps = inputs["num_steps"]
        said = [w for w in reading.warnings[1:] if w.startswith("SGLang forces num_steps 1")]
        assert len(said) == (steps is not None), inputs
        if steps is not None:
            block_steps += 1
            assert f"1 (not the plan's {steps})" in said[0] and f"for {name} and drafts block - 1 = {k} " in said[0]
    assert block_steps == 12  # every DFlash/DSpark row giving num_steps, with no exception


def test_block_steps_without_the_drafter_config_are_refused() -> None:
    """Where the drafter's config is not at hand, SGLang's block (so k) cannot be known: a plan declaring only
    num_steps is refused with the reason and the keys to declare; declaring the block is read."""
    for method in BLOCK_CONFIGS:
        spec = {"method": method, "speculative_adaptive": True, "num_steps": 4}
        with pytest.raises(ValueError, match="drafter's config is not at hand.*declare engine.speculative"
                                             ".num_draft_tokens"):
            depth_schedule("sglang", spec)
        assert depth_schedule("sglang", {**spec, "num_draft_tokens": 16}).schedule is None
