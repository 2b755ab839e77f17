"""Co-design rules on real drafter/target configs: a compatible and an incompatible pair per family."""

from __future__ import annotations

import copy
import json
import struct
from pathlib import Path

import pytest

from gate.checks.codesign import CodesignResult, Finding, codesign, worst_status
from gate.inputs.configs import load_config
from gate.inputs.weights import has_tensor
from gate.model.config import ConfigError, drafter_family
from gate.plan.model import Plan, load_plan
from gate.verdict.evaluate import evaluate

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"


def cfg(name: str) -> dict:
    return load_config(CONFIGS / name)


LLAMA = cfg("target-gqa__meta-llama__Llama-3.1-8B-Instruct.json")
QWEN3 = cfg("target-gqa__Qwen__Qwen3-8B.json")
DSV3 = cfg("target-mla-mtp__deepseek-ai__DeepSeek-V3.json")
QWEN3_NEXT = cfg("target-hybrid-linear__QuantTrio__Qwen3-Coder-Next-E336.json")
EAGLE3_LLAMA = cfg("eagle3__specforge__llama3-8B-eagle3.json")
EAGLE3_DSV3 = cfg("eagle3__specforge__deepseek-v3-671b-eagle3.json")
EAGLE3_SPEC = cfg("eagle3-speculators__nm-testing__EAGLE3-LLaMA3.1-Instruct-8B-converted.json")
DFLASH = cfg("dflash__specforge__qwen3-8b-dflash.json")
DSPARK = cfg("dspark__specforge__qwen3-8b-dspark.json")
TINY_TARGET = cfg("tiny-target.json")
TINY_DRAFT = cfg("tiny-draft.json")


def by_check(result: CodesignResult) -> dict[str, Finding]:
    return {f.check: f for f in result.findings}


def test_family_detection() -> None:
    assert drafter_family(EAGLE3_LLAMA) == "eagle3"
    assert drafter_family(EAGLE3_SPEC) == "eagle3"  # speculators_config.algorithm
    assert drafter_family(DFLASH) == "dflash"
    assert drafter_family(DSPARK) == "dspark"
    assert drafter_family(TINY_DRAFT) == "draft_model"
    assert drafter_family(None, DSV3) == "mtp"  # num_nextn_predict_layers 1
    assert drafter_family({"model_type": "deepseek_mtp"}) == "mtp"
    with pytest.raises(ConfigError):
        drafter_family(None, LLAMA)


def test_worst_status_ignores_na() -> None:
    fs = [Finding("a", "pass", ""), Finding("b", "n/a", ""), Finding("c", "warn", "")]
    assert worst_status(fs) == "warn"
    assert worst_status(fs + [Finding("d", "fail", "")]) == "fail"
    assert worst_status([Finding("a", "n/a", "")]) == "pass"


# --- EAGLE-3 -----------------------------------------------------------------------------------

def test_eagle3_deepseek_v3_compatible() -> None:
    # Taps [1, 29, 57] within [0, 61] (vLLM) and [0, 60] (SGLang); hidden 7168 = 7168; vocab 129,280 both.
    for engine in ("vllm", "sglang"):
        r = codesign(DSV3, EAGLE3_DSV3, engine=engine)
        f = by_check(r)
        assert f["eagle3_taps"].status == "pass"
        assert ("vLLM convention" if engine == "vllm" else "SGLang convention") in f["eagle3_taps"].detail
        assert f["hidden_size"].status == f["vocabulary"].status == "pass"
        # draft_vocab_size 32,000 < 129,280: d2t cannot be seen from config.json → warn, not pass.
        assert f["draft_vocab_mapping"].status == "warn"
        assert r.status == "warn" and r.family == "eagle3"


def test_eagle3_deepseek_head_on_llama_is_incompatible() -> None:
    # The DeepSeek-V3 head on Llama-3.1-8B (L = 32): tap 57 out of [0, 32]; 7168 != 4096; 129,280 != 128,256.
    r = codesign(LLAMA, EAGLE3_DSV3)
    f = by_check(r)
    assert r.status == "fail"
    assert f["eagle3_taps"].status == "fail" and "[57]" in f["eagle3_taps"].detail
    assert f["hidden_size"].status == "fail"
    assert f["vocabulary"].status == "fail" and "129280 != target 128256" in f["vocabulary"].detail


def test_eagle3_llama_default_taps_and_context() -> None:
    r = codesign(LLAMA, EAGLE3_LLAMA)
    f = by_check(r)
    # No explicit ids: engine default (2, L//2, L-3) = (2, 16, 29) for L = 32.
    assert f["eagle3_taps"].status == "pass" and "(2, 16, 29)" in f["eagle3_taps"].detail
    # Trained at 2,048 positions, target serves up to 131,072 → warn.
    assert f["context_length"].status == "warn"
    assert r.status == "warn"
    # With a served max_model_len within 2,048 that row passes.
    assert by_check(codesign(LLAMA, EAGLE3_LLAMA, max_model_len=2048))["context_length"].status == "pass"


def test_eagle3_tap_convention_differs_between_engines() -> None:
    # Id 32 on a 32-layer target: vLLM's stream entering "layer 32" (the final hidden) is in [0, 32];
    # SGLang's "output of layer 32" does not exist ([0, 31]).
    head = copy.deepcopy(EAGLE3_LLAMA)
    head["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [2, 16, 32]}
    assert by_check(codesign(LLAMA, head, engine="vllm"))["eagle3_taps"].status == "pass"
    assert by_check(codesign(LLAMA, head, engine="sglang"))["eagle3_taps"].status == "fail"


def test_eagle3_target_hidden_size() -> None:
    head = copy.deepcopy(EAGLE3_LLAMA)
    head["hidden_size"] = 2048
    assert by_check(codesign(LLAMA, head))["hidden_size"].status == "fail"
    head["target_hidden_size"] = 4096
    assert by_check(codesign(LLAMA, head))["hidden_size"].status == "pass"


def test_speculators_eagle3_trained_against() -> None:
    # verifier.name_or_path meta-llama/Llama-3.1-8B-Instruct.
    ok = by_check(codesign(LLAMA, EAGLE3_SPEC, deployed_target="/models/meta-llama/Llama-3.1-8B-Instruct"))
    assert ok["trained_against"].status == "pass"
    assert ok["hidden_size"].status == "pass"  # transformer_layer_config hidden 4096 = 4096
    other = by_check(codesign(LLAMA, EAGLE3_SPEC, deployed_target="meta-llama/Llama-3.3-70B-Instruct"))
    assert other["trained_against"].status == "warn"
    # Without a deployed name the verifier's architectures are compared.
    assert by_check(codesign(LLAMA, EAGLE3_SPEC))["trained_against"].status == "pass"
    assert by_check(codesign(QWEN3, EAGLE3_SPEC))["trained_against"].status == "warn"


# --- DFlash ------------------------------------------------------------------------------------

def test_dflash_qwen3_compatible() -> None:
    # Taps [1, 9, 17, 25, 33] in [0, 35]; num_target_layers 36 = L; hidden 4096; vocab 151,936;
    # mask_token_id 151,669 < 151,936; vLLM K = 15 <= block_size 16 - 1.
    r = codesign(QWEN3, DFLASH, engine="vllm", depth=15)
    f = by_check(r)
    assert r.status == "pass", r.findings
    assert f["dflash_taps"].status == f["num_target_layers"].status == f["block_size"].status == "pass"
    assert "mask_token_id 151669" in f["vocabulary"].detail
    # SGLang drafts exactly block_size = 16 tokens per verify: k = 16 - 1 (the verify block holds the root too).
    assert codesign(QWEN3, DFLASH, engine="sglang", depth=15).status == "pass"


def test_dflash_on_llama_is_incompatible() -> None:
    # L = 32: tap 33 outside [0, 31]; num_target_layers 36 != 32 (warn); vocab 151,936 != 128,256;
    # mask id 151,669 not < 128,256.
    r = codesign(LLAMA, DFLASH)
    f = by_check(r)
    assert r.status == "fail"
    assert f["dflash_taps"].status == "fail" and "[33] outside [0, 31]" in f["dflash_taps"].detail
    assert f["num_target_layers"].status == "warn"
    assert f["vocabulary"].status == "fail" and "mask_token_id 151669" in f["vocabulary"].detail


def test_dflash_depth_rules_per_engine() -> None:
    # vLLM 0.32 runs any K (a block of 1 + K queries, no clamp, no error): K > block_size - 1 = 15 warns that the
    # drafts past the trained block are untrained. SGLang 0.5.23 runs draft tokens (k + 1) other than block_size 16
    # with a warning ("DFLASH block size mismatch"), so the gate warns too.
    f = by_check(codesign(QWEN3, DFLASH, engine="vllm", depth=16))["block_size"]
    assert f.status == "warn" and "untrained positions" in f.detail and "rejects" not in f.detail
    assert by_check(codesign(QWEN3, DFLASH, engine="vllm", depth=15))["block_size"].status == "pass"
    f = by_check(codesign(QWEN3, DFLASH, engine="sglang", depth=14))["block_size"]
    assert f.status == "warn" and "speculative_num_draft_tokens 15, not the drafter's block_size 16" in f.detail


def test_block_size_is_read_as_sglang_reads_it() -> None:
    """A config holding both keys: SGLang 0.5.23 drafts `dflash_config.block_size` (parse_dflash_draft_config reads
    the nested key first, the top-level one only for older checkpoints). Before, the line read the top-level
    block_size first and judged another block than the one SGLang's depth resolves (gate.model.engines.base
    `drafter_block_size`, one address)."""
    both = copy.deepcopy(DFLASH)
    both["block_size"], both["dflash_config"]["block_size"] = 16, 8
    f = by_check(codesign(QWEN3, both, engine="sglang", depth=7))["block_size"]
    assert (f.status, f.detail) == ("pass", "SGLang draft tokens 8 = block_size 8")
    f = by_check(codesign(QWEN3, both, engine="sglang", depth=15))["block_size"]
    assert f.status == "warn" and "speculative_num_draft_tokens 16, not the drafter's block_size 8" in f.detail


def test_dflash_mutated_taps() -> None:
    bad = copy.deepcopy(DFLASH)
    bad["dflash_config"]["target_layer_ids"] = [9, 1, 17, 17]
    detail = by_check(codesign(QWEN3, bad))["dflash_taps"].detail
    assert "duplicates" in detail and "not increasing" in detail
    bad["dflash_config"]["target_layer_ids"] = []
    assert by_check(codesign(QWEN3, bad))["dflash_taps"].status == "fail"


# --- DSpark ------------------------------------------------------------------------------------

def test_dspark_qwen3_compatible() -> None:
    # block_size 7: vLLM default K = 7; SGLang draft tokens = block_size + 1 = 8, so k = 7 on both.
    assert codesign(QWEN3, DSPARK, engine="vllm", depth=7).status == "pass"
    r = codesign(QWEN3, DSPARK, engine="sglang", depth=7)
    assert r.status == "pass" and by_check(r)["block_size"].detail == "SGLang draft tokens 8 = block_size + 1 = 8"
    assert by_check(codesign(QWEN3, DSPARK, engine="vllm", depth=5))["block_size"].status == "warn"


def test_dspark_incompatible() -> None:
    # A Ling-width drafter (hidden 2560, seed 002) against Qwen3-8B's 4096: fail; SGLang with 7 draft tokens
    # (k = 6) != 8: fail.
    ling_like = copy.deepcopy(DSPARK)
    ling_like["hidden_size"] = 2560
    f = by_check(codesign(QWEN3, ling_like, engine="sglang", depth=6))
    assert f["hidden_size"].status == "fail" and "2560" in f["hidden_size"].detail
    assert f["block_size"].status == "fail"


# --- MTP ---------------------------------------------------------------------------------------

def test_mtp_deepseek_v3_compatible() -> None:
    # num_nextn_predict_layers 1: any K is a multiple of 1.
    r = codesign(DSV3, None, engine="vllm", depth=3)
    f = by_check(r)
    assert r.family == "mtp" and r.status == "pass"
    assert f["mtp_depth"].status == "pass" and "n_predict 1" in f["mtp_depth"].detail


def test_mtp_incompatible() -> None:
    two = copy.deepcopy(DSV3)
    two["num_nextn_predict_layers"] = 2
    # vLLM: K = 3 is neither <= 2 nor a multiple of 2 → fail; K = 4 is a multiple → pass.
    assert by_check(codesign(two, None, depth=3))["mtp_depth"].status == "fail"
    assert by_check(codesign(two, None, depth=4))["mtp_depth"].status == "pass"
    # An MTP drafter config against a target without MTP layers.
    none = copy.deepcopy(DSV3)
    none["num_nextn_predict_layers"] = 0
    r = codesign(none, {"model_type": "deepseek_mtp", "hidden_size": 7168, "vocab_size": 129280})
    assert r.status == "fail" and by_check(r)["mtp_depth"].status == "fail"


def test_no_drafter_is_na() -> None:
    # ngram: no drafter config and no MTP layers in the target.
    r = codesign(LLAMA, None)
    assert r.status == "n/a" and r.findings[0].status == "n/a"


# --- plain draft model --------------------------------------------------------------------------

def test_draft_model_tiny_pair() -> None:
    # The vLLM-CPU draft arm: both vocab 512.
    r = codesign(TINY_TARGET, TINY_DRAFT)
    assert r.family == "draft_model" and r.status == "pass"
    other = copy.deepcopy(TINY_DRAFT)
    other["vocab_size"] = 600
    assert codesign(TINY_TARGET, other).status == "fail"


# --- cross-cutting rows --------------------------------------------------------------------------

def _safetensors(path: Path, names: list[str]) -> None:
    header = {n: {"dtype": "I64", "shape": [1], "data_offsets": [8 * i, 8 * i + 8]} for i, n in enumerate(names)}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 8 * len(names))


def test_draft_vocab_mapping_from_weights(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    _safetensors(good / "model.safetensors", ["d2t", "t2d", "fc.weight"])
    _safetensors(bad / "model.safetensors", ["fc.weight"])
    # The line reads no files: the tensor fact is read with the artifact facts (gate.bill.facts), here directly.
    assert has_tensor(good, "d2t") is True and has_tensor(bad, "d2t") is False
    ok = codesign(LLAMA, EAGLE3_LLAMA, d2t_tensor=has_tensor(good, "d2t"))
    assert by_check(ok)["draft_vocab_mapping"].status == "pass"
    r = codesign(LLAMA, EAGLE3_LLAMA, d2t_tensor=has_tensor(bad, "d2t"))
    assert by_check(r)["draft_vocab_mapping"].status == "fail" and r.status == "fail"
    assert by_check(codesign(LLAMA, EAGLE3_LLAMA))["draft_vocab_mapping"].status == "warn"  # not verified


def test_parallelism() -> None:
    assert by_check(codesign(QWEN3, DFLASH, draft_tp=1, target_tp=4))["parallelism"].status == "pass"
    assert by_check(codesign(QWEN3, DFLASH, draft_tp=4, target_tp=4))["parallelism"].status == "pass"
    assert by_check(codesign(QWEN3, DFLASH, draft_tp=2, target_tp=4))["parallelism"].status == "fail"


def test_hybrid_target_taps_on_linear_layers() -> None:
    # Qwen3-Next: layers 3, 7, 11, … are full attention; 0-2, 4-6, … are Gated DeltaNet.
    head = copy.deepcopy(DFLASH)
    head.update({"hidden_size": 2048, "num_target_layers": 48})
    head["dflash_config"]["target_layer_ids"] = [1, 9, 17, 25, 33]
    f = by_check(codesign(QWEN3_NEXT, head))
    assert f["hybrid_taps"].status == "warn" and "[1, 9, 17, 25, 33]" in f["hybrid_taps"].detail
    head["dflash_config"]["target_layer_ids"] = [3, 11, 23, 35, 47]
    assert by_check(codesign(QWEN3_NEXT, head))["hybrid_taps"].status == "pass"
    # Dense targets have no hybrid row.
    assert "hybrid_taps" not in by_check(codesign(QWEN3, DFLASH))


def test_invalid_inputs() -> None:
    with pytest.raises(ConfigError, match="engine"):
        codesign(QWEN3, DFLASH, engine="trt")
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        codesign({"hidden_size": 4096}, DFLASH)


def test_non_integer_sizes_are_config_errors_not_tracebacks() -> None:
    """A config field compared by size (draft_vocab_size, max_position_embeddings, mask_token_id) that is
    not an integer is invalid input (ConfigError: `specgate codesign` exit 3, the check line inconclusive)."""
    bad_vocab = {**EAGLE3_LLAMA, "draft_vocab_size": "32000"}
    with pytest.raises(ConfigError, match="draft_vocab_size must be an integer"):
        codesign(LLAMA, bad_vocab)
    bad_ctx = {**EAGLE3_LLAMA, "max_position_embeddings": "2048"}
    with pytest.raises(ConfigError, match="max_position_embeddings must be an integer"):
        codesign(LLAMA, bad_ctx)
    bad_mask = copy.deepcopy(DFLASH)
    bad_mask["dflash_config"]["mask_token_id"] = "151669"
    with pytest.raises(ConfigError, match="mask_token_id must be an integer"):
        codesign(QWEN3, bad_mask)


def test_cli_non_integer_size_is_one_line_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gate.cli import main

    d = tmp_path / "draft.json"
    d.write_text(json.dumps({**EAGLE3_LLAMA, "draft_vocab_size": "32000"}))
    rc = main(["codesign", str(CONFIGS / "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json"), str(d)])
    err = capsys.readouterr().err
    assert rc == 3 and err.count("\n") == 1 and "draft_vocab_size must be an integer" in err


# --- the line judges the plan's k (gate.model.depth, the one k rule) ----------------------------------

FAMILIES = Path(__file__).resolve().parents[3] / "examples" / "plans" / "families"


def _with_speculative(plan: Plan, **keys: int | None) -> Plan:
    spec = plan.engine.speculative
    assert spec is not None
    engine = plan.engine.model_copy(update={"speculative": spec.model_copy(update=keys)})
    return plan.model_copy(update={"engine": engine})


def test_the_line_reads_sglang_depth_through_the_k_rule() -> None:
    """Before: the line passed SGLang's num_draft_tokens as k. Now k = plan.depth, by the one SGLang k rule: 16
    draft tokens = block 16 (pass), 17 (a warning: SGLang 0.5.23 runs another block than the drafter's, it does
    not refuse). A DFlash plan giving only num_steps is read as SGLang reads it: SGLang runs DFlash at 1 step with
    the drafter's block whatever the steps (`_handle_dflash`; rows 23 and 26 of
    tests/fixtures/oracle/sglang-0.5.23-spec-resolution.json), so k = block_size 16 - 1 (the line passes) and the
    acceptance line warns what SGLang does; without the drafter's config that block is unknown: refused."""
    plan = load_plan(FAMILIES / "dflash-sglang-qwen3-8b.yaml")
    ok = _with_speculative(plan, num_draft_tokens=16, num_steps=None, eagle_topk=None)
    assert ok.depth == 15
    f = {x["check"]: x for x in evaluate(ok).checks["codesign"].values["findings"]}
    assert f["block_size"] == {"check": "block_size", "status": "pass",
                               "detail": "SGLang draft tokens 16 = block_size 16"}
    bad = _with_speculative(plan, num_draft_tokens=17, num_steps=None, eagle_topk=None)
    f = {x["check"]: x for x in evaluate(bad).checks["codesign"].values["findings"]}
    assert f["block_size"]["status"] == "warn" and "speculative_num_draft_tokens 17" in f["block_size"]["detail"]
    steps = plan.model_dump(exclude_none=True)
    steps["engine"]["speculative"] = {"method": "dflash", "num_steps": 4, "eagle_topk": 1}
    read = Plan.model_validate(steps)
    assert read.depth == 15  # the block's, not the steps' (4)
    checks = evaluate(read).checks
    f = {x["check"]: x for x in checks["codesign"].values["findings"]}
    assert f["block_size"] == {"check": "block_size", "status": "pass",
                               "detail": "SGLang draft tokens 16 = block_size 16"}
    said = ("SGLang forces num_steps 1 (not the plan's 4) for DFLASH and drafts block - 1 = 15 tokens per verify "
            "(block 16: the drafter config's block_size 16)")
    assert checks["acceptance"].values["depth_schedule"] == {"runs": None, "k": 15, "warnings": [said]}
    assert said in checks["acceptance"].reason
    del steps["drafter"]["config"]
    with pytest.raises(ValueError, match="drafter's config is not at hand.*declare engine.speculative"
                                         ".num_draft_tokens"):
        Plan.model_validate(steps)
