"""SGLang's depth k: THE rule (`gate/model/depth.py`'s docstring), and what the exporter reads of it.

`depth` is kept here, on floor 0, so the exporter (the adapter's depth hooks below, which `exporter.depth`,
`exporter.derive` and `gate.evidence.captures.identity_of` call) and the gate's SGLang profile read k from one
address, never writing `num_draft_tokens − 1` again.

What SGLang exposes: no proposed-token counter (draft tokens are verify calls × (spec_num_draft_tokens − 1)),
so no mean depth k̄; the configured depth from `/server_info` (`speculative_num_draft_tokens` /
`speculative_num_steps`), and the current depth from the gauges `spec_num_steps` / `spec_num_draft_tokens`,
which `--speculative-adaptive` moves. A block drafter (DFlash, DSpark) runs num_steps 1 whatever it was given and
its block as the draft tokens (`BLOCK_ALGORITHMS`), so its k is read from the draft tokens only.
"""

from __future__ import annotations

from exporter.engines.base import SpecCounters, SpeculativeSettings, StreamSnapshot, positions_depth
from exporter.engines.sglang.schedule import sglang_adaptive_schedule

# SGLang algorithms whose proposer drafts a different number of tokens every round by construction (the
# n-gram trie's match); SGLang has no suffix method.
VARIABLE_LENGTH_ALGORITHMS = frozenset({"NGRAM"})

# SGLang 0.5.23's block drafters: `_handle_dflash` / `_handle_dspark` (arg_groups/speculative_hook.py) force
# `speculative_num_steps` to 1 ("DFLASH does not use EAGLE-style num_steps/topk") and set
# `speculative_num_draft_tokens` to the block (DFlash: `--speculative-dflash-block-size`, else the drafter config's
# block_size, else 16; DSpark: gamma + 1); the worker drafts positions 1.. of the block (pos 0 is the verified
# anchor, dflash_worker_v2.py) and the metrics count num_draft_tokens − 1 per verify (metrics_reporter.py
# `draft_per_round`). So their steps never say k.
BLOCK_ALGORITHMS = frozenset({"DFLASH", "DSPARK"})

# The largest candidate of SGLang 0.5.23's default adaptive tiers (`--speculative-adaptive` without a config
# file): what such an engine may run at most, though its `/server_info` steps are the starting point.
SGLANG_ADAPTIVE_DEFAULT_MAX: int = sglang_adaptive_schedule(None).max_k


def depth(num_draft_tokens: int | None, num_steps: int | None, eagle_topk: int | None,
          algorithm: str | None = None) -> int | None:
    """k, SGLang's spelling (the one depth rule, `gate/model/depth.py`'s docstring; kept here, floor 0, so
    the exporter and the gate's SGLang profile read it from one address): k = num_draft_tokens − 1 (the verify
    block holds the root token too), floored at 0; with only `num_steps` and top-k 1 (a chain of
    num_steps + 1) k = num_steps, except for a block `algorithm` (`BLOCK_ALGORITHMS`: SGLang runs its steps at 1
    and drafts the block); None when neither says (`algorithm` None: not known to be a block drafter)."""
    if num_draft_tokens is not None:
        return max(num_draft_tokens - 1, 0)
    if algorithm is not None and algorithm.upper() in BLOCK_ALGORITHMS:
        return None
    if num_steps is not None and (eagle_topk or 1) == 1:
        return num_steps
    return None


def _positive(v: float | None) -> int | None:
    return int(v) if v is not None and v > 0 else None


def configured_depth(speculative: SpeculativeSettings | None, stream: StreamSnapshot,
                     told: int | None = None) -> tuple[int, str] | None:
    """`EngineAdapter.configured_depth`, SGLang's order, first found wins:

    1. `positions`: the stream's per-position counter series (`positions_depth`; SGLang has none).
    2. `server_info`: `/server_info`'s settings by the k rule (its algorithm too: a block drafter's steps say
       nothing); under `speculative_adaptive` the settings are the
       starting steps, not the largest candidate: then only with SGLang's default tiers
       (`speculative_adaptive_config` None), their largest candidate (`SGLANG_ADAPTIVE_DEFAULT_MAX`).
    3. `schedule`: the largest k of the schedule the exporter was told (`told`).
    4. `gauge`: the current `spec_num_draft_tokens` − 1, or `spec_num_steps` (never under adaptive
       speculation, where they are the current depth, not the maximum).
    """
    spec = stream.spec
    if spec is None:
        return None
    k = positions_depth(spec)
    if k is not None:
        return k, "positions"
    sp = speculative
    if sp is not None and not sp.adaptive:
        k = depth(sp.num_draft_tokens, sp.num_steps, sp.eagle_topk, sp.algorithm)
        if k is not None:
            return k, "server_info"
    if sp is not None and sp.adaptive and sp.adaptive_config is None:
        return SGLANG_ADAPTIVE_DEFAULT_MAX, "server_info"
    if told is not None:
        return told, "schedule"
    if sp is None or not sp.adaptive:
        k = depth(_positive(stream.spec_num_draft_tokens), _positive(stream.spec_num_steps), None,
                  sp.algorithm if sp is not None else None)
        if k is not None:
            return k, "gauge"
    return None


def variable_by_construction(speculative: SpeculativeSettings | None) -> bool:
    """The reported algorithm drafts a different number of tokens every round (`VARIABLE_LENGTH_ALGORITHMS`)."""
    algo = speculative.algorithm if speculative is not None else None
    return algo is not None and algo.upper() in VARIABLE_LENGTH_ALGORITHMS


def counted_depth(spec: SpecCounters) -> int | None:
    """k as one stream's counters show it: its per-position series, else its `spec_num_draft_tokens` gauge by
    the k rule (above 1 only: the gauge counts the verified root too)."""
    k = positions_depth(spec)
    if k is None and spec.num_draft_tokens and spec.num_draft_tokens > 1:
        k = depth(int(spec.num_draft_tokens), None, None)
    return k


def settings_depth(speculative: SpeculativeSettings | None) -> int | None:
    """k from `/server_info`'s `speculative_num_draft_tokens` by the k rule (above 1 only), for a page whose gauge
    does not say it yet."""
    if speculative is None or speculative.num_draft_tokens is None or speculative.num_draft_tokens <= 1:
        return None
    return depth(speculative.num_draft_tokens, None, None)
