"""SGLang 0.5.23's own resolution of the speculative launch per config family (fixed k and adaptive), recorded by
tools/oracle/sglang_spec_resolution.py (`handle_speculative_decoding` on a constructed ServerArgs, in-process),
replayed against the gate's SGLang profile (issue 35.1): every row agrees or is a stated exception, the block
drafters' rows launched without draft tokens or with num_steps only (the recorder's `BLOCK_ROWS`, appended) among
them: the gate resolves their keys as SGLang does (`resolve_speculative`, with the drafter's config) and holds k to
SGLang's resolved draft tokens − 1 (`test_block_rows_k_is_sglang_s`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exporter.engines.base import SpecCounters, SpeculativeSettings, StreamSnapshot
from exporter.engines.sglang.depth import configured_depth
from exporter.engines.sglang.depth import depth as k_rule
from gate.model.depth import depth_schedule
from gate.model.engines.sglang import SGLANG, adaptive_decision, fallback_warning, resolve_algorithm
from gate.status import Status
from tests.gate.model.engines.oracle import exceptions

ROOT = Path(__file__).resolve().parents[5]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "sglang-0.5.23-spec-resolution.json"
CONFIGS = ROOT / "tests" / "fixtures" / "configs"
K = 3


def drafter_config(config: str) -> dict[str, Any]:
    return dict(json.loads((CONFIGS / config).read_text()))


def block_size(config: str) -> int:
    raw = drafter_config(config)
    return int(raw.get("block_size") or raw["dflash_config"]["block_size"])


def plan_keys(inputs: dict[str, Any]) -> dict[str, Any]:
    """A row's launch as a plan spells it: DFlash's `--speculative-dflash-block-size` (no plan key) is written as
    num_draft_tokens, which SGLang must see equal to it (`_handle_dflash`)."""
    keys = {k: inputs[k] for k in ("method", "num_steps", "num_draft_tokens") if k in inputs}
    if "dflash_block_size" in inputs:
        keys["num_draft_tokens"] = inputs["dflash_block_size"]
    return keys


def gate_answer(inputs: dict[str, Any]) -> dict[str, Any]:
    """The profile's answer in the recorder's shape: the algorithm SGLang runs and the depth keys the gate
    launches with (fixed), or SGLang's adaptive decision (adaptive); a block drafter's refusal where the gate
    fails the draft tokens."""
    method = inputs["method"]
    if inputs["setting"] == "adaptive":
        d = adaptive_decision(method)
        answer: dict[str, Any] = {"algorithm": d.algorithm, "adaptive": d.reason is None,
                                  "adaptive_warning": None if d.reason is None else fallback_warning(d.reason)}
        if d.start is not None:
            answer.update(num_steps=d.start[0], num_draft_tokens=d.start[1], eagle_topk=d.start[2])
        return answer
    answer = {"algorithm": resolve_algorithm(method), "adaptive": False, "adaptive_warning": None}
    if method in ("dflash", "dspark"):
        keys, said = SGLANG.resolve_speculative(plan_keys(inputs), drafter_config(inputs["config"]))
        n = keys["num_draft_tokens"]
        if SGLANG.block_rule(method, block_size(inputs["config"]), n - 1).status is Status.FAIL:
            return {"refused": True}
        answer.update(num_draft_tokens=n, num_steps=keys["num_steps"], eagle_topk=keys["eagle_topk"],
                      steps_overridden=any("num_steps 1 (not the plan's" in w for w in said))
    elif method == "ngram":
        answer["num_draft_tokens"] = K + 1
    else:
        answer.update(SGLANG.chain_depth_keys(K, "k = 3").keys)
    return answer


def sglang_answer(answer: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """SGLang's row cut to what the gate answers: NGRAM's top-k/steps are its BFS breadth (the gate reads k
    from the draft tokens); a block drafter's, with whether SGLang logged its override of the plan's steps."""
    if "error" in answer:
        return {"refused": True}
    keep = {"algorithm", "adaptive", "adaptive_warning", "num_draft_tokens"}
    if inputs["method"] != "ngram" or answer["adaptive"]:
        keep |= {"num_steps", "eagle_topk"}
    if not answer["adaptive"] and inputs["setting"] == "adaptive":
        keep = {"algorithm", "adaptive", "adaptive_warning"}  # static steps, SGLang's defaults (no k declared)
    out = {k: v for k, v in answer.items() if k in keep}
    if inputs["method"] in ("dflash", "dspark"):
        out["steps_overridden"] = any("overriding speculative_num_steps" in w
                                      for w in answer.get("resolution_warnings", ()))
    return out


def test_the_fixture_says_where_it_comes_from() -> None:
    data = json.loads(FIXTURE.read_text())
    assert (data["engine"], data["version"]) == ("sglang", "0.5.23")
    assert "tools/oracle/sglang_spec_resolution.py" in data["made_by"]
    assert "handle_speculative_decoding" in data["call"] and "ServerArgs" in data["call"]
    assert not any("unreached" in r["answer"] for r in data["rows"])


def _block_row(inputs: dict[str, Any]) -> bool:
    """A block drafter launched without the draft tokens (the recorder's `BLOCK_ROWS`)."""
    return inputs["method"] in ("dflash", "dspark") and "num_draft_tokens" not in inputs


def test_every_row_agrees_with_sglang() -> None:
    rows = json.loads(FIXTURE.read_text())["rows"]
    assert sum(_block_row(r["inputs"]) for r in rows) == 5  # the block rows are replayed too, with no exception
    stated = exceptions(FIXTURE.name)
    wrong = [i for i, r in enumerate(rows) if gate_answer(r["inputs"]) != sglang_answer(r["answer"], r["inputs"])]
    assert [i for i in wrong if i not in stated] == []
    assert sorted(stated) == wrong, "EXCEPTIONS.md lists a row that agrees"


def test_the_gate_reads_sglang_resolved_keys_as_k() -> None:
    """On every fixed row SGLang accepts, the k the gate reads from SGLang's own resolved keys is the k spelled
    (a chain: steps; NGRAM: draft tokens − 1; a block: draft tokens − 1), and a block drafter's k from the plan's
    own keys (told the method and the drafter's config) is SGLang's resolved draft tokens − 1."""
    for r in json.loads(FIXTURE.read_text())["rows"]:
        a, i = r["answer"], r["inputs"]
        if i["setting"] != "fixed" or "error" in a:
            continue
        if i["method"] in ("dflash", "dspark"):
            keys = plan_keys(i)
            assert SGLANG.depth(num_speculative_tokens=None, num_draft_tokens=keys.get("num_draft_tokens"),
                                num_steps=keys.get("num_steps"), eagle_topk=None, method=i["method"],
                                drafter_config=drafter_config(i["config"])) == a["num_draft_tokens"] - 1, (i, a)
        if _block_row(i):
            continue
        k = SGLANG.depth(num_speculative_tokens=None, num_draft_tokens=a["num_draft_tokens"],
                         num_steps=None if i["method"] in ("ngram", "dflash", "dspark") else a["num_steps"],
                         eagle_topk=a["eagle_topk"])
        assert k == i["num_draft_tokens"] - 1, (i, a)


def test_block_rows_k_is_sglang_s() -> None:
    """SGLang 0.5.23 runs a block drafter at num_steps 1 with the block as its draft tokens (`_handle_dflash` /
    `_handle_dspark`): without draft tokens it reads the drafter's block (DFlash 16, DSpark gamma 7 + 1), given
    num_steps 4 it overrides them to 1 (its own log line, recorded), and DFlash's `--speculative-dflash-block-size`
    lands in `speculative_num_draft_tokens` — the field `/server_info` reports, so the exporter reads k from it.
    On every such row: k by the one SGLang k rule from SGLang's resolved keys (steps included, with the algorithm)
    is draft tokens − 1, as the exporter reads it from `/server_info`; the keys `specgate init` writes for the
    drafter's block give the same k; a plan that declares only num_steps is read as SGLang reads it (k = block − 1,
    with a warning naming SGLang's override), and refused only where the drafter's config is not at hand (the
    block, hence k, unknown)."""
    rows = [r for r in json.loads(FIXTURE.read_text())["rows"] if _block_row(r["inputs"])]
    assert {(r["inputs"]["method"], tuple(sorted(set(r["inputs"]) - {"config", "method", "setting", "target"})))
            for r in rows} == {("dflash", ()), ("dflash", ("num_steps",)), ("dflash", ("dflash_block_size",)),
                               ("dspark", ()), ("dspark", ("num_steps",))}
    for r in rows:
        a, i = r["answer"], r["inputs"]
        assert "error" not in a and (a["num_steps"], a["eagle_topk"]) == (1, 1), (i, a)
        want = a["num_draft_tokens"] - 1
        assert k_rule(a["num_draft_tokens"], a["num_steps"], a["eagle_topk"], a["algorithm"]) == want
        assert k_rule(None, a["num_steps"], a["eagle_topk"], a["algorithm"]) is None  # the steps never say k
        info = SpeculativeSettings(algorithm=a["algorithm"], num_draft_tokens=a["num_draft_tokens"],
                                   num_steps=a["num_steps"], eagle_topk=a["eagle_topk"], adaptive=a["adaptive"])
        stream = StreamSnapshot(model=None, rank=None, spec=SpecCounters(verify_calls=1.0))
        assert configured_depth(info, stream) == (want, "server_info"), i
        if "dflash_block_size" in i:  # the plan spells the block as num_draft_tokens: the same k
            assert SGLANG.depth(num_speculative_tokens=None, num_draft_tokens=i["dflash_block_size"],
                                num_steps=None, eagle_topk=None) == want
            continue
        keys = SGLANG.block_depth_keys(i["method"], block_size(i["config"]), None).keys
        assert SGLANG.depth(num_speculative_tokens=None, num_steps=None, eagle_topk=None, **keys) == want, i
        spec = {"method": i["method"], **({"num_steps": i["num_steps"]} if "num_steps" in i else {})}
        cfg = drafter_config(i["config"])
        reading = depth_schedule("sglang", spec, drafter_config=cfg)
        assert reading.schedule is None
        if "num_steps" in i:
            assert any(f"overriding speculative_num_steps={i['num_steps']} to 1" in w
                       for w in a["resolution_warnings"])
            name = "DFLASH" if i["method"] == "dflash" else "DSpark"
            assert reading.declared and reading.warnings == (
                f"SGLang forces num_steps 1 (not the plan's {i['num_steps']}) for {name} and drafts block - 1 = "
                f"{want} tokens per verify (block {want + 1}: the drafter config's block_size "
                f"{block_size(i['config'])}{'' if name == 'DFLASH' else ' + 1'})",)
            with pytest.raises(ValueError, match="drafter's config is not at hand"):
                depth_schedule("sglang", spec)  # no config: SGLang's block, hence k, unknown
        else:
            assert not reading.declared and reading.warnings == ()  # nothing overridden: nothing to say
            assert depth_schedule("sglang", spec).warnings == ()  # no depth declared, none read: k unknown
        assert depth_schedule("sglang", {**spec, **keys}, drafter_config=cfg).schedule is None  # as init writes


def test_the_replay_can_fail() -> None:
    """A profile that launched a chain with top-k 4 would disagree."""
    row = next(r for r in json.loads(FIXTURE.read_text())["rows"]
               if r["inputs"]["method"] == "eagle3" and r["inputs"]["setting"] == "fixed")
    assert {**gate_answer(row["inputs"]), "eagle_topk": 4} != sglang_answer(row["answer"], row["inputs"])
