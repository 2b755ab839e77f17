"""TensorRT-LLM's schedule writer: the bands of `specgate tune --emit` as `max_draft_len` and `draft_len_schedule`.

Keys end their bands and every batch above the largest key runs 0: `{"max_draft_len": <largest k>,
"draft_len_schedule": {"e_1": k_1, …}}`, the last band with k > 0 ending at TRTLLM_LAST_KEY. TensorRT-LLM requires
the smallest key's length to be max_draft_len (the deepest k at batch 1), so a schedule whose batch 1 runs less
is refused, and so is one where nothing pays (it cannot say k = 0 everywhere with a max_draft_len > 0). The
fragment is round-tripped through TensorRT-LLM's own reading (`exporter.engines.trtllm.schedule.trtllm_schedule`)
before it is printed.
"""

from __future__ import annotations

from exporter.engines.trtllm.schedule import trtllm_schedule
from gate.model.engines.base import WrittenSchedule
from gate.model.speedup.bands import BatchBand
from gate.model.speedup.curves import TuneInputError

# TensorRT-LLM runs 0 above the largest key, so a last band that speculates needs a key past any batch.
TRTLLM_LAST_KEY = 65536


def write_schedule(bands: list[BatchBand], largest: int) -> WrittenSchedule:
    """TensorRT-LLM's max_draft_len and draft_len_schedule (keys end their bands); its reading of it."""
    if bands[0].k != largest:
        raise TuneInputError(f"--emit trtllm: the best k at batch 1 is {bands[0].k}, below the largest {largest}; "
                             "TensorRT-LLM requires the smallest draft_len_schedule key to run max_draft_len "
                             "(a max_draft_len > 0)")
    keyed: dict[int, int] = {}
    for b in bands:
        if b.end is None and b.k == 0:
            continue  # TensorRT-LLM runs 0 above the largest key
        keyed[b.end if b.end is not None else max(b.start, TRTLLM_LAST_KEY)] = b.k
    fragment = {"max_draft_len": largest, "draft_len_schedule": {str(key): v for key, v in keyed.items()}}
    return fragment, trtllm_schedule(keyed, largest), bands, []
