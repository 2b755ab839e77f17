"""vLLM's schedule writer: the bands of `specgate tune --emit` as vLLM 0.32's `--speculative-config` fragment.

`{"num_speculative_tokens": <largest k>, "num_speculative_tokens_per_batch_size": [[1, e_1, k_1], …,
[s_n, VLLM_LAST_END, k_n]]}` merged over the speculative arm's other `--speculative-config` keys (method, model,
prompt lookup…) from its probe records; vLLM carries the last k to every larger batch anyway. The fragment is
round-tripped through vLLM's own reading (`exporter.engines.vllm.schedule.vllm_schedule`) before it is printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from exporter.engines.vllm.schedule import vllm_schedule
from gate.model.engines.base import WrittenSchedule
from gate.model.speedup.bands import BatchBand

# The last vLLM range must end somewhere; past any batch an engine runs (vLLM's max_num_seqs defaults to 256 or
# 1024), and vLLM's dense lookup carries the last k to every batch up to max_num_seqs whatever the end.
VLLM_LAST_END = 65536
# Keys of a vLLM --speculative-config the schedule sets (never merged from the probe record).
_VLLM_DEPTH_KEYS = frozenset({"num_speculative_tokens", "num_speculative_tokens_per_batch_size"})


def base_speculative_config(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The speculative arm's other `--speculative-config` keys: those all its probe records agree on."""
    if not configs:
        return None
    common = {k: v for k, v in configs[0].items() if k not in _VLLM_DEPTH_KEYS}
    for cfg in configs[1:]:
        common = {k: v for k, v in common.items() if cfg.get(k) == v}
    return common


def write_schedule(bands: list[BatchBand], largest: int,
                   speculative_configs: Sequence[Mapping[str, Any]]) -> WrittenSchedule:
    """vLLM's --speculative-config fragment over the probe records' other keys; vLLM's reading of it."""
    base_config = base_speculative_config(speculative_configs)
    fragment: dict[str, Any] = {k: v for k, v in (base_config or {}).items() if k not in _VLLM_DEPTH_KEYS}
    ranges = [[b.start, b.end if b.end is not None else max(b.start, VLLM_LAST_END), b.k] for b in bands]
    fragment.update({"num_speculative_tokens": largest, "num_speculative_tokens_per_batch_size": ranges})
    notes = [] if base_config else ["no speculative arm's --speculative-config in the probe records: add the "
                                    "method's keys (method, model, …) to the fragment"]
    return fragment, vllm_schedule(ranges, largest), bands, notes
