"""SGLang's schedule writer: the bands of `specgate tune --emit` as SGLang 0.5.23's `--speculative-adaptive-config`.

A tier per band keyed by its first batch (`_find_closest_bs` routes a batch to the largest key ≤ it),
`candidate_steps` = the depths that pay at every measured concurrency of the band, up to its best k (k = 0 where
none does; gate.model.speedup.bands.candidates); run with `--speculative-adaptive`, EAGLE or EAGLE3 and top-k 1,
and a `--speculative-num-steps` among the candidates. The fragment is round-tripped through SGLang's own reading
(`exporter.engines.sglang.schedule.sglang_adaptive_schedule`) before it is printed.
"""

from __future__ import annotations

from typing import Any

from exporter.engines.sglang.schedule import sglang_adaptive_schedule
from gate.model.engines.base import WrittenSchedule
from gate.model.speedup.bands import BatchBand, candidates
from gate.model.speedup.predict import TuneResult


def write_schedule(bands: list[BatchBand], result: TuneResult, point: str | None) -> WrittenSchedule:
    """SGLang's adaptive config: a tier per band with its candidate steps; SGLang's reading of it."""
    bands = [BatchBand(b.start, b.end, b.k, b.concurrencies, b.speedup, b.speedup_low, b.speedup_high,
                       candidates(result, point, b)) for b in bands]
    fragment: dict[str, Any] = {str(b.start): {"candidate_steps": list(b.candidates)} for b in bands}
    notes = ["SGLang: pass the fragment as a file with --speculative-adaptive --speculative-adaptive-config FILE "
             f"(EAGLE or EAGLE3, --speculative-eagle-topk 1) and --speculative-num-steps {bands[0].k} (one of the "
             "candidates); k = steps at top-k 1"]
    return fragment, sglang_adaptive_schedule(fragment), bands, notes
