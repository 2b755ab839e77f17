"""SGLang's depth k: THE rule (`gate/model/depth.py`'s docstring), and the algorithms whose depth varies.

Kept here, on floor 0, so the exporter (`exporter.depth`, `gate.evidence.captures.identity_of` through the
adapter's hooks) and the gate's SGLang profile read k from one address, never writing
`num_draft_tokens − 1` again.
"""

from __future__ import annotations

from exporter.engines.sglang.schedule import sglang_adaptive_schedule

# SGLang algorithms whose proposer drafts a different number of tokens every round by construction (the
# n-gram trie's match); SGLang has no suffix method.
VARIABLE_LENGTH_ALGORITHMS = frozenset({"NGRAM"})

# The largest candidate of SGLang 0.5.23's default adaptive tiers (`--speculative-adaptive` without a config
# file): what such an engine may run at most, though its `/server_info` steps are the starting point.
SGLANG_ADAPTIVE_DEFAULT_MAX: int = sglang_adaptive_schedule(None).max_k


def depth(num_draft_tokens: int | None, num_steps: int | None, eagle_topk: int | None) -> int | None:
    """k, SGLang's spelling (the one depth rule, `gate/model/depth.py`'s docstring; kept here, floor 0, so
    the exporter and the gate's SGLang profile read it from one address): k = num_draft_tokens − 1 (the verify
    block holds the root token too), floored at 0; with only `num_steps` and top-k 1 (a chain of
    num_steps + 1) k = num_steps; None when neither says."""
    if num_draft_tokens is not None:
        return max(num_draft_tokens - 1, 0)
    if num_steps is not None and (eagle_topk or 1) == 1:
        return num_steps
    return None
