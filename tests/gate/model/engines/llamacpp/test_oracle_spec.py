"""llama-server b11434's own answer at fixed k on each config family's architecture, recorded by
tools/oracle/llamacpp_spec.py (tiny GGUFs written by tools/tiny_gguf.py SHAPES: qwen3, gemma3, qwen35, deepseek2,
eagle3, dflash/dspark, nemotron_h; each pairing started with `--spec-type T --spec-draft-n-max K --ctx-size 2048 --parallel 2`),
replayed against the gate's llama.cpp profile: the method the gate reads from the family's config launches the
recorded flags; the gate accepts where the server came up speculating and refuses where it exited; the tokens a
round drafts are k (a block drafter: `block_round`, min(k, block_size - 1) for DFlash, min(k, block_size) for
DSpark, at blocks 4 and 8; `block_rule` warns exactly where llama-server logs its clamp); the slots, the per-slot cells and the
target's cache bytes (sliding-window cache included) are `own_keys_pool` / `server_cache`'s. Every row agrees or is
listed in EXCEPTIONS.md with llama.cpp's behaviour (issue 35.1: the conformance matrix's llama.cpp fixed-k cells)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.inputs.configs import load_config
from gate.model.config import ConfigError, drafter_family
from gate.model.engines import profile
from gate.model.engines.llamacpp import block_round, server_cache
from gate.model.geometry import kv_geometry
from gate.status import Status
from tests.gate.model.engines.oracle import exceptions

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
NAME = "llamacpp-11434-spec.json"
DATA = json.loads((FIXTURES / "oracle" / NAME).read_text())
LC = profile("llamacpp")
MIB = 1 << 20


def hf_config(shape: dict[str, Any]) -> dict[str, Any]:
    """The tiny GGUF's shape as the HF config.json the gate would read (tools/tiny_gguf.py: width 64, 4 heads of 16,
    2 KV heads, f16 cache); the keys are the GGUF's, as recorded."""
    k, arch = shape["keys"], shape["arch"]
    n = k["block_count"] - k.get("nextn_predict_layers", 0)
    cfg: dict[str, Any] = {"hidden_size": k["embedding_length"], "num_attention_heads": k["attention.head_count"],
                           "num_key_value_heads": k["attention.head_count_kv"], "head_dim": k["attention.key_length"],
                           "num_hidden_layers": n, "vocab_size": k["vocab_size"], "torch_dtype": "float16"}
    if arch == "gemma3":
        window = k["attention.sliding_window"]
        return {**cfg, "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "sliding_window": window,
                "layer_types": ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]}
    if arch == "deepseek2":
        return {**cfg, "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                "num_key_value_heads": k["attention.head_count"], "kv_lora_rank": k["attention.kv_lora_rank"],
                "q_lora_rank": k["attention.q_lora_rank"], "qk_rope_head_dim": k["rope.dimension_count"],
                "qk_nope_head_dim": k["attention.key_length_mla"] - k["rope.dimension_count"],
                "v_head_dim": k["attention.value_length_mla"],
                "num_nextn_predict_layers": k.get("nextn_predict_layers", 0)}
    if arch == "qwen35":
        every = k["full_attention_interval"]
        return {**cfg, "architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
                "layer_types": ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n)],
                "linear_num_key_heads": k["ssm.group_count"], "linear_num_value_heads": k["ssm.time_step_rank"],
                "linear_key_head_dim": k["ssm.state_size"],
                "linear_value_head_dim": k["ssm.inner_size"] // k["ssm.time_step_rank"],
                "linear_conv_kernel_dim": k["ssm.conv_kernel"], "mtp_num_hidden_layers": k.get("nextn_predict_layers", 0)}
    if arch == "nemotron_h_moe":  # the layer kinds from the per-layer keys (tools/tiny_gguf.py nemotron_h)
        kinds = zip(k["attention.head_count_kv"], k["feed_forward_length"], strict=True)
        pattern = "".join("*" if kv else "E" if ff else "M" for kv, ff in kinds)
        inner, heads = k["ssm.inner_size"], k["ssm.time_step_rank"]
        return {**cfg, "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
                "num_key_value_heads": max(k["attention.head_count_kv"]), "hybrid_override_pattern": pattern,
                "mamba_num_heads": heads, "mamba_head_dim": inner // heads, "ssm_state_size": k["ssm.state_size"],
                "n_groups": k["ssm.group_count"], "conv_kernel": k["ssm.conv_kernel"]}
    return {**cfg, "architectures": ["Qwen3ForCausalLM" if arch == "qwen3" else "LlamaForCausalLM"],
            "model_type": "qwen3" if arch == "qwen3" else "llama"}


def gate_method(inputs: dict[str, Any]) -> str | None:
    """The method the gate runs the row's pairing with: a drafter family's config names it (the family's real config
    file); a target family with a draft model is a plain draft model; a target alone is MTP when the tiny target
    carries MTP layers, else the gate refuses it (None: no drafter and no MTP layers)."""
    family_cfg = load_config(FIXTURES / "configs" / inputs["config"])
    if not inputs["family"].startswith("target-"):
        return drafter_family(family_cfg)
    if "drafter" in inputs:
        return "draft_model"
    try:
        return drafter_family(None, hf_config(inputs["target"]))
    except ConfigError:
        return None


def disagreements(row: dict[str, Any]) -> list[str]:
    """Where the gate's llama.cpp profile says otherwise than the recorded server (empty: agrees)."""
    inputs, answer = row["inputs"], row["answer"]
    k, out = inputs["k"], []
    method = gate_method(inputs)
    engine_runs = answer["server_up"] and answer["speculates"] is True
    if method is None:
        return [] if not engine_runs else ["the gate refuses a pairing llama-server runs"]
    cfg = LC.speculative_config(method, "draft.gguf" if "drafter" in inputs else None, num_speculative_tokens=k,
                                num_steps=None, eagle_topk=None, num_draft_tokens=None)
    if LC.speculative_flags(cfg) != inputs["flags"]:
        out.append(f"the gate launches {LC.speculative_flags(cfg)}, the row ran {inputs['flags']}")
    drafted = k
    if method in ("dflash", "dspark"):
        block = inputs["drafter"]["keys"]["block_size"]
        rule, drafted = LC.block_rule(method, block, k), block_round(method, block, k)
        if rule.status is Status.FAIL:
            out.append(f"the gate refuses: {rule.detail}")
        # the server's start-up clamp line is there exactly where the gate warns, and clamps to what it says
        clamped = [(c["n_max"], c["block_size"], c["to"]) for c in answer["clamped"]]
        if (rule.status is Status.WARN) != bool(clamped) or clamped not in ([], [(k, block, drafted)]):
            out.append(f"llama-server clamps {clamped}, the gate's rule: {rule.status.value} ({rule.detail})")
    elif answer["clamped"]:
        out.append(f"llama-server clamps a chain drafter's k: {answer['clamped']}")
    elif method == "mtp" and LC.mtp_rule(inputs["target"]["keys"]["nextn_predict_layers"], k).status is Status.FAIL:
        out.append("the gate refuses the MTP depth")
    if not engine_runs:
        return [*out, f"llama-server does not run it: {answer['errors'][:2]}"]
    if answer["n_draft_max"] != drafted:
        out.append(f"a round drafts {answer['n_draft_max']} tokens, the gate says {drafted}")
    # the target's pool and cache: the first cache lines of the log are the target's (two with a sliding window)
    geom = kv_geometry(hf_config(inputs["target"]), "float16")
    ctx, parallel = inputs["ctx_size"], inputs["parallel"]
    pool = LC.own_keys_pool({"ctx_size": ctx, "parallel": parallel}, geom, None, False)
    cache = server_cache(geom, ctx, parallel)
    slots = answer["slots"]
    if (slots["n_slots"], slots["n_ctx_slot"]) != (parallel, pool.context_cap_tokens):
        out.append(f"slots {slots}, the gate: {parallel} x {pool.context_cap_tokens} cells")
    full, *swa = answer["kv_caches"][:2 if answer["swa_caches"] else 1]
    if full["cells"] * full["seqs"] != cache.ctx_cells or abs(full["mib"] - cache.ctx_cells * cache.per_token_bytes
                                                              / MIB) > 0.005:
        out.append(f"target cache {full}, the gate {cache}")
    if swa and (swa[0]["cells"] * swa[0]["seqs"] != cache.swa_cells or abs(swa[0]["mib"] - cache.swa_bytes / MIB)
                > 0.005):
        out.append(f"sliding-window cache {swa[0]}, the gate {cache}")
    return out


def test_the_fixture_says_where_it_comes_from() -> None:
    assert (DATA["engine"], DATA["version"]) == ("llama.cpp", "b11434")
    assert "tools/oracle/llamacpp_spec.py" in DATA["made_by"] and "--spec-draft-n-max" in DATA["made_by"]
    families = {r["inputs"]["family"] for r in DATA["rows"]}
    assert families == {"dflash", "dspark", "eagle3", "eagle3-safeailab", "eagle3-speculators", "target-gqa",
                        "target-hybrid-linear", "target-hybrid-mamba", "target-hybrid-swa", "target-mla-mtp"}
    # every family's config file is one of tests/fixtures/configs, the refusal is the server's own exit
    assert all((FIXTURES / "configs" / r["inputs"]["config"]).is_file() for r in DATA["rows"])
    refused = [r for r in DATA["rows"] if not r["answer"]["server_up"]]
    assert [r["inputs"]["target"]["shape"] for r in refused] == ["deepseek2-nomtp"]
    assert "failed to create MTP context" in " ".join(refused[0]["answer"]["errors"])


def test_the_sliding_window_and_recurrent_caches_are_in_the_recording() -> None:
    """The facts the pool rows rest on: Gemma-3's window cache (64-token window + a 512-token micro-batch, padded
    to 256, per slot) and Qwen3.5's recurrent state, whose MTP run keeps k snapshots per sequence (rs_seq)."""
    by = {(r["inputs"]["target"]["shape"], r["inputs"]["spec_type"]): r["answer"] for r in DATA["rows"]}
    assert by["gemma3", "draft-simple"]["swa_caches"][:2] == [{"kind": "non-SWA", "cells": 1024},
                                                                {"kind": "SWA", "cells": 768}]
    assert by["qwen35", "draft-mtp"]["recurrent"][0]["rs_seq"] == 3
    assert by["qwen35-nomtp", "draft-simple"]["recurrent"][0]["rs_seq"] == 0
    # Nemotron-H: the KV cache holds its 2 attention layers only, the Mamba-2 state sits in the recurrent memory
    nemotron = by["nemotron_h", "draft-simple"]
    assert nemotron["kv_caches"][0]["layers"] == 2 and nemotron["recurrent"][0]["rs_seq"] == 0


def test_the_replay_can_fail() -> None:
    """A server that drafted one token fewer, or came up on a pairing the gate refuses, is a disagreement."""
    row = next(r for r in DATA["rows"] if r["inputs"]["family"] == "target-gqa")
    assert disagreements(row) == []
    assert disagreements({**row, "answer": {**row["answer"], "n_draft_max": 2}}) != []
    refused = next(r for r in DATA["rows"] if not r["answer"]["server_up"])
    assert disagreements({**refused, "answer": {**row["answer"]}}) != []


def test_block_drafters_are_recorded_below_at_and_above_their_round() -> None:
    """llama-server's own answer on the block rule: DFlash drafts min(k, block_size - 1), DSpark min(k, block_size),
    at blocks 4 and 8, and says so at start-up ("requested draft size ... clamping to N") where it clamps."""
    by = {(r["inputs"]["family"], r["inputs"]["drafter"]["keys"]["block_size"], r["inputs"]["k"]):
          (r["answer"]["n_draft_max"], [c["to"] for c in r["answer"]["clamped"]])
          for r in DATA["rows"] if r["inputs"]["family"] in ("dflash", "dspark")}
    assert by == {("dflash", 4, 2): (2, []), ("dflash", 4, 3): (3, []), ("dflash", 4, 4): (3, [3]),
                  ("dflash", 4, 6): (3, [3]), ("dflash", 8, 6): (6, []), ("dflash", 8, 7): (7, []),
                  ("dflash", 8, 8): (7, [7]), ("dflash", 8, 10): (7, [7]), ("dspark", 4, 3): (3, []),
                  ("dspark", 4, 4): (4, []), ("dspark", 4, 6): (4, [4]), ("dspark", 8, 8): (8, []),
                  ("dspark", 8, 10): (8, [8])}


def test_the_old_block_rule_would_disagree() -> None:
    """The rule before this oracle (a DFlash round drafts up to block_size) fails the replay: a server that drafted
    the whole block, or that clamped where the gate does not warn, is a disagreement."""
    row = next(r for r in DATA["rows"] if r["inputs"]["family"] == "dflash" and r["inputs"]["k"] == 4
               and r["inputs"]["drafter"]["keys"]["block_size"] == 4)
    assert disagreements(row) == []
    assert disagreements({**row, "answer": {**row["answer"], "n_draft_max": 4, "clamped": []}}) != []
    below = next(r for r in DATA["rows"] if r["inputs"]["family"] == "dflash" and r["inputs"]["k"] == 3)
    assert disagreements({**below, "answer": {**below["answer"], "clamped": row["answer"]["clamped"]}}) != []


@pytest.mark.parametrize("index", range(len(DATA["rows"])))
def test_row_agrees_or_is_a_stated_exception(index: int) -> None:
    row = DATA["rows"][index]
    found = disagreements(row)
    if index in exceptions(NAME):
        assert found, f"#{index} agrees: take it off EXCEPTIONS.md"
    else:
        assert found == [], f"#{index} {row['inputs']['family']} k={row['inputs']['k']}: {found}"
