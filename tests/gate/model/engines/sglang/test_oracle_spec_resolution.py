"""SGLang 0.5.23's own resolution of the speculative launch per config family (fixed k and adaptive), recorded by
tools/oracle/sglang_spec_resolution.py (`handle_speculative_decoding` on a constructed ServerArgs, in-process),
replayed against the gate's SGLang profile (issue 35.1): every row agrees or is a stated exception. The block
drafters' rows launched without draft tokens (the recorder's `BLOCK_ROWS`, appended) are replayed on k: the k the
gate holds is SGLang's resolved draft tokens − 1 (`test_block_rows_k_is_sglang_s`)."""

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


def block_size(config: str) -> int:
    raw = json.loads((CONFIGS / config).read_text())
    return int(raw.get("block_size") or raw["dflash_config"]["block_size"])


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
        n = inputs["num_draft_tokens"]
        if SGLANG.block_rule(method, block_size(inputs["config"]), n - 1).status is Status.FAIL:
            return {"refused": True}
        answer["num_draft_tokens"] = n
    elif method == "ngram":
        answer["num_draft_tokens"] = K + 1
    else:
        answer.update(SGLANG.chain_depth_keys(K, "k = 3").keys)
    return answer


def sglang_answer(answer: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """SGLang's row cut to what the gate answers: NGRAM's top-k/steps are its BFS breadth (the gate reads k
    from the draft tokens), a block drafter's steps and top-k are forced to 1 (the gate spells neither)."""
    if "error" in answer:
        return {"refused": True}
    keep = {"algorithm", "adaptive", "adaptive_warning", "num_draft_tokens"}
    if inputs["method"] not in ("ngram", "dflash", "dspark") or answer["adaptive"]:
        keep |= {"num_steps", "eagle_topk"}
    if not answer["adaptive"] and inputs["setting"] == "adaptive":
        keep = {"algorithm", "adaptive", "adaptive_warning"}  # static steps, SGLang's defaults (no k declared)
    return {k: v for k, v in answer.items() if k in keep}


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
    rows = [r for r in json.loads(FIXTURE.read_text())["rows"] if not _block_row(r["inputs"])]
    stated = exceptions(FIXTURE.name)
    wrong = [i for i, r in enumerate(rows) if gate_answer(r["inputs"]) != sglang_answer(r["answer"], r["inputs"])]
    assert [i for i in wrong if i not in stated] == []
    assert sorted(stated) == wrong, "EXCEPTIONS.md lists a row that agrees"


def test_the_gate_reads_sglang_resolved_keys_as_k() -> None:
    """On every fixed row SGLang accepts, the k the gate reads from SGLang's own resolved keys is the k spelled
    (a chain: steps; NGRAM: draft tokens − 1; a block: draft tokens − 1)."""
    for r in json.loads(FIXTURE.read_text())["rows"]:
        a, i = r["answer"], r["inputs"]
        if i["setting"] != "fixed" or "error" in a or _block_row(i):
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
    drafter's block give the same k; a plan that declares only num_steps is refused (its k would be the steps),
    the one place the gate is stricter than SGLang, with the key to declare."""
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
        if "num_steps" in i:
            assert any(f"overriding speculative_num_steps={i['num_steps']} to 1" in w
                       for w in a["resolution_warnings"])
            with pytest.raises(ValueError, match="declare engine.speculative.num_draft_tokens"):
                depth_schedule("sglang", spec)
        assert depth_schedule("sglang", {**spec, **keys}).schedule is None  # declared as init writes: read


def test_the_replay_can_fail() -> None:
    """A profile that launched a chain with top-k 4 would disagree."""
    row = next(r for r in json.loads(FIXTURE.read_text())["rows"]
               if r["inputs"]["method"] == "eagle3" and r["inputs"]["setting"] == "fixed")
    assert {**gate_answer(row["inputs"]), "eagle_topk": 4} != sglang_answer(row["answer"], row["inputs"])
