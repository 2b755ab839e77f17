"""A block drafter's k as SGLang 0.5.23 resolves it from the plan's keys and the drafter's config: the branches of
`_handle_dflash` / `_handle_dspark` (arg_groups/speculative_hook.py) and of the config readers they call
(speculative/dflash_utils.py `parse_dflash_draft_config`, dspark_components/dspark_config.py
`parse_dspark_draft_config`, DEFAULT_DSPARK_GAMMA = 7), read from SGLang's source; the specforge configs' rows are
replayed against SGLang's own answers in test_oracle_spec_resolution.py."""

from __future__ import annotations

from typing import Any

import pytest

from gate.model.depth import depth_schedule, speculative_depth
from gate.model.engines.sglang import SGLANG, block_draft_tokens, block_resolution


@pytest.mark.parametrize(("algorithm", "config", "tokens", "default"), [
    ("DFLASH", {"block_size": 16}, 16, False),
    ("DFLASH", {"block_size": 16, "dflash_config": {"block_size": 10}}, 10, False),  # dflash_config's block first
    ("DFLASH", {}, 16, True),  # "defaulting to 16 for DFLASH"
    ("DFLASH", {"block_size": 0}, 16, True),  # SGLang fails to parse it and defaults
    ("DSPARK", {"block_size": 7}, 8, False),  # gamma = the block, draft tokens gamma + 1
    ("DSPARK", {"block_size": 7, "dspark_block_size": 4}, 5, False),  # the prefixed gamma first
    ("DSPARK", {"dflash_config": {"block_size": 3}}, 4, False),
    ("DSPARK", {}, 8, True),  # "DSpark gamma is not set; defaulting to 7"
])
def test_block_draft_tokens_as_sglang_reads_the_config(algorithm: str, config: dict[str, Any], tokens: int,
                                                       default: bool) -> None:
    found = block_draft_tokens(algorithm, config)
    assert found is not None and found[0] == tokens
    assert found[1].startswith("SGLang's default") == default, found


def test_no_config_no_block() -> None:
    assert block_draft_tokens("DFLASH", None) is None and block_draft_tokens("DSPARK", None) is None


def test_the_profile_depth_knows_the_method() -> None:
    """Told the method, a block drafter's steps never say k: its block does (block - 1), from the plan's draft
    tokens, else the drafter's config; without either, k is unknown. Not told the method (a caller that does not
    know it), the steps of a top-k 1 chain are k, as before."""
    keys: dict[str, Any] = {"num_speculative_tokens": None, "num_draft_tokens": None, "num_steps": 4,
                            "eagle_topk": 1}
    assert SGLANG.depth(**keys) == 4
    assert SGLANG.depth(**keys, method="eagle3") == 4
    assert SGLANG.depth(**keys, method="dflash", drafter_config={"block_size": 16}) == 15
    assert SGLANG.depth(**keys, method="dspark", drafter_config={"block_size": 7}) == 7
    assert SGLANG.depth(**keys, method="dflash") is None
    assert SGLANG.depth(**{**keys, "num_draft_tokens": 8}, method="dflash", drafter_config={"block_size": 16}) == 7
    assert speculative_depth("sglang", "dflash", {}, num_steps=4) == 15
    assert speculative_depth("sglang", num_steps=4) == 4  # the method not known: a chain's steps
    assert speculative_depth("vllm", "dflash", {}, num_speculative_tokens=4) == 4


def test_the_resolution_says_what_sglang_overrides() -> None:
    keys, said = block_resolution({"method": "dflash", "num_steps": 1}, {"block_size": 16})
    assert keys == {"method": "dflash", "num_steps": 1, "eagle_topk": 1, "num_draft_tokens": 16}
    assert said == ("SGLang forces num_steps 1 for DFLASH and drafts block - 1 = 15 tokens per verify (block 16: "
                    "the drafter config's block_size 16)",)  # steps 1 alone would read as k = 1
    _, said = block_resolution({"method": "dspark", "num_draft_tokens": 8, "num_steps": 1, "eagle_topk": 1}, None)
    assert said == ()  # SGLang's own resolution: nothing overridden
    _, said = block_resolution({"method": "dspark", "num_draft_tokens": 8, "eagle_topk": 2}, None)
    assert said == ("SGLang forces eagle_topk 1 (not the plan's 2) for DSpark and drafts block - 1 = 7 tokens per "
                    "verify (block 8: engine.speculative.num_draft_tokens)",)
    assert block_resolution({"method": "eagle3", "num_steps": 3}, None) == ({"method": "eagle3", "num_steps": 3}, ())


def test_the_reading_carries_the_warning_and_refuses_only_an_unknowable_k() -> None:
    reading = depth_schedule("sglang", {"method": "dflash", "num_steps": 4}, drafter_config={"block_size": 16})
    assert reading.schedule is None and reading.declared
    assert reading.warnings == ("SGLang forces num_steps 1 (not the plan's 4) for DFLASH and drafts block - 1 = 15 "
                                "tokens per verify (block 16: the drafter config's block_size 16)",)
    assert depth_schedule("sglang", {"method": "dflash", "num_draft_tokens": 16}) == depth_schedule("vllm", {
        "method": "dflash", "num_speculative_tokens": 15})  # nothing said where nothing is overridden
    with pytest.raises(ValueError, match="drafter's config is not at hand"):
        depth_schedule("sglang", {"method": "dspark", "num_steps": 4})


@pytest.mark.parametrize("method", ["dflash", "dspark", "eagle3"])
@pytest.mark.parametrize("config", [None, {}, {"block_size": 16}, {"block_size": 16, "dflash_config": {"block_size": 10}},
                                    {"block_size": 7, "dspark_block_size": 4}])
@pytest.mark.parametrize(("tokens", "steps", "topk"), [(None, None, None), (None, 4, 1), (8, None, None), (8, 3, 2)])
def test_the_depth_is_the_resolution_s(method: str, config: dict[str, Any] | None, tokens: int | None,
                                       steps: int | None, topk: int | None) -> None:
    """`SGLANG.depth` and `resolve_speculative` answer from one resolution (`block_resolution`): the k the depth
    reads is the k of the keys SGLang resolves, wherever those say one (an unknowable block: unknown k)."""
    given = {"method": method, "num_draft_tokens": tokens, "num_steps": steps, "eagle_topk": topk}
    k = SGLANG.depth(num_speculative_tokens=None, num_draft_tokens=tokens, num_steps=steps, eagle_topk=topk,
                     method=method, drafter_config=config)
    try:
        keys, _ = SGLANG.resolve_speculative(given, config)
    except ValueError:
        assert k is None  # the plan's steps, no block at hand: depth_schedule refuses it, the depth does not know
        return
    assert k == SGLANG.depth(num_speculative_tokens=None, num_draft_tokens=keys.get("num_draft_tokens"),
                             num_steps=keys.get("num_steps"), eagle_topk=keys.get("eagle_topk"), method=method)
    if method != "eagle3" and config is not None:
        assert k is not None and k == keys["num_draft_tokens"] - 1  # SGLang drafts block - 1
